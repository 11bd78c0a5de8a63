"""Masks in a person's words: 'the sky', 'blue colours', 'the top of the frame'."""

from __future__ import annotations

from typing import Mapping

from pipeline.masks.specs import SELECTION_TYPES
from pipeline.ops import BANDS


def where_words(target: Mapping | None) -> str:
    """' on the sky' for a local target, '' for the whole photo (' on a local area' for a spec it cannot name)."""
    if not target:
        return ""
    try:
        return f" on {describe_mask(target)}"
    except (KeyError, TypeError, ValueError):
        return " on a local area"


def describe_mask(spec: Mapping) -> str:
    """A short phrase a person understands: 'the sky', 'blue colours', 'top of the frame'."""
    kind = spec.get("type")
    # an inverted combination is "everything but" it ("outside outside the subject ..." never)
    prefix = ("everything but " if kind in ("intersect", "union") else "outside ") if spec.get("invert") else ""
    if kind in ("sky", "face", "skin", "subject"):
        text = {"sky": "the sky", "face": "faces", "skin": "skin", "subject": "the subject"}[kind]
    elif kind == "luminance":
        lo, hi = spec.get("low", 0), spec.get("high", 1)
        text = "the shadows" if hi <= 0.4 else "the highlights" if lo >= 0.6 else f"tones {lo:.0%}-{hi:.0%}"
    elif kind == "color":
        text = f"{_nearest_band(spec.get('hue', 0))} colours"
    elif kind == "shade":
        text = f"the photo's {spec.get('band')}s"
    elif kind == "spot":
        text = f"{spot_thing(str(spec.get('tone')))} in {describe_mask(spec['within'])}"
    elif kind == "gradient":
        (x0, y0), (x1, y1) = spec.get("start", (0.5, 0)), spec.get("end", (0.5, 1))
        if abs(y1 - y0) >= abs(x1 - x0):
            text = "the top of the frame" if y0 < y1 else "the bottom of the frame"
        else:
            text = "the left of the frame" if x0 < x1 else "the right of the frame"
    elif kind == "radial":
        centre = spec.get("center") or (0.5, 0.5)
        centred = max(abs(float(centre[0]) - 0.5), abs(float(centre[1]) - 0.5)) <= 0.05
        text = "the centre of the frame" if centred else _part_of_frame(float(centre[0]), float(centre[1]))
    elif kind in SELECTION_TYPES:
        text = "the selection"
    elif kind == "invert":
        text = "everything but " + describe_mask(spec["mask"])
    else:
        joiner = " and " if kind == "union" else " within "
        bands = {_band_of(m) for m in spec.get("masks", [])}
        if kind == "union" and len(bands) == 1 and None not in bands:
            text = f"the {bands.pop()}s"     # a colour's range and its shade in the photo: one colour, said once
        else:
            text = joiner.join(describe_mask(m) for m in spec.get("masks", []))
    return prefix + text


def spot_thing(tone: str) -> str:
    """What a spot mask of ``tone`` finds, in words: 'the brightest thing', 'the most orange thing'."""
    return {"bright": "the brightest thing", "dark": "the darkest thing"}.get(tone, f"the most {tone} thing")


def _part_of_frame(x: float, y: float) -> str:
    """'the top left of the frame': where an off-centre ellipse is ('a radial area' when near no side)."""
    side = " ".join(w for w in ("top" if y < 0.4 else "bottom" if y > 0.6 else "",
                                "left" if x < 0.4 else "right" if x > 0.6 else "") if w)
    return f"the {side} of the frame" if side else "a radial area"


def _band_of(spec: Mapping) -> str | None:
    """The colour band a colour range or a shade mask stands for (None for any other mask, or one inverted)."""
    if spec.get("invert"):
        return None
    if spec.get("type") == "shade":
        return str(spec.get("band"))
    if spec.get("type") == "color":
        return _nearest_band(float(spec.get("hue", BANDS.get(str(spec.get("band")), 0.0))))
    return None


def _nearest_band(hue: float) -> str:
    """The colour band whose hue is nearest ``hue`` (degrees, the short way round)."""
    return min(BANDS, key=lambda b: min(abs(BANDS[b] - hue), 360 - abs(BANDS[b] - hue)))
