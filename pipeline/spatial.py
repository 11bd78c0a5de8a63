"""Spatial ops: clarity, dehaze and sharpen, on uint8 RGB images.

Each function takes a uint8 RGB image (HxWx3) and an op value -100..100 and
returns a new uint8 image; 0 returns the input itself. Radii scale with the
image size, so a proxy and the full-resolution export of the same state look
alike. Large-radius work (clarity's blur, dehaze's transmission map) runs at
reduced resolution and is upsampled: those signals are smooth, so the
difference does not show, and it is what keeps a 4K turn well under a second.
"""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.measure import analysis_copy

#: Long side of the copy clarity blurs: its radius (2% of the long side) is still 6.4 px there, so the
#: blur is as smooth as on a 640 px copy (an effect within a level of it but on 0.1% of pixels at
#: +-100) for 40% of the time.
CLARITY_SIDE = 320
#: Long side of the copy dehaze estimates its transmission map on.
DEHAZE_SIDE = 480


def _downscaled(img: np.ndarray, side: int) -> np.ndarray:
    return analysis_copy(img, side=side)[0]


def _upscaled(x: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    h, w = shape
    if x.shape[:2] == (h, w):
        return x
    return cv2.resize(x, (w, h), interpolation=cv2.INTER_LINEAR)


# Midtone weight per 8-bit luma: 1 at mid-grey, 0 at black and white.
MIDTONES = (1.0 - (np.arange(256, dtype=np.float32) / 127.5 - 1.0) ** 2).reshape(256, 1)


def _push_from(img: np.ndarray, reference: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """img + amount * (img - reference), per pixel, in one saturating pass.

    ``amount`` is float32 HxW; positive pushes away from ``reference`` (more
    contrast to it), negative pulls towards it.
    """
    return cv2.blendLinear(img, reference, 1.0 + amount, -amount)


def clarity(img: np.ndarray, value: float) -> np.ndarray:
    """Local midtone contrast: +100 = crisp midtone texture, -100 = soft, dreamy.

    An unsharp mask with a radius of 2% of the long side, weighted towards
    midtones so highlights and shadows do not halo or clip. The blur is
    computed on a small copy and upsampled: at this radius it is smooth.
    """
    if not value:
        return img
    small = _downscaled(img, CLARITY_SIDE)
    blur = cv2.GaussianBlur(small, (0, 0), 0.02 * max(small.shape[:2]))
    y = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    amount = cv2.LUT(y, MIDTONES * np.float32(value / 100.0 * 0.8))
    return _push_from(img, _upscaled(blur, img.shape[:2]), amount)


def sharpen(img: np.ndarray, value: float) -> np.ndarray:
    """Fine-detail unsharp mask; negative values soften fine detail."""
    if not value:
        return img
    sigma = max(0.6, max(img.shape[:2]) / 2400.0)
    if value > 0:
        a = value / 100.0 * 1.5
        blur = cv2.GaussianBlur(img, (0, 0), sigma)
        return cv2.addWeighted(img, 1.0 + a, blur, -a, 0)
    a = -value / 100.0
    blur = cv2.GaussianBlur(img, (0, 0), sigma * 2.5)
    return cv2.addWeighted(img, 1.0 - a, blur, a, 0)


def transmission(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dark-channel-prior transmission map (small, float32) and airlight (RGB 0..1)."""
    small = _downscaled(img, DEHAZE_SIDE).astype(np.float32) / 255.0
    patch = max(3, round(max(small.shape[:2]) * 0.03)) | 1
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (patch, patch))
    dark = cv2.erode(small.min(axis=2), kernel)
    n = max(1, dark.size // 1000)
    idx = np.argpartition(dark.ravel(), -n)[-n:]
    airlight = np.clip(small.reshape(-1, 3)[idx].mean(axis=0), 0.5, 1.0)
    t = 1.0 - 0.95 * cv2.erode((small / airlight).min(axis=2), kernel)
    guide = cv2.cvtColor((small * 255).astype(np.uint8), cv2.COLOR_RGB2GRAY)
    t = cv2.ximgproc.guidedFilter(guide, t.astype(np.float32), max(4, patch * 2), 1e-3)
    return np.clip(t, 0.05, 1.0).astype(np.float32), airlight.astype(np.float32)


def dehaze(img: np.ndarray, value: float) -> np.ndarray:
    """Removes (+) or adds (-) atmospheric haze, by the dark-channel prior.

    +100 removes most of the estimated haze (transmission floored so noise in
    distant areas is not amplified); -100 veils the image towards the airlight
    colour, more where the scene is already distant.
    """
    if not value:
        return img
    t, airlight = transmission(img)
    a = abs(value) / 100.0
    if value > 0:
        # Recover the scene: J = A + (I - A) / t.
        gain_small = 1.0 / np.maximum(1.0 - a * (1.0 - t), 0.3)
    else:
        # Veil it: J = A + (I - A) * t', thicker where the scene is distant.
        gain_small = 1.0 - 0.6 * a * (1.2 - t) / 1.2
    # J = A + (I - A) * gain = I*gain + A*(1 - gain): one saturating blend
    # against the airlight colour; the gain is smooth, so it is upsampled.
    gain = _upscaled(gain_small.astype(np.float32), img.shape[:2])
    row = np.tile(np.rint(airlight * 255.0).astype(np.uint8), (img.shape[1], 1))[None]
    veil = np.repeat(row, img.shape[0], axis=0)  # a flat airlight-coloured image (fast to build)
    return cv2.blendLinear(img, veil, gain, 1.0 - gain)


SPATIAL = {"dehaze": dehaze, "clarity": clarity, "sharpen": sharpen}


def apply_spatial_ops(img: np.ndarray, settings) -> np.ndarray:
    """Dehaze, then clarity, then sharpen (the order a retoucher would use)."""
    out = img
    for name in ("dehaze", "clarity", "sharpen"):
        v = settings.get(name, 0)
        if v:
            out = SPATIAL[name](out, v)
    return out
