"""The benchmark's workload, shared by ``pipeline.bench`` and ``pipeline.peers``: the photo,
a photographer's global stack, the local layer of a full turn, and the naive float
reference every fast path is measured (and checked) against."""

from __future__ import annotations

import numpy as np

from pipeline.adjust import apply_pixel_ops

#: A photographer's global stack touching every per-pixel stage.
GLOBAL_STACK = {
    "exposure": 20, "contrast": 25, "highlights": -30, "shadows": 25, "whites": 10, "blacks": -10,
    "temperature": 15, "tint": 5, "saturation": 10, "vibrance": 20,
    "hue_orange": -10, "saturation_blue": 30, "luminance_green": -20,
}
#: The local layer of the full turn: darken and cool the top of the frame (a graduated filter).
LOCAL_LAYER = {"mask": {"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.6]},
               "settings": {"exposure": -25, "temperature": -10, "saturation": 10}}


def bench_photo(width: int = 3840, height: int = 2160) -> np.ndarray:
    """scikit-image's coffee photo, centre-cropped to the target aspect and upscaled."""
    from pipeline.retouch_peers import photo

    return photo("coffee", width, height)


def naive_render(img: np.ndarray, settings: dict) -> np.ndarray:
    """The baseline and the exact reference at once: the same per-pixel math
    run over every pixel in float numpy, one full-image pass per adjustment
    (exposure, contrast, tone curve, white balance, colour), no LUT."""
    out = apply_pixel_ops(img.astype(np.float32) / 255.0, settings)
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)
