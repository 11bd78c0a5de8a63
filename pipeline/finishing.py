"""Finishing: tone curves, colour grading, noise reduction, vignette and grain.

Per-pixel parts (the tone curve and colour grading) are plain float math on
``(..., 3)`` RGB in 0..1, run by :func:`pipeline.adjust.apply_pixel_ops` after
HSL, so the renderer fuses them into its one LUT. Noise reduction runs on the
developed picture before the detail ops; vignette and grain run last, on the
framed picture, so the vignette is centred on the crop and grain particles are
the same share of the frame at every render size.

Everything is deterministic: grain is seeded from its own settings, so
``render(original, state)`` stays a pure function and the proxy, the export
and a re-render all show the same grain.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any, Mapping

import cv2
import numpy as np

#: Named tone curves: (input, output) points on 0..255, monotone cubic between.
CURVES: dict[str, tuple[tuple[int, int], ...]] = {
    "none": ((0, 0), (255, 255)),
    "s-curve": ((0, 0), (64, 52), (128, 128), (192, 204), (255, 255)),
    "strong-s": ((0, 0), (64, 40), (128, 128), (192, 216), (255, 255)),
    "soft-s": ((0, 0), (64, 59), (128, 128), (192, 198), (255, 255)),
    "faded-matte": ((0, 34), (64, 78), (128, 132), (192, 194), (255, 238)),
    "film": ((0, 14), (64, 58), (128, 130), (192, 203), (255, 247)),
    "lighten-midtones": ((0, 0), (128, 150), (255, 255)),
    "darken-midtones": ((0, 0), (128, 108), (255, 255)),
}
CURVE_NAMES: tuple[str, ...] = tuple(CURVES)
#: Tonal ranges of colour grading.
RANGES: tuple[str, ...] = ("shadows", "midtones", "highlights")
#: Chroma added at amount 100, as a share of a full-saturation hue's offset from grey.
GRADE_STRENGTH = 0.28
#: Darkening of the frame's corners at vignette 100 (share of their brightness).
VIGNETTE_STRENGTH = 0.8
#: Grain standard deviation at grain 100 (8-bit levels, in the midtones).
GRAIN_SIGMA = 14.0


def finishing_ops(Op) -> list:
    """The finishing rows of the op registry (``Op`` is :class:`pipeline.ops.Op`)."""
    f = "finishing"
    rows = [
        Op("tone_curve", "Tone curve", f, "curve",
           "A named tone curve on every channel: " + ", ".join(CURVE_NAMES[1:]) + ".",
           "", "", min=0, max=len(CURVE_NAMES) - 1, control="choice", choices=CURVE_NAMES),
        Op("curve_points", "Curve points", f, "curve",
           "A point curve [[in, out], ...] on 0..255 (2-16 points, inputs increasing), after the named curve.",
           "", "", min=0, max=255, control="points"),
    ]
    for r in RANGES:
        rows += [
            Op(f"grade_{r}_hue", f"{r.title()} grade hue", f, "color grading",
               f"Hue of the colour added to the {r} (degrees: 0 red, 30 orange, 60 yellow, 120 green, "
               f"190 teal, 220 blue, 300 magenta).", "", "", min=0, max=359, control="hue", period=360,
               unit="degrees"),
            Op(f"grade_{r}", f"{r.title()} grade", f, "color grading",
               f"How much of the grade hue is added to the {r} (luminance kept).",
               "", f"strongly tinted {r}", min=0, max=100),
        ]
    rows += [
        Op("noise_reduction", "Noise reduction", f, "detail",
           "Luminance noise reduction (edge-preserving guided filter).",
           "", "smooth, grain-free tones", kind="finish", min=0, max=100),
        Op("color_noise_reduction", "Colour noise reduction", f, "detail",
           "Removes coloured speckles (chroma smoothed at reduced resolution).",
           "", "no colour speckles", kind="finish", min=0, max=100),
        Op("vignette", "Vignette", f, "effects",
           "Darkens (+) or lightens (-) the edges of the frame; the centre keeps its brightness.",
           "lighter edges", "darker edges", kind="finish"),
        Op("vignette_midpoint", "Vignette midpoint", f, "effects",
           "Where the vignette starts (0 = half way to the corners).",
           "starts near the centre", "only the far corners", kind="finish"),
        Op("vignette_feather", "Vignette feather", f, "effects",
           "Softness of the vignette's edge (0 = a natural falloff).",
           "a hard edge", "a very gradual falloff", kind="finish"),
        Op("grain", "Grain", f, "effects",
           "Film grain (monochrome, strongest in the midtones; the same grain for the same settings).",
           "", "heavy grain", kind="finish", min=0, max=100),
        Op("grain_size", "Grain size", f, "effects",
           "Grain particle size (0 = fine 35 mm grain).", "finer grain", "coarser grain", kind="finish"),
    ]
    return rows


# -- per-pixel: tone curve and grading (fused into the LUT) -------------------------------

def _monotone_cubic(points: tuple[tuple[int, int], ...], n: int = 4097) -> np.ndarray:
    """Fritsch-Carlson monotone cubic through ``points`` (0..255), sampled at n points of 0..1."""
    x = np.array([p[0] for p in points], np.float64) / 255.0
    y = np.array([p[1] for p in points], np.float64) / 255.0
    t = np.linspace(0.0, 1.0, n)
    if len(x) == 2:
        return np.clip(np.interp(t, x, y), 0, 1).astype(np.float32)
    d = np.diff(y) / np.diff(x)
    m = np.empty_like(y)
    m[0], m[-1] = d[0], d[-1]
    for i in range(1, len(x) - 1):
        m[i] = 0.0 if d[i - 1] * d[i] <= 0 else 2.0 / (1.0 / d[i - 1] + 1.0 / d[i])
    i = np.clip(np.searchsorted(x, t, side="right") - 1, 0, len(x) - 2)
    h = x[i + 1] - x[i]
    s = (t - x[i]) / h
    h00, h10 = (1 + 2 * s) * (1 - s) ** 2, s * (1 - s) ** 2
    h01, h11 = s * s * (3 - 2 * s), s * s * (s - 1)
    out = h00 * y[i] + h10 * h * m[i] + h01 * y[i + 1] + h11 * h * m[i + 1]
    out = np.where(t < x[0], y[0], np.where(t > x[-1], y[-1], out))
    return np.clip(out, 0, 1).astype(np.float32)


@lru_cache(maxsize=64)
def curve_table(points: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The curve through ``points`` as a 4097-entry table over 0..1 (cached)."""
    return _monotone_cubic(points)


def apply_curve(rgb: np.ndarray, points: tuple[tuple[int, int], ...]) -> np.ndarray:
    """Every channel through the monotone curve of ``points`` (0..255 pairs)."""
    table = curve_table(tuple(tuple(p) for p in points))
    idx = np.clip(rgb, 0.0, 1.0) * (len(table) - 1)
    lo = np.floor(idx).astype(np.int32)
    hi = np.minimum(lo + 1, len(table) - 1)
    w = (idx - lo).astype(np.float32)
    return table[lo] * (1.0 - w) + table[hi] * w


def _hue_direction(hue: float) -> np.ndarray:
    """RGB offset from grey of a full-saturation ``hue`` (degrees), with zero luma."""
    h = (hue % 360.0) / 60.0
    x = 1.0 - abs(h % 2.0 - 1.0)
    table = [(1, x, 0), (x, 1, 0), (0, 1, x), (0, x, 1), (x, 0, 1), (1, 0, x)]
    rgb = np.array(table[int(h) % 6], np.float32)
    return rgb - np.float32(0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2])


def apply_grade(rgb: np.ndarray, settings: Mapping[str, Any]) -> np.ndarray:
    """Adds hue to shadows, midtones and highlights (weights (1-L)^2, 2L(1-L), L^2 of luma)."""
    y = 0.2126 * rgb[..., 0] + 0.7152 * rgb[..., 1] + 0.0722 * rgb[..., 2]
    weights = {"shadows": (1.0 - y) ** 2, "midtones": 2.0 * y * (1.0 - y), "highlights": y * y}
    out = rgb
    for r in RANGES:
        amount = float(settings.get(f"grade_{r}", 0))
        if not amount:
            continue
        d = _hue_direction(float(settings.get(f"grade_{r}_hue", 0))) * np.float32(GRADE_STRENGTH * amount / 100.0)
        out = out + weights[r][..., None].astype(np.float32) * d
    return np.clip(out, 0.0, 1.0).astype(np.float32)


def apply_finishing_pixel_ops(rgb: np.ndarray, settings: Mapping[str, Any]) -> np.ndarray:
    """Tone curve (named, then points), then colour grading; float RGB 0..1 in and out."""
    out = rgb
    curve = int(settings.get("tone_curve", 0) or 0)
    if 0 < curve < len(CURVE_NAMES):
        out = apply_curve(out, CURVES[CURVE_NAMES[curve]])
    points = settings.get("curve_points") or ()
    if points:
        out = apply_curve(out, tuple(points))
    if any(settings.get(f"grade_{r}", 0) for r in RANGES):
        out = apply_grade(out, settings)
    return out


# -- spatial: noise reduction -------------------------------------------------------------------

def reduce_noise(img: np.ndarray, luminance: float = 0, color: float = 0) -> np.ndarray:
    """Luminance (0..100) and colour (0..100) noise reduction of a uint8 RGB image.

    Luminance: a self-guided filter on Y (radius ~ long side / 900, edges kept;
    ``eps`` grows with the amount). Colour: Cr and Cb smoothed on a quarter-size
    copy and blended back by the amount (chroma noise is blotchy and low in detail).
    """
    if not luminance and not color:
        return img
    ycc = cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb)
    y, cr, cb = cv2.split(ycc)
    long_side = max(img.shape[:2])
    if luminance:
        radius = max(2, round(long_side / 900))
        eps = (luminance / 100.0 * 25.0) ** 2
        y = cv2.ximgproc.guidedFilter(y, y, radius, eps)
    if color:
        h, w = cr.shape
        s = max(1, round(long_side / 960))
        small = cv2.resize(cv2.merge([cr, cb]), (max(1, w // (4 * s)), max(1, h // (4 * s))), interpolation=cv2.INTER_AREA)
        small = cv2.GaussianBlur(small, (0, 0), 0.5 + 2.0 * color / 100.0)
        smooth = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
        a = color / 100.0
        mixed = cv2.addWeighted(cv2.merge([cr, cb]), 1.0 - a, smooth, a, 0)
        cr, cb = cv2.split(mixed)
    return cv2.cvtColor(cv2.merge([y, cr, cb]), cv2.COLOR_YCrCb2RGB)


# -- after the frame: vignette and grain ------------------------------------------------------

def vignette_gain(size: tuple[int, int], amount: float, midpoint: float = 0, feather: float = 0) -> np.ndarray:
    """Per-pixel weight 0..1 of the vignette at ``size`` (height, width): 0 at the centre.

    Distance is elliptical (the frame's own aspect), 1 at the corners. The
    falloff starts at ``mid - width/2`` (never before 0.1 of the way out, so
    the centre is untouched) and rises smoothly.
    """
    h, w = size
    sh, sw = max(2, min(h, 256)), max(2, min(w, 256))
    ys = (np.arange(sh, dtype=np.float32) + 0.5) / sh * 2.0 - 1.0
    xs = (np.arange(sw, dtype=np.float32) + 0.5) / sw * 2.0 - 1.0
    d = np.sqrt(xs[None, :] ** 2 + ys[:, None] ** 2) / np.sqrt(2.0)
    mid = 0.62 + 0.28 * midpoint / 100.0
    width = 0.55 + 0.4 * feather / 100.0
    lo = max(0.1, mid - width / 2.0)
    hi = max(lo + 0.05, mid + width / 2.0)
    t = np.clip((d - lo) / (hi - lo), 0.0, 1.0)
    weight = (t * t * (3.0 - 2.0 * t)).astype(np.float32)
    if (sh, sw) != (h, w):
        weight = cv2.resize(weight, (w, h), interpolation=cv2.INTER_LINEAR)
    return weight


def vignette(img: np.ndarray, amount: float, midpoint: float = 0, feather: float = 0) -> np.ndarray:
    """Darkens (+) or lightens (-) the frame's edges; pixels where the weight is 0 are unchanged."""
    if not amount:
        return img
    m = vignette_gain(img.shape[:2], amount, midpoint, feather) * np.float32(VIGNETTE_STRENGTH * abs(amount) / 100.0)
    target = np.zeros_like(img) if amount > 0 else np.full_like(img, 255)
    return cv2.blendLinear(img, target, 1.0 - m, m)


def grain_seed(size: float) -> int:
    """Seed of the grain pattern: a function of the grain size only, so the grain
    stays put while the amount or any other slider moves, and a state always
    renders the same."""
    return int.from_bytes(hashlib.sha256(f"grain:{size:g}".encode()).digest()[:8], "little")


@lru_cache(maxsize=3)
def grain_field(size: float, height: int, width: int) -> np.ndarray:
    """Unit-spread grain noise for an image of ``height x width`` (cached: a proxy
    re-render with new settings reuses it)."""
    particle = max(height, width) / 2000.0 * 2.0 ** (1.5 * size / 100.0)
    f = max(1.0, particle)
    gh, gw = max(2, round(height / f)), max(2, round(width / f))
    rng = np.random.Generator(np.random.PCG64(grain_seed(size)))
    noise = rng.standard_normal((gh, gw), dtype=np.float32)
    if (gh, gw) != (height, width):
        noise = cv2.resize(noise, (width, height), interpolation=cv2.INTER_LINEAR)
        noise *= np.float32(1.0 / max(1e-6, float(np.sqrt((noise[::7, ::7] ** 2).mean()))))
    if particle < 1.0:
        # Finer than a pixel (a small proxy): the visible spread of averaged particles.
        noise *= np.float32(np.sqrt(particle))
    noise.flags.writeable = False
    return noise


# Grain weight per 8-bit luma: strongest in the midtones, a little in shadows and highlights.
_GRAIN_WEIGHT = (0.3 + 0.7 * (1.0 - (np.arange(256, dtype=np.float32) / 127.5 - 1.0) ** 2)).reshape(256, 1)


def grain(img: np.ndarray, amount: float, size: float = 0) -> np.ndarray:
    """Monochrome film grain: ``amount`` 0..100, ``size`` -100..100 (0 = fine 35 mm grain).

    Particles are ``long side / 2000 * 2**(1.5 * size / 100)`` pixels: grain is
    the same share of the frame in a proxy and in the export. White noise is
    drawn at the particle scale (seeded by :func:`grain_seed`), upsampled,
    normalised to unit spread and added to every channel alike.
    """
    if not amount:
        return img
    noise = grain_field(float(size), *img.shape[:2])
    weight = cv2.LUT(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY), _GRAIN_WEIGHT * np.float32(GRAIN_SIGMA * amount / 100.0))
    delta = cv2.multiply(noise, weight)
    delta = np.rint(delta).astype(np.int16)
    return cv2.add(img, cv2.merge([delta, delta, delta]), dtype=cv2.CV_8U)


def apply_denoise(img: np.ndarray, settings: Mapping[str, Any]) -> np.ndarray:
    return reduce_noise(img, float(settings.get("noise_reduction", 0)), float(settings.get("color_noise_reduction", 0)))


def apply_finish(img: np.ndarray, settings: Mapping[str, Any]) -> np.ndarray:
    """Vignette, then grain (grain sits on top of everything, as on film)."""
    out = img
    if settings.get("vignette"):
        out = vignette(out, float(settings["vignette"]), float(settings.get("vignette_midpoint", 0)),
                       float(settings.get("vignette_feather", 0)))
    if settings.get("grain"):
        out = grain(out, float(settings["grain"]), float(settings.get("grain_size", 0)))
    return out
