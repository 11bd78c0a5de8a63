"""The embedded planner: free text -> sub-goals with no model, from the engine profile.

All vocabulary (words, op moves, magnitudes, targets, bands, styles, the
parameters of relative requests, iteration signals) lives in
``profiles/engine.yaml``; this module is only the grammar that applies it:

1. tokenise and match vocabulary phrases, longest first ("black and white"
   is one phrase, so its "and" never splits a clause);
2. split into clauses at punctuation and joining words ("and", "but");
3. per clause: intents with their modifiers (magnitude, "less"/"too"
   negation, "don't", numbers), local targets and colour bands; "X towards Y"
   colour shifts (a band's hue, or a white-balance cast); "tone down <place>"
   with no quality named (the profile's implicit intent);
4. turn each intent into op moves on the -100..100 scale, respecting the
   current EditState ("less warm" after warming tones the warmth down);
5. merge: opposite moves of one op from different words are a conflict (the
   op is held and the reply says so); keep at most ``max_sub_goals``.

Relative requests ("fix the exposure", "correct the white balance", "auto
contrast", "auto") read ``request.image_stats`` (pipeline.measure.image_stats).
Replans apply the profile's iteration signals for the judge's diagnoses.
Anything outside the vocabulary gets an honest "I don't know how to do that
yet", never a guessed edit: text can only ever select registry ops and mask specs.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Mapping

from pipeline.state import WHOLE_FRAME_OPS
from agent.planning.base import REPLANS_JOINED, Plan, PlanRequest, SubGoal
from agent.planning.followups import caused_by_last, guessed_place_note, read_followup
from agent.planning.grammar import PLACED_AS_SAID, read_request, split_protected
from agent.planning.moves import Draft, Move, onto_mask, protect_moves, spec_key
from agent.conversation.going_back import split_requests
from agent.conversation.vocabulary import Vocabulary, read_pieces
from agent.conversation.words import PhraseTable, added_to_last, asked_why_rest, find_phrases, says_vague_ask, tokenize, word_lists
from pipeline import ops
from pipeline.masks import describe_mask, normalize_mask_spec
from pipeline.measure import one_surface
from pipeline.state import EditState
from profiles import Profile, ProfileError, load_profile

# ---------------------------------------------------------------------------
# Merging, limits and the reply
# ---------------------------------------------------------------------------

def _merge(moves: list[Move], state: EditState, notes: list[str]) -> list[Move]:
    """One move per (op, target). Opposite requests from different words hold the op."""
    groups: dict[tuple[str, str], list[Move]] = {}
    for m in moves:
        groups.setdefault(m.key, []).append(m)
    merged: list[Move] = []
    for key, group in groups.items():
        if any(m.source == "feedback" for m in group):
            group = [m for m in group if m.source in ("feedback", "signal")]
        asked = [m for m in group if m.source in ("message", "feedback") and m.mode == "add"]
        for way in (1, -1):
            # "the frame reads a little warm to me, cool it down": the quality said of how the photo is, asked
            # the other way in the same message, describes it; the request is what is asked
            said = [m for m in asked if m.value * way > 0]
            if said and all(m.stated for m in said) and any(m.value * way < 0 and not m.stated for m in asked):
                group = [m for m in group if m not in said]
                asked = [m for m in asked if m not in said]
        labels_up = {m.label for m in asked if m.value > 0}
        labels_down = {m.label for m in asked if m.value < 0}
        # Two looks that differ on a supporting op blend; a named quality or a look's main op is contested.
        contested = any(m.rank == 0 or m.kind != "artistic" for m in asked)
        if labels_up and labels_down and labels_up != labels_down and contested:
            op = ops.get_op(key[0]).label.lower()
            where = f" on {describe_mask(group[0].target)}" if group[0].target else ""
            notes.append(f"\u201c{' and '.join(sorted(labels_up))}\u201d and \u201c{' and '.join(sorted(labels_down))}\u201d "
                         f"pull {op}{where} in opposite directions, so I left {op} as it is.")
            continue
        # The reply names the person's words, not the style underneath them.
        first = min(group, key=lambda m: (m.source in ("style", "signal"), m.order, m.rank))
        sets = [m for m in group if m.mode == "set"]
        adds = _said_once([m for m in group if m.mode == "add"])
        if sets:
            value, mode = sets[-1].value + adds, "set"
        else:
            value, mode = adds, "add"
        op = ops.get_op(key[0])
        current = state.value(op.name, first.target) if first.target else state.value(op.name)
        if mode == "add":
            if not op.wrap:  # a wrapping op (quarter turns, a flip) has no limit to stop at
                value = op.clamp(current + value) - current    # never ask past the op's range
            if not value:
                if current:
                    notes.append(f"{op.label} is already at its limit ({current:+}).")
                continue
        else:
            value = op.clamp(value)
            if value == current:
                continue
        if mode == "add" and first.value * value < 0:
            # ("warm it up a bit and correct the white balance" on a warm photo: the correction outweighs the
            # warming; the reply names the move the op goes with, never "warming" at temperature -45)
            first = min((m for m in group if m.value * value > 0), default=first,
                        key=lambda m: (m.source in ("style", "signal"), m.order, m.rank))
        merged.append(replace(first, value=value, mode=mode, rank=min(m.rank for m in group)))
    return merged


#: A complaint against what this session's changes did ("too orange now" after warming) takes back at most this
#: share of where the op has got to: its fix never crosses the original ("hmm too orange" is not "make it cold").
COMPLAINT_TAKES_BACK = 0.67


def _not_past_original(moves: list[Move], state: EditState) -> list[Move]:
    """``moves`` with each complaint's fix that pulls an op back past the original ended short of it."""
    out = []
    for m in moves:
        current = state.value(m.op, m.target) if m.complaint else 0
        if m.mode == "add" and isinstance(current, int) and current * m.value < 0 \
                and abs(m.value) > abs(current) * COMPLAINT_TAKES_BACK:
            value = -int(round(current * COMPLAINT_TAKES_BACK))
            if not value:
                continue
            m = replace(m, value=value)
        out.append(m)
    return out


def _said_once(adds: list[Move]) -> int:
    """The summed step of one op's moves, where a quality said twice in one message ("darken the corners
    a little, like a soft vignette") is one request: its larger step the same way, not both."""
    said: dict[str, int] = {}
    total = 0
    for m in adds:
        if m.source != "message" or not m.intent:
            total += m.value
        elif m.intent in said and said[m.intent] * m.value > 0:
            said[m.intent] = max(said[m.intent], m.value, key=abs)
        else:
            said[m.intent] = said.get(m.intent, 0) + m.value
    return total + sum(said.values())


def _limit(moves: list[Move], max_sub_goals: int, notes: list[str]) -> list[Move]:
    """Keep every request's main op first (round-robin by rank), then restore mention order."""
    if len(moves) <= max_sub_goals:
        return sorted(moves, key=lambda m: (m.order, m.rank))
    keep = sorted(moves, key=lambda m: (m.rank, m.order, -abs(m.value)))[:max_sub_goals]
    dropped = [m for m in moves if m not in keep]
    notes.append(f"Kept the {max_sub_goals} most important adjustments; left out "
                 + ", ".join(f"{m.op} {m.value:+d}" for m in dropped) + ".")
    return sorted(keep, key=lambda m: (m.order, m.rank))


def _sweet_spot_notes(profile: Profile, goals: list[SubGoal], state: EditState, notes: list[str]) -> None:
    for g in goals:
        spot = profile.sweet_spot(g.op)
        if spot is None:
            continue
        current = state.value(g.op, g.target) if g.target else state.value(g.op)
        new = g.value if g.mode == "set" else current + g.value
        if not spot.contains(new) and abs(new) > abs(current) and not (g.op == "saturation" and new == -100):
            notes.append(f"{g.op} will be {new:+d}, past its sweet spot ({spot.low:+d}..{spot.high:+d}): {spot.why}.")


def _on_the_requests_places(extra: list[Move], moves: list[Move]) -> list[Move]:
    """A judge's replan corrects where the request acts: on its places when every move asked for
    is local ("darken the background"), nowhere else when it is a face tool that found no face;
    never a silent whole-image edit for a local request."""
    asked = [m for m in moves if m.source in ("message", "followup", "relative") and m.value]
    if not asked or any(m.target is None and ops.get_op(m.op).stage != "retouch" for m in asked):
        return extra                           # the request acts on the whole image
    places = list({m.key[1]: m.target for m in asked if m.target is not None}.values())
    out = []
    for m in extra:
        if m.target is not None or ops.get_op(m.op).stage in ("geometry", "retouch"):
            out.append(m)
        else:
            out += [replace(m, target=p) for p in places]
    return out


def _insisted(vocab: Vocabulary, message: str) -> bool:
    """Whether the person insists past the sweet spots: an insist phrase, a number, or a huge magnitude."""
    tokens = tokenize(message)
    if find_phrases(tokens, vocab.insist_words):
        return True
    for p in read_pieces(vocab, tokens):
        if p.category == "number" or (p.category == "magnitude" and vocab.magnitudes[p.key] >= vocab.insist_magnitude):
            return True
    return False


def _cap_to_sweet_spots(profile: Profile, moves: list[Move], state: EditState, notes: list[str],
                        vocab: Vocabulary | None = None, past: list[str] | None = None) -> list[Move]:
    """Keep the person's moves near each op's sweet spot (parameter_space), saying so.

    Inside the sweet spot a move goes through. A quality named again past the edge
    ("a bit more contrast" at +45) goes on at ``insist.soft_rate`` of the asked step,
    never beyond ``insist.soft_share`` of the way from the edge to the op's limit;
    follow-ups ("more", "again") stop at the edge, so repeats cannot run away; one said with its op right
    at the edge (where the last change stopped, and said so) takes one step past it, named in ``past``. Styles,
    measured corrections and moves back toward neutral pass untouched.
    """
    rate = vocab.soft_rate if vocab is not None else 0.5
    share = vocab.soft_share if vocab is not None else 0.25
    out: list[Move] = []
    stepped: list[str] = []
    for m in moves:
        spot = profile.sweet_spot(m.op)
        if spot is None or m.source not in ("message", "followup", "feedback"):
            out.append(m)
            continue
        current = state.value(m.op, m.target) if m.target else state.value(m.op)
        new = m.value if m.mode == "set" else current + m.value
        if spot.contains(new) or abs(new) <= abs(current) or (m.op == "saturation" and new == -100):
            out.append(m)
            continue
        op = ops.get_op(m.op)
        up = new > spot.high
        edge = spot.high if up else spot.low
        label = op.label.lower()
        where = f" on {describe_mask(m.target)}" if m.target else ""
        if m.source == "followup" and m.mode == "add" and current == edge and past is not None:
            # "more!" right after a change stopped at the edge (and said so): the person has seen where it
            # stopped and asks again, so one step goes past it, said so; the next repeat stops again
            stepped.append(f"{label}{where}")
            past.append(m.op)
            # (a step of its own size, or a quarter of the way from the edge to the op's limit: the last
            # change was cut short at the edge, so its own step may be a sliver)
            step = max(abs(m.value), round(0.25 * abs((op.max if up else op.min) - edge)))
            out.append(replace(m, value=step if up else -step))
            continue
        goal = edge
        if m.source != "followup" and m.mode == "add":
            ceiling = edge + share * ((op.max if up else op.min) - edge)
            start = max(current, edge) if up else min(current, edge)
            goal = start + (new - start) * rate
            goal = int(round(min(goal, ceiling) if up else max(goal, ceiling)))
        if (goal - current) * (new - current) <= 0:     # already at or past where it should stop
            notes.append(f"{label.capitalize()}{where} is already at {current:+d}, past what looks good on most "
                         f"photos ({spot.low:+d}..{spot.high:+d}), so I left it; say \u201cI insist\u201d to push further.")
            continue
        if goal == edge:
            notes.append(f"I stopped {label}{where} at {edge:+d}, the edge of what looks good on most photos; "
                         f"say \u201cI insist\u201d to go further.")
        else:
            notes.append(f"{label.capitalize()}{where} is past what looks good on most photos ({spot.low:+d}.."
                         f"{spot.high:+d}), so I went gently, to {goal:+d}; say \u201cI insist\u201d for more.")
        out.append(replace(m, value=goal if m.mode == "set" else goal - current))
    if stepped:
        notes.append(f"Going one step past what looks good on most photos for {' and '.join(dict.fromkeys(stepped))}, "
                     f"as you asked for more where it had stopped; say \u201cI insist\u201d to go further still.")
    return out


#: The note of a replan that moved the plan to the place the person's feedback names.
_MOVED_NOTE = "The same change, on "


def _corrected(message: str, moves: list[Move], last, notes: list[str], reverse: PhraseTable) -> list[Move]:
    """"make it warmer" then "no wait, not warmer, i meant cooler": said with the last change denied by name (or
    said to go "the other way"), a move against an op that change moved, on the same place, starts from where that
    op was before it (cooler than before the warming, not the warming taken back). "i meant a touch warmer" after
    cooling is a step from here, and "not so contrasty" how much."""
    words = tokenize(message)
    named = {w for label in last.labels for w in tokenize(label)[:1]} if last is not None else set()
    if last is None or not (any(w in ("not", "no") and i + 1 < len(words) and words[i + 1] in named
                                for i, w in enumerate(words)) or find_phrases(words, reverse)):
        return moves
    before = {(c.op, spec_key(c.target)): c for c in last.changes if c.delta}
    out, undone = [], []
    for m in moves:
        c = before.get((m.op, spec_key(m.target)))
        if c is not None and m.source == "message" and m.mode == "add" and m.value and (m.value > 0) != (c.delta > 0):
            out.append(replace(m, value=c.before + m.value, mode="set"))
            undone += [label for label in last.labels[:1] if label not in undone]
        else:
            out.append(m)
    if undone:
        notes.append(f"In place of \u201c{undone[0]}\u201d, not on top of it.")
    return out


def _neutralised(vocab: Vocabulary, moves: list[Move]) -> list[Move]:
    """"the snow looks blue, it should be white": a colour complained of ("less blue" there), said to be meant white
    or grey, has its cast taken out too: the white-balance move against that colour, on the same place
    (``band_casts``), unless the request already moves that op there."""
    have = {m.key for m in moves}
    out = list(moves)
    for m in moves:
        band = m.op.removeprefix("saturation_")
        if band == m.op or band not in vocab.band_casts or m.mode != "add" or m.value >= 0:
            continue
        op, value = vocab.band_casts[band]
        if (op, spec_key(m.target)) in have:
            continue
        have.add((op, spec_key(m.target)))
        out.append(replace(m, op=op, value=value, phrase=f"taking the {band} cast out", rank=m.rank + 1))
    return out


#: "it should be white", "its meant to be white": what a thing with a colour cast should be.
_NEUTRAL_WISHES = PhraseTable.of(word_lists()["neutral_wishes"])


_SURFACE_STUFF = word_lists()["surface_stuff"]
#: Words that say how the photo is ("the contrast is pushing ...", "it looks grey"): a sentence with one says why.
_STATE_WORDS = word_lists()["state_words"]


def _surface_stuff(place: str) -> bool:
    """Whether ``place`` names stuff a surface is made of ("the gravel", "the bricks"), not one thing."""
    noun = (tokenize(place) or [""])[-1]
    return noun in _SURFACE_STUFF or len(noun) > 3 and noun.endswith("s") and not noun.endswith("ss")


_FINE_DETAIL = frozenset(word_lists()["fine_detail"])
#: Ops that change fine detail only (edges and lines): on fine lines spread through the photo, the whole photo.
_DETAIL_OPS = frozenset({"sharpen", "clarity"})


def _fine_detail(place: str, moves: list) -> bool:
    """Whether a request changes only fine detail on fine lines spread through the photo ("sharpen the blood
    vessels", "the cell outlines could be crisper")."""
    words = tokenize(place)
    return bool(moves) and all(m.op in _DETAIL_OPS for m in moves) and len(words) > 1 and words[-1] in _FINE_DETAIL


#: Ops that change the dark end of the tones only.
_SHADOW_OPS = frozenset({"shadows", "blacks"})
#: Places that are the dark tones by their name ("the shadow under the saucer").
_DARK_PLACES = word_lists()["dark_places"]


def _dark_place(vocab, message: str, moves: list, places: list[str]) -> bool:
    """Whether a thing no finder knows is found by its tone on the whole photo: it is said dark ("his coat is just
    a black blob") or is dark by its name ("the shadow under the saucer has gone pitch black"), and every move
    opens the dark end of the tones only ("pull some detail out of it"). A plain brightening opens that end where
    the thing is many things ("the gaps between the stones are really black, open them up") or a shadow by its
    name; one thing said dark and lifted is asked about ("the far shoreline is a black smear, make it lighter").
    (Recovering highlights on a thing said blown or clipping is asked about: "the optic disc is clipping, bring it
    down" on a whole-photo highlight recovery darkened the rest of the retina too.)"""
    said = {vocab.spot_tones[w] for w in tokenize(message) if w in vocab.spot_tones}
    named = any((tokenize(p) or [""])[-1] in _DARK_PLACES for p in places)
    many = _plural(places[0].split()[-1])
    return (said == {"dark"} or named) and bool(moves) \
        and all(m.op in _SHADOW_OPS or (many or named) and _lifts(m) for m in moves)


def _plural(noun: str) -> bool:
    """Whether a noun names many things ("gaps", "cracks"), not one ("glass", "moss")."""
    return noun.endswith("s") and not noun.endswith(("ss", "us", "is"))


def _lifts(move: Move) -> bool:
    """A plain brightening of the whole photo asked in the message ("lift them a bit")."""
    return move.op == "exposure" and move.mode == "add" and move.value > 0 and move.target is None \
        and move.source == "message"


def _opened(vocab: Vocabulary, moves: list[Move]) -> list[Move]:
    """"the gaps are really black, open them up a bit": lifting a thing said black is opening the shadows, which
    only changes the darkest tones, where it is; the size asked (a brightening's share of a plain one) is kept."""
    intent = vocab.intents["open_shadows"]
    plain = vocab.intents["brighter"].ops[0][1]
    out = []
    for m in moves:
        if not _lifts(m):
            out.append(m)
            continue
        out += [replace(m, op=op, value=round(value * m.value / plain), rank=m.rank + k, intent=intent.name,
                        label=intent.label, phrase=intent.doing, kind=intent.kind)
                for k, (op, value) in enumerate(intent.ops)]
    return out


def _on_the_last_place(vocab: Vocabulary, message: str, draft: Draft, dialogue) -> Draft:
    """"and take some colour out of it too" right after "darken the background on the right": a request of no
    place of its own, said as one more change to the thing the last change was on (:func:`added_to_last`), goes
    where that change went when it went on one place."""
    base = dialogue.base_edit() if dialogue is not None else None
    if base is None or not draft.moves or any(m.target is not None for m in draft.moves) or draft.unknown_places \
            or draft.bare_targets or not added_to_last(tokenize(message)):
        return draft
    places = {spec_key(c.target): c.target for c in base.changes if c.delta}
    if len(places) != 1 or "" in places:
        return draft
    (spec,) = places.values()
    return replace(draft, moves=onto_mask(draft.moves, spec, describe_mask(spec)))


def _followup_in_a_clause(vocab: Vocabulary, message: str, request: PlanRequest):
    """"bit heavy-handed now. Ease off.", "More than that. Properly rich.": a message no reading takes as a
    whole, one clause of which is a follow-up to the last change while the others ask nothing that can be
    done (how it looks now, said in words no table knows): that follow-up."""
    clauses = [" ".join(c) for c in split_requests(tokenize(message))]
    if len(clauses) < 2:
        return None
    found = [f for f in (read_followup(vocab, c, request) for c in clauses) if f is not None and f.moves]
    return found[0] if len(found) == 1 else None


def _pulled_back_after_saying_why(vocab: Vocabulary, message: str, request: PlanRequest, draft: Draft):
    """"The contrast is pushing the bright areas to white. Reduce it.", "Banding is creeping in up top. Back off
    a bit.": sentences that say how the photo is now, then one that takes the last change back (its "it"
    points back): that pull-back. The sentences before say why; read as requests they asked for more of what
    the last one takes back. A sentence that names something else wrong ("the pink saucer is a bit too pink,
    tone it down" after more contrast) asks its own fix, which "it" then means."""
    clauses = split_requests(tokenize(message))
    if len(clauses) < 2 or not all(_STATE_WORDS & set(c) for c in clauses[:-1]):
        return None
    base = request.dialogue.base_edit() if request.dialogue is not None else None
    if base is None or not {m.op for m in draft.moves} <= {c.op for c in base.changes}:
        return None
    last = read_followup(vocab, " ".join(clauses[-1]), request)
    return last if last is not None and last.moves and last.dialogue.get("move") == "pull_back" else None


def _one_surface(request: PlanRequest) -> bool:
    """Whether the photo (its original, else the current render) is one surface edge to edge."""
    photo = request.original if request.original is not None else request.image
    return photo is not None and one_surface(photo)


def _make_it(what: str) -> str:
    """What a question offers to do: "make it sharper"; "make the change" where the request had no name."""
    return "make the change" if what == "the change" else f"make it {what}"


def _asked_colour(vocab: Vocabulary, moves: list[Move]) -> tuple[str, str] | None:
    """The one colour band the whole-photo moves of a request take down ("less orange": orange), as a colour
    said of a thing is: (band, word); None where they change none or several, or raise one."""
    banded = [m for m in moves if m.target is None and m.op in vocab.band_op_plain]
    bands = {m.op.rsplit("_", 1)[1] for m in banded}
    if len(bands) != 1 or any(m.value >= 0 for m in banded):
        return None
    band = bands.pop()
    return band, band


def _tinted_where_absent(vocab: Vocabulary, moves: list[Move], stats: Mapping | None, notes: list[str]) -> list[Move]:
    """"much bluer" on a grey moon: a colour asked more of where the photo has almost none of it (less than
    ``band_things_min_share``) has nothing to saturate, so it goes on as a tint of that colour, the white-balance
    move that puts its cast in (``band_casts``, the other way), sized as asked; its shade moves are dropped."""
    bands = (stats or {}).get("bands") or {}
    absent = {b for b, info in bands.items() if b in vocab.band_casts
              and float((info or {}).get("share", 1.0)) < vocab.band_things_min_share}
    if not absent:
        return moves
    out, tinted = [], []
    for m in moves:
        kind, _, band = m.op.partition("_")
        if band not in absent or kind not in ("saturation", "luminance") or m.mode != "add":
            out.append(m)
        elif kind == "saturation" and m.value > 0:
            op, cast = vocab.band_casts[band]
            out.append(replace(m, op=op, value=int(round(-cast * m.value / 25)),
                               phrase=f"tinting it {band} (it has almost no {band} to deepen)"))
            tinted += [band] if band not in tinted else []
        elif kind == "saturation" and m.value < 0:
            # "the sky looks almost purple now" with no purple hue to mute: the purple cast taken out
            op, cast = vocab.band_casts[band]
            out.append(replace(m, op=op, value=int(round(cast * -m.value / 20)),
                               phrase=f"taking the {band} cast out"))
        # (a shade move of a colour the photo lacks moves nothing)
    if tinted:
        notes.append(f"The photo has almost no {' or '.join(tinted)}, so I tinted it {' and '.join(tinted)} instead.")
    return out


def _tone_monochrome(vocab: Vocabulary, moves: list[Move], state: EditState, notes: list[str]) -> list[Move]:
    """On a black-and-white version, colour moves go on a toning layer (a toned print) so they show."""
    cfg = vocab.monochrome
    if not cfg or not cfg.get("toning_mask"):
        return moves
    limit = int(cfg.get("saturation_at_or_below", -90))
    mono = state.value("saturation") <= limit or any(
        m.op == "saturation" and m.target is None and
        (m.value if m.mode == "set" else state.value("saturation") + m.value) <= limit for m in moves)
    if not mono:
        return moves
    toning = set(cfg.get("toning_ops") or ())
    spec = normalize_mask_spec(cfg["toning_mask"])
    scale = float(cfg.get("toning_scale", 1.0))
    out, toned = [], False
    for m in moves:
        if m.op in toning and m.target is None:
            toned = True
            value = m.value if m.mode == "set" else int(round(m.value * scale))
            out.append(replace(m, target=spec, value=value, phrase=f"{m.phrase} as a tone over the black and white"))
        else:
            out.append(m)
    if toned:
        notes.append("The photo is black and white, so the colour goes on as a tone over the grey, like a toned print.")
    return out


def _summary(g: SubGoal) -> str:
    return f"{g.op} {g.value:+d}" if g.mode == "add" else f"{g.op} = {g.value}"


def _reply(pairs: list[tuple[Move, SubGoal]], conflict_notes: list[str], extra: list[str]) -> str:
    phrases: dict[str, list[str]] = {}
    for move, goal in pairs:
        phrases.setdefault(move.phrase or move.label, []).append(_summary(goal))
    parts = [f"{p} ({', '.join(v)})" for p, v in phrases.items()]
    if not parts:
        text = ""
    elif len(parts) == 1:
        text = parts[0]
    else:
        text = ", ".join(parts[:-1]) + " and " + parts[-1]
    text = (text[:1].upper() + text[1:] + ".") if text else ""
    return " ".join(t for t in [text, *conflict_notes, *extra] if t)


# ---------------------------------------------------------------------------
# The planner
# ---------------------------------------------------------------------------

class EmbeddedPlanner:
    """Rule-based planner driven by a profile's vocabulary (default: the engine profile).

    >>> from pipeline.state import EditState
    >>> plan = EmbeddedPlanner().plan(PlanRequest("make it warmer", EditState()))
    >>> [(g.op, g.value > 0) for g in plan.sub_goals]
    [('temperature', True)]
    """

    name = "embedded"

    def __init__(self, profile: str | Profile = "engine"):
        self.profile = profile if isinstance(profile, Profile) else load_profile(profile)
        self.vocab = Vocabulary(self.profile)

    def _insist(self, request: PlanRequest, followup) -> Draft:
        """"i insist", "more, i insist": the last request read again on the version it was asked of, with
        nothing held at the sweet spots — each op it moved goes to what was asked; an op that was not
        held (already where it was asked) moves by its change again, times the scale said."""
        base = request.dialogue.by_asset(followup.dialogue.get("base_asset"))
        before = EditState.from_dict(base.state_before or {})
        asked = read_request(self.vocab, base.message, replace(request, state=before, dialogue=None), "message")
        wanted = {m.key: (before.value(m.op, m.target) if m.target else before.value(m.op)) + m.value
                  if m.mode == "add" else m.value for m in asked.moves if isinstance(m.value, int)}
        scale = float(followup.dialogue.get("scale") or 1.0)
        moves = []
        for rank, c in enumerate(base.changes):
            key = Move(c.op, 0, target=c.target).key
            goal = wanted.get(key)
            current = request.state.value(c.op, c.target) if c.target else request.state.value(c.op)
            if not isinstance(current, int) or not c.delta:
                continue
            if goal is None or (goal - current) * c.delta <= 0:
                goal = current + int(round(c.delta * scale))     # nothing was held: the change again
            op = ops.get_op(c.op)
            goal = max(op.min, min(op.max, goal))
            if goal != current:
                label = base.labels[0] if base.labels else f"more {op.label.lower()}"
                moves.append(Move(c.op, goal - current, "add", c.target, label, f"going past the sweet spot "
                                  f"for {label}, as you insist", "followup", 0, rank, "followup"))
        notes = [] if moves else ["That is already as far as it goes."]
        return Draft(moves=moves, notes=notes, understood_any=True, followup=dict(followup.dialogue))

    # -- public ----------------------------------------------------------
    def styles(self) -> list[str]:
        """Named looks a session may start with."""
        return self.profile.styles()

    def plan(self, request: PlanRequest) -> Plan:
        """1..request.max_sub_goals sub-goals for ``request.message``, or understood=False.

        Follow-ups ("more", "too much", "same for the sky") resolve against
        ``request.dialogue`` first; a request that needs something the photo does not
        have (a place no mask can find) or refers to nothing yet gets a short question
        (``kind="clarify"`` with quick replies) instead of a guess.
        """
        vocab = self.vocab
        message = vocab.drop_dismissed(
            vocab.join_particles(vocab.strip_preamble(vocab.spell((request.message or "").strip()))))
        said = asked_why_rest(tokenize(message))
        if said:
            message = " ".join(said)       # "why is everything so yellow ugh": everything is so yellow
        # The judge's replan of a follow-up is still that follow-up: "more" keeps meaning the last
        # change. The person's own feedback ("no, cooler instead") replaces it.
        by_person = bool(request.feedback) and request.feedback_from != "judge"
        followup = read_followup(vocab, message, request) if not by_person else None
        if followup is None and not by_person:
            # "more, but keep her face as it is": the follow-up, with those places kept as they are
            asked, kept = split_protected(vocab, message)
            followup = read_followup(vocab, asked, request) if kept else None
            if followup is not None and followup.moves:
                followup.moves = protect_moves(vocab, followup.moves, kept)
        if followup is not None and followup.question:
            return self._asked(followup.question, followup.quick_replies, followup.labels, followup.dialogue or None)
        if followup is not None and followup.dialogue.get("move") == "insist":
            draft = self._insist(request, followup)
        elif followup is not None:
            draft = Draft(moves=followup.moves, notes=followup.notes, understood_any=True,
                          followup=followup.dialogue)
        else:
            draft = read_request(vocab, message, request, "message")
            draft = _on_the_last_place(vocab, message, draft, request.dialogue)
            one = _followup_in_a_clause(vocab, message, request) if not by_person and not (
                draft.moves or draft.unknown_places or draft.unknown_kept or draft.missing_things) else None
            if one is None and not by_person:
                one = _pulled_back_after_saying_why(vocab, message, request, draft)
            if one is not None:
                followup = one
                draft = Draft(moves=one.moves, notes=one.notes, understood_any=True, followup=one.dialogue)
            if (draft.followup or {}).get("move") == "reduce_look":
                # "too gritty now, ease off a bit": the complaint pulled the last change back, which is
                # what "ease off" says; that clause was done, not skipped
                draft.skipped = [c for c in draft.skipped if not find_phrases(tokenize(c), vocab.pull_back)]
        guessed = str((followup.dialogue if followup is not None else {}).get("guessed") or "")
        caused = caused_by_last(vocab, draft, request) \
            if draft.unknown_places and not any(m.target for m in draft.moves) else None
        if caused is not None:
            # "the lamp is totally blown out now" right after brightening: that change went too far
            draft = Draft(moves=caused.moves, notes=caused.notes, understood_any=True, followup=caused.dialogue)
        if draft.unknown_places and not any(m.target for m in draft.moves):
            # a thing named that no finder knows: ask, with the request kept for "the whole thing then";
            # guess only a general stand-in ("the floor" is the bottom) or when told to go ahead (a sign,
            # a boat, a lamp is no more "the subject" than anything else)
            unsure = draft.specific_place or not draft.place_stand_in
            # ("the gravel looks cold, warm it up" on a photo of gravel edge to edge: the thing is the photo)
            # (and "this gravel": pointed at, the stuff the photo is made of is still the photo)
            surface = (not draft.specific_place or draft.unknown_places[0].startswith("this ")) \
                and not draft.place_stand_in and _surface_stuff(draft.unknown_places[0]) and _one_surface(request)
            # ("sharpen the blood vessels": fine lines all over the photo, what finer detail changes anyway; not
            # one pointed at, "that line")
            pointed = draft.unknown_places[0].split()[0] in vocab.pointing_words
            fine = not surface and not pointed and _fine_detail(draft.unknown_places[0], draft.moves)
            dark = not (surface or fine or pointed) and _dark_place(vocab, message, draft.moves, draft.unknown_places)
            if draft.place_colour is None and not surface and not fine and not dark and not draft.place_stand_in \
                    and not draft.specific_place:
                # "the suit is screaming, calm the orange down": the one colour the request takes down is the
                # thing's colour, which finds it as a colour said of it does (not one wished for, "make the
                # collar more red", which the thing may not have)
                draft = replace(draft, place_colour=_asked_colour(self.vocab, draft.moves))
            if surface:
                draft, guessed = self._on_stand_in(draft, None, "the whole photo", "as it fills the frame")
            elif fine:
                draft, guessed = self._on_stand_in(draft, None, "the whole photo",
                                                   "as finer detail only changes fine lines like these")
            elif dark:
                draft = replace(draft, moves=_opened(self.vocab, draft.moves))
                draft, guessed = self._on_stand_in(draft, None, "the whole photo",
                                                   "as that only changes the darkest tones, where it is")
            elif draft.place_colour is not None and not draft.place_stand_in:
                # "the green mat is too bright", "her nose is very pink": the colour said of it finds it, where
                # the photo has that colour
                draft, guessed = self._on_coloured_place(draft)
            elif not draft.place_guess or (unsure and not vocab.says_go_ahead(message)):
                return self._unknown_place(draft)
            else:
                draft, guessed = self._on_guessed_place(draft)
            draft.followup = {**draft.followup, "guessed_place": True}
            # ("darken the wooden table but leave the cup alone": the background leaves the cup be, not skipped)
            kept_words = {k.split()[-1] for k in draft.unknown_kept}
            if kept_words:      # (nor "... the cup and saucer alone": the rest of the thing kept)
                kept_words |= {"alone", "untouched"}
            draft.skipped = [c for c in draft.skipped if not kept_words & set(tokenize(c))]
        if draft.unknown_kept and draft.moves and not any(m.target for m in draft.moves) \
                and not vocab.says_go_ahead(message):
            # a change on the whole photo would move the thing to keep; one on a place found ("brighten the cat
            # but not the keyboard"), or on the place a thing stands for ("darken the wooden table but leave the
            # cup alone": the background), leaves it be
            return self._unknown_kept(draft)
        notes = list(draft.notes)
        moves = list(draft.moves)
        if followup is None and request.dialogue is not None:
            moves = _corrected(message, moves, request.dialogue.base_edit(), notes, vocab.reverse)
            if any(n.startswith("In place of") for n in notes):
                # ("no not that, the other way - warm it": the way was said, and done)
                draft.skipped = [c for c in draft.skipped if not find_phrases(tokenize(c), vocab.reverse)]
        if followup is None and _NEUTRAL_WISHES.has(tokenize(message)):
            moves = _neutralised(vocab, moves)
            # (the wish was done: "it should be white" is not skipped)
            draft.skipped = [c for c in draft.skipped if not _NEUTRAL_WISHES.has(tokenize(c))]

        style_moves = self._style_moves(request, notes)
        moves = style_moves + moves
        replan_extra = self._replan(request, moves, notes, read_words=followup is None) \
            if (request.feedback or request.diagnoses) else []
        if request.feedback_from == "judge":
            # The judge's sentence never overrules the person's words: a correction read from it
            # that pulls an op against what the message asked for is dropped, not a conflict.
            asked = {(m.key, m.value > 0) for m in moves if m.source == "message" and m.mode == "add" and m.value}
            replan_extra = [m for m in replan_extra if m.source != "feedback" or not m.value
                            or (m.key, m.value < 0) not in asked]
            replan_extra = _on_the_requests_places(replan_extra, moves)
        moves += replan_extra
        if any(n.startswith(_MOVED_NOTE) for n in notes):
            draft.said = [n for n in draft.said if PLACED_AS_SAID not in n]     # the old place's note

        if not moves and draft.missing_things:
            return self._missing_thing(draft)
        if not moves:
            return self._not_understood(draft, notes, message)

        moves = _tinted_where_absent(vocab, moves, request.image_stats, notes)
        moves = _tone_monochrome(vocab, moves, request.state, notes)
        conflict_notes: list[str] = []
        merged = _not_past_original(_merge(moves, request.state, conflict_notes), request.state)
        capped_notes: list[str] = []
        past: list[str] = []
        if not _insisted(vocab, message):
            merged = _cap_to_sweet_spots(self.profile, merged, request.state, capped_notes, vocab, past)
        if past:      # (the executor lets that step past the sweet spot through: agent/planning/limits.py)
            draft.followup = {**draft.followup, "past_edge": sorted(set(past))}
        limited = _limit(merged, max(1, int(request.max_sub_goals)), notes)
        pairs: list[tuple[Move, SubGoal]] = []
        for i, m in enumerate(limited, 1):
            goal = SubGoal.from_dict({
                "op": m.op, "value": m.value, "mode": m.mode, "id": f"sg{i}", "description": "",
                # crop, rotation, vignette and grain act on the whole frame, never inside a mask
                "target": None if m.op in WHOLE_FRAME_OPS else m.target,
            })
            goal.description = f"{m.label}: {goal.summary()}"[:200]
            pairs.append((m, goal))
        goals = [g for _, g in pairs]
        self._style_respect_notes(request, goals, notes)
        _sweet_spot_notes(self.profile, goals, request.state, notes)
        labels = list(dict.fromkeys(m.label for m, _ in pairs if m.source in ("message", "followup") and m.label))
        intents = list(dict.fromkeys(m.intent for m, _ in pairs if m.intent and m.intent != "followup"))
        if followup is not None:
            labels = list(followup.labels) or labels
        if not goals:
            reply = " ".join(conflict_notes + capped_notes + notes) or \
                "Nothing to change: those settings are already where you asked."
            return Plan(sub_goals=[], reply=reply, understood=False, notes=conflict_notes + notes, source=self.name)
        extra = ([guessed] if guessed else []) + list(draft.said) + list(capped_notes)
        if draft.skipped:
            extra.append("I skipped \u201c" + "\u201d, \u201c".join(s[:40] for s in draft.skipped[:2])
                         + "\u201d: I can't do that yet.")
        replies = []
        if guessed:
            what = (labels or ["the change"])[0]
            replies = ["Undo", f"{what.capitalize()} overall"]
            if "selection" in self.vocab.targets:
                replies.append(f"{what.capitalize()} on the selection")
        return Plan(sub_goals=goals, reply=_reply(pairs, conflict_notes, extra),
                    understood=True, notes=conflict_notes + notes + capped_notes, source=self.name,
                    labels=labels, intents=intents, dialogue=dict(draft.followup), quick_replies=replies,
                    skipped=[s[:80] for s in draft.skipped])

    def _on_guessed_place(self, draft: Draft) -> tuple[Draft, str]:
        """Put whole-image moves on the best guess for a place no mask knows, and say so."""
        spec, label = self.vocab.place(draft.place_guess)
        return self._on_stand_in(draft, spec, label, "my best guess for it")

    def _on_coloured_place(self, draft: Draft) -> tuple[Draft, str]:
        """Put whole-image moves on the photo's own shade of the colour said of a place no mask knows (a
        band's own op becomes the plain op there: "brighten the green mat" lifts the mat, whatever hue its
        green is), and say so."""
        band, word = draft.place_colour
        spec = normalize_mask_spec({"type": "shade", "band": band})
        return self._on_stand_in(draft, spec, f"the {word} parts of the photo", "where its colour is",
                                 plain=self.vocab.band_op_plain)

    def _on_stand_in(self, draft: Draft, spec: dict | None, label: str, why: str,
                     plain: Mapping[str, str] | None = None) -> tuple[Draft, str]:
        """The request's own whole-image moves on ``spec`` (None: the whole photo; ops renamed by ``plain``); a
        step back of the last change stays where that change was. With the reply's note on where they went and
        ``why``."""
        plain = plain or {}
        moves = [replace(m, op=plain.get(m.op, m.op), target=spec, phrase=m.phrase.replace("the image", label))
                 if m.target is None and m.source != "followup" else m for m in draft.moves]
        return replace(draft, moves=moves), guessed_place_note(self.vocab, draft.unknown_places[0], label, why)

    def _missing_thing(self, draft: Draft) -> Plan:
        """"darken the water" on a photo with no water: say so, change nothing, offer what can be done."""
        thing = draft.missing_things[0]
        what = (draft.missing_labels or ["the change"])[0]
        replies = [f"{what.capitalize()} overall"]
        tail = ""
        if "selection" in self.vocab.targets:
            replies.insert(0, f"{what.capitalize()} on the selection")
            tail = " Paint over it to select it, then pick \u201con the selection\u201d."
        reply = (f"I can't find {thing} in this photo, so I haven't changed anything. "
                 f"Should I {_make_it(what)} overall instead?{tail}")
        return self._asked(reply, replies, list(draft.missing_labels[:1]))

    def _asked(self, reply: str, replies: list[str], labels: list[str], dialogue: dict | None = None) -> Plan:
        """A question back to the person, nothing changed: the clarify plan every "I can't find" path makes."""
        return Plan(sub_goals=[], reply=reply, understood=False, source=self.name, kind="clarify",
                    quick_replies=replies, labels=labels, dialogue=dialogue or {})

    @staticmethod
    def _asked_labels(draft: Draft) -> list[str]:
        """What the request asked, in words, for the question's reply and its quick replies."""
        return list(dict.fromkeys(m.label for m in draft.moves if m.label)) or ["the change"]

    def _unknown_kept(self, draft: Draft) -> Plan:
        """"brighten it but not the lamp" with no way to find a lamp: ask, change nothing; the person can
        paint it and keep the selection, or have the change everywhere."""
        place = draft.unknown_kept[0]
        labels = self._asked_labels(draft)
        what = labels[0]
        replies = [f"{what.capitalize()} everywhere"]
        paint = ""
        if "selection" in self.vocab.targets:
            replies.insert(0, f"{what.capitalize()}, but keep the selection as it is")
            paint = " Paint over it and say “keep the selection as it is” — or"
        reply = (f"I can't find “{place}” by myself to keep it as it is, so I haven't changed anything "
                 f"yet.{paint or ' Or'} should I {_make_it(what)} everywhere?")
        return self._asked(reply, replies, labels)

    def _unknown_place(self, draft: Draft) -> Plan:
        """"brighten the lamp" with no way to find a lamp: ask, change nothing, and keep the request so
        "the whole thing then", "on the selection" or "go ahead" finishes it."""
        place = draft.unknown_places[0]
        labels = self._asked_labels(draft)
        what = labels[0]
        replies = [f"{what.capitalize()} overall"]
        if "selection" in self.vocab.targets:
            replies.append(f"{what.capitalize()} on the selection")
        if draft.place_guess:
            replies.append("Go ahead and guess")
        reply = (f"I can't find \u201c{place}\u201d by myself, so I haven't changed anything yet. "
                 f"Click it or paint over it and say \u201con the selection\u201d \u2014 or should I "
                 f"{_make_it(what)} overall?")
        pending = [{"op": m.op, "value": m.value, "mode": m.mode} for m in draft.moves
                   if m.target is None and (m.value or m.mode == "set")]
        return self._asked(reply, replies, labels, {"move": "not_found", "unmet": pending,
                                                    "guess": draft.place_guess, "place": place} if pending else None)

    # -- parts -------------------------------------------------------------
    def _style_moves(self, request: PlanRequest, notes: list[str]) -> list[Move]:
        if not request.style or request.turn != 1:
            return []
        try:
            settings = self.profile.style(request.style)
        except ProfileError:
            notes.append(f"Unknown style {request.style!r}; known styles: {', '.join(self.styles())}.")
            return []
        label = self._style_label(request.style)
        return [Move(op, v, "set", None, f"{label} style", f"applying the {label} style", "style", -1, rank)
                for rank, (op, v) in enumerate(settings.items())]

    def _style_label(self, name: str) -> str:
        key = name.strip().lower().replace(" ", "_")
        entry = self.vocab.styles.get(key) or {}
        return str(entry.get("label") or name.replace("_", " ")).lower()

    def _style_respect_notes(self, request: PlanRequest, goals: list[SubGoal], notes: list[str]) -> None:
        if not request.style or request.turn == 1:
            return
        try:
            settings = self.profile.style(request.style)
        except ProfileError:
            return
        label = self._style_label(request.style)
        for g in goals:
            look = settings.get(g.op)
            if g.target is None and look and g.mode == "add" and g.value * look < 0:
                notes.append(f"This moves {g.op} against the session's {label} style ({g.op} {look:+d}).")

    def _replan(self, request: PlanRequest, moves: list[Move], notes: list[str], read_words: bool = True) -> list[Move]:
        """Corrections for a replan: iteration signals for diagnoses, or the person's feedback.

        ``read_words`` False (a follow-up replanned by the judge): the judge's sentence is not
        read as a new request, so "same again but less" is not undone by the words it measured.
        """
        extra: list[Move] = []
        diagnoses = list(request.diagnoses)
        if request.feedback and request.feedback_from == "person" and not request.diagnoses:
            return self._person_feedback(request, moves, notes)
        if request.feedback and not (request.diagnoses or request.earlier_diagnoses) and read_words:
            # A judge text without diagnoses, or an error's.
            fb = read_request(self.vocab, request.feedback, request, "feedback", order0=10_000)
            extra += fb.moves
            if not fb.moves:
                text = " ".join(tokenize(request.feedback))
                for name, words in self.profile.iteration_signal_words().items():
                    if any(re.search(rf"(?<![a-z']){re.escape(' '.join(tokenize(w)))}(?![a-z'])", text) for w in words):
                        diagnoses.append(name)
        applied = False
        # the diagnoses this turn's earlier replans answered are answered again (the plan is made from the
        # request each time), and one said again by a later attempt scales the plan again
        diagnoses = list(request.earlier_diagnoses) + diagnoses
        times = {d: diagnoses.count(d) for d in diagnoses}
        for i, diagnosis in enumerate(dict.fromkeys(diagnoses)):
            signal = self.profile.iteration_signal(diagnosis)
            if signal is None:
                notes.append(f"No known fix for {diagnosis!r}.")
                continue
            applied = True
            # "too_weak:temperature": the judge names the op it measured; scale only that op.
            scope = diagnosis.split(":", 1)[1].strip() if ":" in diagnosis else ""
            scope = scope if scope in ops.OPS else ""
            if signal.scale_plan is not None:
                factor = signal.scale_plan ** times[diagnosis]
                for m in moves:
                    if scope and m.op != scope:
                        continue
                    if m.source in ("message", "relative") and m.mode == "add":
                        m.value = int(round(m.value * factor)) or int(math.copysign(1, m.value))
                    elif m.source == "followup" and m.mode == "set":
                        # a take-back that went too far ("too orange now" went past the original): less of the
                        # way back from where it is now
                        now = request.state.value(m.op, m.target) if m.target else request.state.value(m.op)
                        m.value = int(round(now + (m.value - now) * factor))
                        m.phrase = re.sub(r"\d+%", lambda pct: f"{round(int(pct.group()[:-1]) * factor)}%",
                                          m.phrase)
                notes.append(f"Replanning for {signal.diagnosis.replace('_', ' ')}"
                             f"{' of ' + scope if scope else ''}: planned amounts \u00d7{factor:.3g}.")
            phrase = f"correcting {signal.diagnosis.replace('_', ' ')}"
            for rank, adj in enumerate(signal.adjust):
                extra.append(Move(adj.op, adj.value, "add", adj.target, signal.diagnosis.replace("_", " "),
                                  phrase, "signal", 20_000 + i, rank))
            if signal.adjust:
                notes.append(f"Replanning for {signal.diagnosis.replace('_', ' ')}: "
                             + ", ".join(f"{a.op} {a.value:+d}" for a in signal.adjust) + ".")
        if not applied and not extra and (request.diagnoses or request.feedback):
            notes.append("I could not turn the feedback into a concrete change; keeping the plan.")
        return extra

    def _person_feedback(self, request: PlanRequest, moves: list[Move], notes: list[str]) -> list[Move]:
        """The person's feedback on the plan under review, read against that plan (``moves``, changed in place).

        A complaint against a planned move ("too dark" after a darkening) pulls that move back, never
        past nothing, so the request is never reversed; the same way again ("brighter still") pushes it;
        "less", "too much" or a magnitude alone ("only a little") scale the whole plan down, "more" up;
        "the other way" reverses it. Anything else the feedback asks ("and a bit warmer", "cooler
        instead") comes back as moves of its own; a request against a planned move with "instead"
        replaces it. Returns those extra moves.
        """
        text = str(request.feedback or "").split(":", 1)[-1] if str(request.feedback or "").startswith(
            "The person asked for a different plan:") else str(request.feedback or "")
        # each replan of the turn in order ("too orange" | "and a bit brighter"): the later one is read against
        # the plan the earlier made, not against the first plan again
        parts = [p.strip() for p in text.split(REPLANS_JOINED) if p.strip()] or [text]
        extra: list[Move] = []
        for k, part in enumerate(parts):
            if k:
                moves.extend(replace(m, source="message") for m in extra)
            extra = self._one_feedback(request, moves, notes, part)
        notes[:] = list(dict.fromkeys(notes))
        return extra

    def _one_feedback(self, request: PlanRequest, moves: list[Move], notes: list[str], text: str) -> list[Move]:
        """One replan's feedback, read against ``moves`` (see :meth:`_person_feedback`)."""
        vocab = self.vocab
        tokens = tokenize(text)
        planned = [m for m in moves if m.source in ("message", "relative", "style") and m.mode == "add" and m.value]
        fb = read_request(vocab, text, request, "feedback", order0=10_000)
        instead = "instead" in tokens or bool(find_phrases(tokens, vocab.reverse) and fb.moves)
        pull = find_phrases(tokens, vocab.pull_back) + find_phrases(tokens, vocab.fractions)
        more = find_phrases(tokens, vocab.repeat)
        # how much is meant, said besides "a bit less" / "a bit more" (not the "a bit" inside them: "a bit less"
        # keeps most of the plan, "too dark, only a little" a little of it)
        inside = {i for pos, n, _ in pull + more for i in range(pos, pos + n)}
        mags = [vocab.magnitudes[p.key] for p in read_pieces(vocab, tokens) if p.category == "magnitude"
                and not set(range(p.pos, p.pos + len(p.text.split()))) <= inside]
        less_by = min(0.6, max(0.15, 0.4 * (mags[-1] if mags else 1.0)))

        def scaled(m: Move, factor: float) -> None:
            m.value = int(round(m.value * factor)) or int(math.copysign(1, m.value))

        places = [p.key for p in read_pieces(vocab, tokens) if p.category == "target"]
        if places and not fb.moves and planned and not (pull or more or find_phrases(tokens, vocab.reverse)):
            # "only the top left corner really": the same plan, on the place the feedback names
            spec, where = vocab.place(places[0])
            for m in planned:
                if ops.get_op(m.op).stage not in ("geometry", "finishing"):
                    m.target, m.phrase = spec, f"{m.phrase.split(' ', 1)[0]} {where}"
            notes.append(f"{_MOVED_NOTE}{where} as you said.")
            return []
        extra, touched, changed = [], False, set()
        by_key = {m.key: m for m in planned}
        # "too crunchy" after a plan that added clarity: a complaint against the plan pulls its moves back; the
        # complaint's other fixes (sharpening taken below nothing) would reverse the request, so they are not added
        against = {f.intent for f in fb.moves if f.mode == "add" and f.value and not instead
                   and (m := by_key.get(f.key)) is not None and f.value * m.value < 0}
        for f in fb.moves:
            m = by_key.get(f.key) if f.mode == "add" and f.value else None
            if m is None and f.intent in against:
                continue
            if m is None or (instead and f.value * m.value < 0):
                extra.append(f)                  # "and warmer", "cooler instead": a move of its own
                continue
            touched = True
            changed.add(m.key)
            if f.value * m.value < 0:
                scaled(m, less_by)               # "too dark" after darkening: less of it, never the other way
            else:
                scaled(m, 1.0 + min(1.0, 0.6 * (mags[-1] if mags else 1.0)))   # "brighter still"
        if extra and instead:
            gone = {f.key for f in extra}
            moves[:] = [m for m in moves if m.key not in gone]
        if (touched or extra) and pull and not instead and not more:
            # "too much, it looks fake. go softer on the sky": the "too much" scales the rest of the plan down
            # too, and what the complaint adds goes where the plan works (not a whole-photo change for a sky plan)
            for m in planned:
                if m.key not in changed:
                    scaled(m, less_by)
            touched = True
            # (the complaint said with it is why there was too much, not more to do: "it looks fake")
            extra = _on_the_requests_places([f for f in extra if not f.complaint], moves)
        if touched or extra:
            if touched:
                notes.append("Changed the plan as you said.")
            return extra
        if find_phrases(tokens, vocab.reverse):
            for m in planned:
                m.value, m.phrase = -m.value, "going the other way"
            notes.append("The other way, as you said.")
        elif pull or (mags and not more and mags[-1] < 1.0):
            for m in planned:
                scaled(m, less_by)
            notes.append("A gentler version of the plan.")
        elif more:
            for m in planned:
                scaled(m, 1.6)
            notes.append("A stronger version of the plan.")
        else:
            notes.append("I could not turn the feedback into a concrete change; keeping the plan.")
        return []

    def _not_understood(self, draft: Draft, notes: list[str], message: str = "") -> Plan:
        can = self.vocab.capabilities()
        if not draft.understood_any and not draft.objects and says_vague_ask(tokenize(message)):
            # "can you do something about it", "change it up a bit": which change is not said; ask
            return self._asked("What should I change? Say what bothers you (\u201ctoo dark\u201d, \u201ctoo "
                               "yellow\u201d, \u201cthe sky is dull\u201d) or what you'd like (\u201cwarmer\u201d, "
                               "\u201cpunchier\u201d); \u201cmake it better\u201d balances the photo for you.",
                               ["Make it better", "Make it pop", "Brighter", "Warmer"], [])
        if draft.rollback:
            reply = ("Say \u201cundo\u201d on its own to step back one version, \u201cgo back two steps\u201d, "
                     "\u201cback to before the warmth\u201d or \u201cstart over\u201d; every earlier version comes "
                     "back exactly.")
        elif draft.relative_without_stats:
            reply = f"I need to measure the photo to {draft.relative_without_stats[0]}, and no image statistics came with the request."
        elif draft.objects:
            reply = f"I can't add, remove or reshape things in the picture; I adjust tone and colour. I can: {can}"
        elif draft.bare_targets and not draft.understood_any:
            place = draft.bare_targets[0]
            reply = (f"What should I do with {place}? For example \u201cmake {place} darker\u201d, "
                     f"\u201cwarmer\u201d or \u201cless saturated\u201d.")
        elif draft.understood_any and notes:
            reply = " ".join(notes)
        else:
            # not understood: said honestly, and asked what to change instead (with answers to tap)
            reply = f"I don't know how to do that yet. What would you like to change? I can: {can}"
            return Plan(sub_goals=[], reply=reply, understood=False, notes=notes, source=self.name,
                        quick_replies=list(self.vocab.not_understood_replies))
        return Plan(sub_goals=[], reply=reply, understood=False, notes=notes, source=self.name)
