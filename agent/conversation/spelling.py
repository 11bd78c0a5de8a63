"""Words as typed, put in the form the tables know: typing slips ("brigther" ->
"brighter", against a set of known words) and possessives ("the sky's" -> "sky").

One :class:`Speller` serves the planner's vocabulary and the judge's reading, each
with its own words: a word neither knows is left as typed.
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping

#: Letters a short word may have dropped ("warmr" -> "warmer", "darkr" -> "darker").
_VOWELS = frozenset("aeiou")


class Speller:
    """Corrects a word no table knows, of at least ``min_length`` letters, that is one edit
    (a swap of neighbours, a letter added, dropped or changed) from exactly one known word.
    A shorter word, of at least ``dropped_min_length`` letters, is corrected only to the one known
    word that is the typed one with a vowel put back inside it ("warmr" -> "warmer"): short real
    words lie one edit from many others ("older" / "colder"). A guess with a rival, or a word
    shorter still, is left as typed."""

    def __init__(self, known: Iterable[str], min_length: int = 6, dropped_min_length: int | None = None):
        self.known = frozenset(known)
        self.min_length = int(min_length)
        self.dropped_min_length = min(int(dropped_min_length or min_length), self.min_length)
        self._by_length: dict[int, list[str]] = {}
        for w in sorted(self.known):
            if w.isalpha() and len(w) >= self.dropped_min_length - 1:
                self._by_length.setdefault(len(w), []).append(w)

    @classmethod
    def from_profile(cls, known: Iterable[str], spelling: Mapping | None) -> "Speller":
        """A speller with the engine profile's ``prompt_engineering.spelling`` lengths."""
        spelling = spelling or {}
        return cls(known, int(spelling.get("min_length", 6)), spelling.get("dropped_min_length"))

    def word(self, word: str) -> str:
        low = word.lower()
        if len(low) < self.dropped_min_length or low in self.known:
            return word
        if len(low) < self.min_length:     # a short word: only a vowel put back ("darkr" is not "darks")
            near = [w for w in self._by_length.get(len(low) + 1, ()) if dropped_vowel(low, w)]
        else:
            near = [w for n in (len(low) - 1, len(low), len(low) + 1) for w in self._by_length.get(n, ())
                    if one_edit(low, w) and not another_form(low, w)]
        return near[0] if len(near) == 1 else word

    def __call__(self, text: str) -> str:
        return re.sub(r"[A-Za-z]+", lambda m: self.word(m.group(0)), text)


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


#: Contractions of a pronoun or question word: "it's" is "it is", a word of its own.
_CONTRACTIONS = frozenset({"it's", "that's", "what's", "how's", "let's", "there's", "here's", "he's", "she's",
                           "who's", "where's", "when's", "why's", "one's"})


#: Words that follow "is" rather than a possessive: "the sky's a bit dark", "the sky's blown out".
_AFTER_IS = frozenset({"a", "an", "the", "too", "so", "very", "really", "way", "bit", "kinda", "kind", "quite",
                       "pretty", "rather", "all", "gone", "got", "been", "being", "looking", "getting", "not",
                       "still", "now", "blown", "much", "more", "less", "totally", "completely", "super",
                       "slightly", "somewhat", "just", "also", "overly", "far", "crazy", "insanely", "almost"})


def plain_possessives(tokens: list[str]) -> list[str]:
    """Tokens with "X's" read: "the sky's too bright" (X is) keeps "sky"; "the cat's eyes" (whose)
    keeps only "eyes", the place meant. Pronoun contractions ("it's") stay as they are."""
    out = []
    for i, t in enumerate(tokens):
        if not t.endswith("'s") or len(t) <= 3 or t in _CONTRACTIONS:
            out.append(t)
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else ""
        if nxt.isalpha() and nxt not in _AFTER_IS and not nxt.endswith("ed"):
            if out and out[-1] in ("the", "a", "an", "his", "her", "their", "my", "this", "that"):
                continue                # "the cat's eyes" -> "the eyes"
        out.append(t[:-2])
    return out


def dropped_vowel(typed: str, word: str) -> bool:
    """Whether ``word`` is ``typed`` with one vowel put back inside it, neither its first letter nor its
    last ("warmr" / "warmer"; not "older" / "colder", nor "brigt" / "bright")."""
    if len(word) != len(typed) + 1:
        return False
    return any(word[:i] + word[i + 1:] == typed and word[i] in _VOWELS for i in range(1, len(word) - 1))


__all__ = ["Speller", "another_form", "dropped_vowel", "one_edit", "plain_possessives"]
