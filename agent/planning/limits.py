"""The executor's reading of the profiles' ``parameter_space``: ranges and sweet spots that hold.

Before the executor applies a planner's steps, :func:`hold_to_profile` looks at where each op would
end up:

- ``range`` (the part of the registry range the planning model should use, from its profile): a value
  outside it is clamped, always;
- ``sweet_spot`` (where the local pipeline looks good, from the engine profile): a *relative* move
  ("much more saturated", three times) stops at the edge of the sweet spot — or where the op already
  was, if it was past it — unless the person insists (``vocabulary.insist.words`` in the engine
  profile: "I insist", "anyway", "all the way"...). Absolute values (a look, the person's own slider
  values) are deliberate and are not held.

Every held step comes back with a line for the person saying what was held and how to go further.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from agent.conversation.words import PhraseTable, tokenize
from pipeline import ops



def executor_profiles(planner: Any):
    """(engine profile, the planning model's profile or None): sweet spots from the first, ranges from both."""
    from profiles import Profile, load_profile

    engine = load_profile("engine")
    model = getattr(planner, "profile", None)
    if not isinstance(model, Profile):
        model = getattr(getattr(getattr(planner, "client", None), "profile", None), "source", None)
    if not isinstance(model, Profile) or model.name == engine.name:
        model = None
    return engine, model


def insists(message: str, engine) -> bool:
    """Does the person's message insist on going past the sweet spot? (the planner's own insist words)"""
    words = (engine.vocabulary.get("insist") or {}).get("words") or ()
    return PhraseTable((w, True) for w in words).has(tokenize(message or ""))


def hold_to_profile(state, goals: list, engine, model=None, *, insist: bool = False,
                    past: set[str] | frozenset[str] = frozenset()) -> tuple[list, dict[int, dict]]:
    """The goals with their values held to the profiles; ``{index: {"limit", "line"}}`` for each held step.
    ``past``: ops the planner took one step past the sweet spot on purpose (a repeat where the last change
    stopped at its edge); the sweet spot does not hold them, the range still does."""
    held: dict[int, dict] = {}
    out = []
    current = state
    for i, goal in enumerate(goals):
        op = ops.get_op(goal.op)
        entry = dict(engine.parameter_space["ops"].get(goal.op) or {})
        model_entry = dict(model.parameter_space["ops"].get(goal.op) or {}) if model is not None else {}
        before = current.value(goal.op, goal.target)
        requested = before + goal.value if goal.mode == "add" else goal.value
        value = max(op.min, min(op.max, requested))
        limit, line = None, ""
        span = model_entry.get("range") or entry.get("range")
        if span is not None:
            lo, hi = span
            kept = max(lo, min(hi, value))
            if kept != value:
                limit = "range"
                line = (f"Kept {op.label.lower()} at {kept:+d}: the planning model's range for it is "
                        f"{lo:+d}..{hi:+d}.")
                value = kept
        spot = entry.get("sweet_spot")
        if spot is not None and goal.mode == "add" and not insist and goal.op not in past:
            lo, hi = spot
            if goal.value > 0 and value > hi:
                kept = min(value, max(hi, before))     # never past the edge, never below where it was
            elif goal.value < 0 and value < lo:
                kept = max(value, min(lo, before))
            else:
                kept = value
            if kept != value:
                edge = hi if goal.value > 0 else lo
                limit = "sweet spot"
                why = entry.get("why", "")
                line = (f"Held {op.label.lower()} at {kept:+d}, the edge of its sweet spot ({edge:+d})"
                        + (f": {why}" if why else "") + ". Say \"more, I insist\" to go further.")
                value = kept
        if limit is not None:
            new_value = value - before if goal.mode == "add" else value
            goal = replace(goal, value=int(new_value))
            held[i] = {"limit": limit, "line": line, "requested": int(requested)}
        current = current.with_value(goal.op, goal.value, mask=goal.target, mode=goal.mode, clamp=True)
        out.append(goal)
    return out, held


__all__ = ["executor_profiles", "hold_to_profile", "insists"]
