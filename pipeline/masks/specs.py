"""Mask specs: validation, canonical form and the JSON schema a model is asked to follow.

A spec is a small JSON object inside an EditState layer (see :mod:`pipeline.masks` for the
types). :func:`normalize_mask_spec` is the one gate: it names the bad field of a malformed
spec and returns canonical specs, which compare equal when they describe the same mask.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from pipeline.ops import BANDS


class MaskSpecError(ValueError):
    """A malformed mask spec: the message names the bad field."""


CONTENT_TYPES = ("face", "skin", "sky", "subject")
_COMBINE = ("invert", "intersect", "union")
#: Masks that refer to pixels a person selected (stored blobs), see Studio.select.
SELECTION_TYPES = ("painted", "selection")
MASK_TYPES = ("luminance", "color", "gradient", "radial") + CONTENT_TYPES + _COMBINE + SELECTION_TYPES

# field -> (lo, hi, default) for numeric fields of each type
_NUMERIC: dict[str, dict[str, tuple[float, float, float]]] = {
    "luminance": {"low": (0, 1, 0.0), "high": (0, 1, 1.0), "softness": (0, 1, 0.1)},
    "color": {"hue": (0, 360, 0.0), "hue_width": (1, 180, 30.0), "min_saturation": (0, 1, 0.12)},
    "radial": {"softness": (0, 1, 0.5)},
    "gradient": {},
    "face": {}, "skin": {}, "sky": {}, "subject": {},
}
_POINTS: dict[str, dict[str, tuple[float, float]]] = {
    "gradient": {"start": (0.5, 0.0), "end": (0.5, 1.0)},
    "radial": {"center": (0.5, 0.5), "radius": (0.3, 0.3)},
}
_COMMON = {"type", "feather", "invert"}


def _num(where: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MaskSpecError(f"{where}: expected a number {lo}..{hi}, got {value!r}")
    if not lo <= value <= hi:
        raise MaskSpecError(f"{where}: {value!r} is outside {lo}..{hi}")
    return float(value)


def _point(where: str, value: Any) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise MaskSpecError(f"{where}: expected [x, y] as fractions of the image, got {value!r}")
    return [round(_num(f"{where}[{i}]", v, -1, 2), 4) for i, v in enumerate(value)]


def normalize_mask_spec(spec: Any, where: str = "mask") -> dict:
    """Validate ``spec`` and return it in canonical form (defaults filled, rounded).

    Canonical specs compare equal when they describe the same mask, so a
    planner that says "the sky" twice edits one layer, not two.
    """
    if not isinstance(spec, Mapping):
        raise MaskSpecError(f"{where}: expected an object with a 'type', got {type(spec).__name__}")
    kind = spec.get("type")
    if kind not in MASK_TYPES:
        raise MaskSpecError(f"{where}.type: expected one of {', '.join(MASK_TYPES)}, got {kind!r}")
    out: dict[str, Any] = {"type": kind}
    if kind == "invert":
        allowed = _COMMON | {"mask"}
        if "mask" not in spec:
            raise MaskSpecError(f"{where}.mask: required for an invert mask")
        out["mask"] = normalize_mask_spec(spec["mask"], f"{where}.mask")
    elif kind in ("intersect", "union"):
        allowed = _COMMON | {"masks"}
        masks = spec.get("masks")
        if not isinstance(masks, list) or not 1 <= len(masks) <= 8:
            raise MaskSpecError(f"{where}.masks: expected a list of 1..8 mask specs")
        out["masks"] = [normalize_mask_spec(m, f"{where}.masks[{i}]") for i, m in enumerate(masks)]
    elif kind == "painted":
        allowed = _COMMON | {"blob"}
        blob = spec.get("blob")
        if not isinstance(blob, str) or len(blob) != 64 or any(c not in "0123456789abcdef" for c in blob):
            raise MaskSpecError(f"{where}.blob: expected the 64-character digest of a stored mask, got {blob!r}")
        out["blob"] = blob
    elif kind == "selection":
        allowed = set(_COMMON)
    else:
        numeric = _NUMERIC[kind]
        points = _POINTS.get(kind, {})
        allowed = _COMMON | set(numeric) | set(points) | ({"band"} if kind == "color" else set())
        if kind == "color" and "band" in spec:
            band = spec["band"]
            if band not in BANDS:
                raise MaskSpecError(f"{where}.band: expected one of {', '.join(BANDS)}, got {band!r}")
            if "hue" in spec:
                raise MaskSpecError(f"{where}: give either 'band' or 'hue', not both")
            out["hue"] = BANDS[band]
        for name, (lo, hi, default) in numeric.items():
            if name in out:
                continue
            out[name] = round(_num(f"{where}.{name}", spec.get(name, default), lo, hi), 4)
        for name, default in points.items():
            out[name] = _point(f"{where}.{name}", spec.get(name, list(default)))
        if kind == "luminance" and out["low"] > out["high"]:
            raise MaskSpecError(f"{where}: low ({out['low']}) is above high ({out['high']})")
        if kind == "radial" and min(out["radius"]) <= 0:
            raise MaskSpecError(f"{where}.radius: both radii must be above 0")
        if kind == "gradient" and out["start"] == out["end"]:
            raise MaskSpecError(f"{where}: start and end are the same point")
    unknown = set(spec) - allowed
    if unknown:
        raise MaskSpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} for a {kind} mask")
    feather = spec.get("feather", 0)
    if feather:
        out["feather"] = round(_num(f"{where}.feather", feather, 0, 100), 2)
    inv = spec.get("invert", False)
    if not isinstance(inv, bool):
        raise MaskSpecError(f"{where}.invert: expected true or false, got {inv!r}")
    if inv:
        out["invert"] = True
    return out


def mask_json_schema() -> dict:
    """JSON Schema of a mask spec (recursive for combinations)."""
    point = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    props: dict[str, Any] = {
        "type": {"type": "string", "enum": list(MASK_TYPES)},
        "feather": {"type": "number", "minimum": 0, "maximum": 100},
        "invert": {"type": "boolean"},
        "band": {"type": "string", "enum": list(BANDS)},
        "start": point, "end": point, "center": point, "radius": point,
        "mask": {"$ref": "#/$defs/mask"},
        "masks": {"type": "array", "items": {"$ref": "#/$defs/mask"}, "minItems": 1, "maxItems": 8},
        "blob": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    }
    for fields in _NUMERIC.values():
        for name, (lo, hi, _) in fields.items():
            props[name] = {"type": "number", "minimum": lo, "maximum": hi}
    mask = {"type": "object", "required": ["type"], "additionalProperties": False, "properties": props}
    return {"$defs": {"mask": mask}, "$ref": "#/$defs/mask"}

