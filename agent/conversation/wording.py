"""Replies in a photographer's words; the measurements go to a details part.

:func:`compose_reply` turns the planner's reply and the judge's assessment into
``(reply, details)``: the reply says what changed in plain words ("Warmer and
brighter, as asked. The rest of the photo kept its look."); the details keep
the numbers (op values, L*, b*, chroma, SSIM, the score) for a fold the UI and
CLI can open.

:func:`repeated_words` and :func:`contradictions` are the checks the tests and
``python -m agent.eval`` run over every reply: no doubled words ("Muted muted
colours", "Outside outside the subject"), no direction word that disagrees with
the value next to it ("Warmer as asked (b* -2.7)", "darker: exposure +6").
"""

from __future__ import annotations

import re
from typing import Any, Mapping

#: A parenthesised part that carries a measurement or an op value: "(temperature +25)", "(b* +3.1)".
_NUMBERS_IN_PARENS = re.compile(r"\s*\([^()]*[0-9][^()]*\)")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
#: Measurements that never belong in a plain reply.
_MEASURE_WORDS = re.compile(r"\b(L\*|a\*|b\*|ssim|Δe|delta e|dark channel|chroma \d|rms)\b", re.I)


def _plain_sentence(sentence: str) -> str:
    text = _NUMBERS_IN_PARENS.sub("", sentence)
    text = re.sub(r"\s+([.,;:!?])", r"\1", text).strip()
    return text


def split_reply(text: str) -> tuple[str, str]:
    """(plain, details) of one reply: sentences with measurements move to the details;
    numbers in parentheses are dropped from the plain sentence and kept in the details."""
    plain, details = [], []
    for sentence in _SENTENCE.split((text or "").strip()):
        if not sentence:
            continue
        stripped = _plain_sentence(sentence)
        if stripped != sentence.strip():
            details.append(sentence.strip())
        if _MEASURE_WORDS.search(stripped):
            details.append(stripped)
            continue
        if stripped and stripped not in (".", ":"):
            plain.append(stripped)
    return " ".join(dict.fromkeys(plain)), " ".join(dict.fromkeys(details))


def compose_reply(plan_reply: str, assessment: Mapping[str, Any] | None, *, tail: str = "") -> tuple[str, str]:
    """The turn's reply in plain words and its details.

    The planner's sentences stay without their numbers (what it did, and notes
    such as "I stopped at the sweet spot"), then the judge's plain verdict; every
    number goes to the details. ``tail``: a last plain sentence (e.g. the review prompt).
    """
    assessment = assessment or {}
    plan_plain, plan_details = split_reply(plan_reply)
    judged = str(assessment.get("assessment") or "").strip()
    judged_plain, judged_details = split_reply(judged)
    read = (assessment.get("reading") or {}).get("compliance") is not None
    # A model judge's own words ("looks good") are its verdict, not the agent's reply: details only.
    by_model = str(assessment.get("source") or "").startswith("vlm")
    # The planner's words (what it did, its notes: "I stopped at the sweet spot"), without numbers,
    # then the built-in judge's plain verdict of what the pixels show.
    parts: list[str] = [plan_plain, judged_plain] if (read or judged_plain) and not by_model else [plan_plain]
    if tail:
        parts.append(tail)
    reply = " ".join(p for p in parts if p).strip()
    details: list[str] = []
    if plan_details:
        details.append("Steps: " + plan_details)
    score = assessment.get("score")
    if isinstance(score, (int, float)):
        details.append(f"Score {float(score):.2f}.")
    if by_model and judged:
        details.append(f"Judge: {judged}")
    for extra in (judged_details if not by_model else "", str(assessment.get("details") or "").strip()):
        if extra:
            details.append(extra)
    return reply, " ".join(dict.fromkeys(details))


# -- checks ----------------------------------------------------------------------------

#: Repeats that are English ("had had", "that that") are rare in our replies; none are allowed.
_ALLOWED_REPEATS: frozenset[str] = frozenset()


_REPEAT = re.compile(r"\b([A-Za-z][A-Za-z*']*)\s+(\1)\b", re.IGNORECASE)


def repeated_words(text: str) -> list[str]:
    """Words said twice in a row ("muted muted", "outside outside"), case-insensitive.

    Only whitespace between them counts: "the shadows (shadows +35)" names the
    place and then the op, which is not a doubled word.
    """
    return [f"{m.group(1)} {m.group(2)}" for m in _REPEAT.finditer(text or "")
            if m.group(1).lower() not in _ALLOWED_REPEATS]


#: direction word -> (sign, quantities it speaks of): a value of one of those
#: quantities with the other sign in the same clause contradicts it.
_DIRECTIONS: dict[str, tuple[int, tuple[str, ...]]] = {
    "warmer": (1, ("b*", "temperature", "warmth")), "warming": (1, ("b*", "temperature", "warmth")),
    "cooler": (-1, ("b*", "temperature", "warmth")), "cooling": (-1, ("b*", "temperature", "warmth")),
    "brighter": (1, ("l*", "exposure")), "brightening": (1, ("l*", "exposure")),
    "darker": (-1, ("l*", "exposure")), "darkening": (-1, ("l*", "exposure")),
    "more saturated": (1, ("chroma", "saturation", "vibrance")),
    "more colourful": (1, ("chroma", "saturation", "vibrance")),
    "less saturated": (-1, ("chroma", "saturation", "vibrance")),
    "more muted": (-1, ("chroma", "saturation", "vibrance")), "muted": (-1, ("chroma", "saturation", "vibrance")),
    "desaturated": (-1, ("chroma", "saturation", "vibrance")),
    "more contrast": (1, ("contrast",)), "less contrast": (-1, ("contrast",)),
    "softer contrast": (-1, ("contrast",)),
    "sharper": (1, ("sharpen", "detail")), "crisper": (1, ("sharpen", "detail", "clarity")),
    "more magenta": (1, ("a*", "tint")), "greener": (-1, ("a*", "tint")),
}
_VALUE = re.compile(r"(l\*|a\*|b\*|[a-z]+(?:_[a-z]+)?)\s*(?:=\s*)?([+\-−]\d+(?:\.\d+)?)")


def contradictions(text: str) -> list[str]:
    """Clauses whose direction word disagrees with the sign of a value in the same clause.

    ``"Warmer as asked (b* -2.7)"`` and ``"darker: exposure +6"`` are contradictions;
    ``"Cooler instead of warmer (b* -2.7)"`` is not (the words after "instead of"
    name what was asked, not what happened). In a list of steps each value is read
    against its own words first.
    """
    out = []
    for clause in re.split(r"(?<=[.!?;])\s+|;\s*", (text or "").lower()):
        said = re.sub(r"“[^”]*”|\"[^\"]*\"", "", clause)   # quoted words name the request, not a result
        said = re.sub(r"instead of [a-z* ]+?(?=[(,.;:]|$)", "", said)
        said = re.sub(r"\bnot [a-z]+\b", "", said)          # "not warmer": no claim
        start = 0
        for m in _VALUE.finditer(said):
            name, v = m.groups()
            segment, start = said[start:m.end()], m.end()
            if float(v.replace("−", "-")) == 0.0:                   # "+0.0" claims no direction
                continue
            vsign, base = (-1 if v.startswith(("-", "−")) else 1), name.split("_")[0]
            # a list of steps pairs each value with its own words ("warming the image
            # (temperature +12), cooling the blues (temperature -25)"); a value whose own
            # words name no direction is read against the clause so far
            words = [(sign, w) for w, (sign, names) in _DIRECTIONS.items()
                     if (name in names or base in names)]
            own = [sign for sign, w in words if re.search(rf"\b{re.escape(w)}\b", segment)]
            said_so_far = own or [sign for sign, w in words if re.search(rf"\b{re.escape(w)}\b", said[:m.end()])]
            if any(sign != vsign for sign in said_so_far):
                out.append(clause.strip())
                break
    return list(dict.fromkeys(out))


__all__ = ["compose_reply", "contradictions", "repeated_words", "split_reply"]
