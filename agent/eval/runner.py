"""Drive scenarios through :class:`agent.service.Studio` and check every step from pixels.

One scenario = one session. Each worker (a process of the pool, or a Ray
worker) owns one Studio on its own temporary sessions folder, so runs never
share a database. Results are plain dicts (they cross process boundaries and
go straight into JSON and the trace).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

import agent.eval.checks as checks
from agent.eval.metrics import INSTRUCTION_ACTIONS, drift, latency_excluding_model
from agent.eval.recording import RecordingJudge, RecordingPlanner
from agent.eval.scenarios import Scenario, Step, load_photo
from agent.planning import default_planner
from pipeline.masks import build_mask



class EvalError(RuntimeError):
    """The evaluation could not run (bad option, missing extra, no service)."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: ``vlm`` uses the configured endpoint (ATELIER_VLM_*) instead of
    the embedded planner and judge; renders are measured at ``long_side`` px;
    ``trace_level`` "full" keeps prompts and model replies where the service has them."""

    vlm: bool = False
    long_side: int = 640
    trace_level: str = "basic"


@dataclass
class ScenarioRun:
    """Everything measured for one scenario: one record per step, plus the scenario's own."""

    scenario: dict[str, Any]
    turns: list[dict[str, Any]] = field(default_factory=list)


# -- the Studio a worker uses ---------------------------------------------------

@dataclass
class Harness:
    """One worker's Studio with its recording planner and judge, and the agent's limits."""

    studio: Any
    planner: RecordingPlanner
    judge: RecordingJudge
    limits: dict[str, Any]
    uses_model: bool


def make_harness(options: RunOptions, root: Path) -> Harness:
    """A Studio on its own SQLite file and sessions folder under ``root``."""
    try:
        from agent.config import load_config
        from agent.service import Studio
    except ImportError as exc:  # the service is part of the agent core
        raise EvalError(f"agent.service is not available ({exc})") from None
    if options.vlm:
        if not os.environ.get("ATELIER_VLM_BASE_URL"):
            raise EvalError("--vlm needs ATELIER_VLM_BASE_URL (and ATELIER_VLM_MODEL) to be set")
        from agent.judging import default_judge

        planner, judge = default_planner(), default_judge()
    else:
        # Pin the embedded pair: the defaults would switch to a VLM when ATELIER_VLM_* is set.
        try:
            from agent.judging.embedded import EmbeddedJudge
            from agent.planning.embedded import EmbeddedPlanner
        except ImportError as exc:
            raise EvalError(f"the embedded planner or judge is not available ({exc})") from None
        planner, judge = EmbeddedPlanner(), EmbeddedJudge()
    cfg = load_config()
    rec_planner = RecordingPlanner(planner, cfg.chars_per_token)
    rec_judge = RecordingJudge(judge)
    root.mkdir(parents=True, exist_ok=True)
    studio = Studio(database_url=f"sqlite:///{root / 'atelier.db'}", sessions_dir=root,
                    planner=rec_planner, judge=rec_judge, config=cfg)
    limits = {"min_pass_score": cfg.min_pass_score, "budget_tokens": cfg.budget_tokens}
    return Harness(studio, rec_planner, rec_judge, limits, uses_model=options.vlm)


def agent_limits() -> dict[str, Any]:
    """The thresholds the metrics compare with, from configs/agent_config.yaml."""
    from agent.config import load_config

    cfg = load_config()
    return {"min_pass_score": cfg.min_pass_score, "budget_tokens": cfg.budget_tokens}


# -- one step -------------------------------------------------------------------

def _act(studio, session_id: str, step: Step, heads: dict[int, str]):
    if step.action == "say":
        return studio.send_message(session_id, step.text)
    if step.action == "approve":
        return studio.review(session_id, "approve")
    if step.action == "modify":
        return studio.review(session_id, "modify", values=dict(step.values or {}))
    if step.action == "replan":
        return studio.review(session_id, "replan", feedback=step.text)
    return studio.review(session_id, "rollback", target=heads[step.rollback_to])


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _turn_record(result: Any, plans: list[dict], judgements: list[dict], uses_model: bool,
                 level: str) -> dict[str, Any]:
    """What the recording planner and judge saw during one step, plus the service's answer."""
    tokens = [p["context_tokens"] for p in plans if "context_tokens" in p]
    model_s = sum(c.get("seconds", 0.0) for c in plans + judgements) if uses_model else None
    out: dict[str, Any] = {
        "prompt_tokens": max(tokens) if tokens else None,
        "planner_calls": len(plans), "judge_calls": len(judgements),
        "plans": [p.get("plan") for p in plans],
        "validation_errors": [p["error"] for p in plans if p.get("error")]
        + [j["error"] for j in judgements if j.get("error")],
        "warnings": list(_get(result, "warnings") or []),
        "timings": {"planner_s": sum(p.get("seconds", 0.0) for p in plans),
                    "judge_s": sum(j.get("seconds", 0.0) for j in judgements)},
        "model_s": model_s,
        "judge_scores": [(_get(j.get("assessment"), "score")) for j in judgements],
        "diagnoses": [d for j in judgements for d in (_get(j.get("assessment"), "diagnoses") or [])],
    }
    if level == "full":
        out["prompts"] = [{"message": p.get("message"), "feedback": p.get("feedback"),
                           "diagnoses": p.get("diagnoses"), "context": p.get("context")} for p in plans]
        out["replies"] = [{"plan_reply": _get(p.get("plan"), "reply"), "raw_reply": p.get("raw_reply")}
                          for p in plans]
        out["judgements"] = [j.get("assessment") for j in judgements]
    return out


def shown_version(result: Any, head_id: str) -> str:
    """The version the person looks at after a step: the one waiting for review, else the head."""
    if _get(result, "status") == "awaiting_review" and _get(result, "asset_id"):
        return _get(result, "asset_id")
    return head_id


#: Words of an honest refusal ("I can't add a rainbow"): an unsupported request
#: must say it cannot, not claim an edit it did not make.
REFUSAL_MARKERS = ("can't", "cannot", "can not", "not able", "unable", "don't know how", "do not know how",
                   "not supported", "isn't something i can", "is not something i can", "no tool",
                   "not possible", "beyond what", "outside what i can", "not yet", "only adjust",
                   "i adjust", "i can only", "won't be able", "can’t")

#: Words of a reply that did not understand: a greeting or a question answered with
#: these was not understood, even though nothing changed.
NOT_UNDERSTOOD_MARKERS = ("don't know how", "do not know how", "didn't understand", "did not understand",
                          "not sure what you mean", "don’t know how")

#: A magnitude pair ("slightly" then "much"): the stronger word moves at least this many times more.
STRONGER_FACTOR = 1.25


def not_understood(reply: str | None) -> bool:
    """True when a reply says the message was not understood."""
    text = (reply or "").lower()
    return any(m in text for m in NOT_UNDERSTOOD_MARKERS)


def is_refusal(reply: str | None) -> bool:
    """True when a reply says plainly that the request cannot be done."""
    text = (reply or "").lower()
    return any(m in text for m in REFUSAL_MARKERS)


def asks_back(reply: str | None, quick_replies: Sequence[str] = ()) -> bool:
    """True when a reply asks the person something (a question mark, or answers offered)."""
    return "?" in (reply or "") or bool(quick_replies)


def check_step(step: Step, *, before: np.ndarray, after: np.ndarray, original: np.ndarray,
               renders: dict[int, np.ndarray], region: np.ndarray | None,
               cache: checks.StatsCache, prior: dict[int, list[dict]] | None = None,
               same_head: bool | None = None, reply: str | None = None,
               quick_replies: Sequence[str] = ()) -> dict[str, Any]:
    """Judge one step from pixels: conditions, preservation, byte-identity. Pure except the cache.

    ``prior``: earlier steps' condition results (for ``stronger_than``); ``same_head``:
    whether the head version stayed the same (for ``no_new_version``, ``refusal`` and
    ``asks``); ``reply``: what the agent said (an honest refusal must say it cannot; a
    question back must ask); ``quick_replies``: the answers it offered with the reply.
    """
    exp = step.expect

    def base_of(against) -> np.ndarray:
        if isinstance(against, str):
            return {"previous": before, "original": original}[against]
        return renders[against]

    results = []
    for cond in exp.conditions:
        base = base_of(cond.against if cond.against is not None else exp.against)
        if cond.region == "all":
            sb, sa = cache.stats(base), cache.stats(after)
        elif base.shape[:2] != region.shape[:2] or after.shape[:2] != region.shape[:2]:
            # the turn changed the frame (a crop, a turn): the place drawn on the photo is no longer there,
            # so the step fails as written rather than being measured somewhere else
            results.append(checks.ConditionResult(cond.describe() + " (the frame changed: place not comparable)",
                                                  cond.stat, cond.region, cond.direction, 0.0, 0.0, 0.0,
                                                  False).to_dict())
            continue
        else:
            m = region if cond.region == "inside" else checks.outside(region)
            sb, sa = cache.stats(base, cond.region, m), cache.stats(after, cond.region, m)
        results.append(checks.check_condition(cond, sb, sa).to_dict())
    stronger = None
    if exp.stronger_than is not None:
        earlier = {(c["stat"], c["region"]): c["change"] for c in (prior or {}).get(exp.stronger_than, ())}
        pairs = [(abs(r["change"]), abs(earlier[(r["stat"], r["region"])])) for r in results
                 if r["direction"] != "within" and (r["stat"], r["region"]) in earlier]
        stronger = bool(pairs) and all(now >= STRONGER_FACTOR * then for now, then in pairs)
    # Preservation is a property of local edits: measured where the script promises it.
    pres = None
    if exp.preserve_outside is not None and region is not None:
        same_frame = before.shape[:2] == after.shape[:2] == region.shape[:2]
        pres = checks.preservation_ssim(before, after, region) if same_frame else 0.0   # a new frame kept nothing
    identical = None
    if exp.same_as_step is not None:
        identical = checks.pixels_identical(after, renders[exp.same_as_step])
        if step.action == "say" and same_head:
            # Undo in words must act: staying put is not going back, even when the
            # pixels happen to match (the turn before changed nothing).
            identical = False
    unchanged = None
    if exp.no_new_version or exp.refusal or exp.asks:
        unchanged = bool(same_head) and checks.pixels_identical(after, before) and bool((reply or "").strip())
        if exp.no_new_version and not_understood(reply):
            unchanged = False   # "hi" answered with "I don't know how to do that" is not a chat reply
    refused = is_refusal(reply) if exp.refusal else None
    asked = asks_back(reply, quick_replies) if exp.asks else None
    verdict = None
    if not exp.is_empty:
        verdict = (all(r["passed"] for r in results)
                   and (exp.preserve_outside is None or (pres is not None and pres >= exp.preserve_outside))
                   and identical is not False and stronger is not False and unchanged is not False
                   and refused is not False and asked is not False)
    return {"checks": results, "preservation_ssim": pres, "preserve_min": exp.preserve_outside,
            "rollback_exact": identical, "stronger": stronger, "unchanged": unchanged, "refused": refused,
            "asked": asked, "pixel_pass": verdict}


def _decision(studio, text: str) -> str | None:
    """What ``text``, said while a version waits for review, decides about it itself: "approve" (an approval in
    words), "reject" (a rejection in words, or an undo) or None. The Studio then acts on the version under review,
    and the turn is measured on what it did; anything else moves on, which approves it."""
    route = studio.router.route(text, generative=False)
    if studio.router.says_reject(text) or (route.kind == "command" and route.name == "undo"):
        return "reject"
    return studio.router.review_decision(text, route)


def _region_mask(spec: dict, original: np.ndarray) -> np.ndarray:
    return np.clip(build_mask(spec, original, original.shape[:2]), 0.0, 1.0).astype(np.float32)


# -- one scenario -----------------------------------------------------------------

def run_scenario(harness: Harness, scenario: Scenario, options: RunOptions) -> ScenarioRun:
    """Play ``scenario`` in a fresh session of the harness's Studio; measure every step."""
    from agent.service import AtelierError

    studio, limits = harness.studio, harness.limits

    side = options.long_side
    photo = load_photo(scenario.image, scenario.upscale)
    info = studio.start_session(photo, review_mode=scenario.review_mode, filename=f"{scenario.image}.png")
    sid = info.id
    original = studio.render(sid, info.head_asset_id, long_side=side)
    renders: dict[int, np.ndarray] = {0: original}
    heads: dict[int, str] = {0: info.head_asset_id}
    masks: dict[str, np.ndarray] = {}
    cache = checks.StatsCache()
    prior: dict[int, list[dict]] = {}
    current = original
    run = ScenarioRun(scenario={"scenario": scenario.id, "suite": scenario.suite, "image": scenario.image,
                                "split": scenario.split, "steps": len(scenario.steps), "session_id": sid})
    for step in scenario.steps:
        implicit_approve = False
        pending = studio.pending_review(sid) if step.action == "say" else None
        decision = _decision(studio, step.text) if pending is not None else None
        if pending is not None and decision is None:
            # The person saw the pending version and moved on: that is an approval ("undo", "dont apply that
            # one" turn it down and "looks good, keep it" approves it: the Studio acts on those itself).
            studio.review(sid, "approve")
            implicit_approve = True
        before = current
        # (what the person was looking at: the version under review, when it is turned down)
        # (an approval in words moves the head from the version before it to the one under review)
        head_before = pending.asset_id if pending is not None and decision == "reject" else studio.head(sid).id
        harness.planner.log.take()
        harness.judge.log.take()
        t0 = time.perf_counter()
        error = None
        result = None
        try:
            result = _act(studio, sid, step, heads)
        except AtelierError as exc:
            error = f"{type(exc).__name__}: {exc}"
        wall = time.perf_counter() - t0
        record = _turn_record(result, harness.planner.log.take(), harness.judge.log.take(),
                              harness.uses_model, options.trace_level)
        head_id = studio.head(sid).id
        shown = shown_version(result, head_id)
        after = studio.render(sid, shown, long_side=side)
        renders[step.index] = after
        heads[step.index] = shown
        region = None
        if step.region is not None:
            key = json.dumps(step.region, sort_keys=True)
            if key not in masks:
                masks[key] = _region_mask(step.region, original)
            region = masks[key]
        verdicts = check_step(step, before=before, after=after, original=original,
                              renders=renders, region=region, cache=cache, prior=prior,
                              same_head=(shown == head_before), reply=_get(result, "reply"),
                              quick_replies=tuple(_get(result, "quick_replies") or ()))
        prior[step.index] = verdicts["checks"]
        if error and verdicts["pixel_pass"] is not None:
            verdicts["pixel_pass"] = False
        score = _get(result, "score")
        turn = {
            "scenario": scenario.id, "suite": scenario.suite, "image": scenario.image,
            "split": scenario.split, "kind": step.kind, "step": step.index, "action": step.action, "instruction": step.describe(),
            "tags": list(step.tags + scenario.tags), "local": step.region is not None,
            "implicit_approve": implicit_approve,
            "status": _get(result, "status"), "reply": _get(result, "reply"),
            # what the agent took it for (edit, question, chat, clarify, command...): shown for every split
            "answered_as": _get(result, "kind"),
            "details": _get(result, "details"),
            "sub_goals": [dict(g) if isinstance(g, dict) else g for g in (_get(result, "sub_goals") or [])],
            "score": score,
            "judge_pass": (score >= limits["min_pass_score"]) if isinstance(score, (int, float))
            and step.action in INSTRUCTION_ACTIONS else None,
            "assessment": _get(result, "assessment"),
            "budget_tokens": limits.get("budget_tokens"),
            "wall_s": wall, "latency_s": latency_excluding_model(wall, record["model_s"]),
            "error": error, "head_asset_id": head_id, "shown_asset_id": shown,
            # the pixels the person sees, for byte-identity checks across code changes
            "render_sha1": hashlib.sha1(np.ascontiguousarray(after).tobytes()).hexdigest(),
            **verdicts,
            **record,
        }
        run.turns.append(turn)
        current = after
    run.scenario["drift"] = scenario_drift(scenario, original, current, cache)
    return run


def scenario_drift(scenario: Scenario, original: np.ndarray, final: np.ndarray,
                   cache: checks.StatsCache) -> dict[str, float]:
    """|final - original| of whole-image statistics the script holds ("within") at
    some step and never asks to move (up/down, anywhere) at any step."""
    held, moved = [], set()
    for step in scenario.steps:
        for c in step.expect.conditions:
            if c.direction != "within":
                moved.add(c.stat)
            elif c.region == "all" and c.stat not in held:
                held.append(c.stat)
    names = [s for s in held if s not in moved]
    if not names:
        return {}
    return drift(cache.stats(original), cache.stats(final), names)


# -- running many: in process, a process pool, or Ray ------------------------------

_WORKER: dict[str, Any] = {}   # per worker process only: its harness (one Studio per process)


def _worker_harness(options: RunOptions) -> Harness:
    """The harness of this worker process (created on first use, its folder removed at exit)."""
    if _WORKER.get("options") != options:
        root = Path(tempfile.mkdtemp(prefix="atelier-eval-"))
        atexit.register(shutil.rmtree, root, True)
        _WORKER.update(options=options, harness=make_harness(options, root))
    return _WORKER["harness"]


def run_one(scenario: Scenario, options: RunOptions) -> ScenarioRun:
    """Run one scenario in this process's worker Studio; a crash becomes an error record."""
    harness = _worker_harness(options)
    try:
        return run_scenario(harness, scenario, options)
    except EvalError:
        raise
    except Exception as exc:  # a scenario that crashes is a result, not the end of the run
        return ScenarioRun(scenario={"scenario": scenario.id, "suite": scenario.suite, "image": scenario.image,
                                     "steps": len(scenario.steps),
                                     "error": f"{type(exc).__name__}: {exc}"})


def _cost(s: Scenario) -> int:
    return len(s.steps) * (s.upscale ** 2)


def _run_item(item: tuple[Scenario, RunOptions]) -> ScenarioRun:
    return run_one(*item)


def run_suite(scenarios: Sequence[Scenario], options: RunOptions, *, workers: int = 1,
              ray_address: str | None = None,
              on_done: Callable[[ScenarioRun], None] | None = None) -> list[ScenarioRun]:
    """Run every scenario; results come back in the scenarios' order.

    ``workers`` 1 runs in this process; more uses a process pool (each worker
    its own Studio); ``ray_address`` ("local", "auto" or host:port) runs them as
    Ray tasks instead (see agent.runs.parallel).
    """
    from agent.runs.parallel import ParallelError, map_jobs

    order = sorted(range(len(scenarios)), key=lambda i: -_cost(scenarios[i]))  # longest first
    try:
        return map_jobs(_run_item, [(s, options) for s in scenarios], workers=workers, ray_address=ray_address,
                        order=order, on_done=(lambda _item, run: on_done(run)) if on_done else None)
    except ParallelError as exc:
        raise EvalError(f"--ray: {exc}") from None


def flatten(runs: Iterable[ScenarioRun]) -> tuple[list[dict], list[dict]]:
    """(all turn records, all scenario records)."""
    runs = list(runs)
    return [t for r in runs for t in r.turns], [r.scenario for r in runs]
