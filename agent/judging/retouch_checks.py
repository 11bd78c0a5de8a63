"""Pixel checks for the healing and portrait ops (issue 11), called by the embedded judge.

Each check compares the previous render with the new one at the judge's size,
on the pixels the op changed (healing and portrait ops change only what they
heal), and says in a line what a person would see:

- dust_removal: fewer dust spots found by the same detector (pipeline.healing.find_dust);
- blemish_removal: the healed spots are lighter / less red than before, and small;
- red_eye: the changed pixels are much less red;
- skin_smoothing: less mid-frequency blotchiness where the skin changed, fine texture kept;
- even_skin_tone: less colour variation (Lab a*/b*) where the skin changed;
- teeth_whitening: less yellow (b*) and not darker where the teeth changed;
- eye_brightening: brighter where the eyes changed;
- remove: the region now matches its surroundings (colour distance to the ring around it shrank).

When nothing changed the op found nothing to act on (no face, no dust, no teeth):
``no_change_needed``, with the reason; the executor's reply already said so.
"""

from __future__ import annotations

import json
from typing import Any

import cv2
import numpy as np

from pipeline import ops
from pipeline.healing import find_dust

#: Ops this module speaks for: the registry's retouch and region ops.
RETOUCH_OPS: frozenset[str] = frozenset(n for n, o in ops.OPS.items() if o.kind in ("retouch", "region"))

_NOTHING = {
    "dust_removal": "no dust spots on smooth areas were found",
    "blemish_removal": "no blemishes that stand out from the skin were found",
    "red_eye": "no red pupils were found",
    "skin_smoothing": "no face was found reliably",
    "even_skin_tone": "no face was found reliably",
    "teeth_whitening": "no visible teeth were found reliably",
    "eye_brightening": "the eyes were not found reliably",
    "remove": "the selection was empty at this size",
}


def _result(goal, key: str, verdict: str, score: float, sentence: str, change: float = 0.0,
            expected: float = 0.0, unit: str = "") -> dict:
    moved = goal.value if isinstance(goal.value, (int, float)) else 0
    return {"op": goal.op, "key": key, "verdict": verdict, "score": float(score), "change": float(change),
            "expected": float(expected), "moved": int(moved), "unit": unit, "where": "", "sentence": sentence}


def _lab(img: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2Lab).astype(np.float32)


def check_retouch_goal(goal, request, key: str) -> dict | None:
    """A SubGoalCheck's fields for a healing / portrait sub-goal, or None for other ops."""
    if goal.op not in RETOUCH_OPS:
        return None
    before = np.asarray(request.previous if request.previous is not None else request.original)
    after = np.asarray(request.current)
    label = ops.get_op(goal.op).label
    if before.shape != after.shape:
        return _result(goal, key, "not_measured", 1.0, f"{label}: not measured (the frame changed).")
    if request.state.value(goal.op, goal.target) == 0:
        return _result(goal, key, "complied", 1.0, f"{label}: off, as asked.")
    diff = np.abs(after.astype(np.int16) - before.astype(np.int16)).max(axis=2)
    changed = diff > 2
    if not changed.any():
        return _result(goal, key, "no_change_needed", 1.0, f"{label}: nothing changed; {_NOTHING[goal.op]}.")
    share = float(changed.mean())
    op = goal.op
    L0, L1 = _lab(before), _lab(after)
    if op == "dust_removal":
        amount = max(1, request.state.value(op))
        n0 = cv2.connectedComponents((find_dust(before, amount) > 0).astype(np.uint8))[0] - 1
        n1 = cv2.connectedComponents((find_dust(after, amount) > 0).astype(np.uint8))[0] - 1
        if n0 == 0:
            return _result(goal, key, "complied", 1.0, f"Dust removal: {share:.2%} of the photo healed.")
        ok = n1 <= 0.25 * n0
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.4,
                       f"Dust spots: {n0} before, {n1} after.", n0 - n1, n0, "spots")
    if op in ("blemish_removal", "remove"):
        if op == "remove":
            mask = _region(request, goal)
            if mask is None or not mask.any():
                return _result(goal, key, "not_measured", 1.0, "Remove: not measured (no region at this size).")
            ring = cv2.dilate(mask.astype(np.uint8), np.ones((15, 15), np.uint8)).astype(bool) & ~mask
            if not ring.any():
                return _result(goal, key, "not_measured", 1.0, "Remove: not measured (the region fills the frame).")
            d0 = float(np.linalg.norm(L0[mask].mean(0) - L0[ring].mean(0)))
            d1 = float(np.linalg.norm(L1[mask].mean(0) - L1[ring].mean(0)))
            ok = d1 <= max(4.0, 0.5 * d0)
            return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.3,
                           f"The removed area {'now matches' if ok else 'still stands out from'} its surroundings "
                           f"(colour distance {d0:.0f} -> {d1:.0f}).", d0 - d1, d0, "dE")
        lighter = float((L1[..., 0] - L0[..., 0])[changed].mean()) - 0.5 * float((L1[..., 1] - L0[..., 1])[changed].mean())
        ok = share < 0.02 and lighter > 0
        return _result(goal, key, "complied" if ok else "wrong_direction", 1.0 if ok else 0.0,
                       f"Blemishes healed: {share:.2%} of the photo, {'lighter and less red' if lighter > 0 else 'darker'}"
                       f" than before.", lighter, 0.0, "L*")
    if op == "red_eye":
        def redness(img):
            f = img[changed].astype(np.float32)
            return float(((f[:, 0] - np.maximum(f[:, 1], f[:, 2])) / (f[:, 0] + 1)).mean())
        r0, r1 = redness(before), redness(after)
        ok = r1 < 0.5 * max(r0, 1e-3) or r1 < 0.1
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.3,
                       f"Pupils' redness {r0:.2f} -> {r1:.2f}.", r0 - r1, r0, "redness")
    if op == "skin_smoothing":
        def blotch(lab):
            L = lab[..., 0]
            return float(np.std((cv2.GaussianBlur(L, (0, 0), 1.0) - cv2.GaussianBlur(L, (0, 0), 4.0))[changed]))
        b0, b1 = blotch(L0), blotch(L1)
        ok = b1 < 0.95 * b0
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.4,
                       f"Skin blotchiness {b0:.1f} -> {b1:.1f} on {share:.1%} of the photo.", b0 - b1, b0, "L*")
    if op == "even_skin_tone":
        s0 = float(L0[..., 1:][changed].std(axis=0).mean())
        s1 = float(L1[..., 1:][changed].std(axis=0).mean())
        ok = s1 < 0.97 * s0
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.4,
                       f"Skin colour variation {s0:.1f} -> {s1:.1f}.", s0 - s1, s0, "a*b*")
    if op == "teeth_whitening":
        db = float((L1[..., 2] - L0[..., 2])[changed].mean())
        dl = float((L1[..., 0] - L0[..., 0])[changed].mean())
        ok = db < 0 and dl >= 0
        return _result(goal, key, "complied" if ok else "wrong_direction", 1.0 if ok else 0.0,
                       f"Teeth {'whiter' if ok else 'not whiter'} (b* {db:+.1f}, L* {dl:+.1f}).", -db, 0.0, "b*")
    dl = float((L1[..., 0] - L0[..., 0])[changed].mean())
    ok = dl > 0
    return _result(goal, key, "complied" if ok else "wrong_direction", 1.0 if ok else 0.0,
                   f"Eyes {'brighter' if ok else 'not brighter'} (L* {dl:+.1f}).", dl, 0.0, "L*")


def _region(request, goal) -> np.ndarray | None:
    """The goal's region (bool) at the judge's size, from the masks the agent passes in."""
    if not goal.target:
        return None
    mask = request.masks.get(json.dumps(goal.target, sort_keys=True))
    if mask is None or mask.shape[:2] != np.asarray(request.current).shape[:2]:
        return None
    return np.asarray(mask) > 0.5


def check_request(request: Any) -> list[dict]:
    """Every healing / portrait sub-goal of ``request`` checked (for tests and the trace)."""
    return [c for c in (check_retouch_goal(g, request, g.op) for g in request.sub_goals) if c is not None]


__all__ = ("RETOUCH_OPS", "check_retouch_goal", "check_request")
