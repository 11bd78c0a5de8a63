"""The op registry: every adjustment Atelier knows, declared exactly once.

Each :class:`Op` carries its name, render stage, range, default and meaning
(what -100 and +100 do). Everything else is derived from this table, in the
spirit of darktable's ``$MIN/$MAX/$DEFAULT/$DESCRIPTION`` introspection:
validation and clamping (:func:`check_value`, :func:`clamp_value`), the JSON
Schemas for an EditState's settings and for a planner's sub-goals
(:func:`settings_json_schema`, :func:`subgoal_json_schema`), the op table
printed by ``python -m pipeline.apply --list-ops`` and fed to planners
(:func:`op_table`), and the review panel's sliders.

All values are integers on the photographer's scale -100..+100 where 0 is the
exact identity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

#: Render stages, in render order.
STAGES: tuple[str, ...] = (
    "white-balance-tone-contrast",
    "color-temperature",
    "hsl",
    "local-editing",
)

#: The eight HSL bands and their centre hues in degrees (HSV hue circle).
BANDS: dict[str, float] = {
    "red": 0.0,
    "orange": 30.0,
    "yellow": 60.0,
    "green": 120.0,
    "aqua": 180.0,
    "blue": 225.0,
    "purple": 270.0,
    "magenta": 315.0,
}

#: Magnitude words mapped onto the -100..100 scale (absolute value ranges).
MAGNITUDES: dict[str, tuple[int, int]] = {
    "very slight": (1, 12),
    "slight": (13, 25),
    "moderate": (26, 45),
    "strong": (46, 65),
    "very strong": (66, 84),
    "extremely intense": (85, 100),
}


class OpError(ValueError):
    """An unknown op name or a value outside an op's range."""


@dataclass(frozen=True)
class Op:
    """One adjustment.

    ``kind`` is ``"pixel"`` for ops that map each pixel independently (they are
    fused into one LUT) and ``"spatial"`` for ops that look at neighbours
    (clarity, dehaze, sharpen).
    """

    name: str
    label: str
    stage: str
    group: str
    description: str
    minus: str
    plus: str
    kind: str = "pixel"
    min: int = -100
    max: int = 100
    default: int = 0
    band: str | None = None

    def check(self, value: Any) -> int:
        """Return ``value`` as an int, or raise :class:`OpError` naming the op."""
        v = _as_number(self.name, value)
        if v != int(v):
            raise OpError(f"{self.name}: expected a whole number, got {value!r}")
        if not self.min <= v <= self.max:
            raise OpError(
                f"{self.name}: {value!r} is outside its range {self.min}..{self.max}"
            )
        return int(v)

    def clamp(self, value: Any) -> int:
        """Round and clamp ``value`` into the op's range."""
        v = _as_number(self.name, value)
        return int(max(self.min, min(self.max, round(v))))


def _as_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpError(f"{name}: expected a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise OpError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def _declare() -> dict[str, Op]:
    tone = "white-balance-tone-contrast"
    ops = [
        Op("exposure", "Exposure", tone, "tone",
           "Overall brightness in exposure stops, applied in linear light (100 = +2 EV).",
           "darker, down to -2 EV", "brighter, up to +2 EV"),
        Op("contrast", "Contrast", tone, "tone",
           "Midtone contrast around middle grey.",
           "flatter, lower contrast", "punchier, higher contrast"),
        Op("highlights", "Highlights", tone, "tone",
           "Brightness of the bright tones only; recovers or lifts highlights.",
           "recover highlights (darker bright areas)", "brighter highlights"),
        Op("shadows", "Shadows", tone, "tone",
           "Brightness of the dark tones only; opens or deepens shadows.",
           "deeper shadows", "open up shadows (brighter dark areas)"),
        Op("whites", "Whites", tone, "tone",
           "The white point: where the brightest tones sit.",
           "lower white point (greyer whites)", "brighter whites, more clipping"),
        Op("blacks", "Blacks", tone, "tone",
           "The black point: where the darkest tones sit.",
           "crushed, deeper blacks", "lifted, faded blacks"),
        Op("temperature", "Temperature", "color-temperature", "white balance",
           "White balance along blue-amber at constant luminance.",
           "cooler (bluer)", "warmer (more amber)"),
        Op("tint", "Tint", "color-temperature", "white balance",
           "White balance along green-magenta at constant luminance.",
           "greener", "more magenta"),
        Op("saturation", "Saturation", "hsl", "color",
           "Colour intensity of every colour alike.",
           "desaturated (-100 = black and white)", "more saturated"),
        Op("vibrance", "Vibrance", "hsl", "color",
           "Colour intensity that spares already-saturated colours and skin.",
           "quieter colours, the dullest first", "livelier dull colours, skin protected"),
    ]
    for band in BANDS:
        ops += [
            Op(f"hue_{band}", f"{band.title()} hue", "hsl", "hsl",
               f"Shifts the hue of {band} colours (100 = half way to the next band).",
               "towards the previous hue", "towards the next hue", band=band),
            Op(f"saturation_{band}", f"{band.title()} saturation", "hsl", "hsl",
               f"Colour intensity of {band} colours only.",
               f"muted {band}s (-100 = grey)", f"more saturated {band}s", band=band),
            Op(f"luminance_{band}", f"{band.title()} luminance", "hsl", "hsl",
               f"Brightness of {band} colours only.",
               f"darker {band}s", f"brighter {band}s", band=band),
        ]
    ops += [
        Op("clarity", "Clarity", "local-editing", "detail",
           "Local midtone contrast (large-radius unsharp mask).",
           "softer, dreamier midtones", "crisper midtone texture", kind="spatial"),
        Op("dehaze", "Dehaze", "local-editing", "detail",
           "Removes or adds atmospheric haze (dark-channel prior).",
           "adds haze", "removes haze, deeper colour", kind="spatial"),
        Op("sharpen", "Sharpen", "local-editing", "detail",
           "Fine-detail sharpening (small-radius unsharp mask); negative softens.",
           "softer fine detail", "sharper fine detail", kind="spatial"),
    ]
    return {op.name: op for op in ops}


#: name -> Op, in render order.
OPS: dict[str, Op] = _declare()
OP_NAMES: tuple[str, ...] = tuple(OPS)
PIXEL_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "pixel")
SPATIAL_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "spatial")


def get_op(name: str) -> Op:
    """Return the op called ``name`` or raise :class:`OpError` listing near names."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        close = [n for n in OPS if isinstance(name, str) and (name in n or n in name)]
        hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
        raise OpError(f"unknown op {name!r}{hint}") from None


def check_value(name: str, value: Any) -> int:
    """Validate one op value; raises :class:`OpError` naming the op."""
    return get_op(name).check(value)


def clamp_value(name: str, value: Any) -> int:
    """Round and clamp one op value into its range."""
    return get_op(name).clamp(value)


def check_settings(settings: Mapping[str, Any], *, clamp: bool = False) -> dict[str, int]:
    """Validate (or clamp) a whole settings mapping; zero values are dropped.

    Every bad entry is reported in one error so a person (or a model being
    re-prompted) can fix them all at once.
    """
    if not isinstance(settings, Mapping):
        raise OpError(f"settings: expected an object of op -> value, got {type(settings).__name__}")
    out: dict[str, int] = {}
    problems: list[str] = []
    for name, value in settings.items():
        try:
            v = clamp_value(name, value) if clamp else check_value(name, value)
        except OpError as exc:
            problems.append(str(exc))
            continue
        if v:
            out[name] = v
    if problems:
        raise OpError("; ".join(problems))
    return {n: out[n] for n in OPS if n in out}


def ops_in_stage(stage: str) -> list[Op]:
    return [o for o in OPS.values() if o.stage == stage]


def op_table(names: Iterable[str] | None = None) -> str:
    """Human-readable op table, one op per line with its name first.

    Used by ``pipeline.apply --list-ops``, the planner prompt and the README.
    """
    rows = []
    for name in names or OPS:
        o = OPS[name]
        rows.append(
            f"{o.name:<22} {o.stage:<28} {o.min:+d}..{o.max:+d}  "
            f"{o.description} (-100: {o.minus}; +100: {o.plus})"
        )
    return "\n".join(rows)


def settings_json_schema() -> dict:
    """JSON Schema for an object of op -> value (unknown ops are not allowed)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            o.name: {
                "type": "integer",
                "minimum": o.min,
                "maximum": o.max,
                "default": o.default,
                "description": o.description,
            }
            for o in OPS.values()
        },
    }


def subgoal_json_schema(mask_schema: dict | None = None) -> dict:
    """JSON Schema for one planner sub-goal: an op, a value and an optional local target.

    ``mask_schema`` is a mask spec schema from ``pipeline.masks.mask_json_schema()``
    (its ``$defs`` are hoisted to the root); when omitted any object is accepted
    for ``target`` and checked later.
    """
    target: dict = {"type": ["object", "null"]}
    defs: dict = {}
    if mask_schema:
        defs = mask_schema.get("$defs", {})
        target = {"anyOf": [{"$ref": mask_schema["$ref"]}, {"type": "null"}]}
    return {
        **({"$defs": defs} if defs else {}),
        "type": "object",
        "required": ["op", "value"],
        "properties": {
            "op": {"type": "string", "enum": list(OPS)},
            "value": {"type": "integer", "minimum": -100, "maximum": 100,
                      "description": "change to apply (mode=add) or the new value (mode=set)"},
            "mode": {"type": "string", "enum": ["add", "set"], "default": "add"},
            "target": target,
            "description": {"type": "string"},
        },
    }


def magnitude_range(word: str) -> tuple[int, int]:
    """Range on the 0..100 scale for a magnitude word ("slight", "strong", ...)."""
    try:
        return MAGNITUDES[word]
    except KeyError:
        raise OpError(f"unknown magnitude {word!r}; expected one of {', '.join(MAGNITUDES)}") from None
