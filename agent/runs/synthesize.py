"""Multi-turn training data: edit conversations synthesised through the real agent, as ShareGPT.

``python -m agent.synthesize PHOTOS --out DIR --conversations N [--turns K] [--seed S]
[--workers N] [--ray auto|local|ADDRESS] [--vlm] [--long-side PX]``

Each conversation is a real session of :class:`agent.service.Studio`: a seeded
generator plays the person (phrasings from ``configs/synthesis.yaml``), the
planner plans, the renderer renders, the judge scores. Five turn types:
``global_init`` (the first global edit), ``global_refine`` (adjusting it),
``local_edit`` (a region or a colour), ``rollback_correct`` (going back and
trying differently) and ``style_shift`` (a new look).

Quality gates, all counted in the stats report:
- a turn the agent did not understand, or that the judge scores below
  ``min_pass_score``, or that changed nothing, is rolled back and asked again
  in other words (``regenerated``), at most ``MAX_TRIES`` times, else dropped;
- every kept turn's recorded state is re-rendered by a fresh renderer from the
  original file and must reproduce the saved image exactly;
- conversations that repeat an earlier one (same photo, same words) are
  generated again with the next attempt number, else dropped.

Output (LLaMA-Factory's multimodal ShareGPT form)::

    DIR/records/c00000.json      one conversation (resumable: done ones are skipped)
    DIR/images/c00000/t0.png     the original at --long-side, t1.png ... each kept turn's render
    DIR/atelier_multiturn.json   every conversation; train.json / val.json split by photo
    DIR/dataset_info.json        LLaMA-Factory dataset entries for the three files
    DIR/stats.json, stats.md     turn types, ops, targets, lengths, gates, throughput

``--from-sessions`` exports finished studio sessions a person marked shareable
(``Studio.set_shareable``) to the same format instead.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import yaml

from agent.runs.parallel import ParallelError, map_jobs
from pipeline.imageio import load_image, write_bytes_atomic

REPO_ROOT = Path(__file__).resolve().parents[2]
PHRASES_FILE = REPO_ROOT / "configs" / "synthesis.yaml"
TURN_TYPES = ("global_init", "global_refine", "local_edit", "rollback_correct", "style_shift")
PHOTO_SUFFIXES = {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".bmp", ".dng"}
MAX_TRIES = 3          # phrasings tried for one turn before it is dropped
MAX_DEDUP_ROUNDS = 3   # attempts at a conversation that repeats an earlier one
KEPT = ("approved", "auto_approved")


class SynthesisError(RuntimeError):
    """The synthesis cannot run (bad arguments, no photos, missing extra)."""


# -- the person: seeded phrasings --------------------------------------------------------

def load_phrases(path: Path = PHRASES_FILE) -> dict:
    with open(path, encoding="utf-8") as fh:
        data = yaml.safe_load(fh)
    for key in ("magnitudes", "directions", "wrappers", "complaints", "refine", "local", "rollback", "style"):
        if key not in data:
            raise SynthesisError(f"{path.name}: missing key {key!r}")
    return data


#: The conversation suites the person may borrow words from: the tuning split only, never held-out.
SUITE_DIR = REPO_ROOT / "evals" / "conversations" / "tuning"
#: Turn type -> the suite step kinds whose sentences fit it (global ones have no region).
SUITE_KINDS = {"global_init": ("edit", "complaint", "magnitude"), "global_refine": ("follow_up",),
               "local_edit": ("local", "complaint")}
SUITE_SHARE = 0.3   # how often a turn borrows a suite sentence instead of a template


def suite_phrases(folder: Path = SUITE_DIR) -> dict[str, list[tuple[str | None, str]]]:
    """Turn type -> (image or None for any photo, sentence) from the tuning conversation suites."""
    found: dict[str, list[tuple[str | None, str]]] = {t: [] for t in SUITE_KINDS}
    if "heldout" in folder.parts:
        raise SynthesisError("the held-out suite is never used for anything but measuring")
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        for scenario in data.get("scenarios") or []:
            for step in scenario.get("steps") or []:
                said, kind = step.get("say"), step.get("kind")
                if not isinstance(said, str) or not kind:
                    continue
                for turn_type, kinds in SUITE_KINDS.items():
                    if kind not in kinds:
                        continue
                    local = "region" in step
                    if turn_type == "local_edit" and local:
                        found[turn_type].append((scenario.get("image"), said))
                    elif turn_type != "local_edit" and not local:
                        found[turn_type].append((None, said))
    return found


class Person:
    """Chooses turn types and words; everything comes from one seeded generator."""

    def __init__(self, phrases: dict, rng: random.Random, looks: Sequence[str], photo: str | None = None,
                 suite: dict[str, list[tuple[str | None, str]]] | None = None):
        self.p, self.rng, self.looks = phrases, rng, list(looks)
        # sentences from the tuning suites that fit this photo (local ones name what is in it)
        self.suite = {t: [s for img, s in rows if img in (None, photo)] for t, rows in (suite or {}).items()}

    def _borrow(self, turn_type: str) -> str | None:
        pool = self.suite.get(turn_type) or []
        return self._pick(pool) if pool and self.rng.random() < SUITE_SHARE else None

    def _pick(self, items: Sequence[str]) -> str:
        return self.rng.choice(list(items))

    def direction(self, avoid: str | None = None) -> str:
        choices = [d for d in self.p["directions"] if d != avoid] or self.p["directions"]
        word = self._pick(choices)
        size = self._pick(["light", "plain", "plain", "strong"])
        mag = self._pick(self.p["magnitudes"][size])
        return f"{mag} {word}".strip()

    def _fill(self, template: str) -> str:
        slots = self.p.get("slots", {})
        out = template
        for name, values in slots.items():
            if "{" + name + "}" in out:
                out = out.replace("{" + name + "}", self._pick(values))
        if "{x}" in out:
            out = out.replace("{x}", self.direction())
        return out

    def global_init(self) -> str:
        borrowed = self._borrow("global_init")
        if borrowed:
            return borrowed
        if self.rng.random() < 0.25:
            return self._pick(self.p["complaints"])
        first = self.direction()
        if self.rng.random() < 0.45:
            second = self.direction(avoid=first.split()[-1])
            first = first + self._pick(self.p.get("joiners", [" and "])) + second
        return self._pick(self.p["wrappers"]).replace("{x}", first)

    def global_refine(self) -> str:
        borrowed = self._borrow("global_refine")
        if borrowed:
            return borrowed
        kind = self._pick(["more", "less", "other", "other"])
        return self._fill(self._pick(self.p["refine"][kind]))

    def local_edit(self) -> str:
        return self._borrow("local_edit") or self._fill(self._pick(self.p["local"]))

    def rollback_correct(self) -> tuple[str, str]:
        """(what the person says, the edit part the agent performs after going back)."""
        edit = self.direction()
        return self._pick(self.p["rollback"]).replace("{x}", edit), f"make it {edit}"

    def style_shift(self, current: str | None) -> tuple[str, str]:
        looks = [lk for lk in self.looks if lk != current] or self.looks
        key = self._pick(looks)
        name = self.p.get("look_names", {}).get(key, key.replace("_", " "))
        said = self._pick(self.p["style"]).replace("{look}", name)
        return said.replace(" a a", " an a").replace(" a e", " an e").replace(" a o", " an o"), key

    def next_type(self, turn: int, can_roll_back: bool) -> str:
        if turn == 1:
            return "global_init"
        weights = {"global_refine": 3, "local_edit": 3, "style_shift": 2, "rollback_correct": 2 if can_roll_back else 0}
        names = [n for n in weights if weights[n]]
        return self.rng.choices(names, weights=[weights[n] for n in names])[0]


# -- one conversation in a worker ---------------------------------------------------------

@dataclass(frozen=True)
class Job:
    index: int
    attempt: int
    seed: int
    photo: str
    turns: int
    long_side: int
    vlm: bool = False

    @property
    def conv_id(self) -> str:
        return f"c{self.index:05d}"


_WORKER: dict[str, Any] = {}


def _worker_studio(vlm: bool):
    """This process's Studio on its own temporary folder (removed at exit)."""
    if _WORKER.get("vlm") is not vlm or "studio" not in _WORKER:
        from agent.config import load_config
        from agent.service import Studio

        if vlm:
            if not os.environ.get("ATELIER_VLM_BASE_URL"):
                raise SynthesisError("--vlm needs ATELIER_VLM_BASE_URL and ATELIER_VLM_MODEL")
            from agent.judging import default_judge
            from agent.planning import default_planner
            planner, judge = default_planner(), default_judge()
        else:  # pin the embedded pair even when ATELIER_VLM_* is set
            from agent.judging.embedded import EmbeddedJudge
            from agent.planning.embedded import EmbeddedPlanner
            planner, judge = EmbeddedPlanner(), EmbeddedJudge()
        root = Path(tempfile.mkdtemp(prefix="atelier-synth-"))
        atexit.register(shutil.rmtree, root, True)
        cfg = load_config()
        studio = Studio(database_url=f"sqlite:///{root / 'atelier.db'}", sessions_dir=root,
                        planner=planner, judge=judge, config=cfg)
        _WORKER.update(vlm=vlm, studio=studio, root=root, min_pass=cfg.min_pass_score)
    return _WORKER["studio"]


def _png(pixels: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format="PNG", optimize=False, compress_level=6)
    return buf.getvalue()


def plan_view(plan: dict | None, fallback_reply: str = "") -> dict:
    """The planner-schema view of a recorded plan: reply, understood, sub_goals (op, value, mode, target,
    description); the executor's bookkeeping (ids, stages, statuses) and the judge's words are left out."""
    plan = plan or {}
    steps = []
    for sg in plan.get("sub_goals") or []:
        step = {"op": sg.get("op"), "value": int(sg.get("value", 0))}
        for key in ("mode", "target", "description"):
            if sg.get(key) not in (None, ""):
                step[key] = sg[key]
        steps.append(step)
    return {"reply": str(plan.get("reply") or fallback_reply), "understood": bool(steps), "sub_goals": steps}


def plan_of(studio, session_id: str, result: Any) -> dict:
    """The plan the turn ran (its final one, after any automatic replans), from the session's turn log."""
    logged = next((t for t in reversed(studio.turn_log(session_id)) if t["turn"] == result.turn), None)
    return plan_view(logged["plan"] if logged else None, result.reply)


def _did_something(plan: dict) -> bool:
    return any(int(s.get("value", 0)) != 0 for s in plan["sub_goals"])


def synthesize_one(job: Job) -> dict:
    """Play one conversation; returns the record, its images (PNG bytes) and gate counts."""
    studio = _worker_studio(job.vlm)
    from schemas import load_schema

    planner_schema = load_schema("planner")
    phrases = load_phrases()
    rng = random.Random(f"{job.seed}:{job.index}:{job.attempt}")
    person = Person(phrases, rng, studio.styles(), photo=Path(job.photo).stem, suite=suite_phrases())
    counts: Counter = Counter()
    info = studio.start_session(job.photo, review_mode="never", filename=Path(job.photo).name)
    sid = info.id
    min_pass = _WORKER["min_pass"]
    try:
        original_head = info.head_asset_id
        images = {"t0.png": _png(studio.render(sid, original_head, long_side=job.long_side))}
        conversation: list[dict] = []
        meta_turns: list[dict] = []
        heads = [original_head]        # the versions on the path now (index 0 = original) ...
        head_turns = [0]               # ... and the conversation turn that made each
        shown = "t0.png"               # what the person is looking at
        look: str | None = None
        for _ in range(job.turns):
            k = len(meta_turns) + 1
            kind = person.next_type(k, can_roll_back=len(heads) >= 2)
            kept = None
            for _try in range(MAX_TRIES):
                before = studio.head(sid).id
                rollback_to = None
                new_look = look
                if kind == "rollback_correct":
                    said, edit = person.rollback_correct()
                    rollback_to = len(heads) - 2          # the version before the last kept turn
                    studio.review(sid, "rollback", target=heads[rollback_to])
                    result = studio.send_message(sid, edit)
                elif kind == "style_shift":
                    said, new_look = person.style_shift(look)
                    result = studio.send_message(sid, said)
                else:
                    said = getattr(person, kind)()
                    result = studio.send_message(sid, said)
                plan = plan_of(studio, sid, result)
                ok = (result.status in KEPT and result.score is not None and result.score >= min_pass
                      and _did_something(plan) and result.head_asset_id not in (before, None)
                      and not planner_schema.validate(plan))
                if ok:
                    kept = (said, plan, result, rollback_to, new_look)
                    break
                counts["regenerated"] += 1
                studio.review(sid, "rollback", target=before)   # bit-exact: the try leaves no trace
            if kept is None:
                counts["dropped_turns"] += 1
                continue
            said, plan, result, rollback_to, look = kept
            if rollback_to is not None:
                plan = {**plan, "rollback_to": head_turns[rollback_to]}   # a turn of this conversation
                heads, head_turns = heads[: rollback_to + 1], head_turns[: rollback_to + 1]
            heads.append(result.head_asset_id)
            head_turns.append(len(meta_turns) + 1)
            name = f"t{len(meta_turns) + 1}.png"
            images[name] = _png(studio.render(sid, result.head_asset_id, long_side=job.long_side))
            conversation.append({"from": "human", "value": f"<image>\n{said}", "image": shown})
            shown = name
            conversation.append({"from": "gpt", "value": json.dumps(plan, ensure_ascii=False)})
            meta_turns.append({"type": kind, "said": said, "score": round(float(result.score), 4),
                               "state": studio.head(sid).state, "image": name, "rollback_to": plan.get("rollback_to"),
                               "look": look if kind == "style_shift" else None})
        counts["kept_turns"] = len(meta_turns)
        return {"job": job.__dict__, "conversation": conversation, "turns": meta_turns, "images": images,
                "counts": dict(counts)}
    finally:
        _forget(studio, sid)


def _forget(studio, session_id: str) -> None:
    """Remove a finished session's files from the worker's temporary folder (bounded disk use)."""
    try:
        shutil.rmtree(studio.store.session_dir(session_id), ignore_errors=True)
    except Exception:  # cleaning up is best effort; the folder is removed at exit anyway
        pass


def run_job(job: Job) -> dict:
    """A job that fails is a result (an error record), never the end of the run."""
    try:
        return synthesize_one(job)
    except SynthesisError:
        raise
    except Exception as exc:
        return {"job": job.__dict__, "error": f"{type(exc).__name__}: {exc}"}


# -- the driver ---------------------------------------------------------------------------

def list_photos(paths: Iterable[str | os.PathLike]) -> list[Path]:
    found: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(f for f in p.iterdir() if f.suffix.lower() in PHOTO_SUFFIXES and f.is_file())
        elif p.is_file():
            found.append(p)
        else:
            raise SynthesisError(f"{p}: no such file or folder")
    if not found:
        raise SynthesisError("no photos found (jpg, png, tiff, webp, bmp, dng)")
    return sorted(set(found), key=lambda f: (f.name, str(f)))


def assign_photos(photos: Sequence[Path], n: int, seed: int) -> list[Path]:
    order = list(photos)
    random.Random(f"photos:{seed}").shuffle(order)
    return [order[i % len(order)] for i in range(n)]


def split_of(photo: str, photos: Sequence[str], seed: int, val_fraction: float = 0.2) -> str:
    """train or val, by photo: about ``val_fraction`` of the photos (at least one when there are two) go to val."""
    names = sorted(set(photos))
    if len(names) < 2:
        return "train"
    ranked = sorted(names, key=lambda n: hashlib.sha256(f"{seed}:{n}".encode()).hexdigest())
    n_val = max(1, round(len(names) * val_fraction))
    return "val" if photo in ranked[:n_val] else "train"


def signature(record: dict) -> str:
    words = [m["value"] for m in record["conversations"] if m["from"] == "human"]
    return hashlib.sha256(json.dumps([record["metadata"]["photo"], words]).encode()).hexdigest()


def find_duplicates(records: dict[int, dict]) -> list[int]:
    """Indices of conversations that repeat an earlier one (same photo, same words); the first is kept."""
    seen: set[str] = set()
    dupes = []
    for i in sorted(records):
        sig = signature(records[i])
        if sig in seen:
            dupes.append(i)
        seen.add(sig)
    return dupes


#: Every record's metadata has these keys, and every turn these, with one type each and no nulls (a column
#: that is null in one file and a number in the other fails the cast), so that each file of a dataset
#: (train.json, val.json) infers the same schema in Hugging Face ``datasets`` / Arrow.
COUNT_KEYS = ("kept_turns", "regenerated", "dropped_turns")


def metadata_turn(turn: dict) -> dict:
    """A turn in the one metadata schema: settings as a list of {op, value}, the whole EditState as JSON text
    (sparse dicts would infer a different struct in each file)."""
    state = turn.get("state") or {}
    if isinstance(state, str):
        state = json.loads(state)
    settings = [{"op": str(op), "value": float(v)} for op, v in sorted((state.get("settings") or {}).items())]
    score, rollback = turn.get("score"), turn.get("rollback_to")
    return {"type": str(turn.get("type") or ""), "said": str(turn.get("said") or ""),
            "score": -1.0 if score is None else float(score),           # -1: not scored
            "settings": settings, "state": json.dumps(state, sort_keys=True), "image": str(turn.get("image") or ""),
            "rollback_to": -1 if rollback is None else int(rollback),   # -1: not a rollback
            "look": str(turn.get("look") or "")}


def turn_state(turn: dict) -> dict:
    """A metadata turn's EditState as a dict (JSON text in records, a dict in older ones)."""
    state = turn["state"]
    return json.loads(state) if isinstance(state, str) else state


def record_metadata(*, photo: str, source: str, turns: list[dict], renders: list[str], seed: int = -1,
                    attempt: int = 0, counts: dict | None = None, long_side: int = 0) -> dict:
    """``seed`` -1: not synthesised (a studio session); ``long_side`` 0: not known yet."""
    counts = counts or {}
    meta_turns = [metadata_turn(t) for t in turns]
    return {"photo": photo, "source": source, "seed": int(seed), "attempt": int(attempt),
            "turn_types": [t["type"] for t in meta_turns], "turns": meta_turns, "renders": renders,
            "counts": {k: int(counts.get(k, 0)) for k in COUNT_KEYS}, "long_side": long_side, "split": "train"}


def to_record(result: dict, out: Path, system_prompt: str) -> dict:
    """The ShareGPT record of a worker result; writes its images under ``out/images/<id>/``."""
    job = result["job"]
    conv_id = f"c{job['index']:05d}"
    folder = out / "images" / conv_id
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in result["images"].items():
        _write_atomic(folder / name, data)
    conversations, images = [], []
    for msg in result["conversation"]:
        if msg["from"] == "human":
            images.append(f"images/{conv_id}/{msg['image']}")
        conversations.append({"from": msg["from"], "value": msg["value"]})
    return {
        "id": conv_id,
        "system": system_prompt,
        "conversations": conversations,
        "images": images,
        "metadata": record_metadata(
            photo=Path(job["photo"]).name, source="synthetic", seed=job["seed"], attempt=job["attempt"],
            turns=[{k: v for k, v in t.items() if k != "said"} for t in result["turns"]],
            renders=[f"images/{conv_id}/t0.png"] + [f"images/{conv_id}/{t['image']}" for t in result["turns"]],
            counts=result.get("counts", {})),
    }


def _write_atomic(path: Path, data: bytes | str) -> None:
    write_bytes_atomic(path, data.encode("utf-8") if isinstance(data, str) else data)


def verify_renders(record: dict, out: Path, photo: Path, long_side: int) -> list[str]:
    """Re-render every kept turn's recorded state from the original file with a fresh renderer.

    Returns the images that do not match their saved file exactly (an empty list when all do).
    """
    from PIL import Image

    from pipeline.render import Renderer, SourceImage
    from pipeline.state import EditState

    source = SourceImage.from_array(load_image(photo.read_bytes()).pixels)
    renderer = Renderer(max_cache_bytes=64 * 2**20)
    bad = []
    for t, path in zip(record["metadata"]["turns"], record["metadata"]["renders"][1:]):
        fresh = renderer.render(source, EditState.from_dict(turn_state(t)), long_side)
        saved = np.asarray(Image.open(out / path).convert("RGB"))
        if saved.shape != fresh.shape or not np.array_equal(saved, fresh):
            bad.append(path)
    return bad


@dataclass
class Summary:
    conversations: int
    turns: int
    seconds: float
    stats: dict
    out: Path


def synthesize(photos: Sequence[str | os.PathLike], out: str | os.PathLike, *, conversations: int, turns: int = 5,
               seed: int = 0, workers: int = 1, ray_address: str | None = None, vlm: bool = False,
               long_side: int = 768, progress: bool = True) -> Summary:
    """Write ``conversations`` conversations of up to ``turns`` turns to ``out`` (see the module docstring)."""
    if conversations < 1:
        raise SynthesisError(f"--conversations: expected at least 1, got {conversations}")
    if not 1 <= turns <= 50:
        raise SynthesisError(f"--turns: expected 1..50, got {turns}")
    if not 64 <= long_side <= 4096:
        raise SynthesisError(f"--long-side: expected 64..4096 pixels, got {long_side}")
    photo_files = list_photos(photos)
    out = Path(out)
    (out / "records").mkdir(parents=True, exist_ok=True)
    phrases = load_phrases()
    assigned = assign_photos(photo_files, conversations, seed)
    gates: Counter = Counter()
    started = time.perf_counter()

    def record_path(i: int) -> Path:
        return out / "records" / f"c{i:05d}.json"

    def load_done(i: int) -> dict | None:
        p = record_path(i)
        if not p.exists():
            return None
        rec = json.loads(p.read_text(encoding="utf-8"))
        meta = rec.get("metadata", {})
        same = meta.get("seed") == seed and meta.get("photo") == assigned[i].name and meta.get("long_side") == long_side
        return rec if same else None

    records: dict[int, dict] = {}
    resumed = 0
    for i in range(conversations):
        rec = load_done(i)
        if rec is not None:
            records[i] = rec
            resumed += 1
    bar = _progress(conversations, resumed, progress)

    def finish(job: Job, result: dict) -> None:
        bar.update(1)
        if "error" in result:
            gates["errors"] += 1
            sys.stderr.write(f"conversation c{job.index:05d} ({Path(job.photo).name}): {result['error']}\n")
            return
        for key, n in result.get("counts", {}).items():
            if key != "kept_turns":
                gates[key] += n
        if not result["conversation"]:
            gates["empty_conversations"] += 1
            return
        rec = to_record(result, out, phrases.get("system_prompt", ""))
        rec["metadata"]["long_side"] = long_side
        bad = verify_renders(rec, out, Path(job.photo), long_side)
        if bad:
            gates["render_mismatch"] += len(bad)
            sys.stderr.write(f"conversation {rec['id']}: re-render differs for {', '.join(bad)}; dropped\n")
            return
        gates["verified_renders"] += len(rec["metadata"]["renders"]) - 1
        _write_atomic(record_path(job.index), json.dumps(rec, ensure_ascii=False, indent=1))
        records[job.index] = rec

    attempts = {i: 0 for i in range(conversations)}
    todo = [i for i in range(conversations) if i not in records]
    for round_ in range(MAX_DEDUP_ROUNDS + 1):
        jobs = [Job(i, attempts[i], seed, str(assigned[i]), turns, long_side, vlm) for i in todo]
        if jobs:
            try:
                map_jobs(run_job, jobs, workers=workers, ray_address=ray_address, on_done=finish)
            except ParallelError as exc:
                raise SynthesisError(str(exc)) from None
        todo = []
        for i in find_duplicates(records):
            del records[i]
            record_path(i).unlink(missing_ok=True)
            shutil.rmtree(out / "images" / f"c{i:05d}", ignore_errors=True)
            attempts[i] += 1
            if round_ < MAX_DEDUP_ROUNDS:
                gates["duplicates_regenerated"] += 1
                todo.append(i)
            else:
                gates["duplicates_dropped"] += 1
        if not todo:
            break
        bar.total += len(todo)
    bar.close()
    seconds = time.perf_counter() - started
    final = [records[i] for i in sorted(records)]
    stats = write_dataset(final, out, photo_names=[p.name for p in photo_files], seed=seed, gates=gates,
                          seconds=seconds, resumed=resumed, workers=workers, ray_address=ray_address)
    return Summary(len(final), sum(len(r["metadata"]["turns"]) for r in final), seconds, stats, out)


def write_dataset(records: list[dict], out: Path, *, photo_names: Sequence[str], seed: int, gates: Counter | dict,
                  seconds: float, resumed: int = 0, workers: int = 1, ray_address: str | None = None,
                  prefix: str = "atelier_multiturn") -> dict:
    """The combined file, the train/val split by photo, dataset_info.json and the stats report."""
    for rec in records:
        rec["metadata"]["split"] = split_of(rec["metadata"]["photo"], photo_names, seed)
    files = {prefix: records,
             f"{prefix}_train": [r for r in records if r["metadata"]["split"] == "train"],
             f"{prefix}_val": [r for r in records if r["metadata"]["split"] == "val"]}
    names = {prefix: f"{prefix}.json", f"{prefix}_train": "train.json", f"{prefix}_val": "val.json"}
    info = {}
    for key, recs in files.items():
        _write_atomic(out / names[key], json.dumps(recs, ensure_ascii=False, indent=1))
        info[key] = {"file_name": names[key], "formatting": "sharegpt",
                     "columns": {"messages": "conversations", "images": "images", "system": "system"},
                     "tags": {"role_tag": "from", "content_tag": "value", "user_tag": "human",
                              "assistant_tag": "gpt"}}
    _write_atomic(out / "dataset_info.json", json.dumps(info, indent=2))
    stats = dataset_stats(records, gates=gates, seconds=seconds, resumed=resumed, workers=workers,
                          ray_address=ray_address)
    _write_atomic(out / "stats.json", json.dumps(stats, indent=2))
    _write_atomic(out / "stats.md", stats_markdown(stats))
    return stats


def dataset_stats(records: list[dict], *, gates: Counter | dict, seconds: float, resumed: int = 0,
                  workers: int = 1, ray_address: str | None = None) -> dict:
    types, ops, targets = Counter(), Counter(), Counter()
    human_chars, turns_per = [], []
    for rec in records:
        turns_per.append(len(rec["metadata"]["turns"]))
        types.update(rec["metadata"]["turn_types"])
        for msg in rec["conversations"]:
            if msg["from"] == "human":
                human_chars.append(len(msg["value"].split("\n", 1)[-1]))
            else:
                plan = json.loads(msg["value"])
                for step in plan.get("sub_goals", []):
                    ops[step["op"]] += 1
                    tgt = step.get("target")
                    targets[tgt.get("type", "mask") if isinstance(tgt, dict) else "global"] += 1
    splits = Counter(r["metadata"].get("split", "train") for r in records)
    return {
        "conversations": len(records), "turns": sum(turns_per), "resumed": resumed,
        "splits": dict(splits), "photos": len({r["metadata"]["photo"] for r in records}),
        "turn_types": {t: types.get(t, 0) for t in TURN_TYPES},
        "ops": dict(ops.most_common()), "targets": dict(targets.most_common()),
        "turns_per_conversation": _spread(turns_per), "request_chars": _spread(human_chars),
        "gates": dict(gates), "seconds": round(seconds, 2),
        "conversations_per_minute": round(60.0 * (len(records) - resumed) / seconds, 2) if seconds else None,
        "workers": workers, "engine": f"ray:{ray_address}" if ray_address else ("pool" if workers > 1 else "serial"),
    }


def _spread(values: Sequence[int]) -> dict:
    if not values:
        return {"min": 0, "mean": 0, "max": 0}
    return {"min": min(values), "mean": round(sum(values) / len(values), 2), "max": max(values)}


def stats_markdown(stats: dict) -> str:
    lines = ["# Synthesised conversations", "",
             f"{stats['conversations']} conversations, {stats['turns']} turns, {stats['photos']} photos "
             f"(train {stats['splits'].get('train', 0)}, val {stats['splits'].get('val', 0)}); "
             f"{stats['seconds']} s on {stats['engine']} ({stats['workers']} workers), "
             f"{stats['conversations_per_minute']} conversations per minute.", "",
             "| turn type | turns |", "|---|---|"]
    lines += [f"| {t} | {n} |" for t, n in stats["turn_types"].items()]
    lines += ["", "| op | steps |", "|---|---|"] + [f"| {o} | {n} |" for o, n in stats["ops"].items()]
    lines += ["", "| target | steps |", "|---|---|"] + [f"| {o} | {n} |" for o, n in stats["targets"].items()]
    lines += ["", "| gate | count |", "|---|---|"] + [f"| {g} | {n} |" for g, n in sorted(stats["gates"].items())]
    t, c = stats["turns_per_conversation"], stats["request_chars"]
    lines += ["", f"Turns per conversation: min {t['min']}, mean {t['mean']}, max {t['max']}. "
                  f"Request length (characters): min {c['min']}, mean {c['mean']}, max {c['max']}.", ""]
    return "\n".join(lines)


class _NoBar:
    def __init__(self, total: int):
        self.total = total

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, initial: int, show: bool):
    if not show:
        return _NoBar(total)
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoBar(total)
    return tqdm(total=total, initial=initial, unit="conv", desc="synthesising", file=sys.stderr)


# -- finished studio sessions -------------------------------------------------------------

def export_sessions(out: str | os.PathLike, *, sessions_dir: str | None = None, database_url: str | None = None,
                    long_side: int = 768, seed: int = 0) -> Summary:
    """Studio sessions a person marked shareable, as the same ShareGPT records (others are never read)."""
    from agent.service import Studio

    out = Path(out)
    (out / "records").mkdir(parents=True, exist_ok=True)
    system_prompt = load_phrases().get("system_prompt", "")
    started = time.perf_counter()
    records = []
    with Studio(database_url=database_url, sessions_dir=sessions_dir) as studio:
        for info in studio.list_sessions():
            if not info.shareable:
                continue
            rec = session_record(studio, info, out, long_side, system_prompt)
            if rec is not None:
                _write_atomic(out / "records" / f"{rec['id']}.json", json.dumps(rec, ensure_ascii=False, indent=1))
                records.append(rec)
    seconds = time.perf_counter() - started
    stats = write_dataset(records, out, photo_names=[r["metadata"]["photo"] for r in records], seed=seed,
                          gates={}, seconds=seconds, prefix="atelier_sessions")
    return Summary(len(records), sum(len(r["metadata"]["turns"]) for r in records), seconds, stats, out)


def session_record(studio, info, out: Path, long_side: int, system_prompt: str) -> dict | None:
    """One shareable session as a record: each edit turn that kept a version, with its plan and render."""
    conv_id = f"s-{info.id}"
    folder = out / "images" / conv_id
    folder.mkdir(parents=True, exist_ok=True)
    assets = {a.id: a for a in studio.history(info.id)}
    original = next(a for a in assets.values() if a.turn == 0)
    _write_atomic(folder / "t0.png", _png(studio.render(info.id, original.id, long_side=long_side)))
    conversations, images, turns = [], [], []
    current = "t0.png"
    for t in studio.turn_log(info.id):
        if not t.get("plan") or not t.get("asset_id") or t["asset_id"] not in assets:
            continue
        asset = assets[t["asset_id"]]
        if asset.status not in KEPT:
            continue
        name = f"t{len(turns) + 1}.png"
        _write_atomic(folder / name, _png(studio.render(info.id, asset.id, long_side=long_side)))
        images.append(f"images/{conv_id}/{current}")
        conversations.append({"from": "human", "value": f"<image>\n{t['message']}"})
        plan = plan_view(t["plan"], t.get("reply", ""))
        conversations.append({"from": "gpt", "value": json.dumps(plan, ensure_ascii=False)})
        turns.append({"type": "studio", "score": asset.score, "state": asset.state, "image": name})
        current = name
    if not turns:
        return None
    return {"id": conv_id, "system": system_prompt, "conversations": conversations, "images": images,
            "metadata": record_metadata(photo=info.title, source="studio", turns=turns, long_side=long_side,
                                        renders=[f"images/{conv_id}/t0.png"] +
                                        [f"images/{conv_id}/{t['image']}" for t in turns])}


# -- command line -------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agent.synthesize",
                                 description="Synthesise multi-turn editing conversations as ShareGPT records.")
    ap.add_argument("photos", nargs="*", help="photo files or folders")
    ap.add_argument("--out", required=True, help="output folder (resumable)")
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--turns", type=int, default=5, help="turns per conversation (1..50)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    ap.add_argument("--ray", metavar="ADDRESS", help="run on Ray: local, auto or host:port")
    ap.add_argument("--vlm", action="store_true", help="plan and judge with the ATELIER_VLM_* endpoint")
    ap.add_argument("--long-side", type=int, default=768, help="render size of the saved images")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument("--from-sessions", action="store_true",
                    help="export studio sessions marked shareable instead of synthesising")
    ap.add_argument("--sessions-dir", help="with --from-sessions: the studio's sessions folder")
    args = ap.parse_args(argv)
    try:
        if args.from_sessions:
            summary = export_sessions(args.out, sessions_dir=args.sessions_dir, long_side=args.long_side,
                                      seed=args.seed)
        else:
            if not args.photos:
                raise SynthesisError("name at least one photo or folder (or use --from-sessions)")
            summary = synthesize(args.photos, args.out, conversations=args.conversations, turns=args.turns,
                                 seed=args.seed, workers=max(1, args.workers), ray_address=args.ray, vlm=args.vlm,
                                 long_side=args.long_side, progress=not args.no_progress)
    except SynthesisError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = summary.stats
    print(f"{summary.conversations} conversations, {summary.turns} turns in {summary.seconds:.1f} s "
          f"({s['conversations_per_minute']} conversations per minute, {s['engine']}); "
          f"turn types {s['turn_types']}; gates {s['gates']}; written to {summary.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
