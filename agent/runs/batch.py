"""Apply a conversation or a recipe to every photo in a folder.

    python -m agent.batch PHOTOS --out DIR (--say TEXT ... | --style NAME | --state recipe.json)
                          [--ray auto|local|ADDRESS] [--workers N] [--format jpeg|png|tiff]
                          [--long-side PX] [--quality Q] [--no-progress]

- ``--state recipe.json``: an EditState (as ``python -m pipeline.apply --state`` reads it) rendered on
  every photo; ``--style NAME``: a named look of the engine profile (``film``, ``moody``...), as a recipe;
  ``--say TEXT ...``: a conversation, each photo its own session through ``agent.service`` (the
  embedded planner and judge, or the VLM named by ``ATELIER_VLM_*``), turns kept without review.
- Runs on a process pool (``--workers``, default: one per core) or on Ray (``--ray local`` starts
  one on this machine, ``--ray auto`` or an address joins a cluster); see agent/runs/parallel.py.
- Resumable: a photo whose output already exists is skipped (outputs are written atomically, so a
  killed run never leaves a half file that counts as done). ``--overwrite`` redoes them.
- One bad file never stops the run: it is listed in ``DIR/batch-report.jsonl`` (one line per photo:
  photo, output, status done|skipped|failed, error, seconds) and in the summary.
- Prints the rate in photos per second. Exit status 0 when every photo is done or skipped, 1 when
  some failed, 2 when the command itself is wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from agent.runs.parallel import ParallelError, default_workers, map_jobs

PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".bmp", ".dng", ".cr2", ".nef", ".arw"}
FORMATS = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "tiff": "tif", "tif": "tif"}
REPORT = "batch-report.jsonl"


class BatchError(ValueError):
    """The command cannot run (no photos, a bad recipe, an unknown style); the message says why."""


@dataclass(frozen=True)
class Job:
    photo: str
    out: str
    recipe: dict | None = None           # EditState dict, or None for a conversation
    say: tuple = ()
    fmt: str = "jpeg"
    quality: int = 92
    long_side: int | None = None


@dataclass
class Outcome:
    photo: str
    out: str
    status: str                          # done | skipped | failed
    error: str = ""
    seconds: float = 0.0
    notes: list = field(default_factory=list)


# -- the work of one photo (runs in a worker process) --------------------------------------

_WORKER: dict[str, Any] = {}


def run_one(job: Job) -> dict:
    """Render one photo to ``job.out``; a failure is an Outcome with the reason, never an exception."""
    start = time.perf_counter()
    try:
        notes = _recipe(job) if job.recipe is not None else _conversation(job)
        return asdict(Outcome(job.photo, job.out, "done", seconds=time.perf_counter() - start, notes=notes))
    except Exception as exc:  # noqa: BLE001 - the report says what went wrong with this file
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        return asdict(Outcome(job.photo, job.out, "failed", error=reason, seconds=time.perf_counter() - start))


def _recipe(job: Job) -> list:
    from agent.service import apply_recipe
    from pipeline.imageio import write_bytes_atomic
    from pipeline.render import Renderer
    from pipeline.state import EditState

    renderer = _WORKER.setdefault("renderer", Renderer(max_cache_bytes=0))   # keeps its LUTs across photos
    data = apply_recipe(job.photo, EditState.from_dict(job.recipe), fmt=job.fmt, quality=job.quality,
                        long_side=job.long_side, renderer=renderer)
    write_bytes_atomic(job.out, data)
    return []


def _studio():
    """This worker's Studio on a temporary folder (each photo's session is removed when done)."""
    if "studio" not in _WORKER:
        import atexit

        from agent.config import load_config
        from agent.service import Studio

        root = Path(tempfile.mkdtemp(prefix="atelier-batch-"))
        atexit.register(shutil.rmtree, root, True)
        studio = Studio(database_url=f"sqlite:///{root / 'atelier.db'}", sessions_dir=root / "sessions",
                        config=load_config().with_overrides(review_mode="never"), storage_url=str(root / "sessions"))
        atexit.register(studio.close)
        _WORKER["studio"] = studio
    return _WORKER["studio"]


def _conversation(job: Job) -> list:
    from pipeline.imageio import write_bytes_atomic

    studio = _studio()
    info = studio.start_session(job.photo, filename=Path(job.photo).name, review_mode="never")
    notes = []
    try:
        for text in job.say:
            result = studio.send_message(info.id, text)
            if result.status in ("failed", "not_understood"):
                notes.append(f"{text!r}: {result.reply}")
        if job.long_side:
            data = _encode(studio.render(info.id, long_side=job.long_side), job)
        else:
            data = studio.export(info.id, fmt=job.fmt).read_bytes()
        write_bytes_atomic(job.out, data)
    finally:
        studio.store.remove_session_files(info.id)
    return notes


def _encode(pixels, job: Job) -> bytes:
    from pipeline.imageio import encode_image

    return encode_image(pixels, {"jpg": "jpeg", "tif": "tiff"}.get(job.fmt, job.fmt), quality=job.quality)


# -- the driver -------------------------------------------------------------------------------

def list_photos(folder: str | os.PathLike) -> list[Path]:
    """Photos in a folder (not recursive) or one photo, sorted by name."""
    p = Path(folder)
    if p.is_file():
        return [p]
    if not p.is_dir():
        raise BatchError(f"{p}: no such folder or file")
    found = sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() in PHOTO_SUFFIXES)
    if not found:
        raise BatchError(f"{p}: no photos in it ({', '.join(sorted(PHOTO_SUFFIXES))})")
    return found


def output_names(photos: Sequence[Path], ext: str) -> list[str]:
    """``<stem>.<ext>`` for each photo; photos that share a stem keep their own suffix in the name."""
    stems: dict[str, int] = {}
    for p in photos:
        stems[p.stem] = stems.get(p.stem, 0) + 1
    return [f"{p.stem}.{ext}" if stems[p.stem] == 1 else f"{p.stem}-{p.suffix.lstrip('.').lower()}.{ext}"
            for p in photos]


def recipe_from(state_file: str | None, style: str | None) -> dict | None:
    """The recipe as an EditState dict, checked before any photo is touched."""
    from pipeline.state import EditState, EditStateError

    if state_file:
        try:
            return EditState.from_json(Path(state_file).read_text(encoding="utf-8")).to_dict()
        except OSError as exc:
            raise BatchError(f"--state {state_file}: cannot read it ({exc.strerror})") from None
        except (EditStateError, ValueError) as exc:
            raise BatchError(f"--state {state_file}: {exc}") from None
    if style:
        from profiles import load_profile

        try:
            settings = load_profile("engine").style(style)
        except Exception as exc:  # noqa: BLE001 - ProfileError names the known styles
            raise BatchError(f"--style {style}: {exc}") from None
        return EditState().with_settings(settings).to_dict()
    return None


def run_batch(photos_dir: str | os.PathLike, out: str | os.PathLike, *, say: Sequence[str] = (),
              style: str | None = None, state_file: str | None = None, ray: str | None = None,
              workers: int | None = None, fmt: str = "jpeg", quality: int = 92, long_side: int | None = None,
              overwrite: bool = False, progress: bool = True) -> dict:
    """Run a batch; returns the summary (counts, rate, failures). See the module docstring."""
    chosen = [bool(say), bool(style), bool(state_file)]
    if sum(chosen) != 1:
        raise BatchError("say what to apply: exactly one of --say TEXT ..., --style NAME, --state recipe.json")
    ext = FORMATS.get(fmt.lower())
    if ext is None:
        raise BatchError(f"--format: expected jpeg, png or tiff, got {fmt!r}")
    fmt = {"jpg": "jpeg", "tif": "tiff"}.get(ext, ext)
    say = tuple(t.strip() for t in say if t.strip())
    recipe = recipe_from(state_file, style)
    photos = list_photos(photos_dir)
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = output_names(photos, ext)
    jobs, outcomes = [], []
    for photo, name in zip(photos, names):
        target = out_dir / name
        if target.exists() and not overwrite:
            outcomes.append(asdict(Outcome(str(photo), str(target), "skipped")))
        else:
            jobs.append(Job(str(photo), str(target), recipe, say, fmt, quality, long_side))
    workers = workers or default_workers()
    bar = _progress_bar(len(photos), len(outcomes), progress)
    report = (out_dir / REPORT).open("a", encoding="utf-8")
    for o in outcomes:
        report.write(json.dumps(o) + "\n")

    def done(_job: Job, result: dict) -> None:
        report.write(json.dumps(result) + "\n")
        report.flush()
        bar.update(1)
        if result.get("status") == "failed":
            bar.write(f"failed: {Path(result['photo']).name}: {result['error']}")

    start = time.perf_counter()
    try:
        results = map_jobs(run_one, jobs, workers=workers, ray_address=ray, on_done=done, errors="return")
    finally:
        bar.close()
        report.close()
    seconds = time.perf_counter() - start
    for job, r in zip(jobs, results):   # a worker that died reports {"error"} without an Outcome
        if "status" not in r:
            r.update(asdict(Outcome(job.photo, job.out, "failed", error=r.get("error", "unknown error"))))
    outcomes += results
    finished = sum(1 for r in results if r["status"] == "done")
    return {
        "photos": len(photos), "done": finished, "skipped": sum(1 for o in outcomes if o["status"] == "skipped"),
        "failed": [{"photo": o["photo"], "error": o["error"]} for o in outcomes if o["status"] == "failed"],
        "seconds": round(seconds, 3), "photos_per_second": round(finished / seconds, 2) if seconds > 0 else 0.0,
        "runner": f"ray ({ray})" if ray else (f"process pool ({workers} workers)" if workers > 1 and len(jobs) > 1
                                              else "this process"),
        "report": str(out_dir / REPORT),
    }


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def write(self, text: str) -> None:
        print(text, file=sys.stderr)

    def close(self) -> None:
        pass


def _progress_bar(total: int, initial: int, show: bool):
    if not show:
        return _NoBar()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar()
    return tqdm(total=total, initial=initial, unit="photo", file=sys.stderr, dynamic_ncols=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.batch",
                                     description="Apply a conversation or a recipe to every photo in a folder.")
    parser.add_argument("photos", help="a folder of photos (or one photo)")
    parser.add_argument("--out", required=True, help="output folder (created; finished photos are skipped)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--say", nargs="+", metavar="TEXT", help="a conversation: one message per turn")
    what.add_argument("--style", metavar="NAME", help="a named look of the engine profile")
    what.add_argument("--state", metavar="recipe.json", help="an EditState JSON file")
    parser.add_argument("--ray", metavar="auto|local|ADDRESS", help="run on Ray instead of a process pool")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
    parser.add_argument("--format", default="jpeg", help="jpeg (default), png or tiff")
    parser.add_argument("--quality", type=int, default=92, help="JPEG quality 1..100 (default 92)")
    parser.add_argument("--long-side", type=int, default=None, help="resize outputs to this long side (px)")
    parser.add_argument("--overwrite", action="store_true", help="redo photos whose output exists")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args(argv)
    if args.workers is not None and args.workers < 1:
        parser.error("--workers: at least 1")
    if not 1 <= args.quality <= 100:
        parser.error("--quality: 1..100")
    try:
        summary = run_batch(args.photos, args.out, say=args.say or (), style=args.style, state_file=args.state,
                            ray=args.ray, workers=args.workers, fmt=args.format, quality=args.quality,
                            long_side=args.long_side, overwrite=args.overwrite, progress=not args.no_progress)
    except (BatchError, ParallelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(f"{summary['done']} done, {summary['skipped']} skipped, {len(summary['failed'])} failed "
              f"of {summary['photos']} photos in {summary['seconds']:.1f} s on {summary['runner']}: "
              f"{summary['photos_per_second']:.2f} photos/s")
        for f in summary["failed"]:
            print(f"  failed: {f['photo']}: {f['error']}")
        print(f"report: {summary['report']}")
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
