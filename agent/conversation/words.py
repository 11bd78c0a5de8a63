"""Words as people type them, read one way: normalising, tokens, typing slips, possessives, phrases.

Every reader of a message — the router, the planners, the judge's reading, the
executor's limits, the skill registry, the generative parser — takes its tokens
and matches its phrases here, so a word means the same to all of them. The
English word lists this module needs are data (``profiles/language/words.yaml``).

- :func:`tokenize`: lower case, curly quotes straight, letters joined by a hyphen
  split ("golden-hour" is "golden hour"), numbers kept whole ("+20", "50%"),
  punctuation marks as tokens of their own, possessives read (:func:`plain_possessives`).
- :class:`PhraseTable` / :func:`find_phrases`: phrases matched on whole tokens;
  overlapping matches resolve by one rule, spaCy's ``filter_spans``: the longest
  span wins, and of two as long the earlier one.
- :class:`Speller`: a typing slip of a known word put right ("brigther" -> "brighter").

    >>> tokenize("The sky's a bit too bright, make it 20% darker!")
    ['the', 'sky', 'a', 'bit', 'too', 'bright', ',', 'make', 'it', '20%', 'darker', '!']
    >>> PhraseTable({"too bright": "fix", "bright": "intent"}).find(tokenize("too bright now"))
    [(0, 2, 'fix')]
"""

from __future__ import annotations

import itertools
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Generic, Iterable, Iterator, Mapping, Sequence, TypeVar

import yaml

WORDS_FILE = Path(__file__).resolve().parents[2] / "profiles" / "language" / "words.yaml"

_TOKEN = re.compile(r"[+-]?\d+(?:\.\d+)?%?(?![a-z])|[a-z0-9][a-z0-9&']*|[,;.!?:]")
_TOKEN_OR_SLASH = re.compile(_TOKEN.pattern + r"|\|")
#: A slash between two words of two letters or more ("red/pink", "blue/purple"); "b/w" is a word of its own.
_SLASH = re.compile(r"(?<=[a-z]{2})/(?=[a-z]{2})")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?%?")
#: Punctuation that ends a clause; a token of its own.
SEPARATORS = frozenset({",", ";", ".", "!", "?", ":"})
#: Letters a short word may have dropped ("warmr" -> "warmer", "darkr" -> "darker").
_VOWELS = frozenset("aeiou")

V = TypeVar("V")


@lru_cache(maxsize=1)
def word_lists() -> Mapping[str, frozenset[str]]:
    """The English word lists of ``profiles/language/words.yaml``, each as a set of tokens (read as text only:
    YAML 1.1 would read on, off, yes and no as true and false)."""
    data = yaml.load(WORDS_FILE.read_text(encoding="utf-8"), Loader=yaml.BaseLoader) or {}
    return {name: frozenset(str(w).lower() for w in ws or ()) for name, ws in data.items()}


def sized_follow_ups(engine: Mapping[str, Any]) -> tuple[dict[str, float], list[str]]:
    """The engine vocabulary's follow-up phrases: ``followups.repeat`` (phrase -> scale) and
    ``followups.pull_back.words``, with every small magnitude said before "more" or "less" ("a hint more", "a
    smidgen less") a repeat of its size or a pull-back; the planner and the judge read the same ones."""
    fu = engine.get("followups") or {}
    repeat = {str(w): float(v) for w, v in (fu.get("repeat") or {}).items()}
    pull = [str(w) for w in (fu.get("pull_back") or {}).get("words") or ()]
    for word, entry in ((engine.get("magnitudes") or {}).get("words") or {}).items():
        scale = float(entry["scale"])
        if scale < 1 and not str(word).endswith(" of"):
            repeat.setdefault(f"{word} more", scale)
            pull.append(f"{word} less")
    return repeat, list(dict.fromkeys(pull + excess_phrases(engine)))


def excess_phrases(engine: Mapping[str, Any], only_alone: bool = False) -> list[str]:
    """More than wanted, said by how it comes across (``followups.excess``): every degree word before every excess
    word ("very aggressive", "a bit heavy handed") and the words said alone ("garish"); a pull-back after a change.
    ``only_alone``: just the words that say it alone, with or without a degree: a reduce word said of a quality
    ("the red is very aggressive"; "very intense colours" is a wish)."""
    excess = (engine.get("followups") or {}).get("excess") or {}
    alone = [str(w) for w in excess.get("alone") or ()]
    words = alone if only_alone else list(dict.fromkeys([str(w) for w in excess.get("words") or ()] + alone))
    return [f"{d} {w}" for d in excess.get("degrees") or () for w in words] + alone


def tells_how_taken(tokens: Sequence[str]) -> bool:
    """Whether words open with a statement verb, after "i", "we" or "just" ("took this at the wedding", "i shot
    it on my phone"): they tell how the photo came about, they name no place and ask for nothing."""
    opening = [t for t in tokens if t not in ("i", "we", "just")]
    if opening[:1] in (["this"], ["it"], ["that"]) and opening[1:2] in (["was"], ["got"]) \
            and opening[2:3] and opening[2] in word_lists()["taken_words"]:
        return True         # "this was taken at night on my phone"
    lists = word_lists()
    for intro in lists["photo_introductions"]:
        said = intro.split()
        if opening[:len(said)] == said and opening[len(said):len(said) + 1] and opening[len(said)] in lists["possessives"]:
            return True     # "this is my grandad back in the day", "meet our new puppy": what the photo shows
        if opening[:len(said)] == said and opening[len(said):len(said) + 1] in (["a"], ["an"]) \
                and _a_photo_of(opening[len(said) + 1:len(said) + 5]):
            return True     # "this is a close up of the rough on the 7th hole", "it's a quick snap of ..."
    if opening[:1] and opening[0] in lists["possessives"] and any(t in lists["taken_words"] or t == "took"
                                                                  for t in opening[1:4]):
        return True         # "my grandad took this in the 60s": who took it
    return bool(opening) and opening[0] in lists["statement_verbs"]


def _a_photo_of(words: Sequence[str]) -> bool:
    """Whether words open with a kind of photo and "of" ("close up of", "quick snap of", "photo i took of")."""
    at = next((i for i, w in enumerate(words) if w == "of"), None)
    return at is not None and at > 0 and bool(set(words[:at]) & word_lists()["kinds_of_photo"])


def rhetorical_rest(tokens: Sequence[str]) -> list[str] | None:
    """What a question that is a complaint says, after its opening ("is it just me or is this photo really
    dark" -> "this photo really dark"), or None when the words open no such way."""
    words = [t for t in tokens if t not in SEPARATORS]
    for opening in word_lists()["rhetorical_starts"]:
        said = opening.split()
        if words[:len(said)] == said:
            rest = words[len(said):]
            rest = rest[1:] if rest and rest[0] in ("is", "are", "does", "do", "was", "has") else rest
            return rest or None
    return asked_why_rest(tokens)


def acknowledged_rest(tokens: Sequence[str]) -> list[str] | None:
    """``tokens`` without the clauses that acknowledge how the photo is ("lol i know its blurry, took it on a moving
    bus" -> "took it on a moving bus"; "i know its dark but brighten the sky" -> "brighten the sky"), or None when
    no clause does. A clause ends at a separator or "but"; interjections may come before the opening."""
    lists = word_lists()
    openings = [o.split() for o in lists["acknowledgements"]]
    interjections = set(lists["interjections"])
    clauses: list[list[str]] = [[]]
    for t in tokens:
        if t in SEPARATORS or t == "but":
            clauses.append([])
        else:
            clauses[-1].append(t)
    kept: list[str] = []
    found = False
    for clause in clauses:
        words = list(clause)
        while words and words[0] in interjections and not any(words[:len(o)] == o for o in openings):
            words = words[1:]
        if any(words[:len(o)] == o and len(words) > len(o) for o in openings):
            found = True
            continue
        kept += clause + ["."]
    return kept[:-1] if found else None


def asked_why_rest(tokens: Sequence[str]) -> list[str] | None:
    """What a "why is it so ..." question says of the photo, as a statement ("why is everything so yellow"
    -> "everything is so yellow"), or None when the words open no such way or say no degree ("why is it grey?"
    may ask for a reason)."""
    asked = [i for i, t in enumerate(tokens) if t == "?"]
    if len(asked) > 1 and any(t not in SEPARATORS for t in tokens[asked[0]:asked[-1]]):
        return None       # "why does this look so soft? motion blur or missed focus?": a reason, asked again
    words = [t for t in tokens if t not in SEPARATORS]
    degree = word_lists()["degree_words"]
    for said in _why_openings():
        rest = words[len(said):]
        if words[:len(said)] != said or not any(t in degree for t in rest):
            continue
        # "why is everything so yellow" -> "everything is so yellow"; "how come it looks so flat" as said; of
        # the whole photo only ("why is the snow in the shade so blue anyway?" asks about the light)
        at = next(i for i, t in enumerate(rest) if t in degree)
        if not set(rest[:at]) <= word_lists()["whole_photo_words"]:
            return None
        if said[-1] in ("is", "are", "why's", "whys", "its", "it's") \
                and not set(rest[:at]) & {"is", "are", "looks", "look", "seems", "feels"}:
            rest = (["it"] if said[-1] in ("its", "it's") else []) + rest[:at] + ["is"] + rest[at:]
        return rest if rest[0] not in degree else None
    return None


@lru_cache(maxsize=1)
def _why_openings() -> tuple[list[str], ...]:
    """The profile's ``rhetorical_whys`` as token lists, longest first ("how come its" before "how come")."""
    return tuple(sorted((w.split() for w in word_lists()["rhetorical_whys"]), key=len, reverse=True))


@lru_cache(maxsize=None)
def phrase_list(name: str) -> dict[tuple[str, ...], bool]:
    """The word list ``name`` of words.yaml as a phrase table for :func:`find_phrases`, apostrophes dropped as
    :func:`plain_words` drops them ("vague_asks", "acceptances", "withdrawals")."""
    return {tuple(w.replace("'", "") for w in p.split()): True for p in word_lists()[name]}


#: Words that add a request to the last one ("and take some colour out of it too", "also make it cooler").
_ADDED = frozenset({"too", "also", "aswell"})
#: Words that say the whole photo ("make everything cooler too"), not the thing the last change was on.
_WHOLE = frozenset({"everything", "whole", "overall", "all", "image", "photo", "picture", "pic"})


def added_to_last(tokens: list[str]) -> bool:
    """Whether a request is said as one more change to the thing the last one was on: added ("and ...",
    "... too", "also", "as well") and said of it ("it", "them"), not of the whole photo ("and take some colour
    out of it too" after "darken the background on the right"; "make it warmer" alone is the whole photo)."""
    said = set(tokens)
    added = bool(tokens) and tokens[0] == "and" or bool(_ADDED & said) \
        or any(tokens[i:i + 2] == ["as", "well"] for i in range(len(tokens) - 1))
    return added and bool({"it", "them"} & said) and not _WHOLE & said


#: Directions said bare ("higher", "no, up"): the way the last change's values go.
DIRECTIONS = {"higher": 1, "up": 1, "upward": 1, "upwards": 1, "lower": -1, "down": -1, "downward": -1,
              "downwards": -1}
#: Words said with a direction or "the other way" that ask nothing else ("no wait not lower, HIGHER. my bad").
_TURN_WORDS = frozenset({"not", "no", "nope", "nah", "wait", "my", "bad", "i", "meant", "mean", "go", "the", "way",
                         "it", "should", "be", "sorry", "oops", "whoops", "actually", "other", "instead", "please",
                         "pls", "plz", "ok", "okay", "hmm", "uh", "um", "oh", "ah", "er", "erm", "that", "is", "its",
                         "it's", "was", "wrong", "one", "direction", "opposite", "lol"})


def turned_round(tokens: list[str], reverse) -> int | None:
    """The way a message turns the last change when it says nothing but that: 0 for "no, the other way", "wrong
    way" (the change reversed); +1 or -1 for a direction, bare ("higher", "no, down") or said against a negated one
    ("not lower, HIGHER" is +1; the last one said wins); None when it says anything else. ``reverse``: the
    engine's ``followups.reverse`` phrases."""
    found = find_phrases(tokens, reverse)
    covered = {i for s, n, _ in found for i in range(s, s + n)}
    way = 0 if found else None
    for i, t in enumerate(tokens):
        if t in DIRECTIONS and i not in covered:
            negated = i > 0 and tokens[i - 1] in ("not", "no")
            way = -DIRECTIONS[t] if negated else DIRECTIONS[t]
            covered.add(i)
    if way is None or any(i not in covered and t not in _TURN_WORDS and t not in SEPARATORS
                          and any(c.isalpha() for c in t) for i, t in enumerate(tokens)):
        return None
    return way


def says_vague_ask(tokens: list[str]) -> bool:
    """Whether words ask for a change without saying which ("can you do something about it", "change it up a
    bit"): the profile's ``vague_asks``; or a verb that asks (``vague_verbs``) with nothing else but words that
    name no change ("can u fix this one", "and can u do the other thing as well")."""
    plain = plain_words(tokens)
    if find_phrases(plain, phrase_list("vague_asks")):
        return True
    lists = word_lists()
    words = [t for t in plain if any(c.isalpha() for c in t)]
    return bool(set(words) & set(lists["vague_verbs"])) and all(
        t in lists["function_words"] or t in lists["vague_verbs"] or t in lists["vague_nouns"]
        or t in lists["interjections"] for t in words)


#: "<verb> it up" is more of it, "<verb> it down" / "<verb> it back" less, whatever the verb ("pump it up", "dial
#: it down a notch", "reel it back"); these verbs with "up" say something else, and only these say "back" so
#: ("bring it back", "put it back", "roll it back" go back).
_NOT_MORE_UP = frozenset({"mess", "screw", "give", "set", "line", "sum", "wrap", "back", "make", "pick", "look", "end",
                          "change", "switch", "mix", "shake", "swap", "jazz", "spice", "dress",
                          "show", "open", "fix", "clean", "tidy", "clear", "light", "brighten", "warm", "cool",
                          "lighten", "liven", "sharpen", "heat", "bring"})
_LESS_BACK = frozenset({"dial", "knock", "reel", "scale", "pull", "tone", "wind", "ease", "throttle", "rein", "pare",
                        "cut", "peel", "trim", "draw", "back"})
_LESS_IN = frozenset({"reel", "rein", "pull"})


def particle_follow_up(tokens: list[str]) -> tuple[int, int, int] | None:
    """Where a verb, "it" and its particle ask for more or less of the last change, and which way: ``(pos, n,
    +1 | -1)``; None when no such phrase is said. "up it a bit" is more too."""
    if tokens[:2] == ["up", "it"]:
        return 0, 2, 1
    for i in range(len(tokens) - 2):
        verb, obj, particle = tokens[i:i + 3]
        if obj not in ("it", "that", "this", "things") or not verb.isalpha() or len(verb) < 3:
            continue
        if particle == "up" and verb not in _NOT_MORE_UP:
            return i, 3, 1
        if particle == "down" and verb not in ("write", "put", "set", "lay", "calm") or particle == "back" \
                and verb in _LESS_BACK or particle == "in" and verb in _LESS_IN:
            return i, 3, -1
    return None


def says_yes(tokens: list[str]) -> bool:
    """Whether words only accept what was just proposed ("ok yeah do that", "sure, go for it", "yes please"):
    the profile's ``acceptances``, with nothing else but interjections and filler."""
    plain = [t for t in plain_words(tokens) if any(c.isalpha() for c in t)]
    found = find_phrases(plain, phrase_list("acceptances"))
    covered = {i for pos, n, _ in found for i in range(pos, pos + n)}
    interjections = word_lists()["interjections"]
    return bool(found) and all(i in covered or t in interjections or t in _POLITE for i, t in enumerate(plain))


#: Words said around a yes that change nothing of it ("yes please", "sure thx").
_POLITE = frozenset({"please", "pls", "plz", "then", "thanks", "thx", "lol", "u", "you"})


#: Verbs that say what praise is of ("the warmth is lovely", "her skin looks great"): the router and the
#: planner read praise of a thing the same way.
PRAISE_LINKS = frozenset({"is", "looks", "look", "feels", "feel", "was", "are", "'s", "seems"})


def before_comparative(tokens: list[str], found: list[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """``found`` phrases without those said before a comparative: "that's a lot better", "its a lot warmer now"
    say how it is, where "woah that's a lot" says it went too far."""
    def comparative(t: str) -> bool:
        return t in ("better", "nicer", "worse", "more", "less") or (len(t) > 4 and t.endswith("er")
                                                                       and t not in ("over", "never", "ever"))
    def weighed(end: int) -> bool:         # "this is harder than i thought": said of the task, not asked
        return tokens[end:end + 1] == ["than"] and bool(_GUESSED & set(tokens[end + 1:end + 4]))
    return [f for f in found if not (f[0] + f[1] < len(tokens) and comparative(tokens[f[0] + f[1]]))
            and not weighed(f[0] + f[1])]


#: Verbs after "than i" that weigh how something turned out against a guess ("harder than i thought").
_GUESSED = frozenset({"thought", "expected", "imagined", "figured", "guessed", "assumed", "realised", "realized"})


#: "take some saturation out", "pull a little of the yellow out": a share of a quality taken out of the photo.
_TAKEN_SOME = re.compile(r"\b(take|pull|suck|drain|knock|strip)\s+(some|a bit|a little|a touch|a tad|a little bit)"
                         r"(?:\s+of)?(?:\s+the)?\s+([a-z']+(?:\s+[a-z']+)?)\s+(?:out|away|off)\b")


#: "go easy on the contrast", "gentler on the saturation": less of a quality (only a quality: "softer on the
#: left" names a place).
_EASY_ON = re.compile(r"\b(?:go\s+)?(?:a\s+(?:bit|little|lot)\s+)?(?:easy|easier|gentler|softer)\s+on\s+(?:the\s+)?"
                      r"(contrast|saturation|sharpening|sharpness|clarity|warmth|vignette|vignetting|grain|colou?rs?|"
                      r"vibrance|glow|texture|fade|tint|smoothing|blur|effect|filter|dehaze|haze)\b")


def taken_some_out(text: str) -> str:
    """``text`` with a share of a quality taken out said as less of it ("take some saturation out" -> "a bit less
    saturation", "go easy on the contrast" -> "less contrast"): the planner and the judge read it the same way."""
    text = _EASY_ON.sub(lambda m: f"less {m[1]}", text)
    return _TAKEN_SOME.sub(lambda m: f"{'a bit' if m[2] == 'some' else m[2]} less {m[3]}", text)


@lru_cache(maxsize=1)
def _comparatives() -> dict[str, str]:
    """Comparative -> base for the words of ``compared_bases`` ("dark" -> darker, "blue" -> bluer, "noisy" ->
    noisier, "red" -> redder), built once."""
    out = {}
    for b in word_lists()["compared_bases"]:
        if b.endswith("y"):
            out[b[:-1] + "ier"] = b
        elif b.endswith("e"):
            out[b + "r"] = b
        else:
            out[b + "er"] = b
            if len(b) >= 3 and b[-1] not in "aeiouwy" and b[-2] in "aeiou" and b[-3] not in "aeiou":
                out[b + b[-1] + "er"] = b          # red -> redder, flat -> flatter
    return out


_COMPARED_TO = re.compile(
    r"(\b(?:is|are|was|were|looks|look|seems|seem|feels|(?<=[a-z])'s)\s+"
    r"(?:(?:a\s+)?(?:bit|lot|little|tad|touch|little\s+bit)\s+|(?:way|much|far|even|kinda|quite|slightly)\s+)?)"
    r"([a-z]+)\s+than\s+"
    r"(?:the\s+(?:rest|others?)(?:\s+of\s+(?:the\s+)?[a-z]+)?|everything\s+else|the\s+[a-z]+(?:\s+(?:side|half|part|bit|one))?"
    r"|before|it\s+was|it\s+should\s+be|i\s+(?:want|wanted|like)(?:\s+it)?|i'd\s+like(?:\s+it)?)\b")


def compared_as_too(text: str) -> str:
    """``text`` with a place said to be more of a quality than another ("the bottom is darker than the top",
    "her face looks redder than the rest") said as a complaint ("the bottom is too dark"): the fix goes on the
    place said first, the one compared to is no place to change; the planner and the judge read it the same way
    ("make the sky darker than the sea" asks, and stays as said)."""
    table = _comparatives()

    def plain(m: re.Match) -> str:
        base = table.get(m[2])
        return f"{m[1]}too {base}" if base else m[0]
    return _COMPARED_TO.sub(plain, text)


_UNITS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
          "seventeen eighteen nineteen").split()
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SPELLED = (rf"(?:(?:{'|'.join(_TENS)})(?:[\s-](?:{'|'.join(_UNITS[1:10])}))?|{'|'.join(_UNITS)}|(?:a|one)\s+hundred)")
#: "ten percent", "twenty-five per cent": a number spelled out before a percentage
_SPELLED_PERCENT = re.compile(rf"\b({_SPELLED})\s+(percent|per\s+cent|pct|%)", re.IGNORECASE)
#: Exposure said in stops or EV ("a third of a stop", "half a stop", "+0.5 EV", "two stops", "1/3 stop"): the
#: share of a stop, then the unit. A bare "a"/"one" stop only before a way or the end ("a stop down", not
#: "a stop sign").
_STOP_SHARES = {"a third": 1 / 3, "one third": 1 / 3, "third": 1 / 3, "two thirds": 2 / 3, "a half": 0.5,
                "half": 0.5, "a quarter": 0.25, "one quarter": 0.25, "quarter": 0.25, "a full": 1.0, "one full": 1.0,
                "one": 1.0, "a": 1.0, "two": 2.0, "three": 3.0}
_IN_STOPS = re.compile(
    r"(?<![\w.])(?P<sign>[+-])?\s?(?P<amount>\d+(?:\.\d+)?|\.\d+|\d/\d|"
    + "|".join(sorted((k.replace(" ", r"\s+") for k in _STOP_SHARES), key=len, reverse=True))
    + r")(?:\s+of)?(?:\s+an?)?\s*(?P<unit>stops?|ev)\b(?P<half>\s+and\s+a\s+half)?"
    r"(?=\s*(?:$|[.,!?;:)]|up\b|down\b|brighter|darker|lighter|more\b|less\b|over|under|on\b|in\b|for\b|to\b"
    r"|of\b|and\b|but\b|please|pls|plz|then|there|too\b|[a-z]+ (?:up|down)\b)|(?<=ev)|(?<=stops))",
    re.IGNORECASE)
#: "by half", "to about half" said of a quality (not "half of that", "halfway", "back to half")
_BY_HALF = re.compile(r"\b(by|to)\s+((?:about|around|roughly|approximately|like|maybe)\s+)?half\b"
                      r"(?!\s+(?:of|way|the|a|an|as|that|it|this)\b)", re.IGNORECASE)
_TAKEN_BACK = re.compile(r"\b(back|take|took|undo|revert|halfway)\b", re.IGNORECASE)
#: What one stop is in the exposure op's units (pipeline.ops: 100 = +2 EV).
EXPOSURE_PER_STOP = 50


def _spelled_number(words: str) -> int:
    parts = re.split(r"[\s-]+", words.lower())
    if parts[-1] == "hundred":
        return 100
    total = 0
    for w in parts:
        total += _TENS.get(w, _UNITS.index(w) if w in _UNITS else 0)
    return total


def _stops(m: re.Match) -> str:
    amount = m["amount"].lower()
    if "/" in amount:
        top, bottom = amount.split("/")
        share = int(top) / max(1, int(bottom))
    elif amount[:1].isdigit() or amount[:1] == ".":
        share = float(amount)
    else:
        share = _STOP_SHARES[" ".join(amount.split())]
    share += 0.5 if m["half"] else 0.0
    # (no more than the op's range says, whatever was typed: "1111...1 ev" is no overflow)
    value = max(1, round(min(share, 100 / EXPOSURE_PER_STOP) * EXPOSURE_PER_STOP)) if math.isfinite(share) else 100
    return f"exposure {m['sign']}{value}" if m["sign"] else f"{value} exposure"


def amounts_said(text: str) -> str:
    """``text`` with amounts said in words put as numbers: a spelled-out percentage ("ten percent" -> "10
    percent") and exposure in stops or EV ("a third of a stop" -> "17 exposure", "+0.5 EV" -> "+25 exposure"),
    so the number reads as how much; the planner and the judge read it the same way."""
    text = _SPELLED_PERCENT.sub(lambda m: f"{_spelled_number(m[1])} {m[2]}", text)
    if not _TAKEN_BACK.search(text):
        # "desaturate it to about half": the quality by half its range, not half of the last change back
        text = _BY_HALF.sub(lambda m: f"{m[1]} {m[2] or ''}50 percent", text)
    return _IN_STOPS.sub(_stops, text)


def said_plainly(text: str) -> str:
    """``text`` as the readers take it: amounts as numbers, a share taken out as less of it, a comparison as a
    complaint (:func:`amounts_said`, :func:`taken_some_out`, :func:`compared_as_too`)."""
    return compared_as_too(taken_some_out(amounts_said(text)))


def percent_share(token: str) -> float | None:
    """The share a percentage token says ("50%" -> 0.5), None for any other token."""
    return float(token[:-1]) / 100.0 if token.endswith("%") and _NUMBER.fullmatch(token) \
        and not token.startswith(("+", "-")) else None


def normalise(text: str) -> str:
    """Lower case, curly apostrophes straight, a dash between words a clause break ("open up the shadows a
    bit — my face should stay"), each the same length (what every reader does first)."""
    text = (text or "").lower().replace("\u2019", "'").replace("\u2018", "'")
    return re.sub(r"(?<=\s)-(?=\s)|[\u2013\u2014]", ";", text)


def tokenize(text: str) -> list[str]:
    """The tokens of ``text`` as every reader sees them (see the module docstring)."""
    text = re.sub(r"(?<=[a-z])-ish\b", "ish", normalise(text))     # blue-ish: bluish, one word
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text)                # golden-hour, black-and-white
    text = _SLASH.sub(" or ", text)                                  # "red/pink": either word ("b/w" stays)
    return plain_possessives(_TOKEN.findall(text))


def token_spans(text: str) -> list[tuple[str, int]]:
    """:func:`tokenize`'s tokens (possessives as typed) with where each starts in ``text``."""
    text = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", normalise(text))    # the same length as the text
    text = _SLASH.sub("|", text)                                     # (one mark for tokenize's "or")
    return [("or" if m.group(0) == "|" else m.group(0), m.start()) for m in _TOKEN_OR_SLASH.finditer(text)]


def words_only(text: str) -> list[str]:
    """:func:`tokenize` without punctuation marks and numbers: the words of ``text``."""
    return [t for t in tokenize(text) if t not in SEPARATORS and not _NUMBER.fullmatch(t)]


def is_number(token: str) -> bool:
    """Whether a token is a number ("20", "-15", "+2.5", "50%")."""
    return bool(_NUMBER.fullmatch(token))


def phrase(text: str) -> tuple[str, ...]:
    """A table phrase as the tokens it matches."""
    return tuple(tokenize(str(text)))


def plain_words(toks: list[str]) -> list[str]:
    """``toks`` with their apostrophes dropped, as people often type them: "thats" is "that's"."""
    return [t.replace("'", "") for t in toks]


def plain_possessives(toks: list[str]) -> list[str]:
    """Tokens with "X's" read: "the sky's too bright" (X is) keeps "sky"; "the cat's eyes" (whose)
    keeps only "eyes", the place meant. Pronoun contractions ("it's") stay as they are."""
    lists = word_lists()
    contractions, after_is, owners = lists["contractions"], lists["after_is"], lists["possessive_determiners"]
    colours, after_colour = lists["stated_colours"], lists["after_a_stated_colour"]
    out: list[str] = []
    skip = -1
    for i, t in enumerate(toks):
        if i == skip:
            continue
        if not t.endswith("'s") or len(t) <= 3 or t in contractions:
            out.append(t)
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ""
        then = toks[i + 2] if i + 2 < len(toks) else "."
        if nxt in colours and (then in SEPARATORS or then in after_colour):
            out += [t[:-2], "is"]       # "snow's blue. make it white": the snow is blue, not the snow's blue
            continue
        # ("the snow's blowing out", "the sky's looking flat": "is" before a verb in -ing, not a whose)
        if nxt.isalpha() and nxt not in after_is and not nxt.endswith(("ed", "ing")):
            if out and out[-1] in owners and nxt in lists["whole_of_owner"]:
                skip = i + 1            # "the cat's fur" -> "the cat": that part is all of it
            elif out and out[-1] in owners:
                continue                # "the cat's eyes" -> "the eyes"
        out.append(t[:-2])
    return out


def cast_said_of_a_neutral_thing(toks: list[str]) -> list[str]:
    """Tokens with a colour said of a thing that has none of its own, and that no place finds, read as said of
    the photo: "the paper has gone yellow", "her white shirt looks pink" are a colour cast, which is fixed on
    the whole photo (white balance), not by taking that colour out of the thing. The thing becomes "it"."""
    lists = word_lists()
    neutral, colours, linking = lists["neutral_things"], lists["cast_colours"], lists["stated_how"]
    whose = lists["place_determiners"] | lists["possessives"]
    out = list(toks)
    for i, t in enumerate(toks):
        # ("her white shirt", "the grey wall": a thing said white, after whose or which; not "grey and blue")
        whiteish = i > 1 and toks[i - 1] in ("white", "grey", "gray") \
            and toks[i - 2] in whose
        if t not in neutral and not (whiteish and t.isalpha()):
            continue
        j = i + 1
        while j < len(toks) and j - i <= 5 and toks[j] in linking:
            j += 1
        if j == i + 1 or j >= len(toks) or toks[j] not in colours:
            continue        # ("make the snow blue": asked, not said of how it is)
        start = i - 1 if whiteish else i
        if start and out[start - 1] in whose:
            start -= 1
        out[start:i + 1] = ["it"] + [""] * (i - start)
    return [t for t in out if t]


# -- phrases ------------------------------------------------------------------------------

def _spans(toks: list[str], table: Mapping[tuple[str, ...], Any], longest: int) -> list[tuple[int, int]]:
    """Every (start, length) at which a phrase of ``table`` matches ``toks``."""
    out = []
    for i in range(len(toks)):
        for n in range(min(longest, len(toks) - i), 0, -1):
            if tuple(toks[i:i + n]) in table:
                out.append((i, n))
    return out


def filter_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Non-overlapping spans, the longest first and of equal length the earlier (spaCy's rule)."""
    taken: set[int] = set()
    kept = []
    for start, n in sorted(spans, key=lambda s: (-s[1], s[0])):
        if not taken.intersection(range(start, start + n)):
            kept.append((start, n))
            taken.update(range(start, start + n))
    return sorted(kept)


def find_phrases(toks: list[str], table: Mapping[tuple[str, ...], V]) -> list[tuple[int, int, V]]:
    """Phrases of ``table`` (token tuples -> values) in ``toks``: [(position, length, value)], in order."""
    if isinstance(table, PhraseTable):
        return table.find(toks)
    longest = max((len(k) for k in table), default=0)
    return [(s, n, table[tuple(toks[s:s + n])]) for s, n in filter_spans(_spans(toks, table, longest))]


class PhraseTable(Mapping[tuple[str, ...], V], Generic[V]):
    """Phrases (as said in a table) -> values, compiled once; ``find`` matches them in tokens.

    A phrase listed twice keeps its first value (tables list the stronger meaning first).
    """

    def __init__(self, entries: Mapping[str, V] | Iterable[tuple[str, V]] = ()):
        items = entries.items() if isinstance(entries, Mapping) else entries
        self._table: dict[tuple[str, ...], V] = {}
        self.text: dict[tuple[str, ...], str] = {}
        for said, value in items:
            key = said if isinstance(said, tuple) else phrase(said)
            if key and key not in self._table:
                self._table[key] = value
                self.text[key] = " ".join(key)
        self.longest = max((len(k) for k in self._table), default=0)

    @classmethod
    def of(cls, phrases: Iterable[str]) -> "PhraseTable[str]":
        """A table of phrases whose value is the phrase itself (as its tokens joined by spaces)."""
        return cls((p, " ".join(phrase(p))) for p in phrases)

    def __getitem__(self, key: tuple[str, ...]) -> V:
        return self._table[key]

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def find(self, toks: list[str]) -> list[tuple[int, int, V]]:
        """[(position, length, value)] of the phrases in ``toks``, in order (see :func:`filter_spans`)."""
        return [(s, n, self._table[tuple(toks[s:s + n])])
                for s, n in filter_spans(_spans(toks, self._table, self.longest))]

    def has(self, toks: list[str]) -> bool:
        return bool(self.find(toks))


# -- typing slips -------------------------------------------------------------------------

@lru_cache(maxsize=4)
def english_words(min_count: int) -> frozenset[str]:
    """English words said at least ``min_count`` times in pyspellchecker's word-frequency list (a list
    built from subtitles and checked against word lists; it holds no misspellings: "brigther", "warmr"
    and "saturaton" are not in it, "growing" and "stones" are)."""
    from spellchecker import SpellChecker

    counts = SpellChecker(language="en", distance=1).word_frequency.dictionary
    return frozenset(w for w, n in counts.items() if n >= min_count and w.isalpha())


class Speller:
    """Corrects a word no table knows, of at least ``min_length`` letters, that is one edit
    (a swap of neighbours, a letter added, dropped or changed) from exactly one known word.
    A shorter word, of at least ``dropped_min_length`` letters, is corrected only to the one known
    word that is the typed one with a vowel put back inside it ("warmr" -> "warmer"): short real
    words lie one edit from many others ("older" / "colder"). A guess with a rival, or a word
    shorter still, is left as typed, unless it is one of the common ``slips`` of a short word ("teh" for
    "the"). A word of ``dictionary`` (real English) is no slip either: "moss
    growing between the stones" is not "glowing" and "tones", "a creamy look" is not "dreamy"."""

    def __init__(self, known: Iterable[str], min_length: int = 6, dropped_min_length: int | None = None,
                 dictionary: frozenset[str] = frozenset(), slips: Mapping[str, str] | None = None):
        self.known = frozenset(known)
        self.slips = {str(k).lower(): str(v) for k, v in (slips or {}).items()}   # "teh": too short to guess
        self.dictionary = dictionary
        self.min_length = int(min_length)
        self.dropped_min_length = min(int(dropped_min_length or min_length), self.min_length)
        self._by_length: dict[int, list[str]] = {}
        for w in sorted(self.known):
            if w.isalpha() and len(w) >= self.dropped_min_length - 1:
                self._by_length.setdefault(len(w), []).append(w)

    @classmethod
    def from_profile(cls, known: Iterable[str], spelling: Mapping | None) -> "Speller":
        """A speller with the vocabulary's ``spelling`` lengths."""
        spelling = spelling or {}
        floor = spelling.get("dictionary_min_count")
        return cls(known, int(spelling.get("min_length", 6)), spelling.get("dropped_min_length"),
                   english_words(int(floor)) if floor else frozenset(), spelling.get("slips"))

    def word(self, word: str) -> str:
        low = word.lower()
        if low in self.slips:
            return self.slips[low]
        if _DRAWN_OUT.search(low) and low not in self.known:
            return self.drawn_out(low) or word
        if len(low) < self.dropped_min_length or low in self.known or low in self.dictionary:
            return word
        if len(low) < self.min_length:     # a short word: only a vowel put back ("darkr" is not "darks")
            near = [w for w in self._by_length.get(len(low) + 1, ()) if dropped_vowel(low, w)]
        else:
            near = [w for n in (len(low) - 1, len(low), len(low) + 1) for w in self._by_length.get(n, ())
                    if one_edit(low, w) and not another_form(low, w)]
        return near[0] if len(near) == 1 else word

    def drawn_out(self, low: str) -> str | None:
        """A word typed with a letter held down ("hiii", "soooo", "pleeease", "nooo"): the known word it is
        with each run cut to two letters or to one (a table's word before any English one), else None."""
        runs = [m.span() for m in _DRAWN_OUT.finditer(low)][:4]
        forms = []
        for keep in itertools.product((2, 1), repeat=len(runs)):
            form, last = [], 0
            for (start, end), n in zip(runs, keep):
                form += [low[last:start], low[start] * n]
                last = end
            forms.append("".join(form) + low[last:])
        forms = [f for f in forms if len(f) > 1]
        return next((f for f in forms if f in self.known or f in self.slips), None) \
            or next((f for f in forms if f in self.dictionary), None)

    def __call__(self, text: str) -> str:
        return re.sub(r"[A-Za-z]+", lambda m: self.word(m.group(0)), text)


#: A letter typed three times or more in a row: no English word has one ("hiii", "soooo").
_DRAWN_OUT = re.compile(r"([a-z])\1{2,}")


def one_edit(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ by one edit: a swap of neighbours, one letter added, dropped or changed."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                                  and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    i = next((k for k in range(len(short)) if short[k] != long_[k]), len(short))
    return short[i:] == long_[i + 1:]


def another_form(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` differ only by a last letter ("cartoon" / "cartoony"): another word, not a
    slip; a doubled last letter ("darkerr") is a slip."""
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(long_) == len(short) + 1 and long_.startswith(short) and long_[-1] != short[-1]


def dropped_vowel(typed: str, word: str) -> bool:
    """Whether ``word`` is ``typed`` with one vowel put back inside it, neither its first letter nor its
    last ("warmr" / "warmer"; not "older" / "colder", nor "brigt" / "bright")."""
    if len(word) != len(typed) + 1:
        return False
    return any(word[:i] + word[i + 1:] == typed and word[i] in _VOWELS for i in range(1, len(word) - 1))


__all__ = ["DIRECTIONS", "PhraseTable", "SEPARATORS", "Speller", "added_to_last", "turned_round", "another_form", "sized_follow_ups", "tells_how_taken", "drop_clauses", "dropped_vowel", "opening_interjections", "filter_spans",
           "find_phrases", "is_number", "normalise", "one_edit", "percent_share", "phrase", "plain_possessives", "plain_words",
           "token_spans", "tokenize", "word_lists", "words_only"]


def drop_clauses(tokens: list[str], opening_phrases: PhraseTable, skippable: Iterable[str] = (),
                 unless: Iterable[str] = ("else", "rest", "other", "others", "remaining")) -> list[str]:
    """``tokens`` without the leading clauses (split at :data:`SEPARATORS`) that open with one of
    ``opening_phrases`` after any ``skippable`` words ("ok never mind the cord. more pop": the first clause
    goes; after a request, "sharpen it, never mind the sky" keeps the sky out of it and stays); all of
    ``tokens`` when nothing else would be left, or when the rest points back at what was dropped with one of
    ``unless`` ("never mind the dog, sharpen everything else")."""
    skippable = set(skippable)
    clauses: list[list[str]] = [[]]
    for t in tokens:                 # each clause with the mark that ends it
        clauses[-1].append(t)
        if t in SEPARATORS:
            clauses.append([])

    def opens(clause: list[str]) -> bool:
        words = [t for t in clause if t not in SEPARATORS]
        while words:
            hit = opening_phrases.find(words)
            if hit and hit[0][0] == 0:
                return True
            if words[0] not in skippable:
                return False
            words = words[1:]
        return False

    dropped = set()
    for i, clause in enumerate(clauses):
        if all(t in SEPARATORS for t in clause):
            continue                 # punctuation alone opens nothing
        if not opens(clause):
            break
        dropped.add(i)
    kept = [t for i, clause in enumerate(clauses) if i not in dropped for t in clause]
    if not any(t not in SEPARATORS for t in kept) or set(kept) & set(unless):
        return list(tokens)
    return kept


def opening_interjections(tokens: list[str]) -> int:
    """How many leading ``tokens`` are sounds said before the message ("right ok erm... a little more",
    "right, so"): a run of interjections (and punctuation) of two or more tokens, or ending at a punctuation
    mark. One such word running straight into the rest is the message's own ("right side darker", "cool the
    highlights"); a message of nothing else is left whole (0)."""
    sounds = word_lists()["interjections"]
    i = 0
    while i < len(tokens) and (tokens[i] in sounds or _DRAWN_OUT.sub(r"\1\1", tokens[i]) in sounds
                               or (i and tokens[i] in SEPARATORS)):      # ("awww", "hmmmmm": drawn out)
        i += 1
    if i == 0 or i >= len(tokens) or not any(t not in SEPARATORS for t in tokens[i:]):
        return 0
    if tokens[i] in _OBJECTS and tokens[i - 1] not in SEPARATORS:
        i -= 1          # "ok, cool it down": the last word runs into its object, a verb of the message's own
    return i if i >= 2 or (i and tokens[i - 1] in SEPARATORS) else 0


#: A letter said three times or more ("awww", "sooo"): a sound drawn out.
_DRAWN_OUT = re.compile(r"(.)\1{2,}")
#: Said right after a word, these make it a verb ("cool it down", "warm them up"), not a sound.
_OBJECTS = frozenset({"it", "that", "them", "things", "everything"})


#: Verbs that say a thing causes how the photo looks ("the lamp makes the whole pic look so orange").
_CAUSING = frozenset({"makes", "made", "making"})
_LOOK = frozenset({"look", "looks", "seem", "seems", "feel", "feels"})


def effect_said(tokens: list[str]) -> list[str]:
    """The tokens with a cause left out of what it does: "the lamp makes the whole pic look so orange" reads
    as "the whole pic looks so orange" (the lamp is why, not a place); "make it look golden" (no one said to
    cause it) asks for a look and stays as said."""
    out = list(tokens)
    for i in range(len(out) - 1, 0, -1):
        if out[i] not in _CAUSING or out[i - 1] in SEPARATORS:
            continue
        if out[i] == "making" and out[i - 1] not in ("is", "was", "are", "were", "keeps", "kept"):
            continue            # ("try making it look warmer" asks)
        ahead = out[i + 1:i + 6]
        k = next((j for j, t in enumerate(ahead) if t in _LOOK), None)
        if k is None or k == 0 or any(t in SEPARATORS for t in ahead[:k]):
            continue
        start = max([j + 1 for j in range(i) if out[j] in SEPARATORS] + [0])
        look = i + 1 + k
        out = out[:start] + out[i + 1:look] + ["looks"] + out[look + 1:]
    return out
