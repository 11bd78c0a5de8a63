"""The judge's own reading of what the person asked (never the planner's plan).

:func:`read_request` turns a message, and the messages of the changes that
still stand before it (for follow-ups such as "bit more" or "too much, halve
it"), into a :class:`Reading`: which measured property of the photo should
move (L*, contrast, chroma, a*, b*, detail), which way, roughly how far, and
where (the whole photo, a target such as the sky or "the cup", and what must
stay put outside it). The vocabulary is data, in ``profiles/_reading.yaml``,
kept apart from the planner's vocabulary on purpose: the judge checks the
pixels against the words, not against what the planner understood.

    >>> r = read_request("it looks a bit murky")
    >>> r.kind, [str(e) for e in r.expects]
    ('edit', ['contrast up (slight)'])

Kinds: ``edit`` (a wish or a complaint), ``follow_up`` (more / less / the same
elsewhere, resolved against the last reading), ``undo``, ``chat``,
``question``, ``unsupported`` (a change to what is in the picture) and
``unknown`` (nothing the judge can read).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import yaml

from pipeline import ops

from agent.conversation.clauses import BEING, CAST_WISHES
from agent.conversation.words import (SEPARATORS, PhraseTable, added_to_last, before_comparative, turned_round, Speller, drop_clauses, effect_said, normalise,
                                     opening_interjections, percent_share, rhetorical_rest, sized_follow_ups,
                                     taken_some_out, tells_how_taken, tokenize, word_lists,
                                     compared_as_too, said_plainly, excess_phrases)

READING_FILE = Path(__file__).resolve().parents[2] / "profiles" / "_reading.yaml"
#: The planner's profile: its complaint table (``vocabulary.complaints``) is read, not copied.
ENGINE_FILE = READING_FILE.parent / "engine.yaml"
PROPERTIES = ("L", "contrast", "chroma", "a", "b", "detail")
SIZE_WORDS = ("slight", "plain", "strong")
KINDS = ("edit", "follow_up", "undo", "chat", "question", "unsupported", "unknown")


# -- the vocabulary ------------------------------------------------------------------

@dataclass(frozen=True)
class Quality:
    name: str
    alternatives: tuple[tuple[tuple[str, int], ...], ...]   # ((prop, +1/-1), ...) per alternative
    problem: bool = False
    size: int | None = None
    fix: bool = False          # the moves are already the fix of a complaint (never reversed)
    band: str | None = None    # a colour complaint ("too red"): about a thing, it is that band's colour
    look: bool = False         # a style ("dreamy", "vintage"), not an amount: overdone only far later


@dataclass(frozen=True)
class Lexicon:
    """The compiled vocabulary of ``profiles/_reading.yaml``."""

    properties: Mapping[str, Mapping[str, Any]]
    overshoot: tuple[float, float, float]
    overshoot_floor: float
    overshoot_full: float                     # up to this many times the size: a full score
    overshoot_start: float                    # the score at the overshoot cap
    look_overshoot: float                     # a look's caps are this many times the overshoot caps
    magnitudes: Mapping[str, int]             # phrase -> 0 / 2
    qualities: Mapping[str, Quality]          # phrase -> quality
    complaint_frames: frozenset[str]
    goal_frames: tuple[str, ...]              # "so it looks golden": the quality after it is the aim
    negations: frozenset[str]
    reduce_after: tuple[str, ...]
    enough: frozenset[str]
    follow_more: tuple[str, ...]
    follow_less: tuple[str, ...]
    retarget: tuple[str, ...]
    less_share: tuple[float, float]
    undo: tuple[str, ...]
    chat: frozenset[str]
    question_starts: tuple[str, ...]
    unsupported: tuple[str, ...]
    targets: Mapping[str, tuple[str, dict]]  # phrase -> (target name, mask spec)
    bands: Mapping[str, str]                 # phrase -> band
    band_things: frozenset[str]              # band words that name a thing of that colour ("water")
    not_places: frozenset[str]
    global_words: tuple[str, ...]
    tools: tuple[str, ...] = ()
    complaints: Mapping[str, Quality] = field(default_factory=dict)   # the engine's problem words -> fix
    more_scales: Mapping[str, float] = field(default_factory=dict)     # the engine's "more" phrases -> scale
    less_fractions: Mapping[str, float] = field(default_factory=dict)  # the engine's "halve it" -> share back
    object_fix: Quality | None = None        # a colour complaint about a thing: less of that band
    less_of_place: Quality | None = None     # a reducing verb on a place, no quality ("tone down the sky")
    place_reducers: tuple[str, ...] = ()
    more_of_place: Quality | None = None     # a raising verb on a place, no quality ("bring the shadows up")
    place_raisers: tuple[str, ...] = ()
    repeat_but: Mapping[str, float] = field(default_factory=dict)      # the engine's "same again but less" -> factor
    reverse: tuple[str, ...] = ()            # the engine's followups.reverse: "the other way" (replan feedback)
    problem_also: tuple[str, ...] = ()       # "cold too": a dual word added to what is wrong
    wishes: tuple[str, ...] = ()             # "make it a bit soft": a dual word wished for
    complaint_damping: float = 0.0           # the engine's complaints.magnitude_damping ("a bit murky")
    filler: frozenset[str] = frozenset()     # the engine's followups.filler ("please", "ok"): words that add nothing
    avoid: tuple[str, ...] = ()              # the engine's grammar.avoid ("don't")
    avoid_degree: tuple[str, ...] = ()       # ... and avoid_degree: "don't make it so yellow" is "not so yellow"
    protect: tuple[str, ...] = ()            # the engine's grammar.protect + except: "but leave her face alone"
    dismiss: tuple[str, ...] = ()            # the engine's place_guesses.dismiss: "never mind the cord"
    carry_on: frozenset[str] = frozenset()   # the engine's followups.carry_on: "warmer still", "even brighter"
    counting: frozenset[str] = frozenset()   # "the two puppies": the thing is the word after the count
    disapproval: frozenset[str] = frozenset()  # "sickly green": a complaint about the quality after it
    insist: tuple[str, ...] = ()             # the engine's insist.words: "more contrast, i insist" is a strong step
    # the engine's setting names (the ops' own and grammar.setting_words) and the words after one that turn it
    # down (grammar.setting_ways below 0), unless a place follows them (setting_ways_not_before): "exposure down"
    settings: frozenset[str] = frozenset()
    settings_down: frozenset[str] = frozenset()
    settings_not_before: frozenset[str] = frozenset()
    op_properties: Mapping[str, tuple[str, int]] = field(default_factory=dict)   # op -> (property, way) it moves
    op_prefix_properties: Mapping[str, tuple[str, int]] = field(default_factory=dict)   # "saturation_" -> chroma up
    manner: frozenset[str] = frozenset()     # the engine's grammar.manner: "a soft vignette" is not softer
    manner_effects: tuple[str, ...] = ()
    speller: Speller | None = None           # typing slips of the words above put right ("brigther")
    #: the engine's place_guesses.nouns, as masks: where a thing found by its colour stands when the photo has
    #: none of that colour ("the grass" on a black-and-white photo: the bottom)
    stand_ins: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    quality_firsts: frozenset[str] = frozenset()   # the first word of every quality and complaint phrase

    def size_of(self, prop: str, size: int) -> float:
        return float(self.properties[prop]["sizes"][size])

    def noise(self, prop: str) -> float:
        return float(self.properties[prop]["noise"])

    def moved_by(self, op: str) -> tuple[str, int] | None:
        """(property, way) a raise of ``op`` moves, None for an op the judge measures no property of."""
        if op in self.op_properties:
            return self.op_properties[op]
        return next((v for k, v in self.op_prefix_properties.items() if op.startswith(k)), None)

    def word(self, prop: str, sign: int) -> str:
        return str(self.properties[prop]["up" if sign > 0 else "down"])

    def unit(self, prop: str) -> str:
        return str(self.properties[prop]["unit"])


def _norm(text: str) -> str:
    """A table's phrase as the tokens it matches, joined by spaces ("washed-out" -> "washed out")."""
    return " ".join(_tokens(text))


def _moves(where: str, data: Mapping) -> tuple[tuple[str, int], ...]:
    out = []
    for prop, way in data.items():
        if prop not in PROPERTIES or way not in ("up", "down"):
            raise ValueError(f"{READING_FILE.name}: {where}: expected PROPERTY: up|down, got {prop}: {way}")
        out.append((prop, 1 if way == "up" else -1))
    return tuple(out)


#: Kinds of planner intents that name one plain quality (not a look, a colour shift or an op by name).
_PLAIN_KINDS = frozenset({"direct", "tone"})


@functools.lru_cache(maxsize=4)
def load_lexicon(path: str | None = None) -> Lexicon:
    """Compile the reading vocabulary (cached). Raises ValueError naming a bad entry."""
    # libyaml's parser when present: the same data as yaml.safe_load, ~10x faster (a fresh server's first turn reads it)
    data = yaml.load(Path(path or READING_FILE).read_text(encoding="utf-8"),
                     Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    qualities: dict[str, Quality] = {}
    for name, q in data["qualities"].items():
        if "any" in q:
            alts = tuple(_moves(f"qualities.{name}.any", a) for a in q["any"])
        else:
            alts = tuple((m,) for m in _moves(f"qualities.{name}.moves", q["moves"]))
            if len(alts) > 1:          # several moves listed under `moves` are all wanted
                alts = (tuple(m for a in alts for m in a),)
        quality = Quality(name, alts, bool(q.get("problem")), q.get("size"), look=bool(q.get("look")))
        for w in q["words"]:
            qualities[_norm(str(w))] = quality
    mags = {}
    for level, words in data["magnitudes"].items():
        for w in words:
            mags[_norm(str(w))] = int(level)
    targets = {}
    for name, t in data["targets"].items():
        for w in t["words"]:
            targets[_norm(str(w))] = (name, dict(t["mask"]))
    by_name = {name: mask for name, mask in targets.values()}
    fu = data["follow_ups"]
    engine = _engine_section(Path(path).parent / ENGINE_FILE.name if path else ENGINE_FILE)
    # the judge's colour words, and the planner profile's ("the water" is the blues there too)
    bands = {_norm(str(w)): band for band, entry in (engine.get("bands") or {}).items()
             for w in (entry or {}).get("words") or ()}
    bands.update({_norm(w): band for band, words in data["bands"].items() for w in words})
    complaints, object_fix = _engine_complaints(data.get("op_properties") or {}, engine)
    # The planner profile's own phrases for its plain qualities ("less colour", "tame the brights"), where the
    # reading has none of its own: read as the quality's main op, so a phrase the planner learns the judge reads.
    # (Not its single words: a noun that names a property, "the brightness", asks no way by itself.)
    for name, intent in (engine.get("intent_translations") or {}).items():
        moves = _intent_moves(intent, data.get("op_properties") or {}) if intent.get("kind") in _PLAIN_KINDS else ()
        for phrase in (_norm(str(w)) for w in (intent.get("words") or ()) if moves):
            # (nor a phrase of a complaint word, "less harsh": the complaint's fix is read)
            if len(phrase.split()) > 1 and phrase.split()[-1] not in complaints:
                qualities.setdefault(phrase, Quality(f"intent:{name}", (moves,)))
    efu = engine.get("followups") or {}
    repeat, pull_words = sized_follow_ups(engine)
    more_scales = {_norm(w): v for w, v in repeat.items()}
    less_fractions = {_norm(str(w)): float(v) for w, v in (efu.get("fractions") or {}).items()}
    repeat_but = {_norm(str(w)): float(v) for w, v in (efu.get("repeat_but") or {}).items()}
    pull_back = [_norm(w) for w in pull_words]
    # "bring back a hint of colour" after a desaturation: less of that change
    pull_back += [_norm(str(w)) for w in (efu.get("restore") or {}).get("verbs") or ()]
    lex = Lexicon(
        properties=data["properties"], overshoot=tuple(data["overshoot"]),
        overshoot_floor=float(data["overshoot_floor"]), overshoot_full=float(data["overshoot_full"]),
        overshoot_start=float(data["overshoot_start"]), look_overshoot=float(data.get("look_overshoot", 1.0)),
        magnitudes=mags, qualities=qualities,
        complaint_frames=frozenset(_norm(w) for w in data["complaint_frames"]),
        goal_frames=tuple(_norm(w) for w in data.get("goal_frames", ())),
        negations=frozenset(_norm(w) for w in data["negations"]),
        reduce_after=tuple(_norm(w) for w in (*data["reduce_after"], *excess_phrases(engine, only_alone=True))),
        enough=frozenset(_norm(w) for w in data["enough"]),
        # the reading's own follow-up words and the planner profile's (engine.yaml followups)
        follow_more=tuple(dict.fromkeys([_norm(w) for w in fu["more"]] + list(more_scales))),
        follow_less=tuple(dict.fromkeys([_norm(w) for w in fu["less"]] + pull_back + list(less_fractions))),
        retarget=tuple(_norm(w) for w in fu["retarget"]), less_share=tuple(fu["less_share"]),
        undo=tuple(_norm(w) for w in data["undo"]), chat=frozenset(_norm(w) for w in data["chat"]),
        question_starts=tuple(_norm(w) for w in data["question_starts"]),
        unsupported=tuple(_norm(w) for w in data["unsupported"]), targets=targets, bands=bands,
        band_things=frozenset(_norm(str(w)) for entry in (engine.get("bands") or {}).values()
                              for w in (entry or {}).get("things") or ()),
        not_places=frozenset(_norm(w) for w in list(data["not_places"]) + list(engine.get("not_places") or ())),
        global_words=tuple(_norm(w) for w in data["global_words"]),
        tools=tuple(_norm(w) for w in data.get("tools") or ()),
        complaints=complaints, object_fix=object_fix,
        less_of_place=(Quality("less_of_place", tuple(_moves("less_of_place.any", a)
                                                      for a in data["less_of_place"]["any"]))
                       if data.get("less_of_place") else None),
        place_reducers=tuple(_norm(w) for w in (data.get("less_of_place") or {}).get("words") or ()), more_scales=more_scales, less_fractions=less_fractions,
        more_of_place=(Quality("more_of_place", tuple(_moves("more_of_place.any", a)
                                                      for a in data["more_of_place"]["any"]))
                       if data.get("more_of_place") else None),
        place_raisers=tuple(_norm(w) for w in (data.get("more_of_place") or {}).get("words") or ()),
        repeat_but=repeat_but, reverse=tuple(_norm(str(w)) for w in efu.get("reverse") or ()),
        problem_also=tuple(_norm(w) for w in data.get("problem_also") or ()),
        wishes=tuple(_norm(w) for w in data.get("wishes") or ()),
        complaint_damping=float((engine.get("complaints") or {}).get("magnitude_damping") or 0.0),
        filler=frozenset(t for w in efu.get("filler") or () for t in _tokens(_norm(str(w)))),
        carry_on=frozenset(_norm(str(w)) for w in efu.get("carry_on") or ()),
        counting=frozenset(_norm(str(w)) for w in data.get("counting") or ()),
        disapproval=frozenset(_norm(str(w)) for w in data.get("disapproval") or ()),
        insist=tuple(_norm(str(w)) for w in (engine.get("insist") or {}).get("words") or ()),
        settings=frozenset({_norm(w) for o in ops.OPS.values() for w in (o.name.replace("_", " "), o.label)}
                           | {_norm(str(w)) for w in ((engine.get("grammar") or {}).get("setting_words") or {})}),
        settings_down=frozenset(str(w) for w, v in ((engine.get("grammar") or {}).get("setting_ways") or {}).items()
                                if int(v) < 0),
        settings_not_before=frozenset(str(w) for w in (engine.get("grammar") or {}).get("setting_ways_not_before")
                                      or ()),
        op_properties=_op_properties(data.get("op_properties")),
        op_prefix_properties=_op_properties(data.get("op_prefix_properties")),
        avoid=tuple(_norm(str(w)) for w in (engine.get("grammar") or {}).get("avoid") or ()),
        avoid_degree=tuple(_norm(str(w)) for w in (engine.get("grammar") or {}).get("avoid_degree") or ()),
        protect=tuple(_norm(str(w)) for key in ("protect", "except")
                      for w in (engine.get("grammar") or {}).get(key) or ()),
        dismiss=tuple(_norm(str(w)) for w in (engine.get("place_guesses") or {}).get("dismiss") or ()),
        manner=frozenset(_norm(str(w)) for w in (engine.get("manner") or {}).get("words") or ()),
        manner_effects=tuple(_norm(str(w)) for w in (engine.get("manner") or {}).get("effects") or ()),
        stand_ins={_norm(str(noun)): by_name[str(name)]
                   for noun, name in ((engine.get("place_guesses") or {}).get("nouns") or {}).items()
                   if str(name) in by_name},
    )
    # the words every table knows, and the planner profile's real words never to be "corrected"
    spelling = engine.get("spelling") or {}
    tables = (lex.magnitudes, lex.qualities, lex.complaint_frames, lex.negations, lex.reduce_after, lex.enough,
              lex.follow_more, lex.follow_less, lex.retarget, lex.undo, lex.chat, lex.question_starts,
              lex.unsupported, lex.targets, lex.bands, lex.not_places, lex.global_words, lex.tools, lex.complaints,
              lex.place_reducers, lex.place_raisers, lex.repeat_but, lex.problem_also, lex.wishes, lex.filler, lex.avoid, lex.avoid_degree, lex.dismiss,
              [str(w) for w in spelling.get("known") or ()])
    known = {w for table in tables for phrase in table for w in re.findall(r"[a-z]+", _norm(str(phrase)))}
    return replace(lex, speller=Speller.from_profile(known, spelling),
                   quality_firsts=frozenset(p.split()[0] for p in (*lex.qualities, *lex.complaints)))


def _op_properties(table: Mapping | None) -> dict[str, tuple[str, int]]:
    """op -> (property, +1/-1) a raise of the op moves: {"exposure": {"L": "up"}} -> {"exposure": ("L", 1)}."""
    return {str(op): (str(prop), 1 if way == "up" else -1)
            for op, entry in (table or {}).items() for prop, way in list((entry or {}).items())[:1]}


def _intent_moves(intent: Mapping, op_properties: Mapping[str, Mapping[str, str]]) -> tuple[tuple[str, int], ...]:
    """The property move of an engine intent's main op (its first op the reading can measure)."""
    for op, value in (intent.get("ops") or {}).items():
        prop = op_properties.get(op)
        if prop and value:
            (name, way), = prop.items()
            sign = (1 if way == "up" else -1) * (1 if value > 0 else -1)
            return ((name, sign),)
    return ()


def _engine_section(engine_file: Path) -> Mapping:
    """The planner profile's ``vocabulary`` section as the planner loads it (parsed once,
    validated and cached by :func:`profiles.load_profile`); {} when there is none."""
    from profiles import ProfileError, load_profile  # here: profiles imports the op registry

    try:
        return load_profile(engine_file).vocabulary
    except ProfileError:
        return {}


def _engine_complaints(op_properties: Mapping, pe: Mapping) -> tuple[dict[str, Quality], Quality | None]:
    """The planner profile's complaint words (``vocabulary.complaints.problems``), each read
    as the fix it names: one alternative per fix intent, measured by its main op's property.

    Read from the profile, not copied, so a complaint the planner learns is one the judge reads.
    Missing or unreadable: no complaints (the reading's own qualities still work).
    """
    intents, comp = pe.get("intent_translations") or {}, pe.get("complaints") or {}
    out: dict[str, Quality] = {}
    for word, entry in (comp.get("problems") or {}).items():
        alts = tuple(m for m in (_intent_moves(intents.get(f) or {}, op_properties) for f in entry.get("fix") or ())
                     if m)
        if alts:
            out[_norm(str(word))] = Quality(f"complaint:{word}", tuple(dict.fromkeys(alts)), fix=True,
                                            band=entry.get("band"))
    fix = intents.get(comp.get("object_fix") or "") or {}
    moves = _intent_moves(fix, op_properties)
    return out, (Quality(f"object_fix:{comp.get('object_fix')}", (moves,), fix=True) if moves else None)


# -- the reading -----------------------------------------------------------------------

@dataclass(frozen=True)
class Move:
    """One property expected to move: ``sign`` +1 up / -1 down, ``size`` 0 slight, 1 plain, 2 strong."""

    prop: str
    sign: int
    size: int = 1

    def __str__(self) -> str:
        return f"{self.prop} {'up' if self.sign > 0 else 'down'} ({SIZE_WORDS[self.size]})"


@dataclass(frozen=True)
class Expect:
    """A requirement met by any one of its alternatives (each a set of moves, all needed)."""

    alternatives: tuple[tuple[Move, ...], ...]
    source: str = ""          # the words it was read from
    band: str | None = None   # a colour complaint's band ("too red": the reds)
    negated: bool = False     # read through a negation ("not that soft", "less warm")
    complaint: bool = False   # said as what is wrong ("too yellow"): the moves are its fix
    look: bool = False        # a style asked for ("a dreamy look"): sized loosely

    def __str__(self) -> str:
        return " or ".join(", ".join(str(m) for m in alt) for alt in self.alternatives)


@dataclass(frozen=True)
class Reading:
    """What the judge expects from a message; see the module docstring.

    ``target``: the place named (``sky``, ``face``, ``background``, a band such
    as ``red``, or an object word such as ``cup``), None for the whole photo.
    ``target_mask``: a mask spec for it when the vocabulary has one. ``follow``:
    "more", "less" or "retarget" for follow-ups. ``bounded``: a "less"
    follow-up must move back by at least ``less_share[0]`` of the last change
    and never past the version before it.
    """

    message: str
    kind: str
    expects: tuple[Expect, ...] = ()
    target: str | None = None
    target_mask: dict | None = None
    follow: str | None = None
    bounded: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    share: float | None = None    # a bounded follow-up's share of the last change to take back, when said
    repeat: float | None = None   # a "more" follow-up's size as a share of the last change ("a smidge more": 0.25)
    since_original: bool = False  # a bounded one measured from the original, not the version before the last change
    bare: bool = False            # a follow-up that names no quality of its own ("bit more", "halve it", "same again")

    @property
    def is_edit(self) -> bool:
        return self.kind in ("edit", "follow_up") and bool(self.expects)

    def describe(self) -> str:
        """Plain words: 'warmer and a touch brighter, on the sky'."""
        lex = load_lexicon()
        if not self.expects:
            return {"undo": "go back", "chat": "a chat message", "question": "a question",
                    "unsupported": "a change to what is in the picture, which editing cannot do"}.get(
                self.kind, "nothing the judge can measure")
        parts = []
        for e in self.expects:
            alts = [" and ".join(_size_prefix(m.size) + lex.word(m.prop, m.sign) for m in alt)
                    for alt in e.alternatives]
            parts.append(" or ".join(dict.fromkeys(alts)))
        text = ", ".join(dict.fromkeys(parts))
        if self.follow == "less":
            text = f"back towards the last version ({text}), not past it"
        if self.target:
            text += f", on {place_words(self.target)}"
        return text

    def rubric(self) -> str:
        """The reading as a judging rubric (for the VLM judge's prompt)."""
        lines = [f"Kind of message: {self.kind}."]
        if self.expects:
            lines.append("Expected, judged from the pixels: " + self.describe() + ".")
            lines.append("Wrong direction, no visible change, a much stronger change than asked, or a change "
                         "outside " + (place_words(self.target) if self.target else "what was asked")
                         + " must score low.")
        elif self.kind in ("chat", "question", "undo"):
            lines.append("No new edit is expected for this message.")
        elif self.kind == "unsupported":
            lines.append("This asks to change what is in the picture; any tonal edit does not do it.")
        return " ".join(lines)

    def to_dict(self) -> dict:
        return {"message": self.message, "kind": self.kind, "target": self.target,
                "target_mask": self.target_mask, "follow": self.follow, "bounded": self.bounded,
                "share": self.share, "repeat": self.repeat, "since_original": self.since_original,
                "expects": [str(e) for e in self.expects], "describe": self.describe(),
                "notes": list(self.notes)}


def _size_prefix(size: int) -> str:
    return {0: "a touch ", 1: "", 2: "much "}[size]


def _clause_stops(text: str) -> frozenset[int]:
    """Where a sentence or a comma ends a clause, as positions in :func:`_tokens` (which drops the marks):
    "leave the sky alone. brighten it" keeps nothing of "brighten it"."""
    stops, n = set(), 0
    for t in tokenize(text):
        if t in SEPARATORS:
            stops.add(n)
        else:
            n += 1
    return frozenset(stops)


def _cautions(tokens: Sequence[str], lex: Lexicon, stops: frozenset[int] = frozenset()) -> list[tuple[int, int, str]]:
    """The protect phrases, and the avoid words said of a place after a request ("warmer but don't make her
    face orange", "brighten it without blowing out the sky"): a caution about a place keeps it, as the
    planner reads it."""
    found = list(_find_phrases(tokens, lex.protect))
    places = [s for s, _, _ in _find_phrases(tokens, list(lex.targets))]
    for s, e, _ in _find_phrases(tokens, lex.avoid):
        end = next((i for i in range(e, len(tokens)) if tokens[i] in _CLAUSE_BREAKS or i in stops), len(tokens))
        if s > 0 and any(e <= p < end for p in places):
            found.append((s, e, "avoid"))
    # "sharpen it up? not my face tho", "more contrast. not the sky": a clause that is only "not" and a place
    found += [(i, i + 1, "avoid") for i, t in enumerate(tokens)
              if t == "not" and i > 0 and i in stops and any(i < p <= i + 3 for p in places)]
    found += [(i, i + 1, "enough") for i in range(len(tokens)) if _said_enough(tokens, i)]
    return found


def _said_enough(tokens: Sequence[str], i: int) -> bool:
    """Whether ``tokens[i]`` is the "enough" of a quality said to be enough ("the sky is bright enough")."""
    return tokens[i] == "enough" and i >= 2 and (tokens[i - 2] in _BEING_ENOUGH or tokens[i - 2].endswith("'s"))


def _protected(tokens: Sequence[str], lex: Lexicon, at: int, stops: frozenset[int] = frozenset(),
               cautions: list | None = None, asked_at: int = -1) -> bool:
    """Whether the place named at ``at`` is one to keep ("but keep the sky as it is", "except her face"): a
    protect word within a few words before it, after something was asked, or after it ("but the backdrop
    has to stay white", "don't let her skin go grey"). Another place kept ("brighten her face but leave
    the sky") does not make this one kept."""
    places = [(s, e) for s, e, _ in _find_phrases(tokens, list(lex.targets) + list(lex.bands)) if s <= at < e]

    def joined(a: int, b: int) -> bool:      # no clause break between ("lift the shadows but keep the snow")
        return not any(t in _CLAUSE_BREAKS for t in tokens[a:b]) and not any(a < i <= b for i in stops)

    # (the protect phrase may end in the place's own article: "keep the" + "the sky")
    def predicate(s: int, e: int) -> bool:   # "has to stay", "stays": said of a place before it, not "keep the"
        return tokens[e - 1] not in _DEFINITE and (e >= len(tokens) or tokens[e] not in _DEFINITE)

    # a keep said first counts when the request comes after the place ("leave the sky alone. brighten it")
    return any((s < s2 and s2 - e <= 3 and (s > 0 or asked_at > e2))
               or (0 <= s - e2 <= 3 and (s2 > 0 or asked_at > len(tokens)) and joined(e2, s) and predicate(s, e))
               for s, e, _ in (cautions if cautions is not None else _find_phrases(tokens, lex.protect))
               for s2, e2 in places)


_CLAUSE_BREAKS = frozenset({",", ".", ";", "!", "?", "but", "and", "then"})
#: Words before a quality said to be enough ("the sky is bright enough", "he's dark enough").
_BEING_ENOUGH = word_lists()["state_words"]
_DEFINITE = word_lists()["place_determiners"] | {"its"}
#: Said right after a thing, these tell how it is in the photo ("snow always comes out grey").
_AS_IT_IS = frozenset({"always", "comes", "came", "keeps", "still", "seem", "seems"})


def place_words(target: str) -> str:
    lex = load_lexicon()
    if target.startswith("everything but "):
        return target
    if target in lex.bands.values():
        return f"the {target}s"
    return f"the {target}"


# -- matching --------------------------------------------------------------------------

def _tokens(text: str) -> list[str]:
    """The shared tokens (agent/conversation/words.py) without punctuation: the reading works on words."""
    return [t for t in tokenize(text) if t not in SEPARATORS]


@functools.lru_cache(maxsize=256)
def _table(phrases: tuple[str, ...]) -> PhraseTable[str]:
    return PhraseTable((p, p) for p in phrases)


def _find_phrases(tokens: Sequence[str], phrases: Iterable[str]) -> list[tuple[int, int, str]]:
    """(start, end, phrase) of whole-word matches, non-overlapping, in order (the shared longest-span rule)."""
    return [(s, s + n, p) for s, n, p in _table(tuple(p for p in phrases if p)).find(list(tokens))]


def _has(tokens: Sequence[str], phrases: Iterable[str]) -> bool:
    return bool(_find_phrases(tokens, phrases))


def _has_verb(tokens: Sequence[str], verbs: Iterable[str], gap: int = 3) -> bool:
    """Whether one of ``verbs`` is said, a two-word verb perhaps split around its object ("bring the sky
    down", "push the shadows up": up to ``gap`` words between)."""
    verbs = list(verbs)
    if _has(tokens, verbs):
        return True
    pairs = {tuple(v.split()) for v in verbs if len(v.split()) == 2}
    return any((t, u) in pairs for i, t in enumerate(tokens) for u in tokens[i + 2:i + 2 + gap])


def _before(tokens: Sequence[str], i: int, phrases: Iterable[str], window: int = 3,
            skip: Iterable[str] = ()) -> bool:
    """Whether a phrase ends right before token ``i`` (skipping magnitude words), within ``window`` tokens."""
    skip = set(skip)
    j = i
    steps = 0
    while j > 0 and steps <= window:
        for p in phrases:
            words = p.split()
            n = len(words)
            if j - n >= 0 and list(tokens[j - n:j]) == words:
                return True
        if tokens[j - 1] in skip:
            j -= 1
            steps += 1
            continue
        return False
    return False


def _magnitude(tokens: Sequence[str], start: int, lex: Lexicon, default: int = 1) -> int:
    """The magnitude word in the few tokens before ``start`` (0 slight, 1 plain, 2 strong)."""
    lo = max(0, start - 4)
    found = _find_phrases(tokens[lo:start], lex.magnitudes)
    if not found:
        return default
    return lex.magnitudes[found[-1][2]]


def _target(tokens: Sequence[str], lex: Lexicon, skip: set[int],
            inside: frozenset[int] | set[int] = frozenset()) -> tuple[str | None, dict | None]:
    """The first place named: a band, a vocabulary target, or an object word after 'the/his/her'."""
    return _target_at(tokens, lex, skip, inside)[1:]


def _target_at(tokens: Sequence[str], lex: Lexicon, skip: set[int],
               inside: frozenset[int] | set[int] = frozenset()) -> tuple[int, str | None, dict | None]:
    """(position, name, mask spec) of the first place named; (-1, None, None) when none is."""
    candidates: list[tuple[int, str, dict | None]] = []
    for s, e, p in _find_phrases(tokens, lex.bands):
        if not skip.intersection(range(s, e)) or p.startswith("the "):
            band = lex.bands[p]
            candidates.append((s, band, {"type": "color", "band": band}))
    for s, e, p in _find_phrases(tokens, lex.targets):
        if set(range(s, e)) <= inside:
            continue   # a tool's own place ("clean up her skin"): not where the qualities go
        if p == "right" and e < len(tokens) and tokens[e] in word_lists()["right_as_exactly"]:
            continue   # "the sky right at the top": exactly, not the right of the frame
        name, mask = lex.targets[p]
        candidates.append((s, name, dict(mask)))
    known_words = set(w for p in list(lex.targets) + list(lex.bands) for w in p.split())
    told = _told_spans(tokens)
    for i, t in enumerate(tokens[:-1]):
        if t in ("the", "his", "her", "its", "their") and i not in told and i + 2 < len(tokens) \
                and tokens[i + 1] in lex.bands and tokens[i + 1] not in lex.band_things \
                and _a_thing(tokens[i + 2].removesuffix("'s"), lex, known_words):
            # "the green mat", "the pink nose": a thing no finder knows, found by the colour said of it (the
            # photo's own shade of it, as the planner finds it)
            candidates.append((i, tokens[i + 2].removesuffix("'s"), {"type": "shade", "band": lex.bands[tokens[i + 1]]}))
        elif t in ("the", "his", "her", "its", "their") and i + 1 not in skip and i not in told:
            after = i + 1
            while after < len(tokens) - 1 and tokens[after] in lex.counting:
                after += 1          # "the two puppies", "the little cup": the thing comes after
            noun = tokens[after].removesuffix("'s")
            # ("its fine but yeah, dim it": "it's" typed without its apostrophe, said of the photo)
            said_of_it = t == "its" and (after + 1 >= len(tokens) or tokens[after + 1] in _SAID_OF_IT_ENDS)
            if _a_thing(noun, lex, known_words) and not said_of_it:
                candidates.append((i, noun, None))
    if not candidates:
        return -1, None, None
    candidates.sort(key=lambda c: c[0])
    located = [c for c in candidates if c[2] is not None]
    if len(located) >= 2 and located[0] is candidates[0] and located[1][0] - located[0][0] <= 4 \
            and not _CLAUSE_BREAKS & set(tokens[located[0][0]:located[1][0]]) \
            and _frame_part(located[0][2]) != _frame_part(located[1][2]):
        # "the background on the right", "the sky up top": one place, where both are
        place, part = (located[0], located[1]) if _frame_part(located[1][2]) else (located[1], located[0])
        return located[0][0], f"{place[1]} on the {part[1]}", {"type": "intersect", "masks": [place[2], part[2]]}
    return candidates[0]


#: What may follow "its <word>" when "its" is "it's": "its fine, but", "its ok. darker".
_SAID_OF_IT_ENDS = frozenset({",", ".", "!", "?", ";", ":", "but", "though", "tho"})
#: "i can barely see the guitar", "cant make out the buildings": what a thing cannot be seen for.
_SEEING = frozenset({"see", "out", "read", "spot", "find"})
#: Said of the whole photo: "its so dark", "the whole pic is so dark".
_THE_PHOTO = frozenset({"it", "its", "it's", "everything", "everythings", "pic", "photo", "picture", "image", "shot"})


def _a_thing(noun: str, lex: Lexicon, known_words: set[str]) -> bool:
    """Whether a word said after "the" names a thing no table knows ("the cup"), not a place, quality or size."""
    return (noun not in lex.not_places and noun not in known_words and noun not in lex.magnitudes
            and noun not in _FUNCTION_WORDS        # ("its still too bright": "its" then no thing)
            and not any(noun == q.split()[0] for q in lex.qualities) and len(noun) > 2)


_FUNCTION_WORDS = word_lists()["function_words"]


def _told_spans(tokens: Sequence[str]) -> set[int]:
    """Positions in clauses that tell how the photo came about ("took this at the wedding, brighten it"): a
    thing named there is where the photo was taken, not where a change goes (the planner reads them so too)."""
    out, start = set(), 0
    for i in range(len(tokens) + 1):
        if i == len(tokens) or tokens[i] in _CLAUSE_BREAKS:
            if tells_how_taken(tokens[start:i]):
                out.update(range(start, i))
            start = i + 1
    return out


def _frame_part(mask: Mapping) -> bool:
    """A part of the frame (a side or half: a gradient mask), not a thing in it."""
    return mask.get("type") == "gradient"


def _qualities(tokens: Sequence[str], lex: Lexicon, stops: frozenset[int] = frozenset()) -> tuple[list[Expect], set[int]]:
    """Every quality named, with its direction (wish, complaint, negation) and size.

    The reading's own qualities and the planner profile's complaint words are matched
    together, longest phrase first ("a green cast" is a complaint, not a wish for green);
    on the same phrase the reading's own entry wins.
    """
    expects: list[Expect] = []
    used: set[int] = set()
    # ("gone all yellow", "looks totally blue": a word of degree between the frame and the quality is no break)
    skip_words = set(lex.magnitudes) | {w for m in lex.magnitudes for w in m.split()} | {
        "the", "it", "a", "an", "so", "that", "this", "very", "more", "of", "in", "all", "totally", "completely",
        "really", "super", "kinda", "sorta", "just", "pretty", "quite"}
    phrases = {**lex.complaints, **lex.qualities}
    ends: set[int] = set()
    found = _find_phrases(tokens, phrases)
    starts = {s for s, _, _ in found}
    for s, e, p in found:
        q = phrases[p]
        used.update(range(s, e))
        if p in lex.disapproval and e in starts:
            continue   # "sickly green": the fault is the green, not a sickly look of its own
        if p in lex.manner and any(" ".join(tokens[e:e + 2]).startswith(f) for f in lex.manner_effects):
            continue   # "a soft vignette": how the vignette is, not softer as well
        if _describes(tokens, s, e, starts, lex):
            continue   # "the blurry stuff on the right", "the dark corners": which place, not a wish
        obj = _object_of(tokens, s, ends)
        ends.add(e)
        if obj is not None:
            # "soften the fine detail": the property named after a quality verb is what it acts on
            used.update(range(obj, s))
            continue
        # ("give it a bluish tint": a colour cast asked for, not complained of; as the planner reads it)
        wished = (q.problem or q.fix) and _cast_wished(tokens, s, q)
        flip = q.fix if wished else q.problem
        negated = False
        if not q.problem and not q.fix:
            # a frame word before it, or inside the phrase itself ("too contrasty")
            # ... but a "too" that ends the quality before ("it's murky too, brighten") says "as well"
            also = any(s - len(w.split()) in ends and list(tokens[s - len(w.split()):s]) == w.split()
                       for w in lex.problem_also)
            # "looks kinda muddy and flat": a quality joined to the word before it shares its frame
            joined = s
            while joined >= 2 and tokens[joined - 1] in ("and", "or", ","):
                joined -= 2
            # ... unless the frame says what it should become ("warm it up so it looks golden")
            goal = _before(tokens, s, lex.goal_frames, skip=skip_words) or (
                # "id like the stone to look more golden": what it should become, said of a thing
                _before(tokens, s, ("to look", "to feel", "to be"), skip=skip_words)
                and any(_has(tokens[:s], (w,)) for w in _WISH_OPENERS))
            complaint = ((any(_before(tokens, at, lex.complaint_frames, window=5, skip=skip_words) for at in {s, joined})
                          and not also and not goal)
                         or p.split()[0] in lex.complaint_frames or _names_a_problem(tokens, s, e, p, lex)
                         or (s > 0 and tokens[s - 1] in lex.disapproval))
            negated = _before(tokens, s, lex.negations, skip=skip_words) \
                or (not expects and _avoided_degree(tokens, s, lex))       # not a caution on a wish before it
            if negated and s >= 2 and tokens[s - 1] in _LACKING and tokens[s - 2] in ("not", "isnt", "isn't"):
                negated = False      # "not very cosy", "not really warm": it lacks that, so more of it
            after = " ".join(tokens[e:e + 4])
            reduced = any(after.startswith(r) for r in lex.reduce_after) or (p in lex.settings and _turned_down(tokens, e, lex))
            enough = e < len(tokens) and tokens[e] in lex.enough
            flip = (complaint or negated or reduced) and not enough
            negated = negated and not complaint
        if (flip and not negated or (s > 0 and tokens[s - 1] in _BECOMING)) and _conditional(tokens, s, stops):
            continue   # "keep the sky smooth, it goes all noisy when it gets sharpened": why, not what
        size = q.size if q.size is not None else _magnitude(tokens, s, lex, default=-1)
        if size < 0:   # "cool it down a bit", "warmer, but just slightly": the word may follow
            after = _find_phrases(tokens[e:e + 4], lex.magnitudes)
            # "not so warm", "less contrast": a step back, slight unless a size is said; a complaint
            # ("it's harsh", "too yellow") asks for a plain fix
            size = lex.magnitudes[after[0][2]] if after else (0 if negated else 1)
        if size == 0 and (flip or q.fix) and not negated and 1.0 - lex.complaint_damping >= 0.5:
            # "a bit murky", "it's a bit dark": the planner damps a magnitude on a complaint
            # (1 - damping + damping * scale of the fix), so even "a touch" keeps half the fix
            size = 1
        sign = -1 if flip else 1
        alts = tuple(tuple(Move(prop, sign * way, size) for prop, way in alt) for alt in q.alternatives)
        expects.append(Expect(alts, p, q.band, negated, complaint=((flip and not negated) or q.fix) and not wished,
                              look=q.look and not flip))
    return _merge(expects), used


def _cast_wished(tokens: Sequence[str], s: int, q: Quality) -> bool:
    """Whether the colour cast at ``s`` (a complaint that moves only the colour axes) is asked for: a wish word
    ("make", "give", "add") before it in its clause, with nothing between that says how the photo is now or
    takes it back ("make it warmer, it looks bluish", "make it less bluish")."""
    if not all(prop in ("a", "b") for alt in q.alternatives for prop, _ in alt):
        return False
    for k in range(s - 1, -1, -1):
        t = tokens[k]
        if t in SEPARATORS or t in ("but", "and"):
            return False
        if t in BEING and not (k >= 2 and tokens[k - 1] in ("it", "this") and tokens[k - 2] in CAST_WISHES):
            return False          # (not "make it look bluish")
        if t in ("not", "no", "too", "less", "fix", "remove", "correct"):
            return False
        if t in CAST_WISHES or t == "more":
            return True
    return False


#: Words between "not" and a quality that say the photo lacks it ("not very cosy"), unlike "not that soft".
_LACKING = frozenset({"very", "really", "particularly", "quite", "exactly", "super"})
#: Words after "the <quality>" that are not a thing described ("the sky is bright enough", "the bright one").
_NOT_A_THING = frozenset({"is", "are", "was", "were", "looks", "look", "and", "or", "but", "enough", "too", "now",
                          "as", "than", "of", "please", "pls", "to", "in", "on", "at", "for", "again", "still",
                          "tho", "though", "then", "so", "bit", "side", "tones", "tone", "colours", "colors",
                          "colour", "color", "hues", "light", "glow", "cast", "feel", "vibe", "vibes", "mood",
                          # "boost the saturation a bit", "up the contrast a touch": how much, no thing
                          "a", "an", "up", "down", "some", "slightly", "just", "by", "only", "right", "there",
                          "here", "lol", "tbh", "thanks", "ty", "plz", "more", "less", "back", "over", "all"})


_BECOMING = frozenset({"gets", "got", "getting", "is", "was", "being", "goes", "went"})


def _conditional(tokens: Sequence[str], s: int, stops: frozenset[int]) -> bool:
    """Whether the clause of the quality at ``s`` says when it happens ("it goes all noisy when it gets
    sharpened"): a state described, not one asked for or about now."""
    start = max([k for k in stops if k <= s] + [0])
    end = min([k for k in stops if k > s] + [len(tokens)])
    return any(t in ("when", "whenever", "if", "once") for t in tokens[start:end])


def _describes(tokens: Sequence[str], s: int, e: int, starts: set[int], lex: Lexicon) -> bool:
    """Whether the quality at ``s:e`` only picks out a thing, between a determiner and its noun ("the
    blurry stuff on the right should stay soft", "brighten the dark corners"): which place, not a wish
    or a complaint. Tone and colour nouns after it carry the quality ("bring out the warm tones")."""
    if s == 0 or tokens[s - 1] not in _DEFINITE or e >= len(tokens) or e in starts:
        return False
    noun = tokens[e]
    return noun.isalpha() and noun not in _NOT_A_THING and noun not in lex.magnitudes \
        and noun not in _CLAUSE_BREAKS


def _avoided_degree(tokens: Sequence[str], s: int, lex: Lexicon) -> bool:
    """"don't make it so yellow", "dont make it that dark": an avoid word shortly before a degree word right
    before the quality asks for less of it ("not so yellow"), as the planner's grammar reads it."""
    for degree in lex.avoid_degree:
        n = len(degree.split())
        if s - n >= 0 and list(tokens[s - n:s]) == degree.split():
            return _has(tokens[max(0, s - n - 4):s - n], lex.avoid)
    return False


def _names_a_problem(tokens: Sequence[str], s: int, e: int, phrase: str, lex: Lexicon) -> bool:
    """Whether a word that is both a wish and one of the planner profile's problems ("cold",
    "soft", "flat", "dark") says what is wrong: only a magnitude frames it ("and a bit cold"),
    or a trailing "too" / "as well" adds it to what is wrong ("cold too"). A wish word before
    it ("make it a bit soft") keeps it a wish; a comparative ("colder") is never such a word."""
    if phrase not in lex.complaints or _has(tokens[:s], lex.wishes):
        return False
    if _before(tokens, s, lex.magnitudes, window=0):
        return True
    after = " ".join(tokens[e:e + 3])
    return any(after == w or after.startswith(w + " ") for w in lex.problem_also) \
        and not any(after.startswith(r) for r in lex.reduce_after)


_DETERMINERS = ("the", "its", "his", "her", "their", "all", "some")


def _object_of(tokens: Sequence[str], start: int, ends: set[int]) -> int | None:
    """Where the object phrase starts when the quality at ``start`` is the object of a quality
    verb right before it ("soften | the fine | detail", "sharpen | the | details"), else None."""
    for j in range(start - 1, max(start - 4, -1), -1):
        if tokens[j] in _DETERMINERS:
            return j if j in ends else None
    return None


def _turned_down(tokens: Sequence[str], end: int, lex: Lexicon) -> bool:
    """Whether the setting ending at ``end`` is turned down by what follows it: "exposure down", "saturation
    -15", "warmth lower" (the planner's grammar reads the same words; "warmer down there" names a place)."""
    nxt = tokens[end] if end < len(tokens) else ""
    after = tokens[end + 1] if end + 1 < len(tokens) else ""
    return (nxt in lex.settings_down and after not in lex.settings_not_before) \
        or bool(re.fullmatch(r"-\d+(\.\d+)?%?", nxt))


def _merge(expects: list[Expect]) -> list[Expect]:
    """Drop repeats; two words for the same single move keep the stronger size."""
    out: list[Expect] = []
    for e in expects:
        same = next((o for o in out if _key(o) == _key(e)), None)
        if same is None:
            out.append(e)
        else:   # the stronger size; a look named in either ("warmer, kind of sepia") keeps its latitude
            out[out.index(same)] = replace(e if _size(e) > _size(same) else same, look=e.look or same.look)
    # opposite single moves on one property ("warm but not yellow"): keep the last word
    singles: dict[str, Expect] = {}
    for e in out:
        if len(e.alternatives) == 1 and len(e.alternatives[0]) == 1:
            singles[e.alternatives[0][0].prop] = e
    return [e for e in out if not (len(e.alternatives) == 1 and len(e.alternatives[0]) == 1)
            or singles.get(e.alternatives[0][0].prop) is e]


def _key(e: Expect) -> tuple:
    return tuple(tuple((m.prop, m.sign) for m in alt) for alt in e.alternatives)


def _size(e: Expect) -> int:
    return max(m.size for alt in e.alternatives for m in alt)


def _is_undo(tokens: Sequence[str], lex: Lexicon) -> bool:
    found = _find_phrases(tokens, lex.undo)
    if not found:
        return False
    # "go back" in "go back to the original", "take that back": the whole message is about history
    return len(tokens) <= 9 or found[0][0] <= 2


def read_request(message: str, history: Sequence[str] = (), lexicon: Lexicon | None = None) -> Reading:
    """Read ``message``; ``history`` holds the messages of the changes that still stand, oldest first.

    A follow-up ("bit more", "too much, halve it", "do the same for the sky")
    takes the moves of the last readable change in ``history``.
    """
    lex = lexicon or load_lexicon()
    text = _ANSWER.sub(" ", " ".join(normalise(message).split())).strip()
    if lex.speller is not None:
        text = lex.speller(text)
    # "take some saturation out": less of it; "the bottom is darker than the top": too dark (as the planner reads)
    text = said_plainly(text)
    # "ok never mind the cord. bit more of that pop": the thing dropped is neither the place nor an undo
    said = tokenize(text)
    # "right ok erm... a little more": sounds before the message ("right" is not the right side)
    kept = said[opening_interjections(said):]
    kept = drop_clauses(kept, _table(lex.dismiss), lex.filler | word_lists()["interjections"])
    kept = effect_said(kept)            # "the lamp makes it look orange": the lamp is why, as the planner reads it
    kept = rhetorical_rest(kept) or kept     # "is it just me or is this photo really dark": says it is dark
    if kept != said:
        text = " ".join(kept)
    tokens = _tokens(text)
    if not tokens:
        return Reading(message, "unknown")
    way = turned_round(tokens, _table(lex.reverse))
    last = _last_edit(history, lex) if way is not None else None
    if last is not None and last.expects:
        # "no, the other way", "not lower, HIGHER" after a darkening: that change the other way round (as the
        # planner reads it); a direction the change went already is more of it
        against = [e for e in last.expects if not way or (e.alternatives[0][0].sign > 0) != (way > 0)]
        if not against:
            return _follow_up(message, "more", tokens, None, None, history, lex, bare=True)
        turned = tuple(Expect(tuple(tuple(Move(m.prop, -m.sign, m.size) for m in alt) for alt in e.alternatives),
                              "the other way") for e in against)
        return Reading(message, "edit", turned, last.target, last.target_mask)
    but_scale = _repeat_but(tokens, lex)
    if but_scale is not None:     # "same again but less": the last change again, scaled, same way
        return _follow_up(message, "more", tokens, None, None, history, lex, scale=but_scale, bare=True)
    # what is to stay ("keep the lake glassy like it is", "leave her skin natural") asks for no quality
    stops = _clause_stops(text)
    cautions = _cautions(tokens, lex, stops)
    kept = _kept_spans(tokens, lex, stops, cautions)
    expects, used = _qualities([t if i not in kept else "\u00b7" for i, t in enumerate(tokens)], lex, stops)
    if _is_undo(tokens, lex) and not expects and not _find_phrases(tokens, lex.less_fractions):
        return Reading(message, "undo")     # "go back halfway", "undo half of that": a pull-back
    # a place inside a tool's own words ("clean up her skin") belongs to that tool, not to the qualities
    in_tools = {i for s, e, _ in _find_phrases(tokens, lex.tools) for i in range(s, e)}
    # a thing no table knows said as what is to stay ("keep the snow white") is not where the change goes
    at, target, mask = _target_at(tokens, lex, used | in_tools | kept, in_tools)
    # (with nothing asked, a keep said first is a place kept out of the last change: "not on the sky though")
    asked_at = min(used, default=-1) if expects else len(tokens) + 1
    kept_place = target is not None and mask is not None and _protected(tokens, lex, at, stops, cautions, asked_at)
    if _has(tokens, lex.global_words) and not kept_place:    # ("brighten everything except her face")
        target, mask = None, None
    if target is not None and mask is None and not kept_place and any(
            t in ("it", "everything") and any(i < k <= at for k in stops) for i, t in enumerate(tokens[:at])):
        # "warm it up and give it more contrast, the stone looks really flat": a thing no finder knows, said in
        # a statement after a request for the whole photo, is why (as the planner reads it), not where
        target = None
    if target is not None and mask is None and not kept_place and expects and _remedy_after(tokens, at, stops, used):
        # "that's blown the lamps. recover the highlights a bit": a thing no finder knows, complained of before a
        # request that names its own object and points back at nothing, is why (as the planner reads it)
        target = None
    if target is not None and mask is None and not kept_place and at > 0 and tokens[at - 1] in _SEEING \
            and any(t in _THE_PHOTO for t in tokens[:at]):
        # "its so dark i can barely see the guitar", "ugh now its too dark, i cant see the buildings": a thing
        # said as what cannot be seen, after how the whole photo is, is why the whole photo changes
        target = None
    if kept_place and not expects and _follow_kind(tokens, lex) is None:
        kept_out = _kept_out(message, target, mask, history, lex)
        if kept_out is not None:
            return kept_out
    if not expects and not kept_place and _follow_kind(tokens, lex) is None:
        kept_to = _kept_to(message, tokens, target, mask, history, lex)
        if kept_to is not None:
            return kept_to
    if kept_place:
        # "warm it up but leave her face alone": the change goes everywhere but there, and there holds
        target, mask = f"everything but {place_words(target)}", dict(mask, invert=not mask.get("invert"))
    if set(tokens) <= lex.chat | {"there", "so", "much", "very", "you", "anyway", "all", "that", "it", "is",
                                   "this", "looks", "now", "again"} and set(tokens) & lex.chat:
        return Reading(message, "chat")      # "cool", "thanks!", "nice, thank you"
    if not expects and _has(tokens, lex.tools):
        return Reading(message, "unknown", target=target, target_mask=mask)   # a studio tool: the plan is checked
    # "warmer, but keep the snow white": a thing said as what is to stay is no thing asked for
    # ... and one said with "the" or "her" is in the photo already ("darken the bottom, the snow in front
    # is glaring", "brighten the stars"): not a thing wished in
    # ... nor one said as how it is ("snow looks blue, should be white", "the stars are faint")
    things = [(s, e, p) for s, e, p in _find_phrases(tokens, lex.unsupported)
              if s not in kept and not (s > 0 and tokens[s - 1] in _DEFINITE)
              and not (e < len(tokens) and (tokens[e] in word_lists()["state_words"] or tokens[e] in _AS_IT_IS))]
    thing_words = _things(lex)
    if any(p in thing_words for _, _, p in things):
        return Reading(message, "unsupported", target=target, target_mask=mask)
    for verbs, quality, source in ((lex.place_reducers, lex.less_of_place, "less of the place"),
                                   (lex.place_raisers, lex.more_of_place, "more of the place")):
        if not expects and target is not None and quality is not None and _has_verb(tokens, verbs):
            # "tone down the sky", "tame the highlights": a place made less prominent, no quality named;
            # "bring the shadows up": lighter there
            expects = [Expect(tuple(tuple(Move(prop, way, 1) for prop, way in alt)
                                    for alt in quality.alternatives), source)]
    if expects:
        first = text.split("?")[0]
        if any(first.startswith(q + " ") or first == q for q in lex.question_starts) and "?" in text:
            return Reading(message, "question")
        if target is not None and mask is None:
            expects, mask = _object_colour(expects, lex, mask)
        taken_back = _takes_back(message, expects, target, history, lex, mask)
        if taken_back is not None:
            return taken_back
        if _follow_kind(tokens, lex) == "less" and _restates_last(expects, history, lex):
            # "too much, i only wanted it a bit brighter" after "much brighter": less of that change
            return _follow_up(message, "less", tokens, target, mask, history, lex, named=expects)
        if (target is None or mask is None) and _follow_kind(tokens, lex) == "less" \
                and all(e.complaint for e in expects) and _last_edit(history, lex) is not None:
            # "that's gone foggy, dial it back", "he looks washed out now, halfway back?": the complaint is
            # why; the pull-back takes the last change back, as the planner reads it (a thing no finder knows
            # is said of in the complaint: "the wood looks all washed out. pull it back some")
            return _follow_up(message, "less", tokens, None, None, history, lex, bare=True)
        if target is None and lex.carry_on & set(tokens) and _restates_last(expects, history, lex):
            # "warmer still", "even brighter" after "warm the sky": more of that change, where it was
            return _follow_up(message, "more", tokens, None, None, history, lex)
        if target is None and not _has(tokens, lex.global_words) and _follow_kind(tokens, lex) == "more" \
                and _more_where_it_was(tokens, expects, history, lex):
            # "a bit more warmth" after "warm up her face", "more, it still feels kinda cold": that change
            # again on its place, as the planner reads it
            return _follow_up(message, "more", tokens, None, None, history, lex)
        last = _last_edit(history, lex) if target is None and added_to_last(tokens) else None
        if last is not None and last.target_mask is not None:
            # "and take some colour out of it too" after "darken the background on the right": there, as the
            # planner reads it
            return Reading(message, "edit", tuple(expects), last.target, last.target_mask)
        return Reading(message, "edit", tuple(expects), target, mask)
    follow = _follow_kind(tokens, lex)
    if follow == "less" and _less_again(tokens, history, lex):
        follow = "more"      # "even less" after "make the mat less neon": that change again
    if follow is not None:
        return _follow_up(message, follow, tokens, target, mask, history, lex, bare=True)
    if things:
        return Reading(message, "unsupported", target=target, target_mask=mask)
    if "?" in text or any(text.startswith(q + " ") for q in lex.question_starts):
        return Reading(message, "question")
    if _has(tokens, lex.chat):
        return Reading(message, "chat")
    return Reading(message, "unknown", target=target, target_mask=mask)


def read_attempt(message: str, history: Sequence[str] = (), feedback: str = "",
                 lexicon: Lexicon | None = None) -> Reading:
    """What this attempt of a turn asks: ``message`` alone, or, when the person sent the plan back
    with ``feedback`` ("/replan no, softer instead"), the feedback read as the request.

    The rejected attempt never stood, so the feedback is measured against the same version as
    the message: a follow-up in it ("more, that was too subtle", "too strong") is the message's
    change again, larger or smaller but the same way; a request in it replaces the message's
    moves on the properties it names and keeps the others (the planner does the same); feedback
    the judge cannot read ("try again") leaves the message's reading.
    """
    lex = lexicon or load_lexicon()
    asked = read_request(message, history, lex)
    if asked.expects and _has(_tokens(normalise(message)), lex.insist):
        # "more contrast, i insist": past the sweet spot on purpose, a strong step is what was asked
        asked = replace(asked, expects=tuple(replace(e, alternatives=tuple(tuple(replace(m, size=2) for m in alt)
                                                                         for alt in e.alternatives))
                                             for e in asked.expects))
    if not (feedback or "").strip():
        return asked
    said = read_request(feedback, list(history) + [message], lex)
    note = (f"read with the person's feedback: {feedback.strip()[:80]}",)
    fb_tokens = _tokens(lex.speller(feedback.lower()) if lex.speller else feedback.lower())
    # ("the other way" on a plan under review turns that plan round, whatever a follow-up of it would read)
    if (not said.is_edit or said.expects and all(e.source == "the other way" for e in said.expects)) \
            and asked.is_edit and _find_phrases(fb_tokens, lex.reverse):
        # "no, the other way": every expected move turned round
        expects = tuple(Expect(tuple(tuple(replace(m, sign=-m.sign) for m in alt) for alt in e.alternatives),
                               e.source, e.band) for e in asked.expects)
        return replace(asked, expects=expects, notes=asked.notes + note)
    if not said.is_edit:
        return asked                                  # "try again", "hmm": the message still says it
    if said.kind == "follow_up" and said.follow in ("more", "less") and asked.is_edit:
        less = said.follow == "less"
        expects = tuple(Expect(tuple(tuple(replace(m, size=0 if less else max(1, m.size)) for m in alt)
                                     for alt in e.alternatives), e.source, e.band) for e in asked.expects)
        return replace(asked, expects=expects, notes=asked.notes + note)
    if said.kind == "follow_up" or not asked.is_edit:
        return replace(said, notes=said.notes + note)
    if "instead" not in fb_tokens and asked.is_edit and said.target is None:
        # "too dark" on a darkening: less of the request, never its reverse (the planner pulls it back)
        planned = {(m.prop, m.sign) for e in asked.expects for alt in e.alternatives for m in alt}
        if all(any((m.prop, -m.sign) in planned for alt in e.alternatives for m in alt) for e in said.expects):
            expects = tuple(Expect(tuple(tuple(replace(m, size=0) for m in alt) for alt in e.alternatives),
                                   e.source, e.band) for e in asked.expects)
            return replace(asked, expects=expects, notes=asked.notes + note)
    named = {m.prop for e in said.expects for alt in e.alternatives for m in alt}
    kept = tuple(e for e in asked.expects if not named & {m.prop for alt in e.alternatives for m in alt})
    target, mask = (said.target, said.target_mask) if said.target is not None else (asked.target, asked.target_mask)
    return Reading(f"{message} / {feedback}", "edit", kept + said.expects, target, mask, notes=note)


def _object_colour(expects: Sequence[Expect], lex: Lexicon, mask: dict | None) -> tuple[list[Expect], dict | None]:
    """A colour complaint about a thing ("the suit is too orange"): less of that colour (the
    profile's ``object_fix``) or the cast's fix, measured on that band's colours."""
    out = []
    for e in expects:
        if e.band and lex.object_fix is not None:
            size = _size(e)
            fix = tuple(tuple(Move(prop, way, size) for prop, way in alt) for alt in lex.object_fix.alternatives)
            out.append(Expect(fix + e.alternatives, e.source, e.band, e.negated))   # or the cast's own fix
            mask = mask or {"type": "shade", "band": e.band}      # that colour where the photo has most of it
        else:
            out.append(e)
    return out, mask


def _things(lex: Lexicon) -> frozenset[str]:
    """Unsupported words that name things (a hat, a rainbow, a smile): they win over quality words."""
    verbs = {"add", "put", "insert", "draw", "paint", "circle", "erase", "delete", "remove", "replace",
             "swap", "make", "open", "move", "turn", "change", "crop", "rotate", "find", "count", "animate"}
    return frozenset(p for p in lex.unsupported if p.split()[0] not in verbs)


#: "no, softer instead", "nope - cooler": an answer to the last version, not a negation of the word after it
_ANSWER = re.compile(r"\b(?:no|nope|nah)\s*[,.;:!-]+")


def _repeat_but(tokens: Sequence[str], lex: Lexicon) -> float | None:
    """The scale of "same again but less" / "do it again but stronger", or None.

    A repeat phrase before the last "but" and, after it, one phrase of the planner profile's
    ``followups.repeat_but`` (magnitude words around it allowed: "but a touch softer"): the last
    change once more, times the repeat's scale and that factor, the same way (never a pull-back).
    """
    if "but" not in tokens or not lex.repeat_but:
        return None
    cut = len(tokens) - 1 - list(tokens)[::-1].index("but")
    before = _find_phrases(tokens[:cut], lex.more_scales)
    if not before:
        return None
    tail = list(tokens[cut + 1:])
    plain = [t for t in tail if t not in _magnitude_words(lex)]
    # as said, then without magnitude words, then also without the filler the planner drops ("please")
    for said in (tail, plain, [t for t in plain if t not in lex.filler]):
        found = _find_phrases(said, lex.repeat_but)
        if len(found) == 1 and found[0][1] - found[0][0] == len(said):
            return lex.more_scales[before[0][2]] * lex.repeat_but[found[0][2]]
    return None


def _magnitude_words(lex: Lexicon) -> frozenset[str]:
    return frozenset(w for p in lex.magnitudes for w in p.split())


def _kept_spans(tokens: Sequence[str], lex: Lexicon, stops: frozenset[int] = frozenset(),
                cautions: list | None = None) -> set[int]:
    """Token positions after a protect phrase ("keep", "leave", "has to stay") or a caution about a place,
    up to the next clause; and a clause that says a quality is enough as it is ("the sky is bright enough
    already"), which asks for nothing there."""
    out: set[int] = set()
    for i, t in enumerate(tokens):
        if _said_enough(tokens, i):
            start = max([k for k in stops if k <= i] + [j + 1 for j in range(i) if tokens[j] in _CLAUSE_BREAKS] + [0])
            out.update(range(start, i + 1))
    for s, e, _ in (cautions if cautions is not None else _find_phrases(tokens, lex.protect)):
        i = e
        while i < len(tokens) and (i == e or i not in stops):
            if tokens[i] in _CLAUSE_BREAKS:
                # "should stay soft and blurry": a quality joined on is still how it stays
                if not (tokens[i] in ("and", "or") and i + 1 < len(tokens) and tokens[i + 1] in lex.quality_firsts):
                    break
            out.add(i)
            i += 1
        if i in stops and i < len(tokens) and tokens[i] in _SAID_OF_IT and e < len(tokens):
            # "keep the flag as it is, its red is perfect", "but not the lamp, that's already glaring": the
            # sentence after it says what the kept thing is like, not what to do
            while i < len(tokens) and (tokens[i] in _SAID_OF_IT or i not in stops):
                out.add(i)
                i += 1
    return out


#: Words that open a sentence about the thing just named ("its red is perfect", "that's already glaring").
_SAID_OF_IT = frozenset({"it's", "its", "that's", "thats", "they're", "theyre", "which"})


def _restates_last(expects: Sequence[Expect], history: Sequence[str], lex: Lexicon,
                   last: Reading | None = None) -> bool:
    """Whether every quality of ``expects`` is one the last change asked for, the same way (a wish, not a
    complaint or a negation): said with a pull-back, it says how much of that change was meant. ``last``: that
    change's reading, when the caller has it already."""
    last = last or _last_edit(history, lex)
    if last is None or not expects or any(e.negated or e.complaint for e in expects):
        return False
    asked = {(m.prop, m.sign) for e in last.expects for alt in e.alternatives for m in alt}
    return all(any({(m.prop, m.sign) for m in alt} <= asked for alt in e.alternatives) for e in expects)


def _more_where_it_was(tokens: Sequence[str], expects: Sequence[Expect], history: Sequence[str],
                       lex: Lexicon) -> bool:
    """Whether "more" said with the last change's own quality ("a bit more warmth"), or with the complaint
    that change answered said to remain ("more, it still feels kinda cold"), asks for that change again
    where it was: only after a change on a place (on the whole photo the quality again is the same)."""
    last = _last_edit(history, lex)
    if last is None or last.target is None:
        return False
    if "still" in tokens and all(e.complaint for e in expects):
        expects = [replace(e, complaint=False) for e in expects]
    return _restates_last(expects, history, lex, last)


def _follow_kind(tokens: Sequence[str], lex: Lexicon) -> str | None:
    if _has(tokens, lex.retarget) and _target(tokens, lex, set())[0] is not None:
        return "retarget"
    # ("lighten the top half": a half that names a part of the frame is no share of the last change)
    places = {i for s, e, _ in _find_phrases(tokens, lex.targets) for i in range(s, e)}
    less = [f for f in before_comparative(list(tokens), _find_phrases(tokens, lex.follow_less))
            if not places & set(range(f[0], f[1]))]
    more = _find_phrases(tokens, lex.follow_more)
    if less and (not more or len(less[-1][2]) >= len(more[-1][2]) or less[-1][0] > more[-1][0]):
        return "less"
    if more:
        return "more"
    return None


def _less_again(tokens: Sequence[str], history: Sequence[str], lex: Lexicon) -> bool:
    """Whether "less" said with a word that carries on ("even less", "a bit less still") follows a change
    that asked for less of something: more of that change, as the planner reads it."""
    if "less" not in tokens or not lex.carry_on & set(tokens):
        return False
    last = _last_edit(history, lex)
    return last is not None and "less" in _tokens(last.message)


def _last_edit(history: Sequence[str], lex: Lexicon) -> Reading | None:
    """The reading of the last change in ``history`` that asked for a measurable edit (a place kept out of
    a change, "but leave the sky alone", is where that change is, not a change of its own)."""
    for i in range(len(history) - 1, -1, -1):
        r = read_request(history[i], history[:i], lex)
        if r.is_edit and _KEPT_OUT not in r.notes:
            return r
    return None


_KEPT_OUT = "a place kept out of the last change"
_WISH_OPENERS = tuple(word_lists()["wish_openers"])      # "id like the stone to look more golden"
#: "only the sky", "just on the sky": the last change kept to that place; "too", "also": added there.
_ONLY, _ALSO = word_lists()["only_words"], word_lists()["also_words"]


def _kept_out(message: str, target: str, mask: dict, history: Sequence[str], lex: Lexicon) -> Reading | None:
    """"but leave the sky alone", "dont touch her face" after a change, asking nothing else: that change
    taken off the place said (there it goes back the other way; elsewhere nothing moves)."""
    last = _last_edit(history, lex)
    if last is None or not last.expects:
        return None
    back = tuple(Expect(tuple(tuple(replace(m, sign=-m.sign) for m in alt) for alt in e.alternatives),
                        "kept as it was", e.band, look=True) for e in last.expects)
    return Reading(message, "edit", back, target, mask, notes=(_KEPT_OUT,))


def _remedy_after(tokens: Sequence[str], at: int, stops: frozenset[int], used: set[int]) -> bool:
    """Whether the thing at ``at`` is said first, nothing asked before it, and a later clause asks something of
    its own object ("recover the highlights") with no word pointing back at the thing ("brighten them")."""
    ends = sorted(k for k in stops if k > at)
    if not ends or any(u < at for u in used) or not any(u >= ends[0] for u in used):
        return False
    rest = list(tokens[ends[0]:ends[1] if len(ends) > 1 else len(tokens)])      # the next clause
    return not _POINTING_BACK & set(rest) and any(w in ("the", "some") for w in rest) \
        and any(ends[0] <= u < ends[0] + len(rest) for u in used)


_POINTING_BACK = word_lists()["pointing_back"]       # "the coins look dull, brighten them"


def _kept_to(message: str, tokens: Sequence[str], target: str | None, mask: dict | None, history: Sequence[str],
             lex: Lexicon) -> Reading | None:
    """"i meant only the sky", "just on the sky" right after a change to the whole photo: the change stays on
    the place and leaves the rest, which goes back the other way (the place itself does not move)."""
    last = _last_edit(history, lex)
    meant = any(t in ("mean", "meant") and i > 0 and tokens[i - 1] == "i" for i, t in enumerate(tokens))
    if mask is None or last is None or last.target is not None or not last.expects \
            or not (_ONLY & set(tokens) or meant) or _ALSO & set(tokens) or _has(tokens, ("as well",)):
        return None
    back = tuple(Expect(tuple(tuple(replace(m, sign=-m.sign) for m in alt) for alt in e.alternatives),
                        "taken off the rest", e.band, look=True) for e in last.expects)
    return Reading(message, "edit", back, f"everything but {place_words(target)}",
                   dict(mask, invert=not mask.get("invert")), notes=("the last change kept to one place",))


def keeps_out_of_last(message: str, history: Sequence[str] = (), lexicon: Lexicon | None = None) -> bool:
    """Whether ``message`` only keeps a place out of the change before it ("but leave the sky alone")."""
    return _KEPT_OUT in read_request(message, history, lexicon).notes


def _takes_back(message: str, expects: Sequence[Expect], target: str | None, history: Sequence[str],
                lex: Lexicon, mask: dict | None = None) -> Reading | None:
    """"not that soft" right after "give it a soft look", "it's too yellow now" right after a
    warming: a "less" follow-up of that change.

    Every quality is negated, or a complaint whose fix runs against the last change, and undoes
    a move of it, on no new place: the request is read as taking part of that change back (at
    least a share of it, never past the version before it), so its size is the last change's,
    not a slight step. A thing the judge cannot find, said of how it is now ("the lamp is totally blown out
    now" after brightening it all), is where that change shows, not a new place.
    """
    shows = target is not None and mask is None and "now" in _tokens(normalise(message))
    if not history or (target is not None and not shows) or not expects or \
            not all(e.negated or e.complaint for e in expects):
        return None
    last = _last_edit(history, lex)
    if last is None or (shows and last.target is not None):
        return None
    last_moves = {(m.prop, m.sign) for e in last.expects for alt in e.alternatives for m in alt}
    if not all((m.prop, -m.sign) in last_moves for e in expects for alt in e.alternatives for m in alt):
        return None
    # a complaint about what a look only touched on ("a bit dark now" after a moody look) is a fix
    plain = {(m.prop, m.sign) for e in last.expects if not e.look for alt in e.alternatives for m in alt}
    if not all(e.negated or all((m.prop, -m.sign) in plain for alt in e.alternatives for m in alt)
               for e in expects):
        return None
    # a complaint may be about everything done so far ("it's harsh now" after "flat" and "bit more"):
    # measured from the original, never past it; a negation ("not that soft") names the last change
    complained = not all(e.negated for e in expects)
    return Reading(message, "follow_up", tuple(expects), last.target, last.target_mask, follow="less",
                   bounded=True, since_original=complained,
                   notes=("takes back part of " + ("the edits so far" if complained else "the last change"),))


def _follow_up(message: str, follow: str, tokens: Sequence[str], target: str | None, mask: dict | None,
               history: Sequence[str], lex: Lexicon, scale: float | None = None, bare: bool = False,
               named: Sequence[Expect] = ()) -> Reading:
    """``bare``: the message names no quality of its own ("bit more", "same on the right"): the judge
    may measure it against the last change as it landed instead of these words (scoring.landed_moves).
    ``named``: the qualities of the last change the message names ("ease off the warmth" after "warmer and
    brighter"): only those go back."""
    last = _last_edit(history, lex)
    if last is None:
        return Reading(message, "follow_up", follow=follow, notes=("no earlier change to follow",), bare=bare,
                       repeat=(scale or _more_scale(tokens, lex)[0]) if follow == "more" else None,
                       bounded=follow == "less", target=target if follow == "retarget" else None,
                       target_mask=mask if follow == "retarget" else None)
    kept_to = _kept_to(message, tokens, target, mask, history, lex) if follow == "retarget" else None
    if kept_to is not None:
        return kept_to
    if follow == "retarget":
        return Reading(message, "follow_up", last.expects, target, mask, follow="retarget", bare=bare)
    if follow == "more":
        # the planner profile's scale of the phrase ("a touch more" 0.3, "double it" 2.0) sizes it
        # (``scale`` given: "same again but less", already sized)
        if scale is None:
            scale, size = _more_scale(tokens, lex)
        else:
            size = 0 if scale < 1.0 else 2 if scale >= 1.6 else 1
        expects = tuple(Expect(tuple(tuple(replace(m, size=min(size, m.size)) for m in alt)
                                     for alt in e.alternatives), e.source, look=e.look) for e in last.expects)
        return Reading(message, "follow_up", expects, last.target, last.target_mask, follow="more", repeat=scale,
                       bare=bare)
    # less: the other way, by a share of the last change (the profile's fraction: "halve it" 0.5,
    # "way too much" 0.8), never past the version before it
    found = _find_phrases(tokens, lex.less_fractions)
    share = lex.less_fractions[found[-1][2]] if found else None
    if last.follow == "less":   # "too much" again after a pull-back: keep pulling back the same way
        return Reading(message, "follow_up", last.expects, last.target, last.target_mask, follow="less",
                       bounded=True, share=share)
    said = {m.prop for e in named for alt in e.alternatives for m in alt}
    taken = [e for e in last.expects if not said or said & {m.prop for alt in e.alternatives for m in alt}]
    expects = tuple(Expect(tuple(tuple(replace(m, sign=-m.sign, size=0) for m in alt) for alt in e.alternatives),
                           e.source) for e in taken or last.expects)
    return Reading(message, "follow_up", expects, last.target, last.target_mask, follow="less", bounded=True,
                   share=share, bare=bare)


def _more_scale(tokens: Sequence[str], lex: Lexicon) -> tuple[float, int]:
    """(share of the last change, size) a "more" asks: the planner profile's scale of the phrase
    ("a touch more" 0.3, "double it" 2.0), or a magnitude said with it."""
    found = _find_phrases(tokens, lex.more_scales)
    scale = lex.more_scales[found[-1][2]] if found else 1.0
    # "like 50% more": that share of the last change again
    shares = [share for t, after in zip(tokens, tokens[1:])
              if after == "more" and (share := percent_share(t)) is not None]
    if shares:
        scale, found = min(shares[-1], 2.0), True
    size = 0 if scale <= 0.5 else 2 if scale >= 1.6 else 1
    if not found:
        size = _magnitude(tokens, len(tokens), lex, size)
    return scale, size


__all__ = ["Expect", "Lexicon", "Move", "PROPERTIES", "Reading", "load_lexicon", "read_attempt", "read_request"]
