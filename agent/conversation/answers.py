"""Answers that change nothing: a reading of the photo, the recipe in words, what the agent can do.

Pure functions over measurements (``pipeline.measure.image_stats``), an
EditState and the profile's rules (``vocabulary.photo_reading``); the
router's command handler (agent/service/chat.py) turns them into replies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from pipeline import ops
from pipeline.masks import describe_mask
from pipeline.state import EditState


@dataclass(frozen=True)
class PhotoPoint:
    """One thing that stands out in a photo: what I say about it, the message I suggest for it, and the
    intent that suggestion moves the photo by (a key of the vocabulary's intents, or "")."""

    says: str
    suggest: str
    toward: str = ""


def photo_points(stats: Mapping, rules: Sequence[Mapping], *, max_points: int = 3) -> list[PhotoPoint]:
    """What stands out in ``stats`` by the profile's rules, in the rules' order."""
    points: list[PhotoPoint] = []
    colour = float(stats.get("chroma_mean", 0)) > 1.5
    for rule in rules:
        stat = rule.get("stat")
        if stat not in stats or (rule.get("when_colour") and not colour):
            continue
        value = float(stats[stat])
        if ("above" in rule and value > float(rule["above"])) or ("below" in rule and value < float(rule["below"])):
            points.append(PhotoPoint(str(rule.get("says") or ""), str(rule.get("suggest") or ""),
                                     str(rule.get("toward") or "")))
        if len({p.says for p in points if p.says}) >= max_points:
            break
    return points


def read_photo(stats: Mapping, rules: Sequence[Mapping], *, max_points: int = 3) -> tuple[list[str], list[str]]:
    """What stands out in ``stats`` by the profile's rules: (observations, suggested messages)."""
    points = photo_points(stats, rules, max_points=max_points)
    return list(dict.fromkeys(p.says for p in points if p.says)), \
        list(dict.fromkeys(p.suggest for p in points if p.suggest))


def weigh_change(asked: str, points: Sequence[PhotoPoint], agrees: Callable[[str], bool | None]) -> str:
    """The answer to "would it look better <asked>?": the change asked about weighed against what stands out
    in the photo (``points``, from :func:`photo_points`). ``agrees(intent)`` says whether the intent a point
    suggests is the change asked about (True), its opposite (False) or something else (None). The answer
    always ends by offering the change asked about, which is what "yes" then makes."""
    said = asked[:1].upper() + asked[1:]
    told = [p for p in points if p.says and p.suggest]
    verdicts = [(p, agrees(p.toward) if p.toward else None) for p in told]
    for p, verdict in verdicts:
        if verdict:
            return f"Yes, I think so: {p.says}. Say yes and I'll do it."
    for p, verdict in verdicts:
        if verdict is False:
            return (f"I wouldn't: {p.says}, so I would go the other way (\u201c{p.suggest}\u201d). "
                    f"Say yes if you want it {asked} anyway.")
    taste = f"{said} is a matter of taste; nothing in the photo argues against it."
    if told:
        return f"{taste} To my eye {told[0].says}, so I would also try \u201c{told[0].suggest}\u201d. " \
               "Say yes and I'll do what you asked."
    return f"{taste} Say yes and I'll do it."


def answer_doubt(fix_label: str, points: Sequence[PhotoPoint], rules: Sequence[Mapping],
                 agrees: Callable[[str], bool | None]) -> str | None:
    """The answer to a doubt about one quality ("is it too dark?", "are the highlights clipped?", "is it sharp
    enough?"), whose fix would be ``fix_label``: yes when a thing that stands out in the photo (``points``)
    asks that fix, no when one asks the opposite, or when the profile's reading for it (``rules``) does not
    fire; None when nothing reads that quality (the general reading then)."""
    told = [p for p in points if p.says and p.toward]
    for p in told:
        if agrees(p.toward):
            return f"Yes, I think so: {p.says}. Say yes and I'll make it {fix_label.lower()}."
    for p in told:
        if agrees(p.toward) is False:
            return f"I don't think so: {p.says}, if anything."
    # a reading the profile has for that quality, which the photo does not show
    unseen = [str(r["says"]) for r in rules if r.get("says") and r.get("toward") and agrees(str(r["toward"]))]
    if unseen:
        return f"Not by my measure: I don't see that {unseen[0]}."
    return None


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


__all__ = ["PhotoPoint", "evaluation_reply", "photo_points", "read_photo", "recipe_text", "weigh_change"]
