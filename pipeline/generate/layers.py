"""Generated layers: generative results kept as content-addressed pixels plus their recipe.

A :class:`GeneratedLayer` is what an EditState stores for a generative edit
(remove, fill, expand): the digest of the generated patch, the digest of the
mask it is blended through, where the patch sits, the canvas size after the
layer, and the recipe that made it (backend, model, seed, steps, cfg, prompt,
mask digest). Rendering composites the stored pixels and never runs a model,
so re-rendering, rollback and export stay bit-exact.

Compositing is integer math on uint8: where the mask is 0 the pixels below
are kept exactly, where it is 255 the generated pixels are taken exactly.

No torch here: the renderer imports this module on every install.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

#: Fields a generated layer's dict may carry.
LAYER_FIELDS = {"pixels", "mask", "box", "canvas", "offset", "recipe", "name"}
#: A blob resolver: digest -> uint8 array (pipeline.blobs.BlobStore.get_array).
BlobResolver = Callable[[str], np.ndarray]


class GeneratedLayerError(ValueError):
    """A malformed generated layer, or one whose stored pixels do not fit it."""


def _digest(value: Any, where: str) -> str:
    if not isinstance(value, str) or len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        raise GeneratedLayerError(f"{where}: expected a 64-character blob digest, got {value!r}")
    return value


def _ints(value: Any, n: int, where: str, minimum: int) -> tuple[int, ...]:
    if (not isinstance(value, (list, tuple)) or len(value) != n
            or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in value)):
        raise GeneratedLayerError(f"{where}: expected {n} whole numbers >= {minimum}, got {value!r}")
    return tuple(int(v) for v in value)


@dataclass(frozen=True)
class GeneratedLayer:
    """Generated pixels blended into the image below.

    ``box`` (x, y, width, height) places the patch on the canvas; ``canvas``
    (width, height) is the image size after this layer (larger than the one
    below for an expand, which sits at ``offset``). ``recipe`` records how the
    pixels were made, so a regenerate can vary it.
    """

    pixels: str
    mask: str
    box: tuple
    canvas: tuple
    offset: tuple = (0, 0)
    recipe: dict = field(default_factory=dict)
    name: str = ""

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"pixels": self.pixels, "mask": self.mask, "box": list(self.box),
                             "canvas": list(self.canvas), "recipe": dict(self.recipe)}
        if tuple(self.offset) != (0, 0):
            d["offset"] = list(self.offset)
        if self.name:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "generated") -> "GeneratedLayer":
        if isinstance(data, GeneratedLayer):
            return data
        if not isinstance(data, Mapping):
            raise GeneratedLayerError(f"{where}: expected an object, got {type(data).__name__}")
        unknown = set(data) - LAYER_FIELDS
        if unknown:
            raise GeneratedLayerError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("pixels", "mask", "box", "canvas"):
            if key not in data:
                raise GeneratedLayerError(f"{where}.{key}: required")
        recipe = data.get("recipe") or {}
        if not isinstance(recipe, Mapping):
            raise GeneratedLayerError(f"{where}.recipe: expected an object")
        name = data.get("name", "")
        if not isinstance(name, str):
            raise GeneratedLayerError(f"{where}.name: expected text")
        box = _ints(data["box"], 4, f"{where}.box", 0)
        canvas = _ints(data["canvas"], 2, f"{where}.canvas", 1)
        if box[2] < 1 or box[3] < 1 or box[0] + box[2] > canvas[0] or box[1] + box[3] > canvas[1]:
            raise GeneratedLayerError(f"{where}.box: {list(box)} does not fit the {canvas[0]}x{canvas[1]} canvas")
        return cls(pixels=_digest(data["pixels"], f"{where}.pixels"), mask=_digest(data["mask"], f"{where}.mask"),
                   box=box, canvas=canvas, offset=_ints(data.get("offset", (0, 0)), 2, f"{where}.offset", 0),
                   recipe=dict(recipe), name=name[:80])


def blend_exact(under: np.ndarray, over: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """uint8 ``over`` through a uint8 ``mask`` onto ``under``: exact at 0 and 255, rounded between."""
    m = mask.astype(np.uint16)[..., None]
    mixed = (over.astype(np.uint16) * m + under.astype(np.uint16) * (255 - m) + 127) // 255
    return mixed.astype(np.uint8)


def apply_generated(base: np.ndarray, layer: GeneratedLayer, patch: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``base`` (uint8 RGB) with one generated layer composited; a new array.

    An expand places ``base`` at ``layer.offset`` on the larger canvas; every
    canvas pixel ``base`` does not cover must lie inside the layer's box.
    """
    x, y, w, h = layer.box
    cw, ch = layer.canvas
    if patch.shape[:2] != (h, w) or mask.shape[:2] != (h, w) or patch.ndim != 3 or patch.shape[2] != 3:
        raise GeneratedLayerError(f"generated layer: stored pixels {patch.shape} / mask {mask.shape} "
                                  f"do not match its box {w}x{h}")
    bh, bw = base.shape[:2]
    ox, oy = layer.offset
    if (cw, ch) == (bw, bh) and (ox, oy) == (0, 0):
        out = base.copy()
    else:
        if ox + bw > cw or oy + bh > ch:
            raise GeneratedLayerError(f"generated layer: a {bw}x{bh} image at {ox},{oy} does not fit "
                                      f"the {cw}x{ch} canvas")
        covered = (x <= ox and y <= oy and x + w >= ox + bw and y + h >= oy + bh) or (
            x == 0 and y == 0 and w == cw and h == ch)
        if not covered:
            raise GeneratedLayerError("generated layer: an expand must cover the whole new canvas")
        out = np.zeros((ch, cw, 3), np.uint8)
        out[y:y + h, x:x + w] = patch
        out[oy:oy + bh, ox:ox + bw] = base
    out[y:y + h, x:x + w] = blend_exact(out[y:y + h, x:x + w], patch, mask)
    return out


def composite(base: np.ndarray, layers, resolve: BlobResolver) -> np.ndarray:
    """``base`` with every generated layer applied in order (pure given ``resolve``)."""
    out = base
    for i, layer in enumerate(layers):
        layer = GeneratedLayer.from_dict(layer, where=f"generated[{i}]")
        mask = resolve(layer.mask)
        if mask.ndim == 3:
            mask = mask[..., 0]
        out = apply_generated(out, layer, resolve(layer.pixels), mask)
    return out


def composite_key(base_digest: str, layers) -> str:
    """A stable key for ``base`` plus these layers (what the renderer caches the result under)."""
    import hashlib

    h = hashlib.sha256(base_digest.encode())
    for layer in layers:
        layer = GeneratedLayer.from_dict(layer)
        h.update(f"|{layer.pixels}:{layer.mask}:{layer.box}:{layer.canvas}:{layer.offset}".encode())
    return h.hexdigest()
