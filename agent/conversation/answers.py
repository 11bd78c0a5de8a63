"""Answers that change nothing: a reading of the photo, the recipe in words, what the agent can do.

Pure functions over measurements (``pipeline.measure.image_stats``), an
EditState and the profile's rules (``vocabulary.photo_reading``); the
router's command handler (agent/service/chat.py) turns them into replies.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from pipeline import ops
from pipeline.masks import describe_mask
from pipeline.state import EditState


def read_photo(stats: Mapping, rules: Sequence[Mapping], *, max_points: int = 3) -> tuple[list[str], list[str]]:
    """What stands out in ``stats`` by the profile's rules: (observations, suggested messages)."""
    says: list[str] = []
    suggest: list[str] = []
    colour = float(stats.get("chroma_mean", 0)) > 1.5
    for rule in rules:
        stat = rule.get("stat")
        if stat not in stats or (rule.get("when_colour") and not colour):
            continue
        value = float(stats[stat])
        if ("above" in rule and value > float(rule["above"])) or ("below" in rule and value < float(rule["below"])):
            if rule.get("says") and rule["says"] not in says:
                says.append(str(rule["says"]))
            if rule.get("suggest") and rule["suggest"] not in suggest:
                suggest.append(str(rule["suggest"]))
        if len(says) >= max_points:
            break
    return says, suggest


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def recipe_text(state: EditState) -> str:
    """The current version's settings in words: 'temperature +25, contrast +40; on the sky: exposure -20'."""
    parts = []
    glob = [f"{ops.get_op(n).label.lower()} {v:+d}" for n, v in state.settings.items() if v]
    if glob:
        parts.append(", ".join(glob))
    for layer in state.layers:
        local = [f"{ops.get_op(n).label.lower()} {v:+d}" for n, v in layer.settings.items() if v]
        if local:
            parts.append(f"on {layer.name or describe_mask(layer.mask)}: " + ", ".join(local))
    return "; ".join(parts)


def evaluation_reply(stats: Mapping, rules: Sequence[Mapping], good: str, state: EditState) -> tuple[str, list[str]]:
    """'How does it look?': what stands out and what I would try, from the measurements."""
    says, suggest = read_photo(stats, rules)
    recipe = recipe_text(state)
    done = f" So far: {recipe}." if recipe else " Nothing has been changed yet."
    if not says:
        return f"{good}{done}", []
    return f"To my eye {_join(says)}.{done}", suggest


__all__ = ["evaluation_reply", "read_photo", "recipe_text"]
