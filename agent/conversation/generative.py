"""Generative requests in chat: remove, fill, expand, regenerate, create — parsed before the edit planner.

:func:`parse_generative` reads one message and returns a :class:`GenerativeRequest`
or None (then the message is an ordinary edit for the planner). The words are
data in ``profiles/generation/_requests.yaml``; the grammar here stays small.

>>> parse_generative("remove the person on the left").kind
'remove'
>>> parse_generative("expand to 16:9").aspect
'16:9'
>>> parse_generative("remove the haze") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

VOCAB_PATH = Path(__file__).resolve().parents[2] / "profiles" / "generation" / "_requests.yaml"
KINDS = ("remove", "fill", "expand", "regenerate", "create")
_ASPECT = re.compile(r"\b(\d{1,2}(?:\.\d+)?)\s*(?::|x|by|/)\s*(\d{1,2}(?:\.\d+)?)\b")
_SEED = re.compile(r"\bseed\s*(?:=|of|to)?\s*(\d{1,15})\b")
_STEPS = re.compile(r"\b(\d{1,3})\s*steps\b|\bsteps\s*(?:=|of|to)?\s*(\d{1,3})\b")
_CFG = re.compile(r"\b(?:cfg|guidance)\s*(?:=|of|to)?\s*(\d{1,2}(?:\.\d+)?)\b")


@dataclass
class GenerativeRequest:
    """``kind`` in KINDS. ``target``: "selection", a mask spec type (subject / face / sky), or "" when the
    message names an object no mask finds (``described``: its words). ``prompt``: what to fill or create."""

    kind: str
    target: str = ""
    described: str = ""
    prompt: str = ""
    aspect: str | None = None
    seed: int | None = None
    overrides: dict = field(default_factory=dict)
    text: str = ""


@lru_cache(maxsize=1)
def vocabulary() -> dict:
    return yaml.safe_load(VOCAB_PATH.read_text(encoding="utf-8"))


def _alt(words) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


def _has(text: str, words) -> str | None:
    m = re.search(rf"(?<![\w-])(?:{_alt(words)})(?![\w-])", text)
    return m.group(0) if m else None


@lru_cache(maxsize=1)
def _adjustment_words() -> tuple[str, ...]:
    """Words that make a request an adjustment: the vocabulary's list plus every op's name and label."""
    from pipeline import ops

    words = set(vocabulary()["adjustment_words"])
    for o in ops.OPS.values():
        words.add(o.name.replace("_", " "))
        words.add(o.label.lower())
    return tuple(sorted(words))


def _is_adjustment(text: str) -> bool:
    """"more contrast", "some warmth", "the haze": an edit for the planner, not something to generate."""
    if re.match(rf"^(?:{_alt(vocabulary()['adjustment_openings'])})\b", text):
        return True
    return _has(text, _adjustment_words()) is not None


def _clean(text: str) -> str:
    text = re.sub(rf"^(?:{_alt(vocabulary()['determiners'])})\s+", "", text.strip(" .!?,;"))
    return text.strip()


def _overrides(text: str) -> tuple[int | None, dict]:
    seed = int(m.group(1)) if (m := _SEED.search(text)) else None
    over: dict = {}
    if m := _STEPS.search(text):
        over["steps"] = int(m.group(1) or m.group(2))
    if m := _CFG.search(text):
        over["cfg"] = float(m.group(1))
    return seed, over


def _target(obj: str, vocab: dict) -> tuple[str, str]:
    """(target, described) for the object words of a remove or fill."""
    if not obj or _has(obj, vocab["selection_words"]) and len(obj.split()) <= 4:
        return "selection", ""
    for spec, words in vocab["described_objects"].items():
        if _has(obj, words):
            return spec, _clean(obj)
    return "", _clean(obj)


def parse_generative(message: str) -> GenerativeRequest | None:
    """The generative request in ``message``, or None when it is an ordinary edit."""
    if not isinstance(message, str):
        return None
    text = " ".join(message.lower().split()).strip(" .!?")
    if not text or text.startswith("/"):
        return None
    v = vocabulary()
    text = re.sub(rf"^(?:{_alt(v['politeness'])})\s+", "", text)
    text = re.sub(rf"^(?:{_alt(v['politeness'][:1])})\s+", "", text)    # "can you please ..."

    if re.match(rf"^(?:{_alt(v['regenerate_phrases'])})(?![\w-])", text):
        seed, over = _overrides(text)
        return GenerativeRequest("regenerate", seed=seed, overrides=over, text=message)

    create = re.match(rf"^(?:{_alt(v['create_verbs'])})\s+(?:me\s+)?(?:a|an)?\s*(?:new\s+)?(?:{_alt(v['create_nouns'])})"
                      r"\s*(?:of|showing|with|:)\s*(?P<prompt>.+)$", text)
    if create is None:
        create = re.match(rf"^(?:new\s+(?:{_alt(v['create_nouns'])}))\s*[:,-]\s*(?P<prompt>.+)$", text)
    if create:
        seed, over = _overrides(create.group("prompt"))
        prompt = _SEED.sub("", create.group("prompt")).strip(" ,")
        return GenerativeRequest("create", prompt=prompt, seed=seed, overrides=over, text=message)

    expand = _has(text, v["expand_verbs"])
    if expand and text.startswith(expand) or (expand and re.match(rf"^(?:{_alt(v['expand_openings'])})\s", text)):
        aspect = None
        if m := _ASPECT.search(text):
            aspect = f"{m.group(1)}:{m.group(2)}"
        elif named := _has(text, list(v["named_aspects"])):
            aspect = v["named_aspects"][named]
        seed, over = _overrides(text)
        return GenerativeRequest("expand", aspect=aspect, seed=seed, overrides=over, text=message)

    fill = re.match(rf"^(?:{_alt(v['fill_verbs'])})\s+(?P<what>.+?)\s+(?:{_alt(v['fill_links'])})\s+"
                    rf"(?P<where>(?:the\s+)?(?:{_alt(v['selection_words'])}))$", text)
    if fill is None:
        fill = re.match(rf"^(?:{_alt(v['fill_place_first'])})\s+(?P<where>(?:the\s+)?(?:{_alt(v['selection_words'])}))"
                        r"\s+with\s+(?P<what>.+)$", text)
    if fill is None:
        fill = re.match(r"^generative fill\s*[:,-]?\s*(?P<what>.+)$", text)
    if fill and _is_adjustment(fill.group("what")):
        return None  # "add more contrast to the selection": a local adjustment
    if fill:
        where = fill.groupdict().get("where") or "selection"
        target, described = _target(where, v)
        seed, over = _overrides(fill.group("what"))
        return GenerativeRequest("fill", target=target or "selection", described=described,
                                 prompt=_SEED.sub("", fill.group("what")).strip(" ,"), seed=seed,
                                 overrides=over, text=message)

    remove = re.match(rf"^(?:{_alt(v['remove_verbs'])})(?![\w-])\s*(?P<obj>.*)$", text)
    if remove:
        obj = re.sub(rf"\s+(?:{_alt(v['object_place_links'])})\s+(?:the\s+)?(?:{_alt(v['object_places'])})$", "",
                     remove.group("obj"))
        if _is_adjustment(obj):
            return None  # "remove the haze": an adjustment, the edit planner's
        target, described = _target(obj, v)
        seed, over = _overrides(obj)
        return GenerativeRequest("remove", target=target, described=described, seed=seed, overrides=over,
                                 text=message)
    return None


__all__ = ["GenerativeRequest", "KINDS", "parse_generative", "vocabulary"]
