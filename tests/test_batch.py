"""``python -m agent.batch`` and the runner under it (agent/runs/parallel.py), on real photos.

A folder with real photos and one broken file runs on a process pool, on Ray
in local mode and in this process: outputs are the same pixels as the
renderer gives, the broken file is reported and never stops the run, a second
run skips finished outputs, and a worker that dies costs only its own item.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agent.runs.batch import REPORT, main, run_batch
from agent.runs.parallel import map_jobs
from conftest import small_photo
from pipeline.imageio import load_image
from pipeline.render import render
from pipeline.state import EditState

REPO = Path(__file__).resolve().parents[1]
RECIPE = {"settings": {"exposure": 20, "temperature": 15, "contrast": 10}, "layers": []}


@pytest.fixture
def folder(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    for name in ("astronaut", "coffee", "chelsea"):
        Image.fromarray(small_photo(name, 240)).save(photos / f"{name}.png")
    (photos / "broken.jpg").write_bytes(b"this is not a photo\n" * 20)
    (photos / "notes.txt").write_text("not a photo suffix: ignored")
    recipe = tmp_path / "recipe.json"
    recipe.write_text(json.dumps(RECIPE))
    return photos, recipe


def report_lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / REPORT).read_text().splitlines()]


def expected(photo: Path, state: EditState) -> np.ndarray:
    return render(load_image(photo).pixels, state)


def test_a_recipe_on_a_process_pool_with_a_broken_file_then_resumed(folder, tmp_path):
    photos, recipe = folder
    out = tmp_path / "out"
    summary = run_batch(photos, out, state_file=str(recipe), workers=2, fmt="png", progress=False)
    assert (summary["done"], summary["skipped"], summary["photos"]) == (3, 0, 4)
    assert [Path(f["photo"]).name for f in summary["failed"]] == ["broken.jpg"]
    assert "not an image" in summary["failed"][0]["error"]
    assert summary["photos_per_second"] > 0 and summary["runner"] == "process pool (2 workers)"
    state = EditState.from_dict(RECIPE)
    for name in ("astronaut", "coffee", "chelsea"):
        got = load_image(out / f"{name}.png").pixels
        assert np.array_equal(got, expected(photos / f"{name}.png", state))   # same pixels as the renderer
    lines = report_lines(out)
    assert sorted((Path(r["photo"]).name, r["status"]) for r in lines) == [
        ("astronaut.png", "done"), ("broken.jpg", "failed"), ("chelsea.png", "done"), ("coffee.png", "done")]

    (out / "coffee.png").unlink()                 # resumable: only the missing one (and the broken) run again
    again = run_batch(photos, out, state_file=str(recipe), workers=1, fmt="png", progress=False)
    assert (again["done"], again["skipped"], len(again["failed"])) == (1, 2, 1)
    assert (out / "coffee.png").exists()


def test_ray_local_mode_gives_the_same_outputs_as_the_pool(folder, tmp_path):
    photos, recipe = folder
    pool = run_batch(photos, tmp_path / "pool", state_file=str(recipe), workers=2, progress=False)
    ray = run_batch(photos, tmp_path / "ray", state_file=str(recipe), workers=2, ray="local", progress=False)
    assert ray["runner"] == "ray (local)" and ray["done"] == pool["done"] == 3
    assert [Path(f["photo"]).name for f in ray["failed"]] == ["broken.jpg"]
    for name in ("astronaut", "coffee", "chelsea"):
        assert (tmp_path / "ray" / f"{name}.jpg").read_bytes() == (tmp_path / "pool" / f"{name}.jpg").read_bytes()


def test_a_style_and_a_conversation(folder, tmp_path):
    photos, _ = folder
    from profiles import load_profile

    styled = run_batch(photos, tmp_path / "film", style="film", workers=1, fmt="png", progress=False)
    assert styled["done"] == 3
    film = EditState().with_settings(load_profile("engine").style("film"))
    assert not film.is_identity
    assert np.array_equal(load_image(tmp_path / "film" / "chelsea.png").pixels,
                          expected(photos / "chelsea.png", film))

    talked = run_batch(photos, tmp_path / "talk", say=["make it warmer", "a bit brighter"], workers=1,
                       fmt="png", progress=False)
    assert talked["done"] == 3 and len(talked["failed"]) == 1
    original = load_image(photos / "coffee.png").pixels.astype(float)
    warmed = load_image(tmp_path / "talk" / "coffee.png").pixels.astype(float)
    assert warmed.shape == original.shape
    assert warmed.mean() > original.mean() + 2                                 # brighter
    assert (warmed[..., 0] - warmed[..., 2]).mean() > (original[..., 0] - original[..., 2]).mean() + 2   # warmer


def test_the_command_line(folder, tmp_path, capsys):
    photos, recipe = folder
    out = tmp_path / "cli"
    done = subprocess.run([sys.executable, "-m", "agent.batch", str(photos), "--out", str(out), "--state",
                           str(recipe), "--workers", "1", "--no-progress"], cwd=REPO, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert done.returncode == 1                                               # one file failed
    assert "3 done, 0 skipped, 1 failed of 4 photos" in done.stdout and "photos/s" in done.stdout
    assert "broken.jpg" in done.stdout
    assert main([str(photos), "--out", str(out), "--style", "no-such-look", "--no-progress"]) == 2
    assert "--style no-such-look" in capsys.readouterr().err
    assert main([str(tmp_path / "missing"), "--out", str(out), "--style", "film"]) == 2
    assert "no such folder" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"settings": {"exposure": 900}}')
    assert main([str(photos), "--out", str(out), "--state", str(bad)]) == 2
    assert "exposure" in capsys.readouterr().err
    with pytest.raises(SystemExit):                                           # exactly one of the three
        main([str(photos), "--out", str(out), "--style", "film", "--state", str(recipe)])


def square_or_fail(x):
    if x == 3:
        raise ValueError("three is bad")
    if x == 5:
        os._exit(1)                      # the worker process dies on this item
    return {"x": x * x}


def test_map_jobs_survives_a_bad_item_and_a_dead_worker():
    seen = []
    results = map_jobs(square_or_fail, list(range(8)), workers=2, errors="return",
                       on_done=lambda item, r: seen.append(item))
    assert results[3] == {"error": "ValueError: three is bad"}
    assert "died" in results[5]["error"]
    assert [r["x"] for i, r in enumerate(results) if i not in (3, 5)] == [0, 1, 4, 16, 36, 49]
    assert sorted(seen) == list(range(8))
    assert map_jobs(square_or_fail, [1, 2, 3], workers=1, errors="return")[2]["error"].startswith("ValueError")
    with pytest.raises(ValueError, match="three is bad"):                    # the default: a plain loop's
        map_jobs(square_or_fail, [1, 2, 3], workers=1)
