"""Export: a render of a state, ready for a file, with the original's depth, transparency and metadata.

One function for every door (``Studio.export``, ``python -m pipeline.apply``):

- 16-bit originals (16-bit PNG / TIFF, RAW) render at 16 bits for PNG and TIFF
  (:meth:`pipeline.render.Renderer.render_deep`); JPEG and WebP get 8 bits;
- transparency is kept for PNG, TIFF and WebP (the clear area keeps its
  original colour: edits never tint what does not show) and flattened onto
  white for JPEG;
- the sRGB ICC profile is always embedded; EXIF is kept (orientation reset,
  GPS removed unless ``drop_gps=False``) or dropped with ``keep_metadata=False``.
"""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.imageio import encode_image, export_exif, srgb_icc

_NAMES = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png", "tif": "tiff", "tiff": "tiff", "webp": "webp"}


def export_pixels(renderer, source, state, long_side: int | None, fmt: str) -> np.ndarray:
    """The pixels an export of ``state`` holds: uint8 or uint16, RGB or RGBA (see the module doc);
    possibly the renderer's own read-only array (no copy of a full-size frame is made to encode it)."""
    fmt = _NAMES[str(fmt).lower()]
    if source.deep is not None and fmt in ("png", "tiff"):
        pixels = renderer.render_deep(source, state, long_side)
    else:
        pixels = renderer.render(source, state, long_side)
    alpha = renderer.alpha_for(source, state, long_side)
    if alpha is None:
        return pixels
    if fmt == "jpeg":
        a = alpha.astype(np.float32)[..., None] / 255.0
        return np.clip(pixels.astype(np.float32) * a + 255.0 * (1.0 - a) + 0.5, 0, 255).astype(np.uint8)
    if renderer.frame(source, state) is None:
        clear = alpha == 0
        base = source.deep if pixels.dtype == np.uint16 else source.pixels
        if base.shape[:2] != pixels.shape[:2]:
            base = cv2.resize(base, (pixels.shape[1], pixels.shape[0]), interpolation=cv2.INTER_AREA)
        pixels = np.array(pixels)
        pixels[clear] = base[clear]
    if pixels.dtype == np.uint16:
        alpha = alpha.astype(np.uint16) * np.uint16(257)
    return np.dstack([pixels, alpha])


def export_bytes(renderer, source, state, *, fmt: str = "jpeg", long_side: int | None = None, quality: int = 92,
                 keep_metadata: bool = True, drop_gps: bool = True) -> bytes:
    """The encoded file of an export (sRGB profile embedded, metadata as asked)."""
    pixels = export_pixels(renderer, source, state, long_side, fmt)
    exif = export_exif(source.exif, drop_gps=drop_gps) if keep_metadata else None
    return encode_image(pixels, _NAMES[str(fmt).lower()], quality=quality, icc=srgb_icc(), exif=exif)
