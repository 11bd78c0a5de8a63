"""The router: what kind of message this is, before any planning.

Four kinds, as in the design documents, plus chat commands and generative requests:

- ``generation``: remove / fill / expand / regenerate / create asked in words
  (:mod:`agent.conversation.generative`): answered by the generation desk;

- ``chat``: greetings, thanks, praise, goodbye: a short reply, no turn;
- ``command``: undo, redo, go back N steps, back to before a named change, back
  to the original / start over, show the original, what did you change,
  export as png/jpeg/tiff, reset one adjustment: done by the service
  (rollbacks are bit-exact), one-line reply;
- ``evaluation`` / ``exploration``: "how does it look?", "what would you change?",
  "what can you do?": answered from a reading of the photo and the recipe, with
  suggestions as quick replies; nothing changes;
- ``modification``: everything else goes to the planner.

Every phrase is data (``vocabulary.router`` of the engine profile). A chat
or command phrase must cover the whole message (the rest only filler words), so
"undo the warmth and add contrast" is not mistaken for "undo". Phrases match with or
without their apostrophes ("thats lovely" is "that's lovely"). A complaint said before
a history command ("that's too much, go back to before the warmth") only says why:
the history step is what was asked.
"""

from __future__ import annotations

import functools
import itertools
import re

from dataclasses import dataclass, field
from typing import Any, Mapping

from agent.conversation.clauses import BEING, SIZES, and_a_place, kind_of_photo, read_complaints, split_clauses
from agent.conversation.generative import GenerativeRequest, parse_generative
from agent.conversation.going_back import GoingBack, GoingBackReader, split_requests
from agent.conversation.vocabulary import Vocabulary, read_pieces
from agent.conversation.words import (PRAISE_LINKS, SEPARATORS, PhraseTable, particle_follow_up, acknowledged_rest, before_comparative, find_phrases, plain_words, rhetorical_rest, tells_how_taken, tokenize, turned_round,
                                     says_vague_ask, word_lists)
from pipeline import ops
from profiles import Profile, load_profile

ROUTE_KINDS = ("modification", "command", "evaluation", "exploration", "chat", "generation")
#: Pieces of the planner's vocabulary that make a message an edit request.
_EDIT_PIECES = ("intent", "fix", "problem", "op", "relative", "towards", "band", "target")
#: Commands that move through the history; a complaint said before one only says why.
_HISTORY = ("undo", "redo", "back", "back_before", "original")
#: Words after "could it be" that weigh a change rather than ask for it ("would it be better in b&w?").
_WEIGHING = frozenset({"better", "worse", "nicer", "best", "improved", "good", "too", "possible",
                       "any"})     # ("can it get any sharper without halos?": how far it could go, asked)
#: Pieces that make a clause a request of its own, not a complaint ("warmer, undo" asks two things).
#: A quality said after "too" / "less" ("it's too warm") is the complaint's, not a request.
_REQUEST_PIECES = ("intent", "fix", "op", "relative", "towards", "band", "increase", "set", "reset", "objects",
                   "rollback")


#: Praise that compares ("better", "nicer"): said of versions, it may ask for one back.
_COMPARING = frozenset({"better", "nicer", "worse", "best", "prettier", "improved"})


#: Words that open a clause added to what was just done ("and the warmth too"), and those that end it.
_ALSO_BEFORE = frozenset({"and", "also", "plus", "oh", "ok", "okay", "then", "now"})
_ALSO_AFTER = (("too",), ("as", "well"), ("aswell",), ("also",))


#: Verbs that link the photo to how it should be ("could it be bluer", "can it look less washed out").
_LINKING = frozenset({"be", "look", "appear", "get"})


@dataclass
class Route:
    """What a message asks for. ``name``: the command, chat kind or question kind."""

    kind: str
    name: str = ""
    steps: int = 1
    fmt: str = ""
    words: list[str] = field(default_factory=list)
    reply: str = ""
    quick_replies: list[str] = field(default_factory=list)
    request: GenerativeRequest | None = None     # kind "generation": what to generate
    going_back: list[GoingBack] = field(default_factory=list)   # name "going_back": readings, first found wins
    agent: str | None = None     # name "use_schema": whose schema ("planner", "quality", "executor"; None: any)


def _words(text: str) -> list[str]:
    """The router's tokens: the planner's, apostrophes dropped ("that's" and "thats" read alike)."""
    return plain_words(tokenize(text))


def _table(words) -> dict[tuple[str, ...], Any]:
    return {tuple(_words(str(w))): True for w in words or () if _words(str(w))}


#: "would you say ...", "would you reckon ...": my opinion asked, not a change.
_OPINION_VERBS = frozenset({"say", "reckon", "think", "agree", "consider", "call"})

#: "i'm trying to ...", "we're hoping for ...": a wish, said as what the person is doing.
_WISHING = frozenset({"trying", "wanting", "hoping", "going", "gonna", "looking", "wondering", "thinking", "needing",
                      "aiming", "wishing", "planning"})

#: One word that opens a sentence saying who or what is in the photo ("she's my neighbour's cat").
_PRESENTING = frozenset({"she's", "shes", "he's", "hes", "they're", "theyre", "it's", "its", "thats", "that's"})

#: After "can i" / "could we": asking to be given something ("can i see the one before"), not a question.
_ASKING_FOR = frozenset({"see", "have", "get", "go"})
#: "can you read ...", "can you even see ...": what is in the photo, asked (see words.yaml ``content_asks``).
_CONTENT_ASKS = word_lists()["content_asks"]
_CONTENT_ADVERBS = frozenset({"even", "actually", "really", "still", "please", "pls", "plz"})
#: Where lettering asked for goes in the photo ("write "houston 98" along the bottom").
_PLACING = frozenset({"on", "in", "along", "across", "at", "over", "under", "below", "above", "near", "onto", "into"})

#: Words that, with a question word, ask what was done ("what did you actually change just then?").
_DONE_WORDS = frozenset({"changed", "did", "done", "edited", "adjusted", "tweaked", "applied", "altered", "fixed"})
#: Words of a suggestion opener that ask whether a way exists ("is there a way to", "is it possible to").
_WAY_EXISTS = frozenset({"way", "possible", "chance"})
#: What names a quality to change (not only a place or a verb).
_QUALITY_PIECES = ("intent", "fix", "problem", "op", "relative", "towards", "band", "rollback", "reset")
#: Pieces of the planner's vocabulary that name something to change (not "it", a magnitude, a comma).
_CHANGE_PIECES = ("intent", "fix", "problem", "op", "relative", "towards", "band", "target", "rollback", "reset",
                  "set", "increase", "reduce", "avoid", "objects")
#: Said after a going back, these say which version it goes to ("back to the contrasty one, before you brightened
#: him"), not a new request.
_VERSION_SAID = frozenset({"before", "after", "when", "where", "without", "with", "from", "since", "until", "till",
                           "while", "like", "as"})
#: Said to make a request a question ("can you fix red eye? just asking for later").
_ONLY_ASKING = PhraseTable.of(["just asking", "only asking", "just curious", "only curious", "asking for later",
                               "for future reference", "dont do it yet", "don't do it yet"])
#: Said of a complaint that is gone ("the faces aren't grey anymore"), with "anymore" itself.
_NO_LONGER = PhraseTable.of(["no longer", "any more", "not anymore"])
#: Said of photos in general, not of this one ("do people usually make food photos warmer?").
_IN_GENERAL = PhraseTable.of(["usually", "generally", "in general", "typically", "normally", "ever", "people",
                              "photographers", "most photos", "in theory"])
#: Words a request may open with before its verb ("please just warm it", "can you now crop it").
_POLITE = frozenset({"please", "pls", "plz", "just", "now", "then", "and", "also", "so", "kindly", "maybe",
                     "perhaps", "quickly", "mind", "go", "try", "to"})
#: Follow-up tables of the planner's vocabulary: a message that says one of these is about the photo.
_FOLLOW_TABLES = ("repeat", "pull_back", "fractions", "repeat_but", "insist_words")
#: "i meant only a little", "i meant less": how much the last request was meant to be.
_HOW_MUCH_MEANT = frozenset({"only", "just", "a", "less", "more", "slightly", "much", "way"})
#: A count said as a repeat ("x2", "3x") and in words ("twice"): how many steps an undo goes back.
_TIMES = re.compile(r"x(\d{1,2})|(\d{1,2})x")
_TIMES_WORDS = {"twice": 2, "thrice": 3}
#: How "the table as well", "the flag too" end: the last change, on one more place.
_ALSO = frozenset({"too", "as", "also", "aswell"})

#: Words that say no to what follows them ("shan't keep that one").
_NOT = frozenset({"not", "dont", "don't", "won't", "wont", "shan't", "shant", "wouldn't", "wouldnt", "never",
                  "cant", "can't", "cannot"})
#: After "keep" or "use" said with a no, what it points at: the version ("won't keep it"), not a place.
_POINTERS = ("it", "that", "this", "one", "them", ".", "!", ",")
#: Said with an approval, these make it the person's own decision ("i'll keep that", "let's go with it").
_DECIDING = frozenset({"i", "ill", "i'll", "will", "we", "well", "we'll", "lets", "let's", "then", "gonna", "going",
                       "to", "just"})
#: A bare no ("nah, no thanks"): what turns down a version under review when said alone.
_BARE_NO = frozenset({"no", "nope", "nah", "thanks", "thank", "you", "not", "really", "sorry", "hmm", "um"})
#: Words no table knows, besides a follow-up phrase, that make a message a remark ("he fell asleep again").
_REMARK_WORDS = 3
#: Of the retarget phrases, those that can only point at the last change ("the same for the lake"), not
#: "on" or "now", which chat says too.
_SAME = frozenset({"same", "likewise"})


class Router:
    """Routes messages with the engine profile's router tables (compiled once)."""

    def __init__(self, profile: str | Profile = "engine", vocab: Vocabulary | None = None):
        self.profile = profile if isinstance(profile, Profile) else load_profile(profile)
        self.vocab = vocab or Vocabulary(self.profile)
        pe = self.profile.vocabulary
        cfg: Mapping = pe.get("router") or {}
        self.filler = {t for w in cfg.get("filler") or () for t in _words(str(w))}
        # words small talk may have besides its phrases ("thanks, that's really lovely"), and only small talk
        self.chat_filler = {t for w in cfg.get("chat_filler") or () for t in _words(str(w))}
        self.emoji = {str(k): str(v) for k, v in (cfg.get("emoji") or {}).items()}
        self._read = functools.lru_cache(maxsize=256)(self._read_words)
        self.chat = {name: (_table(e.get("words")), str(e.get("reply") or ""), [str(q) for q in e.get("quick_replies") or ()])
                     for name, e in (cfg.get("chat") or {}).items()}
        # chat kinds that must be the whole message, filler not allowed ("what?" but not "what can you do?")
        self.strict_chat = {name for name, e in (cfg.get("chat") or {}).items() if e.get("strict")}
        cmd = dict(cfg.get("commands") or {})
        self.commands = {name: _table(cmd.get(name)) for name in
                         ("undo", "redo", "back_steps", "back_before", "original", "show_original", "what_changed",
                          "export", "reset_op", "again", "reject", "approve")}
        self.step_words = _table(cmd.get("step_words"))
        self.schema_words, self.schema_verbs = _table(cmd.get("schema_words")), _table(cmd.get("schema_verbs"))
        self.schema_agents = {str(agent): _table(words) for agent, words in (cmd.get("schema_agents") or {}).items()}
        self.numbers = {tuple(_words(str(k))): int(v) for k, v in (cmd.get("number_words") or {}).items()}
        self.formats = {tuple(_words(str(k))): str(v or "") for k, v in (cmd.get("formats") or {}).items()}
        # "how it was originally", "from the original": said with an undo or start-over phrase, the original
        self.original_marks = _table(cmd.get("original_marks"))
        # "before the colour stuff": a kind of change -> the ops it stands for (op names or pipeline stages)
        self.change_names = {str(word): frozenset(op.name for op in ops.OPS.values() for name in names or ()
                                                  if name in (op.name, op.stage))
                             for word, names in (cmd.get("change_names") or {}).items()}
        q = dict(cfg.get("questions") or {})
        self.questions = {name: _table(q.get(name)) for name in ("evaluation", "exploration", "capabilities")}
        self.capabilities_replies = [str(x) for x in cfg.get("capabilities_quick_replies") or ()]
        self.going_back = GoingBackReader(self.vocab, dict(cfg.get("going_back") or {}),
                                          self.numbers, self.change_names)
        wishes = dict(cfg.get("content_wishes") or {})
        self.wish_openers, self.wish_closers = _table(wishes.get("openers")), _table(wishes.get("closers"))
        self.there_be = _table(wishes.get("there_be"))
        self.new_thing = {str(w) for w in wishes.get("new_thing") or ()}
        self.not_things = {str(w) for w in wishes.get("not_things") or ()}
        self.thing_ends = {str(w) for w in wishes.get("thing_ends") or ()}
        self.amounts = _table(wishes.get("amounts"))
        self.replace_verbs, self.replace_links = _table(wishes.get("replace_verbs")), _table(wishes.get("replace_links"))
        self.text_verbs = _table(wishes.get("text_verbs"))
        self.wish_reply = str(wishes.get("reply") or "I can't add things that aren't in the photo ({thing}).")
        self.wish_replies = [str(q) for q in wishes.get("quick_replies") or ()]
        self.reading_reply = str(cfg.get("reading_reply") or "")
        remark = dict(cfg.get("remark") or {})
        self.remark_reply = str(remark.get("reply") or "Tell me what you'd like to change.")
        self.remark_replies = [str(q) for q in remark.get("quick_replies") or ()]
        # "hmm the letters look kinda jaggy now": how the photo looks since the last change, in words no table
        # knows, is no remark to smile at
        looks_off = dict(cfg.get("looks_off") or {})
        self.looks_off_reply = str(looks_off.get("reply") or self.remark_reply)
        self.looks_off_replies = [str(q) for q in looks_off.get("quick_replies") or ()]
        self.looks_off_doubts = {t for w in looks_off.get("doubts") or () for t in tokenize(str(w))}
        #: what such a message does right after a change: that change taken back by half
        self.looks_off_takes_back = str(looks_off.get("takes_back") or "")
        # how a question opens: one table, the longest opening wins ("do you think it needs" > "do you think")
        self.openings: dict[tuple[str, ...], str] = {}
        for kind, key in (("evaluation", "question_starts"), ("exploration", "advice_starts"), ("request", "request_starts")):
            self.openings.update({k: kind for k in _table(cfg.get(key))})
        self.question_tags = [tuple(_words(str(w))) for w in cfg.get("question_tags") or () if _words(str(w))]
        self.redo_else_undo = _table(cfg.get("redo_else_undo"))
        # how a sentence is said (profiles/language/words.yaml): questions, requests, interjections
        w = word_lists()
        self.question_words, self.auxiliaries = w["question_words"], w["question_auxiliaries"]
        self.subjects, self.interjections = w["question_subjects"], w["interjections"]
        self.suggestions = _table(w["suggestion_openers"])
        self.modals, self.request_subjects = w["request_modals"], w["request_subjects"]
        self.be_subjects, self.request_verbs = w["request_be_subjects"], w["request_verbs"]
        self.determiners = w["place_determiners"]
        self.question_openers, self.judging_verbs = _table(w["question_openers"]), w["judging_verbs"]

    # -- helpers --------------------------------------------------------------------
    def _rest(self, tokens: list[str], *found: list[tuple[int, int, Any]]) -> list[str]:
        covered: set[int] = set()
        for hits in found:
            for pos, n, _ in hits:
                covered.update(range(pos, pos + n))
        return [t for i, t in enumerate(tokens) if i not in covered and t not in self.filler
                and t not in SEPARATORS]

    def _number(self, tokens: list[str]) -> tuple[int | None, list]:
        hits = find_phrases(tokens, self.numbers)
        digits = [(i, 1, int(t)) for i, t in enumerate(tokens) if t.isdigit()]
        # a count said as a repeat: "ctrl+z x2", "undo 3x", "undo twice"
        times = [(i, 1, int(m.group(1) or m.group(2))) for i, t in enumerate(tokens)
                 if (m := _TIMES.fullmatch(t))] + [(i, 1, _TIMES_WORDS[t]) for i, t in enumerate(tokens)
                                                  if t in _TIMES_WORDS]
        found = sorted(hits + digits + times)
        return (found[-1][2] if found else None), found

    # -- routing --------------------------------------------------------------------
    def says_again(self, text: str) -> bool:
        """Whether ``text`` only asks for the last thing once more ("and again", "once more please")."""
        tokens = [t for t in self._read(text or "")[2] if t not in SEPARATORS]
        hits = find_phrases(tokens, self.commands["again"])
        covered = {i for pos, n, _ in hits for i in range(pos, pos + n)}
        return bool(hits) and all(i in covered or t in self.filler for i, t in enumerate(tokens))

    def also_named(self, text: str) -> list[str] | None:
        """The qualities a clause said as an addition names ("and the warmth too", "the brightness as well"):
        the intents (or ops) it names, when it names nothing else; None for any other message."""
        tokens = [t for t in self._read(text or "")[1] if t not in SEPARATORS]
        while tokens and tokens[0] in _ALSO_BEFORE:
            tokens = tokens[1:]
        added = False
        while tokens:
            tail = next((t for t in _ALSO_AFTER if tuple(tokens[-len(t):]) == t), None)
            if tail is None:
                break
            added, tokens = True, tokens[:-len(tail)]
        pieces = read_pieces(self.vocab, tokens)
        named = [p.key for p in pieces if p.category in ("intent", "op")]
        if not added or not named or any(p.category not in ("intent", "op") and p.text not in self.determiners
                                         for p in pieces):
            return None
        return named

    def says_reject(self, text: str) -> bool:
        """Whether ``text`` turns down the version under review ("nah, dont apply that one"), anywhere in it."""
        tokens = list(self._read(text or "")[2])
        if find_phrases(tokens, self.commands["reject"]):
            return True
        # "i shan't keep that one", "won't be using that": an approval said with a no before it
        return any(_NOT & set(tokens[max(0, s - 3):s]) and (n > 1 or tokens[s] in ("keep", "use", "apply", "accept")
                                                           and tokens[s + 1:s + 2] in ([], *([w] for w in _POINTERS)))
                   for s, n, _ in find_phrases(tokens, self.commands["approve"]))

    def says_no(self, text: str) -> bool:
        """Whether ``text`` is a bare no ("no", "nah, no thanks"): said to a version under review, it turns it down."""
        words = [t for t in self._read(text or "")[2] if t not in SEPARATORS]
        return bool(words) and set(words) <= _BARE_NO and bool(set(words) & {"no", "nope", "nah"})

    def says_approve(self, text: str) -> bool:
        """Whether ``text`` approves the version under review ("yep, apply that", "looks good, go with it", "yes
        that's nicer, keep it"): an approving or praising phrase, and nothing else asked besides thanks."""
        if self.says_reject(text):
            return False
        tokens = list(self._read(text or "")[2])
        hits = find_phrases(tokens, self.commands["approve"]) + find_phrases(tokens, self.chat["praise"][0])
        thanks = find_phrases(tokens, self.chat["thanks"][0])
        return bool(hits) and not [t for t in self._rest(tokens, hits, thanks)
                                   if t not in self.chat_filler and t not in _DECIDING]

    def review_decision(self, text: str, route: Route | None = None) -> str | None:
        """What ``text``, said while a version waits for review, decides about it: "approve" ("looks good, go with
        it"), "reject" ("nah, dont apply that one", a bare "no") or None (it asks or says something else).
        ``route``: the route already read for ``text``."""
        route = route or self.route(text, generative=False)
        if route.kind in ("modification", "chat", "command") and self.says_approve(text):
            return "approve"
        if route.kind in ("modification", "chat") and self.says_reject(text) or route.kind == "chat" and self.says_no(text):
            return "reject"
        return None

    def _read_words(self, text: str) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
        """``text`` as the router reads it (emoji said as words, typing slips put right: "thnaks", "undoo"), its
        tokens as the planner reads them, and as the router's tables are matched. Cached as ``_read``: the Studio
        asks of the same message whether it turns down a version or says an undo again."""
        text = self.vocab.spell(self._emoji_as_words(text))
        said = tokenize(text)
        return text, tuple(said), tuple(plain_words(said))

    def _emoji_as_words(self, text: str) -> str:
        """``text`` with the emoji the router's table knows said as words ("👍" -> "ok"); a variation selector or
        skin tone after one is dropped with it."""
        for mark, words in self.emoji.items():
            if mark in text:
                text = re.sub(re.escape(mark) + "[\ufe0f\U0001F3FB-\U0001F3FF]*", f" {words} ", text)
        return text

    def route(self, text: str, *, generative: bool = True) -> Route:
        """What ``text`` asks for; ``generative=False`` reads it as though no generation were asked."""
        request = parse_generative(text) if generative else None
        if request is not None:
            return Route("generation", request.kind, request=request)
        text, said_words, plain = self._read(text or "")
        said, tokens = list(said_words), list(plain)
        words = [t for t in tokens if t not in SEPARATORS]
        if not words:
            if text.strip():       # "🤔", "...": a remark without words, nothing to plan
                _, reply, replies = self.chat["ok"]
                return Route("chat", "ok", reply=reply, quick_replies=replies)
            return Route("modification")
        rest = rhetorical_rest(tokens)
        if rest:
            # "is it just me or is this photo really dark": said as a question, meant as a complaint; what
            # follows the opening is what is said ("this photo really dark")
            return self.route(" ".join(rest), generative=generative)
        opened = self._after_interjections(words)
        after_like = read_pieces(self.vocab, opened[1:]) if opened[:1] == ["like"] else []
        if after_like and after_like[0].category in ("magnitude", "intent", "increase", "reduce"):
            # "like waaay deeper", "no like WAY darker than that": a filler "like" before how much, not a likeness
            # or praise
            return self.route(" ".join(opened[1:]), generative=generative)
        acked = acknowledged_rest(tokens)
        if acked is not None:
            # "lol i know its blurry, took it on a moving bus": how the photo is, acknowledged, is not asked to
            # change; a clause after it may ask something ("i know its dark but brighten the sky")
            if not [t for t in acked if t not in SEPARATORS]:
                return Route("chat", "remark", reply=self.remark_reply, quick_replies=self.remark_replies)
            return self.route(" ".join(acked), generative=generative)
        thing = self.content_wish(tokens)
        if thing is not None:
            # "a rainbow would be nice", "could there be snow?": content, which tone and colour cannot make
            return Route("chat", "content", reply=self.wish_reply.format(thing=thing), quick_replies=self.wish_replies)
        questioned = (text or "").strip().endswith("?") or bool(opened) and opened[0] in self.question_words | self.auxiliaries
        in_general = questioned and find_phrases(words, _IN_GENERAL) and not self._asked_of_me(said) \
            and not ("?" in (text or "") and (text or "").rsplit("?", 1)[-1].strip(" .!"))
        if find_phrases(words, _ONLY_ASKING) or in_general:
            # "can you fix red eye? just asking for later": asked about, not for
            return Route("exploration", "capabilities", words=self._offered(said))
        asks = (text or "").strip().endswith("?")
        opening = self._opening(words) if asks and not self._modal_be(self._after_interjections(words)) else None
        if asks and opening is None:
            opening = self._asked_of_a_place(tokens)
        if asks and opening is None and (any(len(words) > len(t) and tuple(words[-len(t):]) == t
                                             for t in self.question_tags) or self._or_asked(words)) \
                and not self._requests(plain_words(words)):
            opening = "evaluation"     # "it's not too saturated is it?": a statement asked with a tag
        if opening == "evaluation" and find_phrases(said, self.vocab.fractions):
            opening = None             # "bit too pale now, somewhere in between?": a share of the way back, proposed
        if asks and opening is None and self._opening_suggests(words) \
                and not any(p.category in _QUALITY_PIECES for p in read_pieces(self.vocab, said)):
            # "is there a way to fix the middle girl's flyaway hair?": asked whether something I cannot name can
            # be done, answered with what I can do, nothing changed
            return Route("exploration", "capabilities", words=self._offered(said))
        if opening in ("evaluation", "exploration"):
            # "is the sky too dark?", "too warm?", "should i make it brighter?": asked, not requested
            return Route(opening, opening, words=self._offered(said))
        # chat: only chat phrases and filler
        chat_hits = {name: find_phrases(tokens, table) for name, (table, _, _) in self.chat.items()}
        for name in self.strict_chat & set(chat_hits):
            covered = {i for pos, n, _ in chat_hits[name] for i in range(pos, pos + n)}
            if any(i not in covered and t not in SEPARATORS for i, t in enumerate(tokens)):
                chat_hits[name] = []
        all_chat = [h for hits in chat_hits.values() for h in hits]
        if all_chat and not [t for t in self._rest(tokens, all_chat) if t not in self.chat_filler]:
            first = min((hits[0][0], name) for name, hits in chat_hits.items() if hits)[1]
            _, reply, replies = self.chat[first]
            return Route("chat", first, reply=reply, quick_replies=replies)
        command = self._command(tokens, said) or self._after_complaint(tokens, said)
        if command is not None:
            return command
        backs = self.going_back.read(text)
        if backs and self.question_kind(tokens) is None and self._only_going_back(said) \
                and self.going_back.asked_outright(text) and not self._only_less(tokens):
            # "scrap the purple", "back to the first warm version": found among the versions by the service
            return Route("command", "going_back", going_back=backs)
        asked = self.question_kind(tokens)
        after = (text or "").rsplit("?", 1)[1] if "?" in (text or "") else ""
        if asked is not None and after.strip():
            # "oh is there no one else? my bad. ok darken the grass then": what follows the question is asked
            then = self.route(after, generative=generative)
            requested = any(self._requests([w for w in plain_words(c) if w not in SEPARATORS])
                            for c in split_requests(tokenize(self.vocab.spell(after))))
            if (then.kind == "modification" and requested) or then.kind == "command":
                return then
        if asked is not None:
            # "is this shot too dark or is it just my screen", "would it look better in b&w do you reckon":
            # asked, not requested; whatever edit it names is offered as a quick reply, never made
            kind = {"what_changed": "command", "capabilities": "exploration", "reading": "evaluation"}.get(asked, asked)
            return Route(kind, asked, words=self._offered(said))
        rest = self.vocab.strip_preamble(text)
        if rest != text:
            # "perfect, export it", "thanks! undo the last one": the chat first, then the request
            return self.route(rest)     # ("love it. bit more contrast now": the rest is what is asked)
        praised = self._praised(tokens, chat_hits.get("praise") or [])
        if praised is not None:
            return praised
        if self._likes(words) or self._gone_now(words):
            _, reply, replies = self.chat["praise"]
            return Route("chat", "praise", reply=reply, quick_replies=replies)
        pieces = read_pieces(self.vocab, said)
        edits = [p for p in pieces if p.category in _EDIT_PIECES]
        presented = self._presented(tokens)
        for name in ("capabilities", "exploration", "evaluation"):
            hits = find_phrases(tokens, self.questions[name])
            if name == "capabilities" and edits:
                # ("shooting this for a café menu. ... can you neutralise the cast?": one word of the table said
                # among edit words is no question about what I can do)
                hits = [h for h in hits if h[1] > 1]
            if hits and (not edits or asks) and not (not asks and presented):
                kind = "evaluation" if name == "evaluation" else "exploration"
                return Route(kind, name)
        states = self._states(words, pieces, said)
        if (not self._about_the_photo(said, pieces) or states or presented) and not self._asks_after(words, tokens) \
                and not self._follows(said) and not self._asked_of_me(said) \
                and not self._one_more_place(words, said, states):
            # "morning! lovely old ruin this, took it on holiday", "this is my dog": said to me, nothing to change
            if "now" in words and (BEING & set(words) or self._elided_being(words)) \
                    and self.looks_off_doubts & set(words):
                # ("hmm the letters look kinda jaggy now": how it looks since the last change, with a doubt)
                return Route("chat", "looks_off", reply=self.looks_off_reply, quick_replies=self.looks_off_replies)
            return Route("chat", "remark", reply=self.remark_reply, quick_replies=self.remark_replies)
        told = self._told_in_clauses(text, generative)
        return told if told is not None else Route("modification")

    def _told_in_clauses(self, text: str, generative: bool) -> Route | None:
        """"this is a scan of my grandpa's photo, pretty cool right": a message every clause of which is said
        to me (a remark, praise) asks nothing as a whole either; praise or a doubt answers before a remark."""
        clauses = [" ".join(c) for c in split_requests(tokenize(self.vocab.spell(text or "")))]
        if len(clauses) < 2:
            return None
        routes = [self.route(c, generative=generative) for c in clauses]
        if not all(r.kind == "chat" for r in routes):
            return None
        return next((r for r in routes if r.name != "remark"), routes[0])

    def _asked_of_a_place(self, tokens: list[str]) -> str | None:
        """The kind of a question said after a place is named on its own ("Helmet highlight bottom right - is
        that clipped?"): the last clause's opening, when what comes before it asks for nothing."""
        cuts = [i for i, w in enumerate(tokens[:-1]) if w in SEPARATORS]
        if not cuts:
            return None
        head = [w for w in tokens[:cuts[-1]] if w not in SEPARATORS]
        last = [w for w in tokens[cuts[-1] + 1:] if w not in SEPARATORS]
        if self._requests(plain_words(head)) or any(p.category in _QUALITY_PIECES + ("reduce", "increase", "set")
                                                    for p in read_pieces(self.vocab, head)):
            return None
        kind = self._opening(last)
        return kind if kind in ("evaluation", "exploration") else None

    def _opening_suggests(self, words: list[str]) -> bool:
        """Whether a question opens, after filler, by asking whether a way exists ("is there a way to", "any
        way to", "is it possible to"; not "would you mind", which asks) and asks for no going back."""
        opened = self._after_interjections(words)
        hits = find_phrases(opened, self.suggestions)
        return bool(hits) and hits[0][0] == 0 and bool(_WAY_EXISTS & set(opened[:hits[0][1]])) \
            and not self.going_back.read(" ".join(words))

    def _or_asked(self, words: list[str]) -> bool:
        """Whether a question ends in a short "or is it ...?" ("my skin is looking too red, or is normal?", "too
        dark, or is it my screen?"): a statement weighed against another, asked."""
        k = max((i for i, w in enumerate(words) if w == "or"), default=-1)
        return 0 < k and len(words) - k <= 6 and words[k + 1:k + 2] != [] and words[k + 1] in self.auxiliaries \
            and words[k - 1:k] != ["no"]

    def _only_less(self, tokens: list[str]) -> bool:
        """Whether the only going back said is a verb with its particle that asks for less ("went a bit overboard,
        reel it back"), not "go back to the punchier one from before i made you knock it back"."""
        particle = particle_follow_up(tokens)
        return particle is not None and all(particle[0] <= s < particle[0] + particle[1]
                                            for s, _, _ in self.going_back.strong.find(tokens))

    def _gone_now(self, words: list[str]) -> bool:
        """"so much better, the faces aren't grey anymore": a complaint said to be gone is praise (a quality
        said gone, "the sky isn't blue anymore", is a complaint about the last change)."""
        if not ({"anymore"} & set(words) or find_phrases(words, _NO_LONGER)) or self._requests(words):
            return False
        pieces = read_pieces(self.vocab, words)
        return any(p.category == "problem" for p in pieces) \
            and not any(p.category in ("intent", "band", "increase", "reduce") for p in pieces) \
            and bool({"not", "no", "isn't", "isnt", "aren't", "arent", "never", "longer"} & set(words))

    def _likes(self, words: list[str]) -> bool:
        """"i really like the contrast you went with", "i love how warm it is": what the person likes, said of
        how it is (not "i'd like it warmer", nor "i like it but brighter", nor "i love it, now the sky")."""
        opened = self._after_interjections(words)
        if opened[:1] != ["i"]:
            return False
        rest = opened[1:]
        while rest[:1] and rest[0] in ("really", "just", "absolutely", "totally", "so", "do", "actually"):
            rest = rest[1:]
        return rest[:1] in (["like"], ["love"], ["adore"], ["liked"], ["loved"]) \
            and rest[1:2] in (["the"], ["this"], ["that"], ["how"], ["what"], ["those"], ["these"], ["her"], ["his"]) \
            and not {"but", "more", "less", "now", "then", "instead"} & set(rest) \
            and not any(p.category in ("increase", "reduce") or p.category == "intent" and p.text.endswith("er")
                        for p in read_pieces(self.vocab, rest[2:]))

    def _elided_being(self, words: list[str]) -> bool:
        """"hmm, bit heavy-handed now", "kinda muddy now": how it is, said without "it's"."""
        opened = self._after_interjections(words)
        return opened[:1] in (["bit"], ["abit"], ["kinda"], ["sorta"], ["too"], ["way"]) \
            or opened[:2] in (["a", "bit"], ["a", "little"], ["little", "bit"])

    def _asks_after(self, words: list[str], tokens: list[str]) -> bool:
        """Whether a message asks: its opening is a request, or a clause after a statement is ("his hand on the
        camera is basically black, bring it up some")."""
        clauses = split_requests(tokens)
        return self._requests(words) or bool(BEING & set(clauses[0])) and any(
            self._requests([w for w in plain_words(c) if w not in SEPARATORS]) for c in clauses[1:])

    def _one_more_place(self, words: list[str], said: list[str], states: bool) -> bool:
        """Whether a message adds one more place to the last change: "the table as well", "the flag too" (not
        said of how it is), "and the two skinny towers either side of it"."""
        return any(s + n == len(said) and said[s] in _ALSO for s, n, _ in find_phrases(said, self.vocab.retarget)) \
            and not states or and_a_place(words)

    # -- how it is said ------------------------------------------------------------
    def _after_interjections(self, words: list[str]) -> list[str]:
        """``words`` after the interjections a message may open with ("hmm ok so, ...")."""
        i = 0
        while i < len(words) and words[i] in self.interjections:
            i += 1
        return words[i:]

    def question_kind(self, tokens: list[str]) -> str | None:
        """The kind of question the first clause that says something asks, or None for no question.

        A question opens with a question word ("what's the badge?", "why so dark") or an auxiliary and
        its subject ("is it too dark", "does the cat look grey to you", "would this look better in b&w").
        A modal and "you" ask for something to be done ("can you make it warmer?"), and so does
        "could it be less blue", unless what follows asks what is in the photo ("can you read what time it
        says?"); "how about warmer" suggests. Kinds: ``what_changed``, ``capabilities``, ``exploration``
        (advice), ``evaluation``, ``reading`` (what is in the photo, answered as an evaluation).
        """
        opened = False
        for clause in split_requests(tokens):       # at punctuation only
            words = self._after_interjections(clause)
            while words[:1] and words[0] in _POLITE:
                words = words[1:]      # ("please tell me honestly, is it too warm?")
            if not words:
                continue               # "hmm." says nothing: the next clause is what is asked
            if opened:          # "tell me, is the white balance off?"
                return self.question_kind(words) or (None if self._requests(words) else "evaluation")
            if find_phrases(words[:5], self.suggestions) and find_phrases(words[:5], self.suggestions)[0][0] == 0:
                return None            # "how about warmer", "is it possible to brighten it"
            opener = [n for s, n, _ in find_phrases(words[:5], self.question_openers) if s == 0]
            if opener and words[opener[0]:]:
                # "any idea why it looks so flat", "i wonder if it's too saturated": what follows is asked
                rest = words[opener[0]:]
                if rest[0] in ("if", "whether", "that") and len(rest) > 2 and rest[1] in self.request_subjects \
                        and rest[2] in self.modals:
                    return None        # "i wonder if you could brighten it": asked for, politely
                if len(rest) > 2 and rest[0] in self.request_subjects and rest[1] in self.modals \
                        and rest[2] not in self.judging_verbs | {"tell", "see", "read", "say", "know", "recognise",
                                                                  "recognize", "guess", "identify", "spot"}:
                    return None        # "any chance you could brighten it", "i don't suppose you could warm it"
                return self.question_kind(rest) or "evaluation"
            if opener and all(w in _POLITE for w in words[opener[0]:]):
                opened = True          # "tell me," / "tell me honestly,": what the next clause asks
                continue
            first, second = words[0], words[1] if len(words) > 1 else ""
            if first in ("what", "whats", "what's") and second in ("a", "an"):
                continue               # "wow what a thrilling launch photo. make it ...": an exclamation
            judged = bool(self.judging_verbs & set(words[2:7]))
            if first in self.question_words:
                if find_phrases(words, self.questions["capabilities"]):
                    return "capabilities"
                if first in ("what", "what's", "whats", "which") and _DONE_WORDS & set(words) \
                        and {"you", "u", "we"} & set(words):
                    return "what_changed"
                if find_phrases(words, self.questions["exploration"]):
                    return "exploration"
                if first == "who" or words[:2] in (["how", "many"], ["what", "time"]) \
                        or first in ("what", "whats", "what's") and {"say", "says", "said"} & set(words):
                    return "reading"    # "how many galaxies are there?", "what does the sign say?"
                return "evaluation"
            if first in self.auxiliaries and second:
                if first in self.modals and second in self.request_subjects:
                    # "can you read what time it says?", "can you even see the keyboard?": asked of what is in
                    # the photo, not for a change
                    verb = [w for w in words[2:5] if w not in self.filler and w not in _CONTENT_ADVERBS][:1]
                    at = words.index(verb[0]) if verb else -1
                    # (not "can you see if the sky can be bluer": asked to try; "can you tell if anythings wrong
                    # with this eye" asks what is in it)
                    if verb and verb[0] in _OPINION_VERBS and first in ("would", "wouldn't", "wouldnt"):
                        return "evaluation"     # "would you say the detail is clear enough for print?"
                    if verb and verb[0] in _CONTENT_ASKS and (words[at + 1:at + 2] not in (["if"], ["whether"])
                                                              or verb[0] != "see"):
                        return "reading"
                    return None        # "can you make it warmer", "would you brighten the sky"
                if first in self.modals and second in ("i", "we") and len(words) > 2 and words[2] in _ASKING_FOR:
                    return None        # "can i see the version from before the sky stuff": asked for
                if first == "do" and second in self.determiners and judged:
                    return "evaluation"     # "do the shadows look crushed to you"
                if first == "do" and second not in self.request_subjects and second not in ("i", "they"):
                    return None        # "do that again", "do it on the whole pic": do, not a question
                if first in ("would", "will", "might") and second not in self.request_subjects \
                        and second not in self.subjects and judged:
                    return "exploration"    # "would black and white suit this
                if self._modal_be(words):
                    return None        # "could it be less blue", "can the sky be a bit bluer"
                if second in self.request_subjects and find_phrases(words, self.questions["capabilities"]):
                    return "capabilities"   # "do you do skin retouching?": whether it is something I do
                if second in self.subjects or second in self.request_subjects:
                    advice = find_phrases(words, self.openings) and \
                        find_phrases(words, self.openings)[0][2] == "exploration"
                    return "exploration" if advice or first in ("should", "would") else "evaluation"
            if "?" in tokens and self._remark(words):
                continue               # "lovely launch pic innit. is it a bit dark overall?": the remark asks nothing
            if "?" in tokens and self._enough_asked(words):
                return "evaluation"    # "drone sharp enough?", "the sky blue enough now?"
            return None
        return None

    def _enough_asked(self, words: list[str]) -> bool:
        """Whether a clause asks whether something is enough ("drone sharp enough?", "bright enough now?"): a
        quality and "enough", and no word that asks for a change."""
        at = next((i for i, w in enumerate(words) if w == "enough"), None)
        if not at or self._requests(plain_words(words)) or words[0] in self.modals or words[0] in _POLITE:
            return False
        return any(p.category in ("intent", "fix", "problem") for p in read_pieces(self.vocab, words[max(0, at - 2):at]))

    def _modal_be(self, words: list[str]) -> bool:
        """Whether a clause asks for a change as "could <it / the sky / everything> be <a quality>" ("can the
        sky be a bit bluer?", "could the stone be warmer?"): a request, not a question; "could you" is not
        the photo, and "would it be better" weighs, not asks."""
        if len(words) < 3 or words[0] not in self.modals or words[1] in self.request_subjects \
                or words[1] in ("i", "we", "they"):
            return False
        # ("can the ruins in the background top right be sharper": the thing may take a few words to say)
        # ("can it look less washed out?": a linking verb other than "be" says the same)
        # (only "can" and "could" ask so: "would it look warmer with ..." and "will it get too orange" weigh)
        linking = _LINKING if words[0] in ("can", "could") else {"be"}
        be = next((i for i in range(1, min(len(words), 10)) if words[i] in linking), None)
        if be is None:
            # "can the handset shine a bit more?", "could the colours pop more": a verb of its own, then how much
            said = [w for w in words if w not in _POLITE]
            return words[0] in ("can", "could") and len(said) <= 10 and said[-1] in ("more", "less")
        if _WEIGHING & set(words[be + 1:be + 3]):
            return False
        pieces = read_pieces(self.vocab, words[be + 1:])
        # ("could the blue be a bit stronger?": more of what is named before "be")
        return any(p.category in ("intent", "band", "fix") for p in pieces) \
            or any(p.category in ("increase", "reduce") for p in pieces) \
            and any(p.category in ("target", "band", "op", "intent") for p in read_pieces(self.vocab, words[1:be])) or any(
            p.category == "problem" and any(q.category == "reduce" for q in pieces[:i]) for i, p in enumerate(pieces))

    def _asked_of_me(self, said: list[str]) -> bool:
        """Whether a clause asks me to do something, whatever the verb ("can you colourise it?", "could u OCR
        it"): a modal and "you" at its opening, then a word. A verb no table knows is still a request, which
        the planner answers honestly (it cannot), never a remark to smile at."""
        for clause in split_requests(said):
            words = [w for w in self._after_interjections(clause) if w not in _POLITE]
            if len(words) > 2 and words[0] in self.modals and words[1] in self.request_subjects \
                    and words[2] not in self.filler and words[2] not in ("believe", "imagine", "see", "tell"):
                return True
            # "sorry i mean his hands": a correction of where the last request was meant to go
            at = next((i for i in range(len(words) - 2) if words[i] == "i" and words[i + 1] in ("mean", "meant")), None)
            if at is not None and (words[at + 2] in self.determiners or words[at + 2] in _HOW_MUCH_MEANT):
                return True
        return False

    def _praised(self, tokens: list[str], hits: list[tuple[int, int, Any]]) -> Route | None:
        """"this is so cool", "wow that's really lovely now": praise said in a sentence of its own, with
        nothing else in it that names a change or asks for one, is a remark (a praise word that is also a
        quality, "cool", only in a phrase of praise: "it's cool" may say the photo is too blue)."""
        hits = [h for h in hits if h[1] > 1 or not any(p.category in _CHANGE_PIECES
                                                     for p in read_pieces(self.vocab, tokens[h[0]:h[0] + 1]))]
        # (a comparison, "it was better before that", weighs versions: a going back, not praise)
        if not hits or "?" in tokens or any(_COMPARING & set(tokens[s:s + n]) for s, n, _ in hits):
            return None
        covered = {i for s, n, _ in hits for i in range(s, s + n)}
        rest = [t for i, t in enumerate(tokens) if i not in covered and t not in SEPARATORS]   # (every word kept)
        # ("that warm feel is so nice", "the sky looks lovely": what is praised, said before it with a linking
        # verb, is no change asked for; said after the praise it may be: "nice, now the sky")
        start = hits[0][0]
        linked = start > 0 and (tokens[start] in PRAISE_LINKS or tokens[start - 1] in PRAISE_LINKS | {
            "so", "really", "very", "pretty", "super"} and any(t in PRAISE_LINKS for t in tokens[max(0, start - 3):start]))
        said = [t for i, t in enumerate(tokens) if i >= start and i not in covered and t not in SEPARATORS] \
            if linked else rest
        # ("that warm feel is so nice": opened with a determiner, "warm" names what is praised, it asks nothing)
        asking = said if linked and tokens[0] in self.determiners else rest
        if self._requests(asking) or self._asked_of_me(asking) or self._follows(said) \
                or self._about_the_photo(said, read_pieces(self.vocab, said)):
            return None
        # ("i want the wall behind it darker, the chrome is perfect as is": a change asked in a clause of its
        # own before the praised one, with no praise in it, is the request; the praise says what to keep)
        opens = max((i + 1 for i in range(start) if tokens[i] in SEPARATORS), default=0)
        before = [t for t in tokens[:opens] if t not in SEPARATORS]
        if linked and before and not any(s < opens for s, _, _ in hits) and any(
                p.category in ("intent", "increase", "fix") for p in read_pieces(self.vocab, before)):
            return None
        _, reply, replies = self.chat["praise"]
        return Route("chat", "praise", reply=reply, quick_replies=replies)

    def _remark(self, words: list[str]) -> bool:
        """Whether a clause only remarks ("lovely pic innit", "lol he fell asleep again"): it names nothing to
        change and asks for nothing."""
        return not self._requests(plain_words(words)) and not any(
            p.category in _CHANGE_PIECES for p in read_pieces(self.vocab, words))

    def _offered(self, said: list[str]) -> list[str]:
        """The intents a question names ("would it look better in black and white?"), to offer them."""
        return [p.key for p in read_pieces(self.vocab, said) if p.category in ("intent", "fix")]

    def _only_going_back(self, said: list[str]) -> bool:
        """Whether the clauses besides the going-back ones ask for nothing new ("nah that washes it all out,
        take it back", "i miss the blue"); "skip that. darken the background" asks for an edit, so it is one."""
        reader = self.going_back
        for clause in split_requests(reader.joined(said), self.request_verbs):
            if reader.strong.find(clause) or reader.weak.find(clause) or reader.includes(clause) \
                    or reader.says_no_to(clause) is not None or reader.names_only_the_original(clause):
                continue        # a going back, or what it takes along ("the original back, colour and all")
            if self._requests(plain_words(clause)):
                return False
            words = self._after_interjections(clause)
            # "the brightening washed me out": a quality after a determiner names a change, it does not ask for one
            opening = [p for p in read_pieces(self.vocab, words) if p.category != "global"
                       and not (p.pos > 0 and words[p.pos - 1] in self.determiners)]
            if opening and opening[0].category in ("intent", "increase", "op", "set"):
                return False            # "warmer, then undo": a request said first
        return True

    def going_back_then(self, text: str) -> tuple[str, str] | None:
        """A going back said first, then a new request ("forget that, just sharpen it a touch", "ok undo that,
        a touch of sharpening instead", "scrap that and make it warmer"): (the going back, the request), to do
        in that order; None when the message is one or the other. What is said besides the going back must ask
        for a change by itself: "undo that, it looked better before" and "undo, too dark" say why, and "undo the
        colour shift, keep the saturation" says what the going back keeps."""
        tokens = tokenize(self.vocab.spell((text or "")[:2000]))
        reader = self.going_back
        clauses = [c for c in split_requests(reader.joined(tokens), self.request_verbs) if c]
        if len(clauses) < 2:
            return None
        said = self._after_interjections(clauses[0])
        first = self.route(" ".join(said)) if said else None
        # (the last change, or steps back: "scrap that", "skip that"; a going back to a version named is read
        # whole, and "a wet back alley", "my grandad back in the day" name no going back at all)
        if first is None or first.kind != "command" or not (first.name in ("undo", "back") or first.name == "going_back"
                                                            and [b.kind for b in first.going_back] == ["last"]):
            return None
        rest = [w for c in clauses[1:] for w in [*c, ","]][:-1]
        words = self._after_interjections([w for w in rest if w not in _POLITE])
        pieces = read_pieces(self.vocab, words)
        # ("go back to the very first thing you did, the tiny brighten": a change named, the one gone back to)
        # (nor "..., before you brightened him": which version, said after the going back)
        if not words or words[0] in self.determiners or words[0] in _VERSION_SAID \
                or any(p.category in ("protect", "except", "rollback", "reset") for p in pieces) \
                or reader.strong.find(words) or reader.weak.find(words) or self.route(" ".join(rest)).kind != "modification":
            return None
        # a request: a verb that asks, or a quality said as a wish ("a touch of sharpening instead"), not a
        # statement of how it is ("too dark", "it looks flat")
        opening = [p for p in pieces if p.category not in ("magnitude", "global", "word")]
        asked = self._requests(words) or bool(opening) and opening[0].category in ("intent", "increase", "op", "set") \
            and not any(w in BEING or w in ("not", "no", "dont", "don't", "never", "looked", "seemed", "felt")
                        for w in words[:opening[0].pos])
        return (" ".join(said), " ".join(rest)) if asked else None

    def _about_the_photo(self, said: list[str], pieces) -> bool:
        """Whether a message names anything to change: a quality, a place, an op, a follow-up, a command word."""
        changing = [p for p in pieces if p.category in _CHANGE_PIECES]
        if changing and (any(p.category != "set" for p in changing) or any(p.category == "number" for p in pieces)
                         or says_vague_ask(said)):
            return True             # ("my granddaughter put this program on my computer": "put" sets nothing)
        if any(p.category == "global" and (len(p.text.split()) > 1 or p.text != "it") for p in pieces):
            return True             # "just the whole thing then": where the last request should go
        if self.vocab.says_go_ahead(" ".join(said)):
            return True             # "go ahead and guess": the answer to "where?"
        if any(_SAME & set(phrase) for phrase in (tuple(said[s:s + n]) for s, n, _ in
                                                   find_phrases(said, self.vocab.retarget))):
            return True             # "nice. the same for the lake pls"
        if turned_round(said, self.vocab.reverse) is not None:
            return True             # "no, the other way", "no wait not lower, HIGHER": the last change turned
        found = [(s, n) for table in _FOLLOW_TABLES
                 for s, n, _ in before_comparative(said, find_phrases(said, getattr(self.vocab, table)))]
        if not found:
            return False
        # "lol he fell asleep on my desk again": a remark that happens to say "again" is no follow-up
        spans = {i for s, n in found for i in range(s, s + n)}
        others = [w for i, w in enumerate(said) if i not in spans and w not in self.vocab.known_words
                  and w not in self.filler and w not in self.interjections and w not in self.vocab.chatter
                  and w not in SEPARATORS and w not in self.determiners]
        return len(others) < _REMARK_WORDS

    def content_wish(self, tokens: list[str]) -> str | None:
        """The thing a message wishes into the picture ("a rainbow" in "a rainbow would be nice", "i wish
        there was a moon"), or None: a wish frame, then a new thing (after "a"/"an"/"some", or a bare noun
        after "there be") that names no quality, look, op, place or amount."""
        clause: list[str] = []
        for t in [*tokens, "."]:
            if t not in SEPARATORS:
                clause.append(t)
                continue
            closers = find_phrases(clause, self.wish_closers)
            openers = find_phrases(clause, self.wish_openers)
            starts = [(pos + n, "there" in clause[pos:pos + n]) for pos, n, _ in openers] + ([(0, False)] if closers else [])
            # "swap the background for a sunny garden", "replace the sky with a sunset": what comes in its place
            swapped = [pos + n for pos, n, _ in find_phrases(clause, self.replace_verbs)]
            in_place = {pos + n for pos, n, _ in find_phrases(clause, self.replace_links) if any(v < pos for v in swapped)}
            starts += [(pos, False) for pos in sorted(in_place)]
            # ... said as the request and put somewhere in the photo (not "write me a poem")
            written = [(pos, n) for pos, n, _ in find_phrases(clause, self.text_verbs)
                       if self._asks_with(clause[:pos]) and _PLACING & set(clause[pos + n:])]
            if written:
                # "write "houston 98" along the bottom", "can you scribble my name in the corner": lettering
                pos, n = written[0]
                words = list(itertools.takewhile(lambda w: w not in self.thing_ends, clause[pos + n:]))
                return " ".join(words[:3]) or "lettering"
            for start, said_there in starts:
                rest = clause[start:]
                there = find_phrases(rest, self.there_be)
                bare = said_there or (bool(there) and there[0][0] == 0)
                rest = rest[there[0][1]:] if there and there[0][0] == 0 else rest
                if rest and rest[0] in self.new_thing:
                    rest = rest[1:]
                    amount = find_phrases(rest, self.amounts)
                    if amount and amount[0][0] == 0:     # "scatter a few daisies", "a couple of balloons"
                        rest = rest[amount[0][1]:]
                elif not bare:
                    continue
                end = next((pos for pos, _, _ in closers if pos >= start), len(clause)) - (len(clause) - len(rest))
                named = rest[:max(0, end)] if end > 0 else rest
                words = []
                for w in named:
                    if w in self.thing_ends:
                        break
                    words.append(w)
                core = [w for w in words if w not in SIZES]        # "a little boat": the boat
                # "a little pink bow": a colour before the thing says what it looks like
                while len(core) > 1 and self.vocab.phrases.get((core[0],), ("",))[0] == "band":
                    core = core[1:]
                if not core or core[0] in self.not_things or core[0] in self.filler:
                    continue
                if start in in_place and core[-1] in self.not_things:
                    continue        # "change the sky to a stormy one": how it is to look, not a thing
                if start in in_place and core[-1] not in self.vocab.known_words:
                    return " ".join(words[-3:])     # "for a sunny garden": a thing no table knows, however described
                # (what the thing is said to be on or near is not the thing: "a red bow on the dark one's head";
                # a phrase that starts in the thing is: "a black and white version")
                pieces = read_pieces(self.vocab, [w for w in named if w not in SIZES and w not in words[:-len(core)]])
                if any(p.category not in ("word", "target", "global", "separator") and p.pos <= len(core)
                       for p in pieces):       # ("maybe a hair too dark": the word after it says how much)
                    continue       # "a warmer look", "some more contrast": a change, not a thing
                return " ".join(words[:3])
            clause = []
        return None

    def _asks_with(self, lead: list[str]) -> bool:
        """Whether ``lead`` is only how a request opens ("", "ok", "can you", "pls"): what follows is asked."""
        said = tuple(w for w in lead if w not in self.interjections and w not in self.filler)
        return not said or self.openings.get(said) == "request"

    def _states(self, words: list[str], pieces, said: list[str] = ()) -> bool:
        """Whether a message only tells me something: it opens with a statement verb ("took this at the
        wedding", "shot it on my phone") or names a thing with nothing to do to it ("this is my dog"),
        and says nothing of degree ("too", "more", "less") or of a quality."""
        if any(p.category in ("increase", "reduce", "problem", "fix", "op", "band", "relative", "towards")
               for p in pieces):
            return False
        if any(n > 1 for _, n, _ in find_phrases(words, self.vocab.retarget)):
            return False            # "that but on the background", "do that on her face": the last change again
        if any(a in self.request_subjects and b in self.modals for a, b in zip(words, words[1:])):
            return False            # "i was wondering if you could make it warmer": asked for, politely
        for clause in split_requests(list(said))[1:]:
            rest = self._after_interjections(clause)
            lead = next(iter(read_pieces(self.vocab, rest)), None)
            after = rest[len(lead.text.split()):][:1] if lead is not None else []
            if lead is not None and lead.pos == 0 and lead.category == "intent" and after \
                    and (after[0] in ("it", "them", "everything") or after[0] in self.determiners):
                return False        # "went a bit far, lighten it back up a little": a clause after it asks
            words_after = plain_words(rest)
            if self._requests(words_after) and any(p.category in _CHANGE_PIECES for p in read_pieces(self.vocab, rest)) \
                    and (words_after[0] in self.modals or words_after[0] in _POLITE or words_after[0] in self.request_subjects
                         or words_after[1:2] and (words_after[1] in ("it", "them", "everything")
                                                  or words_after[1] in self.determiners)):
                return False        # "took this on my phone, make it brighter" ("warm and sunny it was" tells)
        opening = [w for w in self._after_interjections(words) if w not in ("i", "we", "just")]
        told = tells_how_taken(opening)

        only_places = any(p.category == "target" for p in pieces) and not any(p.category == "intent" for p in pieces)
        return told or (only_places and bool(opening) and opening[0] in ("this", "that", "it's", "its", "thats", "that's"))

    def _presented(self, tokens: list[str]) -> bool:
        """Whether a message presents the photo ("morning! this is my mate flying his drone last winter",
        "hey, this is for a shop listing") and asks nothing in its other clauses: the look words in such a
        clause ("winter", "vintage") say what the photo is, not what to do."""
        clauses = [self._after_interjections(c) for c in split_requests(tokens)]
        found = None
        for i, words in enumerate(clauses):
            # ("she's my neighbour's cat btw": who or what it is, said the same way)
            n = 1 if words and words[0] in _PRESENTING else 2
            if len(words) > n and (n == 1 or words[:2] in (["this", "is"], ["that", "is"], ["these", "are"],
                                                           ["this", "was"], ["she", "is"], ["he", "is"],
                                                           ["they", "are"], ["it", "is"])) \
                    and words[n] in ("my", "our", "a", "an", "for", "from", "me", "us") \
                    and not any(p.category in ("problem", "increase", "reduce", "relative", "fix")
                                or (p.category == "magnitude" and words[n] != "for")
                                for p in read_pieces(self.vocab, words)):
                # "this is a bit dark": a complaint; "this is for a little vintage shop": what it is for
                found = i
                break
            if self._telling_what_i_do(words):
                found = i
                break
        if found is None:
            return False
        asks = ("intent", "fix", "increase", "reduce", "op", "problem", "relative", "rollback", "reset", "set")
        # ("..., black and white shot": a look and a word for the photo say what kind of photo it is)
        return not any(self._requests(words) or any(p.category in asks for p in read_pieces(self.vocab, words))
                       for i, words in enumerate(clauses) if i != found and words and not kind_of_photo(self.vocab, words))

    def _telling_what_i_do(self, words: list[str]) -> bool:
        """Whether a clause tells what the person is doing ("i am preparing a poster for my pupils", "we're
        making a flyer for the shop"): "i am" / "we are" and a verb in -ing that is no wish ("i'm trying to ..."),
        and nothing in it that names a change."""
        at = 2 if words[:2] in (["i", "am"], ["we", "are"]) else 1 if words[:1] in (["i'm"], ["im"], ["we're"]) else 0
        if not at or len(words) <= at + 1 or not words[at].endswith("ing") or words[at] in _WISHING:
            return False
        # (a person or thing named is what the poster is about, no place to change: "about women in space")
        return not any(p.category in _CHANGE_PIECES and p.category != "target" or p.category in ("increase", "reduce")
                       for p in read_pieces(self.vocab, words))

    def _follows(self, said: list[str]) -> bool:
        """Whether a message takes some of the last change back ("bit much, the mat looks toxic. ease up"): a
        follow-up for the planner, never a remark ("he fell asleep on my desk again" repeats nothing)."""
        # ("that's a start, keep going", "pump it up": a repeat said in more than one word, or with a particle)
        return any(before_comparative(said, find_phrases(said, table))
                   for table in (self.vocab.pull_back, self.vocab.fractions)) \
            or any(n > 1 for _, n, _ in find_phrases(said, self.vocab.repeat)) or particle_follow_up(said) is not None

    def _requests(self, words: list[str]) -> bool:
        """Whether a clause opens with a request ("add a moon", "can you put her on a beach", "please rebuild it")."""
        opening = self._after_interjections(words)
        for w in opening[:4]:
            if w in self.request_verbs:
                return True
            if w not in self.modals and w not in self.request_subjects and w not in _POLITE:
                return False
        return False

    def _opening(self, words: list[str]) -> str | None:
        """How a question opens, after leading filler ("hmm, is it too dark?"): the openings table's kind."""
        hits = find_phrases(words, self.openings)
        if hits and all(w in self.filler for w in words[:hits[0][0]]):
            polite = find_phrases(words[hits[0][0]:], self.suggestions)
            if polite and polite[0][0] == 0:
                return None        # "is it possible to brighten the sky?", "do you think you could cool it down?"
            return hits[0][2]
        return None

    def _complaint_only(self, said: list[str]) -> bool:
        """Whether these words only complain or chat ("hmm that's too much overall", "the sky's too dark now",
        "it's so blue"): as the planner reads them, each quality a complaint or after "too" / "less"."""
        for clause in split_clauses(read_pieces(self.vocab, said)):
            reduced = False
            for p in read_complaints(self.vocab, clause).pieces:
                reduced = reduced or p.category == "reduce"
                if p.category in _REQUEST_PIECES and not (reduced and p.category in ("intent", "band", "op")):
                    return False
        return True

    def _after_complaint(self, tokens: list[str], said: list[str]) -> Route | None:
        """A history command said after a complaint and a stop ("that's too much overall, go back to before
        the warm stuff", "too yellow now, undo"): the command; the complaint only says why."""
        cuts = [i for i, t in enumerate(tokens) if t in SEPARATORS]
        for cut in cuts:
            tail = self._command(tokens[cut + 1:], said[cut + 1:])
            if tail is not None and tail.name in _HISTORY:
                if any(b.kind == "version" for b in self.going_back.read(" ".join(tokens[:cut]))):
                    return None      # "the very first version was nicer, go back to that one": that version
                return tail if self._complaint_only(said[:cut]) else None
        for cut in reversed(cuts):
            # "start over, i'll try something different", "undo, it looked better before": the command first, then
            # a clause that asks for no edit of its own (why, or what comes next)
            head = self._command(tokens[:cut], said[:cut])
            if head is not None and head.name in _HISTORY:
                rest = read_pieces(self.vocab, said[cut + 1:])
                if any(p.category in _EDIT_PIECES for p in rest) or self.going_back.read(" ".join(said[cut + 1:])):
                    return None      # ("forget it, put it back how it was before the keyboard": that version)
                return head
        return None

    def _command(self, tokens: list[str], said: list[str]) -> Route | None:
        """The command ``tokens`` say (the router's words; ``said``: the same, as the planner reads them)."""
        c = self.commands
        if find_phrases(tokens, self.schema_words) and find_phrases(tokens, self.schema_verbs):
            # "use my cinematographer schema": the service finds the schema among those that exist
            agents = [agent for agent, table in self.schema_agents.items() if find_phrases(tokens, table)]
            return Route("command", "use_schema", words=[t for t in tokens if t not in SEPARATORS],
                         agent=agents[0] if agents else None)
        fmt_hits = find_phrases(tokens, self.formats)
        export_hits = find_phrases(tokens, c["export"])
        if (export_hits or fmt_hits) and not self._rest(tokens, export_hits, fmt_hits) and \
                (export_hits or any(v for _, _, v in fmt_hits)):
            fmt = next((v for _, _, v in reversed(fmt_hits) if v), "jpeg")
            return Route("command", "export", fmt=fmt)
        for name in ("show_original", "what_changed", "original", "redo", "undo"):
            hits = find_phrases(tokens, c[name])
            if hits and not self._rest(tokens, hits):
                return Route("command", name)
        said_pieces = [p for p in read_pieces(self.vocab, said) if p.category != "separator"
                       and p.text not in self.filler and p.text not in self.interjections]
        if said_pieces and said_pieces[0].category == "reset" and len(said_pieces) > 1 \
                and all(p.category == "global" for p in said_pieces[1:]):
            return Route("command", "original")     # "reset the whole lot", "reset everything in the photo"
        marks = find_phrases(tokens, self.original_marks)
        if marks:
            # "go back to how it was originally", "start over from the original": undo said of the original
            steps = find_phrases(tokens, c["undo"]) + find_phrases(tokens, c["original"])
            if steps and not self._rest(tokens, marks, steps):
                return Route("command", "original")
        back = find_phrases(tokens, c["back_steps"]) or find_phrases(tokens, c["undo"])
        n, number_hits = self._number(tokens)
        steps = find_phrases(tokens, self.step_words)
        if back and n is not None and not self._rest(tokens, back, number_hits, steps):
            return Route("command", "back", steps=max(1, n))
        before = find_phrases(tokens, c["back_before"])
        if before:
            end = before[-1][0] + before[-1][1]
            rest = [t for t in tokens[end:] if t not in self.filler and t not in SEPARATORS]
            lead = self._rest(tokens[:before[0][0]], [])
            if rest and not lead and all(t in self.going_back.noise or self.going_back.last.find([t]) for t in rest):
                return Route("command", "undo")     # "back to before that last change": one step
            # "back to before the colour stuff": the going-back reader finds that version
        reset = find_phrases(tokens, c["reset_op"])
        if reset and reset[0][0] == next(i for i, t in enumerate(tokens) if t not in self.filler):
            pieces = read_pieces(self.vocab, said)
            if any(p.category in ("reset", "rollback") for p in pieces):   # "reset the tint", "undo the warmth"
                named = [p for p in pieces if p.category in ("intent", "op", "fix")]
                others = [p for p in pieces if p.category in ("target", "band", "relative", "towards", "problem")]
                end = reset[0][0] + reset[0][1]
                rest = self._rest(tokens[end:], [(p.pos - end, len(p.text.split()), 0) for p in named
                                                  if p.pos >= end])
                if named and not others and not rest:
                    return Route("command", "reset", words=[p.key for p in named])
        return None


__all__ = ["ROUTE_KINDS", "Route", "Router"]
