"""Pixel checks for the geometry and finishing ops (issue 11), called by the embedded judge.

The agent renders the original and the previous version through the new
frame (crop, rotation), so ``before`` and ``after`` have the same size and the
checks compare like with like. What each op must show:

- crop_aspect: the output's width:height is the preset's, to a pixel;
- auto_straighten: no straight-line family left tilted by more than half a degree
  (or, when the photo has no long straight lines, nothing to level);
- straighten (by hand): no empty corners (the turned frame was cropped to valid pixels);
- vignette: corners darker (lighter for a negative value) and the centre unchanged;
- grain: more fine-scale variance, same mean brightness;
- noise reduction: less fine-scale luminance / colour variance;
- tone_curve: the named curve's signature (S: wider tonal spread; matte/film: lifted blacks;
  lighten/darken midtones: median);
- colour grading: shadows / midtones / highlights moved towards the grade hue.

Crop insets, zoom, rotate and flip change only the frame, which the agent
applies exactly; they are reported as not measured, with the output size.
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np

from pipeline import measure, ops
from pipeline.finishing import CURVE_NAMES
from pipeline.geometry import LEVEL_TOLERANCE, line_tilt

#: Ops this module speaks for (every geometry and finishing op of the registry).
TOOLBOX_OPS: frozenset[str] = frozenset(n for n, o in ops.OPS.items() if o.stage in ("geometry", "finishing"))


def _luma(img: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2GRAY).astype(np.float32)


def _fine(y: np.ndarray) -> float:
    """Fine-scale spread: the std of the image minus a 1.5 px blur."""
    return float((y - cv2.GaussianBlur(y, (0, 0), 1.5)).std())


def _result(goal, key: str, verdict: str, score: float, sentence: str, change: float = 0.0,
            expected: float = 0.0, unit: str = "") -> dict:
    moved = goal.value if isinstance(goal.value, (int, float)) else 0
    return {"op": goal.op, "key": key, "verdict": verdict, "score": float(score), "change": float(change),
            "expected": float(expected), "moved": int(moved) if float(moved).is_integer() else 0, "unit": unit,
            "where": "", "sentence": sentence}


def check_toolbox_goal(goal, request, key: str) -> dict | None:
    """A SubGoalCheck's fields for a geometry / finishing sub-goal, or None for other ops."""
    if goal.op not in TOOLBOX_OPS:
        return None
    before = np.asarray(request.previous if request.previous is not None else request.original)
    after = np.asarray(request.current)
    state = request.state
    op = goal.op
    h, w = after.shape[:2]
    if op == "crop_aspect":
        choice = int(state.value("crop_aspect"))
        if not choice:
            return _result(goal, key, "complied", 1.0, f"Back to the photo's own aspect ({w}x{h}).")
        label = ops.OPS["crop_aspect"].choices[choice]
        a, b = (float(v) for v in label.split(":"))
        off = abs(w / h - a / b) * min(w, h)  # in pixels of the short side
        ok = off <= 1.5
        return _result(goal, key, "complied" if ok else "wrong_direction", 1.0 if ok else 0.0,
                       f"Cropped to {label} ({w}x{h})." if ok else
                       f"The frame is {w}x{h}, not {label}.", change=w / h, expected=a / b, unit="aspect")
    if op in ("straighten", "auto_straighten"):
        corners = [after[:3, :3], after[:3, -3:], after[-3:, :3], after[-3:, -3:]]
        empty = sum(1 for c in corners if c.max() <= 2) >= 2 and before[:3, :3].max() > 2
        if empty:
            return _result(goal, key, "wrong_direction", 0.0, "The turned frame shows empty corners.")
        if op == "straighten" or not state.value("auto_straighten"):
            return _result(goal, key, "complied", 1.0, f"Turned by {state.value('straighten'):g} degrees, "
                                                       f"cropped to valid pixels ({w}x{h}).")
        # the original is seen through the new (turned) frame, so the lines of the result
        # say both whether there was anything to level and whether it is level now
        reading = line_tilt(after)
        if reading is None:
            return _result(goal, key, "no_change_needed", 1.0,
                           "No long straight line (horizon or verticals) to level; the frame is as it was.")
        tilt = 0.0 if abs(reading) < LEVEL_TOLERANCE else reading
        level = abs(tilt) <= 0.5
        return _result(goal, key, "complied" if level else "too_weak", 1.0 if level else 0.3,
                       f"Level: the strongest lines are within {abs(tilt):.1f} degrees of straight." if level else
                       f"Still tilted by {tilt:+.1f} degrees.", change=tilt, unit="degrees")
    if op == "vignette":
        v = float(state.value("vignette"))
        yb, ya = _luma(before), _luma(after)
        ch, cw = slice(h // 2 - h // 10, h // 2 + h // 10 + 1), slice(w // 2 - w // 10, w // 2 + w // 10 + 1)
        centre = float(np.abs(ya[ch, cw] - yb[ch, cw]).mean())
        k = max(2, min(h, w) // 10)
        corner = lambda y: float(np.mean([y[:k, :k].mean(), y[:k, -k:].mean(), y[-k:, :k].mean(), y[-k:, -k:].mean()]))
        cb, ca = corner(yb), corner(ya)
        change = (ca - cb) / max(cb, 1.0)
        want = -1 if v > 0 else 1
        if not v:
            return _result(goal, key, "complied", 1.0, "Vignette removed.")
        if change * want <= 0.02:
            return _result(goal, key, "too_weak", 0.0, "The corners did not change.", change=change, unit="corner share")
        if centre > 1.5:
            return _result(goal, key, "too_weak", 0.5, f"The corners changed, but so did the centre ({centre:.1f} levels).",
                           change=change, unit="corner share")
        return _result(goal, key, "complied", 1.0,
                       f"Corners {'darker' if want < 0 else 'lighter'} by {abs(change):.0%}, the centre unchanged.",
                       change=change, unit="corner share")
    if op in ("grain", "noise_reduction", "color_noise_reduction"):
        if op == "color_noise_reduction":
            fb = float(np.mean([_fine(c.astype(np.float32)) for c in cv2.split(cv2.cvtColor(before, cv2.COLOR_RGB2YCrCb))[1:]]))
            fa = float(np.mean([_fine(c.astype(np.float32)) for c in cv2.split(cv2.cvtColor(after, cv2.COLOR_RGB2YCrCb))[1:]]))
        else:
            fb, fa = _fine(_luma(before)), _fine(_luma(after))
        moved = float(state.value(op)) - float(request.previous_state.value(op))
        change = fa - fb
        # more grain, or less noise reduction, should add fine texture; the others remove it
        up = (op == "grain") == (moved > 0)
        if moved == 0:
            return _result(goal, key, "no_change_needed", 1.0, f"{ops.OPS[op].label} was already there.")
        visible = change > 0.15 if up else change < -0.05
        what = "colour speckle" if op == "color_noise_reduction" else "fine texture"
        word = "more" if up else "less"
        return _result(goal, key, "complied" if visible else "too_weak", 1.0 if visible else 0.2,
                       f"{word.capitalize()} {what} ({fb:.2f} -> {fa:.2f} levels)." if visible else
                       f"No visible change in {what} ({fb:.2f} -> {fa:.2f} levels).",
                       change=change, unit="fine spread")
    if op == "tone_curve":
        name = CURVE_NAMES[int(state.value("tone_curve"))]
        lb, la = measure.lab(before)[..., 0], measure.lab(after)[..., 0]
        q = lambda L, p: float(np.percentile(L, p))
        if name in ("s-curve", "strong-s", "soft-s"):
            change, ok, what = (q(la, 90) - q(la, 10)) - (q(lb, 90) - q(lb, 10)), None, "tonal spread"
            ok = change > 0.5
        elif name in ("faded-matte", "film"):
            change, what = q(la, 1) - q(lb, 1), "black point"
            ok = change > 1.0
        elif name in ("lighten-midtones", "darken-midtones"):
            change, what = q(la, 50) - q(lb, 50), "median"
            ok = change > 0.5 if name.startswith("lighten") else change < -0.5
        else:
            return _result(goal, key, "complied", 1.0, "Tone curve back to straight.")
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.2,
                       f"{name} curve: {what} {change:+.1f} L*.", change=change, unit=f"{what} L*")
    if op.startswith("grade_"):
        rng = op.split("_")[1]
        amount = float(state.value(f"grade_{rng}"))
        if not amount:
            return _result(goal, key, "complied", 1.0, f"No grade on the {rng}.")
        hue = math.radians(float(state.value(f"grade_{rng}_hue")))
        lab_b, lab_a = measure.lab(before), measure.lab(after)
        L = lab_b[..., 0]
        where = {"shadows": L < 35, "midtones": (L >= 35) & (L <= 70), "highlights": L > 70}[rng]
        if where.sum() < 50:
            return _result(goal, key, "no_change_needed", 1.0, f"Hardly any {rng} in this photo to grade.")
        da = float((lab_a[..., 1] - lab_b[..., 1])[where].mean())
        db = float((lab_a[..., 2] - lab_b[..., 2])[where].mean())
        # the hue's direction in a*b*, from the RGB of that hue
        rgb = np.array([[_hue_rgb(math.degrees(hue))]], np.float32) / 255.0
        ref = cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)[0, 0]
        direction = np.array([ref[1], ref[2]]) / max(1e-6, float(np.hypot(ref[1], ref[2])))
        along = float(da * direction[0] + db * direction[1])
        ok = along > 0.7
        said_once = op.endswith("_hue") and any(g.op == f"grade_{rng}" for g in request.sub_goals)
        return _result(goal, key, "complied" if ok else "too_weak", 1.0 if ok else 0.2,
                       "" if said_once else  # the amount's check says it for both
                       f"{rng.capitalize()} moved {along:+.1f} towards the grade hue (a* {da:+.1f}, b* {db:+.1f}).",
                       change=along, unit="chroma towards hue")
    # crop insets, zoom, rotate, flip, curve points, vignette/grain modifiers: the frame is exact by construction
    return _result(goal, key, "not_measured", 1.0, f"{ops.OPS[op].label}: applied ({w}x{h}); not measured from pixels.")


def _hue_rgb(hue: float) -> tuple[int, int, int]:
    h = (hue % 360.0) / 60.0
    x = 1.0 - abs(h % 2.0 - 1.0)
    r, g, b = [(1, x, 0), (x, 1, 0), (0, 1, x), (0, x, 1), (x, 0, 1), (1, 0, x)][int(h) % 6]
    return int(round(r * 200)), int(round(g * 200)), int(round(b * 200))


def check_request(request: Any) -> list[dict]:
    """Every toolbox sub-goal of ``request`` checked (for tests and the trace)."""
    return [c for c in (check_toolbox_goal(g, request, g.op) for g in request.sub_goals) if c is not None]


__all__ = ("TOOLBOX_OPS", "check_toolbox_goal", "check_request")
