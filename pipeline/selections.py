"""Selections: a brush or lasso stroke, a click or a box on the photo -> a mask.

Each function returns an 8-bit grey mask (HxW uint8, 255 = selected) in the
original's frame, at most :data:`SELECTION_SIDE` px on its long side; the
service stores it in the blob store and refers to it with a
``{"type": "painted", "blob": digest}`` mask spec, which any local layer can
use ("brighten the selection") and which the ``remove`` op fills ("remove this").

Coordinates are fractions of the image (0..1, origin top-left), like every
mask spec. Derivations are deterministic (OpenCV's RNG is seeded for GrabCut),
so the same click on the same photo gives the same mask and the same digest.

A person selects on the picture as shown, which may be cropped, rotated,
straightened or mirrored. Selections live in that displayed frame and map
through its :class:`pipeline.geometry.Frame` both ways: :func:`to_original`
takes a mask made on the displayed picture to the original's frame (where it
is stored, so every later version, crop or not, finds the same pixels), and
:func:`to_display` brings a stored mask into any version's frame.
"""

from __future__ import annotations

from typing import Any, Sequence

import cv2
import numpy as np

from pipeline.geometry import Frame, framed_mask

#: Long side of a stored selection mask (larger brush masks are area-averaged down).
SELECTION_SIDE = 2048
#: Long side of the copy a click's flood fill and a box's GrabCut run on.
CLICK_SIDE = 768
#: Flood fill: colour distance (Lab units, on a gently smoothed copy) from the clicked colour.
CLICK_TOLERANCE = 14.0


class SelectionError(ValueError):
    """A selection that cannot be made; the message is for a person."""


def _fit(h: int, w: int, side: int) -> tuple[int, int]:
    s = min(1.0, side / max(h, w))
    return max(1, round(h * s)), max(1, round(w * s))


def _check_point(value: Any, name: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v) for v in value):
        raise SelectionError(f"{name}: expected [x, y] as fractions of the image (0..1), got {value!r}")
    x, y = float(value[0]), float(value[1])
    if not (0.0 <= x <= 1.0 and 0.0 <= y <= 1.0):
        raise SelectionError(f"{name}: [{x:g}, {y:g}] is outside the photo (x and y go from 0 to 1)")
    return x, y


def painted_mask(mask: Any, image_size: tuple[int, int]) -> np.ndarray:
    """A brush / lasso mask in the original's frame -> uint8 (255 = selected).

    ``mask``: HxW (or HxWx3/4: the alpha, else the brightest channel) of bool,
    uint8 (0..255), uint16 or float (0..1), at any resolution with the photo's
    aspect ratio (within 2%); it is resized to the original's frame.
    """
    arr = np.asarray(mask)
    if arr.ndim == 3 and arr.shape[2] in (3, 4):
        arr = arr[..., 3] if arr.shape[2] == 4 else arr.max(axis=2)
    if arr.ndim != 2 or min(arr.shape) < 1:
        raise SelectionError(f"mask: expected a 2-D painted mask, got shape {arr.shape}")
    if arr.dtype == bool:
        arr = arr.astype(np.uint8) * 255
    elif arr.dtype == np.uint16:
        arr = (arr.astype(np.float32) / 257.0 + 0.5).astype(np.uint8)
    elif np.issubdtype(arr.dtype, np.floating):
        if not np.isfinite(arr).all():
            raise SelectionError("mask: contains NaN or infinite values")
        arr = (np.clip(arr, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    elif arr.dtype != np.uint8:
        raise SelectionError(f"mask: expected bool, uint8, uint16 or float values, got {arr.dtype}")
    h, w = image_size
    if abs(arr.shape[1] / arr.shape[0] - w / h) > 0.02 * (w / h):
        raise SelectionError(f"mask: {arr.shape[1]}x{arr.shape[0]} does not have the photo's shape "
                             f"({w}x{h}); paint on the photo as shown")
    th, tw = _fit(h, w, SELECTION_SIDE)
    if arr.shape != (th, tw):
        interp = cv2.INTER_AREA if arr.shape[0] > th else cv2.INTER_LINEAR
        arr = cv2.resize(arr, (tw, th), interpolation=interp)
    return np.ascontiguousarray(arr)


def box_mask(original: np.ndarray, box: Sequence[float]) -> np.ndarray:
    """The object inside ``box`` = [x0, y0, x1, y1] (fractions), cut out by GrabCut -> uint8.

    When GrabCut finds next to nothing (a flat box), the box itself is the selection.
    """
    if not isinstance(box, (list, tuple)) or len(box) != 4:
        raise SelectionError(f"box: expected [x0, y0, x1, y1] as fractions of the image, got {box!r}")
    x0, y0 = _check_point(box[:2], "box")
    x1, y1 = _check_point(box[2:], "box")
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    small = _small(original)
    h, w = small.shape[:2]
    r = (int(x0 * w), int(y0 * h), int(round(x1 * w)), int(round(y1 * h)))
    if r[2] - r[0] < 1 or r[3] - r[1] < 1:
        raise SelectionError("box: the box has no area; drag a box around what you want to select")
    box_only = np.zeros((h, w), np.uint8)
    box_only[r[1]:r[3], r[0]:r[2]] = 255
    cut = np.zeros((h, w), np.uint8)
    inner = (max(1, r[0]), max(1, r[1]), min(w - 1, r[2]) - max(1, r[0]), min(h - 1, r[3]) - max(1, r[1]))
    if inner[2] >= 4 and inner[3] >= 4 and inner[2] * inner[3] < 0.98 * h * w:
        cv2.setRNGSeed(0)  # GrabCut's GMM initialisation: same box, same mask
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.grabCut(cv2.cvtColor(small, cv2.COLOR_RGB2BGR), cut, inner, bgd, fgd, 4, cv2.GC_INIT_WITH_RECT)
    fg = np.where((cut == cv2.GC_FGD) | (cut == cv2.GC_PR_FGD), 255, 0).astype(np.uint8)
    if np.count_nonzero(fg) < 0.05 * np.count_nonzero(box_only):
        fg = box_only
    return _to_frame(fg, original.shape[:2])


def click_mask(original: np.ndarray, point: Sequence[float], tolerance: float = CLICK_TOLERANCE) -> np.ndarray:
    """The region of similar colour connected to ``point`` = [x, y] (flood fill in Lab) -> uint8.

    Small holes (a highlight inside a clicked shirt: under 3% of the region)
    are filled and the edge is cleaned up, so a click selects the object's
    surface, not its noise; a whole object inside a clicked wall stays out.
    """
    x, y = _check_point(point, "point")
    small = _small(original)
    h, w = small.shape[:2]
    lab = cv2.cvtColor(cv2.GaussianBlur(small, (0, 0), 1.2).astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    seed = (min(w - 1, int(x * w)), min(h - 1, int(y * h)))
    ref = lab[seed[1], seed[0]]
    near = (np.linalg.norm(lab - ref, axis=2) <= tolerance).astype(np.uint8)
    count, labels = cv2.connectedComponents(near, connectivity=4)
    region = (labels == labels[seed[1], seed[0]]).astype(np.uint8) if near[seed[1], seed[0]] else near * 0
    region = cv2.morphologyEx(region, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    region = _fill_holes(region)
    # The blur leaves the object's edge pixels between it and its surroundings: they belong to the
    # object (a removal that leaves its rim fills the hole from that rim's colour).
    region = cv2.dilate(region, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    return _to_frame(region * 255, original.shape[:2])


def coverage(mask: np.ndarray) -> float:
    """Share of the photo selected, 0..1 (a soft mask counts by its weight)."""
    return float(np.asarray(mask, np.float64).mean() / 255.0)


def preview(original: np.ndarray, mask: np.ndarray, side: int = 1024) -> np.ndarray:
    """The photo with the selection tinted and outlined (uint8 RGB, long side ``side``)."""
    h, w = _fit(*original.shape[:2], side)
    img = cv2.resize(original, (w, h), interpolation=cv2.INTER_AREA)
    m = cv2.resize(mask, (w, h), interpolation=cv2.INTER_LINEAR).astype(np.float32)[..., None] / 255.0
    tint = np.array([255, 60, 60], np.float32)
    out = img.astype(np.float32) * (1 - 0.45 * m) + tint * 0.45 * m
    edge = cv2.morphologyEx((m[..., 0] > 0.5).astype(np.uint8), cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    out[edge > 0] = (255, 255, 255)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def _small(original: np.ndarray) -> np.ndarray:
    h, w = _fit(*original.shape[:2], CLICK_SIDE)
    if (h, w) == original.shape[:2]:
        return original
    return cv2.resize(original, (w, h), interpolation=cv2.INTER_AREA)


def _to_frame(mask: np.ndarray, image_size: tuple[int, int]) -> np.ndarray:
    """A mask made on the analysis copy, at the stored selection size (edges smoothed, then hard)."""
    th, tw = _fit(*image_size, SELECTION_SIDE)
    if mask.shape == (th, tw):
        return np.ascontiguousarray(mask)
    up = cv2.resize(mask, (tw, th), interpolation=cv2.INTER_LINEAR)
    return np.where(up >= 128, 255, 0).astype(np.uint8)


def _fill_holes(region: np.ndarray, share: float = 0.03) -> np.ndarray:
    count, labels, stats, _ = cv2.connectedComponentsWithStats((1 - region).astype(np.uint8), connectivity=4)
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    hole = stats[:, cv2.CC_STAT_AREA] <= share * max(1, int(region.sum()))
    hole[0] = False
    hole[edge] = False
    out = region.copy()
    out[hole[labels]] = 1
    return out


# -- the displayed frame <-> the original's frame ---------------------------------------------

def to_original(mask: np.ndarray, frame: Frame | None, original_size: tuple[int, int]) -> np.ndarray:
    """A uint8 mask made on the displayed picture (any size with its aspect) -> the same pixels in the
    original's frame, uint8 at most :data:`SELECTION_SIDE` px long; what the frame cut off is 0.

    ``frame``: the displayed version's frame (None: the picture is the original's frame).
    ``original_size``: (height, width) of the original at full resolution.
    """
    mask = np.ascontiguousarray(np.asarray(mask, np.uint8))
    th, tw = _fit(*original_size, SELECTION_SIDE)
    if frame is None:
        if mask.shape == (th, tw):
            return mask
        interp = cv2.INTER_AREA if mask.shape[0] > th else cv2.INTER_LINEAR
        return cv2.resize(mask, (tw, th), interpolation=interp)
    # displayed pixel -> stored pixel, inverted: each stored pixel reads the displayed mask where it shows
    shown = np.vstack([frame.pixel_matrix(mask.shape[:2], original_size, (th, tw)), [0.0, 0.0, 1.0]])
    back = np.linalg.inv(shown)[:2]
    return cv2.warpAffine(mask, back, (tw, th), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_CONSTANT, borderValue=0)


def to_display(mask: np.ndarray, frame: Frame | None, display_size: tuple[int, int],
               original_size: tuple[int, int]) -> np.ndarray:
    """A uint8 mask in the original's frame (any size with its aspect) -> the same pixels as the version
    with ``frame`` shows them, uint8 at ``display_size`` (height, width)."""
    mask = np.asarray(mask, np.uint8)
    h, w = display_size
    if frame is None:
        return cv2.resize(mask, (w, h), interpolation=cv2.INTER_AREA if mask.shape[0] > h else cv2.INTER_LINEAR)
    out = framed_mask(mask.astype(np.float32) / 255.0, frame, display_size, original_size)
    return np.clip(out * 255.0 + 0.5, 0, 255).astype(np.uint8)
