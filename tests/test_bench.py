"""The benchmark runs end to end and reports every figure (small photo: behaviour, not seconds)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bench_prints_every_figure_as_json():
    res = subprocess.run([sys.executable, "-m", "pipeline.bench", "--json", "--runs", "1", "--size", "480x270"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    for key in ("global_4k_ms", "lut_compile_ms", "lut_apply_4k_ms", "coordinates_new_photo_4k_ms",
                "full_turn_4k_ms", "proxy_1600_ms", "naive_global_4k_ms", "speedup_vs_naive"):
        assert r[key] > 0, key
    assert r["size_label"] == "480x270"
    # The fused LUT stays within the design's error bounds against exact math.
    assert r["lut_error_max"] <= 3 and r["lut_error_mean"] <= 0.2


def test_bench_refuses_a_bad_size():
    res = subprocess.run([sys.executable, "-m", "pipeline.bench", "--size", "huge"], cwd=REPO,
                         capture_output=True, text=True)
    assert res.returncode == 2 and "--size: expected WIDTHxHEIGHT" in res.stderr


def test_bench_device_path_prints_both_with_batch_throughput():
    """--device torch-cpu runs the GPU code path on the CPU: both sets of figures, batch throughput, the error."""
    res = subprocess.run([sys.executable, "-m", "pipeline.bench", "--json", "--runs", "1", "--size", "160x90",
                          "--device", "torch-cpu", "--batch", "2"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    r = json.loads(res.stdout)
    assert r["global_4k_ms"] > 0  # the CPU figures are still there
    d = r["device"]
    assert d["device"] == "cpu" and d["batch"] == 2
    for key in ("global_4k_ms", "full_turn_4k_ms", "global_8k_ms", "batch_global_4k_photos_per_s",
                "batch_full_turn_4k_photos_per_s"):
        assert d[key] > 0, key
    assert d["max_diff_vs_cpu_global"] <= 1 and d["share_over_one_level_full_turn"] < 1e-3


def test_bench_peers_measures_every_tool_in_its_own_process():
    """--peers: Atelier and each peer as a whole process (CPU, wall, peak RSS, ratio), editors skipped with a
    note when absent, memory per megapixel, the cold render, proxy drags and the LUT methods with their error."""
    res = subprocess.run([sys.executable, "-m", "pipeline.bench", "--peers", "--json", "--runs", "1",
                          "--size", "240x160"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    p = json.loads(res.stdout)["peers"]
    jobs = {j["key"]: j["rows"] for j in p["jobs"]}
    assert set(jobs) == {"jpeg", "raw_full", "raw_preview"}
    for rows in jobs.values():
        assert rows[0]["tool"].startswith("Atelier") and "ratio" not in rows[0]
        measured = [r for r in rows if "cpu_s" in r]
        assert len(measured) >= 2 and all(r["cpu_s"] > 0 and r["peak_rss_mb"] > 5 for r in measured)
        assert all(r["ratio"] > 0 for r in measured[1:])
        assert all(r["note"].startswith("skipped:") for r in rows if "cpu_s" not in r)
    # the Pillow script holds a small fraction of Atelier's imports: whole-process RSS, not the bench's own
    pillow = next(r for r in jobs["jpeg"] if r["tool"].startswith("Pillow"))
    assert pillow["peak_rss_mb"] < jobs["jpeg"][0]["peak_rss_mb"]
    assert len(p["per_megapixel"]["rows"]) == 4
    q = p["in_process"]
    assert q["cold_first_render_cpu_ms"] > 0 and q["proxy_drag_lut_only_cpu_ms"] > 0
    methods = {m["method"].split(":")[0].split(" ")[0]: m for m in q["lut_methods"]}
    assert set(methods) == {"previous", "Atelier", "OpenCV", "Pillow"}
    atelier = [m for m in q["lut_methods"] if m["method"].startswith("Atelier")]
    assert all(m["error_max"] <= 3 and m["error_mean"] <= 0.2 for m in atelier)
    # the float LUT pass is the previous 16-bit one but for rare ties of its double rounding
    assert all(m["vs_previous_max"] <= 1 and m["vs_previous_share"] < 1e-4 for m in atelier)
