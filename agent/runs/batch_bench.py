"""Batch throughput: the same recipe over a folder in this process, on a process pool and on Ray.

    python -m agent.runs.batch_bench [--photos 48] [--long-side 1600] [--workers N] [--json]

Writes ``--photos`` real photos (skimage's sample images, resized to
``--long-side``, cycled) to a temporary folder, then runs ``agent.runs.batch``'s
recipe path (a film look: tone, colour and clarity) over them with each runner
and prints photos per second, wall clock from the first job to the last
output, start-up of the workers included (it is part of what a batch costs).
Outputs are compared byte for byte across runners.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np

from agent.runs.batch import run_batch
from agent.runs.parallel import default_workers

SAMPLES = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field")
RECIPE = {"settings": {"exposure": 8, "contrast": 18, "highlights": -25, "shadows": 20, "temperature": 10,
                       "saturation": -8, "vibrance": 12, "clarity": 15}, "layers": []}


def make_folder(root: Path, count: int, long_side: int) -> Path:
    from skimage import data

    folder = root / "photos"
    folder.mkdir(parents=True)
    for i in range(count):
        img = getattr(data, SAMPLES[i % len(SAMPLES)])()
        if img.ndim == 2:
            img = np.stack([img] * 3, axis=-1)
        h, w = img.shape[:2]
        s = long_side / max(h, w)
        img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_CUBIC)
        cv2.imwrite(str(folder / f"photo{i:04d}.jpg"), cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                    [cv2.IMWRITE_JPEG_QUALITY, 92])
    return folder


def run(count: int = 48, long_side: int = 1600, workers: int | None = None) -> dict:
    workers = workers or default_workers()
    root = Path(tempfile.mkdtemp(prefix="atelier-batchbench-"))
    try:
        photos = make_folder(root, count, long_side)
        recipe = root / "recipe.json"
        recipe.write_text(json.dumps(RECIPE))
        rows = {}
        for name, kw in (("in-process", dict(workers=1)), (f"pool x{workers}", dict(workers=workers)),
                         (f"ray local x{workers}", dict(workers=workers, ray="local"))):
            out = root / name.replace(" ", "-")
            start = time.perf_counter()
            summary = run_batch(photos, out, state_file=str(recipe), progress=False, **kw)
            seconds = time.perf_counter() - start
            rows[name] = {"photos": summary["done"], "failed": len(summary["failed"]), "seconds": round(seconds, 2),
                          "photos_per_second": round(summary["done"] / seconds, 2)}
        outs = [sorted((root / n.replace(" ", "-")).glob("*.jpg")) for n in rows]
        same = all(a.read_bytes() == b.read_bytes() for files in zip(*outs) for a, b in zip(files, files[1:]))
        return {"photos": count, "long_side": long_side, "workers": workers, "runners": rows,
                "identical_outputs": same}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.runs.batch_bench", description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=48)
    parser.add_argument("--long-side", type=int, default=1600)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.photos, args.long_side, args.workers)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"batch: {result['photos']} photos, long side {result['long_side']} px, recipe of "
          f"{len(RECIPE['settings'])} ops, {result['workers']} workers")
    for name, row in result["runners"].items():
        print(f"  {name:<16} {row['photos_per_second']:6.2f} photos/s  ({row['photos']} in {row['seconds']:.1f} s, "
              f"{row['failed']} failed)")
    print(f"  outputs identical across runners: {result['identical_outputs']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
