"""Going back, said any way: one reading of "back to X" that finds X among the versions.

People say it many ways: "scrap that", "nah, take it back to before the brightening",
"back to the first warm version", "the sunny warm one without the extra colour was nicer, go
back to that", "undo both the face brightening steps", "give me the original back", "ditch the
texture stuff". :func:`read_going_back` reads such a message into a :class:`GoingBack` — what
kind of version it points at and the words that name it — using the router's ``going_back``
table (profiles/engine/router.yaml) and the planner's vocabulary; :func:`find_version` finds
that version on the head path of a :class:`~agent.conversation.dialogue.DialogueState` by what
each edit named (its looks and qualities, its ops, its places, its words) and when it was made.

Going back moves the head to an earlier version, bit-exact; it never makes a new edit. A partial
take-back ("bring back a hint of colour", "pull it back halfway") is not going back: it is the
planner's follow-up.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from agent.conversation.dialogue import DialogueState, TurnMoves
from agent.conversation.vocabulary import Vocabulary, read_pieces
from pipeline.masks import CONTENT_TYPES
from agent.conversation.words import SEPARATORS, PhraseTable, find_phrases, one_edit, tokenize, word_lists

#: What a going-back message points at.
#: Words that say the person approved a version ("the one i approved", "the one i said ok to").
_APPROVED = frozenset({"approved", "accepted", "okayed", "okd", "ok'd", "signed"})
#: A verb's particle said after its object ("take those two back off"): no name of a change.
_PARTICLES = frozenset({"off", "away", "out"})
#: "i liked the blue better": a version liked before, not a wish for the photo now
_LIKED = frozenset({"liked", "loved", "preferred"})
#: The photo itself, said with the original ("the untouched photo", "the unedited pic")
_PHOTO_WORDS = frozenset({"photo", "photos", "pic", "pics", "picture", "image", "shot", "file", "copy", "thing", "sent",
                          "send", "need", "gimme", "hand", "file", "raw"})
KINDS = ("last", "steps", "original", "change", "before", "version")


@dataclass
class GoingBack:
    """A reading of a going-back message.

    ``kind``: "last" (the last change: "scrap that"), "steps" (``steps`` changes: "undo both"),
    "original", "change" (undo the named change: "ditch the texture stuff"), "before" (the version
    before the named change: "back to before the brightening"), "version" (a version described by
    what it had: "the first warm one", "the warm one without the extra colour").
    ``named``: the words naming the change or what the version had; ``without``: what it lacked;
    ``before``: a change the version came before; ``after``: a change the version came right after;
    ``first``: the earliest such version, not the latest.
    ``strong``: said with a word that only means going back (undo, revert, back to); a weak verb
    ("remove", "get rid of") goes back only when it names a change that was made.
    """

    kind: str
    steps: int = 1
    named: list[str] = field(default_factory=list)
    without: list[str] = field(default_factory=list)
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    first: bool = False
    strong: bool = True
    whole: bool = False         # "all the colour boosting", "the texture stuff altogether": the whole run
    keep: list[str] = field(default_factory=list)    # "undo both of those, keep just the warmth": not undone
    approved: bool = False      # "the one i approved (first)": a version the person approved in review
    # "undo the warmth and the contrast", "undo that and the water one": further changes named with "and",
    # each found on its own and taken out with the first ([] names the last change: "that")
    also: list[list[str]] = field(default_factory=list)
    # "before i asked for brighter": the request is named by the person's own words, not by what was done
    asked: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "steps": self.steps, "named": self.named, "without": self.without,
                "before": self.before, "after": self.after, "first": self.first, "strong": self.strong,
                "whole": self.whole, "keep": self.keep, "approved": self.approved, "also": self.also, "asked": self.asked}


class GoingBackReader:
    """The router's ``going_back`` table compiled once, with the planner's vocabulary to name changes."""

    def __init__(self, vocab: Vocabulary, table: Mapping, numbers: Mapping[tuple[str, ...], int],
                 change_names: Mapping[str, frozenset[str]]):
        self.vocab = vocab
        self._asked_words = functools.lru_cache(maxsize=4096)(self._read_asked_words)

        def phrases(key: str) -> PhraseTable:
            return PhraseTable((str(w), key) for w in table.get(key) or ())

        self.strong, self.weak = phrases("strong_verbs"), phrases("weak_verbs")
        self.version_verbs, self.step_words = phrases("version_verbs"), phrases("step_words")
        self.version_only_verbs = phrases("version_only_verbs")
        self.discard_verbs = phrases("discard_verbs")
        self.original, self.versions = phrases("original"), phrases("versions")
        self.first, self.before, self.after = phrases("first"), phrases("before"), phrases("after")
        self.without, self.last = phrases("without"), phrases("last")
        self.partial = phrases("partial")
        self.keep = phrases("keep")
        self.whole = phrases("whole")
        self.only = phrases("only")
        self.including = [tuple(tokenize(str(w))) for w in table.get("including") or ()]
        # "brightening", "warmed": a word no table has, heard as the quality whose word shares its stem
        self.stem_intents: dict[str, str] = {}
        for name, entry in (vocab.profile.vocabulary.get("intent_translations") or {}).items():
            for w in entry.get("words") or ():
                if " " not in str(w).strip():
                    self.stem_intents.setdefault(_stem(str(w)), name)
        self.interjections = word_lists()["interjections"] - {t for w in table.get("noise") or () for t in tokenize(str(w))}
        self.noise = {t for w in table.get("noise") or () for t in tokenize(str(w))} | self.interjections
        self.numbers = numbers
        self.request_verbs = word_lists()["request_verbs"]
        self.change_names = change_names
        # the looks that take the colour out (black and white, sepia): saturation at or below the monochrome line
        self.monochrome_line = line = vocab.monochrome["saturation_at_or_below"]
        self.monochrome_looks = frozenset(name for name, intent in vocab.intents.items()
                                          if any(op == "saturation" and value <= line for op, value in intent.ops))
        # "take that last change away", "throw it out": a verb whose particle comes after its object
        self.split_verbs = {str(v): {str(p) for p in ps} for v, ps in (table.get("split_verbs") or {}).items()}

    # -- reading --------------------------------------------------------------------
    def joined(self, tokens: list[str], gap: int = 4) -> list[str]:
        """``tokens`` with a split verb's particle put back after it ("take that last change away" -> "take away
        that last change"), so the verb reads as one."""
        out = list(tokens)
        for i, t in enumerate(out):
            particles = self.split_verbs.get(t)
            j = next((k for k in range(i + 2, min(len(out), i + 2 + gap)) if particles and out[k] in particles), None)
            if j is not None:
                out.insert(i + 1, out.pop(j))
        return out

    def read(self, text: str) -> list[GoingBack]:
        """Every going-back reading in ``text``, one per clause that has one, in order (a complaint or chat may
        come before it: "forget the lamp. get rid of all the colour boosting"); the service takes the first
        whose version it finds."""
        clauses: list[list[str]] = []
        for clause in split_requests(self.joined(tokenize(text)), self.request_verbs):
            # ("ehh. no sepia.": a "no" after a clause that says nothing of a version opens its own)
            said_no = clause[:1] == ["no"] and clauses and not any(
                table.find(clauses[-1]) for table in (self.versions, self.strong, self.weak, self.last))
            if clauses and not said_no and any(s == 0 for table in (self.before, self.without, self.keep)
                                               for s, _, _ in table.find(clause)):
                # "the crisp one, before i touched the shadows", "undo both, keep the warmth": one description
                clauses[-1] = clauses[-1] + clause
            else:
                clauses.append(clause)
        out: list[GoingBack] = []
        for i, clause in enumerate(clauses):
            found = self._read_clause(clause)
            verbs = {k for s, n, _ in self.weak.find(clause) + self.strong.find(clause) for k in range(s, s + n)}
            # (what the person keeps is no change named: "i miss the colour. bring it back but keep the contrast")
            kept_from = min((s for s, _, _ in self.keep.find(clause)), default=len(clause))
            if found is None and i > 0 and verbs \
                    and not self._named(w for k, w in enumerate(clause[:kept_from]) if k not in verbs) \
                    and not self.partial.find(clause):      # "too bright now, back a bit": part of the way
                # "the brightening washed me out, get rid of it": a removal of "it" after a change is named is
                # that change (only when it was made: the verb is weak)
                named = self._named(clauses[i - 1])
                if named and self._names_a_change(named):
                    found = GoingBack("change", named=named, strong=False)
            if found is None:
                continue
            # "the sunny warm one without the extra colour was nicer, go back to that": described before
            if found.kind == "last" and i > 0 and self.versions.find(clauses[i - 1]):
                described = self._read_clause(clauses[i - 1], said_back=True)
                if described is not None and described.kind == "version":
                    found = described
            elif found.kind == "last" and i > 0:
                # "the brightening washed me out, get rid of it": "it" is the change the clause before names
                named = self._named(clauses[i - 1])
                if named and self._names_a_change(named):
                    found = GoingBack("change", named=named, strong=found.strong)
            out.append(found)
        if any(b.kind != "last" for b in out):
            # "scrap the lot. i want the untouched pic back": a bare "that" gives way to the version it names
            out = [b for b in out if b.kind != "last"]
        # "undo all the warm stuff, go back to just the background fix": the version that had only one change,
        # said as where to go, is tried before a change said to take out (which it takes out anyway, with all
        # after it)
        out.sort(key=lambda b: not (b.kind == "version" and b.first and b.named and not (b.after or b.before
                                                                                         or b.without)))
        if out and any(self.original.find(c) for c in clauses) and not any(b.kind == "original" for b in out):
            # "forget all of it, i'd rather have the photo exactly as i uploaded it"; "forget the film thing
            # entirely, original please": a clause that asks for the original and names no change says where
            if all(not b.named and not b.before for b in out) or any(self._only_original(c) for c in clauses):
                out.insert(0, GoingBack("original", strong=True))
        return out

    def says_no_to(self, words: list[str]) -> int | None:
        """Where the "no" of a clause that opens with "no" and a change's name is ("no sepia pls"): that change
        dropped; None for any other clause ("no, brighter", "no wait", "no not that one")."""
        opened = [i for i, w in enumerate(words) if w not in self.interjections and w not in SEPARATORS]
        if len(opened) > 1 and words[opened[0]] == "no" and words[opened[1]] not in _AFTER_NO \
                and self._names_a_change(self._named(words[opened[1]:])):
            return opened[0]
        return None

    def _only_original(self, clause: list[str]) -> bool:
        """Whether ``clause`` asks for the original and names no change ("original please", "just the original")."""
        found = self.original.find(clause)
        spans = {i for s, n, _ in found for i in range(s, s + n)}
        rest = self._named([w for i, w in enumerate(clause) if i not in spans])
        return bool(found) and not self._names_a_change(rest)

    def names_only_the_original(self, words: list[str]) -> bool:
        """Whether a clause with no return verb says nothing but the original, as an answer or with a plain verb
        ("actually, the very first one, as i sent it", "nah just give me the untouched photo"): every other word
        is filler, a version word or a word for the photo; a question ("is this the original?") or what to keep
        ("keep the original crop") is not going back."""
        found = self.original.find(words)
        if not found or "?" in words or self.keep.find(words):
            return False
        spans = {i for table in (self.original, self.first, self.versions) for s, n, _ in table.find(words)
                 for i in range(s, s + n)}
        return all(i in spans or w in self.noise or w in SEPARATORS or w in _PHOTO_WORDS for i, w in enumerate(words))

    def includes(self, clause: list[str]) -> bool:
        """Whether ``clause`` only says what the going back takes along ("colour and all", "including the
        crop"): a scope, not a request."""
        words = [w for w in clause if w not in SEPARATORS]
        return any((words[-len(p):] == list(p) or words[:len(p)] == list(p)) for p in self.including if words)

    def _names_a_change(self, words: list[str]) -> bool:
        """Whether ``words`` name a kind of change: a look, quality, problem, op, band or change word."""
        pieces = read_pieces(self.vocab, list(words))
        return any(p.category in ("intent", "fix", "problem", "op", "band") for p in pieces) \
            or any(_stem(w) in self.stem_intents for w in words) or any(w in self.change_names for w in words)

    def names_only_a_change(self, words: list[str]) -> bool:
        """Whether ``words`` name a kind of change and no place ("the sharpening", not "the spoon stuff")."""
        return bool(words) and self._names_a_change(words) \
            and not any(p.category in ("target", "word") and not self._names_a_change([p.text])
                        for p in read_pieces(self.vocab, list(words)))

    def _names_a_step(self, words: list[str]) -> bool:
        """Whether ``words`` name the last step as a version ("that last step", "the previous edit")."""
        return bool(self.last.find(words)) and bool(self.step_words.find(words))

    def _read_clause(self, words: list[str], said_back: bool = False) -> GoingBack | None:
        # "the mountains at the back", "the back of the room": "back" after an article is a place, not a return
        # ... nor "busy back there", "in the back", "out back": a place
        strong = [(s, n, v) for s, n, v in self.strong.find(words)
                  if not (words[s:s + n] == ["back"] and (
                      (s > 0 and words[s - 1] in _ARTICLES | _PLACE_LEADS)
                      or (s + 1 < len(words) and words[s + 1] in ("there", "here"))))]
        # "the strip of sky along the top", "a drop of colour": a verb right after an article is a thing
        weak = [(s, n, v) for s, n, v in self.weak.find(words) if not (s > 0 and words[s - 1] in _ARTICLES | {"an"})]
        # ... nor one said of what the photo should do ("make it take off, with flames and smoke")
        weak = [(s, n, v) for s, n, v in weak if not (s > 1 and words[s - 2] in _CAUSING and words[s - 1] in _ITS)]
        # "remove the haze", "clean up the spots": the verb is part of a request the planner knows
        # ... unless a change is named right after it ("get rid of that warm thing": not the selection tool)
        # ... or the last step is ("erase that last step")
        asked = {i for p in read_pieces(self.vocab, words) if p.category in ("intent", "fix")
                 and not self._names_a_change(words[p.pos + len(p.text.split()):])
                 and not self._names_a_step(words[p.pos + len(p.text.split()) - 1:])
                 for i in range(p.pos, p.pos + len(p.text.split()))}
        # ("no more contrast": the quality after "no more" is the change to drop, not one asked for)
        weak = [(s, n, v) for s, n, v in weak if not asked & set(range(s, s + n)) or words[s] == "no"]
        said_no = self.says_no_to(words)
        if not strong and not weak and said_no is not None:
            weak = [(said_no, 1, True)]      # "ehh. no sepia.": a weak verb (only when such a change was made)
        # "i liked the blue better": a version, how it looked then, said by what it had
        liked_better = any(words[s] in _LIKED and "better" in words[s + n + 1:s + n + 4] for s, n, _ in strong
                           if self.version_verbs.find(words[s:s + n]))
        if not self.versions.find(words) and not self.last.find(words) and not liked_better:
            # "i prefer the sky darker" is a wish; "i preferred the earlier one" a version
            strong = [(s, n, v) for s, n, v in strong if not self.version_verbs.find(words[s:s + n])]
        if not self.versions.find(words):
            # "i want the wall behind it darker" is a wish; "i want the warm one" a version
            strong = [(s, n, v) for s, n, v in strong if not self.version_only_verbs.find(words[s:s + n])]
        if not strong and not weak and not said_back:
            return GoingBack("original", strong=True) if self.names_only_the_original(words) else None
        said_original = self.original.find(words)
        if said_original:
            # "back to when the sky was brightened and the water was untouched": a version, not the original
            spans = {i for s, n, _ in said_original for i in range(s, s + n)}
            verbs_at = {i for s, n, _ in strong + weak for i in range(s, s + n)}
            others = self._named([w for i, w in enumerate(words) if i not in spans and i not in verbs_at])
            if not others or not self._names_a_change(others):
                return GoingBack("original", strong=True)
            if "still" in words[:min(s for s, _, _ in said_original)]:
                # "back to when the sky was still the original colour": the version before the sky was changed
                return GoingBack("before", before=others, strong=True)
        if (strong or said_back) and _APPROVED & set(words):
            # "actually go back to the one I approved first"
            return GoingBack("version", first=bool(self.first.find(words)), strong=True, approved=True)
        markers = sorted([(s, n, "before") for s, n, _ in self.before.find(words)]
                         + [(s, n, "after") for s, n, _ in self.after.find(words)]
                         + [(s, n, "without") for s, n, _ in self.without.find(words) if not _said_no(words, s, n)]
                         + [(s, n, "keep") for s, n, _ in self.keep.find(words)])
        # ("no more contrast": the "no" of the verb is no "without")
        # ... but a "before" that ends the verb names what follows ("back to how it was before the sky stuff")
        in_verbs = {i for s, n, _ in strong + weak for i in range(s, s + n)
                    if not (i == s + n - 1 and words[i] in ("before", "after") and self._named(words[i + 1:]))}
        markers = [m for m in markers if m[0] not in in_verbs]
        first_marker = markers[0][0] if markers else len(words)
        asked = words[:first_marker]     # what is asked, not how the version is described after "before"
        # "the version that was only a little bit creamy": what describes a version is not a part-way take-back
        described_at = min((s for s, _, _ in self.versions.find(asked)), default=len(asked))
        partial = [(s, n) for s, n, _ in self.partial.find(asked[:described_at])
                   if not (s > 0 and asked[s] in _PART_NOUNS and asked[s - 1] not in _PART_LEADS)
                   and not self._describes_version(asked, s, n)]
        # a repeat's own amount is said after "but" ("back to that, but less"); "the lighter left side" names
        repeat_amount = [s for s, _, _ in find_phrases(asked, self.vocab.repeat_but) if s > 0 and asked[s - 1] == "but"]
        # ("bring it back to how it was before": a pull-back verb said with where to is all the way back)
        pulled = [(s, n) for s, n, _ in find_phrases(asked, self.vocab.pull_back) if asked[s + n:s + n + 1] != ["to"]]
        # ("take back like 50 percent of the light": a share of the change, not fifty steps)
        shared = any(w.endswith("%") or (w.isdigit() and asked[k + 1:k + 2] in (["percent"], ["per"], ["pct"]))
                     for k, w in enumerate(asked))
        if partial or shared or repeat_amount or find_phrases(asked, self.vocab.fractions) or (
                pulled and not (strong and self._count(asked) is not None)):
            # "bring back a hint of colour", "too much, dial it back": a follow-up ("take those last two back
            # off": a count of changes taken back is no pull-back of one)
            return None
        verbs = sorted((s, n) for s, n, _ in strong + weak)
        if verbs:
            vs, vn = verbs[-1] if verbs[-1][0] < first_marker else verbs[0]
            after = self._named(words[vs + vn:first_marker])
            # ("the sunny warm one without the extra colour was nicer": the verb after the description; "return
            # like before": a verb said before another names no change)
            at_verbs = {i for s, n in verbs for i in range(s, s + n)}
            before_verb = self._named([w for i, w in enumerate(words[:vs] if verbs[0][0] < first_marker
                                                                else words[:first_marker]) if i not in at_verbs])
            # "back to the first warm version", "scrap the purple"; else "put the colour back"
            named = after or before_verb
            # ("get rid of all the pens on the left": a thing no table knows, said where it is, is what is named;
            # the place only says where it is)
            located = next((i + 2 for i in range(vs + vn, first_marker - 2) if words[i + 1] in _LOCATING
                            and self._content([words[i]]) and words[i] not in self.vocab.known_words), None)
            if located is not None and after:
                named = [w for w in named if w not in self._named(words[located:first_marker])]
        else:
            named = self._named(words[:first_marker])
        parts: dict[str, list[str]] = {"before": [], "without": [], "after": [], "keep": []}
        for k, (s, n, kind) in enumerate(markers):
            end = markers[k + 1][0] if k + 1 < len(markers) else len(words)
            if kind == "keep":      # ("keep the colour how it is and undo all the rest": up to the verb)
                end = min([v for v, _ in verbs if s + n <= v < end] + [end])
            if kind in parts:
                parts[kind] += self._named(words[s + n:end])
        if parts["after"]:
            # "back to how it looked after the warming": right after that change
            return GoingBack("version", named=parts["after"], after=parts["after"], first=bool(self.first.find(words)),
                             strong=bool(strong) or said_back)
        described = self.versions.find(words) or self.first.find(words) or said_back or liked_better
        # "when she was just sharpened", "the one where it was only a bit warm": that change and nothing
        # after it, the earliest version that has it
        alone = self._said_alone(words[:first_marker], named)
        discarded = bool(weak) or any(self.discard_verbs.find(words[s:s + n]) for s, n, _ in strong)
        if described and named and discarded and not (parts["without"] or parts["before"]) \
                and not self.first.find(words) and not said_back:
            # "scrap the warm look", "ditch the colour one": that change thrown away, not gone back to
            return GoingBack("change", named=named, strong=True, whole=bool(self.whole.find(words)))
        groups = self._groups(words[vs + vn:first_marker]) if verbs else []
        stills = [w for g in groups if "still" in g for w in g if w != "still"]
        if described and stills and len(groups) > 1 and len(stills) < len(named) - 1:
            # "back to where the milky way was done and the colours were still normal": what was still as it
            # was had not been changed yet
            parts["before"] += stills
            named = [w for w in named if w not in stills and w != "still"]
        if described and (named or parts["without"] or parts["before"]):
            return GoingBack("version", named=named, without=parts["without"], before=parts["before"],
                             first=bool(self.first.find(words)) or alone, strong=bool(strong) or said_back)
        if parts["before"] and named:
            return GoingBack("version", named=named, before=parts["before"], first=alone, strong=bool(strong))
        if parts["before"]:
            return GoingBack("before", before=parts["before"], strong=bool(strong), asked=bool(_ASKED & set(words)))
        if self.first.find(words) and not named and not parts["without"] and (strong or said_back):
            # "go back to the very first thing you did": the version right after the first change
            return GoingBack("version", first=True, strong=True)
        if alone and strong and not discarded and self._goes_to(words, verbs):
            # "go back to just the background fix", "back to only the warm one": where to go is the version that
            # had that change and nothing after it (not "undo just the contrast", which takes out only that)
            return GoingBack("version", named=named, first=True, strong=True)
        count = self._count(words[:first_marker])      # ("but keep the warm one": no count)
        if count is not None:
            # ("take those last two back off": the verb's particle names nothing)
            named = [w for w in named if w not in _PARTICLES]
            return GoingBack("steps", steps=count, named=named, strong=bool(strong), keep=parts["keep"])
        if verbs and not described:
            # "undo the warmth and the contrast", "undo that and the water one": each named on its own
            groups = self._groups(words[vs + vn:first_marker])
            if len(groups) > 1 and any(groups):
                return GoingBack("change", named=groups[0], strong=bool(strong), also=groups[1:])
        if named:
            return GoingBack("change", named=named, strong=bool(strong), whole=bool(self.whole.find(words)))
        if self.whole.find(words):
            # "get rid of everything you did", "roll it all back": every change, back to the original ("keep the
            # colour how it is and undo all the rest": back to the last change said to be kept)
            return GoingBack("original", strong=True, keep=parts["keep"])
        if strong or self.last.find(words):
            return GoingBack("last", strong=bool(strong))
        return None

    def _groups(self, words: list[str]) -> list[list[str]]:
        """The changes ``words`` name one by one, split at "and" and commas: each the words that name it, or []
        for the last change pointed at ("that", "this last one"); [] overall when a part names no change."""
        parts: list[list[str]] = [[]]
        for w in words:
            if w in _AND:
                parts.append([])
            else:
                parts[-1].append(w)
        parts = [p for p in parts if p]
        groups: list[list[str]] = []
        for part in parts:
            named = self._named(part)
            if named and (self._names_a_change(named)
                          or any(p.category == "target" for p in read_pieces(self.vocab, named))):
                groups.append(named)
            elif not named and (_POINTERS & set(part) or self.last.find(part)):
                groups.append([])
            else:
                return []
        return groups

    def _describes_version(self, words: list[str], start: int, length: int) -> bool:
        """Whether a degree word is part of a version's description, between an article and a word for a
        version: "go back to the slightly cool version" (not "bring back a hint of colour")."""
        opens = start > 0 and words[start - 1] in _ARTICLES | {"that", "this"}
        return opens and any(self.versions.find(words[start + length:start + length + 3]))

    def _said_alone(self, words: list[str], named: list[str]) -> bool:
        """Whether a word of the ``only`` table says a named change was all there was: it comes right before
        the named words, with at most articles and degree words between ("only a bit warm", "just the
        lighter left side"; not "the warm one i just had")."""
        if not named:
            return False
        filler = _ARTICLES | {w for p in self.partial for w in p}
        for s, n, _ in self.only.find(words):
            rest = [w for w in words[s + n:] if w not in SEPARATORS]
            while rest and rest[0] in filler:
                rest = rest[1:]
            if rest and rest[0] in named:
                return True
        return False

    def _goes_to(self, words: list[str], verbs: list[tuple[int, int]]) -> bool:
        """Whether a going-back verb says where it goes: "to" ends it or follows it ("back to", "revert to")."""
        return any("to" in words[s:s + n + 1] for s, n in verbs)

    def _count(self, words: list[str]) -> int | None:
        hits = find_phrases(words, self.numbers)
        digits = [int(w) for w in words if w.isdigit()]
        if hits:
            return int(hits[-1][2])
        if digits:
            return digits[-1]
        if "both" in words:
            return 2
        return None

    def _named(self, words: Iterable[str]) -> list[str]:
        """The words that name a change: content words, not the table's noise ("the stuff", "one", "it")."""
        words = list(words)
        # "cool", "nice": a word said alone as an interjection names a look after an article or a degree word
        # ("the slightly cool version", "the cool one")
        described = {i for i, w in enumerate(words) if w in self.interjections and i > 0
                     and (words[i - 1] in _ARTICLES or self.partial.find([words[i - 1]]))}
        return [w for i, w in enumerate(words) if (w not in self.noise or i in described) and w not in SEPARATORS
                and not w.isdigit() and (w,) not in self.numbers and not self.whole.find([w])
                and not self.versions.find([w]) and not self.last.find([w]) and not self.first.find([w])]

    # -- finding --------------------------------------------------------------------
    def matches(self, edit: TurnMoves, words: list[str]) -> bool:
        """Whether ``edit`` is the change ``words`` name: a look or quality it named, an op it moved
        (or the kind of change: "the colour stuff"), a place it worked on, or a word of what was said."""
        if not words:
            return False
        pieces = read_pieces(self.vocab, list(words))
        intents = {p.key for p in pieces if p.category in ("intent", "fix")}
        intents |= {self.stem_intents[_stem(p.text)] for p in pieces
                    if p.category == "word" and _stem(p.text) in self.stem_intents}
        problems = [self.vocab.problems[p.key] for p in pieces if p.category == "problem" and p.key in self.vocab.problems]
        intents |= {f for pr in problems for f in pr.fixes}
        ops_named = {p.key for p in pieces if p.category == "op"}
        # a quality names its ops one way: "before the darker table" is no brightening
        ways: dict[str, set[int]] = {}
        for name in intents:
            if name in self.vocab.intents:
                for op, value in self.vocab.intents[name].ops[:2]:
                    ops_named.add(op)
                    ways.setdefault(op, set()).add(1 if value > 0 else -1)
        way_of_op = {op: next(iter(w)) for op, w in ways.items() if len(w) == 1 and op not in
                     {p.key for p in pieces if p.category == "op"}}
        bands = {p.key for p in pieces if p.category == "band"}
        ops_named |= {pattern.format(band=b) for b in bands for pattern in self.vocab.band_ops.values()}
        for w in words:
            ops_named |= set(self.change_names.get(w, ()))
        targets = {p.key for p in pieces if p.category == "target"}
        if intents & set(edit.intents):
            return True
        if any(c.op in ops_named and c.delta * way_of_op.get(c.op, c.delta) > 0 for c in edit.changes) \
                and (not targets or self._on(edit, targets)):
            return True
        # a colour named is also the cast a change put in ("before it went all blue" after "cooler"): the white
        # balance moved the other way from the one that takes that cast out
        casts = [self.vocab.band_casts[b] for b in bands if b in self.vocab.band_casts]
        if any(c.op == op and c.delta * fix < 0 for op, fix in casts for c in edit.changes) \
                and (not targets or self._on(edit, targets)):
            return True
        if targets and not intents and not ops_named and self._on(edit, targets):
            return True
        return self._heard(edit, words, tokenize(" ".join([*edit.labels, *edit.intents,
                                                           str(edit.followup.get("place_said") or "")])))

    def asked_outright(self, text: str) -> bool:
        """Whether going back is asked, not denied ("don't undo anything", "no need to go back"), supposed ("if I
        don't like it can I undo later?") or said of a file ("send it back at full resolution")."""
        words = tokenize(text)
        supposed = {w for i, w in enumerate(words) if w in _SUPPOSED
                    and not (w == "if" and any(tuple(words[i + 1:i + 1 + len(a)]) == a for a in _IF_ASIDES))}
        if supposed or _FILES & set(words):
            return False
        for s, _, _ in self.strong.find(words):
            lead = words[max(0, s - 3):s]
            cut = max([i + 1 for i, t in enumerate(lead) if t in SEPARATORS] + [0])
            if _DENIED & set(lead[cut:]):
                return False
        return True

    def names_nothing(self, words: list[str], state: DialogueState) -> bool:
        """Whether ``words`` name no change at all: no quality, op, place or colour, and none of them was said with
        any change ("noooo", "modification", "possible")."""
        named = ("intent", "fix", "op", "band", "target", "problem", "global")
        return not any(p.category in named for p in read_pieces(self.vocab, list(words))) \
            and not any(self._heard(e, [w]) for e in state.edits for w in self._content(words))

    def _heard(self, edit: TurnMoves, words: list[str], also: Iterable[str] = ()) -> bool:
        """Whether most of ``words`` were said with ``edit``: in the person's message (or ``also``, the words
        of what was done)."""
        said = {_root(w) for w in (*self._asked_words(edit.message), *also)}
        words = list(words)
        # ("the whisker thing went crunchy, undo just that": how it went is why, the thing names the change; a
        # problem word that was said with it still names it, "before you tried to fix the mud")
        why = {w for p in read_pieces(self.vocab, words) if p.category == "problem" for w in p.text.split()} | _BEING
        content = [(_root(w), w in why) for w in self._content(words)]
        # most of the words were said with it ("where the green was sorted" after "sickly green. fix?"), a
        # word as the start of one said ("before you tried to fix the mud" after "it looks muddy")
        # a word typed with a slip on either side ("the keyboard" after "darken the keybaord") is that word
        heard = [w in said or (len(w) >= 3 and any(s.startswith(w) and len(s) - len(w) <= 2 for s in said))
                 or (len(w) >= 6 and any(len(s) >= 6 and one_edit(w, s) for s in said)) for w, _ in content]
        counted = sum(h or not reason for h, (_, reason) in zip(heard, content))
        return any(heard) and 2 * sum(heard) >= counted

    def _read_asked_words(self, message: str) -> tuple[str, ...]:
        """The words of ``message`` but those of a place it kept ("make the dial brighter, keep the wall dark" named
        no change on the wall): from a keep word to the end of its clause. (Cached per reader as
        ``_asked_words``: a going back matches every earlier message against each version it weighs.)"""
        tokens = tokenize(message)
        kept: set[int] = set()
        for p in read_pieces(self.vocab, tokens):
            if p.category in ("protect", "except"):
                end = next((i for i in range(p.pos + 1, len(tokens)) if tokens[i] in SEPARATORS or tokens[i] == "but"),
                           len(tokens))
                kept.update(range(p.pos, end))
        return tuple(t for i, t in enumerate(tokens) if i not in kept)

    def _on(self, edit: TurnMoves, targets: set[str]) -> bool:
        """Whether a change of ``edit`` was on one of the named places: the same finder for a thing found
        in the photo (the sky, a face), the same part of the frame for a drawn place ("the left side" is not
        "the bottom", though both are gradients)."""
        places = [self.vocab.targets[t] for t in targets if self.vocab.targets.get(t)]
        return any(c.target and any(_same_place(part, place) for part in mask_parts(c.target) for place in places)
                   for c in edit.changes)

    def find_version(self, back: GoingBack, state: DialogueState) -> int | None:
        """How many steps back the head must go (1..len(edits)), or None when no such version is there."""
        steps = self._find_version(back, state)
        if steps is not None and back.keep:
            # "undo both of those, keep just the warmth": never as far back as a change said to be kept
            edits = state.edits
            while steps and any(self.matches(e, back.keep) for e in edits[len(edits) - steps:]):
                steps -= 1
        return steps or None

    def _find_version(self, back: GoingBack, state: DialogueState) -> int | None:
        edits = state.edits
        n = len(edits)
        if n == 0:
            return None
        if back.kind == "original":
            return n
        if back.kind == "last":
            return 1
        if back.kind == "steps":
            if back.named:
                run = self._last_run(edits, back.named)
                if run is None:
                    return None
                start, end = run
                return min(back.steps, n) if end == n - 1 else None
            return min(back.steps, n)
        if back.kind == "change" and back.also:
            taken = self._taken(back, edits)
            # a run that ends at the head is gone back to (bit-exact); else the changes are taken out
            return len(taken) if taken and taken == list(range(n - len(taken), n)) else None
        caused = self._complained_of(state, back.before) if back.before else None
        if caused is not None and back.kind == "before":
            # "back to how it looked before it got all washed out" after "now it looks washed out": before the
            # change that complaint was about
            return n - caused
        if back.kind == "before" and back.asked:
            # "before i asked for brighter": the first request that said it (a later one that says it again, "the
            # table went too dark", is about it)
            said = next((i for i in range(n) if self._heard(edits[i], back.before)), None)
            if said is not None:
                return n - said
        if back.kind in ("change", "before"):
            words = back.named if back.kind == "change" else back.before
            run = self._last_run(edits, words, same_thing=back.kind == "change" and not back.whole)
            if run is None and back.kind == "before":
                # "before i touched the bone", where that request asked back and made no version: the version
                # of that time
                k = self._at_unmade(state, words, latest=True)
                return n - k if k is not None and n - k >= 1 else None
            if run is None:
                return None
            start, end = run
            if back.kind == "change":
                if end != n - 1:
                    return None      # undoing a change in the middle would undo the later ones too
                # a change named ("get rid of the punch stuff" after "more punch" and "punchier still") is
                # the whole unbroken run of it; "undo that" (kind "last") is one step
                return n - start
            return n - start
        if back.approved:
            # "go back to the one i approved first": a version the person approved in review, the latest unless "first"
            kept = [i for i, e in enumerate(edits[:-1]) if e.outcome == "approved"]
            if not kept:
                return None
            return n - 1 - (kept[0] if back.first else kept[-1])
        if back.after:
            # right after the latest change it names (a version, not the head itself); "the first" the earliest
            order = range(n) if back.first else range(n - 1, -1, -1)
            k = next((i + 1 for i in order if self.matches(edits[i], back.after)), None)
            if k is None:
                # "right after the crema thing", where that request made no version: the version it left
                k = self._at_unmade(state, back.after, latest=not back.first)
            return n - k if k is not None and n - k >= 1 else None
        # "back to the colour version", "the one in colour" after black and white: the version before the
        # latest change that took the colour out
        if back.named and set(back.named) <= _IN_COLOUR and not back.without and not back.before:
            took_out = [i for i, e in enumerate(edits) if self.monochrome_looks & set(e.intents)
                        or any(c.op == "saturation" and c.after <= self.monochrome_line < c.before
                               for c in e.changes)]
            if took_out:
                return n - took_out[-1] if n - took_out[-1] >= 1 else None
        # a version described by what it had (and lacked), the latest such unless "first"
        limit = n - 1           # the head itself is not "going back"
        first_before = None
        if caused is not None:
            limit = min(limit, caused)
        elif back.before:
            first_before = next((i for i, e in enumerate(edits) if self.matches(e, back.before)), None)
            if first_before is None:
                # "before i touched the bone", where that request asked back and made no version: the version
                # of that time
                first_before = self._at_unmade(state, back.before, latest=False)
                if first_before == n:
                    return None          # nothing has changed since it: the head is that version
            if first_before is None and not back.named:
                return None
            if first_before is not None:          # (words that name no change made do not rule a version out)
                limit = min(limit, first_before)  # versions 0..first_before (the one before that change)
        candidates = []
        for k in range(0, limit + 1):            # version k = after edits[0..k-1]
            made = edits[:k]
            has = not back.named or any(self.matches(e, back.named) for e in made)
            # "the warm one without the extra colour": the warm change itself is not the colour it lacks
            # ... nor a change the named one moved again ("cooler", then "no, warmer": the warm version has no
            # cooling left in it)
            lacks = not back.without or not any(
                self.matches(e, back.without) and not self.matches(e, back.named)
                and not _moved_again(e, [later for later in made[i + 1:] if self.matches(later, back.named)])
                for i, e in enumerate(made))
            if has and lacks and (k > 0 or not back.named):
                candidates.append(k)
        if not candidates and back.named and first_before is not None and 1 <= first_before < n \
                and any(self.matches(e, back.before) for e in edits):
            # "back to when it was only the contrast, before the toning", where "the contrast" was asked in other
            # words ("the blacks properly black"): the change it came before says which version
            return n - first_before
        if not candidates:
            # "the water one looks weird, put it back": the version that has it is the head itself, so the
            # going back is that change undone
            run = self._last_run(edits, back.named, same_thing=True) if back.named and not back.before else None
            return n - run[0] if run is not None and run[1] == n - 1 else None
        if back.first and (back.named or not back.without):
            # "the first warm version": right after the first change that made it warm; "the very first thing
            # you did": right after the first change
            k = min(candidates) if back.named else 1
        else:
            k = max(candidates)
        return n - k if n - k >= 1 else None

    def _content(self, words: Iterable[str]) -> list[str]:
        """The words of ``words`` that can name a change: three letters or more, none of the table's noise."""
        return [w for w in words if len(w) >= 3 and w not in self.noise]

    def _complained_of(self, state: DialogueState, words: list[str]) -> int | None:
        """The index of the edit a problem ``words`` name was complained of after ("before it got all washed out"
        after "now it looks washed out": the change just before that message), the latest such; None when
        ``words`` name no problem or no message said it after a change."""
        said = set(self._content(words))
        if not said:
            return None
        turns = sorted((e.turn, e.message) for e in [*state.edits, *state.unmade])
        for turn, message in reversed(turns):
            # (a word of a problem the message complained of: "washed" of "washed out", "blue" of "too blue")
            if said & {w for p in read_pieces(self.vocab, tokenize(message)) if p.category == "problem"
                       for w in p.text.split()}:
                cause = [i for i, e in enumerate(state.edits) if e.turn < turn]
                return cause[-1] if cause else None
        return None

    def _at_unmade(self, state: DialogueState, words: list[str], latest: bool) -> int | None:
        """How many head-path edits came before the request ``words`` name among those that made no version
        (the version of that time), the latest such request or the first; None when none is named."""
        found = [u for u in state.unmade if self.matches(u, words)]
        if not found:
            return None
        turn = (found[-1] if latest else found[0]).turn
        return sum(e.turn < turn for e in state.edits)

    def unmade(self, back: GoingBack, state: DialogueState) -> TurnMoves | None:
        """The request that made no version a going-back names when no change does ("undo the dial" after
        "brighten the dial" was asked about): nothing of it to undo."""
        words = back.named or back.before or back.after
        return next((u for u in reversed(state.unmade) if self.matches(u, words)), None) if words else None

    def taken_out(self, back: GoingBack, state: DialogueState) -> list[TurnMoves]:
        """The edits a named change is, when it is not the last ("get rid of all the colour stuff" after
        warming, then brightening): taken out as a new version, the later changes kept; [] otherwise."""
        if back.kind != "change" or not state.edits:
            return []
        if back.also:
            return [state.edits[i] for i in self._taken(back, state.edits)]
        run = self._last_run(state.edits, back.named, same_thing=not back.whole)
        if run is None or run[1] == len(state.edits) - 1:
            return []
        return state.edits[run[0]:run[1] + 1]

    def _taken(self, back: GoingBack, edits: list[TurnMoves]) -> list[int]:
        """The indices of the edits the names of ``back`` find (the last edit for a pointer), in order: a name
        that finds no change is passed over ("undo the sky and the water" when only the sky was changed)."""
        out: set[int] = set()
        for words in [back.named, *back.also]:
            run = self._last_run(edits, words, same_thing=True) if words else (len(edits) - 1, len(edits) - 1)
            if run is not None:
                out.update(range(run[0], run[1] + 1))
        return sorted(out)

    def _last_run(self, edits: list[TurnMoves], words: list[str], same_thing: bool = False) -> tuple[int, int] | None:
        """(first, last) index of the most recent unbroken run of edits that ``words`` name (``same_thing``: each
        carrying on the one before, see :func:`_same_thing`)."""
        end = next((i for i in range(len(edits) - 1, -1, -1) if self.matches(edits[i], words)), None)
        if end is None:
            return None
        start = end
        # "scrap those tower changes": a repeat or "the same on the right" after it carries it on
        while end + 1 < len(edits) and _carried_on(edits[end], edits[end + 1]):
            end += 1
        while start > 0 and (self.matches(edits[start - 1], words) and (
                not same_thing or _same_thing(edits[start - 1], edits[start]))
                           or _carried_on(edits[start - 1], edits[start],
                                          moves=("repeat", "insist", "pull_back", "reduce_look"))):
            start -= 1
        return start, end


#: A version said to be in colour ("the colour version", "the coloured one") after black and white.
_IN_COLOUR = frozenset({"colour", "color", "coloured", "colored", "colourful", "colorful", "colours", "colors"})

#: Words that say how a thing is or went ("went", "looks"): why a change is named, not its name.
_BEING = word_lists()["being_verbs"]

#: Words that say a request is named by what the person said: "before i asked for brighter".
_ASKED = frozenset({"asked", "said", "told", "typed", "requested"})
#: Words that join the changes a going back names: "undo the warmth and the contrast".
_AND = frozenset({"and", ",", "plus", "n"})
#: Words that point at the last change when said alone in a list: "undo that and the warmth".
_POINTERS = frozenset({"that", "this", "it"})

#: Words before "back" that make it a place: "in back", "out back", "round the back".
_PLACE_LEADS = frozenset({"in", "at", "out", "round", "around"})


def _moved_again(edit: TurnMoves, later: list[TurnMoves]) -> bool:
    """Whether every op ``edit`` moved was moved again, at the same place, by one of ``later``."""
    again = {(c.op, json.dumps(c.target, sort_keys=True)) for e in later for c in e.changes}
    return bool(edit.changes) and all((c.op, json.dumps(c.target, sort_keys=True)) in again for c in edit.changes)


def _carried_on(earlier: TurnMoves, later: TurnMoves,
                moves: tuple[str, ...] = ("repeat", "insist", "retarget", "pull_back", "reduce_look")) -> bool:
    """Whether ``later`` repeated ``earlier`` ("a tad more on the background"), took some of it back ("like
    half that"), or, with "retarget" in ``moves``, did the same on another place ("same on the right"): one
    change with it when going back."""
    return later.followup.get("base_asset") == earlier.asset_id and later.followup.get("move") in moves


def mask_parts(spec: Mapping) -> list[Mapping]:
    """A mask spec and the specs it combines ("the background on the right" is both)."""
    inner = [spec] + ([spec["mask"]] if isinstance(spec.get("mask"), Mapping) else [])
    inner += [m for m in spec.get("masks") or () if isinstance(m, Mapping)]
    return inner


def _same_place(spec: Mapping, place: Mapping) -> bool:
    if spec.get("type") != place.get("type"):
        return False
    if spec.get("type") in CONTENT_TYPES:
        return bool(spec.get("invert")) == bool(place.get("invert"))
    def plain(d: Mapping) -> str:
        return json.dumps({k: v for k, v in d.items() if k not in ("feather", "softness")}, sort_keys=True)
    return plain(spec) == plain(place)


def _same_thing(earlier: TurnMoves, later: TurnMoves) -> bool:
    """Whether ``later`` carried on ``earlier``'s change: it asked for the same look or quality ("more punch",
    then "punchier still"), or repeated it ("more", "i insist"). Two colour changes of different kinds
    ("bluer", then "black and white") are two changes."""
    if later.followup.get("move") in ("repeat", "insist", "retarget") \
            and later.followup.get("base_asset") == earlier.asset_id:
        return True
    return bool(set(earlier.intents) & set(later.intents))


_JOINS = frozenset({"and", "then", "also", "plus"})
#: "the mountain bit", "the face part": after a thing these name a part of the photo, not a share of a change;
#: after one of _PART_LEADS ("a bit", "a little bit") they are a share.
_PART_NOUNS = frozenset({"bit", "bits", "part", "parts"})
_ARTICLES = frozenset({"the", "a", "its", "their", "his", "her", "my", "your"})
_PART_LEADS = frozenset({"a", "an", "one", "little", "tiny", "wee", "small", "teeny", "just", "only"})


def split_requests(tokens: list[str], request_verbs: frozenset[str] = frozenset()) -> list[list[str]]:
    """Clauses: split at punctuation, and at "and" / "then" before a request verb ("undo the warmth and add
    contrast" is two requests)."""
    out, current = [], []
    for i, t in enumerate(tokens):
        if t in SEPARATORS or (t in _JOINS and i + 1 < len(tokens) and tokens[i + 1] in request_verbs and current):
            if current:
                out.append(current)
            current = []
        else:
            current.append(t)
    if current:
        out.append(current)
    return out


#: "make it take off", "let them drop": a verb said of what the photo should do, not of a change.
_CAUSING = frozenset({"make", "let", "have", "watch", "see"})
_ITS = frozenset({"it", "them", "him", "her", "this", "that"})

_SUFFIXES = ("ening", "ment", "ing", "ed", "er", "est", "ness", "en", "es", "s", "y")


#: Words that deny, suppose or name a file: no going back is asked outright with them.
_DENIED = frozenset({"don't", "dont", "not", "never", "no", "didn't", "didnt", "need"})
_SUPPOSED = frozenset({"if", "later", "whenever", "case"})
#: What follows an "if" that supposes nothing: an aside ("I preferred it before, if I'm honest").
_IF_ASIDES = frozenset({("i'm", "honest"), ("im", "honest"), ("i", "am", "honest"), ("i'm", "being", "honest"),
                        ("im", "being", "honest"), ("you", "ask", "me"), ("possible",), ("you", "can"),
                        ("you", "could"), ("you", "dont", "mind"), ("you", "don't", "mind")})
_FILES = frozenset({"file", "png", "jpeg", "jpg", "tiff", "webp", "resolution", "download", "email"})

#: Words that say where a thing is ("the pens on the left").
_LOCATING = frozenset({"on", "in", "at", "along", "near", "by"})


def _stem(word: str) -> str:
    """A crude stem, enough to hear "brightening" in "brighten", "warmer" in "warm" and "darkenings" in
    "darken" (a plural ending first, then one more)."""
    w = re.sub(r"[^a-z]", "", word.lower())
    for _ in range(2):
        suffix = next((s for s in _SUFFIXES if w.endswith(s) and len(w) - len(s) >= 3), None)
        if suffix is None:
            break
        w = w[: -len(suffix)]
        if suffix != "s":
            break
    return w


def _said_no(words: list[str], start: int, length: int) -> bool:
    """Whether the "no" at ``start`` is said to me ("no no the first faded one was better"), not what a version
    lacked ("the one with no vignette"): a "no" before another, or before a determiner or a pronoun."""
    return words[start:start + length] == ["no"] and (start + 1 == len(words) or words[start + 1] in _AFTER_NO)


#: Words after a "no" said to me: "no no", "no the first one", "no i meant", "no go back".
_AFTER_NO = frozenset({"no", "the", "that", "this", "those", "it", "its", "i", "wait", "actually", "go", "back",
                       "put", "just", "please", "pls", "not",
                       # "mmm no too soft, she's gone blurry": how it is, a complaint
                       "too", "so", "way", "much", "bit", "a", "less", "need", "thats", "that's", "it's"})


def _root(word: str) -> str:
    """The stem of ``word`` with a colour's "-ish" and a silent "e" off too, so that "blue" is heard in
    "bluer" and "blue-ish", and "white" in "whiter"."""
    w = _stem(word)
    if w.endswith("ish") and len(w) >= 6:
        w = w[:-3]
    return w[:-1] if w.endswith("e") and len(w) >= 4 else w


__all__ = ["GoingBack", "GoingBackReader", "KINDS"]
