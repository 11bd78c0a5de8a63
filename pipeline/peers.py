"""Atelier next to what a photographer could run instead: ``python -m pipeline.bench --peers``.

Every job runs as its own process, Atelier's and each peer's alike, so the CPU
time (user + system, every thread) and the peak resident memory are the whole
process's, imports included. Inputs are made in a temporary folder from
scikit-image's ``coffee`` (upscaled, with a little sensor-like noise so the
JPEGs are as costly to decode as a camera's); nothing is downloaded.

Jobs (sizes for the default run; ``--size WxH`` scales them):

- **12 MP JPEG -> JPEG (quality 92), 8 global ops**: ``python -m pipeline.apply``;
  the *Pillow LUT script* (Pillow decodes, applies the ops as a 33^3
  ``ImageFilter.Color3DLUT`` and encodes; its table is the same exact math,
  computed beforehand and not timed, which flatters it); the *numpy script*
  (Pillow decodes, the same math on every pixel in float32 numpy, Pillow
  encodes); ``darktable-cli`` and ``rawtherapee-cli`` with their default
  processing, when installed.
- **24 MP DNG -> full-size JPEG**: Atelier (develop, the 8 ops, encode) and
  rawpy + Pillow (LibRaw's default AHD demosaic and camera white balance, no
  edit), and the editors when installed.
- **24 MP DNG -> 1600 px JPEG**, the first preview: ``pipeline.apply
  --long-side 1600`` (half-size develop) and rawpy ``half_size`` + Pillow.
- **Memory and time per megapixel**: the JPEG job at 4, 12, 24 and 48 MP.

In process, on the 4K photo of the main benchmark: a cold first render of a
new photo (its digest, LUT and coordinates all new), a proxy slider drag at
1600 px with LUT-only ops and with clarity (CPU time per render), and the ways
to apply a 3D LUT (Atelier's remap, Pillow's ``Color3DLUT``, an 8-bit remap)
with their speed and error against the exact math.

Rounds: every command runs once untimed first (it warms the file cache and
writes Python's bytecode cache into a private temporary folder, as an
installed package has it), then ``rounds`` times in rotated order; medians
are reported. Ratios are Atelier's CPU time over the peer's (below 1: Atelier
is cheaper).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

#: The eight global ops of the one-shot jobs (a photographer's usual first pass).
EIGHT_OPS = {"exposure": 20, "contrast": 25, "highlights": -30, "shadows": 25, "temperature": 15, "tint": 5,
             "saturation": 10, "vibrance": 20}
#: Points per axis of the Pillow script's LUT (a common size for .cube files).
PILLOW_LUT_POINTS = 33
REPO = Path(__file__).resolve().parents[1]

PILLOW_SCRIPT = '''
import sys
import numpy as np
from PIL import Image, ImageFilter
src, dst, table = sys.argv[1:4]
n = int(sys.argv[4])
lut = ImageFilter.Color3DLUT(n, np.load(table).reshape(-1))
with Image.open(src) as im:
    im.filter(lut).save(dst, quality=92)
'''

NUMPY_SCRIPT = '''
import json, sys
import numpy as np
from PIL import Image
from pipeline.adjust import apply_pixel_ops
src, dst, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
rgb = np.asarray(Image.open(src).convert("RGB"), np.float32) / 255.0
out = np.clip(apply_pixel_ops(rgb, settings) * 255.0 + 0.5, 0, 255).astype(np.uint8)
Image.fromarray(out).save(dst, quality=92)
'''

RAWPY_SCRIPT = '''
import sys
import rawpy
from PIL import Image
src, dst, half = sys.argv[1], sys.argv[2], sys.argv[3] == "half"
with rawpy.imread(src) as raw:
    rgb = raw.postprocess(use_camera_wb=True, half_size=half)
im = Image.fromarray(rgb)
if half:
    im.thumbnail((1600, 1600), Image.Resampling.BICUBIC)
im.save(dst, quality=92)
'''


def _noisy_photo(width: int, height: int, seed: int = 0) -> np.ndarray:
    from pipeline.workload import bench_photo

    img = bench_photo(width, height)
    noise = np.random.default_rng(seed).normal(0, 3, img.shape).astype(np.int16)
    return np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def _write_jpeg(path: Path, width: int, height: int) -> Path:
    from PIL import Image

    Image.fromarray(_noisy_photo(width, height)).save(path, quality=92)
    return path


# A small process that starts every measured command. A child forked from the benchmark itself would
# count the benchmark's own resident memory in its peak (Linux keeps the high-water mark across exec).
LAUNCHER = r"""
import json, os, subprocess, sys, time
for line in sys.stdin:
    job = json.loads(line)
    with open(job["stderr"], "wb") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(job["cmd"], stdout=subprocess.DEVNULL, stderr=err, env=job["env"], cwd=job["cwd"])
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "cpu_s": usage.ru_utime + usage.ru_stime,
                      "wall_s": wall, "maxrss": usage.ru_maxrss}), flush=True)
"""


class Launcher:
    """Runs commands to their end from a small helper process: each one's own CPU time (user + system),
    wall time and peak resident memory."""

    def __init__(self, env: dict, workdir: Path):
        self.env, self.workdir = env, workdir
        self.proc = subprocess.Popen([sys.executable, "-c", LAUNCHER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)

    def measure(self, cmd: list[str]) -> dict:
        err = self.workdir / "stderr.txt"
        self.proc.stdin.write(json.dumps({"cmd": cmd, "env": self.env, "cwd": str(REPO), "stderr": str(err)}) + "\n")
        self.proc.stdin.flush()
        got = json.loads(self.proc.stdout.readline())
        if got["rc"] != 0:
            tail = err.read_text(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"{' '.join(cmd[:3])} ... failed ({got['rc']}): {' | '.join(tail)}")
        rss_mb = got["maxrss"] / (2**20 if sys.platform == "darwin" else 1024)
        return {"cpu_s": got["cpu_s"], "wall_s": got["wall_s"], "peak_rss_mb": rss_mb}

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _editor(name: str) -> str | None:
    return shutil.which(name)


def _jobs(folder: Path, width: int, height: int) -> list[dict]:
    """The subprocess jobs: each a list of (tool, command or skip note) rows."""
    py = sys.executable
    sets = [a for k, v in EIGHT_OPS.items() for a in ("--set", f"{k}={v}")]
    scripts = {}
    for name, text in (("pillow_lut.py", PILLOW_SCRIPT), ("numpy_ops.py", NUMPY_SCRIPT), ("rawpy_pillow.py", RAWPY_SCRIPT)):
        scripts[name] = folder / name
        scripts[name].write_text(text)
    table = folder / "table.npy"
    np.save(table, _pillow_table(EIGHT_OPS, PILLOW_LUT_POINTS))
    mp = width * height / 1e6
    jpeg = _write_jpeg(folder / "photo.jpg", width, height)
    raw_w, raw_h = _even(width * 1.414), _even(height * 1.414)
    dng = folder / "photo.dng"
    from pipeline.raw import write_cfa_dng
    write_cfa_dng(_noisy_photo(raw_w, raw_h, seed=1), dng)
    raw_mp = raw_w * raw_h / 1e6
    out = str(folder / "out.jpg")
    dt, rt = _editor("darktable-cli"), _editor("rawtherapee-cli")

    def darktable(src: Path, extra: list[str]):
        if not dt:
            return "skipped: darktable-cli is not installed"
        conf = folder / "darktable"
        return [dt, str(src), out, "--core", "--configdir", str(conf), "--library", ":memory:", *extra]

    def rawtherapee(src: Path):
        if not rt:
            return "skipped: rawtherapee-cli is not installed"
        return [rt, "-o", out, "-j92", "-Y", "-d", "-c", str(src)]

    return [
        {"job": f"{_mp(mp)} MP JPEG -> JPEG, 8 global ops", "key": "jpeg", "rows": [
            ("Atelier (python -m pipeline.apply)", [py, "-m", "pipeline.apply", str(jpeg), out, *sets]),
            (f"Pillow LUT script ({PILLOW_LUT_POINTS}^3 Color3DLUT)",
             [py, str(scripts["pillow_lut.py"]), str(jpeg), out, str(table), str(PILLOW_LUT_POINTS)]),
            ("numpy script (same math, every pixel)",
             [py, str(scripts["numpy_ops.py"]), str(jpeg), out, json.dumps(EIGHT_OPS)]),
            ("darktable-cli (its default processing)", darktable(jpeg, [])),
            ("rawtherapee-cli (its default profile)", rawtherapee(jpeg)),
        ]},
        {"job": f"{_mp(raw_mp)} MP DNG -> full-size JPEG", "key": "raw_full", "rows": [
            ("Atelier (develop + 8 ops)", [py, "-m", "pipeline.apply", str(dng), out, *sets]),
            ("rawpy + Pillow (AHD, no edit)", [py, str(scripts["rawpy_pillow.py"]), str(dng), out, "full"]),
            ("darktable-cli (its default processing)", darktable(dng, [])),
            ("rawtherapee-cli (its default profile)", rawtherapee(dng)),
        ]},
        {"job": f"{_mp(raw_mp)} MP DNG -> 1600 px first preview", "key": "raw_preview", "rows": [
            ("Atelier (--long-side 1600, + 8 ops)",
             [py, "-m", "pipeline.apply", str(dng), out, "--long-side", "1600", *sets]),
            ("rawpy half_size + Pillow", [py, str(scripts["rawpy_pillow.py"]), str(dng), out, "half"]),
            ("darktable-cli --hq false (1600 px)", darktable(dng, ["--hq", "false", "--width", "1600",
                                                                   "--height", "1600"])),
        ]},
    ]


def _mp(megapixels: float) -> str:
    return f"{megapixels:.0f}" if megapixels >= 10 else f"{megapixels:.2g}"


def _even(x: float) -> int:
    return max(16, int(round(x / 2)) * 2)


def _pillow_table(settings: dict, n: int) -> np.ndarray:
    """The exact math on an n^3 grid, in Color3DLUT's order (blue slowest, red fastest), float32 0..1."""
    from pipeline.adjust import apply_pixel_ops

    g = np.linspace(0.0, 1.0, n, dtype=np.float32)
    b, gg, r = np.meshgrid(g, g, g, indexing="ij")
    return apply_pixel_ops(np.stack([r, gg, b], axis=-1), settings).astype(np.float32)


def _per_megapixel(folder: Path, width: int, height: int, rounds: int, launcher: Launcher) -> dict:
    """The one-shot JPEG job at 1/3, 1, 2 and 4 times the base size: peak RSS and CPU per megapixel."""
    py = sys.executable
    sets = [a for k, v in EIGHT_OPS.items() for a in ("--set", f"{k}={v}")]
    sizes = [(_even(width * f), _even(height * f)) for f in (0.577, 1.0, 1.414, 2.0)]
    rows = []
    for w, h in sizes:
        src = _write_jpeg(folder / f"mp_{w}x{h}.jpg", w, h)
        cmd = [py, "-m", "pipeline.apply", str(src), str(folder / "mp_out.jpg"), *sets]
        launcher.measure(cmd)  # warm
        got = [launcher.measure(cmd) for _ in range(rounds)]
        mp = w * h / 1e6
        cpu = statistics.median(g["cpu_s"] for g in got)
        rss = statistics.median(g["peak_rss_mb"] for g in got)
        rows.append({"megapixels": round(mp, 2), "cpu_s": round(cpu, 3), "peak_rss_mb": round(rss, 1),
                     "cpu_s_per_mp": round(cpu / mp, 4)})
    (m0, m1) = rows[0]["megapixels"], rows[-1]["megapixels"]
    slope = (rows[-1]["peak_rss_mb"] - rows[0]["peak_rss_mb"]) / (m1 - m0)
    time_slope = (rows[-1]["cpu_s"] - rows[0]["cpu_s"]) / (m1 - m0)
    return {"rows": rows, "memory_mb_per_mp": round(slope, 2), "cpu_s_per_mp_marginal": round(time_slope, 4),
            "targets": {"memory_mb_per_mp": 12}}


#: The sliders whose drags the bench times: the first stage's per-channel head, then one op of each
#: later stage (tone, white balance, colour).
DRAG_SLIDERS = ("exposure", "highlights", "temperature", "saturation")


def _in_process(width: int, height: int, rounds: int) -> dict:
    """Cold first render, proxy drags and the ways to apply a 3D LUT, on the main benchmark's photo."""
    from PIL import Image, ImageFilter

    from pipeline.workload import GLOBAL_STACK, bench_photo, naive_render
    from pipeline.render import Renderer, SourceImage, apply_lut, apply_lut_image, compile_lut, lut_coordinates
    from pipeline.state import EditState

    photo = bench_photo(width, height)
    runs = max(3, rounds)

    def stack(i: int, extra: dict | None = None, op: str = "exposure") -> EditState:
        return EditState.from_dict({"settings": {**GLOBAL_STACK, op: GLOBAL_STACK[op] - 40 + i, **(extra or {})}})

    Renderer().render(SourceImage.from_array(photo[:64, :64]), stack(0))  # OpenCV's thread pool starts once
    cold_wall, cold_cpu = [], []
    for i in range(runs):
        new_photo = np.ascontiguousarray(np.roll(photo, 17 * (i + 1), axis=1))  # a photo no cache has seen
        w, c = time.perf_counter(), time.process_time()
        Renderer().render(SourceImage.from_array(new_photo), stack(1 + i))
        cold_cpu.append(time.process_time() - c)
        cold_wall.append(time.perf_counter() - w)
    renderer, source = Renderer(), SourceImage.from_array(photo)
    renderer.render(source, stack(0), long_side=1600)  # the proxy's coordinates, as after the first look

    def drag(extra: dict | None, op: str, draft: bool) -> float:
        """Median CPU ms of the frames of one slider's drag (every frame a new value: no LUT compiled for
        one frame is a cache hit for the next)."""
        cpu = []
        for i in range(max(9, 3 * runs)):
            c = time.process_time()
            renderer.render(source, stack(10 + 2 * i + (extra is not None) + 41 * draft, extra, op),
                            long_side=1600, draft=draft)
            cpu.append(time.process_time() - c)
        return statistics.median(cpu) * 1000.0

    drags, sliders = {}, {}
    for label, extra in (("lut_only", None), ("clarity", {"clarity": 30})):
        # the frame a slider stops on (exact), and the frames while it moves (drafts): every slider's,
        # since a draft reuses what the moving slider does not change (the slowest is the row)
        drags[label] = drag(extra, "exposure", False)
        sliders[label] = {op: round(drag(extra, op, True), 1) for op in DRAG_SLIDERS}
        drags[label + "_draft"] = max(sliders[label].values())
    # the draft's error against the exact math: the benchmark's stack, a strong colour stack, and strong
    # exposure and contrast (the ops a draft reads through its cubic rather than on its grid)
    draft_err = np.concatenate([
        np.abs(renderer.render(source, EditState.from_dict({"settings": settings}), long_side=1600, draft=True)
               .astype(np.int16) - naive_render(source.proxy(1600), settings).astype(np.int16)).ravel()
        for settings in (GLOBAL_STACK, {"vibrance": 80, "whites": 40, "blacks": -40, "hue_blue": 50},
                         {**GLOBAL_STACK, "exposure": 80, "contrast": 60})])

    # applying one 3D LUT at this size: speed and error against the exact math
    exact = naive_render(photo, GLOBAL_STACK)
    lut = compile_lut(GLOBAL_STACK)
    coords = lut_coordinates(photo)
    lut8 = cv2.convertScaleAbs(lut, alpha=1.0 / 257.0)
    pil = Image.fromarray(photo)
    def previous_path():  # the 16-bit remap, rounded twice (16 bits, then 8): what Atelier did before
        looked = cv2.remap(lut, coords[0], coords[1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        return cv2.convertScaleAbs(looked, alpha=1.0 / 257.0)

    methods = {
        "previous path: 16-bit remap, whole frame": previous_path,
        "Atelier: remap, coordinates cached (a re-render)": lambda: apply_lut(lut, coords),
        "Atelier: coordinates + remap in one pass (a new photo)": lambda: apply_lut_image(lut, photo),
        "OpenCV remap with an 8-bit LUT": lambda: cv2.remap(lut8, coords[0], coords[1], cv2.INTER_LINEAR,
                                                            borderMode=cv2.BORDER_REPLICATE),
    }
    for n in (33, 65):
        table = ImageFilter.Color3DLUT(n, _pillow_table(GLOBAL_STACK, n).reshape(-1))
        methods[f"Pillow Color3DLUT {n}^3 (C, trilinear)"] = lambda t=table: np.asarray(pil.filter(t))
    lut_rows = []
    before = previous_path()
    for name, fn in methods.items():
        out = fn()
        moved = np.abs(out.astype(np.int16) - before.astype(np.int16))
        cpu = []
        for _ in range(runs):
            c = time.process_time()
            fn()
            cpu.append(time.process_time() - c)
        err = np.abs(out.astype(np.int16) - exact.astype(np.int16))
        lut_rows.append({"method": name, "cpu_ms": round(statistics.median(cpu) * 1000.0, 1),
                         "error_max": int(err.max()), "error_mean": round(float(err.mean()), 3),
                         "vs_previous_max": int(moved.max()), "vs_previous_share": float((moved > 0).mean())})
    return {"size": f"{width}x{height}",
            "cold_first_render_wall_ms": round(statistics.median(cold_wall) * 1000.0, 1),
            "cold_first_render_cpu_ms": round(statistics.median(cold_cpu) * 1000.0, 1),
            "proxy_drag_lut_only_cpu_ms": round(drags["lut_only"], 1),
            "proxy_drag_clarity_cpu_ms": round(drags["clarity"], 1),
            "proxy_draft_lut_only_cpu_ms": round(drags["lut_only_draft"], 1),
            "proxy_draft_clarity_cpu_ms": round(drags["clarity_draft"], 1),
            "proxy_draft_sliders_cpu_ms": sliders,
            "proxy_draft_error_max": int(draft_err.max()), "proxy_draft_error_mean": round(float(draft_err.mean()), 3),
            "lut_methods": lut_rows,
            "targets": {"cold_first_render_wall_ms": 150, "proxy_drag_lut_only_cpu_ms": 16,
                        "proxy_drag_clarity_cpu_ms": 40, "error_max": 3, "error_mean": 0.2}}


def run(rounds: int = 3, width: int = 4000, height: int = 3000, render_size: tuple[int, int] = (3840, 2160)) -> dict:
    """Every peer row (see the module doc); ``width`` x ``height`` is the JPEG job's photo."""
    with tempfile.TemporaryDirectory(prefix="atelier-peers-") as tmp:
        folder = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(folder / "pycache")
        env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
        jobs = _jobs(folder, width, height)
        launcher = Launcher(env, folder)
        runnable = [(j, k) for j in jobs for k, (_, cmd) in enumerate(j["rows"]) if isinstance(cmd, list)]
        for job, k in runnable:  # once untimed: file cache and bytecode cache, as for an installed tool
            launcher.measure(job["rows"][k][1])
        got: dict[tuple[int, int], list[dict]] = {}
        for r in range(rounds):
            shift = r % len(runnable)
            for job, k in runnable[shift:] + runnable[:shift]:  # rotated: no tool always runs first
                got.setdefault((id(job), k), []).append(launcher.measure(job["rows"][k][1]))
        out_jobs = []
        for job in jobs:
            rows = []
            for k, (tool, cmd) in enumerate(job["rows"]):
                if not isinstance(cmd, list):
                    rows.append({"tool": tool, "note": cmd})
                    continue
                runs = got[(id(job), k)]
                rows.append({"tool": tool, **{key: round(statistics.median(g[key] for g in runs), 3)
                                              for key in ("cpu_s", "wall_s", "peak_rss_mb")}})
            atelier = rows[0]
            for row in rows[1:]:
                if "cpu_s" in row:
                    row["ratio"] = round(atelier["cpu_s"] / row["cpu_s"], 2)
            out_jobs.append({"job": job["job"], "key": job["key"], "rows": rows})
        per_mp = _per_megapixel(folder, width, height, rounds, launcher)
        launcher.close()
    return {"rounds": rounds, "cpus": os.cpu_count(), "jobs": out_jobs, "per_megapixel": per_mp,
            "in_process": _in_process(*render_size, rounds),
            "targets": {"jpeg_ratio_vs_pillow": 1.0, "jpeg_peak_rss_mb": 250, "raw_preview_ratio_vs_rawpy_half": 1.5,
                        "raw_full_ratio_vs_rawpy": 1.0}}


def _mark(value: float, target: float | None, unit: str = "") -> str:
    """"  ok" or "  MISSED (target <= N)" after a figure; nothing without a target."""
    if target is None:
        return ""
    return "  ok" if value <= target else f"  MISSED (target <= {target}{unit})"


def print_table(p: dict) -> None:
    """The peers' figures as a table (see ``run``)."""
    t = p["targets"]
    print(f"Atelier next to its peers - {p['cpus']} CPUs, median of {p['rounds']} rotated rounds; "
          "CPU = user + system of the whole process; ratio = Atelier's CPU / the peer's\n")
    print(f"  {'tool':<44} {'CPU s':>7} {'wall s':>7} {'peak MB':>8} {'ratio':>6}")
    checks = {"jpeg": ("Pillow LUT", t["jpeg_ratio_vs_pillow"]), "raw_full": ("rawpy + Pillow", t["raw_full_ratio_vs_rawpy"]),
              "raw_preview": ("rawpy half_size", t["raw_preview_ratio_vs_rawpy_half"])}
    for job in p["jobs"]:
        print(f"  {job['job']}")
        for row in job["rows"]:
            if "note" in row:
                print(f"    {row['tool']:<42} {row['note']}")
                continue
            ratio = f"{row['ratio']:>6}" if "ratio" in row else f"{'':>6}"
            mark = ""
            peer, target = checks[job["key"]]
            if row["tool"].startswith(peer):
                mark = _mark(row["ratio"], target)
            if row["tool"].startswith("Atelier") and job["key"] == "jpeg":
                mark = _mark(row["peak_rss_mb"], t["jpeg_peak_rss_mb"], " MB")
            print(f"    {row['tool']:<42} {row['cpu_s']:>7.2f} {row['wall_s']:>7.2f} {row['peak_rss_mb']:>8.0f} "
                  f"{ratio}{mark}")
    m = p["per_megapixel"]
    print("\n  One-shot JPEG job by photo size (python -m pipeline.apply, 8 ops):")
    for row in m["rows"]:
        print(f"    {_mp(row['megapixels']):>5} MP  {row['cpu_s']:>6.2f} s CPU ({row['cpu_s_per_mp']:.3f} s/MP)"
              f"  {row['peak_rss_mb']:>6.0f} MB peak")
    mark = _mark(m["memory_mb_per_mp"], m["targets"]["memory_mb_per_mp"])
    print(f"    memory per extra megapixel {m['memory_mb_per_mp']:>6} MB{mark}; "
          f"CPU per extra megapixel {m['cpu_s_per_mp_marginal']} s")
    q = p["in_process"]
    tq = q["targets"]

    def row(label, value, unit, target=None):
        print(f"    {label:<52} {value:>8} {unit}{_mark(value, target)}")
    print(f"\n  In process, {q['size']} photo:")
    row("cold first render of a new photo (wall)", q["cold_first_render_wall_ms"], "ms", tq["cold_first_render_wall_ms"])
    row("  the same, CPU time of all threads", q["cold_first_render_cpu_ms"], "ms")
    # a drag's frames are drafts; the frame the slider stops on is rendered exactly once, after the drag
    # the slowest of the sliders dragged; each slider's own figure follows
    row("proxy 1600 drag, LUT ops only (CPU per frame)", q["proxy_draft_lut_only_cpu_ms"], "ms",
        tq["proxy_drag_lut_only_cpu_ms"])
    print(f"    {'  by slider':<52} " + ", ".join(f"{k} {v}" for k, v in q["proxy_draft_sliders_cpu_ms"]["lut_only"].items()))
    row("proxy 1600 drag, with clarity (CPU per frame)", q["proxy_draft_clarity_cpu_ms"], "ms",
        tq["proxy_drag_clarity_cpu_ms"])
    print(f"    {'  by slider':<52} " + ", ".join(f"{k} {v}" for k, v in q["proxy_draft_sliders_cpu_ms"]["clarity"].items()))
    print(f"    {'  draft error against the exact math (max / mean)':<52} {q['proxy_draft_error_max']:>8} / "
          f"{q['proxy_draft_error_mean']} levels (the preview JPEG's own: about 2)")
    row("the frame it stops on (exact), LUT ops only", q["proxy_drag_lut_only_cpu_ms"], "ms")
    row("the frame it stops on (exact), with clarity", q["proxy_drag_clarity_cpu_ms"], "ms")
    print(f"\n    {'applying one 3D LUT (13 ops)':<52} {'CPU ms':>8} {'max':>4} {'mean':>6}   vs the previous path")
    for r in q["lut_methods"]:
        print(f"    {r['method']:<52} {r['cpu_ms']:>8} {r['error_max']:>4} {r['error_mean']:>6}   "
              f"{r['vs_previous_share']:.1e} of values differ, by at most {r['vs_previous_max']}")
    print("    (max / mean: error against the exact math in 8-bit levels)")
