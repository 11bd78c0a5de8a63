"""The op registry: every adjustment Atelier knows, declared exactly once.

Each :class:`Op` carries its name, render stage, range, default and meaning
(what -100 and +100 do). Everything else is derived from this table, in the
spirit of darktable's ``$MIN/$MAX/$DEFAULT/$DESCRIPTION`` introspection:
validation and clamping (:func:`check_value`, :func:`clamp_value`), the JSON
Schemas for an EditState's settings and for a planner's sub-goals
(:func:`settings_json_schema`, :func:`subgoal_json_schema`), the op table
printed by ``python -m pipeline.apply --list-ops`` and fed to planners
(:func:`op_table`), and the review panel's sliders.

Tone and colour values are integers on the photographer's scale -100..+100
where 0 is the exact identity. Geometry and finishing ops (their own modules,
:mod:`pipeline.geometry` and :mod:`pipeline.finishing`) register here too; a
row whose value is not a -100..100 slider says so in ``control``: ``"angle"``
(degrees, fractional), ``"choice"`` (an index into ``choices``, index 0 the
identity; labels such as ``"4:5"`` are accepted on input), ``"toggle"`` (0/1),
``"hue"`` (0..359 degrees, wrapping) or ``"points"`` (a tone curve's
``[[in, out], ...]`` points on 0..255) or ``"region"`` (healing's ``remove``:
not a slider, it acts on a local layer's mask, usually the person's selection).
0 (or no points) is still the identity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from pipeline.finishing import finishing_ops
from pipeline.geometry import geometry_ops

#: Render stages, in render order.
STAGES: tuple[str, ...] = (
    "retouch",
    "white-balance-tone-contrast",
    "color-temperature",
    "hsl",
    "local-editing",
    # Curves and grading are fused into the LUT after HSL; noise reduction runs
    # before the detail ops, vignette and grain last, on the framed picture.
    "finishing",
    # Crop, rotate, flip and straighten frame the picture. They are applied to
    # the source first (they commute with every per-pixel op), listed last.
    "geometry",
)

#: What a control is, for the studio's widgets (see the module docstring).
CONTROLS: tuple[str, ...] = ("slider", "angle", "choice", "toggle", "hue", "points", "region")

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
class Effect:
    """How an op shows in the pixels, as the judge measures it (``agent.judging``).

    ``metric`` names a function of (before, after, where) -> signed change in
    ``unit``; ``full`` is the change expected at value 100 (absolute), or, when
    ``relative`` names a base measurement, the share of that base (e.g. chroma
    +100 saturation moves chroma by about half of what was there). ``noise``
    is the change that means nothing. ``polarity`` -1: the metric runs against
    the op (dehaze lowers the dark channel).
    """

    metric: str
    unit: str
    full: float
    relative: str | None = None
    noise: float = 0.3
    band: str | None = None
    shown_as: str | None = None   # a metric a person reads better, shown in the text instead
    polarity: float = 1.0


@dataclass(frozen=True)
class Op:
    """One adjustment.

    ``kind`` is ``"pixel"`` for ops that map each pixel independently (they are
    fused into one LUT), ``"spatial"`` for ops that look at neighbours
    (clarity, dehaze, sharpen), ``"finish"`` for noise reduction, vignette and
    grain (:mod:`pipeline.finishing`) and ``"geometry"`` for the frame
    (:mod:`pipeline.geometry`). ``"retouch"`` ops (healing, portrait; 0..100,
    :mod:`pipeline.retouch`) run first, on the original's pixels, before any
    tone or colour; ``"region"`` ops act on a local layer's mask only
    (``remove`` fills it from its surroundings) and are refused as global
    settings. ``control`` says what widget edits it; ``step`` is its
    resolution (1 = whole numbers).
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
    control: str = "slider"
    step: float = 1
    choices: tuple = ()
    period: int = 0          # > 0: values wrap modulo this (hues, quarter turns, toggles)
    unit: str = ""
    #: Where the local pipeline looks good on most photos, and what shows beyond it (the engine
    #: profile's parameter_space is filled from these; a model's profile may narrow them).
    sweet_spot: tuple[int, int] | None = None
    why: str = ""
    failure_modes: tuple[str, ...] = ()
    #: What the op moves in the pixels (the judge's measurement), and where its math lives.
    effect: Effect | None = None
    math: str = ""

    @property
    def wrap(self) -> bool:
        return self.period > 0

    def check(self, value: Any) -> Any:
        """Return ``value`` in its stored form (an int, an angle rounded to
        ``step``, or curve points), or raise :class:`OpError` naming the op."""
        if self.control == "points":
            return _check_points(self.name, value)
        if self.control == "choice" and isinstance(value, str):
            return self._choice_index(value)
        if self.control == "toggle" and isinstance(value, bool):
            value = int(value)
        v = _as_number(self.name, value)
        if self.step == 1 and v != int(v):
            raise OpError(f"{self.name}: expected a whole number, got {value!r}")
        if self.step > 1 and v % self.step:
            raise OpError(f"{self.name}: expected a multiple of {self.step:g}, got {value!r}")
        if not self.min <= v <= self.max:
            raise OpError(
                f"{self.name}: {value!r} is outside its range {self.min}..{self.max}{self._unit_hint()}"
            )
        return self._stored(v)

    def check_change(self, value: Any) -> Any:
        """Validate a change (a sub-goal in mode "add"). On an op that starts at 0
        (0..N) a change may go down as far as up, so "less grain" (-15) is valid;
        every other op checks the change against its own range."""
        if self.period and not isinstance(value, (str, bool)):
            v = self.check(value)  # validates; a turn of -90 stays -90 (not 270) as a change
            return int(round(_as_number(self.name, value))) if v is not None else v
        if self.control in ("points", "choice") or isinstance(value, (str, bool)) or self.min != 0:
            return self.check(value)
        v = _as_number(self.name, value)
        if self.step == 1 and v != int(v):
            raise OpError(f"{self.name}: expected a whole number, got {value!r}")
        if self.step > 1 and v % self.step:
            raise OpError(f"{self.name}: expected a multiple of {self.step:g}, got {value!r}")
        if not -self.max <= v <= self.max:
            raise OpError(f"{self.name}: a change of {value!r} is outside -{self.max}..+{self.max}{self._unit_hint()}")
        return int(v) if self.step >= 1 else round(v, 2)

    def clamp(self, value: Any) -> Any:
        """Round and clamp ``value`` into the op's range (wrapping ops wrap)."""
        if self.control == "points":
            return _check_points(self.name, value)
        if self.control == "choice" and isinstance(value, str):
            return self._choice_index(value)
        if self.control == "toggle" and isinstance(value, bool):
            value = int(value)
        v = _as_number(self.name, value)
        if self.wrap:
            return self._stored(v)
        return self._stored(max(self.min, min(self.max, v)))

    def _stored(self, v: float) -> Any:
        if self.period:
            return int(round(v / self.step) * self.step) % self.period
        if self.step == 1:
            return int(round(v))
        digits = max(0, -int(math.floor(math.log10(self.step))))
        r = round(round(v / self.step) * self.step, digits)
        return int(r) if r == int(r) else r

    def _choice_index(self, label: str) -> int:
        wanted = label.strip().lower()
        for i, c in enumerate(self.choices):
            if str(c).lower() == wanted:
                return i
        raise OpError(f"{self.name}: {label!r} is not one of {', '.join(map(str, self.choices))}")

    def _unit_hint(self) -> str:
        if self.control == "choice":
            return f" (choices: {', '.join(f'{i}={c}' for i, c in enumerate(self.choices))})"
        return f" {self.unit}" if self.unit else ""

    def describe_value(self, value: Any) -> str:
        """A stored value as a person reads it: '4:5', '2.5 degrees', 'on', '+20'."""
        if self.control == "choice":
            return str(self.choices[int(value)]) if 0 <= int(value) < len(self.choices) else str(value)
        if self.control == "toggle":
            return "on" if value else "off"
        if self.control == "points":
            return " ".join(f"{a}->{b}" for a, b in value)
        if self.control in ("angle", "hue"):
            return f"{value:g} degrees"
        return f"{value:+d}" if isinstance(value, int) else f"{value:+g}"


def _as_number(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpError(f"{name}: expected a number, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise OpError(f"{name}: expected a finite number, got {value!r}")
    return float(value)


def _check_points(name: str, value: Any) -> tuple:
    """Tone-curve points: 2..16 ``[in, out]`` pairs on 0..255, inputs strictly
    increasing. The identity (no points, or the straight line) is ``()``."""
    if value in (None, 0, (), []):
        return ()
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise OpError(f"{name}: expected a list of [in, out] points on 0..255, got {value!r}")
    pts = []
    for p in value:
        if isinstance(p, str) or not isinstance(p, (list, tuple)) or len(p) != 2:
            raise OpError(f"{name}: each point must be [in, out], got {p!r}")
        a, b = (_as_number(name, x) for x in p)
        if not (0 <= a <= 255 and 0 <= b <= 255):
            raise OpError(f"{name}: point {list(p)!r} is outside 0..255")
        pts.append((int(round(a)), int(round(b))))
    if not 2 <= len(pts) <= 16:
        raise OpError(f"{name}: expected 2 to 16 points, got {len(pts)}")
    if any(b[0] <= a[0] for a, b in zip(pts, pts[1:])):
        raise OpError(f"{name}: point inputs must increase strictly, got {[p[0] for p in pts]}")
    if all(a == b for a, b in pts) and pts[0][0] == 0 and pts[-1][0] == 255:
        return ()
    return tuple(pts)


def _declare() -> dict[str, Op]:
    tone = "white-balance-tone-contrast"
    ops = [
        Op("exposure", "Exposure", tone, "tone",
           "Overall brightness in exposure stops, applied in linear light (100 = +2 EV).",
           "darker, down to -2 EV", "brighter, up to +2 EV",
           sweet_spot=(-60, 60),
           why="beyond +-1.2 EV in one edit highlights clip or shadows turn to noise; 8-bit input has no more latitude",
           failure_modes=("highlight clipping on skies and skin", "crushed shadows when darkening"),
           effect=Effect("lightness", "L*", 22.0),
           math="pipeline.adjust.adjust_exposure"),
        Op("contrast", "Contrast", tone, "tone",
           "Midtone contrast around middle grey.",
           "flatter, lower contrast", "punchier, higher contrast",
           sweet_spot=(-40, 45),
           why="past +45 midtones posterise and skin looks plastic; past -40 the image turns grey and muddy",
           failure_modes=("posterised midtones", "muddy greys"),
           effect=Effect("contrast", "contrast (L* spread)", 0.18, relative="contrast", noise=0.15),
           math="pipeline.adjust.adjust_tone"),
        Op("highlights", "Highlights", tone, "tone",
           "Brightness of the bright tones only; recovers or lifts highlights.",
           "recover highlights (darker bright areas)", "brighter highlights",
           sweet_spot=(-80, 40),
           why="strong recovery is safe; pushing highlights above +40 clips skies",
           failure_modes=("grey", "flat skies when over-recovered", "clipped skies when boosted"),
           effect=Effect("upper_tones", "highlight L*", 7.0),
           math="pipeline.adjust.adjust_tone"),
        Op("shadows", "Shadows", tone, "tone",
           "Brightness of the dark tones only; opens or deepens shadows.",
           "deeper shadows", "open up shadows (brighter dark areas)",
           sweet_spot=(-50, 70),
           why="opening shadows beyond +70 looks like fake HDR with halos at edges",
           failure_modes=("halo at high-contrast edges", "noisy shadows"),
           effect=Effect("lower_tones", "shadow L*", 9.0),
           math="pipeline.adjust.adjust_tone"),
        Op("whites", "Whites", tone, "tone",
           "The white point: where the brightest tones sit.",
           "lower white point (greyer whites)", "brighter whites, more clipping",
           sweet_spot=(-40, 30),
           why="a white point above +30 clips the brightest detail",
           failure_modes=("clipped whites",),
           effect=Effect("top_tones", "white L*", 7.0, noise=0.2),
           math="pipeline.adjust.adjust_tone"),
        Op("blacks", "Blacks", tone, "tone",
           "The black point: where the darkest tones sit.",
           "crushed, deeper blacks", "lifted, faded blacks",
           sweet_spot=(-40, 35),
           why="below -40 shadow detail is crushed; above +35 blacks read as fog",
           failure_modes=("crushed shadow detail", "milky blacks"),
           effect=Effect("bottom_tones", "black L*", 8.0, noise=0.2),
           math="pipeline.adjust.adjust_tone"),
        Op("temperature", "Temperature", "color-temperature", "white balance",
           "White balance along blue-amber at constant luminance.",
           "cooler (bluer)", "warmer (more amber)",
           sweet_spot=(-45, 45),
           why="beyond +-45 the cast reads as a mistake rather than a mood and skin turns orange or grey",
           failure_modes=("orange skin", "blue-grey skin"),
           # judged on the grey pixels' balance (exposure and saturation barely move it), shown as b*
           effect=Effect("warm_balance", "warm/cool balance", 0.65, noise=0.01, shown_as="warmth"),
           math="pipeline.adjust.adjust_white_balance"),
        Op("tint", "Tint", "color-temperature", "white balance",
           "White balance along green-magenta at constant luminance.",
           "greener", "more magenta",
           sweet_spot=(-25, 25),
           why="skin shows tint first; beyond +-25 it turns green or magenta",
           failure_modes=("green or magenta skin",),
           # judged on the grey pixels' balance, shown as a*
           effect=Effect("magenta_balance", "green/magenta balance", 0.22, noise=0.01, shown_as="tint"),
           math="pipeline.adjust.adjust_white_balance"),
        Op("saturation", "Saturation", "hsl", "color",
           "Colour intensity of every colour alike.",
           "desaturated (-100 = black and white)", "more saturated",
           sweet_spot=(-50, 40),
           why="saturation beyond +40 posterises skin and bands smooth colour (skies); -100 is a deliberate black and white",
           failure_modes=("posterised skin", "banding in skies", "neon colours"),
           effect=Effect("chroma", "chroma", 0.6, relative="chroma"),
           math="pipeline.adjust.adjust_color"),
        Op("vibrance", "Vibrance", "hsl", "color",
           "Colour intensity that spares already-saturated colours and skin.",
           "quieter colours, the dullest first", "livelier dull colours, skin protected",
           sweet_spot=(-60, 60),
           why="vibrance protects saturated colours, so it tolerates more than saturation before skin suffers",
           failure_modes=("oversaturated foliage",),
           effect=Effect("chroma", "chroma", 0.7, relative="muted_chroma", noise=0.2),
           math="pipeline.adjust.adjust_color"),
    ]
    # Band saturations with a sweet spot of their own (skin lives in the oranges, skies in the blues).
    band_spots = {"orange": dict(sweet_spot=(-30, 30),
                              why="orange carries skin tones; beyond +-30 skin looks sunburnt or sickly",
                              failure_modes=("sunburnt or grey skin",)),
                  "blue": dict(sweet_spot=(-50, 45),
                              why="skies band first when blue is pushed past +45",
                              failure_modes=("banding in skies",))}
    for band in BANDS:
        ops += [
            Op(f"hue_{band}", f"{band.title()} hue", "hsl", "hsl",
               f"Shifts the hue of {band} colours (100 = half way to the next band).",
               "towards the previous hue", "towards the next hue", band=band,
               effect=Effect("band_hue", f"{band} hue (degrees)", 12.0, noise=0.5, band=band),
               math="pipeline.adjust.adjust_color"),
            Op(f"saturation_{band}", f"{band.title()} saturation", "hsl", "hsl",
               f"Colour intensity of {band} colours only.",
               f"muted {band}s (-100 = grey)", f"more saturated {band}s", band=band,
               effect=Effect("band_chroma", f"{band} chroma", 0.45, relative="band_chroma", noise=0.3, band=band),
               math="pipeline.adjust.adjust_color", **band_spots.get(band, {})),
            Op(f"luminance_{band}", f"{band.title()} luminance", "hsl", "hsl",
               f"Brightness of {band} colours only.",
               f"darker {band}s", f"brighter {band}s", band=band,
               effect=Effect("band_lightness", f"{band} L*", 12.0, relative="band_headroom", noise=0.3, band=band),
               math="pipeline.adjust.adjust_color"),
        ]
    ops += [
        Op("clarity", "Clarity", "local-editing", "detail",
           "Local midtone contrast (large-radius unsharp mask).",
           "softer, dreamier midtones", "crisper midtone texture", kind="spatial",
           sweet_spot=(-50, 50),
           why="large-radius local contrast halos along high-contrast edges beyond +-50",
           failure_modes=("halos", "crunchy texture", "smeared skin when negative"),
           effect=Effect("texture", "texture", 0.45, relative="texture", noise=0.05),
           math="pipeline.spatial.clarity"),
        Op("dehaze", "Dehaze", "local-editing", "detail",
           "Removes or adds atmospheric haze (dark-channel prior).",
           "adds haze", "removes haze, deeper colour", kind="spatial",
           sweet_spot=(-30, 50),
           why="past +50 the dark-channel prior darkens skies and halos edges; below -30 haze looks like a lens fault",
           failure_modes=("dark halos around edges", "grey veil"),
           effect=Effect("haze", "haze (dark channel %)", 8.0, noise=0.2, polarity=-1.0),
           math="pipeline.spatial.dehaze"),
        Op("sharpen", "Sharpen", "local-editing", "detail",
           "Fine-detail sharpening (small-radius unsharp mask); negative softens.",
           "softer fine detail", "sharper fine detail", kind="spatial",
           sweet_spot=(-40, 60),
           why="beyond +60 the small-radius unsharp mask shows white halos and amplifies noise",
           failure_modes=("white halos", "noise"),
           # fine detail in log units: 100 * ln(after / before); +69 = twice the detail energy
           effect=Effect("detail", "fine detail", 110.0, noise=3.0),
           math="pipeline.spatial.sharpen"),
    ]

    ops = _retouch_ops() + ops + finishing_ops(Op) + geometry_ops(Op)
    return {op.name: op for op in ops}


def _retouch_ops() -> list[Op]:
    """Healing and portrait ops (stage "retouch"): 0 = untouched, 100 = the strongest sensible amount."""
    def r(name, label, group, description, plus, kind="retouch"):
        return Op(name, label, "retouch", group, description, "no change", plus, kind=kind, min=0, max=100,
                  control="region" if kind == "region" else "slider")

    return [
        r("dust_removal", "Dust removal", "healing",
          "Finds and heals dust spots in smooth areas (sky, walls, studio backdrops); "
          "higher values also catch fainter and larger spots.",
          "every spot that can be told from the scene healed"),
        r("blemish_removal", "Blemish removal", "healing",
          "Finds and heals small blemishes inside the skin of the people found in the photo.",
          "fainter and larger blemishes healed too"),
        r("red_eye", "Red-eye removal", "healing",
          "Neutralises red pupils where eyes are found reliably.",
          "red pupils fully neutral and dark"),
        r("skin_smoothing", "Skin smoothing", "portrait",
          "Smooths skin blotches while keeping pore texture (frequency separation on the skin mask).",
          "strongly smoothed skin, pores kept"),
        r("even_skin_tone", "Even skin tone", "portrait",
          "Evens out redness and colour patches in the skin (lightness untouched).",
          "one even skin colour"),
        r("teeth_whitening", "Teeth whitening", "portrait",
          "Whitens teeth (less yellow, a little brighter) where a mouth is found reliably.",
          "clean white teeth"),
        r("eye_brightening", "Eye brightening", "portrait",
          "Brightens the eyes (iris and whites) where they are found reliably.",
          "clearly brighter eyes"),
        r("remove", "Remove", "healing",
          "Fills a local layer's region (a painted or clicked selection) from its surroundings: "
          "inpainting for small areas, a patch-based fill for larger ones. Not a slider; local layers only.",
          "the region fully replaced", kind="region"),
    ]


#: name -> Op, in render order.
OPS: dict[str, Op] = _declare()
OP_NAMES: tuple[str, ...] = tuple(OPS)
PIXEL_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "pixel")
SPATIAL_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "spatial")
FINISH_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "finish")
GEOMETRY_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "geometry")
#: Ops edited on the -100..100 slider scale (the original tone and colour table).
SLIDER_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.control == "slider" and (o.min, o.max) == (-100, 100))
#: Healing and portrait ops, run first on the original (pipeline.retouch).
RETOUCH_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "retouch")
#: Ops that act on a local layer's mask only (not sliders, refused as global settings).
REGION_OPS: tuple[str, ...] = tuple(n for n, o in OPS.items() if o.kind == "region")


def get_op(name: str) -> Op:
    """Return the op called ``name`` or raise :class:`OpError` listing near names."""
    try:
        return OPS[name]
    except (KeyError, TypeError):
        close = [n for n in OPS if isinstance(name, str) and (name in n or n in name)]
        hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
        raise OpError(f"unknown op {name!r}{hint}") from None


def check_value(name: str, value: Any) -> Any:
    """Validate one op value; raises :class:`OpError` naming the op."""
    return get_op(name).check(value)


def clamp_value(name: str, value: Any) -> Any:
    """Round and clamp one op value into its range."""
    return get_op(name).clamp(value)


def check_settings(settings: Mapping[str, Any], *, clamp: bool = False) -> dict[str, Any]:
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


def op_table(names: Iterable[str] | None = None) -> str:
    """Human-readable op table, one op per line with its name first.

    Used by ``pipeline.apply --list-ops``, the planner prompt and the README.
    """
    rows = []
    for name in names or OPS:
        o = OPS[name]
        if o.control == "slider" and (o.min, o.max) == (-100, 100):
            ends = f"(-100: {o.minus}; +100: {o.plus})"
        elif o.control == "choice":
            ends = f"(choices: {', '.join(f'{i}={c}' for i, c in enumerate(o.choices))})"
        elif o.minus:
            ends = f"({o.min}: {o.minus}; {o.max}: {o.plus})"
        else:
            ends = f"({o.max}: {o.plus})" if o.plus else ""
        rng = "points" if o.control == "points" else f"{o.min:+d}..{o.max:+d}"
        rows.append(f"{o.name:<22} {o.stage:<28} {rng}  {o.description} {ends}".rstrip())
    return "\n".join(rows)


def settings_json_schema() -> dict:
    """JSON Schema for an object of op -> value (unknown ops are not allowed)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "properties": {o.name: value_json_schema(o) for o in OPS.values()},
    }


def value_json_schema(o: Op) -> dict:
    """JSON Schema of one op's stored value."""
    if o.control == "points":
        point = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255},
                 "minItems": 2, "maxItems": 2}
        return {"type": "array", "items": point, "maxItems": 16, "description": o.description}
    out = {"type": "integer" if o.step == 1 else "number", "minimum": o.min, "maximum": o.max,
           "default": o.default, "description": o.description}
    if o.control == "choice":
        out["description"] = f"{o.description} Choices: " + ", ".join(f"{i}={c}" for i, c in enumerate(o.choices))
    return out


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
    # Each op's own range: one if/then per distinct range (most ops share -100..100).
    ranges: dict[tuple, list[str]] = {}
    for o in OPS.values():
        if o.control != "points":
            # a change (mode add) may go below 0 on a 0..N op ("less grain")
            lo = o.min if o.min < 0 or o.control == "choice" else -(o.max - o.min)
            ranges.setdefault(("integer" if o.step >= 1 else "number", lo, o.max), []).append(o.name)
    per_op = [{"if": {"properties": {"op": {"enum": names}}},
               "then": {"properties": {"value": {"type": t, "minimum": lo, "maximum": hi}}}}
              for (t, lo, hi), names in ranges.items()]
    return {
        **({"$defs": defs} if defs else {}),
        "type": "object",
        "required": ["op", "value"],
        "allOf": per_op,
        "properties": {
            "op": {"type": "string", "enum": list(OPS)},
            "value": {"type": "number", "minimum": min(-100, *(o.min for o in OPS.values())),
                      "maximum": max(100, *(o.max for o in OPS.values())),
                      "description": "change to apply (mode=add) or the new value (mode=set); whole "
                                     "numbers except angles"},
            "mode": {"type": "string", "enum": ["add", "set"], "default": "add"},
            "target": target,
            "description": {"type": "string"},
        },
    }
