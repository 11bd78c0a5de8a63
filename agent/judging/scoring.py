"""Score how the pixels moved against the judge's own reading of the request.

:func:`score_reading` measures each property the reading names (L*, contrast,
chroma, a*, b*, detail) between the version before the turn and the new one,
inside the target (when the request names one) and outside it, and scores:

- **met** (0.8..1.0): the asked direction, at least half the expected size (a third
  and more for a slight request); graded:
  1.0 from the size to ``overshoot_full`` times it, less below it and beyond it;
- **weak** (0.35..0.8): the right way but less than half of what was asked;
- **none** (0.1): no visible change;
- **wrong** (0.0): the other way;
- **overdone** (``overshoot_start`` down to ``overshoot_floor``): beyond the overshoot cap;
- **past** (0.2): a "less" follow-up went back further than the version before
  the last change;
- **spill**: a local request that moved the photo outside its target as much
  as inside (or a global edit for a named object) loses up to all of it.

A requirement with alternatives ("murky": more contrast *or* crisper) takes
its best alternative; the reading's compliance is its weakest requirement, so
one wrong move sinks the turn. Messages that ask for no edit (chat, questions,
requests to change what is in the picture) score 0.1 when an edit was made.

Everything is measured on the analysis copies of :mod:`pipeline.measure`.
The person-facing sentence uses plain words; the numbers go to ``details``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from agent.judging.reading import Expect, Lexicon, Move, Reading, load_lexicon, place_words
from pipeline import measure

#: Below this share of the frame a content mask ("face", "sky") counts as not found.
MIN_TARGET_SHARE = 0.005


@dataclass
class MoveCheck:
    """One expected move measured: ``change`` in the property's unit, inside ``region``."""

    move: Move
    region: str                 # "global" or "target"
    change: float
    expected: float
    verdict: str                # met | weak | none | wrong | overdone | past
    score: float

    def to_dict(self) -> dict:
        return {"prop": self.move.prop, "sign": self.move.sign, "size": self.move.size, "region": self.region,
                "change": round(self.change, 3), "expected": round(self.expected, 3), "verdict": self.verdict,
                "score": round(self.score, 3)}


@dataclass
class ReadingScore:
    """The reading's compliance (0..1, None when nothing could be read) with its findings."""

    compliance: float | None
    checks: list[MoveCheck] = field(default_factory=list)
    spill: float | None = None          # 0..1 share of the target's move that leaked outside it
    target_found: bool | None = None
    #: measured where the plan edited, a place the judge cannot find itself: the plan's guess
    #: for a newly named thing ("the table") is unconfirmed; a follow-up on it was seen already
    place_unconfirmed: bool = False
    sentences: list[str] = field(default_factory=list)   # plain words
    details: list[str] = field(default_factory=list)     # the numbers
    diagnoses: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"compliance": None if self.compliance is None else round(self.compliance, 3),
                "checks": [c.to_dict() for c in self.checks],
                "spill": None if self.spill is None else round(self.spill, 3),
                "target_found": self.target_found, "place_unconfirmed": self.place_unconfirmed,
                "diagnoses": list(self.diagnoses)}


# -- measurements ----------------------------------------------------------------------

def _std(x: np.ndarray, w: np.ndarray | None) -> float:
    m = measure.weighted_mean(x, w)
    return math.sqrt(max(measure.weighted_mean((x - m) ** 2, w), 0.0))


def _log_ratio(after: float, before: float) -> float:
    return 100.0 * math.log(max(after, 1e-6) / max(before, 1e-6))


def property_changes(before: measure.LabImage, after: measure.LabImage, weight: np.ndarray | None,
                     props: Sequence[str]) -> dict[str, float]:
    """Signed change of each property, before -> after, weighted by ``weight`` (analysis size)."""
    out: dict[str, float] = {}
    for p in props:
        if p == "L":
            out[p] = measure.weighted_mean(after.L, weight) - measure.weighted_mean(before.L, weight)
        elif p == "contrast":
            out[p] = _std(after.L, weight) - _std(before.L, weight)
        elif p == "chroma":
            out[p] = measure.weighted_mean(after.chroma, weight) - measure.weighted_mean(before.chroma, weight)
        elif p == "a":
            out[p] = measure.weighted_mean(after.a, weight) - measure.weighted_mean(before.a, weight)
        elif p == "b":
            out[p] = measure.weighted_mean(after.b, weight) - measure.weighted_mean(before.b, weight)
        elif p == "detail":
            # fine detail (sharpening) and midtone texture (clarity), as one percent change
            fine = _log_ratio(_fine(after.L, weight), _fine(before.L, weight))
            texture = _log_ratio(measure.local_contrast(after.masked(weight)),
                                 measure.local_contrast(before.masked(weight)))
            out[p] = 0.5 * (fine + texture)
    return out


#: Properties whose expected change grows with how much of them the photo has:
#: the reference level for the vocabulary's sizes and the clamp of the ratio.
_RELATIVE = {"chroma": (20.0, 0.5, 3.0), "contrast": (20.0, 0.5, 2.0)}


def property_scales(view: measure.LabImage, weight: np.ndarray | None, props: Sequence[str]) -> dict[str, float]:
    """How much bigger than the vocabulary's sizes a move of each property should be on this photo."""
    out = {}
    for p in props:
        if p not in _RELATIVE:
            out[p] = 1.0
            continue
        ref, lo, hi = _RELATIVE[p]
        base = measure.weighted_mean(view.chroma, weight) if p == "chroma" else _std(view.L, weight)
        out[p] = float(min(hi, max(lo, base / ref)))
    return out


def _fine(L: np.ndarray, w: np.ndarray | None) -> float:
    import cv2

    lap = np.abs(cv2.Laplacian(L, cv2.CV_32F, ksize=3))
    return measure.weighted_mean(lap, w)


# -- scoring ---------------------------------------------------------------------------

def score_move(move: Move, change: float, lex: Lexicon, *, last: float | None = None,
               scale: float = 1.0, share: float | None = None,
               expected: float | None = None, look: bool = False) -> tuple[str, float, float]:
    """(verdict, score, expected) for one measured ``change`` of ``move.prop``.

    ``last``: for a bounded "less" follow-up, the size of the change being taken
    back (measured in the move's direction); the move must take back at least a
    share of it and never more than all of it. ``scale`` stretches the expected
    sizes for photos with more of the property to move (a very colourful photo
    loses more chroma to the same "less saturated"). ``expected``: the size asked,
    when the conversation gives it (a repeat's share of the last change), instead
    of the vocabulary's sizes. ``look``: a style was asked for; it is overdone only
    at ``look_overshoot`` times the caps.
    """
    noise = lex.noise(move.prop)
    signed = move.sign * change
    if last is not None and last > 0 and (0.5 if share is None else share) * last < noise:
        # the share asked back of a change that small is too small to see ("a touch less" of a
        # barely visible step): only a visible move the wrong way, or past the version before, is a fault
        expected = (0.5 if share is None else share) * last
        if signed <= -noise:
            return "wrong", 0.0, expected
        if signed > last + noise:
            return "past", 0.2, expected
        return "met", 0.9, expected
    if last is not None and last > noise:
        lo, hi = lex.less_share
        share = 0.5 if share is None else min(max(share, lo), hi)
        expected = share * last
        if signed <= -noise:
            return "wrong", 0.0, expected
        least = max(noise, lo * last)
        if signed < least * 0.999:
            if signed < noise:
                return "none", 0.1, expected
            frac = (signed - noise) / max(least - noise, 1e-6)
            return "weak", 0.35 + 0.45 * min(max(frac, 0.0), 1.0), expected
        if signed > hi * last + max(noise, 0.1 * last):
            return "past", 0.2, expected
        # graded: best at the share asked ("halve it": half), 0.85 at a full undo or the least share
        return "met", 1.0 - 0.15 * min(1.0, abs(signed / last - share) / 0.5), expected
    if expected is not None and expected < 2.0 * noise and abs(signed) < noise:
        # a repeat's share of a change that small is barely visible ("a smidge more" of a faint step):
        # no visible move is no fault
        return "met", 0.9, expected
    if expected is None:
        expected = lex.size_of(move.prop, move.size) * scale
    if signed <= -max(noise, 0.25 * expected):
        return "wrong", 0.0, expected
    if signed < noise:
        return "none", 0.1, expected
    # a slight request ("a smidge", "a tad") is met by a smaller visible step than a plain one
    least = (0.35 if move.size == 0 else 0.5) * expected
    if signed < least:
        frac = (signed - noise) / max(least - noise, 1e-6)
        return "weak", 0.35 + 0.45 * min(max(frac, 0.0), 1.0), expected
    return (*_graded_met(signed / expected, move.size, lex, look), expected)


def _graded_met(ratio: float, size: int, lex: Lexicon, look: bool = False) -> tuple[str, float]:
    """(verdict, score) of a move the asked way at ``ratio`` times the expected size (>= 0.5).

    Graded, so the judge's score ranks edits and not only passes them: 0.9 at half the
    size, 1.0 from the size up to ``overshoot_full`` times it, then falling (in log ratio)
    to ``overshoot_start`` at the overshoot cap, and on to ``overshoot_floor`` at twice the cap.
    """
    if ratio < 1.0:
        return "met", 0.9 + 0.2 * (ratio - 0.5)     # 0.87 at the least a slight request needs
    full, cap, start = lex.overshoot_full, lex.overshoot[size] * (lex.look_overshoot if look else 1.0), \
        lex.overshoot_start
    if ratio <= full:
        return "met", 1.0
    if ratio <= cap:
        return "met", 1.0 - (1.0 - start) * math.log(ratio / full) / math.log(cap / full)
    floor = lex.overshoot_floor
    return "overdone", max(floor, start - (start - floor) * (ratio - cap) / cap)


_NO_EDIT_WORDS = {
    "chat": "Nothing was asked to change, yet the photo changed.",
    "question": "That was a question, yet the photo changed.",
    "undo": "That asked to go back, yet a new edit was made.",
    "unsupported": "That asks to change what is in the picture; this edit only changed how it looks.",
}


def _words(move: Move, lex: Lexicon) -> str:
    return lex.word(move.prop, move.sign)


def _fmt(change: float, prop: str, lex: Lexicon) -> str:
    unit = lex.unit(prop)
    if prop == "detail":
        return f"detail {change:+.0f}%"
    return f"{unit} {change:+.1f}"


def score_reading(reading: Reading, *, before: np.ndarray, after: np.ndarray,
                  original: np.ndarray | None = None, before_last: np.ndarray | None = None,
                  target_mask: np.ndarray | None = None, plan_mask: np.ndarray | None = None,
                  plan_is_local: bool = False, lexicon: Lexicon | None = None,
                  views: tuple[measure.LabImage, measure.LabImage] | None = None,
                  last_change: LastChange | None = None) -> ReadingScore:
    """Score the turn ``before`` -> ``after`` (same-size uint8 RGB) against ``reading``.

    ``target_mask``: the reading's own target mask (0..1, full size), when it
    names a place with a mask spec; ``plan_mask``: where the plan edited (the
    union of its local masks), used for objects the vocabulary cannot locate.
    ``before_last``: the version before the last change (for "less" follow-ups; a complaint
    about the edits so far is measured from ``original``).
    ``views``: the analysis copies of ``before`` and ``after`` when the caller has them.
    ``last_change``: the ops the last change moved and where: a bare follow-up ("bit more", "halve it")
    is measured against that change as it landed.
    """
    lex = lexicon or load_lexicon()
    if reading.bare and last_change is not None and before_last is not None:
        where = last_change.where
        # "bit more", "a hair more on them", "same on the right": the last change is the one that landed
        # (its main moves and, for more or less of it, its place), whatever its old words read as
        b_view = views[0] if views is not None else measure.LabImage.of(before)
        moves = landed_moves(measure.LabImage.of(before_last), b_view, last_change, lex)
        if moves:
            if reading.follow == "less":
                moves = tuple(replace(m, sign=-m.sign, size=0) for m in moves)
            reading = replace(reading, expects=(Expect((moves,), "the last change as it landed"),))
            if reading.follow != "retarget":
                # a place the judge can find keeps its name; one it cannot ("them", "the two") is "the same place"
                named = reading.target if reading.target_mask is not None else None
                reading = replace(reading, target=None if where is None else (named or "same place"),
                                  target_mask=None)
                target_mask, plan_mask, plan_is_local = where, None, False
    if reading.kind in _NO_EDIT_WORDS:
        changed = not np.array_equal(before, after)
        if not changed:
            return ReadingScore(None)
        return ReadingScore(0.1, sentences=[_NO_EDIT_WORDS[reading.kind]], diagnoses=["not_asked"])
    if not reading.expects:
        return ReadingScore(None, sentences=[], details=["The judge could not read the request; "
                                                         "it checked the plan's steps instead."])
    b_view, a_view = views if views is not None else (measure.LabImage.of(before), measure.LabImage.of(after))
    out = ReadingScore(None)
    where_words = ""
    mask = None
    region = "global"
    if reading.target is not None:
        where_words = _place(reading)
        if target_mask is not None:
            share = float(np.mean(target_mask))
            out.target_found = share >= MIN_TARGET_SHARE
            if not out.target_found:
                out.sentences.append(f"No {reading.target} was found in this photo, so there was nowhere to "
                                     f"make that change.")
                out.diagnoses.append("target_not_found")
                out.compliance = 0.1 if not np.array_equal(before, after) else 0.0
                return out
            mask = target_mask
        elif plan_is_local and plan_mask is not None and float(np.mean(plan_mask)) >= MIN_TARGET_SHARE:
            mask = plan_mask      # an object the judge cannot locate: measured where the plan edited
            out.details.append(f"{where_words.capitalize()} was measured where the edit was masked.")
            out.place_unconfirmed = reading.kind != "follow_up"
        if mask is not None:
            region = "target"
    weight = None if mask is None else b_view.masked(mask).weight
    props = sorted({m.prop for e in reading.expects for alt in e.alternatives for m in alt})
    measured = sorted(set(props) | ({"chroma"} if {"a", "b"} & set(props) else set()))
    inside = property_changes(b_view, a_view, weight, measured)
    last: dict[str, float] = {}
    since = original if reading.since_original and original is not None else before_last
    if (reading.bounded or reading.repeat) and since is not None:
        last = property_changes(measure.LabImage.of(since), b_view, weight, props)
    scales = property_scales(b_view, weight, props)
    if mask is not None:
        # a soft mask moves its weighted mean less than a global edit moves the photo's; tone-zone
        # ops (shadows, highlights, blacks) move a zone's L* about half as far again
        zone = (reading.target_mask or {}).get("type") == "luminance"
        for p in scales:
            scales[p] *= 0.6 * (0.8 if zone and p == "L" else 1.0)
    req_scores: list[float] = []
    for e in reading.expects:
        best = -1.0
        best_checks: list[MoveCheck] = []
        wrong_elsewhere = False
        for alt in e.alternatives:
            checks = []
            for m in alt:
                bound = asked = None
                if reading.bounded and m.prop in last:
                    bound = -m.sign * last[m.prop]      # how far the last change went, in its own direction
                    bound = bound if bound > 0 else None
                elif reading.repeat and m.sign * last.get(m.prop, 0.0) > lex.noise(m.prop):
                    # "a smidge more", "bit more": that share of how far the last change went
                    asked = max(lex.noise(m.prop), reading.repeat * m.sign * last[m.prop])
                verdict, score, expected = score_move(m, inside[m.prop], lex, last=bound, scale=scales[m.prop],
                                                      share=reading.share, expected=asked, look=e.look)
                checks.append(MoveCheck(m, region, inside[m.prop], expected, verdict, score))
                # the opposite of one accepted fix, clearly ("lifeless" answered by draining the colour);
                # a* / b* pulled toward grey by a desaturation is no colour cast ("vintage": muted and warm)
                drained = m.prop in ("a", "b") and inside["chroma"] <= -abs(inside[m.prop])
                wrong_elsewhere |= verdict == "wrong" and -m.sign * inside[m.prop] >= expected and not drained
            s = min(c.score for c in checks)
            if s > best:
                best, best_checks = s, checks
        if wrong_elsewhere and len(e.alternatives) > 1:
            best = min(best, 0.3)
            out.diagnoses.append("wrong_elsewhere")
            out.sentences.append("Part of it went the wrong way.")
        req_scores.append(best)
        out.checks += best_checks
    compliance = min(req_scores)
    # Damage outside the target: the same properties should hold there.
    if reading.target is not None:
        if mask is not None:
            outside_w = b_view.masked((mask < 0.05).astype(np.float32)).weight
            if float(outside_w.mean()) > 0.01:
                outside = property_changes(b_view, a_view, outside_w, props)
                leaks, moved = [], []
                for c in out.checks:
                    moved_in = abs(c.change)
                    moved_out = abs(outside[c.move.prop])
                    allowed = max(2.0 * lex.noise(c.move.prop), 0.35 * moved_in)
                    leaks.append(max(0.0, moved_out - allowed) / max(moved_in, lex.size_of(c.move.prop, 0)))
                    moved.append(_fmt(outside[c.move.prop], c.move.prop, lex))
                if moved:   # one sentence of its own: its numbers never sit beside another clause's words
                    out.details.append(f"Outside {where_words}: {', '.join(dict.fromkeys(moved))}.")
                out.spill = float(min(1.0, max(leaks) if leaks else 0.0))
                if out.spill > 0.25:
                    out.diagnoses.append("local_spill")
                    out.sentences.append(f"The change spread well beyond {where_words}.")
                    compliance *= 1.0 - 0.7 * out.spill
        elif not plan_is_local and not np.array_equal(before, after) \
                and measure.one_surface(original if original is not None else before):
            # ... on a photo that is one surface edge to edge ("the stones" on gravel), the stuff is the photo
            out.details.append(f"The photo is one surface edge to edge, so {where_words} is all of it.")
        elif not plan_is_local and not np.array_equal(before, after):
            # a named object with no way to find it, and the plan edited everything
            out.spill = 1.0
            out.diagnoses.append("local_spill")
            out.sentences.append(f"The whole photo changed, not just {where_words}.")
            compliance = min(compliance, 0.3)
    out.compliance = float(compliance)
    out.sentences[:0] = _verdict_sentences(out.checks, reading, where_words, lex)
    # The asked direction is quoted: it names the request, the measured value says what happened.
    out.details[:0] = [f"asked “{_words(c.move, lex)}”{' on ' + where_words if c.region == 'target' else ''}: "
                       f"{_fmt(c.change, c.move.prop, lex)} (about "
                       f"{'+' if c.move.sign > 0 else '-'}{c.expected:.1f} expected; {c.verdict})" for c in out.checks]
    for c in out.checks:
        if c.verdict in ("wrong", "none", "weak", "overdone", "past"):
            out.diagnoses.append(f"{c.verdict}:{c.move.prop}")
    out.diagnoses = list(dict.fromkeys(out.diagnoses))
    return out


@dataclass
class LastChange:
    """What the last change moved (op -> signed step) and where (0..1 mask; None: the whole photo)."""

    steps: dict[str, float]
    where: np.ndarray | None = None


#: A property counts as moved by the last change at this many times its noise.
LANDED_VISIBLE = 3.0


def landed_moves(before_last: measure.LabImage, before: measure.LabImage, change: LastChange,
                 lex: Lexicon) -> tuple[Move, ...]:
    """The moves of the last change as it landed, ``before_last`` -> ``before`` (analysis copies): each
    property one of its ops moves, the way the op went, that visibly moved that way where it went.
    Empty when none did (the judge keeps the words' reading).

    A bare follow-up ("a hair more", "halve it") is about that change whatever its old words read as.
    """
    ways: dict[str, set[int]] = {}
    for op, step in change.steps.items():
        moved = lex.moved_by(op)
        if moved is not None and step:
            ways.setdefault(moved[0], set()).add(moved[1] * (1 if step > 0 else -1))
    if not ways:
        return ()
    weight = None if change.where is None else before.masked(change.where).weight
    last = property_changes(before_last, before, weight, sorted(ways))
    return tuple(Move(p, 1 if last[p] > 0 else -1, 1) for p in sorted(ways)
                 if abs(last[p]) >= LANDED_VISIBLE * lex.noise(p) and (1 if last[p] > 0 else -1) in ways[p])


def _place(reading: Reading) -> str:
    return place_words(reading.target) if reading.target else "the photo"


def _verdict_sentences(checks: list[MoveCheck], reading: Reading, where: str, lex: Lexicon) -> list[str]:
    """One plain sentence per verdict group: 'Warmer and brighter as asked.'"""
    groups: dict[str, list[str]] = {}
    for c in checks:
        groups.setdefault(c.verdict, []).append(_words(c.move, lex))
    on = f" on {where}" if reading.target and where else ""
    out = []

    def joined(words: list[str]) -> str:
        words = list(dict.fromkeys(words))
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

    if "met" in groups:
        out.append(f"{joined(groups['met']).capitalize()}{on}, as asked.")
    if "weak" in groups:
        out.append(f"Only slightly {joined(groups['weak'])}{on}; less than asked.")
    if "none" in groups:
        out.append(f"No visible change{on}: not {joined(groups['none'])}.")
    if "wrong" in groups:
        opposite = [lex.word(c.move.prop, -c.move.sign) for c in checks if c.verdict == "wrong"]
        out.append(f"It went the wrong way{on}: {joined(opposite)} instead of {joined(groups['wrong'])}.")
    if "overdone" in groups:
        out.append(f"Too strong{on}: {joined(groups['overdone'])}, well beyond what was asked.")
    if "past" in groups:
        out.append("It went back further than the original." if reading.since_original else
                   "It went back further than the version before the last change.")
    return out


__all__ = ["MoveCheck", "ReadingScore", "LastChange", "landed_moves", "property_changes", "score_move", "score_reading"]
