"""render(original, state) -> pixels: the non-destructive renderer.

Every version of a photo is rendered from the untouched original and an
:class:`~pipeline.state.EditState`. The per-pixel ops of a state (tone, white
balance, colour, HSL) are compiled into one 3D lookup table by evaluating the
exact math of :mod:`pipeline.adjust` at grid points, and applied in a single
``cv2.remap`` pass:

- The LUT is exact along green (256 slices: green carries most of the luma,
  where tone curves are steepest) and a 33-point grid along red and blue,
  interpolated bilinearly.
- The remap coordinates depend only on the source pixels, not on the
  settings, so they are computed once per (original, size) and cached; a
  re-render with new settings is one LUT build plus one remap.

Before any of that, the retouch stage (:mod:`pipeline.retouch`: dust and
blemish healing, removal of painted regions, red eye, skin, teeth, eyes)
runs on the original's pixels at the render size; its result is cached per
(original, retouch part of the state, size) together with its LUT
coordinates, so moving a tone slider afterwards costs what it did before.

Local layers are blended through their soft masks; the first layer's tone
and colour are compiled together with the global stack into one composite
LUT, so it costs one more remap. Then spatial ops (dehaze, clarity, sharpen)
run, at reduced resolution where their signal is smooth
(:mod:`pipeline.spatial`). Render order: the frame (crop, rotate, flip,
straighten: :mod:`pipeline.geometry`, sampled from the original first so no
work is spent on cropped-away pixels), tone and colour (global, then each
layer in order; tone curves and colour grading are part of the same LUT),
noise reduction, detail (global, then each layer's), then vignette and grain
(:mod:`pipeline.finishing`). Masks are computed on the original and warped
through the same frame.

Same inputs give the same bytes; renders are cached by (original digest,
state key, size) in a bounded, thread-safe cache.
"""

from __future__ import annotations

import json
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Hashable, Mapping

import cv2
import numpy as np
from cachetools import LRUCache

from pipeline import admission, ops
from pipeline.adjust import apply_pixel_ops
from pipeline import healing, portrait
from pipeline.finishing import apply_denoise, apply_finish
from pipeline.generate.layers import composite, composite_key
from pipeline.geometry import (ASPECTS, Frame, axis_box, detect_tilt, frame_for, framed, framed_image, framed_mask,
                               orient)
from pipeline.masks import (MaskCache, build_mask, content_key, face_boxes, face_boxes_key, feather_mask,
                           image_digest)
from pipeline.retouch import RetouchReport, apply_retouch, retouch_key
from pipeline.spatial import apply_spatial_ops
from pipeline.state import EditState

#: Grid points along red and blue (the LUT image interpolates these bilinearly).
LUT_POINTS = 33
#: Grid points along green where the math is evaluated (resampled to 256 slices).
GREEN_SAMPLES = 65

_WORKERS = max(1, min(4, os.cpu_count() or 1))
# Stateless worker threads for compiling LUTs (shared by every Renderer).
_POOL = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="lut")


class RenderError(RuntimeError):
    """A render that could not be produced (bad source image, unknown op)."""


# -- a small thread-safe LRU ------------------------------------------------

class BoundedCache:
    """Thread-safe LRU (``cachetools.LRUCache``) bounded by the total ``nbytes`` of its numpy values."""

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._items: LRUCache = LRUCache(maxsize=max(1, self.max_bytes), getsizeof=self._size)
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _size(value) -> int:
        if isinstance(value, tuple):
            return sum(getattr(v, "nbytes", 0) for v in value)
        return getattr(value, "nbytes", 0)

    def get(self, key: Hashable):
        with self._lock:
            value = self._items.get(key)      # a hit is the most recently used from now on
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
            return value

    def put(self, key: Hashable, value) -> None:
        if self._size(value) > self.max_bytes:
            return
        with self._lock:
            self._items[key] = value          # the least recently used go until it fits

    def get_or_create(self, key: Hashable, make: Callable[[], object]):
        value = self.get(key)
        if value is None:
            value = make()
            self.put(key, value)
        return value

    def __len__(self) -> int:
        return len(self._items)

    @property
    def nbytes(self) -> int:
        return self._items.currsize


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# -- the source image ----------------------------------------------------------

@dataclass(eq=False)
class SourceImage:
    """An untouched original: uint8 RGB pixels plus a content digest.

    Resized copies (proxies) are cached on the object, so a session's many
    proxy renders share one resize. The digest (the key of every cache) is
    computed when first asked for: a one-shot render that caches nothing never
    hashes the photo.
    """

    pixels: np.ndarray
    _digest: str | None = field(default=None, repr=False)
    _sizes: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: uint16 HxWx3 sRGB of a 16-bit PNG / TIFF or a developed RAW (``pixels`` is its 8-bit rounding).
    deep: np.ndarray | None = field(default=None, repr=False)
    #: uint8 HxW transparency of the file (None: opaque); edits never change it.
    alpha: np.ndarray | None = field(default=None, repr=False)
    #: the file's EXIF block, for exports that keep metadata.
    exif: bytes | None = field(default=None, repr=False)

    @property
    def digest(self) -> str:
        """Content digest (hex): of the 16-bit pixels for a 16-bit original (two may round to the
        same 8 bits), with the transparency mixed in when there is one."""
        if self._digest is None:
            digest = image_digest(self.deep if self.deep is not None else self.pixels)
            if self.alpha is not None:
                digest = image_digest(np.dstack([self.pixels, self.alpha]))[:16] + digest[16:]
            self._digest = digest
        return self._digest

    @property
    def nbytes(self) -> int:
        """Bytes this original holds: its pixels, 16-bit pixels, transparency and resized copies."""
        with self._lock:
            sizes = sum(a.nbytes for a in self._sizes.values())
        return self.pixels.nbytes + sizes + sum(a.nbytes for a in (self.deep, self.alpha) if a is not None)

    @classmethod
    def from_loaded(cls, loaded) -> "SourceImage":
        """From a :class:`pipeline.imageio.LoadedImage` (loaded with ``alpha="keep"`` to keep transparency).

        The loaded arrays are taken over, not copied (they become read-only): a 49 MP 16-bit
        original is held once, not three times.
        """
        arr = np.asarray(loaded.pixels)
        rgba = arr.ndim == 3 and arr.shape[2] == 4
        source = cls.from_array(arr[:, :, :3] if rgba else arr, copy=False)
        deep = getattr(loaded, "deep", None)
        if deep is not None:
            source.deep = _frozen(np.ascontiguousarray(deep))
        if rgba and (arr[:, :, 3] < 255).any():
            source.alpha = _frozen(np.ascontiguousarray(arr[:, :, 3]))
        source.exif = getattr(loaded, "exif", None)
        return source

    @classmethod
    def from_array(cls, pixels: np.ndarray, *, copy: bool = True) -> "SourceImage":
        """From uint8 RGB pixels (HxWx3). ``copy=False`` takes a C-contiguous array over as it is
        (it is made read-only)."""
        arr = np.asarray(pixels)
        if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise RenderError(f"expected a uint8 RGB image of shape (H, W, 3), got {arr.dtype} {arr.shape}")
        return cls(pixels=_frozen(np.array(arr, order="C", copy=True) if copy else np.ascontiguousarray(arr)))

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    def size_for(self, long_side: int | None) -> tuple[int, int]:
        """(height, width) for a render whose long side is at most ``long_side``
        (None = full resolution; never upscales)."""
        h, w = self.height, self.width
        if long_side is None or long_side >= max(h, w):
            return h, w
        if long_side < 1:
            raise RenderError(f"long_side must be at least 1, got {long_side}")
        s = long_side / max(h, w)
        return max(1, round(h * s)), max(1, round(w * s))

    def resized(self, size: tuple[int, int]) -> np.ndarray:
        """The original at ``size`` (height, width), area-resampled and cached."""
        if size == (self.height, self.width):
            return self.pixels
        with self._lock:
            cached = self._sizes.get(size)
        if cached is not None:
            return cached
        out = _frozen(cv2.resize(self.pixels, (size[1], size[0]), interpolation=cv2.INTER_AREA))
        with self._lock:
            if len(self._sizes) >= 4:  # a session uses a proxy, a thumbnail, the judge size
                self._sizes.pop(next(iter(self._sizes)))
            self._sizes[size] = out
        return out

    def proxy(self, long_side: int) -> np.ndarray:
        return self.resized(self.size_for(long_side))


# -- LUT compile and apply -----------------------------------------------------------

#: Share of the red/blue grid warp that packs points towards 0 and 255, where
#: saturation and white balance change fastest (colours near the gamut edge).
_EDGE_WARP = 0.35


def _warp(x: np.ndarray) -> np.ndarray:
    """Monotone map 0..1 -> 0..1 whose slope is steep at both ends."""
    x = np.clip(x, 0.0, 1.0)
    return (1 - _EDGE_WARP) * x + _EDGE_WARP * (0.5 + np.arcsin(2 * x - 1) / np.pi)


@lru_cache(maxsize=8)
def _grid_values(n: int) -> np.ndarray:
    """Red/blue grid points: the inverse warp of n evenly spaced positions (read-only)."""
    fine = np.linspace(0.0, 1.0, 65537)
    out = np.interp(np.linspace(0.0, 1.0, n), _warp(fine), fine).astype(np.float32)
    out.flags.writeable = False
    return out


def _grid(n: int = LUT_POINTS, green: int = GREEN_SAMPLES) -> np.ndarray:
    """RGB grid in 0..1 where the exact math is evaluated: shape (n_blue, green, n_red, 3)."""
    rb = _grid_values(n)
    g = _grid_values(green)
    B, G, R = np.meshgrid(rb, g, rb, indexing="ij")
    return np.stack([R, G, B], axis=-1)


_GRID = _grid()


def _axis_read(values: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Where ``values`` (0..1) lie on a warped axis of ``points`` samples: the lower sample's index and
    the weight of the next."""
    pos = (points - 1) * _warp(values)
    i = np.minimum(np.floor(pos).astype(np.intp), points - 2)
    return i, (pos - i).astype(np.float32)


# Index and weight that resample the green axis from the grid's samples to all 256 levels.
_GREEN_INDEX, _GREEN_WEIGHT = _axis_read(np.arange(256) / 255.0, GREEN_SAMPLES)
# 8-bit value -> LUT image coordinate, per channel (red, green, blue).
COORD_TABLE = np.stack(
    [
        (LUT_POINTS - 1) * _warp(np.arange(256) / 255.0),
        LUT_POINTS * np.arange(256, dtype=np.float64),
        (LUT_POINTS - 1) * _warp(np.arange(256) / 255.0),
    ],
    axis=-1,
).astype(np.float32).reshape(256, 1, 3)


#: Ops that act on each channel alone (exposure, then the contrast curve, are the first ops of a stage):
#: on the grid they are evaluated once per axis value (33 + 65 values), not at every grid point.
_PER_CHANNEL = ("exposure", "contrast")


#: Green samples of a draft LUT (a slider's live preview while it moves): half the exact grid's 65
#: (see :func:`_draft_table`; the bench prints the draft's error against the exact math).
DRAFT_GREEN = 33


def _grid_through(first: Mapping[str, int], grid: np.ndarray) -> np.ndarray:
    """``grid`` after the per-channel ops at the head of ``first`` (``grid`` itself when it has none).

    The same numbers as running those ops on the whole grid: they are elementwise, so each grid point's
    value is its axis value's."""
    head = {k: first[k] for k in _PER_CHANNEL if first.get(k)}
    if not head:
        return grid
    rb, g = (_through_head(head, v) for v in (grid[0, 0, :, 0], grid[0, :, 0, 1]))
    B, G, R = np.meshgrid(rb, g, rb, indexing="ij")
    return np.stack([R, G, B], axis=-1)


def _through_head(head: Mapping[str, int], values: np.ndarray) -> np.ndarray:
    """Axis values (0..1) after the per-channel ``head`` ops."""
    return apply_pixel_ops(np.repeat(values[:, None], 3, axis=1), head)[:, 0]


def _compiled(stages: tuple[Mapping[str, int], ...], *, levels: bool = False) -> np.ndarray:
    """The LUT of ``stages``: float32 whole numbers 0..65535 (what the uint16 LUT holds), (n, 256*n, 3);
    ``levels``: those numbers / 257 (the 8-bit pass's table)."""
    first, rest = (stages[0], stages[1:]) if stages else ({}, ())
    tail = {k: v for k, v in first.items() if k not in _PER_CHANNEL}

    def run(rows: np.ndarray) -> np.ndarray:
        out = apply_pixel_ops(rows, tail)
        for settings in rest:
            out = apply_pixel_ops(out, settings)
        return out

    # numpy releases the GIL in its ufuncs: split the grid by blue rows across cores
    start = _grid_through(first, _GRID)
    coarse = np.concatenate(list(_POOL.map(run, np.array_split(start, _WORKERS, axis=0))), axis=0)
    return _green_levels(coarse, _GREEN_INDEX, _GREEN_WEIGHT, levels=levels)


def _green_levels(coarse: np.ndarray, index: np.ndarray, weight: np.ndarray, *, levels: bool = False) -> np.ndarray:
    """A grid (n, green, n, 3) in 0..1 with green resampled to 256 levels (``index``/``weight``) and
    rounded: float32 whole numbers 0..65535, (n, 256*n, 3); ``levels``: those numbers / 257."""
    # One blue slice at a time (each pass stays in the CPU's cache; the same float32 operations, so the
    # same numbers, as on the whole array at once).
    n = LUT_POINTS
    fine = np.empty((n, 256, n, 3), np.float32)
    w = weight[:, None, None]
    w_lo = 1.0 - w
    hi = np.empty((256, n, 3), np.float32)
    for b in range(n):
        lo = fine[b]
        np.take(coarse[b], index, axis=0, out=lo)
        lo *= w_lo
        np.take(coarse[b], index + 1, axis=0, out=hi)
        hi *= w
        lo += hi
        lo *= 65535.0
        lo += 0.5
        np.clip(lo, 0, 65535.0, out=lo)
        np.floor(lo, out=lo)
        if levels:
            lo *= np.float32(1.0 / 257.0)
    return fine.reshape(n, 256 * n, 3)


def _green_bytes(coarse: np.ndarray, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """:func:`_green_levels` for a draft: uint8 levels rounded once, (n, 256*n, 3). On the whole
    array at once (a draft's grid is small; a few calls instead of a few per blue slice)."""
    w = weight[None, :, None, None]
    lo = np.take(coarse, index, axis=1)
    lo *= 1.0 - w
    hi = np.take(coarse, index + 1, axis=1)
    hi *= w
    lo += hi
    lo *= 255.0
    lo += 0.5
    np.clip(lo, 0, 255.0, out=lo)
    return lo.astype(np.uint8).reshape(LUT_POINTS, -1, 3)   # truncation of values >= 0: the floor


def _frozen_stages(stages: tuple[Mapping[str, int], ...]) -> tuple:
    return tuple(tuple(sorted(s.items())) for s in stages)


#: Red and blue samples of a draft's grid: a quarter of the points of the exact grid's 33 x 33. The
#: table's 33 red and blue places are read from them through a cubic (see :func:`_draft_table`).
DRAFT_POINTS = 17


@lru_cache(maxsize=8)
def _draft_grid(stages: tuple) -> np.ndarray:
    """``stages`` (frozen, see :func:`_frozen_stages`) evaluated on the draft grid (DRAFT_POINTS x
    DRAFT_GREEN x DRAFT_POINTS), read-only. Cached: every frame of an exposure or contrast drag has the
    same stages here (see :func:`_draft_table`)."""
    out = _grid(DRAFT_POINTS, DRAFT_GREEN)
    for settings in stages:
        out = apply_pixel_ops(out, dict(settings))
    out.flags.writeable = False
    return out


def _head_positions(head: Mapping[str, int], values: np.ndarray, points: int) -> tuple[np.ndarray, np.ndarray]:
    """Where ``values`` land, after the per-channel ``head`` ops, on a warped axis of ``points`` samples."""
    return _axis_read(_through_head(head, values) if head else values, points)


#: The 256 8-bit levels as 0..1.
_LEVELS = np.arange(256, dtype=np.float32) / np.float32(255.0)


def _along(grid: np.ndarray, axis: int, index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """``grid`` (0..1) read along ``axis`` between samples ``index`` and ``index + 1`` at ``weight``:
    Catmull-Rom through the four nearest samples (a linear read here would be a second linear
    interpolation on top of the LUT's own: half again the draft's mean error), clipped to 0..1."""
    shape = [1] * grid.ndim
    shape[axis] = -1
    t = weight.reshape(shape)
    t2, t3 = t * t, t * t * t
    taps = (np.maximum(index - 1, 0), index, index + 1, np.minimum(index + 2, grid.shape[axis] - 1))
    weights = (0.5 * (t2 + t2 - t3 - t), 1.5 * t3 - 2.5 * t2 + 1.0, 0.5 * (4.0 * t2 - 3.0 * t3 + t),
               0.5 * (t3 - t2))
    out = np.take(grid, taps[0], axis=axis) * weights[0]
    for i, w in zip(taps[1:], weights[1:]):
        out += np.take(grid, i, axis=axis) * w
    return np.clip(out, 0.0, 1.0, out=out)


def _draft_table(stages: tuple[Mapping[str, int], ...]) -> np.ndarray:
    """A draft's uint8 table (see :func:`compile_table`), for the frames shown while a slider moves.

    The exact math runs on a grid of a quarter of the exact one's red/blue points (:data:`DRAFT_POINTS`)
    and half its green ones (:data:`DRAFT_GREEN`), without the first stage's per-channel head (exposure,
    contrast): the head moves where each axis is read instead (a 1-D curve per axis; every frame of an
    exposure or contrast drag then finds the grid cached). Red and blue are read at the table's 33
    places, so moved, through a Catmull-Rom cubic (linear reads would add a second linear interpolation
    to the LUT's own: half again the mean error), and green is resampled to 256 levels at its moved
    places. The bench prints the draft's error against the exact math."""
    first, rest = (stages[0], stages[1:]) if stages else ({}, ())
    head = {k: first[k] for k in _PER_CHANNEL if first.get(k)}
    tail = {k: v for k, v in first.items() if k not in head}
    coarse = _draft_grid(_frozen_stages((tail, *rest)))
    i, w = _head_positions(head, _grid_values(LUT_POINTS), DRAFT_POINTS)
    coarse = _along(_along(coarse, 2, i, w), 0, i, w)
    index, weight = _head_positions(head, _LEVELS, DRAFT_GREEN)
    return _green_bytes(coarse, index, weight)


def compile_lut(*stages: Mapping[str, int]) -> np.ndarray:
    """Compile the per-pixel ops of one or more settings (applied in order)
    into a uint16 LUT image of shape (33, 256*33, 3).

    The exact math runs on a 33 x 65 x 33 grid (red, green, blue; packed
    towards 0 and 255); green is then resampled to all 256 levels so one
    bilinear remap can apply it. 16-bit entries keep the interpolated result
    within one rounding of the exact math (an 8-bit LUT would round twice).
    """
    return np.ascontiguousarray(_compiled(stages).astype(np.uint16))


def compile_table(*stages: Mapping[str, int], draft: bool = False) -> np.ndarray:
    """``lookup_table(compile_lut(*stages))`` without the uint16 image in between (the same numbers).

    ``draft``: a uint8 table from a coarser grid (:func:`_draft_table`), for frames shown while a slider
    moves (the frame kept when it stops is exact)."""
    if not draft:
        return _compiled(stages, levels=True)
    # uint8 entries: OpenCV's 8-bit remap takes half the time of its float one, for a few hundredths
    # of a level more error (the bench prints the draft's error against the exact math)
    return _draft_table(stages)


# The same table, one contiguous column per channel (red, green, blue).
_COORD_COLUMNS = tuple(np.ascontiguousarray(COORD_TABLE[:, 0, c]) for c in range(3))


#: Rows per strip of a LUT pass. A strip's coordinates and 16-bit result stay in the CPU's caches, and
#: no pass allocates more than its output: memory is the input plus the output, at any photo size.
STRIP_ROWS = 32


def _strips(height: int, rows: int = STRIP_ROWS):
    for y in range(0, height, rows):
        yield slice(y, min(height, y + rows))


class _StripWork:
    """The buffers one strip of a LUT pass works in, made once per pass: a fresh buffer per strip
    would be fresh pages from the OS each time (page faults: as much system time as the work)."""

    def __init__(self, width: int, lut: np.ndarray | None = None):
        n = STRIP_ROWS
        self.planes = [np.empty((n, width), np.uint8) for _ in range(3)]
        self.positions = [np.empty((n, width), np.float32) for _ in range(3)]
        self.xy, self.frac = np.empty((n, width, 2), np.int16), np.empty((n, width), np.uint16)
        self.looked = None if lut is None else np.empty((n, width, lut.shape[2]), lut.dtype)

    def coordinates(self, img: np.ndarray, xy: np.ndarray | None = None, frac: np.ndarray | None = None):
        """LUT coordinates of a strip, into ``xy`` / ``frac`` (default: this work's own buffers)."""
        rows = img.shape[0]
        # Split the 8-bit channels first: a quarter of the memory traffic of splitting float32 positions.
        planes = cv2.split(img, [p[:rows] for p in self.planes])
        r, g, b = (cv2.LUT(c, t, dst=p[:rows]) for c, t, p in zip(planes, _COORD_COLUMNS, self.positions))
        cv2.add(r, g, dst=r)
        return cv2.convertMaps(r, b, cv2.CV_16SC2, dstmap1=self.xy[:rows] if xy is None else xy,
                               dstmap2=self.frac[:rows] if frac is None else frac)

    def remap(self, lut: np.ndarray, xy: np.ndarray, frac: np.ndarray, out: np.ndarray) -> None:
        """The LUT (float32 0..255, or a uint8 draft) looked up at a strip's coordinates, in 8 bits into ``out``."""
        if lut.dtype == np.uint8:   # a draft table: looked up straight into the output
            cv2.remap(lut, xy, frac, cv2.INTER_LINEAR, dst=out, borderMode=cv2.BORDER_REPLICATE)
            return
        looked = cv2.remap(lut, xy, frac, cv2.INTER_LINEAR, dst=self.looked[:xy.shape[0]],
                           borderMode=cv2.BORDER_REPLICATE)
        cv2.convertScaleAbs(looked, dst=out)


def lookup_table(lut: np.ndarray) -> np.ndarray:
    """A compiled uint16 LUT image as the float32 0..255 table the 8-bit pass interpolates: OpenCV's
    float remap is vectorised, 16-bit is not (40% less time at 4K; the same bytes but for one value
    in a million, one level off, where the old double rounding of a tie went the other way)."""
    if lut.dtype in (np.float32, np.uint8):   # already a table (uint8: a draft's, see compile_table)
        return lut
    return lut.astype(np.float32) * np.float32(1.0 / 257.0)


def lut_coordinates(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-point remap maps that look each pixel of ``img`` up in a LUT image
    (int16 HxWx2 and uint16 HxW: 6 bytes per pixel)."""
    img = np.ascontiguousarray(img)
    h, w = img.shape[:2]
    xy, frac = np.empty((h, w, 2), np.int16), np.empty((h, w), np.uint16)
    work = _StripWork(w)
    for s in _strips(h):
        work.coordinates(img[s], xy[s], frac[s])
    return xy, frac


def apply_lut(lut: np.ndarray, coords: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """One pass: every pixel through the LUT (bilinear in red/blue, exact in green), uint8 HxWx3."""
    xy, frac = coords
    lut = lookup_table(lut)
    out = np.empty(frac.shape + (3,), np.uint8)
    if lut.dtype == np.uint8:   # a draft table needs no buffer between lookup and output: one call
        cv2.remap(lut, xy, frac, cv2.INTER_LINEAR, dst=out, borderMode=cv2.BORDER_REPLICATE)
        return out
    work = _StripWork(frac.shape[1], lut)
    for s in _strips(frac.shape[0]):
        work.remap(lut, xy[s], frac[s], out[s])
    return out


def apply_lut_image(lut: np.ndarray, img: np.ndarray,
                    keep: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """``apply_lut(lut, lut_coordinates(img))`` in one pass of strips, without the full-size coordinates
    (6 bytes a pixel) unless ``keep`` (arrays shaped like :func:`lut_coordinates`' result) asks to fill them."""
    img = np.ascontiguousarray(img)
    h, w = img.shape[:2]
    lut = lookup_table(lut)
    out = np.empty((h, w, 3), np.uint8)
    work = _StripWork(w, lut)
    for s in _strips(h):
        xy, frac = work.coordinates(img[s], *((keep[0][s], keep[1][s]) if keep is not None else ()))
        work.remap(lut, xy, frac, out[s])
    return out


#: Side of the tiles in which :func:`patched_coordinates` recomputes coordinates.
PATCH_TILE = 64


def patched_coordinates(img: np.ndarray, ref: np.ndarray, ref_coords: tuple[np.ndarray, np.ndarray]):
    """LUT coordinates of ``img`` given those of ``ref`` (same shape): copied, and recomputed only in the
    tiles where the pixels differ. Coordinates are per pixel, so this equals ``lut_coordinates(img)``."""
    h, w = img.shape[:2]
    diff = cv2.absdiff(img, ref).reshape(h, w * 3)
    rows = np.flatnonzero(diff.max(axis=1))  # numpy's max is vectorised along a row; cv2.reduce is not
    if not len(rows):
        return ref_coords
    xy, frac = (c.copy() for c in ref_coords)
    t = PATCH_TILE
    for ty in np.unique(rows // t) * t:
        band = diff[ty:ty + t].max(axis=0).reshape(w, 3).max(axis=1)
        tiles = np.zeros((w + t - 1) // t + 1, bool)
        tiles[np.flatnonzero(band) // t] = True
        # runs of changed tiles along the band: one call each
        edges = np.flatnonzero(np.diff(np.concatenate([[False], tiles])))
        for x0, x1 in zip(edges[::2] * t, np.minimum(edges[1::2] * t, w)):
            xy[ty:ty + t, x0:x1], frac[ty:ty + t, x0:x1] = lut_coordinates(img[ty:ty + t, x0:x1])
    return xy, frac


_WARP16 = None


def apply_lut_deep(lut: np.ndarray, img: np.ndarray) -> np.ndarray:
    """A LUT image applied to uint16 RGB at 16-bit precision: bilinear in red/blue as in
    :func:`apply_lut`, and linear between the two nearest of the 256 green slices."""
    global _WARP16
    if _WARP16 is None:
        _WARP16 = ((LUT_POINTS - 1) * _warp(np.arange(65536) / 65535.0)).astype(np.float32)
    out = np.empty(img.shape[:2] + (3,), np.uint16)
    for s in _strips(img.shape[0]):  # float temporaries of a strip only (a whole 49 MP frame would need 2 GB)
        out[s] = _lut_deep_strip(lut, img[s])
    return out


def _lut_deep_strip(lut: np.ndarray, img: np.ndarray) -> np.ndarray:
    r = _WARP16[img[..., 0]]
    b = _WARP16[img[..., 2]]
    g = img[..., 1].astype(np.float32) * np.float32(255.0 / 65535.0)
    g0 = np.minimum(np.floor(g), 254.0)
    frac = (g - g0)[..., None]
    x0 = g0 * np.float32(LUT_POINTS) + r
    lo = cv2.remap(lut, x0, b, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    hi = cv2.remap(lut, x0 + np.float32(LUT_POINTS), b, cv2.INTER_LINEAR,
                   borderMode=cv2.BORDER_REPLICATE).astype(np.float32)
    return np.clip(lo + (hi - lo) * frac + 0.5, 0, 65535).astype(np.uint16)


def pixel_settings(settings: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in settings.items() if v and ops.OPS[k].kind == "pixel"}


def spatial_settings(settings: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in settings.items() if v and ops.OPS[k].kind == "spatial"}


def _finish_settings(settings: Mapping[str, int]) -> dict[str, int]:
    return {k: v for k, v in settings.items() if v and ops.OPS[k].kind == "finish"}


def geometry_settings(settings: Mapping[str, int]) -> dict[str, int]:
    """The geometry ops of ``settings`` (crop, rotate, flip, straighten)."""
    return {k: v for k, v in settings.items() if v and ops.OPS[k].kind == "geometry"}


def in_frame_of(state: EditState, framing: EditState) -> EditState:
    """``state`` developed as before but framed like ``framing`` (its geometry replaced).

    The judge compares the original and the previous version with the new one
    through the new frame: ``in_frame_of(EditState(), new)`` is the original, cropped.
    """
    settings = {k: v for k, v in state.settings.items() if ops.OPS[k].kind != "geometry"}
    settings.update(geometry_settings(framing.settings))
    return EditState(settings=ops.check_settings(settings), layers=state.layers)


def blend(under: np.ndarray, over: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``over`` where mask is 1, ``under`` where it is 0, linear between."""
    m = np.ascontiguousarray(mask, dtype=np.float32)
    return cv2.blendLinear(under, over, 1.0 - m, m)


# -- the renderer ------------------------------------------------------------

#: Content masks found once per photo as soon as it arrives (Renderer.warm): the costly
#: detectors (LBP face cascade ~1 s, GrabCut ~0.5 s, sky ~0.1-0.3 s at 2-4 MP on one core).
#: Skin and the portrait features reuse the face boxes.
WARM_CONTENT = ("face", "subject", "sky")


class Renderer:
    """Renders EditStates of SourceImages, with bounded thread-safe caches.

    One Renderer serves many sessions at once: every cache is keyed by the
    original's content digest, so nothing is shared between different photos.
    """

    def __init__(self, max_cache_bytes: int = 768 * 2**20, blobs=None):
        #: Where painted masks (and other pixel assets a state refers to) are read: a pipeline.blobs.BlobStore.
        self.blobs = blobs
        #: The original with a state's generated layers composited, by (original, layers) key.
        self.generated: LRUCache = LRUCache(maxsize=4)
        self._generated_lock = threading.Lock()
        self.renders = BoundedCache(max_cache_bytes // 2)
        self.coords = BoundedCache(max_cache_bytes // 4)
        self.luts = BoundedCache(32 * 2**20)
        self.masks = MaskCache(max_cache_bytes // 4)
        self.framed = BoundedCache(max_cache_bytes // 8)
        self.tilts: BoundedCache = BoundedCache(1 << 20)
        #: Dust maps (pipeline.healing.DustMap: the measured candidates) per (original, size).
        self.dust = BoundedCache(max_cache_bytes // 16)

    def tilt(self, source: SourceImage) -> float:
        """Detected clockwise tilt of the original in degrees (cached per photo)."""
        cached = self.tilts.get(source.digest)
        if cached is None:
            cached = np.array([detect_tilt(source.pixels)], np.float64)
            self.tilts.put(source.digest, cached)
        return float(cached[0])

    def frame(self, source: SourceImage, state: EditState) -> Frame | None:
        """The frame of ``state`` on ``source`` (None when it has no geometry)."""
        g = geometry_settings(state.settings)
        if not g:
            return None
        tilt = self.tilt(source) if g.get("auto_straighten") else 0.0
        return frame_for(g, source.width, source.height, tilt, self.keep_boxes(source) if g.get("crop_aspect") else ())

    def keep_boxes(self, source: SourceImage) -> list[tuple[float, float, float, float]]:
        """What an aspect crop must not cut (fractions of the original): the faces found, or the main
        subject's box when there is no face (both cached per photo)."""
        faces = face_boxes(source.pixels, cache=self.masks, key=source.digest)
        if faces:
            return faces
        subject = self.mask(source, {"type": "subject"}, source.size_for(320)) > 0.5
        if not subject.any():
            return []
        ys, xs = np.nonzero(subject)
        h, w = subject.shape
        return [(xs.min() / w, ys.min() / h, (xs.max() + 1 - xs.min()) / w, (ys.max() + 1 - ys.min()) / h)]

    def framing_note(self, source: SourceImage, state: EditState) -> str | None:
        """A sentence for the person when the aspect crop of ``state`` could not keep every face (or
        the subject) whole; None when it did, or there is no aspect crop."""
        frame = self.frame(source, state)
        if frame is None or frame.kept_all:
            return None
        label = ASPECTS[int(geometry_settings(state.settings).get("crop_aspect", 0))]
        what = "every face" if face_boxes(source.pixels, cache=self.masks, key=source.digest) else "the whole subject"
        return (f"A {label} crop can't keep {what} in the frame: they are too far apart for it, so it keeps "
                f"as much as fits. A wider aspect (or no aspect crop) keeps them all.")

    def output_size(self, source: SourceImage, state: EditState, long_side: int | None = None) -> tuple[int, int]:
        """(height, width) of the render of ``state`` at ``long_side`` (None = full resolution)."""
        frame = self.frame(source, state)
        return frame.size_at(long_side) if frame else source.size_for(long_side)

    def _base(self, source: SourceImage, frame: Frame | None, size: tuple[int, int]) -> np.ndarray:
        """The original at ``size``, seen through ``frame``."""
        if frame is None:
            return source.resized(size)
        key = (source.digest, frame.matrix.tobytes(), frame.width, frame.height, size)
        return self.framed.get_or_create(key, lambda: _frozen(framed(source.pixels, frame, size)))

    def mask_for(self, source: SourceImage, spec: Mapping, state: EditState, long_side: int | None = None,
                 feather: float = 0) -> np.ndarray:
        """The soft mask of ``spec`` in the frame of ``state`` at ``long_side``: computed on
        the original and warped through the same crop, rotation and flip as the pixels."""
        frame = self.frame(source, state)
        if frame is None:
            return self.mask(source, spec, source.size_for(long_side), feather)
        size = frame.size_at(long_side)
        return self._frame_mask(source, spec, frame, size, feather)

    def _frame_mask(self, source: SourceImage, spec: Mapping, frame: Frame, size: tuple[int, int],
                    feather: float) -> np.ndarray:
        key = (source.digest, json.dumps(spec, sort_keys=True), frame.matrix.tobytes(), frame.width,
               frame.height, size, feather, "mask")
        return self.framed.get_or_create(key, lambda: _frozen(self._warp_mask(source, spec, frame, size, feather)))

    def _warp_mask(self, source: SourceImage, spec: Mapping, frame: Frame, size: tuple[int, int],
                   feather: float) -> np.ndarray:
        s = min(1.0, size[1] / frame.width)
        src_size = (max(1, round(source.height * s)), max(1, round(source.width * s)))
        # blobs: a painted selection on a cropped or rotated version reads its pixels like any other
        m = build_mask(spec, source.pixels, src_size, cache=self.masks, key=source.digest, blobs=self.blobs)
        m = framed_mask(m, frame, size, (source.height, source.width))
        return feather_mask(m, feather) if feather else m

    def warm(self, source: SourceImage, kinds: tuple[str, ...] = WARM_CONTENT) -> None:
        """Find the content regions of ``source`` now (faces, subject, sky: the detectors that cost
        most), so a later turn that asks for them reads the cache.

        Same masks as on demand (the same code, the same (digest, spec) keys), computed in a
        private cache and copied into the shared one where still missing: a turn that needs a
        region before warming reaches it computes it itself, at its own priority, rather than
        waiting for a background thread that may run at a low one.
        """
        scratch = MaskCache(self.masks.max_bytes)
        boxes = face_boxes_key(source.digest)
        for kind in kinds:
            if content_key(source.digest, {"type": kind}) in self.masks:
                continue
            found = self.masks.get(boxes)
            if found is not None and boxes not in scratch:
                scratch.put(boxes, found)
            build_mask({"type": kind}, source.pixels, (8, 8), cache=scratch, key=source.digest)
            for key in scratch.keys():
                if key not in self.masks:
                    self.masks.put(key, scratch.get(key))

    def lut(self, *stages: Mapping[str, int]) -> np.ndarray:
        """The uint16 LUT image of ``stages`` (:func:`compile_lut`), cached (the 16-bit path reads it)."""
        return self._cached_lut(stages, "uint16", compile_lut)

    def table(self, *stages: Mapping[str, int], draft: bool = False) -> np.ndarray:
        """The same LUT as the 8-bit pass reads it (:func:`compile_table`; ``draft``: its draft), cached."""
        if draft:
            return self._cached_lut(stages, "draft", lambda *s: compile_table(*s, draft=True))
        return self._cached_lut(stages, "table", compile_table)

    def _cached_lut(self, stages: tuple, kind: str, make) -> np.ndarray:
        key = (_frozen_stages(stages), kind)
        return self.luts.get_or_create(key, lambda: _frozen(make(*stages)))

    def _coords(self, source: SourceImage, size: tuple[int, int], frame: Frame | None = None):
        if frame is None:
            return self.coords.get_or_create((source.digest, size), lambda: lut_coordinates(source.resized(size)))
        key = (source.digest, frame.matrix.tobytes(), frame.width, frame.height, size, "coords")
        return self.coords.get_or_create(key, lambda: self._framed_coords(source, frame, size))

    def _lut_pass(self, source: SourceImage, size: tuple[int, int], frame: Frame | None, base: np.ndarray,
                  lut: np.ndarray) -> tuple[np.ndarray, tuple | None]:
        """``lut`` applied to ``base`` (the original at ``size`` through ``frame``), and the coordinates
        used when they are kept. Coordinates (6 bytes a pixel) are cached per photo and size when the
        cache can hold them, so a re-render is one remap; a size too big to keep (a full-size export)
        is done in one pass of strips that never holds them whole."""
        if 6 * size[0] * size[1] > self.coords.max_bytes:
            return apply_lut_image(lut, base), None
        key = (source.digest, size) if frame is None else \
            (source.digest, frame.matrix.tobytes(), frame.width, frame.height, size, "coords")
        coords = self.coords.get(key)
        if coords is not None:
            return apply_lut(lut, coords), coords
        if frame is not None:
            coords = self._coords(source, size, frame)
            return apply_lut(lut, coords), coords
        # a new photo: its coordinates are computed strip by strip in the same pass that applies the LUT
        coords = (np.empty(size + (2,), np.int16), np.empty(size, np.uint16))
        out = apply_lut_image(lut, base, coords)
        self.coords.put(key, coords)
        return out, coords

    def _framed_coords(self, source: SourceImage, frame: Frame, size: tuple[int, int]):
        """LUT coordinates of a framed base. A crop, quarter turn or flip at full resolution
        shows the original's own pixels, so its coordinates are the original's, sliced and
        turned (per-pixel maps): a new crop costs a slice, not a new 4K pass."""
        if frame.axis_aligned:
            x0, y0, x1, y1 = axis_box(frame, source.height, source.width)
            shape = (x1 - x0, y1 - y0) if frame.quarter % 2 else (y1 - y0, x1 - x0)
            if shape == size:
                full = self._coords(source, (source.height, source.width))
                return tuple(np.ascontiguousarray(orient(m[y0:y1, x0:x1], frame)) for m in full)
        return lut_coordinates(self._base(source, frame, size))

    def mask(self, source: SourceImage, spec: Mapping, size: tuple[int, int], feather: float = 0) -> np.ndarray:
        """The soft mask of ``spec`` at ``size`` (height, width), float32 0..1."""
        m = build_mask(spec, source.pixels, size, cache=self.masks, key=source.digest, blobs=self.blobs,
                       resized=source.resized)
        return feather_mask(m, feather) if feather else m

    def render(self, source: SourceImage, state: EditState, long_side: int | None = None, *,
               draft: bool = False) -> np.ndarray:
        """uint8 RGB render of ``state`` at ``long_side`` (None = full resolution).

        ``draft``: the colour and tone LUT is a draft (:func:`compile_table`), for the frames of a slider
        while it moves; the frame kept when it stops is rendered without it.
        The returned array is read-only (it may be shared through the cache).
        """
        source = self.with_generated(source, state)
        try:
            frame = self.frame(source, state)
        except ValueError as exc:
            raise RenderError(str(exc)) from None
        size = frame.size_at(long_side) if frame else source.size_for(long_side)
        # A draft frame is not kept: it is shown once while the slider moves, and a kept frame would make
        # every next frame fresh memory from the OS (page faults: a third of a frame's time)
        key = (source.digest, state.key(), size) if self.renders.max_bytes and not draft else None
        cached = self.renders.get(key) if key else None
        if cached is not None:
            return cached
        with admission.reserve(admission.render_bytes(*size), what="a render"):  # large ones queue
            out = self._render(source, state, size, frame, draft)
        out = _frozen(out) if out is not source.resized(size) else out
        if key:
            self.renders.put(key, out)
        return out

    # -- 16 bits and transparency (export of 16-bit / RAW / PNG-with-alpha originals) ---------------
    def render_deep(self, source: SourceImage, state: EditState, long_side: int | None = None) -> np.ndarray:
        """uint16 RGB render of ``state``: the 16-bit original through the tone/colour LUT at
        16-bit precision, plus whatever the 8-bit pipeline did beyond the LUT (retouch, layers,
        detail, finishing) added as its difference. Without a 16-bit original: the 8-bit render x 257."""
        with admission.reserve(admission.render_bytes(*self.output_size(source, state, long_side), deep=True),
                               what="a 16-bit render"):
            return self._render_deep(source, state, long_side)

    def _render_deep(self, source: SourceImage, state: EditState, long_side: int | None) -> np.ndarray:
        out8 = self.render(source, state, long_side)
        frame = self.frame(source, state)
        if source.deep is None:
            return out8.astype(np.uint16) * np.uint16(257)
        if frame is None:
            size = source.size_for(long_side)
            deep = source.deep if size == (source.height, source.width) else \
                cv2.resize(source.deep, (size[1], size[0]), interpolation=cv2.INTER_AREA)
            base8 = source.resized(size)
        else:
            size = frame.size_at(long_side)
            deep = framed(source.deep, frame, size)
            base8 = self._base(source, frame, size)
        g_pixel = pixel_settings(state.settings)
        if g_pixel:
            deep = apply_lut_deep(self.lut(g_pixel), deep)
            base8 = apply_lut_image(self.table(g_pixel), base8)
        if np.array_equal(out8, base8):
            return np.ascontiguousarray(deep)
        out = np.empty_like(deep)
        for s in _strips(out.shape[0]):  # int32 temporaries of a strip only
            residual = cv2.subtract(out8[s], base8[s], dtype=cv2.CV_32S)
            np.clip(deep[s].astype(np.int32) + residual * 257, 0, 65535, out=residual)
            out[s] = residual
        return out

    def alpha_for(self, source: SourceImage, state: EditState, long_side: int | None = None) -> np.ndarray | None:
        """The original's transparency in the frame of ``state`` at ``long_side`` (None: opaque)."""
        if source.alpha is None:
            return None
        frame = self.frame(source, state)
        if frame is None:
            size = source.size_for(long_side)
            if size == (source.height, source.width):
                return source.alpha
            return cv2.resize(source.alpha, (size[1], size[0]), interpolation=cv2.INTER_AREA)
        return framed(source.alpha, frame, frame.size_at(long_side))
    def with_generated(self, source: SourceImage, state: EditState) -> SourceImage:
        """The original with the state's generated layers composited (the original itself when it has none).

        Pure given the blob resolver: the stored pixels are composited, no model runs.
        """
        if not state.generated:
            return source
        if self.blobs is None:
            raise RenderError("this version has generated layers but the renderer has no blob store")
        key = composite_key(source.digest, state.generated)
        with self._generated_lock:
            hit = self.generated.get(key)
            if hit is not None:
                return hit
        try:
            pixels = composite(source.pixels, state.generated, self.blobs.get_array)
        except (LookupError, ValueError) as exc:
            raise RenderError(f"a generated layer could not be composited: {exc}") from None
        derived = SourceImage.from_array(pixels)
        with self._generated_lock:
            self.generated[key] = derived
        return derived

    # -- the retouch stage (healing, portrait): runs first, on the original's pixels ---------------
    def features(self, source: SourceImage) -> portrait.Features:
        """Faces, eyes and mouths of ``source`` (fractions of the frame), found once per original."""
        def find() -> np.ndarray:
            boxes = face_boxes(source.pixels, cache=self.masks, key=source.digest)
            return portrait.find_features(source.pixels, boxes).to_array()
        return portrait.Features.from_array(self.masks.get_or_compute((source.digest, "portrait-features"), find))

    def retouched(self, source: SourceImage, state: EditState,
                  size: tuple[int, int]) -> tuple[np.ndarray, RetouchReport] | None:
        """The original at ``size`` (unframed) with the state's retouch ops applied, and what they did
        (None: no retouch)."""
        key = retouch_key(state)
        if key is None:
            return None
        cache_key = (source.digest, "retouch", key, size)
        hit = self.renders.get(cache_key)
        if hit is not None:
            return hit[0], hit[1]
        img, report = apply_retouch(
            source.resized(size), state, features=lambda: self.features(source),
            skin=lambda: self.mask(source, {"type": "skin"}, size),
            region=lambda spec, feather: self.mask(source, spec, size, feather),
            dust=lambda: self.dust_map(source, size))
        img = _frozen(img) if img is not source.resized(size) else img
        self.renders.put(cache_key, (img, report))
        return img, report

    def dust_map(self, source: SourceImage, size: tuple[int, int]) -> healing.DustMap:
        """:func:`pipeline.healing.dust_map` of the original at ``size``, kept per photo and size:
        a new dust amount costs only its thresholds."""
        return self.dust.get_or_create((source.digest, size), lambda: healing.dust_map(source.resized(size)).frozen())

    def retouch_report(self, source: SourceImage, state: EditState, long_side: int | None = None) -> RetouchReport:
        """What the retouch ops of ``state`` did at ``long_side`` (spots healed, notes for the person)."""
        done = self.retouched(source, state, source.size_for(long_side))
        return done[1] if done is not None else RetouchReport()

    def _retouched_base(self, source: SourceImage, state: EditState, size: tuple[int, int],
                        frame: Frame | None, coords: bool = True):
        """(base pixels, LUT coordinates) when the state retouches, else None
        (``coords=False``: the coordinates are not needed and are None).

        Retouching works on the original's own frame (spots and regions are found
        there), at the scale of the output; the result is then framed like the original.
        A heal changes few pixels: the coordinates are the untouched base's (cached per
        photo, frame and size), recomputed only in the tiles whose pixels the heal changed."""
        key = retouch_key(state)
        if key is None:
            return None
        if frame is None:
            img, _ = self.retouched(source, state, size)
            if not coords:
                return img, None
            ref, ref_coords = source.resized(size), self._coords(source, size)
            hit = self.renders.get_or_create((source.digest, "retouch-coords", key, size),
                                             lambda: patched_coordinates(img, ref, ref_coords))
            return img, tuple(hit)
        s = min(1.0, size[1] / frame.width)
        src_size = (max(1, round(source.height * s)), max(1, round(source.width * s)))
        img, _ = self.retouched(source, state, src_size)
        if not coords:
            return self.framed.get_or_create(
                (source.digest, "retouch-framed-pixels", key, frame.matrix.tobytes(), frame.width, frame.height, size),
                lambda: _frozen(framed_image(img, frame, size, (source.height, source.width)))), None
        ref, ref_coords = self._framed_reference(source, frame, size, src_size)
        cache_key = (source.digest, "retouch-framed", key, frame.matrix.tobytes(), frame.width,
                     frame.height, size)

        def make():
            base = _frozen(framed_image(img, frame, size, (source.height, source.width)))
            return (base, *patched_coordinates(base, ref, ref_coords))
        base, *coords = self.framed.get_or_create(cache_key, make)
        return base, tuple(coords)

    def _framed_reference(self, source: SourceImage, frame: Frame, size: tuple[int, int],
                          src_size: tuple[int, int]):
        """The untouched original at ``src_size`` framed exactly as a retouched copy of that size is,
        and its LUT coordinates: what a heal's framed base is compared with."""
        if src_size == (source.height, source.width):
            return self._base(source, frame, size), self._coords(source, size, frame)
        key = (source.digest, "framed-reference", frame.matrix.tobytes(), frame.width, frame.height, size)

        def make():
            ref = _frozen(framed_image(source.resized(src_size), frame, size, (source.height, source.width)))
            return (ref, *lut_coordinates(ref))
        ref, *coords = self.framed.get_or_create(key, make)
        return ref, tuple(coords)

    def _render(self, source: SourceImage, state: EditState, size: tuple[int, int],
                frame: Frame | None = None, draft: bool = False) -> np.ndarray:
        base = self._base(source, frame, size)

        def table(*stages: Mapping[str, int]) -> np.ndarray:
            return self.table(*stages, draft=draft)

        if state.is_identity:
            return base
        g_pixel = pixel_settings(state.settings)
        # No colour or tone op anywhere: no LUT pass, so no LUT coordinates to build or patch.
        needs_lut = bool(g_pixel) or any(pixel_settings(layer.settings) for layer in state.layers)
        retouched = self._retouched_base(source, state, size, frame, coords=needs_lut)
        coords = None
        if retouched is not None:
            base, coords = retouched
        if not g_pixel:
            out = base
        elif coords is not None:
            out = apply_lut(table(g_pixel), coords)
        else:
            out, coords = self._lut_pass(source, size, frame, base, table(g_pixel))
        masks: list[np.ndarray | None] = []
        fresh = True  # is `out` still LUT(base)? then a layer is one composite LUT on cached coordinates
        for layer in state.layers:
            if not (pixel_settings(layer.settings) or spatial_settings(layer.settings)
                    or _finish_settings(layer.settings)):
                masks.append(None)  # empty, or a retouch-only layer (remove): done in the retouch stage
                continue
            if frame is None:
                mask = self.mask(source, layer.mask, size, layer.feather)
            else:
                mask = self._frame_mask(source, layer.mask, frame, size, layer.feather)
            if layer.opacity != 1.0:
                mask = mask * np.float32(layer.opacity)
            masks.append(mask)
            l_pixel = pixel_settings(layer.settings)
            if not l_pixel:
                continue
            if fresh:
                lut = table(g_pixel, l_pixel) if g_pixel else table(l_pixel)
                layer_img = apply_lut(lut, coords) if coords is not None else apply_lut_image(lut, base)
            else:
                layer_img = apply_lut_image(table(l_pixel), out)
            out = blend(out, layer_img, mask)
            fresh = False
        finish = _finish_settings(state.settings)
        out = apply_denoise(out, finish)
        for layer, mask in zip(state.layers, masks):
            l_finish = _finish_settings(layer.settings)
            if l_finish and mask is not None:
                out = blend(out, apply_denoise(out, l_finish), mask)
        out = apply_spatial_ops(out, spatial_settings(state.settings))
        for layer, mask in zip(state.layers, masks):
            l_spatial = spatial_settings(layer.settings)
            if l_spatial and mask is not None:
                out = blend(out, apply_spatial_ops(out, l_spatial), mask)
        return apply_finish(out, finish)


def render(original: np.ndarray, state: EditState, long_side: int | None = None, *, blobs=None) -> np.ndarray:
    """Pure function: uint8 RGB ``original`` rendered with ``state``
    (``blobs``: the BlobStore generated layers and painted masks live in).

    Same inputs, same bytes. For many renders of one photo use a
    :class:`Renderer` and a :class:`SourceImage`, which cache coordinates,
    LUTs, masks and results. ``blobs``: the BlobStore painted masks live in.
    """
    return Renderer(max_cache_bytes=0, blobs=blobs).render(SourceImage.from_array(original), state, long_side).copy()


def render_exact(original: np.ndarray, state: EditState, long_side: int | None = None) -> np.ndarray:
    """Reference render: the per-pixel math on every pixel in float (no LUT).

    Slow; used by the benchmark and tests to measure the LUT's error.
    """
    source = SourceImage.from_array(original)
    renderer = Renderer(max_cache_bytes=0)
    frame = renderer.frame(source, state)
    size = frame.size_at(long_side) if frame else source.size_for(long_side)
    base = renderer._base(source, frame, size)

    def exact(img: np.ndarray, *stages) -> np.ndarray:
        f = img.astype(np.float32) / 255.0
        for s in stages:
            f = apply_pixel_ops(f, s)
        return np.clip(f * 255.0 + 0.5, 0, 255).astype(np.uint8)

    g_pixel = pixel_settings(state.settings)
    out = exact(base, g_pixel) if g_pixel else base
    masks = []
    for layer in state.layers:
        mask = renderer.mask_for(source, layer.mask, state, long_side, layer.feather) * np.float32(layer.opacity)
        masks.append(mask)
        l_pixel = pixel_settings(layer.settings)
        if l_pixel:
            out = blend(out, exact(out, l_pixel), mask)
    finish = _finish_settings(state.settings)
    out = apply_denoise(out, finish)
    for layer, mask in zip(state.layers, masks):
        l_finish = _finish_settings(layer.settings)
        if l_finish:
            out = blend(out, apply_denoise(out, l_finish), mask)
    out = apply_spatial_ops(out, spatial_settings(state.settings))
    for layer, mask in zip(state.layers, masks):
        l_spatial = spatial_settings(layer.settings)
        if l_spatial:
            out = blend(out, apply_spatial_ops(out, l_spatial), mask)
    return apply_finish(out, finish)
