"""Image measurements a photographer reads: lightness, colour cast, chroma, contrast.

Shared by the embedded planner (relative requests such as "fix the exposure"),
the embedded judge and the evaluation harness. All functions take uint8 RGB
arrays (HxWx3) and an optional float mask (HxW, 0..1) that weights pixels.

Units: CIELAB (D65). ``L`` is 0..100, ``a``/``b`` and chroma are Lab units,
hue in degrees 0..360 of the HSV hue circle (so it matches the op registry's
HSL bands), clip fractions 0..1.
"""

from __future__ import annotations

import cv2
import numpy as np
from skimage.color import rgb2lab
from skimage.metrics import structural_similarity

from pipeline.ops import BANDS

#: Measurements run on a copy whose long side is at most this (statistics barely move).
ANALYSIS_SIDE = 512


def analysis_copy(img: np.ndarray, mask: np.ndarray | None = None, side: int = ANALYSIS_SIDE):
    """Downscale ``img`` (and ``mask`` alike) so the long side is at most ``side``."""
    h, w = img.shape[:2]
    scale = side / max(h, w)
    if scale >= 1:
        return img, mask
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    if mask is not None:
        mask = cv2.resize(mask.astype(np.float32), size, interpolation=cv2.INTER_AREA)
    return small, mask


def lab(img: np.ndarray) -> np.ndarray:
    """uint8 RGB -> float32 CIELAB."""
    return rgb2lab(img).astype(np.float32)


def hue_degrees(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HSV hue (degrees) and saturation (0..1) of a uint8 RGB image."""
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
    return hsv[..., 0].astype(np.float32) * (360.0 / 256.0), hsv[..., 1].astype(np.float32) / 255.0


def band_weights(hue: np.ndarray, band: str) -> np.ndarray:
    """Smooth (raised-cosine) membership of each hue in ``band``, 0..1."""
    names = list(BANDS)
    centres = [BANDS[n] for n in names]
    i = names.index(band)
    c = centres[i]
    prev_c = centres[i - 1]
    next_c = centres[(i + 1) % len(names)]
    left = (c - prev_c) % 360 or 360
    right = (next_c - c) % 360 or 360
    d = (hue - c + 180.0) % 360.0 - 180.0
    width = np.where(d < 0, left, right)
    x = np.clip(np.abs(d) / width, 0, 1)
    return (0.5 + 0.5 * np.cos(np.pi * x)).astype(np.float32)


def _wmean(x: np.ndarray, w: np.ndarray | None) -> float:
    if w is None:
        return float(x.mean())
    s = float(w.sum())
    return float((x * w).sum() / s) if s > 1e-6 else 0.0


def _wpercentile(x: np.ndarray, w: np.ndarray | None, q: float) -> float:
    if w is None:
        return float(np.percentile(x, q))
    sel = x[w > 0.5]
    return float(np.percentile(sel, q)) if sel.size else 0.0


def image_stats(img: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """Summary statistics of ``img`` (optionally inside ``mask``).

    Returns a dict with ``L_mean``, ``L_p01``, ``L_p50``, ``L_p99``, ``a_mean``,
    ``b_mean``, ``chroma_mean``, ``rms_contrast`` (std of L), ``clip_high`` and
    ``clip_low`` (share of pixels with a channel at 255 / all channels at 0),
    ``saturation_mean`` (HSV, 0..1) and ``bands``: per HSL band its
    ``share`` of coloured pixels, ``hue_mean`` (circular, degrees), ``chroma_mean``
    and ``L_mean``.
    """
    small, m = analysis_copy(img, mask)
    lab_img = lab(small)
    L, a, b = lab_img[..., 0], lab_img[..., 1], lab_img[..., 2]
    chroma = np.hypot(a, b)
    hue, sat = hue_degrees(small)
    w = None if m is None else m.astype(np.float32)
    clip_high = (small.max(axis=2) >= 255).astype(np.float32)
    clip_low = (small.max(axis=2) <= 0).astype(np.float32)
    if w is None:
        Lw = L
        std = float(L.std())
    else:
        mean = _wmean(L, w)
        std = float(np.sqrt(_wmean((L - mean) ** 2, w)))
        Lw = L
    stats = {
        "L_mean": _wmean(L, w),
        "L_p01": _wpercentile(Lw, w, 1),
        "L_p50": _wpercentile(Lw, w, 50),
        "L_p99": _wpercentile(Lw, w, 99),
        "a_mean": _wmean(a, w),
        "b_mean": _wmean(b, w),
        "chroma_mean": _wmean(chroma, w),
        "saturation_mean": _wmean(sat, w),
        "rms_contrast": std,
        "clip_high": _wmean(clip_high, w),
        "clip_low": _wmean(clip_low, w),
    }
    coloured = (chroma > 8).astype(np.float32)
    base = coloured if w is None else coloured * w
    total = float(base.sum()) or 1.0
    rad = np.deg2rad(hue)
    bands = {}
    for band in BANDS:
        bw = band_weights(hue, band) * base
        s = float(bw.sum())
        if s > 1e-6:
            hm = float(np.rad2deg(np.arctan2((np.sin(rad) * bw).sum(), (np.cos(rad) * bw).sum())) % 360)
            bands[band] = {
                "share": s / total,
                "hue_mean": hm,
                "chroma_mean": float((chroma * bw).sum() / s),
                "L_mean": float((L * bw).sum() / s),
            }
        else:
            bands[band] = {"share": 0.0, "hue_mean": BANDS[band], "chroma_mean": 0.0, "L_mean": 0.0}
    stats["bands"] = bands
    return stats


def ssim(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Structural similarity of two same-size uint8 RGB images (luma), optionally
    averaged only where ``mask`` > 0.5."""
    sa, m = analysis_copy(a, mask)
    sb, _ = analysis_copy(b)
    ga = cv2.cvtColor(sa, cv2.COLOR_RGB2GRAY)
    gb = cv2.cvtColor(sb, cv2.COLOR_RGB2GRAY)
    _, full = structural_similarity(ga, gb, data_range=255, full=True)
    if m is None:
        return float(full.mean())
    sel = m > 0.5
    return float(full[sel].mean()) if sel.any() else 1.0
