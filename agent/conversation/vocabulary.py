"""The embedded planner's vocabulary: the engine profile's word tables, compiled once.

Every phrase the planner knows (intents, problem words, targets, bands,
magnitudes, grammar words, follow-ups) is data in ``profiles/engine.yaml``;
this module turns the tables into one phrase -> (category, key) map and
matches a message against it, longest phrase first (spaCy's Matcher rule:
overlapping matches resolve to the longest span).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from agent.conversation.words import (SEPARATORS, said_plainly, excess_phrases, PhraseTable, Speller, drop_clauses, find_phrases, is_number,
                                     opening_interjections, plain_words, sized_follow_ups, token_spans,
                                     tokenize, word_lists)
from pipeline import ops
from pipeline.masks import describe_mask, normalize_mask_spec
from pipeline.masks.words import spot_thing
from profiles import Profile, ProfileError

#: Longer messages are cut: a planner request is a sentence or two, not a document.
MAX_MESSAGE_CHARS = 1000
#: Words that carry no request of their own (profiles/language/words.yaml).
FILLER = word_lists()["filler"]
#: Words that may come before a clause without being what it says ("ok never mind the cord").
_SAID_FIRST = FILLER | word_lists()["interjections"]
#: Words before a likeness that wish for it ("want this to feel like ...", "make it look like ...").
_WISHED_LIKE = frozenset({"want", "wanted", "make", "makes", "making", "give", "turn", "wanna"})


# ---------------------------------------------------------------------------
# Vocabulary, compiled once from a profile
# ---------------------------------------------------------------------------

#: Joins the two names of a place qualified by a part of the frame ("the background on the right").
PLACE_JOIN = "&"
#: Joins the look a thing is described by to the part of the frame it is said to be in: "bright@top_left" is
#: the brightest thing in the top left ("the round bright crater near the top left"), a spot mask.
SPOT_JOIN = "@"


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
class Problem:
    """One complaint word ("murky") and the intents that fix it, at ``scale``, optionally on a target."""

    name: str
    fixes: tuple[str, ...]
    scale: float = 1.0
    target: str | None = None
    band: str | None = None          # a colour complaint: said of a thing, that band's saturation


@dataclass(frozen=True)
class Piece:
    """A matched phrase: ``category`` (intent, fix, target, band, magnitude, ...) and ``key``."""

    category: str
    key: Any
    text: str
    pos: int


# Same phrase in two lists: the earlier category wins.
_CATEGORY_ORDER = ("thing", "relative", "rollback", "problem", "intent", "fix", "target", "band", "magnitude", "towards", "reduce",
                   "avoid", "reset", "set", "increase", "objects", "global", "except", "protect", "purpose", "separator",
                   "op")


#: Lists of profiles/language/words.yaml that only tell how a sentence is shaped or what kind a thing is (words a
#: finder may still not know: "would it suit", "the orange suit"): a word there is not read as part of a request.
_SHAPE_ONLY = frozenset({"judging_verbs", "clothing"})


def _language_words() -> frozenset[str]:
    """Every word of profiles/language/words.yaml's lists (how sentences are said: question words, verbs...)."""
    return frozenset(t for key, words in word_lists().items() if key not in _SHAPE_ONLY
                     for w in words for t in tokenize(w))


#: Keys whose values are our own sentences (replies, reasons, labels), not words a person's message is read by.
_PROSE_KEYS = frozenset({"why", "reply", "replies", "quick_replies", "doing", "label", "description", "math",
                         "failure_modes", "help", "note", "notes", "say", "sentence", "template", "text"})


def _table_words(node: Any) -> set[str]:
    """Every word of every phrase (up to six words) in a profile's tables, keys of word tables included."""
    out: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Mapping):
            for key, value in item.items():
                if str(key) in _PROSE_KEYS:
                    continue
                stack.append(str(key))
                stack.append(value)
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        elif isinstance(item, str):
            toks = tokenize(item)
            if 0 < len(toks) <= 6:
                out.update(toks)
    return out


_ELONGATED = re.compile(r"(.)\1{2,}")


class Vocabulary:
    """The engine profile's vocabulary, compiled for matching."""

    def __init__(self, profile: Profile):
        pe = profile.vocabulary
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
        # "everything except her face": each place's complement, named "all_but_<place>"
        for name, spec in list(self.targets.items()):
            if name != "selection" and not spec.get("invert"):
                self.targets[f"all_but_{name}"] = dict(spec, invert=True)
                self.target_labels[f"all_but_{name}"] = f"everything but {self.target_labels.get(name) or name}"
        self.band_ops: dict[str, str] = dict(pe.get("band_ops") or {})
        # "the snow looks blue, it should be white": the white-balance move that takes a band's cast out
        self.band_casts: dict[str, tuple[str, int]] = {
            str(b): (str(e["op"]), int(e["value"])) for b, e in (pe.get("band_casts") or {}).items()}
        # a band's own op as the plain op it is made from ("saturation_green": saturation; the first named wins)
        self.band_op_plain: dict[str, str] = {}
        for op, pattern in self.band_ops.items():
            for b in ops.BANDS:
                self.band_op_plain.setdefault(pattern.format(band=b), op)
        # "the water", "the grass": things named by their colour (found only where the photo has it)
        self.band_things = {" ".join(tokenize(w)): band for band, e in (pe.get("bands") or {}).items()
                            for w in e.get("things") or ()}
        self.band_things_min_share = float(pe.get("band_things_min_share", 0.0))
        # "pink", "teal": one word that names a colour (not a thing of that colour, "the water")
        self.colour_words = {w: band for band, e in (pe.get("bands") or {}).items() for w in e.get("words") or ()
                             if len(tokenize(w)) == 1 and w not in self.band_things}
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
        for cat in ("reduce", "avoid", "reset", "set", "increase", "objects", "global", "rollback", "towards", "except",
                    "protect", "purpose"):
            lists[cat] += [(w, cat) for w in grammar.get(cat, ())]
        # "a mood board", "the light bulb": a thing's name that holds a quality word is neither quality nor request
        lists["thing"] = [(w, "thing") for w in grammar.get("things", ())]
        lists["reduce"] += [(w, "reduce") for w in (*grammar.get("reduce_after", ()), *excess_phrases(pe, only_alone=True))]
        # "tone down the sky": these reduce words, on a target with no quality named, mean
        # the implicit intent (profile: implicit_intents.tone_down).
        lists["reduce"] += [(w, "reduce") for w in grammar.get("tone_down", ())]
        self.tone_down = {" ".join(tokenize(w)) for w in grammar.get("tone_down", ())}
        # ... and their opposites ("bring the shadows up"): increase words that mean implicit_intents.raise_up
        lists["increase"] += [(w, "increase") for w in grammar.get("raise_up", ())]
        self.raise_up = {" ".join(tokenize(w)) for w in grammar.get("raise_up", ())}
        # "calm the highlights down", "bring the shadows up": the particle joins its verb again
        owners = "|".join(sorted(word_lists()["place_determiners"]))
        # ("bring it up": a raising verb's object may be "it"; "dial it back" is a follow-up's own phrase)
        self._split_verbs = [re.compile(rf"\b({verb}) ((?:{owners}) (?:[a-z']+ ){{0,2}}?"
                                        rf"{'|(?:it|them) ' if f'{verb} {particle}' in self.raise_up else ''})"
                                        rf"({particle})\b", re.IGNORECASE)
                             for verb, particle in sorted({tuple(p.split()) for p in self.tone_down | self.raise_up
                                                           if len(p.split()) == 2})]
        implicit = dict(pe.get("implicit_intents") or {})
        self.implicit_intents: dict[str, str] = {}
        for name, words in (("tone_down", self.tone_down), ("raise_up", self.raise_up)):
            intent = implicit.get(name)
            if intent is not None and intent not in self.intents:
                raise ProfileError(str(profile.path), f"vocabulary.implicit_intents.{name}",
                                   f"no intent called {intent!r}")
            if intent is not None:
                self.implicit_intents.update({w: intent for w in words})
        # "shift the oranges towards yellow" (a hue move), "shift the tint towards green" (a cast).
        shifts = dict(pe.get("colour_shifts") or {})
        self.shift_hue = int(shifts.get("hue", 0))
        self.casts: dict[str, tuple[tuple[str, int], ...]] = {}
        for band, moves in (shifts.get("casts") or {}).items():
            where = f"vocabulary.colour_shifts.casts.{band}"
            if band not in ops.BANDS:
                raise ProfileError(str(profile.path), where, f"expected one of {', '.join(ops.BANDS)}")
            try:
                self.casts[band] = tuple((ops.get_op(k).name, int(v)) for k, v in moves.items())
            except ops.OpError as exc:
                raise ProfileError(str(profile.path), where, str(exc)) from None
        lists["separator"] = [(w, "soft") for w in grammar.get("separators", ())]
        self.trailing_also = {" ".join(tokenize(w)) for w in grammar.get("trailing_also", ())}
        self.avoid_degree = {" ".join(tokenize(w)) for w in grammar.get("avoid_degree", ())}
        self.not_before = {str(w).lower() for w in grammar.get("not_before") or ()}
        self.not_unless_after = {str(w).lower() for w in grammar.get("not_unless_after") or ()}
        self.back_references = {" ".join(tokenize(w)) for w in grammar.get("back_references", ())}
        self.pronoun_subjects = {" ".join(tokenize(str(w))) for w in grammar.get("pronoun_subjects", ())}
        self.asides = {tuple(tokenize(str(w))): True for w in grammar.get("asides", ()) if tokenize(str(w))}
        # Op names and labels ("temperature", "green saturation", "saturation_green"): lowest priority.
        for op in ops.OPS.values():
            lists["op"] += [(op.name.replace("_", " "), op.name), (op.name, op.name), (op.label.lower(), op.name)]
        # A setting named with the way it goes ("exposure down", "warmth -10", "shadows up"): the op itself, that
        # way. The names: the ops' own, and the profile's `setting_words` ("warmth": temperature).
        named = {str(w): str(o) for w, o in (grammar.get("setting_words") or {}).items() if str(o) in ops.OPS}
        lists["op"] += list(named.items())
        self.setting_ops: dict[str, str] = {" ".join(tokenize(w)): o for w, o in lists["op"]}
        self.setting_ways: dict[str, int] = {str(w): int(v) for w, v in (grammar.get("setting_ways") or {}).items()}
        self.setting_ways_not_before = frozenset(str(w) for w in grammar.get("setting_ways_not_before") or ())
        # Complaints: a problem word that is not also a wish word (an intent or band word) is
        # always a complaint; the others are only after a frame word ("looks soft").
        self.problems: dict[str, Problem] = {}
        comp = dict(pe.get("complaints") or {})
        wish_words = {tuple(tokenize(w)) for cat in ("intent", "band") for w, _ in lists[cat]}
        self.flippable: dict[tuple[str, ...], str] = {}
        for word, entry in (comp.get("problems") or {}).items():
            entry = dict(entry or {})
            fixes = tuple(entry.get("fix") or ())
            where = f"vocabulary.complaints.problems.{word}"
            for f in fixes:
                if f not in self.intents:
                    raise ProfileError(str(profile.path), where, f"no intent called {f!r}")
            target = entry.get("target")
            if target is not None and target not in self.targets:
                raise ProfileError(str(profile.path), where, f"no target called {target!r}")
            band = entry.get("band")
            if band is not None and band not in ops.BANDS:
                raise ProfileError(str(profile.path), where, f"band: expected one of {', '.join(ops.BANDS)}")
            self.problems[word] = Problem(word, fixes, float(entry.get("scale", 1.0)), target, band)
            toks = tuple(tokenize(word))
            if toks in wish_words:
                self.flippable[toks] = word
            else:
                lists["problem"].append((word, word))
        self.frames = {tuple(tokenize(w)) for w in comp.get("frames") or ()}
        self.object_fix = comp.get("object_fix")
        if self.object_fix is not None and self.object_fix not in self.intents:
            raise ProfileError(str(profile.path), "vocabulary.complaints.object_fix",
                               f"no intent called {self.object_fix!r}")
        self.magnitude_damping = float(comp.get("magnitude_damping", 0.0))
        self.wishes = {tuple(tokenize(w)) for w in comp.get("wishes") or ()}
        self.statements = {t for w in comp.get("statements") or () for t in tokenize(w)}
        # Follow-ups (agent/planning/followups.py) are matched on their own tables.
        fu = dict(pe.get("followups") or {})
        repeat, pull_words = sized_follow_ups(pe)
        self.repeat = {tuple(tokenize(w)): v for w, v in repeat.items()}
        pull = dict(fu.get("pull_back") or {})
        self.pull_back_fraction = float(pull.get("fraction", 0.5))
        self.pull_back = {tuple(tokenize(w)): self.pull_back_fraction for w in pull_words}
        self.fractions = {tuple(tokenize(w)): float(v) for w, v in (fu.get("fractions") or {}).items()}
        self.reverse = {tuple(tokenize(w)): True for w in fu.get("reverse") or ()}
        # "take it back to about half": a going-back verb said with a share is that share taken back
        self.going_back_verbs = {tuple(tokenize(str(w))): True
                                 for w in (((pe.get("router") or {}).get("going_back") or {}).get("strong_verbs") or ())}
        restore = dict(fu.get("restore") or {})
        self.restore = {tuple(tokenize(w)): True for w in restore.get("verbs") or ()}
        self.restore_amounts = {str(k): float(v) for k, v in (restore.get("amounts") or {}).items()}
        self.restore_fraction = float(restore.get("fraction", 0.5))
        self.restore_nouns = {str(k): str(v) for k, v in (restore.get("nouns") or {}).items()}
        limits = dict(fu.get("pull_back_limits") or {})
        self.pull_back_limits = (float(limits.get("min", 0.15)), float(limits.get("max", 0.85)))
        self.repeat_floor = float(fu.get("repeat_floor", 0.0))
        # The least a pull-back takes back of each op, in its units: a share of the largest step a quality
        # asks of it ("pull it back slightly" after two small warm-ups still shows)
        least = float(fu.get("pull_back_least", 0.0))
        steps: dict[str, int] = {}
        for intent in self.intents.values():
            for op, value in intent.ops:
                steps[op] = max(steps.get(op, 0), abs(int(value)))
        self.pull_back_least = {op: max(1, round(least * step)) for op, step in steps.items()} if least else {}
        self.carry_on = {str(w).lower() for w in fu.get("carry_on") or ()}
        self.discrete_ops = {str(o) for o in fu.get("discrete_ops") or ()}
        self.retarget = {tuple(tokenize(w)): True for w in fu.get("retarget") or ()}
        self.repeat_but = {tuple(tokenize(w)): float(v) for w, v in (fu.get("repeat_but") or {}).items()}
        self.chatter = {t for w in fu.get("filler") or () for t in tokenize(w)}
        self.no_history_replies = [str(x) for x in fu.get("no_history_quick_replies") or ()]
        # a request not understood is asked back, with the photo-reading's default suggestions to tap
        self.not_understood_replies = [*(str(x) for x in pe.get("photo_reading_default_suggestions") or ()),
                                       "What can you do?"]
        insist = dict(pe.get("insist") or {})
        self.insist_words = {tuple(tokenize(w)): True for w in insist.get("words") or ()}
        self.insist_magnitude = float(insist.get("magnitude", 2.0))
        self.soft_rate = float(insist.get("soft_rate", 0.5))
        self.soft_share = float(insist.get("soft_share", 0.25))
        self.monochrome = dict(pe.get("monochrome") or {})
        # Nouns that follow "the" without naming a place ("the colours", "the mood", "the edit").
        self.not_places = {t for w in pe.get("not_places") or () for t in tokenize(w)}
        # "it's too dark, and warmer": a request joined on with these is asked as well as a complaint's fix
        self.additive_joins = frozenset(str(w) for w in pe.get("additive_joins") or ())
        tones = pe.get("kept_tones") or {}
        self.kept_tones = {tuple(tokenize(str(w))): name for name, e in tones.items() for w in e.get("words") or ()}
        self.kept_tone_masks = {name: (dict(e["mask"]), str(e.get("label") or name)) for name, e in tones.items()}
        # tones kept only for a thing no finder knows ("keep the mortar lines light"; "the sky is bright enough")
        self.kept_tones_of_things = frozenset(name for name, e in tones.items() if e.get("things_only"))
        manner = pe.get("manner") or {}
        self.manner_words = {str(k): str(v) for k, v in (manner.get("words") or {}).items()}
        self.manner_effects = {" ".join(tokenize(str(w))) for w in manner.get("effects") or ()}
        guesses = dict(pe.get("place_guesses") or {})
        self.place_default = guesses.get("default")
        self.place_relations = {tuple(tokenize(w)): True for w in guesses.get("relations") or ()}
        self.place_relation_target = guesses.get("relation_target")
        self.place_subject_said = PhraseTable({tuple(tokenize(w)): True for w in guesses.get("subject_said") or ()})
        self.place_nouns = {str(k): str(v) for k, v in (guesses.get("nouns") or {}).items()}
        # "in the middle": the part of the frame round its centre (a centred radial target), where a thing may be
        self.frame_middle = next((n for n, t in self.targets.items() if t.get("type") == "radial"
                                  and not t.get("invert") and list(t.get("center") or ()) == [0.5, 0.5]), None)
        # "the round bright crater", "the dark spot": a word in a thing's name that says how it stands out
        self.spot_tones = {t: str(tone) for tone, words in (guesses.get("spot_tones") or {}).items()
                           for w in words or () for t in tokenize(str(w))}
        # "that lamp", "this bit": a thing pointed at, not a kind of place a region can stand in for
        self.pointing_words = {t for w in guesses.get("pointing") or () for t in tokenize(str(w))}
        # "go ahead and guess": the person lets the planner put a request on its best guess for a place
        self.go_ahead = PhraseTable((str(w), True) for w in guesses.get("go_ahead") or ())
        self.dismiss = PhraseTable((str(w), True) for w in guesses.get("dismiss") or ())
        # "it looks like a sunset in a cup": what the photo is like now, said as a clause of its own
        self.likeness = PhraseTable((str(w), True) for w in grammar.get("likeness") or ())
        for t in [self.place_default, self.place_relation_target, *self.place_nouns.values()]:
            if t is not None and t not in self.targets:
                raise ProfileError(str(profile.path), "vocabulary.place_guesses", f"no target called {t!r}")
        # "behind her": the places whose complement is the relation target (the subject, for the background)
        self.place_relation_of: set[str] = set()
        if self.place_relation_target:
            spec = self.targets[self.place_relation_target]
            around = normalize_mask_spec(dict(spec, invert=not spec.get("invert")))
            self.place_relation_of = {name for name, s in self.targets.items()
                                      if normalize_mask_spec(dict(s, invert=bool(s.get("invert")))) == around}
        # "ok cool, now more contrast", "thanks! undo the last one": chat said before a request
        router = dict(pe.get("router") or {})
        self.preamble = {tuple(plain_words(tokenize(str(w)))) for e in (router.get("chat") or {}).values()
                         for w in e.get("words") or ()} | {tuple(plain_words(tokenize(str(w))))
                                                           for w in router.get("filler") or ()}
        self.preamble.discard(())
        # "hi this is my cat", "hello we took this in wales": a greeting before someone says what the photo is
        self.greetings = {tuple(plain_words(tokenize(str(w))))
                          for w in ((router.get("chat") or {}).get("greeting") or {}).get("words") or ()} - {()}
        # "the sky looks lovely, now a bit more contrast": praise of a place, which names no place to change
        self.praise = PhraseTable({tuple(tokenize(str(w))): True
                                   for w in ((router.get("chat") or {}).get("praise") or {}).get("words") or ()})
        self.preamble_ends = {t for w in router.get("preamble_ends") or () for t in tokenize(str(w))}
        fixes = dict(pe.get("spelling") or {})
        self.spelling_extra = {t for w in fixes.get("known") or () for t in tokenize(str(w))}
        self.phrases: dict[tuple[str, ...], tuple[str, Any]] = {}
        for cat in _CATEGORY_ORDER:
            for phrase, key in lists[cat]:
                toks = tuple(tokenize(phrase))
                if toks and toks not in self.phrases:
                    self.phrases[toks] = (cat, key)
        self.longest = max((len(t) for t in self.phrases), default=1)
        # "brightening", "softened", "cools": a quality word in another form, heard as that quality
        self.inflected: dict[str, tuple[str, Any]] = {}
        uninflected = {str(w) for w in pe.get("uninflected") or ()}
        for key, hit in self.phrases.items():
            if len(key) == 1 and hit[0] in ("intent", "fix") and key[0].isalpha() and key[0] not in uninflected:
                for form in _inflections(key[0]):
                    if (form,) not in self.phrases:
                        self.inflected.setdefault(form, hit)
        self.known_words = ({t for phrase, hit in self.phrases.items() if hit[0] != "thing" for t in phrase} | FILLER | self.chatter | self.not_places
                            | {t for f in self.frames for t in f} | {t for f in self.wishes for t in f}
                            | {t for k in (*self.repeat, *self.pull_back, *self.fractions, *self.retarget) for t in k}
                            | self.statements | _router_words(router) | self.spelling_extra | set(self.inflected))
        # ("theyre glowing": a word of how sentences are said is no slip for "there")
        self.speller = Speller.from_profile(self.known_words | _language_words(), fixes)
        # what the judge counts as read: a word of any table of the profile ("i insist", "leave it untouched")
        self.table_words = frozenset(self.known_words | _table_words(profile.data) | _language_words())

    def unread_words(self, text: str) -> list[str]:
        """Words of ``text`` that no table knows — the engine's vocabulary, its router, the language lists —
        after typing slips are put right ("too wobbly now": ["wobbly"]): what the agent could not read, so a
        result built on the rest is not kept without the person seeing it."""
        known = self.table_words
        out = []
        for t in tokenize(self.drop_dismissed(self.spell(text or ""))):
            if t in SEPARATORS or is_number(t) or "'" in t:
                continue
            # "ummm", "sooo": a drawn-out word is the word
            forms = {t, t.rstrip("s"), _ELONGATED.sub(r"\1\1", t), _ELONGATED.sub(r"\1", t)}
            if forms & known:
                continue
            out.append(t)
        return list(dict.fromkeys(out))

    def drop_dismissed(self, text: str) -> str:
        """``text`` without the clauses that drop a thing from the talk ("ok never mind the cord. bit more of
        that pop" -> "bit more of that pop"); as said when nothing else would be left."""
        tokens = tokenize(text or "")
        kept = drop_clauses(tokens, self.dismiss, _SAID_FIRST)
        # asides that ask for nothing: "and bluer while you're at it"
        aside = {i for s, n, _ in find_phrases(kept, self.asides) for i in range(s, s + n)}
        if aside and len(aside) < len(kept):
            kept = [t for i, t in enumerate(kept) if i not in aside]
        kept = self._without_likeness(kept)
        return text if len(kept) == len(tokens) else " ".join(kept)

    def _without_likeness(self, tokens: list[str]) -> list[str]:
        """``tokens`` without the clauses that say what the photo is like ("wayyy less orange, it looks like a
        sunset in a cup": not a golden-hour look asked for); as said when nothing else would be left."""
        clauses: list[list[str]] = [[]]
        for t in tokens:
            clauses[-1].append(t)
            if t in SEPARATORS:
                clauses.append([])
        kept = []
        for clause in clauses:
            words = [t for t in clause if t not in SEPARATORS]
            wished = False
            while words and not any(s == 0 for s, _, _ in self.likeness.find(words)) and words[0] in _SAID_FIRST:
                wished = wished or words[0] in _WISHED_LIKE
                words = words[1:]
            # ("want this to feel like a wet back alley at night, dark and bluish": a likeness wished for is the
            # request's how, kept)
            if wished or not any(s == 0 for s, _, _ in self.likeness.find(words)):
                kept += clause
        return kept if any(t not in SEPARATORS for t in kept) else tokens

    def says_go_ahead(self, text: str) -> bool:
        """Whether ``text`` tells the planner to go ahead and guess ("just guess", "your best guess"), or
        insists on the request as said ("warmer on the phone, i insist")."""
        tokens = tokenize(text)
        return self.go_ahead.has(tokens) or bool(find_phrases(tokens, self.insist_words))

    def corner(self, targets: Iterable[str | None]) -> str | None:
        """The corner two sides said together name ("the big one lower down on the right": the bottom right),
        or None."""
        said = set(targets)
        return next((f"{v}_{h}" for v in ("top", "bottom") for h in ("left", "right")
                     if said == {v, h} and f"{v}_{h}" in self.targets), None)

    def is_frame_part(self, name: str) -> bool:
        """Whether target ``name`` is a part of the frame: a side or half (a gradient mask) or a corner (an
        off-centre radial one), not a thing found in the photo."""
        spec = self.targets.get(name) or {}
        centre = spec.get("center") or [0.5, 0.5]
        # (the edges: the frame outside a centred ellipse)
        return spec.get("type") == "gradient" or (spec.get("type") == "radial" and (bool(spec.get("invert")) or max(
            abs(float(centre[0]) - 0.5), abs(float(centre[1]) - 0.5)) > 0.2))

    def place(self, name: str) -> tuple[dict, str]:
        """A named target's mask spec and the words for it ("the sky", "the top of the frame"); a place
        qualified by a part of the frame ("sky&top": "that patch of sky at the top") is where both are."""
        if SPOT_JOIN in name:
            tone, part = name.split(SPOT_JOIN, 1)
            within, words = self.place(part)
            spec = normalize_mask_spec({"type": "spot", "tone": tone, "within": within})
            return spec, f"{spot_thing(tone)} in {words}"
        if PLACE_JOIN in name:
            names = name.split(PLACE_JOIN)
            spec = normalize_mask_spec({"type": "intersect", "masks": [dict(self.targets[n]) for n in names]})
            return spec, " on ".join(self.place(n)[1] for n in names)
        spec = normalize_mask_spec(self.targets[name])
        return spec, self.target_labels.get(name) or describe_mask(spec)

    # -- chat said before a request ---------------------------------------
    def strip_preamble(self, text: str) -> str:
        """``text`` without a leading run of chat ("ok cool,", "thanks!", "lol nice now") that ends at a
        punctuation mark or one of ``router.preamble_ends`` ("now", "so"); else ``text`` as said.

        "cool the highlights" keeps its "cool": a chat word that runs straight into the request stays.
        """
        spans = token_spans(text)
        toks = plain_words([t for t, _ in spans])
        said = opening_interjections(toks)
        if said:      # "right ok erm... a little more": "right" is a sound here, not the right side
            return text[spans[said][1]:]
        greeted = max((len(g) for g in self.greetings if tuple(toks[:len(g)]) == g), default=0)
        if greeted and greeted < len(toks) and toks[greeted] in _TELLING_OPENERS:
            # "hi this is my cat", "hello we took this in wales": what follows is theirs to say
            return text[spans[greeted][1]:]
        i, chatted = 0, False
        longest = max((len(k) for k in self.preamble), default=1)
        while i < len(toks):
            n = next((n for n in range(min(longest, len(toks) - i), 0, -1) if tuple(toks[i:i + n]) in self.preamble), 0)
            if n:
                i, chatted = i + n, True
            elif toks[i] in SEPARATORS and chatted:
                i += 1
            else:
                break
        if not chatted or i >= len(toks) or i == 0:
            return text
        prev = toks[i - 1]
        if prev not in SEPARATORS and prev not in self.preamble_ends:
            return text
        if any(p.category == "target" and len(p.text.split()) > 1 for p in read_pieces(self, toks[:i])):
            return text         # "the top right, brighten it": chat words that name a place together
        return text[spans[i][1]:]

    def join_particles(self, text: str) -> str:
        """"calm the highlights down" -> "calm down the highlights ": a separable verb of
        ``grammar.tone_down`` or ``grammar.raise_up`` put back together, so the place after it reads as its
        object ("turn it up", "tone that down" stay as said: a follow-up's own phrases)."""
        def join(m: re.Match) -> str:
            said = (m[1].lower(), m[2].strip().lower(), m[3].lower())
            if said in self.repeat or said in self.pull_back:
                return m[0]         # "turn it up", "tone that down": more or less of the last change (a follow-up)
            return f"{m[1]} {m[3]} {m[2].strip()}"
        for split in self._split_verbs:
            text = split.sub(join, text)
        return said_plainly(text)

    # -- typing slips ----------------------------------------------------
    def spell(self, text: str) -> str:
        """``text`` with typing slips of known words put right ("brigther" -> "brighter"); see
        :class:`agent.conversation.words.Speller`."""
        return self.speller(text)

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


#: Words a person opens with, after a greeting, to say what the photo is or what they are doing.
_TELLING_OPENERS = frozenset({"this", "these", "here", "here's", "heres", "i", "i'm", "im", "we", "we're", "my", "our",
                              "it's", "its"})


def _router_words(router: Mapping) -> set[str]:
    """Every word of the router's tables ("what have you changed", "originally"): known to the speller,
    never "corrected" to a near one."""
    phrases = [*(router.get("filler") or ()), *(router.get("chat_filler") or ()),
               *(w for e in (router.get("chat") or {}).values() for w in e.get("words") or ()),
               *(w for table in (router.get("commands") or {}).values() for w in table or ()),
               *(w for table in (router.get("questions") or {}).values() for w in table or ()),
               *(w for key in ("question_starts", "advice_starts", "request_starts", "preamble_ends")
                 for w in router.get(key) or ())]
    return {t for w in phrases for t in tokenize(str(w))}


#: Modifier phrases that may give their last word to a following quality phrase.
_YIELDING = ("magnitude", "increase", "reduce")


def _colour_after(vocab: Vocabulary, tokens: list[str], j: int) -> bool:
    """Whether a colour band is said at token ``j``, after "of that" / "of the" at most."""
    while j < len(tokens) and tokens[j] in ("of", "that", "the", "this"):
        j += 1
    hit = vocab.phrases.get((tokens[j],)) if j < len(tokens) else None
    return bool(hit) and hit[0] == "band"


def _starts_quality(vocab: Vocabulary, tokens: list[str], j: int) -> bool:
    """Whether an intent phrase of two or more words starts at token ``j``."""
    for n in range(min(vocab.longest, len(tokens) - j), 1, -1):
        hit = vocab.phrases.get(tuple(tokens[j:j + n]))
        if hit and hit[0] in ("intent", "fix"):
            return True
    return False


def read_pieces(vocab: Vocabulary, tokens: list[str]) -> list[Piece]:
    """Greedy longest-phrase matching; unmatched tokens become 'word'/'number'/'separator' pieces."""
    pieces: list[Piece] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        special = tok in SEPARATORS or is_number(tok)
        if special:
            # a phrase that starts with a number or a colon ("3:2", "16:9") wins over the number
            n = next((n for n in range(min(vocab.longest, len(tokens) - i), 1, -1)
                      if tuple(tokens[i:i + n]) in vocab.phrases), 0)
            if n:
                hit = vocab.phrases[tuple(tokens[i:i + n])]
                pieces.append(Piece(hit[0], hit[1], " ".join(tokens[i:i + n]), i))
                i += n
                continue
        if tok in SEPARATORS:
            pieces.append(Piece("separator", "hard", tok, i))
            i += 1
            continue
        if is_number(tok):
            pieces.append(Piece("number", float(tok.rstrip("%")), tok, i))
            i += 1
            continue
        for n in range(min(vocab.longest, len(tokens) - i), 0, -1):
            hit = vocab.phrases.get(tuple(tokens[i:i + n]))
            if hit:
                if n > 1 and hit[0] in _YIELDING and (_starts_quality(vocab, tokens, i + n - 1) or (
                        # "a bit more of that seafoam blue": "more" said of a colour asks for more of it
                        tokens[i + n - 1] in ("more", "less") and _colour_after(vocab, tokens, i + n))) \
                        and tuple(tokens[i:i + n - 1]) in vocab.phrases:
                    # "add more magenta", "a bit more contrast": the modifier gives its last
                    # word back to the quality phrase it begins ("more magenta").
                    n -= 1
                    hit = vocab.phrases[tuple(tokens[i:i + n])]
                if hit[0] == "thing":      # ("a mood board": its words, each no more than a word)
                    pieces += [Piece("word", t, t, i + k) for k, t in enumerate(tokens[i:i + n])]
                else:
                    pieces.append(Piece(hit[0], hit[1], " ".join(tokens[i:i + n]), i))
                i += n
                break
        else:
            hit = vocab.inflected.get(tok)
            pieces.append(Piece(hit[0], hit[1], tok, i) if hit else Piece("word", tok, tok, i))
            i += 1
    # "her skin", "his face": a person's word before a place of theirs says whose it is, not the subject
    persons = word_lists()["person_determiners"]
    exactly = word_lists()["right_as_exactly"]
    for k in range(len(pieces) - 1):
        p, after = pieces[k], pieces[k + 1]
        if p.category == "target" and p.text in persons and after.category == "target":
            pieces[k] = Piece("word", p.text, p.text, p.pos)
        elif p.category == "word" and after.category == "target" and after.text in ("face", "faces") \
                and p.text not in vocab.known_words and p.text not in FILLER and not p.text.endswith("'s") \
                and p.text not in word_lists()["place_determiners"]:
            # "the clock face", "the rock face": a thing's face, not a person's
            pieces[k + 1] = Piece("word", after.text, after.text, after.pos)
        elif p.category == "target" and p.text == "right" and after.text.split()[0] in exactly:
            # "the sky right at the top", "right now": exactly, not the right of the frame
            pieces[k] = Piece("word", p.text, p.text, p.pos)
        elif p.text in vocab.manner_words and after.text in vocab.manner_effects \
                and vocab.manner_words[p.text] in vocab.magnitudes:
            # "a soft vignette": how much vignette, not softer as well
            pieces[k] = Piece("magnitude", vocab.manner_words[p.text], p.text, p.pos)
    return pieces


def _inflections(word: str) -> set[str]:
    """Other forms of a verb or adjective: "brighten" -> "brightening", "brightened", "brightens"."""
    forms = {word + "s", word + "ing", word + "ed"}
    if word.endswith("e"):
        forms |= {word[:-1] + "ing", word + "d"}
    if len(word) >= 3 and word[-1] not in "aeiouwxy" and word[-2] in "aeiou" and word[-3] not in "aeiou":
        forms |= {word + word[-1] + "ing", word + word[-1] + "ed"}      # "dim" -> "dimming"
    return forms
