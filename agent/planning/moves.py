"""Moves: what a plan is built from before the planner merges them into sub-goals.

A :class:`Move` is one op change asked by one reading (the message, the feedback, a look, a
judge's signal); a :class:`Draft` collects the moves and notes of one text. The grammar and the
follow-ups both produce them; the embedded planner merges them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Mapping

from pipeline import ops
from pipeline.masks import normalize_mask_spec


@dataclass
class Move:
    op: str
    value: int
    mode: str = "add"
    target: dict | None = None
    label: str = ""                      # the word that asked for it ("warmer", "Film style")
    phrase: str = ""                     # reply phrase ("warming the image")
    source: str = "message"              # message | feedback | style | signal | relative
    order: int = 0                       # first mention
    rank: int = 0                        # importance within its intent (0 = main op)
    kind: str = ""                       # the intent's kind: direct, artistic, colour, tone, op
    intent: str = ""                     # the profile intent behind it ("warmer"), for the dialogue state
    complaint: bool = False              # the fix of a complaint ("it's a bit flat"), not a wish
    stated: bool = False                 # said of how the photo is ("it looks a little warm"), maybe not asked

    @property
    def key(self) -> tuple[str, str]:
        return self.op, spec_key(self.target)


def spec_key(spec: Mapping | None) -> str:
    """A mask spec as a hashable key (canonical form), "" for the whole photo."""
    return "" if spec is None else repr(sorted(normalize_mask_spec(spec).items()))


@dataclass
class Draft:
    """Moves and notes collected from one text (the message or the feedback)."""

    moves: list[Move] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    said: list[str] = field(default_factory=list)          # notes the reply says ("I worked on the left ...")
    skipped: list[str] = field(default_factory=list)
    rollback: bool = False
    objects: bool = False
    understood_any: bool = False
    relative_without_stats: list[str] = field(default_factory=list)
    bare_targets: list[str] = field(default_factory=list)     # "the sky" with nothing to do to it
    followup: dict = field(default_factory=dict)               # Plan.dialogue of a follow-up
    unknown_places: list[str] = field(default_factory=list)   # "the cup": a place no mask can find
    unknown_kept: list[str] = field(default_factory=list)     # "but not the lamp": a place to keep no mask can find
    place_guess: str | None = None                             # the target standing in for it
    specific_place: bool = False                               # "that lamp", "her nose": asked, never guessed
    place_stand_in: bool = False                               # the guess is what the place's word means ("the floor")
    place_colour: tuple[str, str] | None = None                # the colour said of it ("the green mat"): (band, word)
    missing_things: list[str] = field(default_factory=list)   # "the water" on a photo with no blue
    missing_labels: list[str] = field(default_factory=list)   # what was asked of them ("darker")


def protect_moves(vocab, moves: list[Move], targets: list[str],
                  bands: list[str] = ()) -> list[Move]:
    """The whole-image moves of the clause before, put on everything but the places named (one local
    layer on their complement), so the protected places do not move at all. A colour said as the place
    ("but don't change the water": the blues) is protected by its colour mask."""
    # a colour kept is kept where its hue range is and where the photo's own shade of it is ("dont touch the
    # lime green mat": a lime the HSL greens miss)
    named = [vocab.place(t) for t in targets] + [(normalize_mask_spec({"type": "union", "masks": [
        {"type": "color", "band": b}, {"type": "shade", "band": b}]}), f"the {b}s") for b in bands]
    # "don't lose the blue of the water": the water's colour and the blue said are one place
    named = list({json.dumps(spec, sort_keys=True): (spec, label) for spec, label in named}.values())
    specs, places = zip(*named)
    if len(specs) == 1:
        outside = normalize_mask_spec(dict(specs[0], invert=not specs[0].get("invert")))
    else:
        outside = normalize_mask_spec({"type": "invert", "mask": {"type": "union", "masks": list(specs)}})
    # (a local move is kept off a place said, not off a colour: "the sky richer, but keep the water as it is")
    return onto_mask(moves, outside, "everything but " + " and ".join(places), within=not bands)


def onto_mask(moves: list[Move], spec: dict, where: str, *, within: bool = False) -> list[Move]:
    """The whole-image moves put on the mask ``spec`` ("the image" in their phrase becomes ``where``);
    framing and finishing ops stay on the whole frame. ``within``: a local move is kept to the part of its
    place inside ``spec`` too ("darken the top but keep the snow white": the top, less its whites)."""
    def onto(m: Move) -> Move:
        if not m.value or ops.get_op(m.op).stage in ("geometry", "finishing"):
            return m
        if m.target is None:
            return replace(m, target=spec, phrase=m.phrase.replace("the image", where))
        if within:
            return replace(m, target=normalize_mask_spec({"type": "intersect", "masks": [m.target, spec]}))
        return m
    return [onto(m) for m in moves]
