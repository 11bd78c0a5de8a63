"""Judge discrimination: does the judge's score separate edits that do what was asked
from edits that do not?

Two sources of (judge score, pixel verdict) pairs:

- the conversation turns of a run (the score the agent gave the version shown,
  the verdict of the scenario's pixel checks);
- a labelled set built here: for each request, the right edit and deliberately
  wrong ones — the opposite direction, a tiny amount, an extreme amount, and
  (for local requests) the same change made everywhere. Follow-ups are in it
  ("bit more", and "less" ones whose extreme variant goes past the version
  before the last change), and complaints read through the planner profile. Each is rendered by the
  real renderer, scored by the judge as the agent would call it, and its verdict
  comes from pixel checks (:mod:`agent.eval.checks`), never from the label's name.

The figure is the ROC AUC (Mann-Whitney): the chance that a passing edit
scores above a failing one (ties count half). 1.0 separates perfectly, 0.5 is
chance. The labelled set uses only the demo photos (the tuning side), never
the held-out photos.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

import agent.eval.checks as checks
from agent.eval.scenarios import Condition, load_photo
from agent.planning.base import SubGoal
from pipeline.masks import build_mask, normalize_mask_spec
from pipeline.state import EditState

#: A request of the labelled set: the message, the right ops (op -> value), where
#: (a mask spec for local requests, also the check region), and the pixel checks:
#: (stat, direction, at least, at most) inside the region (or the whole photo).
@dataclass(frozen=True)
class LabelledRequest:
    photo: str
    message: str
    ops: Mapping[str, int]
    expect: Sequence[tuple[str, str, float, float | None]]
    target: Mapping[str, Any] | None = None
    history: Sequence[str] = ()
    previous_ops: Mapping[str, int] = field(default_factory=dict)
    #: checks against the version before the last change (a "less" follow-up must not go past it)
    since: Sequence[tuple[str, str, float, float | None]] = ()


REQUESTS: tuple[LabelledRequest, ...] = (
    LabelledRequest("astronaut", "make it warmer", {"temperature": 25}, [("b_mean", "up", 1.0, 9.0)]),
    LabelledRequest("coffee", "a bit cooler please", {"temperature": -15}, [("b_mean", "down", 0.5, 6.0)]),
    LabelledRequest("chelsea", "brighter", {"exposure": 20}, [("L_mean", "up", 1.5, 12.0)]),
    LabelledRequest("rocket", "it's too bright, darken it", {"exposure": -20}, [("L_mean", "down", 1.5, 12.0)]),
    LabelledRequest("coffee", "more contrast", {"contrast": 30}, [("rms_contrast", "up", 0.5, 8.0)]),
    LabelledRequest("astronaut", "it looks flat", {"contrast": 25}, [("rms_contrast", "up", 0.4, 8.0)]),
    LabelledRequest("chelsea", "it feels lifeless", {"vibrance": 35}, [("chroma_mean", "up", 1.0, 12.0)]),
    LabelledRequest("coffee", "less saturated", {"saturation": -30}, [("chroma_mean", "down", 1.0, 16.0)]),
    LabelledRequest("chelsea", "sharpen it", {"sharpen": 50}, [("detail", "up", 0.3, 12.0)]),
    LabelledRequest("astronaut", "give it a soft dreamy look", {"clarity": -40},
                    [("local_contrast", "down", 0.1, 6.0)]),
    LabelledRequest("rocket", "make it cooler", {"temperature": -25}, [("b_mean", "down", 1.0, 9.0)]),
    LabelledRequest("astronaut", "bit more", {"temperature": 40}, [("b_mean", "up", 0.4, 6.0)],
                    history=("make it warmer",), previous_ops={"temperature": 25}),
    # a "less" follow-up: back toward the version before the last change, never past it
    LabelledRequest("coffee", "too much, halve it", {"temperature": 20}, [("b_mean", "down", 0.5, 8.0)],
                    history=("make it warmer",), previous_ops={"temperature": 40},
                    since=[("b_mean", "up", 0.3, None)]),
    LabelledRequest("chelsea", "way too much, pull it back", {"contrast": 20}, [("rms_contrast", "down", 0.2, None)],
                    history=("much more contrast",), previous_ops={"contrast": 60},
                    since=[("rms_contrast", "up", 0.2, None)]),
    # complaints the planner profile reads (engine.yaml complaints): the fix is the right edit
    LabelledRequest("rocket", "it looks a bit dingy", {"exposure": 20}, [("L_mean", "up", 1.5, 12.0)]),
    LabelledRequest("astronaut", "it has a green cast", {"tint": 25}, [("a_mean", "up", 0.5, 6.0)]),
    LabelledRequest("rocket", "darken the sky", {"exposure": -30}, [("L_mean", "down", 1.5, 15.0)],
                    target={"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.55]}),
    LabelledRequest("coffee", "brighten the cup", {"exposure": 30}, [("L_mean", "up", 1.5, 15.0)],
                    target={"type": "radial", "center": [0.5, 0.28], "radius": [0.2, 0.25], "softness": 0.3}),
    LabelledRequest("chelsea", "warm up the left side", {"temperature": 40}, [("b_mean", "up", 1.0, 12.0)],
                    target={"type": "gradient", "start": [0.0, 0.5], "end": [0.55, 0.5]}),
)

#: A small subset for ``--smoke`` (one global, one complaint, one follow-up, one local request).
SMOKE_REQUESTS: tuple[LabelledRequest, ...] = (REQUESTS[0], REQUESTS[5], REQUESTS[11], REQUESTS[12], REQUESTS[16])

#: How each variant changes the right ops: a factor on every value.
VARIANTS = {"right": 1.0, "opposite": -1.0, "tiny": 0.06, "extreme": 4.0}
#: Outside a local target, a change this big (same statistic) fails the pixel check.
OUTSIDE_WITHIN = 1.5


def auc(pairs: Iterable[tuple[float | None, bool | None]]) -> dict[str, Any]:
    """ROC AUC of scores against boolean verdicts (Mann-Whitney U / (n_pos * n_neg)); None if one class is empty."""
    pairs = list(pairs)
    pos = [float(s) for s, v in pairs if s is not None and v is True]
    neg = [float(s) for s, v in pairs if s is not None and v is False]
    if not pos or not neg:
        return {"auc": None, "positives": len(pos), "negatives": len(neg)}
    neg_sorted = np.sort(np.asarray(neg))
    wins = 0.0
    for s in pos:
        below = np.searchsorted(neg_sorted, s, side="left")
        ties = np.searchsorted(neg_sorted, s, side="right") - below
        wins += below + 0.5 * ties
    return {"auc": wins / (len(pos) * len(neg)), "positives": len(pos), "negatives": len(neg)}


def _scaled(ops: Mapping[str, int], previous: Mapping[str, int], factor: float) -> dict[str, int]:
    """The variant's absolute values: the right move from ``previous``, times ``factor``, in range."""
    return {k: int(max(-100, min(100, round(previous.get(k, 0) + (v - previous.get(k, 0)) * factor))))
            for k, v in ops.items()}


def labelled_cases(long_side: int = 512, judge=None,
                   requests: Sequence[LabelledRequest] = REQUESTS) -> list[dict[str, Any]]:
    """Render, judge and pixel-check every variant of every request (one record each)."""
    import cv2

    from agent.judging.base import JudgeRequest
    from agent.judging.embedded import EmbeddedJudge
    from pipeline.render import render

    judge = judge or EmbeddedJudge()
    out: list[dict[str, Any]] = []
    photos: dict[str, np.ndarray] = {}
    for req in requests:
        if req.photo not in photos:
            img = load_photo(req.photo)
            h, w = img.shape[:2]
            s = long_side / max(h, w)
            if s < 1:
                img = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)
            photos[req.photo] = np.ascontiguousarray(img)
        original = photos[req.photo]
        spec = normalize_mask_spec(req.target) if req.target else None
        region = np.clip(build_mask(spec, original, original.shape[:2]), 0, 1) if spec else None
        prev_state = EditState()
        for op, v in req.previous_ops.items():
            prev_state = prev_state.with_value(op, v)
        previous = render(original, prev_state)
        before_last = render(original, EditState()) if req.previous_ops else None
        variants = dict(VARIANTS)
        if spec is not None:
            variants["everywhere"] = 1.0
        for name, factor in variants.items():
            values = _scaled(req.ops, req.previous_ops, factor)
            local = spec is not None and name != "everywhere"
            where = spec if local else None
            state = prev_state
            goals = []
            for op, v in values.items():
                delta = v - prev_state.value(op, where)
                state = state.with_value(op, v, mask=where)
                goals.append(SubGoal(op, delta, target=where))
            current = render(original, state)
            masks = {json.dumps(spec, sort_keys=True): region} if local else {}
            a = judge.assess(JudgeRequest(
                original=original, current=current, sub_goals=goals, state=state, previous_state=prev_state,
                previous=previous, masks=masks, message=req.message, history=list(req.history),
                before_last=before_last, before_last_state=EditState() if before_last is not None else None))
            verdict = _pixel_verdict(req, previous, current, region, before_last)
            out.append({"photo": req.photo, "message": req.message, "variant": name, "score": float(a.score),
                        "pixel_pass": verdict, "assessment": a.assessment,
                        "reading": [(c["prop"], c["change"], c["expected"], c["verdict"])
                                    for c in (a.reading or {}).get("checks", [])]})
    return out


def _pixel_verdict(req: LabelledRequest, before: np.ndarray, after: np.ndarray,
                   region: np.ndarray | None, before_last: np.ndarray | None = None) -> bool:
    cache = checks.StatsCache()
    results = []
    for stat, direction, amount, at_most in req.since if before_last is not None else ():
        cond = Condition(stat, direction, amount, at_most, "all")
        results.append(checks.check_condition(cond, cache.stats(before_last), cache.stats(after)).passed)
    for stat, direction, amount, at_most in req.expect:
        cond = Condition(stat, direction, amount, at_most, "inside" if region is not None else "all")
        if region is None:
            sb, sa = cache.stats(before), cache.stats(after)
        else:
            sb, sa = cache.stats(before, "inside", region), cache.stats(after, "inside", region)
        results.append(checks.check_condition(cond, sb, sa).passed)
        if region is not None:
            out = checks.outside(region)
            hold = Condition(stat, "within", OUTSIDE_WITHIN, None, "outside")
            results.append(checks.check_condition(hold, cache.stats(before, "outside", out),
                                                  cache.stats(after, "outside", out)).passed)
    return all(results)


def discrimination(turns: Sequence[Mapping[str, Any]], labelled: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """AUC over conversation turns (scored and checked), the labelled set, and both together."""
    conv = [(t.get("score"), t.get("pixel_pass")) for t in turns
            if t.get("suite") == "conversation" and isinstance(t.get("score"), (int, float))
            and t.get("pixel_pass") is not None]
    lab = [(c["score"], c["pixel_pass"]) for c in labelled]
    by_variant: dict[str, Any] = {}
    for name in sorted({c["variant"] for c in labelled}):
        scores = [c["score"] for c in labelled if c["variant"] == name]
        by_variant[name] = {"n": len(scores), "mean_score": float(np.mean(scores)),
                            "pixel_pass": sum(1 for c in labelled if c["variant"] == name and c["pixel_pass"])}
    return {"all": auc(conv + lab), "conversation_turns": auc(conv), "labelled": auc(lab),
            "by_variant": by_variant, "target": ">= 0.9"}


__all__ = ["REQUESTS", "SMOKE_REQUESTS", "VARIANTS", "auc", "discrimination", "labelled_cases"]
