""""The selection" in a plan: resolved to the session's latest painted mask before anything is built.

Planners say ``{"type": "selection"}`` for "brighten the selection" or "remove
this"; :meth:`agent.service.Studio.select` keeps the latest selection on the
session (``settings["selection"]["mask"]``, a ``{"type": "painted", "blob": ...}``
spec). The planner node swaps one for the other, so the stored EditState names
the exact pixels (a blob digest) and rolls back bit-exactly even after a newer
selection is made.
"""

from __future__ import annotations

from typing import Any, Mapping

from agent.planning.base import SubGoal
from pipeline import ops

#: What the person reads when a plan needs a selection and none was made.
NO_SELECTION_REPLY = ("There is no selection yet: brush over, click on or drag a box around the area first, "
                      "then ask again.")


def _resolve(spec: Any, painted: Mapping | None) -> tuple[Any, bool]:
    """``spec`` with every ``{"type": "selection"}`` replaced; the flag says one was found."""
    if not isinstance(spec, Mapping):
        return spec, False
    if spec.get("type") == "selection":
        if painted is None:
            return spec, True
        out = dict(painted)
        for key in ("feather", "invert"):
            if key in spec:
                out[key] = spec[key]
        return out, True
    found = False
    out = dict(spec)
    if "mask" in spec:
        out["mask"], found = _resolve(spec["mask"], painted)
    if "masks" in spec:
        parts = [_resolve(m, painted) for m in spec["masks"]]
        out["masks"] = [p for p, _ in parts]
        found = any(f for _, f in parts)
    return out, found


def resolve_selection(goals: list[SubGoal], session_settings: Mapping) -> tuple[list[SubGoal], bool]:
    """Goals with "the selection" made concrete, and whether a selection was needed but missing.

    Region ops ("remove this") with no place named act on the selection; retouch ops
    (dust, blemishes, skin, teeth, eyes) find their own places, so a place said with
    them ("clean up her skin") is dropped rather than turned into a layer they would ignore.
    """
    chosen = (session_settings or {}).get("selection") or {}
    painted = chosen.get("mask")
    out, missing = [], False
    for g in goals:
        kind = ops.OPS[g.op].kind if g.op in ops.OPS else ""
        if kind == "retouch" and g.target is not None:
            g = SubGoal(op=g.op, value=g.value, mode=g.mode, target=None, description=g.description, id=g.id)
        elif kind == "region" and g.target is None:
            g = SubGoal(op=g.op, value=g.value, mode=g.mode, target={"type": "selection"},
                        description=g.description, id=g.id)
        target, used = _resolve(g.target, painted)
        if used and painted is None:
            missing = True
        out.append(SubGoal(op=g.op, value=g.value, mode=g.mode, target=target, description=g.description,
                           id=g.id) if used else g)
    return out, missing


#: More dust spots than this and the person sees them circled and confirms the heal before it is kept.
DUST_CONFIRM_AT = 12


def retouch_notes(renderer, source, state, goals: list[SubGoal], long_side: int) -> list[str]:
    """The retouch stage's honest notes ("I couldn't find the mouth reliably ...") when this turn
    touched a healing or portrait op, and the framing note when an aspect crop could not keep
    every face (or the subject) whole; none otherwise."""
    notes = []
    if any(g.op in ops.OPS and ops.OPS[g.op].kind in ("retouch", "region") for g in goals):
        notes += renderer.retouch_report(source, state, long_side).notes
    if any(g.op == "crop_aspect" for g in goals) and hasattr(renderer, "framing_note"):
        framing = renderer.framing_note(source, state)
        notes += [framing] if framing else []
    return notes


def dust_found(renderer, source, state, goals: list[SubGoal], long_side: int) -> list[dict]:
    """The dust spots this turn's dust removal heals, most confident first (``x``, ``y``: centre as
    fractions of the original; ``radius``: fraction of its long side; ``confidence`` 0..1); none when
    the turn did not touch dust removal."""
    amount = state.value("dust_removal") if any(g.op == "dust_removal" for g in goals) else 0
    if not amount or not hasattr(renderer, "dust_map"):
        return []
    from pipeline.dust import dust_spots

    spots = dust_spots(dust=renderer.dust_map(source, source.size_for(long_side)), amount=float(amount))
    return [{"x": round(s.x, 4), "y": round(s.y, 4), "radius": round(s.radius, 4),
             "confidence": round(s.confidence, 3)} for s in spots]
