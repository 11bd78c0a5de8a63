"""Generative operations on top of any backend: remove, fill, expand, regenerate, text-to-image.

Each masked operation:

1. takes the hard mask (uint8, 255 = make new pixels) at the image's full size;
2. crops the masked area with some context around it, resizes that crop to the
   model's resolution bucket nearest its aspect, and runs the backend;
3. resizes the result back and stores it as a :class:`GeneratedLayer`: the
   patch and a soft mask (feathered inwards, exactly 0 outside the hard mask),
   so every pixel outside the mask is kept bit for bit.

Expand pads the canvas to the wanted aspect (edge pixels as a start), masks the
new area, and generates it from the whole canvas. Regenerate re-runs a layer's
recipe (stored with it) with a new seed or other parameters, on the image as it
was below that layer. Pixels go to a blob store through ``put`` (digest out).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import cv2
import numpy as np

from pipeline.generate.base import GenerationBackend, GenerationError, GenerationJob, GenerationParams
from pipeline.generate.layers import GeneratedLayer, composite

#: Masked operations a generated layer may record.
OPERATIONS = ("remove", "fill", "expand")
Put = Callable[[np.ndarray], str]


@dataclass
class GenerationOutcome:
    """What one generative operation made: the layer for the EditState, and what the judge needs."""

    layer: GeneratedLayer
    patch: np.ndarray           # the generated pixels in the layer's box
    soft_mask: np.ndarray       # uint8, how the patch is blended
    hard_mask: np.ndarray       # uint8 at the canvas size: the area asked for
    info: dict = field(default_factory=dict)


def pick_bucket(width: int, height: int, buckets: Sequence[Sequence[int]]) -> tuple[int, int]:
    """The (width, height) bucket whose aspect is nearest ``width / height`` (log ratio)."""
    if not buckets:
        raise GenerationError("bad_request", "the model profile lists no resolution buckets")
    target = np.log(max(width, 1) / max(height, 1))
    best = min(buckets, key=lambda b: (abs(np.log(b[0] / b[1]) - target), -b[0] * b[1]))
    return int(best[0]), int(best[1])


def check_mask(mask: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """A uint8 hard mask (0 / 255) of ``shape`` from bool, 0..1 float or uint8 input."""
    m = np.asarray(mask)
    if m.ndim == 3:
        m = m[..., 0]
    if m.shape != tuple(shape):
        raise GenerationError("bad_request", f"the mask is {m.shape[1]}x{m.shape[0]} but the image is "
                              f"{shape[1]}x{shape[0]}")
    if m.dtype == bool:
        hard = m
    elif np.issubdtype(m.dtype, np.floating):
        hard = m >= 0.5
    else:
        hard = m >= 128
    if not hard.any():
        raise GenerationError("bad_request", "the mask is empty: paint or select the area to change")
    return hard.astype(np.uint8) * 255


def soften(hard: np.ndarray, feather_px: int) -> np.ndarray:
    """Feather a hard mask inwards: exactly 0 outside it, rising to 255 ``feather_px`` inside."""
    if feather_px <= 0:
        return hard.copy()
    k = 2 * feather_px + 1
    inner = cv2.erode(hard, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    soft = cv2.GaussianBlur(inner, (0, 0), sigmaX=feather_px / 2.0)
    soft = np.maximum(soft, inner)  # the eroded core stays fully generated
    soft[hard == 0] = 0
    return soft


def _context_box(hard: np.ndarray, context: float, min_side: int) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(hard)
    x0, x1, y0, y1 = int(xs.min()), int(xs.max()) + 1, int(ys.min()), int(ys.max()) + 1
    H, W = hard.shape
    pad_x = max(int((x1 - x0) * context), (min_side - (x1 - x0)) // 2, 0)
    pad_y = max(int((y1 - y0) * context), (min_side - (y1 - y0)) // 2, 0)
    x0, x1 = max(0, x0 - pad_x), min(W, x1 + pad_x)
    y0, y1 = max(0, y0 - pad_y), min(H, y1 + pad_y)
    return x0, y0, x1 - x0, y1 - y0


def run_masked(backend: GenerationBackend, canvas: np.ndarray, hard: np.ndarray, params: GenerationParams, *,
               operation: str, buckets: Sequence[Sequence[int]], put: Put, context: float = 0.35,
               feather_px: int | None = None, offset: tuple[int, int] = (0, 0),
               box: tuple[int, int, int, int] | None = None, extra_recipe: dict | None = None) -> GenerationOutcome:
    """Generate the ``hard``-masked area of ``canvas`` and return it as a layer (see the module doc)."""
    H, W = canvas.shape[:2]
    min_side = min(64, W, H)
    x, y, w, h = box if box is not None else _context_box(hard, context, min_side)
    bw, bh = pick_bucket(w, h, buckets)
    crop = canvas[y:y + h, x:x + w]
    crop_mask = hard[y:y + h, x:x + w]
    model_in = cv2.resize(crop, (bw, bh), interpolation=cv2.INTER_AREA if w * h > bw * bh else cv2.INTER_CUBIC)
    mask_in = cv2.resize(crop_mask, (bw, bh), interpolation=cv2.INTER_NEAREST)
    mask_in = cv2.dilate(mask_in, np.ones((3, 3), np.uint8))  # the model sees the edge pixels too
    run_params = params.replace(width=bw, height=bh)
    out = backend.run(GenerationJob(task="inpaint", params=run_params, image=model_in, mask=mask_in))
    if out.pixels.shape[:2] != (bh, bw):
        out.pixels = cv2.resize(out.pixels, (bw, bh), interpolation=cv2.INTER_CUBIC)
    patch = cv2.resize(out.pixels, (w, h), interpolation=cv2.INTER_CUBIC if w * h > bw * bh else cv2.INTER_AREA)
    if feather_px is None:
        feather_px = max(1, round(0.012 * min(w, h)))
    soft = soften(crop_mask, feather_px)
    recipe = {"operation": operation, "backend": backend.name, **run_params.to_dict(),
              "model": params.model or backend.model, "mask_digest": put(crop_mask),
              "box": [x, y, w, h], **(extra_recipe or {})}
    layer = GeneratedLayer(pixels=put(np.ascontiguousarray(patch)), mask=put(soft), box=(x, y, w, h),
                           canvas=(W, H), offset=tuple(offset), recipe=recipe, name=operation)
    info = dict(out.info)
    return GenerationOutcome(layer=layer, patch=patch, soft_mask=soft, hard_mask=hard, info=info)


def inpaint(backend: GenerationBackend, image: np.ndarray, mask: np.ndarray, params: GenerationParams, *,
            operation: str, buckets: Sequence[Sequence[int]], put: Put, grow_px: int = 0,
            context: float = 0.35) -> GenerationOutcome:
    """Remove (``operation="remove"``) or fill the masked area of ``image`` (uint8 RGB)."""
    hard = check_mask(mask, image.shape[:2])
    if grow_px > 0:  # an object's outline: take its edge pixels (halo, shadow line) with it
        k = 2 * grow_px + 1
        hard = cv2.dilate(hard, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    return run_masked(backend, image, hard, params, operation=operation, buckets=buckets, put=put,
                      context=context)


def parse_aspect(aspect) -> float:
    """``"16:9"``, ``"4x5"``, ``1.5`` or ``(16, 9)`` -> width / height (0.2..5)."""
    try:
        if isinstance(aspect, str):
            text = aspect.strip().lower().replace("x", ":").replace("/", ":")
            a, b = (text.split(":") + ["1"])[:2]
            value = float(a) / float(b)
        elif isinstance(aspect, (tuple, list)):
            value = float(aspect[0]) / float(aspect[1])
        else:
            value = float(aspect)
    except (ValueError, ZeroDivisionError, IndexError, TypeError):
        raise GenerationError("bad_request", f"aspect: expected a ratio such as 16:9, got {aspect!r}") from None
    if not 0.2 <= value <= 5:
        raise GenerationError("bad_request", f"aspect: {aspect!r} is outside 1:5 .. 5:1")
    return value


def expanded_canvas(width: int, height: int, aspect: float, anchor: str = "center") -> tuple[int, int, int, int]:
    """(canvas width, canvas height, offset x, offset y) that widen or heighten the image to ``aspect``."""
    if abs(width / height - aspect) < 1e-3:
        raise GenerationError("bad_request", f"The photo already has that aspect ({width}x{height})")
    if width / height < aspect:
        cw, ch = round(height * aspect), height
    else:
        cw, ch = width, round(width / aspect)
    ox = {"left": 0, "right": cw - width}.get(anchor, (cw - width) // 2)
    oy = {"top": 0, "bottom": ch - height}.get(anchor, (ch - height) // 2)
    return cw, ch, ox, oy


def expand(backend: GenerationBackend, image: np.ndarray, aspect, params: GenerationParams, *,
           buckets: Sequence[Sequence[int]], put: Put, anchor: str = "center",
           canvas_size: tuple[int, int, int, int] | None = None) -> GenerationOutcome:
    """Outpaint: widen or heighten ``image`` to ``aspect``; the original pixels stay exactly where they were."""
    h, w = image.shape[:2]
    ratio = parse_aspect(aspect)
    cw, ch, ox, oy = canvas_size or expanded_canvas(w, h, ratio, anchor)
    canvas = cv2.copyMakeBorder(image, oy, ch - h - oy, ox, cw - w - ox, cv2.BORDER_REPLICATE)
    hard = np.full((ch, cw), 255, np.uint8)
    hard[oy:oy + h, ox:ox + w] = 0
    return run_masked(backend, canvas, hard, params, operation="expand", buckets=buckets, put=put,
                      offset=(ox, oy), box=(0, 0, cw, ch), feather_px=0,
                      extra_recipe={"aspect": round(ratio, 6), "canvas_size": [cw, ch, ox, oy]})


def regenerate(backend: GenerationBackend, original: np.ndarray, layers: Sequence, index: int,
               params: GenerationParams, *, get: Callable[[str], np.ndarray], put: Put,
               buckets: Sequence[Sequence[int]]) -> GenerationOutcome:
    """Re-run generated layer ``index`` with ``params`` on the image as it was below it."""
    layer = GeneratedLayer.from_dict(layers[index])
    recipe = layer.recipe
    below = composite(original, layers[:index], get)
    op = recipe.get("operation")
    if op == "expand":
        cw, ch, ox, oy = recipe.get("canvas_size") or (*layer.canvas, *layer.offset)
        return expand(backend, below, recipe.get("aspect", cw / ch), params, buckets=buckets, put=put,
                      canvas_size=(cw, ch, ox, oy))
    if op not in OPERATIONS:
        raise GenerationError("bad_request", f"this layer's recipe has no operation to repeat ({op!r})")
    x, y, w, h = layer.box
    hard = np.zeros(below.shape[:2], np.uint8)
    hard[y:y + h, x:x + w] = get(recipe["mask_digest"])
    return run_masked(backend, below, hard, params, operation=op, buckets=buckets, put=put, box=(x, y, w, h))


def text_to_image(backend: GenerationBackend, params: GenerationParams) -> tuple[np.ndarray, dict]:
    """A new photo from ``params.prompt`` at (params.width, params.height): uint8 RGB and the run's info."""
    out = backend.run(GenerationJob(task="text_to_image", params=params))
    pixels = out.pixels
    if pixels.shape[:2] != (params.height, params.width):
        pixels = cv2.resize(pixels, (params.width, params.height), interpolation=cv2.INTER_CUBIC)
    return np.ascontiguousarray(pixels), dict(out.info)
