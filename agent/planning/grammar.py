"""The embedded planner's grammar: clauses, intents with their modifiers, and the moves they ask for.

Small on purpose: the words live in the profile (``agent.conversation.vocabulary``);
this module only knows how modifiers attach to the quality they modify, how
clauses join, and how an intent becomes op moves on the current EditState.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping

from agent.planning.base import PlanRequest
from agent.planning.moves import Draft, Move, onto_mask, protect_moves
from agent.conversation.clauses import (COLOUR_OF_A_THING, DETERMINERS, LOCATING, NAMING_DETERMINERS, PERSONS, PLACE_ENDS, POINTING_BACK,
                                        QUALITIES, SIZES, WISH_OPENERS, Clause, around, avoided_degree, colour_of,
                                        guess_place, kind_of_photo, named_places, names_a_thing, only_qualities, read_complaints,
                                        read_evened, read_wished_casts, said_as_subject, says_evening, sizes_in_names,
                                        split_clauses, stand_in, trailing_also, unknown_words, wished_after)
from agent.conversation.vocabulary import FILLER, MAX_MESSAGE_CHARS, PLACE_JOIN, SPOT_JOIN, Intent, Piece, Vocabulary, read_pieces
from agent.conversation.words import PRAISE_LINKS, SEPARATORS, cast_said_of_a_neutral_thing, effect_said, find_phrases, tells_how_taken, tokenize, word_lists
from pipeline import ops
from pipeline.masks import normalize_mask_spec
from pipeline.state import EditState
from profiles import Profile

#: Exposure op: 100 = +2 EV (pipeline/ops.py), so one stop is 50 units.
UNITS_PER_EV = 50.0
#: "less X" after X was added never removes less than this (a visible step).
MIN_TONE_DOWN = 6

# ---------------------------------------------------------------------------
# Intents as used in a clause
# ---------------------------------------------------------------------------

@dataclass
class Use:
    """One intent as used in a clause, with everything that modifies it."""

    intent: Intent
    negated: bool = False                # "less", "too", "not so"
    avoid: bool = False                  # "don't"
    reset: bool = False                  # "reset the", "remove the"
    scale: float = 1.0                   # magnitude words
    number: float | None = None          # explicit value
    set_mode: bool = False               # "set X to N"
    targets: list[str] = field(default_factory=list)
    bands: list[str] = field(default_factory=list)
    pos: int = 0
    problem: str = ""                    # the complaint this use fixes ("murky"): never negated
    fixes: bool = False                  # said as a problem ("murky", "looks flat"), not as a wish
    stated: bool = False                 # said of how the photo is ("it reads a little warm to me")


def _nearest(p: Piece, anchors: list[Piece], *, prefer_after: bool = True) -> Piece | None:
    """The anchor a modifier belongs to: the next one in the clause, else the previous one."""
    after = [a for a in anchors if a.pos > p.pos]
    before = [a for a in anchors if a.pos < p.pos]
    if prefer_after and after:
        return after[0]
    if before:
        return before[-1]
    return after[0] if after else None


def _op_intent(op_name: str, way: int = 0) -> Intent:
    """An op named directly ("temperature +10", "reset the tint") as a one-op intent; ``way`` (+1/-1) when it was
    said with the way it goes ("exposure down")."""
    o = ops.get_op(op_name)
    label = o.label.lower()
    doing = f"turning {label} {'up' if way > 0 else 'down'} on {{where}}" if way else f"changing {label} of {{where}}"
    return Intent(name=f"op:{o.name}", label=label, kind="op", ops=((o.name, 20 * (way or 1)),), doing=doing)


def _setting_name(vocab: Vocabulary, text: str) -> str | None:
    """The op a place's words name as a setting ("the shadows": shadows), or None."""
    words = text.split()
    return vocab.setting_ops.get(" ".join(words[1:] if words and words[0] in DETERMINERS else words))


def _setting_way(vocab: Vocabulary, pieces: list[Piece], named: Piece) -> int:
    """The way a setting named by ``named`` is said to go: +1, -1, or 0 when no way is said ("exposure down",
    "shadows up a bit", "saturation -15"; "the warmth up top" says a place)."""
    at = next((i for i, p in enumerate(pieces) if p.pos == named.pos), None)
    if at is None:
        return 0
    for i in range(at + 1, len(pieces)):
        p = pieces[i]
        if p.category == "number" and p.text[:1] in "+-" and i == at + 1:
            return 1 if p.key > 0 else -1
        if p.text in vocab.setting_ways:
            after = pieces[i + 1].text if i + 1 < len(pieces) else ""
            return 0 if after in vocab.setting_ways_not_before else vocab.setting_ways[p.text]
        if p.category not in ("number", "magnitude"):
            return 0
    return 0


def _settings_with_a_way(vocab: Vocabulary, clause: Clause, anchors: list[Piece], uses: dict[int, list[Use]]) -> None:
    """"exposure down", "warmth -10", "shadows up a bit", "saturation down 15": a setting named with the way it
    goes is that op, that way (the word alone reads as one way: "exposure" is brighter, "warmth" warmer, so
    "exposure down" brightened and "warmth -10" said it was warming). The way is the first of the particles
    after it (past numbers and how-much words), or the sign of a number said right after it."""
    for a in anchors:
        op = _setting_name(vocab, a.text)
        if op is None or a.category not in ("intent", "op") or not uses.get(a.pos):
            continue
        way = _setting_way(vocab, clause.pieces, a)
        if not way:
            continue
        intent = _op_intent(op, way)
        for use in uses[a.pos]:
            use.intent, use.negated = intent, False
            if use.number is not None:
                use.number = abs(use.number) * way


def _uses(vocab: Vocabulary, clause: Clause, after_complaint: bool = False, wished: bool = False) -> list[Use]:
    clause = read_wished_casts(vocab, read_complaints(vocab, clause, after_complaint), wished)
    anchors = [a for a in clause.of("intent", "fix", "op", "problem") if not _describes(vocab, clause, a)]
    # "shadows up", "highlights -30": a place that is also a setting, said with a way, is the setting
    settings = [p for p in clause.of("target") if _setting_name(vocab, p.text) and _setting_way(vocab, clause.pieces, p)]
    anchors = sorted(anchors + [replace(p, category="op", key=_setting_name(vocab, p.text)) for p in settings],
                     key=lambda a: a.pos)
    # "cool the temperature slightly", "warm up the white balance": a setting named beside a quality that moves
    # it is what the quality acts on, not a second request
    moved = {op for a in anchors if a.category == "intent" for op, _ in vocab.intents[a.key].ops}
    anchors = [a for a in anchors if not (a.category == "op" and a.key in moved)]
    # ... as is a setting's own name read as a quality ("darken the exposure", "desaturate the saturation": the
    # word alone reads as more of it) beside another quality that moves it, said with no way of its own
    named = {a.pos for a in anchors if a.category == "intent" and _setting_name(vocab, a.text) is not None
             and not _setting_way(vocab, clause.pieces, a)}
    if named:
        others = {op for a in anchors if a.category == "intent" and a.pos not in named
                  for op, _ in vocab.intents[a.key].ops}
        anchors = [a for a in anchors if not (a.pos in named and _setting_name(vocab, a.text) in others)]
    targets = [p.key for p in clause.of("target") if p not in settings]
    bands = [p.key for p in clause.of("band")]
    uses: dict[int, list[Use]] = {}
    for a in anchors:
        if a.category == "problem":
            problem = vocab.problems[a.key]
            where = targets or ([problem.target] if problem.target else [])
            if problem.band and vocab.object_fix and (targets or names_a_thing(vocab, clause, a.pos)):
                # "the suit is too orange": less of that colour there, not a cast on the whole photo
                uses[a.pos] = [Use(vocab.intents[vocab.object_fix], pos=a.pos, problem=problem.name,
                                   targets=list(targets), bands=[problem.band])]
                continue
            uses[a.pos] = [Use(vocab.intents[f], pos=a.pos, scale=problem.scale, problem=problem.name,
                               targets=list(where), bands=list(bands)) for f in problem.fixes]
        else:
            intent = vocab.intents[a.key] if a.category != "op" else _op_intent(a.key)
            uses[a.pos] = [Use(intent, pos=a.pos, targets=list(targets), bands=list(bands),
                               fixes=a.category == "fix")]
    for i, p in enumerate(clause.pieces):
        if p.category == "reduce" and trailing_also(vocab, clause.pieces, i):
            continue                     # "bit more colour too": as well, not too much
        if p.category in ("magnitude", "reduce", "avoid", "protect", "number", "set", "reset", "rollback"):
            anchor = _nearest(p, anchors, prefer_after=p.category != "number")
            if anchor is None:
                continue
            for use in uses[anchor.pos]:
                if p.category == "magnitude":
                    use.scale = _damped(vocab, use, vocab.magnitudes[p.key])
                elif p.category == "reduce" and anchor.category not in ("fix", "problem"):
                    use.negated = True   # "too blurry" still means sharper: fix words are never negated
                elif p.category in ("avoid", "protect"):
                    use.avoid = True     # "don't make it darker", "keep the brightness"
                elif p.category == "number" and not use.problem:
                    use.number = p.key
                elif p.category == "set":
                    use.set_mode = True
                elif p.category in ("reset", "rollback") and not use.problem:
                    use.reset = True
    # "not colder. warmer!": a bare "not" right before a quality leaves it alone ("not warm enough" does not)
    pieces = clause.pieces
    for i, p in enumerate(pieces[:-1]):
        quality = pieces[i + 1]
        if p.text in vocab.not_before and quality.category == "intent" and quality.pos == p.pos + 1 \
                and not (i + 2 < len(pieces) and pieces[i + 2].text in vocab.not_unless_after):
            for use in uses[quality.pos]:
                use.avoid = True
    _settings_with_a_way(vocab, clause, anchors, uses)
    # "set contrast to 20" / "contrast = 20": a number after "to" or "=" is absolute.
    for i, p in enumerate(clause.pieces):
        if p.category == "number" and i and clause.pieces[i - 1].text in ("to", "at", "="):
            anchor = _nearest(p, anchors, prefer_after=False)
            if anchor is not None:
                for use in uses[anchor.pos]:
                    use.set_mode = True
    return [u for a in anchors for u in uses[a.pos]]


def _hue_direction(band: str, goal: str) -> int:
    """+1 when ``goal`` lies ahead of ``band`` on the hue circle (red, orange, yellow, green,
    aqua, blue, purple, magenta, red...), -1 when behind, 0 for the same band.

    Positive hue_<band> rotates a band towards the next band's hue (pipeline/adjust.py).
    """
    order = list(ops.BANDS)
    steps = (order.index(goal) - order.index(band)) % len(order)
    return 0 if not steps else (1 if steps <= len(order) // 2 else -1)


def _towards_uses(vocab: Vocabulary, clause: Clause, notes: list[str]) -> list[Use] | None:
    """"shift/push/move X towards Y" where Y is a colour; None when the clause is not one.

    X a band ("the oranges"): rotate that band's hue towards Y. X anything else (the tint,
    the white balance, a target such as the shadows, or nothing): a colour cast towards Y,
    from the profile's colour_shifts.casts, limited to the op named ("the tint") when it
    has one.
    """
    marks = clause.of("towards")
    if not marks:
        return None
    at = marks[0].pos
    goals = [p for p in clause.of("band") if p.pos > at]
    if not goals:
        return None
    goal = goals[0].key
    said = goals[0].text.removeprefix("the ")    # "teal", "yellow": the person's word in the reply
    subjects = [p.key for p in clause.of("band") if p.pos < at]
    named = [p.key for p in clause.of("op") if p.pos < at]
    for op_name in named:                       # "shift the orange hue towards yellow"
        for band in ops.BANDS:
            if op_name.endswith(f"_{band}"):
                subjects.append(band)
    targets = [p.key for p in clause.of("target")]
    mags = clause.of("magnitude")
    numbers = clause.of("number")
    base = Use(intent=None, avoid=bool(clause.of("avoid")),  # type: ignore[arg-type]
               scale=vocab.magnitudes[mags[0].key] if mags else 1.0,
               number=numbers[0].key if numbers else None, targets=targets, pos=at)
    in_where = " in {where}" if targets else ""
    uses: list[Use] = []
    if subjects:
        for band in dict.fromkeys(subjects):
            sign = _hue_direction(band, goal)
            if not sign or not vocab.shift_hue:
                notes.append(f"The {band}s are already {said}; nothing to shift.")
                continue
            intent = Intent(name=f"hue:{band}", label=f"{band}s towards {said}", kind="colour",
                            ops=((f"hue_{band}", sign * vocab.shift_hue),),
                            doing=f"shifting the {band}s{in_where} towards {said}")
            uses.append(replace(base, intent=intent))
        return uses
    cast = vocab.casts.get(goal)
    if not cast:
        return None
    only = [(op, v) for op, v in cast if op in named]
    intent = Intent(name=f"cast:{goal}", label=f"towards {said}", kind="direct", ops=tuple(only or cast),
                    doing=f"shifting {{where}} towards {said}")
    return [replace(base, intent=intent)]


def _where(vocab: Vocabulary, target_name: str | None, band: str | None, spec: Mapping | None) -> str:
    band_text = f"the {band}s" if band else ""
    if target_name:
        place = _target_label(vocab, target_name)
        return f"{band_text} in {place}" if band else place
    return band_text or "the image"


def _band_moves(vocab: Vocabulary, values: list[tuple[str, int]], band: str) -> list[tuple[str, int]] | None:
    """Remap saturation/vibrance/exposure onto a band's ops; None when nothing maps."""
    mapped: dict[str, int] = {}
    for op, v in values:
        pattern = vocab.band_ops.get(op)
        if pattern:
            name = pattern.format(band=band)
            if abs(v) > abs(mapped.get(name, 0)):
                mapped[name] = v
    return list(mapped.items()) or None


def _intent_moves(vocab: Vocabulary, use: Use, state: EditState, order: int, source: str,
                  notes: list[str]) -> list[Move]:
    """Turn one intent use into moves, for each of its targets (or the whole image)."""
    out: list[Move] = []
    for target_name in use.targets or [None]:
        for band in use.bands or [None]:
            out += _moves_at(vocab, use, target_name, band, state, order, source, notes)
    return out


def _locate(vocab: Vocabulary, values: list[tuple[str, int]], mode: str, target_name: str | None,
            band: str | None) -> tuple[list[tuple[str, int]], dict | None]:
    """Where moves land: band ops for a named band, else the target's mask (and the band's)."""
    spec = _target_spec(vocab, target_name) if target_name else None
    if band:
        mapped = _band_moves(vocab, values, band) if mode == "add" else None
        if mapped:
            return mapped, spec
        band_mask = {"type": "color", "band": band}
        spec = band_mask if spec is None else {"type": "intersect", "masks": [spec, band_mask]}
    return values, spec




def _qualified_place(vocab: Vocabulary, targets: list[str]) -> str | None:
    """"the background on the right", "the sky up top": a place and the part of the frame it is said to be
    in are one place, where both are (its name joins the two); None for any other set of places."""
    if len(targets) != 2:
        return None
    corner = vocab.corner(targets)
    if corner is not None:
        return corner           # "the bottom on the right": the bottom right
    parts = [t for t in targets if vocab.is_frame_part(t)]
    if len(parts) != 1:
        return None
    other = next(t for t in targets if t != parts[0])
    return f"{other}{PLACE_JOIN}{parts[0]}"


def _target_spec(vocab: Vocabulary, name: str) -> dict:
    if SPOT_JOIN in name:
        return vocab.place(name)[0]
    if PLACE_JOIN in name:
        return {"type": "intersect", "masks": [dict(vocab.targets[n]) for n in name.split(PLACE_JOIN)]}
    return dict(vocab.targets[name])


def _target_label(vocab: Vocabulary, name: str) -> str:
    return vocab.place(name)[1]


def _placed_in_frame(vocab: Vocabulary, targets: list[str], named: list) -> bool:
    """Whether a thing named is located by a part of the frame (a side, a half, a corner: a gradient or an
    off-centre radial mask) and is not one small particular thing ("that knob in the middle", "the little
    nose on the left" are asked about)."""
    # ("the grey wall behind her", "the trees in the background": the background holds it too)
    if not all(vocab.is_frame_part(t) or t == "background" for t in targets):
        return False
    return not any(p.small or p.text.split()[0] in PERSONS for p in named)


def _spot_tone(vocab: Vocabulary, thing: str) -> str | None:
    """How a thing's name says it stands out: a colour ("the orange one", "the pinkish building") before a
    tone ("the round bright crater", "the dark spot"); None when its name says neither."""
    words = thing.split()[1:]
    colours = [vocab.colour_words.get(w.removesuffix("ish")) or vocab.colour_words.get(w.removesuffix("y"))
               for w in words]
    return next((c for c in colours if c), None) or next((vocab.spot_tones[w] for w in words
                                                          if w in vocab.spot_tones), None)


def _placing(vocab: Vocabulary, targets: list[str], named: list, clause: Clause) -> list[str] | None:
    """Where a thing no finder knows goes when the person says where it is, or None (it is asked about).

    A thing named by how it stands out in one part of the frame or its middle ("the round bright crater near
    the top left", "the dark spot in the middle", "the little pink building down at the bottom") is the thing
    standing out most that way there (a spot mask), as is one small thing said to be that way ("the little crater
    top left is too bright"). A thing put in a part of the frame that may stand for it goes on that part
    (:func:`_placed_in_frame`), as it always has."""
    if _placed_in_frame(vocab, targets, named):
        return list(targets)
    pieces = clause.pieces
    # (not a kind of place, "the dark trees on the left", unless one small one: "the little pink building"; nor
    # one on a thing said by its side, "the little pink nose on the left one": which thing is asked)
    if len(named) == 1 and named[0].text.split()[0] not in PERSONS \
            and (named[0].small or stand_in(vocab, "", named[0].text) is None) \
            and not any(p.category == "target" and q.text in _ONE_OF_THEM for p, q in zip(pieces, pieces[1:])):
        part = targets[0] if len(targets) == 1 else _qualified_place(vocab, targets)
        parts = part.split(PLACE_JOIN) if part else []
        tone = _spot_tone(vocab, named[0].text)
        if tone is None and named[0].small and _states(clause):
            # ("the little round crater top left is too bright", "that helmet is a black blob": how it is)
            words = clause.text.split()[len(named[0].text.split()):]
            tone = next((vocab.spot_tones[w] for w in words if w in vocab.spot_tones), None)
        if tone and parts and all(vocab.is_frame_part(p) or p == vocab.frame_middle for p in parts):
            return [f"{tone}{SPOT_JOIN}{part}"]
    return None


#: "the left one", "the middle ones": a thing among others, said by its side
_ONE_OF_THEM = frozenset({"one", "ones"})


def _thing_noun(place: str) -> str:
    """The noun a thing's name ends with ("the little flag" -> "flag"), what names it again later."""
    return place.split()[-1]


#: How the reply says a thing no finder knows went where the person said it is (a replan that moves the plan
#: elsewhere drops that note).
PLACED_AS_SAID = "where you said it is"


def _placed_note(vocab: Vocabulary, thing: str, target: str) -> str:
    """What the reply says when a thing no finder knows went on the part of the frame the person named."""
    return (f"I can't find {thing} by itself, so I worked on {_target_label(vocab, target)}, {PLACED_AS_SAID}; "
            f"paint over it for a closer fit.")


def _thing_there(vocab: Vocabulary, clause: Clause, named: list) -> bool:
    """Whether a clause only names a thing and where it is ("and the grey wall behind her"): every word no
    table knows is in the thing's name."""
    words = {w for p in named for w in p.text.split()}
    return bool(named) and all(w in words for w in unknown_words(vocab, clause))


def _describes(vocab: Vocabulary, clause: Clause, piece) -> bool:
    """Whether a one-word quality describes the thing named after it ("the grey wall behind her", "the warm
    light"): right after a determiner and right before a word no table knows that is no verb of being."""
    pieces = clause.pieces
    i = pieces.index(piece)
    if len(piece.text.split()) != 1 or i == 0 or i + 1 >= len(pieces):
        return False
    before, after = pieces[i - 1], pieces[i + 1]
    if before.text in SIZES and i >= 2 and pieces[i - 2].text in DETERMINERS:
        before = pieces[i - 2]       # "the big bright crater": a size before the quality describes the thing too
    # ("leave the dark spot in the middle alone": the determiner ends the keeping verb's phrase)
    determined = before.text in DETERMINERS or before.category == "protect" and before.text.split()[-1] in DETERMINERS
    if after.category == "target":
        # "the darker pup", "the darker pup's face": a place the finders know, picked out by the quality
        return determined and after.pos == piece.pos + 1
    noun = after.text.removesuffix("'s")
    return determined and after.category == "word" and noun.isalpha() \
        and (noun in _PARTS or (noun not in FILLER and noun not in vocab.chatter)) \
        and noun not in _BEING and noun not in PLACE_ENDS and noun not in LOCATING \
        and noun not in _FUNCTION_WORDS


#: Words between praise and the verb that says what it is of ("the sky looks really lovely").
_PRAISE_DEGREES = frozenset({"so", "really", "very", "pretty", "super", "quite", "just", "now"})


def _praised(vocab: Vocabulary, clause: Clause) -> bool:
    """Whether a clause praises what it names ("the sky looks lovely", "her face is perfect now"): a remark,
    no place said for the next clause to go on."""
    tokens = tokenize(clause.text)
    if _MADE & set(tokens):
        return False                     # "make the sky look good": asked for
    said = [t for t in tokens if t not in _PRAISE_DEGREES]
    if said[:2] in (["i", "like"], ["i", "love"]):
        return True                      # "i love the sky"
    for s, _, _ in vocab.praise.find(tokens):
        before = [t for t in tokens[max(0, s - 3):s] if t not in _PRAISE_DEGREES]
        if before and before[-1] in PRAISE_LINKS:
            return True
    return False


_MADE = frozenset({"make", "making", "get", "let", "want", "should", "could", "can", "would"})


def _on_it(vocab: Vocabulary, clause: Clause) -> bool:
    """Whether a clause puts what it asks on a place said before ("tone down the red on it", "less yellow in
    there"): a colour said with it is that colour there, not the photo's."""
    pieces = clause.pieces
    return any(p.text in vocab.back_references and k > 0 and pieces[k - 1].text in ("on", "in", "of")
               for k, p in enumerate(pieces))


def _pointed_at(clause: Clause, piece) -> bool:
    """Whether a word is pointed at as said before ("that corner", "the same spot"): a place named again."""
    i = clause.pieces.index(piece)
    return i > 0 and clause.pieces[i - 1].text.split()[-1] in _POINTING


#: Words that point at a place said before ("lift only that corner" after "the top left corner is dark").
_POINTING = frozenset({"that", "this", "those", "these", "same"})


def _enough_kept(clause: Clause) -> Clause:
    """A quality said to be enough as it is ("he's dark enough", "the sky is bright enough already") says how
    the photo is, not what to do: it keeps its place, like "keep"."""
    return Clause([Piece("protect", "protect", p.text, p.pos)
                   if p.category in ("intent", "fix", "op", "problem") and _enough(clause, p) else p
                   for p in clause.pieces], clause.joined)


def _enough(clause: Clause, piece) -> bool:
    """Whether a quality is said to be enough ("he's dark enough", "that one's bright enough already")."""
    after = [p.text for p in clause.pieces if p.pos > piece.pos][:2]
    before = [p.text for p in clause.pieces if p.pos < piece.pos][-1:]
    # ("make it bright enough to read" still asks)
    said_of = bool(before) and (before[0] in _BEING or before[0] in _STATE_WORDS or before[0].endswith("'s"))
    return said_of and bool(after) and (after[0] == "enough" or after == ["already", "enough"])


_STATE_WORDS = word_lists()["state_words"]
_INTERJECTIONS = word_lists()["interjections"]


#: Small words after a quality that never name a thing ("more of that pop from before though").
_FUNCTION_WORDS = frozenset({"from", "before", "after", "though", "again", "too", "as", "well", "please", "pls",
                             "plz", "one", "ones", "bit", "much", "more", "less", "stuff", "thing", "there", "here",
                             "for", "with", "without", "if", "when", "while", "or", "yet", "still", "anymore"})
#: "the dark bits", "the bright parts": words for a part of the photo after a quality.
_PARTS = frozenset({"bits", "parts", "areas", "bit", "part", "area", "patches", "spots", "thing", "things"})


#: Words a clause that only adds a quality may carry besides it ("and a bit moodier too", "even warmer").
_ADDED_ONLY = frozenset({"too", "also", "even", "still", "as", "well", "please", "pls", "plz", "a", "bit", "little",
                         "maybe", "just", "ok", "oh", "and", "then", "slightly", "somewhat"})


def _adds_a_quality(clause: Clause) -> bool:
    """Whether ``clause`` only adds a quality in its comparative form, or a complaint ("too orange"), with no
    verb, place or word of its own ("darken the sky, moodier", "warm up the background, and a bit brighter",
    "her face looks sunburnt, bit too orange"): said in the same breath as a request or a complaint on a
    place, it is more of how that place should look, not a request for the whole photo."""
    qualities = clause.of("intent", "problem")
    if not qualities or clause.of("target", "band", "global", "except", "protect", "avoid", "relative",
                                  "rollback", "reset", "objects", "set", "fix", "op"):
        return False
    if any(p.category not in ("intent", "problem", "magnitude", "increase", "reduce") and p.text not in _ADDED_ONLY
           for p in clause.pieces):
        return False
    return all(q.category == "problem" or q.text.split()[0] in ("more", "less") or q.text.endswith(("er", "ier"))
               for q in qualities)


#: Words after a quality that make it said of what comes before ("the sky is grey"), not of a thing after.
_BEING = frozenset({"is", "are", "was", "looks", "look", "looking", "seems", "feels", "gets", "got", "now", "too",
                    "and", "but", "so", "then", "please", "pls"})


def _said_label(vocab: Vocabulary, intent: Intent, negated: bool, band: str | None) -> str:
    """The words a move is named by in replies and questions: "less blue", not the band intent's own
    "more saturated"; "less warm" is the profile's "cooler" where the intent has an opposite."""
    if band and intent.primary == "saturation" and intent.mode == "add":
        # "too red": the fix is less saturation there, called "less red" (not the band's "more red")
        lowers = next((v for op, v in intent.ops if op.startswith("saturation")), 1) < 0
        return f"{'less' if negated != lowers else 'more'} {band}"
    if not negated:
        return intent.label
    opposite = vocab.intents.get(intent.opposite or "")
    if opposite is not None:
        return opposite.label
    return "less " + intent.label.removeprefix("more ")


def _moves_at(vocab: Vocabulary, use: Use, target_name: str | None, band: str | None, state: EditState,
              order: int, source: str, notes: list[str]) -> list[Move]:
    intent = use.intent
    values, spec = _locate(vocab, list(intent.ops), intent.mode, target_name, band)
    where = _where(vocab, target_name, band, spec)
    on_where = f" on {where}" if where != "the image" else ""

    def current(op: str, at: dict | None) -> int:
        return state.value(op, normalize_mask_spec(at)) if at else state.value(op)

    negated = use.negated
    label = intent.label

    def move(op: str, value: int, mode: str, at: dict | None, phrase: str, rank: int) -> Move:
        return Move(op, value, mode, at, label, phrase, source, order, rank, intent.kind, intent.name,
                    complaint=bool(use.problem or use.fixes), stated=use.stated)

    if use.reset:
        # reset / remove: back to 0 what this intent moved; nothing moved means "less of it".
        moved = [op for op, _ in values if current(op, spec)]
        if moved:
            return [move(op, 0, "set", spec, f"resetting the {intent.label} edit{on_where}", rank)
                    for rank, op in enumerate(moved)]
        if intent.mode == "set" or intent.kind == "op":
            notes.append(f"{intent.label.capitalize()}{on_where} is already at its neutral value.")
            return []
        negated = True
    label = _said_label(vocab, intent, negated, band)
    if intent.mode == "set" and use.number is None:
        phrase = f"bringing the colour back to {where}" if negated else intent.doing.format(where=where)
        return [move(op, 0 if negated else v, "set", spec, phrase, rank) for rank, (op, v) in enumerate(values)]
    sign = -1 if negated else 1
    phrase = intent.doing.format(where=where) if not negated else \
        f"turning {intent.label} down on {where}" if intent.kind == "op" else \
        f"lowering the {intent.label.removeprefix('more ')} of {where}" if intent.label.startswith("more ") else \
        f"making {where} less {intent.label}"       # ("less clarity": not "making the image less more clarity")
    opposite = vocab.intents.get(intent.opposite or "")
    if negated and opposite is not None and opposite.mode == "add":
        # "not so warm" is the profile's "cooler", with its own ops and wording.
        values, spec = _locate(vocab, list(opposite.ops), "add", target_name, band)
        sign, phrase = 1, opposite.doing.format(where=where)
    if use.number is not None:
        primary_op, primary_base = values[0]
        number = float(use.number)
        if use.set_mode:
            value = int(round(number))
            return [move(primary_op, value, "set", spec,
                         f"setting {ops.get_op(primary_op).label.lower()} to {value}{on_where}", 0)]
        if number > 0 and primary_base * sign < 0:
            number = -number   # "cooler by 20" means temperature -20
        factor = number / primary_base if primary_base else 1.0
        scaled = [(op, int(round(v * factor))) for op, v in values]
    else:
        scaled = [(op, int(round(v * use.scale * sign))) for op, v in values]
    out = []
    for rank, (op, v) in enumerate(scaled):
        cur = current(op, spec)
        if use.negated and use.number is None and cur and cur * v < 0:
            # "less warm" after warming: tone down what was added, do not swing past neutral.
            v = -int(math.copysign(min(abs(cur), max(MIN_TONE_DOWN, round(abs(cur) * 0.5 * use.scale))), cur))
        if v:
            out.append(move(op, v, "add", spec, phrase, rank))
    return out


# ---------------------------------------------------------------------------
# Relative requests: values from image statistics
# ---------------------------------------------------------------------------

def _lab_Y(L: float) -> float:
    """CIELAB L* (0..100) -> relative luminance Y (0..1)."""
    f = (L + 16.0) / 116.0
    return f ** 3 if f > 6 / 29 else (f - 4 / 29) * 3 * (6 / 29) ** 2


def fix_exposure_moves(stats: Mapping, p: Mapping) -> tuple[list[tuple[str, int]], str]:
    """Exposure that moves the median L* toward mid-grey, plus highlight/shadow recovery.

    Returns [(op, value)] and a short reason. Values are on the -100..100 scale.
    """
    moves: list[tuple[str, int]] = []
    L50 = float(stats["L_p50"])
    target = float(p.get("target_L_p50", 50))
    limit = int(p.get("max_value", 80))
    if abs(target - L50) > float(p.get("tolerance", 4)):
        ev = math.log2(_lab_Y(target) / max(_lab_Y(L50), 1e-4)) * float(p.get("strength", 0.85))
        value = int(max(-limit, min(limit, round(ev * UNITS_PER_EV))))
        if value:
            moves.append(("exposure", value))
    recover = int(p.get("recover_value", 30))
    if float(stats.get("clip_high", 0)) > float(p.get("clip_high_share", 0.01)):
        moves.append(("highlights", -recover))
    if float(stats.get("clip_low", 0)) > float(p.get("clip_low_share", 0.02)):
        moves.append(("shadows", recover))
    return moves, f"median lightness L* {L50:.0f}, aiming for {target:.0f}"


def white_balance_moves(stats: Mapping, p: Mapping) -> tuple[list[tuple[str, int]], str]:
    """Temperature/tint that counter the average a*/b* cast (grey-world estimate)."""
    a, b = float(stats["a_mean"]), float(stats["b_mean"])
    tol = float(p.get("tolerance", 1.5))
    limit = int(p.get("max_value", 60))
    moves = []
    strength = float(p.get("strength", 1.0))
    if abs(b) > tol:
        moves.append(("temperature", int(max(-limit, min(limit, round(-b * strength * float(p.get("temperature_per_b", 6))))))))
    if abs(a) > tol:
        moves.append(("tint", int(max(-limit, min(limit, round(-a * strength * float(p.get("tint_per_a", 10))))))))
    cast = ("blue" if b < -tol else "yellow" if b > tol else "") + ("/" if abs(b) > tol and abs(a) > tol else "") \
        + ("magenta" if a > tol else "green" if a < -tol else "")
    return [(o, v) for o, v in moves if v], (f"a {cast} cast (a* {a:+.1f}, b* {b:+.1f})" if cast else "no visible cast")


def auto_contrast_moves(stats: Mapping, p: Mapping) -> tuple[list[tuple[str, int]], str]:
    """Contrast toward a well-spread L* histogram, and black/white points toward the ends."""
    limit = int(p.get("max_value", 50))

    def clamp(v: float) -> int:
        return int(max(-limit, min(limit, round(v))))

    moves = []
    rms = float(stats["rms_contrast"])
    target = float(p.get("target_rms", 21))
    if abs(rms - target) > float(p.get("tolerance", 2.5)):
        moves.append(("contrast", clamp((target - rms) * float(p.get("contrast_per_unit", 2.5)))))
    lo, hi = float(stats["L_p01"]), float(stats["L_p99"])
    if lo > float(p.get("target_L_p01", 4)) + 3:
        moves.append(("blacks", clamp(-(lo - float(p.get("target_L_p01", 4))) * float(p.get("blacks_per_unit", 1.2)))))
    if hi < float(p.get("target_L_p99", 96)) - 3:
        moves.append(("whites", clamp((float(p.get("target_L_p99", 96)) - hi) * float(p.get("whites_per_unit", 1.2)))))
    return [(o, v) for o, v in moves if v], f"tonal spread {rms:.0f} L*, range {lo:.0f}-{hi:.0f}"


_RELATIVE = {"fix_exposure": fix_exposure_moves, "white_balance": white_balance_moves,
             "auto_contrast": auto_contrast_moves}
_RELATIVE_PHRASES = {"fix_exposure": "fixing the exposure", "white_balance": "correcting the white balance",
                     "auto_contrast": "balancing the contrast"}


def _within_sweet_spot(profile: Profile, op: str, value: int, state: EditState) -> int:
    """Shorten a measured correction so the op ends inside its sweet spot (auto never overshoots)."""
    spot = profile.sweet_spot(op)
    if spot is None:
        return value
    current = state.value(op)
    return max(min(spot.low, current), min(max(spot.high, current), current + value)) - current


def _relative_moves(vocab: Vocabulary, name: str, stats: Mapping, order: int, draft: Draft,
                    state: EditState) -> list[Move]:
    names = [n for n in _RELATIVE if n in vocab.relative] if name not in _RELATIVE else [name]
    if not stats or "L_p50" not in stats:
        draft.relative_without_stats.append(str(vocab.relative[name].get("label") or name))
        return []
    out: list[Move] = []
    for n in names:
        values, reason = _RELATIVE[n](stats, vocab.relative[n])
        if vocab.relative[n].get("cap_to_sweet_spot", True):
            values = [(op, _within_sweet_spot(vocab.profile, op, v, state)) for op, v in values]
        values = [(op, v) for op, v in values if v]
        label = str(vocab.relative[n].get("label") or n)
        if not values:
            draft.notes.append(f"{label.capitalize()}: nothing to do ({reason}).")
            continue
        draft.notes.append(f"{label.capitalize()}: {reason}.")
        out += [Move(op, v, "add", None, label, _RELATIVE_PHRASES[n], "relative", order, rank)
                for rank, (op, v) in enumerate(values)]
    return out


# ---------------------------------------------------------------------------
# Reading one text into a Draft
# ---------------------------------------------------------------------------

def _said_of_how_it_is(tokens: list[str], pos: int) -> bool:
    """Whether the quality at ``pos`` follows a word that says how the photo is, in its clause ("the whole
    frame reads a little warm to me"): a description, which the same message may ask the other way."""
    before = []
    for t in reversed(tokens[max(0, pos - 4):pos]):
        if t in SEPARATORS:
            break
        before.append(t)
    return bool(_STATE_WORDS & set(before))


def read_request(vocab: Vocabulary, text: str, request: PlanRequest, source: str, order0: int = 0) -> Draft:
    draft = Draft()
    tokens = cast_said_of_a_neutral_thing(effect_said(tokenize(text[:MAX_MESSAGE_CHARS])))
    clauses = [around(vocab, c) for c in _cautions_apart(split_clauses(sizes_in_names(read_pieces(vocab, tokens))))]
    previous_uses: list[Use] = []
    previous_targets: list[str] = []
    fixed: set[tuple] = set()       # (fix intent, places) already planned for a complaint in this message
    previous_span, previous_order = (0, 0), order0     # the moves of the last clause that asked for something
    complained = False                                  # the clause before said what is wrong
    topic: list[str] = []                               # a thing said in a clause of its own, asked about next
    topic_specific = False
    kept_first: list[tuple[list[str], list[str], tuple | None, list[str]]] = []   # places kept before the request
    said_before: set[str] = set()                       # the words of the places said so far ("corner")
    stated: tuple[list[str], str, str] | None = None    # places a statement named ("the corner is just table")
    whole_asked: set[str] = set()                       # the ops clauses before asked of the whole photo ("warm it up")
    placed: dict[str, list[str]] = {}                   # a thing no finder knows -> the part of the frame it was put in
    # "the whole shot", "everything": the whole photo said somewhere in the message
    whole_said = any(p.text not in vocab.back_references for c in clauses for p in c.of("global"))
    evening = says_evening(tokens)      # "..., even it out": how a place is said is what to undo there
    wished = False                      # the clauses before were a wish and the qualities said after it
    for ci, clause in enumerate(clauses):
        order = order0 + ci * 100
        clause = _enough_kept(clause)
        if ci and clause.joined == "soft" and _only_how(clause) and _keeps_how(clauses[ci - 1]):
            # "keep the sky cool and blue", "the sky should stay dark and moody": how the kept place stays,
            # said on after "and", is part of the keep, no request of its own
            continue
        if previous_uses and clause.content_words and set(clause.text.split()) - SEPARATORS <= word_lists()["remedy_words"] \
                and any(w in word_lists()["remedy_verbs"] for w in clause.text.split()):
            continue     # "snow looks blue. fix", "too dark, sort it out pls": the fix said before, asked for
        if ci and tells_how_taken(clauses[ci - 1].text.split()) and kind_of_photo(vocab, clause.text.split()):
            # "this is a close up of the rough, black and white shot": what kind of photo it is, not a request
            continue
        if evening:
            clause = read_evened(vocab, clause)
        if ci:
            said_before |= {w for p in clauses[ci - 1].of("target") for w in p.text.split()}
        if not previous_uses:
            # "don't make it so yellow" said first; after a request ("warmer but don't make it too orange")
            # it only cautions that request
            clause = avoided_degree(vocab, clause)
        towards = _towards_uses(vocab, clause, draft.notes)
        if towards is not None:
            # "shift the oranges towards yellow": the shift is the whole clause
            draft.understood_any = True
            previous_uses = _apply_uses(vocab, towards, request.state, order, source, draft, request.dialogue)
            previous_targets = towards[0].targets if towards else []
            continue
        for rel in clause.of("relative"):
            draft.understood_any = True
            draft.moves += _relative_moves(vocab, rel.key, request.image_stats, order + rel.pos, draft,
                                          request.state)
        absent = _absent_things(vocab, clause, request.image_stats)
        frame_parts = [p.key for p in clause.of("target") if vocab.is_frame_part(p.key)]
        if absent and frame_parts:
            # "brighten the grass at the bottom" on a photo with no green: the grass is where the person says
            clause = Clause([Piece("word", p.text, p.text, p.pos) if p.category == "band" and (
                p.text if p.text.startswith("the ") else f"the {p.text}") in absent else p for p in clause.pieces],
                clause.joined)
            draft.said.append(_placed_note(vocab, absent[0], frame_parts[0]))
            absent = []
        stood = {thing: vocab.place_nouns.get(thing.removeprefix("the ")) for thing in absent}
        if absent and all(stood.values()) and not clause.of("target") and _asks_of_the_thing(vocab, clause):
            # "darken the grass" on a black-and-white photo: no green to find it by, so it goes where such a
            # thing stands ("grass": the bottom), and the reply says so
            clause = Clause([Piece("target", stood[thing], p.text, p.pos) if p.category == "band" and (
                thing := p.text if p.text.startswith("the ") else f"the {p.text}") in stood else p
                for p in clause.pieces], clause.joined)
            draft.said.append(f"I can't find {absent[0]} by its colour here, so I worked on "
                              f"{_target_label(vocab, stood[absent[0]])}, my best guess for it; paint over it for a "
                              f"closer fit.")
            absent = []
        if absent and previous_uses and clause.of("avoid", "protect"):
            # "brighten it but dont blow out the sky" on a photo with no sky: nothing there to keep, so the
            # request goes on as asked, and the reply says so
            draft.said.append(f"I see no {absent[0].removeprefix('the ')} here, so there was nothing to keep as it is.")
            continue
        if absent:
            # "darken the water" on a cat photo: not a colour move on the little blue there is
            draft.understood_any = True
            draft.missing_things += absent
            draft.missing_labels += [u.intent.label for u in _uses(vocab, clause)]
            continue
        # ("want this to feel like a wet back alley at night, dark and bluish": the wish goes on)
        wished = ci > 0 and only_qualities(clause) and (wished or wished_after(vocab, clauses[ci - 1]))
        uses = _uses(vocab, clause, complained, wished=wished)
        complained = any(u.problem for u in uses)
        for u in uses:
            u.stated = not (u.negated or u.problem or u.fixes) and _said_of_how_it_is(tokens, u.pos)
        targets = [p.key for p in clause.of("target")]
        qualified = _qualified_place(vocab, targets)
        if qualified is not None:
            # "the background on the right is busy, darken it": one place, where both are
            for u in uses:
                if set(u.targets) == set(targets):
                    u.targets = [qualified]
            targets = [qualified]
        raised = _implicit(vocab, clause) if not (uses or targets or clause.of("band")) else []
        if raised and not unknown_words(vocab, clause, before=raised[0].pos) \
                and (named_places(vocab, clause) or raised[0].text in vocab.raise_up
                     and not find_phrases(tokenize(request.message), vocab.repeat)):
            # "bring it up a little": lighter (on the place said before, when "it" points back to one); a thing
            # named after the verb ("bring the amp up", "tone down the lamp") is asked about as for "brighten
            # the amp"); "tone it down" and "turn it up" alone are less or more of the last change, follow-ups
            uses = [_implicit_use(vocab, clause, raised[0], [])]
        said_places = list(targets)
        excepted = _excepted(vocab, clause)
        marks = clause.of("except")
        if marks and uses and not any(p.pos > marks[0].pos for p in clause.of("target", "band")):
            # "brighten it but not the lamp": the thing left out is one no finder knows
            after = [p.text for p in clause.pieces if p.pos > marks[0].pos and p.category == "word"]
            stand = vocab.place_nouns.get(after[0]) if len(after) == 1 else None
            rest = _complement(vocab, stand) if stand else None
            if rest and not any(u.targets for u in uses):
                # "warmer but not the wall": the wall stands for the background, kept out of the change
                for u in uses:
                    u.targets = [rest]
            else:
                draft.unknown_kept += _kept_things(vocab, clause)
        kept_out: list[str] = []
        pointing_back = bool(previous_targets) and any(p.text in vocab.back_references
                                                        for p in clause.of("word", "global"))
        if excepted and (any(t not in excepted for t in targets) or pointing_back):
            # "brighten the right half but not the left side", "the right half is dim, lift it but not the left
            # side": the place said first gets the change, kept off the one left out (no change of its own on
            # the rest of the frame)
            kept_out = [t for t in targets if t in excepted]
            targets = [t for t in targets if t not in excepted]
            for u in uses:
                u.targets = [t for t in u.targets if t not in excepted]
        elif excepted:
            # "everything except her face darker": the rest of the frame, not the face
            targets = [excepted.get(t, t) for t in targets]
            for u in uses:
                u.targets = [excepted.get(t, t) for t in u.targets]
        # "desaturate everything except the blues": a colour said after "except" is kept out of the change
        kept_bands = [p.key for p in clause.of("band") if marks and uses and p.pos > marks[0].pos]
        for u in uses if kept_bands else ():
            u.bands = [b for b in u.bands if b not in kept_bands]
        bands = [p.key for p in clause.of("band") if p.key not in kept_bands]
        if clause.of("protect") and not targets:
            # "but keep the wall behind it that nice blue": the thing kept stands for its kind of place
            # (the wall: the background); the colour says how it stays
            stand_ins = [vocab.place_nouns[p.text] for p in clause.of("word") if p.text in vocab.place_nouns]
            # ... unless a colour said right before it picks the thing out ("keep the pink building pink": the
            # pinks, not the whole background)
            described = any(p.category == "band" and q.category == "word" and q.text in vocab.place_nouns
                            and q.pos == p.pos + len(p.text.split()) for p, q in zip(clause.pieces, clause.pieces[1:]))
            if stand_ins and not described:
                targets, said_places = stand_ins[:1], stand_ins[:1]
                bands = []
        said_global = clause.of("global")
        # "her face is too dark, brighten it", "brighten the bottom, it's muddy down there": after a
        # place, "it" / "there" is that place, not the whole photo
        pointed = said_global + [p for p in clause.of("word") if p.text in vocab.back_references
                                 or ((p.text in said_before or p.text in _PARTS) and _pointed_at(clause, p))]
        refers_back = bool(pointed) and bool(previous_targets) and not targets \
            and (not bands or _on_it(vocab, clause)) and all(p.text in vocab.back_references for p in said_global)
        # "the spoon has a nasty glare on it": "it" after a thing said in the same clause is that thing
        thing_first = bool(said_global) and all(p.text in vocab.back_references for p in said_global) and any(
            p.category == "word" and p.pos < said_global[0].pos and p.text not in vocab.known_words
            for p in clause.pieces) and bool(named_places(vocab, clause))
        is_global = bool(said_global) and not refers_back and not thing_first and not (
            topic and all(p.text in vocab.back_references for p in said_global))   # "that lamp, can it be ..."
        if topic and any(p.text not in vocab.back_references for p in said_global):
            topic = []      # "the guitar is great but the whole pic is so dark, brighten it": "it" is the photo now
        if topic and uses and _names_own_object(clause):
            # "that's blown the lamps. recover the highlights a bit", "the stone looks flat. bring out the
            # texture": the request names what it works on, with no word pointing back at the thing
            topic = []
        soft = clause.joined == "soft"
        # "and the grey wall behind her, bit darker pls": a place said on its own is where the next clause goes
        said_alone = ci > 0 and clauses[ci - 1].text in draft.skipped and bool(draft.bare_targets)
        if uses and stated and not previous_targets and not targets and not bands \
                and (any(p.category == "word" and p.text != "it" or p.category == "global" and p.text in
                             vocab.back_references and p.text not in ("it", "them", "there") for p in pointed)
                     or (stated[2] and said_global)
                     # "the sky's kinda blank, darken it": "it" right after a place said with words I can't read
                     # (the place its subject: not "omg look at this face. can you make it feel cozier")
                     or (said_global and ci > 0 and clauses[ci - 1].text == stated[1]
                         and all(p.text == "it" for p in said_global) and clauses[ci - 1].pieces[0].text.split()[0] == "the"
                         and not _LIKENED & set(stated[1].split()))
                     # "the backdrop behind her looks dirty and yellowish": a complaint joined on to it
                     or ((soft or _adds_a_quality(clause)) and ci > 0 and clauses[ci - 1].text == stated[1]
                         and all(u.problem for u in uses))) \
                and all(p.text in vocab.back_references for p in said_global):
            # "the bottom right corner is just table, can you darken that corner down", "the helmet at the bottom
            # right is just a black blob, can you lift it": the request points at the place a statement named
            # (a thing it put there is that part of the frame); that statement was no skipped request after all
            for u in uses:
                u.targets = list(stated[0])
            is_global = False
            if stated[1] in draft.skipped:
                draft.skipped.remove(stated[1])
            if stated[2]:
                draft.said.append(stated[2])
                topic = []
            stated = None
        added = not soft and _adds_a_quality(clause)
        if uses and not targets and not is_global and (soft or refers_back or said_alone or added) \
                and previous_targets:
            for u in uses:                       # "make the sky darker and bluer": bluer is the sky too
                u.targets = list(previous_targets)
            said_first = [c for c in draft.skipped if c == clauses[ci - 1].text] if ci else []
            for c in said_first:                 # the place said on its own was not skipped after all
                draft.skipped.remove(c)
                draft.bare_targets = []
        if targets and not bands and not uses and previous_span[1] > previous_span[0] \
                and _only_there(vocab, clause):
            # "make the sky deeper, richer blue, only the sky": what was asked so far for the whole photo
            # goes on that place alone
            draft.moves = restrict_moves(vocab, draft.moves, targets)
            draft.understood_any = True
            continue
        kept_tone = _kept_tone(vocab, clause) if clause.of("protect") and not uses else None
        if not uses and previous_span[1] == previous_span[0] and ci + 1 < len(clauses) \
                and (clause.of("protect") or _places_left_out(clause)):
            # "leave her eyes alone, but the fur is orange, cool it down": what is kept said before the
            # request; the request after it goes everywhere but there
            unknown = [] if said_places or bands or kept_tone else _kept_things(vocab, clause)
            if said_places or bands or kept_tone or unknown:
                kept_first.append((list(said_places), [] if said_places else list(bands), kept_tone, unknown))
                continue
        if kept_tone is not None and previous_span[1] > previous_span[0]:
            # "warmer, but keep the snow white", "the backdrop has to stay pure white": what is to stay is a
            # tone; the tone itself is kept, wherever it is (a place no finder knows is found by it)
            draft.moves = _all_but_tone(draft.moves, kept_tone)
            draft.understood_any = True
            continue
        lead = next((p for p in clause.pieces if p.category != "separator"), None)
        if targets and lead is not None and lead.category == "avoid" and previous_span[1] > previous_span[0]:
            # "warmer, but don't make her face orange", "more contrast without darkening her face": a caution
            # about a place keeps that place as it is; what it warns of is no request of its own
            draft.moves = protect_moves(vocab, draft.moves, targets)
            draft.understood_any = True
            continue
        if said_places and not uses and not bands and previous_span[1] > previous_span[0] \
                and _places_left_out(clause):
            # "warmer, but not her face", "more vivid, except the sky": said after the request on its own,
            # the change goes everywhere but there
            draft.moves = protect_moves(vocab, draft.moves, said_places)
            draft.understood_any = True
            continue
        if not said_places and not bands and not uses and previous_span[1] > previous_span[0] \
                and (clause.of("protect") or _places_left_out(clause)):
            kept = _kept_things(vocab, clause)
            stand_ins = [vocab.place_nouns[p.text] for p in clause.of("word") if p.text in vocab.place_nouns]
            if stand_ins and not clause.of("protect") and all(
                    vocab.place_nouns.get(k.split()[-1]) == stand_ins[0] for k in kept):
                # "sharpen just the clock, not the wall": the thing left out stands for its kind of place (the
                # wall: the background); the change goes everywhere but there
                draft.moves = protect_moves(vocab, draft.moves, stand_ins[:1])
                draft.understood_any = True
                continue
            if kept and said_as_subject(vocab, clause.text, kept[0]):
                # "cool it down but don't touch the coffee itself": the photo's subject, kept
                draft.moves = protect_moves(vocab, draft.moves, [vocab.place_default])
                draft.understood_any = True
                continue
            if kept:
                # "brighten it but not the lamp": a thing to keep that no finder knows is asked about, never
                # silently left to change
                draft.unknown_kept += kept
                draft.understood_any = True
                continue
        if (targets or bands) and clause.of("protect") and previous_span[1] > previous_span[0] \
                and not (uses and clause.pieces[0].category == "intent"):
            # "warmer but keep the skin natural", "but the backdrop has to stay pure white": the change
            # goes everywhere but that place (what it is to stay, "natural", "white", is no change of its own);
            # "more saturated, but don't change the water": the water's colour is the place
            draft.moves = protect_moves(vocab, draft.moves, targets, [] if targets else bands)
            draft.understood_any = True
            continue
        if not uses and (targets or bands):
            if clause.of("reset", "rollback") and targets and not bands:
                draft.moves += _reset_targets(vocab, targets, request.state, order, draft)
                draft.understood_any = True
                previous_targets = targets
                continue
            implicit = _implicit(vocab, clause)
            if targets and not bands and implicit:
                # "tone down the sky": less of what stands out there; "bring the shadows up": lighter
                # there (the profile's implicit intents)
                uses = [_implicit_use(vocab, clause, implicit[0], targets)]
            elif bands and (clause.of("reduce", "increase", "magnitude") or not previous_uses or not soft) \
                    and "more_saturated" in vocab.intents \
                    and (not unknown_words(vocab, clause) or (clause.of("reduce", "increase") and (not
                         unknown_words(vocab, Clause([p for p in clause.pieces if p.pos > clause.of("band")[0].pos]))
                         or _colour_of_a_thing(clause)))):
                # "less green", "more blue": the band's saturation; "make the suit less orange": the colour
                # finds the thing (named before it; "give it a green moustache" names a new thing after it)
                # ("tone down the red on it" after a place: that colour there)
                there = list(previous_targets) if not targets and refers_back else []   # (refers_back: "on it")
                use = Use(vocab.intents["more_saturated"], targets=targets or there, bands=bands, pos=clause.pieces[0].pos)
                use.negated = bool(clause.of("reduce"))
                mags = clause.of("magnitude")
                use.scale = vocab.magnitudes[mags[0].key] if mags else 1.0
                uses = [use]
            elif previous_uses and soft:
                # "brighten the face and the background": same intents, new targets
                uses = [replace(u, targets=targets or u.targets, bands=bands or u.bands) for u in previous_uses]
        if not uses and previous_uses and clause.of("magnitude") and not (targets or bands) \
                and not clause.of("rollback", "reset", "objects", "relative") and not unknown_words(vocab, clause):
            # "brighter, but only a little", "warmer but not too much": a clause that only says how much
            scale = vocab.magnitudes[clause.of("magnitude")[-1].key]
            del draft.moves[previous_span[0]:previous_span[1]]
            rescaled = [replace(u, scale=_damped(vocab, u, scale)) for u in previous_uses]
            start = len(draft.moves)
            previous_uses = _apply_uses(vocab, rescaled, request.state, previous_order, source, draft,
                                        request.dialogue)
            previous_span = (start, len(draft.moves))
            continue
        if not uses and clause.content_words and find_phrases(clause.content_words, vocab.insist_words) and \
                sum(n for _, n, _ in find_phrases(clause.content_words, vocab.insist_words)) == len(clause.content_words):
            continue                             # "warmer, i insist": how to take the request, not a request
        if not uses and tells_how_taken(clause.text.split()) and not targets \
                and not clause.of("rollback", "reset", "objects", "relative"):
            continue                             # "this is a photo of my nan, make it warmer": what it shows
        if not uses:
            named = named_places(vocab, clause)
            if named and not clause.of("rollback", "reset", "objects", "relative") and not tells_how_taken(clause.text.split()):
                # "the papers under the cat look grubby, can you clean them up": a thing said first,
                # the request about it next ("took this at the wedding, brighten it": where it was taken)
                topic, topic_specific = [p.text for p in named], any(p.specific for p in named)
            where = _placing(vocab, targets, named, clause) if targets and named else None
            if clause.of("rollback") or (clause.of("reset") and not clause.content_words):
                draft.rollback = True
            elif clause.of("objects") or (clause.of("reset") and targets):
                draft.objects = True
                draft.skipped.append(clause.text)
            elif targets and unknown_words(vocab, clause) and not (_thing_there(vocab, clause, named) and where):
                draft.skipped.append(clause.text)        # "make her smile more": not something I can do
                if not named:                            # (a thing named is asked about: "the papers under ...")
                    stated = (list(targets), clause.text, "")
                elif where:
                    # "the helmet at the bottom right is just a black blob": a thing put in a part of the frame
                    stated = (where, clause.text, _placed_note(vocab, named[0].text, where[0]))
                    placed[_thing_noun(named[0].text)] = where
            elif targets and _praised(vocab, clause):
                continue                                 # "the sky looks lovely, now more contrast": a remark
            elif targets and tells_how_taken(clause.text.split()):
                continue                                 # "this is my dog, make it warmer": what the photo shows
            elif targets:
                where = where or list(targets)
                draft.skipped.append(clause.text)
                draft.bare_targets += [vocab.place(t)[1] for t in where]
                previous_targets = where               # "the sky, make it darker": "it" is the sky
                if named:                              # "the table on the left, darken it": there, said so
                    draft.said.append(_placed_note(vocab, named[0].text, where[0]))
                    placed[_thing_noun(named[0].text)] = where
                    topic = []
            elif not clause.of("relative") and (clause.content_words or clause.of("increase", "objects")):
                # ("ok and now way more saturated", "hmm and maybe more punch": "ok" and "hmm" ask nothing)
                # ("its the hero here": which thing is the subject, said with a request on it)
                hero = any(n > 1 for _, n, _ in vocab.place_subject_said.find(tokenize(clause.text)))
                only_sounds = bool(clause.content_words) and all(w in _INTERJECTIONS for w in clause.content_words)
                if not named and not hero and not (only_sounds and not clause.of("increase", "objects")):
                    draft.skipped.append(clause.text)
            continue
        if clause.of("objects"):
            draft.objects = True
        places: list[str] = []
        named = named_places(vocab, clause) if not is_global else []
        again = [placed[_thing_noun(p.text)] for p in named if _thing_noun(p.text) in placed]
        if again and not targets and not bands and len(again) == len(named):
            # "the flag on the left is loud. mute the colour in the flag only": the thing said again is where
            # the clause before put it
            targets = list(again[0])
            uses = [replace(u, targets=list(targets)) for u in uses]
            named = []
        specific = any(p.specific for p in named) or (bool(topic) and not named and topic_specific)
        # a place found only by position ("in the middle"), or the person whose part is named ("her nose")
        positional = all((vocab.targets.get(t) or {}).get("type") in ("radial", "gradient") for t in targets) \
            or any(p.text.split()[0] in PERSONS for p in named if p.specific) \
            or bool(targets) and any(p.specific for p in named) and set(targets) <= _locators(vocab, clause)
        # ... when its fix is of what was asked ("the lamp is too bright" after "warm it up" asks of the lamp)
        # (one of its fixes is enough: "more colourful please, the mountain looks so grey" says why, though grey
        # may also be fixed with contrast, which is then not added)
        why_said = bool(named) and not targets and not bands and (_states(clause) or _wishes(clause)) and bool(uses) \
            and any(whole_asked & {op for op, _ in u.intent.ops} for u in uses)
        if why_said:
            uses = [u for u in uses if whole_asked & {op for op, _ in u.intent.ops}]
        # ... or before a request that names its own object with the same kind of fix ("that's blown the lamps.
        # recover the highlights a bit", "the stone looks flat. can you bring out the texture?")
        why_said = why_said or bool(named) and not targets and not bands and _states(clause) and bool(uses) \
            and all(u.problem for u in uses) and _remedied_later(vocab, clauses[ci + 1:], uses)
        # ... or before a request said of the whole photo in so many words ("i cant see the amp, brighten
        # everything", "too dark to see the launch pad, lift the whole thing up")
        why_said = why_said or bool(named) and not targets and not bands and _states(clause) \
            and _whole_asked_later(vocab, clauses[ci + 1:])
        # ("the green mat is too bright": a colour said of a thing no finder knows finds it, not the whole band;
        # not one pointed at or placed, "that building", "the pillar in the middle", which the colour cannot
        # tell from the rest, nor one said with a request for the whole photo)
        colour = colour_of(vocab, clause.text, named[0].text) \
            if named and not whole_said and _colour_finds(vocab, clause, named[0]) else None
        coloured = colour is not None and stand_in(vocab, clause.text, named[0].text) is None  # ("the wall is too blue")
        if (not targets or (specific and positional)) and not is_global and not why_said \
                and (topic or specific or coloured or not bands and not all(u.bands for u in uses)):
            # ("the suit is too orange": the colour finds the thing, no place to guess; one particular
            # thing, said first or pointed at, is asked about whatever the request)
            places = [p.text for p in named] or topic
            where = _placing(vocab, targets, named, clause) if places and targets else None
            if where:
                # "the table at the bottom right is too bright", "the mountains at the top look washed out":
                # the thing is where the person says it is, a part of the frame; the change goes there
                draft.said.append(_placed_note(vocab, places[0], where[0]))
                placed[_thing_noun(places[0])] = where
                places = []
                if where != targets:          # ("the round bright crater top left": that thing there)
                    targets = where
                    uses = [replace(u, targets=list(where)) for u in uses]
            draft.unknown_places += places
            draft.specific_place = draft.specific_place or specific
            if places:
                # "the rocket itself", "the cup itself looks a bit grey, brighten just the cup", "its the hero":
                # the photo's subject (not one kept: "the lamp itself should keep its glow")
                subject = said_as_subject(vocab, text, places[0]) and not clause.of("protect", "avoid", "except")
                draft.place_guess = vocab.place_default if subject else guess_place(vocab, clause.text, places[0])
                draft.place_stand_in = subject or stand_in(vocab, clause.text, places[0]) is not None
                draft.place_colour = draft.place_colour or colour
            if places and targets:
                uses = [replace(u, targets=[]) for u in uses]     # "in the middle" only locates the thing
        # "flat and dull", "dark and murky": one complaint said twice; its fix is planned once
        draft.understood_any = True
        uses = [u for u in uses if not (u.problem or u.fixes) or _fix_key(u) not in fixed]
        if not uses:
            continue
        fixed |= {_fix_key(u) for u in uses if u.problem or u.fixes}
        if refers_back:
            # "her face is too dark, brighten it a bit": the second clause says how much of the
            # same fix, so the complaint's own moves for that intent give way to it
            again = {u.intent.name for u in uses} & {u.intent.name for u in previous_uses if u.problem or u.fixes}
            draft.moves = [m for m in draft.moves if not (m.intent in again and m.order < order)]
        start = len(draft.moves)
        previous_uses = _apply_uses(vocab, uses, request.state, order, source, draft, request.dialogue,
                                    thing_named=bool(places or named))
        if kept_out or kept_bands:
            draft.moves[start:] = protect_moves(vocab, draft.moves[start:], kept_out, kept_bands)
        previous_span, previous_order = (start, len(draft.moves)), order
        previous_targets = uses[0].targets if uses else []
        # ("warm it up and give it more contrast, the stone looks really flat": a statement after a request
        # for the whole photo says why, its thing is no place to ask about)
        if not places and not refers_back and not draft.unknown_places and draft.moves[start:] \
                and all(m.target is None for m in draft.moves[start:]):
            whole_asked |= {m.op for m in draft.moves[start:]}
    for places, bands, tone, unknown in kept_first if draft.moves else ():
        if places or bands:
            draft.moves = protect_moves(vocab, draft.moves, places, bands)
        elif tone is not None:
            draft.moves = _all_but_tone(draft.moves, tone)
        draft.unknown_kept += unknown
    draft.moves = _asked_over_complained(draft.moves)
    draft.moves = _remedy_said(vocab, draft.moves, clauses, tokens, order0)
    if evening and draft.moves:       # ("even it out" was done by the fix the other way)
        draft.skipped = [c for c in draft.skipped if not says_evening(tokenize(c))]
    return draft


#: "the sky looks like a painting": a likeness remarked, not how the place is wrong.
_LIKENED = frozenset(word_lists()["likeness_starts"])


def _states(clause: Clause) -> bool:
    """Whether ``clause`` says how something is ("the stone looks really flat", "it's hard to see on my phone"),
    asking nothing: a state word or a statement opener in it, and no verb that asks."""
    words = clause.text.split()
    return any(w in _STATE_WORDS or w in _SEES for w in words) \
        and not clause.of("increase", "reduce", "protect", "rollback", "reset", "objects")


def _remedied_later(vocab: Vocabulary, later: list[Clause], uses: list[Use]) -> bool:
    """Whether a later clause asks, of its own object and pointing back at nothing, a fix of the same kind
    (tone, colour or detail) as these complaints: then the complaint says why, and the request says what."""
    kinds = {_fix_kind(op) for u in uses for op, _ in u.intent.ops}
    for c in later:
        asked = [u for u in _uses(vocab, c) if not u.problem and not u.targets]
        if asked and _names_own_object(c) and kinds & {_fix_kind(op) for u in asked for op, _ in u.intent.ops}:
            return True
    return False


def _only_how(clause: Clause) -> bool:
    """Whether ``clause`` is only words for how something looks ("blue", "dark and moody"): colours and
    qualities, no place, no verb of change, no amount."""
    said = [p for p in clause.pieces if p.category != "separator"]
    return bool(said) and all(p.category in ("band", "intent") and len(p.text.split()) == 1 for p in said)


def _keeps_how(clause: Clause) -> bool:
    """Whether ``clause`` keeps a place and ends on how it stays ("keep the sky cool", "the sky stays blue")."""
    said = [p for p in clause.pieces if p.category != "separator"]
    return bool(clause.of("protect")) and bool(said) and said[-1].category in ("band", "intent")


#: "darken everything else", "the rest of it": the whole photo but the thing said, which is then a place
_BESIDES = frozenset({"else", "rest", "other", "others", "except", "apart", "besides", "but", "around", "behind"})


def _whole_asked_later(vocab: Vocabulary, later: list[Clause]) -> bool:
    """Whether a later clause asks a change of the whole photo in words that can only mean all of it
    ("brighten everything", "lift the whole thing up"; not "brighten it", which may be the thing said)."""
    return any(c.of("intent", "fix", "op", "increase", "reduce") and any(p.text not in vocab.back_references
                                                                         for p in c.of("global"))
               and not c.of("target", "band") and not _BESIDES & set(c.text.split()) for c in later)


def _fix_kind(op: str) -> str:
    """The kind of fix an op makes: its pipeline stage."""
    return ops.get_op(op).stage


def _names_own_object(clause: Clause) -> bool:
    """Whether a request clause names its own object ("recover the highlights", "bring out the texture") and
    no word of it points back at a thing said before ("brighten them", "make its colours richer")."""
    words = clause.text.split()
    return not POINTING_BACK & set(words) and any(
        w in ("the", "some") and i + 1 < len(words) for i, w in enumerate(words))


def _wishes(clause: Clause) -> bool:
    """Whether ``clause`` says what the person wants a thing to become ("id like the stone to look more
    golden", "i want the wood to glow"): after a request for the whole photo, why it is asked."""
    words = clause.text.split()
    return any(tuple(words[i:i + len(w)]) == w for w in WISH_OPENERS for i in range(len(words))) and "to" in words


#: "can't see the wood grain", "hard to see on my phone": what the person sees is how it is now.
_SEES = frozenset({"see", "seen", "tell", "make out", "read"})


def _cautions_apart(clauses: list[Clause]) -> list[Clause]:
    """A caution about a place said in the clause of the request is a clause of its own: "brighten it without
    blowing out the sky", "warm it up without turning her face orange" (a keep or avoid word after a
    quality, with a place or colour after it)."""
    out = []
    for c in clauses:
        at = next((i for i, p in enumerate(c.pieces) if p.category in ("avoid", "protect") and i
                   and any(q.category in QUALITIES for q in c.pieces[:i])
                   and any(q.category in ("target", "band") for q in c.pieces[i + 1:])), None)
        out += [c] if at is None else [Clause(c.pieces[:at], c.joined), Clause(c.pieces[at:], "soft")]
    return out


def _remedy_said(vocab: Vocabulary, moves: list[Move], clauses: list[Clause], tokens: list[str],
                 order0: int) -> list[Move]:
    """"the sky feels murky, can you lift it a touch", "brighten the bottom a bit, it's muddy down there":
    a complaint and a request for the same place in another clause of the message is the person saying
    how to fix it (or why they ask); the complaint's own fix of the same kind (tone, or colour) for that
    place gives way. A request of the other kind ("it's too dark, warmer please"), or a clause joined on
    with "and", "also", "plus" ("it's too dark, and warmer"), is asked as well."""
    def clause_of(m: Move) -> int:
        return (m.order - order0) // 100

    def kind(m: Move) -> tuple[str, str]:
        return m.key[1], "colour" if m.op in _COLOUR_OPS or m.op.startswith(_COLOUR_PREFIXES) else "tone"

    def joined_on(ci: int) -> bool:          # the clause is added with "and", "also", "plus"
        if not 0 < ci < len(clauses) or not clauses[ci].pieces:
            return False
        start = clauses[ci].pieces[0].pos
        return bool(vocab.additive_joins & set(tokens[max(0, start - 2):start]))

    remedies: dict[tuple[str, str], set[int]] = {}
    for m in moves:
        if not m.complaint and m.mode == "add" and m.value and m.source == "message":
            remedies.setdefault(kind(m), set()).add(clause_of(m))

    def said_of_it(ci: int) -> bool:         # "its lost in the dark": the complaint is about the place asked
        return 0 <= ci < len(clauses) and bool(clauses[ci].pieces) \
            and clauses[ci].pieces[0].text in vocab.pronoun_subjects

    def gives_way(m: Move) -> bool:
        ci = clause_of(m)
        kinds = [kind(m)] + ([k for k in remedies if k[1] == kind(m)[1]] if not m.target and said_of_it(ci) else [])
        return m.complaint and any(r != ci and not joined_on(max(r, ci)) for k in kinds for r in remedies.get(k, ()))

    return [m for m in moves if not gives_way(m)] if remedies else moves


#: Ops that change colour rather than tone or detail (see :func:`_remedy_said`).
_COLOUR_OPS = frozenset({"temperature", "tint", "saturation", "vibrance"})
_COLOUR_PREFIXES = ("hue_", "saturation_", "grade_")


def _asked_over_complained(moves: list[Move]) -> list[Move]:
    """A complaint and a request for the same change in one message ("more contrast pls its a bit flat",
    "it's bright behind her, darken the background a touch"): the request says how much. Each complaint
    fix whose main move the request makes (same op, place and direction) gives way to it."""
    asked = {(m.key, m.value > 0) for m in moves if not m.complaint and m.mode == "add" and m.value}
    covered = {(m.order, m.intent) for m in moves
               if m.complaint and m.rank == 0 and m.mode == "add" and (m.key, m.value > 0) in asked}
    return [m for m in moves if not (m.complaint and (m.order, m.intent) in covered)]


def _excepted(vocab: Vocabulary, clause: Clause) -> dict[str, str]:
    """Places said after "except" / "all but" in the clause -> their complements ("all_but_face")."""
    marks = clause.of("except")
    if not marks:
        return {}
    return {p.key: f"all_but_{p.key}" for p in clause.of("target")
            if p.pos > marks[0].pos and f"all_but_{p.key}" in vocab.targets}


def _complement(vocab: Vocabulary, target: str) -> str | None:
    """The target that is everything but ``target`` ("all_but_bottom"; the subject for the background)."""
    if f"all_but_{target}" in vocab.targets:
        return f"all_but_{target}"
    spec = vocab.targets.get(target)
    if not spec:
        return None
    inverse = normalize_mask_spec(dict(spec, invert=not spec.get("invert")))
    return next((t for t, s in vocab.targets.items() if normalize_mask_spec(dict(s)) == inverse), None)


def _kept_things(vocab: Vocabulary, clause: Clause) -> list[str]:
    """The things a protect or except clause keeps that no table knows: named after the mark ("but not the
    lamp": ["the lamp"]) or, said before a mark that follows its place, before it ("the chrome bits should
    stay silver"). A thing is a word no table knows right after a determiner: "keep it natural" keeps no
    thing called "natural"."""
    marks = clause.of("except", "protect")
    if not marks:
        return []
    words = [p for p in clause.pieces if p.category != "separator"]

    def things(pieces: list) -> list[str]:        # ("keep the", "but not the": the mark ends with one)
        return [p.text for k, p in enumerate(pieces) if k and p.category == "word" and p.text not in FILLER
                and p.text not in vocab.known_words and pieces[k - 1].text.split()[-1] in DETERMINERS]
    found = things([p for p in words if p.pos >= marks[0].pos]) \
        or things([p for p in words if p.pos < marks[0].pos])
    return [f"the {found[0]}"] if found else []


def _places_left_out(clause: Clause) -> bool:
    """Whether a clause leaves its places out: it opens with "except" / "but not the" or a bare "not"
    ("but not my face", "not the sky though")."""
    said = [p for p in clause.pieces if p.category != "separator"]
    return bool(said) and (said[0].category == "except" or (said[0].category == "word" and said[0].text in ("not", "no")))


def split_protected(vocab: Vocabulary, message: str) -> tuple[str, list[str]]:
    """A request and the places a last clause keeps ("more, but keep her face as it is": "more",
    ["face"]), or (message, []) when no last clause only keeps places."""
    tokens = tokenize((message or "")[:MAX_MESSAGE_CHARS])
    pieces = read_pieces(vocab, tokens)
    cuts = [i for i, p in enumerate(pieces) if p.category == "separator"]
    for cut in reversed(cuts):
        tail = pieces[cut + 1:]
        kinds = {p.category for p in tail}
        targets = [p.key for p in tail if p.category == "target"]
        if "protect" in kinds and targets and not kinds & {"intent", "fix", "op", "increase", "relative"}:
            head = [p for p in pieces[:cut]]
            if head:
                return " ".join(tokens[:head[-1].pos + len(head[-1].text.split())]), targets
    return message, []


#: Words that make a place said on its own a restriction of what was asked before it ("..., only the sky").
_ONLY = frozenset({"only", "just", "solely"})


def _only_there(vocab: Vocabulary, clause: Clause) -> bool:
    """Whether the clause is a place said with "only"/"just" and nothing else that asks ("only the sky", "but
    just on her face")."""
    rest = [w for p in clause.pieces if p.category != "target" for w in p.text.split()]
    return bool(_ONLY & set(rest)) and all(w in _ONLY or w in FILLER or w in {"on", "in", "for", "to"} for w in rest)


def restrict_moves(vocab: Vocabulary, moves: list[Move], targets: list[str]) -> list[Move]:
    """The whole-image moves asked so far, put on the places named (one layer on their union)."""
    specs, places = zip(*(vocab.place(t) for t in targets))
    spec = specs[0] if len(specs) == 1 else normalize_mask_spec({"type": "union", "masks": list(specs)})
    return onto_mask(moves, spec, " and ".join(places))


def _colour_finds(vocab: Vocabulary, clause: Clause, named) -> bool:
    """Whether a colour said of a thing could pick it out: not one pointed at or sized ("that building", "the
    little one") nor one placed in a part of the frame ("the pillar in the middle"), which the colour cannot
    tell from others like it; a person's part ("her nose") or a thing by another ("the mat under the cat") can."""
    if named.small:
        return False
    if not named.specific or named.text.split()[0] in PERSONS:
        return True
    return not any((vocab.targets.get(t) or {}).get("type") in ("radial", "gradient") for t in _locators(vocab, clause))


def _colour_of_a_thing(clause: Clause) -> bool:
    """Whether the clause's colour describes the thing said right after it ("tone down the orange suit"): the
    colour finds that thing, as in "make the suit less orange" (not "give it a green moustache", a new thing)."""
    at = next(i for i, p in enumerate(clause.pieces) if p.category == "band")
    # ("... a bit", "... bolder": how much, said after the thing)
    after = [p for p in clause.pieces[at + 1:] if p.category not in ("magnitude", "increase", "reduce")]
    if at == 0 or clause.pieces[at - 1].text.split()[-1] not in DETERMINERS or not after \
            or not all(p.category == "word" for p in after):
        return False
    # "the orange suit"; "the blue on the guitar body": the colour of a thing said after it
    return len(after) <= 2 or (after[0].text in COLOUR_OF_A_THING and len(after) <= 5)


def _implicit(vocab: Vocabulary, clause: Clause) -> list[Piece]:
    """The reduce or increase words of ``clause`` that mean an intent of their own when no quality is named
    ("tone down the sky", "bring the shadows up"; the profile's ``implicit_intents``)."""
    return [p for p in clause.of("reduce", "increase") if p.text in vocab.implicit_intents]


def _implicit_use(vocab: Vocabulary, clause: Clause, verb: Piece, targets: list[str]) -> Use:
    """The intent ``verb`` means on ``targets`` (the whole photo when none), sized by the clause's magnitude."""
    mags = clause.of("magnitude")
    return Use(vocab.intents[vocab.implicit_intents[verb.text]], targets=targets, pos=verb.pos,
               scale=vocab.magnitudes[mags[0].key] if mags else 1.0)


def _kept_tone(vocab: Vocabulary, clause: Clause) -> tuple[dict, str] | None:
    """The tone a protect clause keeps ("keep the snow white": the whites), as its mask and label."""
    words = [p.text for p in clause.pieces]
    found = [f for f in find_phrases(words, vocab.kept_tones)
             if f[2] not in vocab.kept_tones_of_things or not (clause.of("target") or words[f[0] + f[1]:][:1] == ["enough"])]
    return vocab.kept_tone_masks[found[0][2]] if found else None


def _all_but_tone(moves: list[Move], tone: tuple[dict, str]) -> list[Move]:
    """The whole-image moves put on everything but a kept tone ((mask, label) of ``_kept_tone``)."""
    spec, label = tone
    return onto_mask(moves, normalize_mask_spec(dict(spec, invert=True)), f"everything but {label}", within=True)


def _damped(vocab: Vocabulary, use: Use, scale: float) -> float:
    """A magnitude on a use: as said for a wish, damped for a complaint's fix ("a bit murky" still shows).

    A colour complaint about one band ("the greens are a bit harsh") keeps its fix's full scale
    there: the profile's problem scale is for the whole photo.
    """
    if not use.problem:
        return scale
    damp = vocab.magnitude_damping
    problem = vocab.problems[use.problem]
    return (1.0 - damp + damp * scale) * (problem.scale if use.bands == [] or not problem.band else 1.0)


def _asks_of_the_thing(vocab: Vocabulary, clause: Clause) -> bool:
    """Whether a clause asks a change of the things it names by their colour and of nothing else ("darken the
    grass", not "its meant to be grass", "keep the trees black" or "the grass by that tree")."""
    return bool(clause.of("intent", "fix", "op", "increase", "reduce", "problem")) \
        and not clause.of("protect", "except", "avoid") and not unknown_words(vocab, clause) \
        and all(p.text.startswith("the ") or i and clause.pieces[i - 1].text in NAMING_DETERMINERS
                for i, p in enumerate(clause.pieces) if p.category == "band" and vocab.band_things.get(
                    p.text.removeprefix("the ")))


def _absent_things(vocab: Vocabulary, clause: Clause, stats: Mapping | None) -> list[str]:
    """Things named by their colour ("the water") that the photo has almost none of."""
    bands = (stats or {}).get("bands") or {}
    out = []
    for p in clause.of("band"):
        band = vocab.band_things.get(p.text.removeprefix("the "))
        if band and band in bands and float(bands[band].get("share", 1.0)) < vocab.band_things_min_share:
            out.append(p.text if p.text.startswith("the ") else f"the {p.text}")
    return out


def _locators(vocab: Vocabulary, clause: Clause) -> set[str]:
    """Places said only to locate a thing ("the papers under the cat", "the bench by the tree"): the target
    right after a locating word, which is where the thing is, not the thing."""
    pieces, out = clause.pieces, set()
    for i, p in enumerate(pieces):
        if p.text not in LOCATING or find_phrases([p.text], vocab.place_relations):
            continue
        k = i + 1
        while k < len(pieces) and pieces[k].text in DETERMINERS:
            k += 1
        if k < len(pieces) and pieces[k].category == "target":
            out.add(pieces[k].key)
    return out


def _fix_key(use: Use) -> tuple:
    return use.intent.name, tuple(use.targets), tuple(use.bands)


def _apply_uses(vocab: Vocabulary, uses: list[Use], state: EditState, order: int, source: str, draft: Draft,
                dialogue=None, thing_named: bool = False) -> list[Use]:
    """Turn a clause's intents into moves ("don't ..." ones only leave a note); returns those applied.

    "not that soft", "less dreamy" right after that look was applied, or a complaint about what
    the last change did ("now it's too yellow" after "warmer"): take that change back part of the
    way (agent/planning/followups.py), never add its opposite on top. ``thing_named``: the clause
    complains about one thing ("the cup looks grey"): its fix goes there, nothing is taken back.
    """
    from agent.planning.followups import reduce_look_moves, undo_cause_moves

    applied = []
    taken_back: dict[int, list[Move]] = {}
    for i, u in enumerate(uses):
        if u.avoid or u.number is not None or u.targets or u.bands:
            continue
        moves = []
        if u.negated and not u.reset:              # "not that soft" after a soft look
            moves = reduce_look_moves(vocab, dialogue, u.intent, u.scale, state, order + u.pos, draft)
        elif u.problem and not thing_named:        # "too yellow now" after a warming
            moves = undo_cause_moves(vocab, dialogue, vocab.problems[u.problem], u.intent, u.scale, state,
                                     order + u.pos, draft)
        if moves:
            taken_back[i] = moves
    # a complaint the last change caused is answered by taking it back, not by its other fixes too
    answered = {uses[i].problem for i in taken_back if uses[i].problem}
    for i, u in enumerate(uses):
        if u.avoid:
            draft.notes.append(f"Leaving {u.intent.label} alone, as asked.")
            continue
        if i in taken_back:
            draft.moves += taken_back[i]
        elif u.problem and u.problem in answered:
            continue
        else:
            draft.moves += _intent_moves(vocab, u, state, order + u.pos, source, draft.notes)
        applied.append(u)
    return applied


def _reset_targets(vocab: Vocabulary, targets: list[str], state: EditState, order: int, draft: Draft) -> list[Move]:
    """'reset the sky': every op of that local layer back to 0."""
    moves = []
    for t in targets:
        spec, label = vocab.place(t)
        layer = state.find_layer(spec)
        if layer is not None and layer.settings:
            moves += [Move(op, 0, "set", spec, f"reset {label}", f"resetting the edits on {label}", "message",
                           order, rank) for rank, op in enumerate(layer.settings)]
        elif t in ops.OPS and state.value(t):
            moves.append(Move(t, 0, "set", None, f"reset {t}", f"resetting {t}", "message", order, 0))
        else:
            draft.objects = True
            draft.skipped.append(f"reset {label}")
    return moves

