"""Geometric and per-pixel masks, and the soft ramps and resampling every mask shares.

Gradients and radials are analytic (the same spec gives the same mask at any size);
luminance and colour masks are computed per pixel of a uint8 RGB image. All return
float32 (h, w) arrays in 0..1.
"""

from __future__ import annotations

import cv2
import numpy as np


def smoothstep(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 below ``lo``, 1 above ``hi``, a smooth (C1) ramp between; new float32 array."""
    if hi <= lo:
        return (np.asarray(x) >= lo).astype(np.float32)
    t = (np.asarray(x, dtype=np.float32) - np.float32(lo)) * np.float32(1.0 / (hi - lo))
    return smooth_unit(t)


def smooth_unit(t: np.ndarray) -> np.ndarray:
    """In place: clip ``t`` (float32) to 0..1 and return 3t^2 - 2t^3."""
    np.clip(t, 0.0, 1.0, out=t)
    sq = t * t
    t *= np.float32(-2.0)
    t += np.float32(3.0)
    t *= sq
    return t


def resize_mask(mask: np.ndarray, height: int, width: int) -> np.ndarray:
    """A new float32 mask at (height, width); area-averaged when shrinking."""
    h, w = mask.shape
    if (h, w) == (height, width):
        return np.array(mask, dtype=np.float32)
    interp = cv2.INTER_AREA if height < h and width < w else cv2.INTER_LINEAR
    return cv2.resize(mask, (width, height), interpolation=interp)


def fit_long_side(img: np.ndarray, side: int) -> np.ndarray:
    """``img`` resized so its long side is ``side`` (area-averaged down, bilinear up)."""
    h, w = img.shape[:2]
    scale = side / max(h, w)
    if scale == 1.0:
        return img
    interp = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
    return cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=interp)


def hue_sat_val(img: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HSV of a uint8 RGB image: hue in degrees 0..360, saturation and value 0..1 (float32)."""
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
    lut = np.arange(256, dtype=np.float32)
    return (lut * np.float32(360.0 / 256.0))[hsv[..., 0]], (lut / 255.0)[hsv[..., 1]], (lut / 255.0)[hsv[..., 2]]


def hue_weight(hue: np.ndarray, centre: float, width: float) -> np.ndarray:
    """Full weight within ``width/2`` degrees of ``centre``, fading smoothly to 0 at ``width``."""
    d = np.abs((np.asarray(hue, dtype=np.float32) - np.float32(centre) + 180.0) % 360.0 - 180.0)
    return 1.0 - smoothstep(d, width / 2.0, width)


def ellipse(height: int, width: int, cx: float, cy: float, rx: float, ry: float,
             softness: float) -> np.ndarray:
    """1 inside the ellipse (centre/radii in pixels), 0 outside; the outer ``softness``
    fraction of the radius fades smoothly."""
    xs = ((np.arange(width, dtype=np.float32) + 0.5 - np.float32(cx)) / np.float32(rx)) ** 2
    ys = ((np.arange(height, dtype=np.float32) + 0.5 - np.float32(cy)) / np.float32(ry)) ** 2
    r = np.add.outer(ys, xs)
    np.sqrt(r, out=r)
    if softness <= 0:
        return (r <= 1.0).astype(np.float32)
    # t = 1 at the inner edge of the fade (r = 1 - softness), 0 at the ellipse (r = 1)
    r -= np.float32(1.0)
    r *= np.float32(-1.0 / softness)
    return smooth_unit(r)



def gradient_mask(start: tuple[float, float], end: tuple[float, float], size: tuple[int, int]) -> np.ndarray:
    """Graduated filter at ``size`` = (h, w): 1 at ``start``, smoothly 0 at ``end`` ([x, y] fractions).

    The transition runs perpendicular to start -> end in pixel space, so a
    diagonal gradient looks diagonal on any aspect ratio.
    """
    h, w = size
    dx, dy = (end[0] - start[0]) * w, (end[1] - start[1]) * h
    norm = dx * dx + dy * dy
    # t = position along start -> end (0 at start, 1 at end), separable in x and y
    tx = ((np.arange(w, dtype=np.float32) + 0.5) - np.float32(start[0] * w)) * np.float32(dx / norm)
    ty = ((np.arange(h, dtype=np.float32) + 0.5) - np.float32(start[1] * h)) * np.float32(dy / norm)
    if dx == 0 or dy == 0:
        # axis-aligned: one smooth 1-D profile, broadcast (the common sky / foreground case)
        profile = 1.0 - smooth_unit(ty + tx[0] if dx == 0 else tx + ty[0])
        shape = (h, 1) if dx == 0 else (1, w)
        return np.ascontiguousarray(np.broadcast_to(profile.reshape(shape), (h, w)))
    t = np.add.outer(ty, tx)
    t = smooth_unit(t)
    t *= np.float32(-1.0)
    t += np.float32(1.0)
    return t


def radial_mask(center: tuple[float, float], radius: tuple[float, float], softness: float,
                size: tuple[int, int]) -> np.ndarray:
    """Ellipse at ``size`` = (h, w): centre [x, y] and radii [rx, ry] as fractions of width and
    height; 1 inside, fading over the outer ``softness`` (0..1) of the radius to 0 at the edge."""
    h, w = size
    return ellipse(h, w, center[0] * w, center[1] * h, radius[0] * w, radius[1] * h, softness)


#: Rec.709 luma weights for R, G, B.
_REC709 = np.array([[0.2126, 0.7152, 0.0722]], dtype=np.float32)


def luminance_mask(img: np.ndarray, low: float, high: float, softness: float) -> np.ndarray:
    """Tones of ``img`` (uint8 RGB) whose Rec.709 luma (display-referred, 0..1) lies in
    ``low..high``: 1 inside, fading to 0 over ``softness`` beyond each end (none past 0 or 1)."""
    levels = np.arange(256, dtype=np.float32) / 255.0
    weight = np.ones(256, dtype=np.float32)
    if low > 0:
        weight *= smoothstep(levels, low - softness, low) if softness > 0 else (levels >= low)
    if high < 1:
        weight *= 1.0 - (smoothstep(levels, high, high + softness) if softness > 0 else (levels > high))
    luma = cv2.transform(img, _REC709)  # uint8, rounded: 256 levels are plenty for a mask
    return cv2.LUT(luma.reshape(luma.shape[:2]), weight)


#: The direction in CIELAB's a*b* plane each colour band is said to lean ("the green mat": the greens of this photo,
#: whatever hue its camera and light gave them). Perceptual, not HSV: pink and orange are far apart in a*b* where
#: a lamp-lit photo puts both near HSV red.
SHADE_ANGLES: dict[str, float] = {"red": 35.0, "orange": 60.0, "yellow": 95.0, "green": 135.0, "aqua": 195.0,
                                  "blue": 235.0, "purple": 300.0, "magenta": 0.0}
#: A pixel has to lean this far (a*b* units) towards the colour to count as that colour at all.
SHADE_MIN_LEAN = 3.0


def colour_lean(a: np.ndarray, b: np.ndarray, band: str) -> np.ndarray:
    """How far each a*b* point lies along a named colour's direction (:data:`SHADE_ANGLES`) less half how far it
    lies across it: a saturated pixel of another colour does not lean that way."""
    t = np.deg2rad(SHADE_ANGLES[band])
    c, s = np.float32(np.cos(t)), np.float32(np.sin(t))
    return a * c + b * s - np.float32(0.5) * np.abs(b * c - a * s)


def shade_mask(img: np.ndarray, band: str, share: float) -> np.ndarray:
    """The pixels of ``img`` (uint8 RGB) that lean furthest towards a named colour, relative to the photo:
    its own shade of that colour, about ``share`` of the frame at most.

    A pixel's lean is how far its a*b* point lies along the colour's direction (:data:`SHADE_ANGLES`) less
    half how far it lies across it, so a saturated pixel of another colour does not count. The mask holds the
    top ``share`` of leans with a soft edge, and nothing where no pixel leans at least
    :data:`SHADE_MIN_LEAN` (a photo with nothing of that colour gives an empty mask, not its nearest greys).
    """
    rgb = img.astype(np.float32) * np.float32(1.0 / 255.0)
    lab = cv2.cvtColor(rgb, cv2.COLOR_RGB2Lab)
    lean = colour_lean(lab[..., 1], lab[..., 2], band)
    threshold = max(float(np.percentile(lean, 100.0 * (1.0 - share))), SHADE_MIN_LEAN)
    mask = smoothstep(lean, threshold - 2.0, threshold + 3.0)
    sigma = max(1.0, 0.002 * max(mask.shape))      # a speckle of noise is no part of a thing
    return cv2.GaussianBlur(mask, (0, 0), sigma)


def color_mask(img: np.ndarray, hue: float, hue_width: float, min_saturation: float) -> np.ndarray:
    """Pixels of ``img`` (uint8 RGB) whose HSV hue is within ``hue_width/2`` degrees of ``hue``
    (fading to 0 at ``hue_width``) and whose HSV saturation is above ``min_saturation``
    (full weight from 0.1 above it). Near-black pixels are left out: their hue is noise."""
    h_, s_, v_ = cv2.split(cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL))
    levels = np.arange(256, dtype=np.float32)
    hue_lut = hue_weight(levels * np.float32(360.0 / 256.0), hue, hue_width)
    # below the floor nothing; full weight 0.1 above it (greys have no meaningful hue)
    sat_lut = smoothstep(levels / 255.0, min_saturation, min_saturation + 0.1)
    val_lut = smoothstep(levels / 255.0, 0.04, 0.12)
    mask = cv2.LUT(h_, hue_lut)
    cv2.multiply(mask, cv2.LUT(s_, sat_lut), dst=mask)
    cv2.multiply(mask, cv2.LUT(v_, val_lut), dst=mask)
    return mask

