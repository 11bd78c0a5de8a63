"""Per-pixel adjustments as small pure functions over float RGB arrays.

Every function takes ``rgb``: float32 array of shape (..., 3), display-referred
sRGB in 0..1, and an op value on the registry's -100..100 scale, and returns a
new array of the same shape, clipped to 0..1. A value of 0 returns the input
unchanged (exact identity: each function short-circuits on 0).

:func:`apply_pixel_ops` runs the whole per-pixel stack in stage order. It is
the exact reference: the renderer compiles it into a LUT evaluated at grid
points, and the benchmark measures the LUT against it.

>>> import numpy as np
>>> grey = np.full((1, 1, 3), 0.5, np.float32)
>>> float(adjust_exposure(grey, 50)[0, 0, 0]) > 0.5
True
"""

from __future__ import annotations

import functools
import math
from typing import Mapping

import numpy as np

from pipeline.finishing import apply_finishing_pixel_ops
from pipeline.ops import BANDS

# Rec.709 luma weights (for display-referred luma and linear luminance alike).
LUMA = np.array([0.2126, 0.7152, 0.0722], np.float32)
_BAND_NAMES = list(BANDS)
_BAND_CENTRES = np.array([BANDS[b] for b in _BAND_NAMES], np.float32)


# -- transfer functions ------------------------------------------------------

def srgb_to_linear(x: np.ndarray) -> np.ndarray:
    """sRGB-encoded 0..1 -> linear light (IEC 61966-2-1)."""
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def linear_to_srgb(x: np.ndarray) -> np.ndarray:
    """Linear light -> sRGB-encoded, clipped to 0..1."""
    x = np.clip(x, 0.0, 1.0)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(x, 1 / 2.4) - 0.055).astype(np.float32)


def luma(rgb: np.ndarray) -> np.ndarray:
    """Rec.709 luma of display-referred RGB, shape (...)."""
    return rgb @ LUMA


def _scale_luma(rgb: np.ndarray, y: np.ndarray, y_new: np.ndarray) -> np.ndarray:
    """Move each pixel's luma from ``y`` to ``y_new`` keeping its hue.

    Darkening scales towards black, brightening scales towards white, so no
    channel leaves 0..1 and colours never wrap or posterise.
    """
    y = y[..., None]
    y_new = np.clip(y_new, 0.0, 1.0)[..., None]
    down = rgb * (y_new / np.maximum(y, 1e-6))
    up = 1.0 - (1.0 - rgb) * ((1.0 - y_new) / np.maximum(1.0 - y, 1e-6))
    return np.clip(np.where(y_new <= y, down, up), 0.0, 1.0).astype(np.float32)


# -- white-balance-tone-contrast ----------------------------------------------

def adjust_exposure(rgb: np.ndarray, value: float) -> np.ndarray:
    """Exposure in linear light: 100 = +2 EV (x4), -100 = -2 EV (x1/4).

    Bright values roll off smoothly instead of clipping hard, like film
    shoulder, so +2 EV stays photographic rather than flat white.
    """
    if not value:
        return rgb
    gain = np.float32(2.0 ** (value / 50.0))
    lin = srgb_to_linear(rgb) * gain
    if value > 0:
        lin = _shoulder(lin, float(gain))
    return linear_to_srgb(lin)


_KNEE = 0.75


def _shoulder_strength(ratio: float) -> float:
    """Solve a/(1 - e^-a) = ratio for a >= 0 (bisection; ratio >= 1)."""
    if ratio <= 1.0 + 1e-9:
        return 0.0
    lo, hi = 1e-9, 64.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if mid / -np.expm1(-mid) < ratio:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def _shoulder(lin: np.ndarray, gain: float) -> np.ndarray:
    """Compress [knee, gain] onto [knee, 1] smoothly: what was white stays
    white, bright tones roll off like a film shoulder instead of clipping, and
    the slope is continuous at the knee (identity below it)."""
    span_in = gain - _KNEE
    span_out = 1.0 - _KNEE
    a = _shoulder_strength(span_in / span_out)
    if a == 0.0:
        return lin
    t = np.clip((lin - _KNEE) / span_in, 0.0, 1.0)
    rolled = _KNEE + span_out * (-np.expm1(-a * t)) / -np.expm1(-a)
    return np.where(lin > _KNEE, rolled, lin).astype(np.float32)


def _tone_curve(y: np.ndarray, settings: Mapping[str, int]) -> np.ndarray:
    """The combined tone curve on luma (display-referred 0..1).

    Each term is a zone-weighted bump whose slope stays positive over the
    whole -100..100 range, so every curve is monotone (no tone reversals).
    """
    out = y
    h = settings.get("highlights", 0) / 100.0
    if h:
        # Bump on the upper tones, y^3 (1 - y) peaks at y = 3/4; the slope
        # 1 + 0.9h(3y^2 - 4y^3) stays above 0.1 for |h| <= 1.
        out = out + 0.9 * h * out**3 * (1 - out)
    s = settings.get("shadows", 0) / 100.0
    if s:
        # Mirror image on the lower tones: y (1 - y)^3 peaks at y = 1/4.
        out = out + 0.9 * s * out * (1 - out) ** 3
    w = settings.get("whites", 0) / 100.0
    if w:
        # Moves the top end: +100 pushes 0.9 to white (clipping), -100 greys whites.
        out = out + 0.25 * w * out**3
    b = settings.get("blacks", 0) / 100.0
    if b:
        # Moves the bottom end: -100 crushes the darkest tenth, +100 lifts to a matte.
        out = out + 0.15 * b * (1 - out) ** 3
    return np.clip(out, 0.0, 1.0)


_TONE_OPS = ("highlights", "shadows", "whites", "blacks")


@functools.lru_cache(maxsize=512)
def _steepness(c: float) -> float:
    """The sigmoid's steepness ``a`` whose normalised midtone slope, (a/4) / tanh(a/4), is 1 + 0.9 * c."""
    m = 1.0 + 0.9 * c
    if m <= 1.0:
        return 0.0
    u = math.sqrt(3.0 * (m - 1.0))          # u / tanh(u) ~ 1 + u^2 / 3 for small u
    for _ in range(30):                      # Newton on f(u) = u / tanh(u) - m
        f = u / math.tanh(u) - m
        df = 1.0 / math.tanh(u) - u / math.sinh(u) ** 2
        step = f / df
        u -= step
        if abs(step) < 1e-9:
            break
    return 4.0 * u


def contrast_curve(x: np.ndarray, value: float) -> np.ndarray:
    """Sigmoidal contrast around mid-grey (0.5), 0..1 -> 0..1, monotone.

    The midtone slope grows in step with the value: +20 steepens it to 1.18, +100 to 1.9; -100 flattens it
    to about 0.53 (the inverse curve); 0 and 1 stay fixed. (A fixed steepness per value made the slope
    grow with its square: +20 was 1.04, a change nobody sees.)
    """
    c = value / 100.0
    a = _steepness(abs(c))
    s0 = 1.0 / (1.0 + np.exp(0.5 * a))   # sigmoid at x = 0
    s1 = 1.0 / (1.0 + np.exp(-0.5 * a))  # sigmoid at x = 1
    if c > 0:
        return np.clip((1.0 / (1.0 + np.exp(-a * (x - 0.5))) - s0) / (s1 - s0), 0.0, 1.0).astype(np.float32)
    p = np.clip(x * (s1 - s0) + s0, 1e-7, 1 - 1e-7)
    return np.clip(0.5 + np.log(p / (1.0 - p)) / a, 0.0, 1.0).astype(np.float32)


def adjust_tone(rgb: np.ndarray, settings: Mapping[str, int]) -> np.ndarray:
    """Contrast per channel (so punchier also means richer midtone colour, as
    on film), then highlights, shadows, whites and blacks as one luma curve."""
    out = rgb
    if settings.get("contrast", 0):
        out = contrast_curve(out, settings["contrast"])
    if not any(settings.get(k, 0) for k in _TONE_OPS):
        return out
    y = luma(out)
    return _scale_luma(out, y, _tone_curve(y, settings))


# -- color-temperature ---------------------------------------------------------

def white_balance_gains(temperature: float, tint: float) -> np.ndarray:
    """Linear RGB gains for a white-balance shift with constant luminance.

    +100 temperature is roughly a 2000 K warm shift on a daylight scene;
    +100 tint pushes towards magenta (less green).
    """
    t = temperature / 100.0
    m = tint / 100.0
    gains = np.array([1.0 + 0.32 * t, 1.0 - 0.22 * m, 1.0 - 0.45 * t], np.float64)
    gains = np.maximum(gains, 0.05)
    gains /= float(gains @ LUMA.astype(np.float64))  # a neutral grey keeps its luminance
    return gains.astype(np.float32)


def adjust_white_balance(rgb: np.ndarray, temperature: float = 0, tint: float = 0) -> np.ndarray:
    """Temperature (blue..amber) and tint (green..magenta), in linear light."""
    if not temperature and not tint:
        return rgb
    gains = white_balance_gains(temperature, tint)
    lin = srgb_to_linear(rgb) * gains
    # Keep each pixel's hue where a channel is pushed over 1: the brightest
    # channel goes through the exposure shoulder (what was white, times the
    # largest gain, lands on 1; smooth, and the identity as the gains near 1)
    # and the pixel is scaled with it, instead of a hard clip.
    peak = np.maximum(np.maximum(lin[..., 0], lin[..., 1]), lin[..., 2])
    rolled = _shoulder(peak, max(1.0, float(gains.max())))
    lin = lin * (rolled / np.maximum(peak, 1e-6))[..., None]
    return linear_to_srgb(lin)


# -- hsl -------------------------------------------------------------------------

def _planes(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Contiguous channel planes: numpy is several times faster on them than on
    # reductions over a length-3 last axis.
    return (np.ascontiguousarray(rgb[..., 0]), np.ascontiguousarray(rgb[..., 1]),
            np.ascontiguousarray(rgb[..., 2]))


def hue_saturation(rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HSV hue in degrees (0..360) and saturation (0..1)."""
    r, g, b = _planes(rgb)
    mx = np.maximum(np.maximum(r, g), b)
    mn = np.minimum(np.minimum(r, g), b)
    d = mx - mn
    safe = np.maximum(d, 1e-6)
    h = np.where(mx == r, ((g - b) / safe) % 6.0, np.where(mx == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))
    h = np.where(d > 1e-6, h * 60.0, 0.0).astype(np.float32)
    s = np.where(mx > 1e-6, d / np.maximum(mx, 1e-6), 0.0).astype(np.float32)
    return h, s


_NEXT_CENTRE = np.roll(_BAND_CENTRES, -1)
_GAP = ((_NEXT_CENTRE - _BAND_CENTRES) % 360.0).astype(np.float32)
# Bands in ascending centre order wrap: hue >= the last centre belongs between magenta and red.
_EDGES = np.append(_BAND_CENTRES, 360.0)


def _band_pair(hue: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each hue: the band it sits after (index 0..7) and the raised-cosine
    ramp 0..1 towards the next band (0 = on the band's centre)."""
    i = np.clip(np.searchsorted(_EDGES, hue, side="right") - 1, 0, len(_BAND_CENTRES) - 1)
    t = np.clip((hue - _BAND_CENTRES[i]) / _GAP[i], 0.0, 1.0)
    return i, (0.5 - 0.5 * np.cos(np.pi * t)).astype(np.float32)


def band_weights(hue: np.ndarray) -> np.ndarray:
    """Smooth membership of each hue in the eight bands, shape (..., 8), rows sum to 1.

    Raised-cosine weights between neighbouring band centres: a hue exactly on a
    centre belongs to that band only; in between it is shared by the two.
    """
    n = len(_BAND_CENTRES)
    i, ramp = _band_pair(np.asarray(hue, np.float32))
    w = np.zeros(np.shape(hue) + (n,), np.float32)
    np.put_along_axis(w, i[..., None], (1.0 - ramp)[..., None], axis=-1)
    np.put_along_axis(w, ((i + 1) % n)[..., None], ramp[..., None], axis=-1)
    return w


def _band_value(i: np.ndarray, ramp: np.ndarray, per_band: np.ndarray) -> np.ndarray:
    """Per-pixel blend of a per-band quantity between the pixel's two bands."""
    nxt = (i + 1) % len(per_band)
    return per_band[i] * (1.0 - ramp) + per_band[nxt] * ramp


def _gamut_limit(y, cr, cg, cb, factor):
    """A chroma factor <= ``factor`` that keeps y + factor*chroma inside 0..1.

    The room to the gamut edge is a smooth minimum (a 4-norm) over the three
    channels, and boosts approach it through a soft knee: strong saturation
    compresses smoothly instead of clipping or posterising, and the result is
    smooth enough for the LUT to interpolate it accurately.
    """
    up = 1.0 / np.maximum(1.0 - y, 1e-6)
    down = 1.0 / np.maximum(y, 1e-6)
    acc = np.zeros_like(y)
    for c in (cr, cg, cb):
        # How fast this channel approaches its limit per unit of chroma factor.
        u = np.where(c > 0, c * up, -c * down)
        u2 = u * u
        acc += u2 * u2
    kmax = np.maximum(np.power(np.maximum(acc, 1e-12), -0.25), 1.0)  # the input itself is in gamut
    room = kmax - 1.0
    wanted = factor - 1.0
    knee = 0.6 * room
    span = np.maximum(room - knee, 1e-6)
    soft = knee + span * -np.expm1(-np.maximum(wanted - knee, 0.0) / span)
    return np.where(wanted > knee, 1.0 + soft, factor).astype(np.float32)


def _rotate_hue(cr, cg, cb, degrees):
    """Rotate chroma vectors (rgb - luma) about the grey axis by ``degrees``."""
    theta = np.deg2rad(degrees)
    cos, sin = np.cos(theta), np.sin(theta)
    k = np.float32(1 / np.sqrt(3))
    dot = (cr + cg + cb) * k * k * (1 - cos)
    # Rodrigues' rotation about (1, 1, 1)/sqrt(3); cross product written out.
    xr = k * (cb - cg)
    xg = k * (cr - cb)
    xb = k * (cg - cr)
    return cr * cos + xr * sin + dot, cg * cos + xg * sin + dot, cb * cos + xb * sin + dot


def adjust_color(rgb: np.ndarray, settings: Mapping[str, int]) -> np.ndarray:
    """Saturation, vibrance and the eight HSL bands.

    - saturation: chroma x (1 + v); -100 gives greyscale (luma).
    - vibrance: like saturation but weighted by 1.5 (1 - HSV saturation) and
      halved on skin hues (orange band), so strong colours and faces hold.
    - hue_<band>: rotates hues of that band, 100 = half way to the next band.
    - saturation_<band>: chroma of that band only (greys have no chroma to move).
    - luminance_<band>: luma of that band only, weighted by how colourful the
      pixel is, so greys and near-blacks do not move.
    """
    sat = settings.get("saturation", 0) / 100.0
    vib = settings.get("vibrance", 0) / 100.0
    band_vals = np.array(
        [[settings.get(f"{k}_{b}", 0) / 100.0 for k in ("hue", "saturation", "luminance")] for b in BANDS],
        np.float32,
    )
    has_hue, has_sat, has_lum = (bool(np.any(band_vals[:, k])) for k in range(3))
    if not sat and not vib and not (has_hue or has_sat or has_lum):
        return rgb
    r, g, b = _planes(rgb)
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    cr, cg, cb = r - y, g - y, b - y
    hue, s = hue_saturation(rgb)
    factor = np.full(y.shape, 1.0 + sat, np.float32)
    i, ramp = _band_pair(hue)
    if vib:
        orange = list(BANDS).index("orange")
        skin = 1.0 - 0.5 * _band_value(i, ramp, np.eye(len(BANDS), dtype=np.float32)[orange])
        factor = factor * (1.0 + 1.5 * vib * (1.0 - s) * skin)
    if has_sat:
        factor = factor * (1.0 + _band_value(i, ramp, band_vals[:, 1]))
    factor = np.maximum(factor, 0.0)
    if has_hue:
        shift = _band_value(i, ramp, band_vals[:, 0] * _GAP / 2.0)
        cr, cg, cb = _rotate_hue(cr, cg, cb, shift)
        dy = 0.2126 * cr + 0.7152 * cg + 0.0722 * cb  # keep luma exactly
        cr, cg, cb = cr - dy, cg - dy, cb - dy
    factor = _gamut_limit(y, cr, cg, cb, factor)
    out = np.stack([y + cr * factor, y + cg * factor, y + cb * factor], axis=-1)
    out = np.clip(out, 0.0, 1.0)
    if has_lum:
        # Weighted by chroma (max - min), not HSV saturation: a near-black pixel
        # has HSV saturation 1 but no visible colour, and must not jump.
        colourfulness = np.minimum(s * np.maximum(np.maximum(r, g), b) * 4.0, 1.0)
        shift = _band_value(i, ramp, band_vals[:, 2]) * colourfulness
        y_out = luma(out)
        # 100 = a third of the way to white; -100 = a third of the way to black.
        target = np.where(shift >= 0, y_out + (1 - y_out) * shift / 3, y_out * (1 + shift / 3))
        out = _scale_luma(out, y_out, target)
    return out.astype(np.float32)


# -- the whole per-pixel stack ------------------------------------------------------

def apply_pixel_ops(rgb: np.ndarray, settings: Mapping[str, int]) -> np.ndarray:
    """Every per-pixel op of ``settings`` in stage order; exact float math.

    ``rgb``: float32 (..., 3) in 0..1. Spatial ops in ``settings`` are ignored
    here (see :mod:`pipeline.spatial`).
    """
    out = np.asarray(rgb, np.float32)
    out = adjust_exposure(out, settings.get("exposure", 0))
    out = adjust_tone(out, settings)
    out = adjust_white_balance(out, settings.get("temperature", 0), settings.get("tint", 0))
    out = adjust_color(out, settings)
    if any(k in _FINISHING_PIXEL for k in settings):
        out = apply_finishing_pixel_ops(out, settings)
    return out


_FINISHING_PIXEL = frozenset({"tone_curve", "curve_points", "grade_shadows", "grade_midtones", "grade_highlights"})
