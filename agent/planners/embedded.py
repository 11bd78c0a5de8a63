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
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from agent.planners.base import Plan, PlanRequest, SubGoal
from pipeline import ops
from pipeline.masks import describe_mask, normalize_mask_spec
from pipeline.state import EditState
from profiles import Profile, ProfileError, load_profile

#: Longer messages are cut: a planner request is a sentence or two, not a document.
MAX_MESSAGE_CHARS = 1000
#: Exposure op: 100 = +2 EV (pipeline/ops.py), so one stop is 50 units.
UNITS_PER_EV = 50.0
#: "less X" after X was added never removes less than this (a visible step).
MIN_TONE_DOWN = 6

_TOKEN = re.compile(r"[+-]?\d+(?:\.\d+)?%?(?![a-z])|[a-z0-9][a-z0-9&']*|[,;.!?:]")
_HARD_SEPARATORS = {",", ";", ".", "!", "?", ":"}
_FILLER = {
    "a", "an", "the", "it", "its", "it's", "make", "makes", "making", "please", "can", "could", "would",
    "you", "i", "i'd", "want", "like", "me", "my", "this", "that", "these", "those", "photo", "image",
    "picture", "shot", "of", "to", "in", "on", "at", "for", "so", "some", "is", "are", "be", "look",
    "looks", "looking", "feel", "feels", "bit", "now", "just", "little", "by", "with", "give", "get",
    "should", "and", "but", "too", "lot", "kind", "sort", "maybe", "try", "let's", "lets", "do", "bring",
    "there", "here", "all", "one", "same", "again", "up", "down", "them", "they", "we", "our", "your",
    "thanks", "thank", "pic", "tone", "tones", "colours", "colors", "area", "part", "side",
    "whole", "overall", "much", "very", "less", "more", "who", "what", "which", "seems", "seem",
}


# ---------------------------------------------------------------------------
# Vocabulary, compiled once from a profile
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Intent:
    """One entry of intent_translations: a word family and its op moves."""

    name: str
    label: str
    kind: str
    ops: tuple[tuple[str, int], ...]      # most important first; moderate strength
    mode: str = "add"
    opposite: str | None = None
    doing: str = ""

    @property
    def primary(self) -> str:
        return self.ops[0][0]


@dataclass(frozen=True)
class Piece:
    """A matched phrase: ``category`` (intent, fix, target, band, magnitude, ...) and ``key``."""

    category: str
    key: Any
    text: str
    pos: int


# Same phrase in two lists: the earlier category wins.
_CATEGORY_ORDER = ("relative", "rollback", "intent", "fix", "target", "band", "magnitude", "towards", "reduce",
                   "avoid", "reset", "set", "increase", "objects", "global", "separator", "op")


class Vocabulary:
    """The engine profile's prompt_engineering section, compiled for matching."""

    def __init__(self, profile: Profile):
        pe = profile.prompt_engineering
        self.profile = profile
        self.intents: dict[str, Intent] = {}
        for name, entry in (pe.get("intent_translations") or {}).items():
            self.intents[name] = Intent(
                name=name, label=entry.get("label") or name.replace("_", " "),
                kind=entry.get("kind", "direct"), ops=tuple((k, int(v)) for k, v in entry["ops"].items()),
                mode=entry.get("mode", "add"), opposite=entry.get("opposite"),
                doing=entry.get("doing") or f"making {{where}} {entry.get('label') or name.replace('_', ' ')}",
            )
        self.targets: dict[str, dict] = {k: dict(v["mask"]) for k, v in (pe.get("targets") or {}).items()}
        self.target_labels = {k: v.get("label") for k, v in (pe.get("targets") or {}).items()}
        self.band_ops: dict[str, str] = dict(pe.get("band_ops") or {})
        self.magnitudes: dict[str, float] = {w: float(e["scale"]) for w, e in
                                             ((pe.get("magnitudes") or {}).get("words") or {}).items()}
        self.relative: dict[str, Mapping] = dict(pe.get("relative_requests") or {})
        self.styles = pe.get("styles") or {}
        grammar = pe.get("grammar") or {}
        lists: dict[str, list[tuple[str, Any]]] = {c: [] for c in _CATEGORY_ORDER}
        for name, entry in self.relative.items():
            lists["relative"] += [(w, name) for w in entry.get("words", ())]
        for name, entry in (pe.get("intent_translations") or {}).items():
            lists["intent"] += [(w, name) for w in entry.get("words", ())]
            lists["fix"] += [(w, name) for w in entry.get("fixes", ())]
        for name, entry in (pe.get("targets") or {}).items():
            lists["target"] += [(w, name) for w in entry["words"]]
        for band, entry in (pe.get("bands") or {}).items():
            lists["band"] += [(w, band) for w in entry["words"]]
        lists["magnitude"] = [(w, w) for w in self.magnitudes]
        for cat in ("reduce", "avoid", "reset", "set", "increase", "objects", "global", "rollback", "towards"):
            lists[cat] += [(w, cat) for w in grammar.get(cat, ())]
        lists["reduce"] += [(w, "reduce") for w in grammar.get("reduce_after", ())]
        # "tone down the sky": these reduce words, on a target with no quality named, mean
        # the implicit intent (profile: implicit_intents.tone_down).
        lists["reduce"] += [(w, "reduce") for w in grammar.get("tone_down", ())]
        self.tone_down = {" ".join(_tokens(w)) for w in grammar.get("tone_down", ())}
        implicit = dict(pe.get("implicit_intents") or {})
        self.tone_down_intent = implicit.get("tone_down")
        if self.tone_down_intent is not None and self.tone_down_intent not in self.intents:
            raise ProfileError(str(profile.path), "prompt_engineering.implicit_intents.tone_down",
                               f"no intent called {self.tone_down_intent!r}")
        # "shift the oranges towards yellow" (a hue move), "shift the tint towards green" (a cast).
        shifts = dict(pe.get("colour_shifts") or {})
        self.shift_hue = int(shifts.get("hue", 0))
        self.casts: dict[str, tuple[tuple[str, int], ...]] = {}
        for band, moves in (shifts.get("casts") or {}).items():
            where = f"prompt_engineering.colour_shifts.casts.{band}"
            if band not in ops.BANDS:
                raise ProfileError(str(profile.path), where, f"expected one of {', '.join(ops.BANDS)}")
            try:
                self.casts[band] = tuple((ops.get_op(k).name, int(v)) for k, v in moves.items())
            except ops.OpError as exc:
                raise ProfileError(str(profile.path), where, str(exc)) from None
        lists["separator"] = [(w, "soft") for w in grammar.get("separators", ())]
        # Op names and labels ("temperature", "green saturation", "saturation_green"): lowest priority.
        for op in ops.OPS.values():
            lists["op"] += [(op.name.replace("_", " "), op.name), (op.name, op.name), (op.label.lower(), op.name)]
        self.phrases: dict[tuple[str, ...], tuple[str, Any]] = {}
        for cat in _CATEGORY_ORDER:
            for phrase, key in lists[cat]:
                toks = tuple(_tokens(phrase))
                if toks and toks not in self.phrases:
                    self.phrases[toks] = (cat, key)
        self.longest = max((len(t) for t in self.phrases), default=1)

    # -- capability text for "I don't know how to do that yet" ----------
    def capabilities(self) -> str:
        direct = [i.label for i in self.intents.values() if i.kind == "direct"]
        looks = [i.label for i in self.intents.values() if i.kind == "artistic"]
        where = [self.target_labels.get(k) or k for k in self.targets]
        rel = [str(e.get("label") or k.replace("_", " ")) for k, e in self.relative.items()]
        parts = []
        if direct:
            parts.append(", ".join(direct[:12]))
        if looks:
            parts.append("looks such as " + ", ".join(looks[:8]))
        if where:
            parts.append("local edits on " + ", ".join(where[:6]) + " or one colour (\"less saturated greens\")")
        if rel:
            parts.append(", ".join(rel))
        return "; ".join(parts) + "."


def _tokens(text: str) -> list[str]:
    text = text.lower().replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text)    # golden-hour, black-and-white
    return _TOKEN.findall(text)


#: Modifier phrases that may give their last word to a following quality phrase.
_YIELDING = ("magnitude", "increase", "reduce")


def _starts_quality(vocab: Vocabulary, tokens: list[str], j: int) -> bool:
    """Whether an intent phrase of two or more words starts at token ``j``."""
    for n in range(min(vocab.longest, len(tokens) - j), 1, -1):
        hit = vocab.phrases.get(tuple(tokens[j:j + n]))
        if hit and hit[0] in ("intent", "fix"):
            return True
    return False


def _match(vocab: Vocabulary, tokens: list[str]) -> list[Piece]:
    """Greedy longest-phrase matching; unmatched tokens become 'word'/'number'/'separator' pieces."""
    pieces: list[Piece] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _HARD_SEPARATORS:
            pieces.append(Piece("separator", "hard", tok, i))
            i += 1
            continue
        if re.fullmatch(r"[+-]?\d+(?:\.\d+)?%?", tok):
            pieces.append(Piece("number", float(tok.rstrip("%")), tok, i))
            i += 1
            continue
        for n in range(min(vocab.longest, len(tokens) - i), 0, -1):
            hit = vocab.phrases.get(tuple(tokens[i:i + n]))
            if hit:
                if n > 1 and hit[0] in _YIELDING and _starts_quality(vocab, tokens, i + n - 1) \
                        and tuple(tokens[i:i + n - 1]) in vocab.phrases:
                    # "add more magenta", "a bit more contrast": the modifier gives its last
                    # word back to the quality phrase it begins ("more magenta").
                    n -= 1
                    hit = vocab.phrases[tuple(tokens[i:i + n])]
                pieces.append(Piece(hit[0], hit[1], " ".join(tokens[i:i + n]), i))
                i += n
                break
        else:
            pieces.append(Piece("word", tok, tok, i))
            i += 1
    return pieces


# ---------------------------------------------------------------------------
# Clauses
# ---------------------------------------------------------------------------

@dataclass
class Clause:
    pieces: list[Piece]
    joined: str | None = None            # how it joins the previous clause: "soft" | "hard" | None

    def of(self, *categories: str) -> list[Piece]:
        return [p for p in self.pieces if p.category in categories]

    @property
    def text(self) -> str:
        return " ".join(p.text for p in self.pieces)

    @property
    def content_words(self) -> list[str]:
        return [p.text for p in self.pieces if p.category == "word" and p.text not in _FILLER]


def _clauses(pieces: list[Piece]) -> list[Clause]:
    out: list[Clause] = []
    current: list[Piece] = []
    joined: str | None = None
    pending: str | None = None
    for p in pieces:
        if p.category == "separator":
            if current:
                out.append(Clause(current, joined))
                current = []
                joined = None
                pending = p.key
            else:
                pending = "hard" if "hard" in (pending, p.key) else p.key
            continue
        if not current:
            joined = pending if out else None
            pending = None
        current.append(p)
    if current:
        out.append(Clause(current, joined))
    return out


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


def _nearest(p: Piece, anchors: list[Piece], *, prefer_after: bool = True) -> Piece | None:
    """The anchor a modifier belongs to: the next one in the clause, else the previous one."""
    after = [a for a in anchors if a.pos > p.pos]
    before = [a for a in anchors if a.pos < p.pos]
    if prefer_after and after:
        return after[0]
    if before:
        return before[-1]
    return after[0] if after else None


def _op_intent(op_name: str) -> Intent:
    """An op named directly ("temperature +10", "reset the tint") as a one-op intent."""
    o = ops.get_op(op_name)
    return Intent(name=f"op:{o.name}", label=o.label.lower(), kind="op", ops=((o.name, 20),),
                  doing=f"changing {o.label.lower()} of {{where}}")


def _uses(vocab: Vocabulary, clause: Clause) -> list[Use]:
    anchors = clause.of("intent", "fix", "op")
    uses: dict[int, Use] = {}
    for a in anchors:
        intent = vocab.intents[a.key] if a.category != "op" else _op_intent(a.key)
        uses[a.pos] = Use(intent, pos=a.pos)
    for p in clause.pieces:
        if p.category in ("magnitude", "reduce", "avoid", "number", "set", "reset", "rollback"):
            anchor = _nearest(p, anchors, prefer_after=p.category != "number")
            if anchor is None:
                continue
            use = uses[anchor.pos]
            if p.category == "magnitude":
                use.scale = vocab.magnitudes[p.key]
            elif p.category == "reduce" and anchor.category != "fix":
                use.negated = True   # "too blurry" still means sharper: fix words are never negated
            elif p.category == "avoid":
                use.avoid = True
            elif p.category == "number":
                use.number = p.key
            elif p.category == "set":
                use.set_mode = True
            elif p.category in ("reset", "rollback"):
                use.reset = True
    # "set contrast to 20" / "contrast = 20": a number after "to" or "=" is absolute.
    for i, p in enumerate(clause.pieces):
        if p.category == "number" and i and clause.pieces[i - 1].text in ("to", "at", "="):
            anchor = _nearest(p, anchors, prefer_after=False)
            if anchor is not None:
                uses[anchor.pos].set_mode = True
    targets = [p.key for p in clause.of("target")]
    bands = [p.key for p in clause.of("band")]
    for use in uses.values():
        use.targets, use.bands = list(targets), list(bands)
    return [uses[a.pos] for a in anchors]


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


# ---------------------------------------------------------------------------
# Moves: what a plan is built from before merging
# ---------------------------------------------------------------------------

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

    @property
    def key(self) -> tuple[str, str]:
        return self.op, _spec_key(self.target)


def _spec_key(spec: Mapping | None) -> str:
    return "" if spec is None else repr(sorted(normalize_mask_spec(spec).items()))


@dataclass
class Draft:
    """Moves and notes collected from one text (the message or the feedback)."""

    moves: list[Move] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    rollback: bool = False
    objects: bool = False
    understood_any: bool = False
    relative_without_stats: list[str] = field(default_factory=list)
    bare_targets: list[str] = field(default_factory=list)     # "the sky" with nothing to do to it


def _where(vocab: Vocabulary, target_name: str | None, band: str | None, spec: Mapping | None) -> str:
    band_text = f"the {band}s" if band else ""
    if target_name:
        place = vocab.target_labels.get(target_name) or describe_mask(normalize_mask_spec(vocab.targets[target_name]))
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
    spec = dict(vocab.targets[target_name]) if target_name else None
    if band:
        mapped = _band_moves(vocab, values, band) if mode == "add" else None
        if mapped:
            return mapped, spec
        band_mask = {"type": "color", "band": band}
        spec = band_mask if spec is None else {"type": "intersect", "masks": [spec, band_mask]}
    return values, spec


def _moves_at(vocab: Vocabulary, use: Use, target_name: str | None, band: str | None, state: EditState,
              order: int, source: str, notes: list[str]) -> list[Move]:
    intent = use.intent
    values, spec = _locate(vocab, list(intent.ops), intent.mode, target_name, band)
    where = _where(vocab, target_name, band, spec)
    on_where = f" on {where}" if where != "the image" else ""

    def current(op: str, at: dict | None) -> int:
        return state.value(op, normalize_mask_spec(at)) if at else state.value(op)

    def move(op: str, value: int, mode: str, at: dict | None, phrase: str, rank: int) -> Move:
        return Move(op, value, mode, at, intent.label, phrase, source, order, rank, intent.kind)

    negated = use.negated
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
    if intent.mode == "set" and use.number is None:
        phrase = f"bringing the colour back to {where}" if negated else intent.doing.format(where=where)
        return [move(op, 0 if negated else v, "set", spec, phrase, rank) for rank, (op, v) in enumerate(values)]
    sign = -1 if negated else 1
    phrase = intent.doing.format(where=where) if not negated else f"making {where} less {intent.label}"
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

def _read(vocab: Vocabulary, text: str, request: PlanRequest, source: str, order0: int = 0) -> Draft:
    draft = Draft()
    tokens = _tokens(text[:MAX_MESSAGE_CHARS])
    clauses = _clauses(_match(vocab, tokens))
    previous_uses: list[Use] = []
    previous_targets: list[str] = []
    for ci, clause in enumerate(clauses):
        order = order0 + ci * 100
        towards = _towards_uses(vocab, clause, draft.notes)
        if towards is not None:
            # "shift the oranges towards yellow": the shift is the whole clause
            draft.understood_any = True
            previous_uses = _apply_uses(vocab, towards, request.state, order, source, draft)
            previous_targets = towards[0].targets if towards else []
            continue
        for rel in clause.of("relative"):
            draft.understood_any = True
            draft.moves += _relative_moves(vocab, rel.key, request.image_stats, order + rel.pos, draft,
                                          request.state)
        uses = _uses(vocab, clause)
        targets = [p.key for p in clause.of("target")]
        bands = [p.key for p in clause.of("band")]
        is_global = bool(clause.of("global"))
        soft = clause.joined == "soft"
        if uses and not targets and not is_global and soft and previous_targets:
            for u in uses:                       # "make the sky darker and bluer": bluer is the sky too
                u.targets = list(previous_targets)
        if not uses and (targets or bands):
            if clause.of("reset", "rollback") and targets and not bands:
                draft.moves += _reset_targets(vocab, targets, request.state, order, draft)
                draft.understood_any = True
                previous_targets = targets
                continue
            tone_down = [p for p in clause.of("reduce") if p.text in vocab.tone_down]
            if targets and not bands and tone_down and vocab.tone_down_intent:
                # "tone down the sky": less of what stands out there (the profile's implicit intent)
                mags = clause.of("magnitude")
                uses = [Use(vocab.intents[vocab.tone_down_intent], targets=targets, pos=tone_down[0].pos,
                            scale=vocab.magnitudes[mags[0].key] if mags else 1.0)]
            elif bands and (clause.of("reduce", "increase", "magnitude") or not previous_uses or not soft) \
                    and "more_saturated" in vocab.intents:
                # "less green", "more blue": the band's saturation
                use = Use(vocab.intents["more_saturated"], targets=targets, bands=bands, pos=clause.pieces[0].pos)
                use.negated = bool(clause.of("reduce"))
                mags = clause.of("magnitude")
                use.scale = vocab.magnitudes[mags[0].key] if mags else 1.0
                uses = [use]
            elif previous_uses and soft:
                # "brighten the face and the background": same intents, new targets
                uses = [replace(u, targets=targets or u.targets, bands=bands or u.bands) for u in previous_uses]
        if not uses:
            if clause.of("rollback") or (clause.of("reset") and not clause.content_words):
                draft.rollback = True
            elif clause.of("objects") or (clause.of("reset") and targets):
                draft.objects = True
                draft.skipped.append(clause.text)
            elif targets:
                draft.skipped.append(clause.text)
                draft.bare_targets += [vocab.target_labels.get(t) or t for t in targets]
            elif not clause.of("relative") and (clause.content_words or clause.of("increase", "objects")):
                draft.skipped.append(clause.text)
            continue
        if clause.of("objects"):
            draft.objects = True
        draft.understood_any = True
        previous_uses = _apply_uses(vocab, uses, request.state, order, source, draft)
        previous_targets = uses[0].targets if uses else []
    return draft


def _apply_uses(vocab: Vocabulary, uses: list[Use], state: EditState, order: int, source: str, draft: Draft) -> list[Use]:
    """Turn a clause's intents into moves ("don't ..." ones only leave a note); returns those applied."""
    applied = []
    for u in uses:
        if u.avoid:
            draft.notes.append(f"Leaving {u.intent.label} alone, as asked.")
            continue
        draft.moves += _intent_moves(vocab, u, state, order + u.pos, source, draft.notes)
        applied.append(u)
    return applied


def _reset_targets(vocab: Vocabulary, targets: list[str], state: EditState, order: int, draft: Draft) -> list[Move]:
    """'reset the sky': every op of that local layer back to 0."""
    moves = []
    for t in targets:
        spec = normalize_mask_spec(vocab.targets[t])
        layer = state.find_layer(spec)
        label = vocab.target_labels.get(t) or describe_mask(spec)
        if layer is not None and layer.settings:
            moves += [Move(op, 0, "set", spec, f"reset {label}", f"resetting the edits on {label}", "message",
                           order, rank) for rank, op in enumerate(layer.settings)]
        elif t in ops.OPS and state.value(t):
            moves.append(Move(t, 0, "set", None, f"reset {t}", f"resetting {t}", "message", order, 0))
        else:
            draft.objects = True
            draft.skipped.append(f"reset {label}")
    return moves


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
        adds = sum(m.value for m in group if m.mode == "add")
        if sets:
            value, mode = sets[-1].value + adds, "set"
        else:
            value, mode = adds, "add"
        op = ops.get_op(key[0])
        current = state.value(op.name, first.target) if first.target else state.value(op.name)
        if mode == "add":
            value = op.clamp(current + value) - current    # never ask past the op's range
            if not value:
                if current:
                    notes.append(f"{op.label} is already at its limit ({current:+d}).")
                continue
        else:
            value = op.clamp(value)
            if value == current:
                continue
        merged.append(replace(first, value=value, mode=mode, rank=min(m.rank for m in group)))
    return merged


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

    # -- public ----------------------------------------------------------
    def styles(self) -> list[str]:
        """Named looks a session may start with."""
        return self.profile.styles()

    def plan(self, request: PlanRequest) -> Plan:
        """1..request.max_sub_goals sub-goals for ``request.message``, or understood=False."""
        vocab = self.vocab
        message = (request.message or "").strip()
        draft = _read(vocab, message, request, "message")
        notes = list(draft.notes)
        moves = list(draft.moves)

        style_moves = self._style_moves(request, notes)
        moves = style_moves + moves
        replan_extra = self._replan(request, moves, notes) if (request.feedback or request.diagnoses) else []
        moves += replan_extra

        if not moves:
            return self._not_understood(draft, notes)

        conflict_notes: list[str] = []
        merged = _merge(moves, request.state, conflict_notes)
        limited = _limit(merged, max(1, int(request.max_sub_goals)), notes)
        pairs: list[tuple[Move, SubGoal]] = []
        for i, m in enumerate(limited, 1):
            goal = SubGoal.from_dict({
                "op": m.op, "value": m.value, "mode": m.mode, "target": m.target, "id": f"sg{i}",
                "description": "",
            })
            goal.description = f"{m.label}: {goal.summary()}"[:200]
            pairs.append((m, goal))
        goals = [g for _, g in pairs]
        self._style_respect_notes(request, goals, notes)
        _sweet_spot_notes(self.profile, goals, request.state, notes)
        if not goals:
            reply = " ".join(conflict_notes) or "Nothing to change: those settings are already where you asked."
            return Plan(sub_goals=[], reply=reply, understood=False, notes=conflict_notes + notes, source=self.name)
        extra = []
        if draft.skipped:
            extra.append("I skipped \u201c" + "\u201d, \u201c".join(s[:40] for s in draft.skipped[:2])
                         + "\u201d: I can't do that yet.")
        return Plan(sub_goals=goals, reply=_reply(pairs, conflict_notes, extra),
                    understood=True, notes=conflict_notes + notes, source=self.name)

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

    def _replan(self, request: PlanRequest, moves: list[Move], notes: list[str]) -> list[Move]:
        """Corrections for a replan: iteration signals for diagnoses, or the person's feedback."""
        extra: list[Move] = []
        diagnoses = list(request.diagnoses)
        if request.feedback and not request.diagnoses:
            # The person's words ("too strong", "cooler instead") or a judge text without diagnoses.
            fb = _read(self.vocab, request.feedback, request, "feedback", order0=10_000)
            extra += fb.moves
            if not fb.moves:
                text = " ".join(_tokens(request.feedback))
                for name, words in self.profile.iteration_signal_words().items():
                    if any(re.search(rf"(?<![a-z']){re.escape(' '.join(_tokens(w)))}(?![a-z'])", text) for w in words):
                        diagnoses.append(name)
        applied = False
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
                for m in moves:
                    if m.source in ("message", "relative") and m.mode == "add" and (not scope or m.op == scope):
                        m.value = int(round(m.value * signal.scale_plan)) or int(math.copysign(1, m.value))
                notes.append(f"Replanning for {signal.diagnosis.replace('_', ' ')}"
                             f"{' of ' + scope if scope else ''}: planned amounts \u00d7{signal.scale_plan:g}.")
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

    def _not_understood(self, draft: Draft, notes: list[str]) -> Plan:
        can = self.vocab.capabilities()
        if draft.rollback:
            reply = ("To undo, roll back: the Roll back button, or /rollback <turn> in the CLI, "
                     "restores an earlier version exactly.")
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
            reply = f"I don't know how to do that yet. I can: {can}"
        return Plan(sub_goals=[], reply=reply, understood=False, notes=notes, source=self.name)
