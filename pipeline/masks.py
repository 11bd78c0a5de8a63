"""Mask specs -> soft masks.

A mask spec is a small JSON object that lives inside an EditState layer. The
same spec gives the same soft mask (float32, 0..1, HxW) at any resolution.
Coordinates are fractions of the image (0..1, origin top-left), so a spec
means the same thing on a proxy and on the full-resolution export.

Spec types (every spec may carry ``"feather": 0..100``, a blur of up to 5% of
the short side, and ``"invert": true``):

- ``{"type": "luminance", "low": 0..1, "high": 0..1, "softness": 0..1}``
  tones between low and high (Rec.709 luma of the original, display-referred).
- ``{"type": "color", "hue": 0..360, "hue_width": 1..180, "min_saturation": 0..1}``
  or ``{"type": "color", "band": "blue"}``: a hue range with soft edges.
- ``{"type": "gradient", "start": [x, y], "end": [x, y]}``: 1 at ``start``
  falling smoothly to 0 at ``end`` (a graduated filter).
- ``{"type": "radial", "center": [x, y], "radius": [rx, ry], "softness": 0..1}``:
  1 inside the ellipse, soft edge.
- ``{"type": "face"}``, ``{"type": "skin"}``, ``{"type": "sky"}``,
  ``{"type": "subject"}``: content-aware, computed from the original with
  OpenCV only (no downloaded models), cached per (original, spec).
- ``{"type": "painted", "blob": DIGEST}``: a mask painted, clicked or boxed
  in the studio (``Studio.select``), stored as an 8-bit grey PNG in a
  content-addressed :class:`pipeline.blobs.BlobStore`; ``build_mask`` needs
  ``blobs=`` to read it. ``{"type": "selection"}`` stands for the session's
  latest selection in a plan; the agent replaces it with that painted spec
  before anything is built.
- ``{"type": "invert", "mask": SPEC}``, ``{"type": "intersect", "masks": [SPEC, ...]}``,
  ``{"type": "union", "masks": [SPEC, ...]}``: combinations.

:func:`build_mask` turns a spec and the original into the mask at any size;
content-aware results live in a :class:`MaskCache` keyed by (original digest,
canonical spec). A colour mask selects ``hue ± hue_width/2`` fully and fades to
nothing at ``hue ± hue_width``. Faces come from the LBP frontal-face cascade
bundled with scikit-image (OpenCV 5 wheels no longer ship Haar cascades).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Mapping

import cv2
import numpy as np

from pipeline.ops import BANDS


class MaskSpecError(ValueError):
    """A malformed mask spec: the message names the bad field."""


CONTENT_TYPES = ("face", "skin", "sky", "subject")
_COMBINE = ("invert", "intersect", "union")
#: Masks that refer to pixels a person selected (stored blobs), see Studio.select.
SELECTION_TYPES = ("painted", "selection")
MASK_TYPES = ("luminance", "color", "gradient", "radial") + CONTENT_TYPES + _COMBINE + SELECTION_TYPES

# field -> (lo, hi, default) for numeric fields of each type
_NUMERIC: dict[str, dict[str, tuple[float, float, float]]] = {
    "luminance": {"low": (0, 1, 0.0), "high": (0, 1, 1.0), "softness": (0, 1, 0.1)},
    "color": {"hue": (0, 360, 0.0), "hue_width": (1, 180, 30.0), "min_saturation": (0, 1, 0.12)},
    "radial": {"softness": (0, 1, 0.5)},
    "gradient": {},
    "face": {}, "skin": {}, "sky": {}, "subject": {},
}
_POINTS: dict[str, dict[str, tuple[float, float]]] = {
    "gradient": {"start": (0.5, 0.0), "end": (0.5, 1.0)},
    "radial": {"center": (0.5, 0.5), "radius": (0.3, 0.3)},
}
_COMMON = {"type", "feather", "invert"}


def _num(where: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise MaskSpecError(f"{where}: expected a number {lo}..{hi}, got {value!r}")
    if not lo <= value <= hi:
        raise MaskSpecError(f"{where}: {value!r} is outside {lo}..{hi}")
    return float(value)


def _point(where: str, value: Any) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise MaskSpecError(f"{where}: expected [x, y] as fractions of the image, got {value!r}")
    return [round(_num(f"{where}[{i}]", v, -1, 2), 4) for i, v in enumerate(value)]


def normalize_mask_spec(spec: Any, where: str = "mask") -> dict:
    """Validate ``spec`` and return it in canonical form (defaults filled, rounded).

    Canonical specs compare equal when they describe the same mask, so a
    planner that says "the sky" twice edits one layer, not two.
    """
    if not isinstance(spec, Mapping):
        raise MaskSpecError(f"{where}: expected an object with a 'type', got {type(spec).__name__}")
    kind = spec.get("type")
    if kind not in MASK_TYPES:
        raise MaskSpecError(f"{where}.type: expected one of {', '.join(MASK_TYPES)}, got {kind!r}")
    out: dict[str, Any] = {"type": kind}
    if kind == "invert":
        allowed = _COMMON | {"mask"}
        if "mask" not in spec:
            raise MaskSpecError(f"{where}.mask: required for an invert mask")
        out["mask"] = normalize_mask_spec(spec["mask"], f"{where}.mask")
    elif kind in ("intersect", "union"):
        allowed = _COMMON | {"masks"}
        masks = spec.get("masks")
        if not isinstance(masks, list) or not 1 <= len(masks) <= 8:
            raise MaskSpecError(f"{where}.masks: expected a list of 1..8 mask specs")
        out["masks"] = [normalize_mask_spec(m, f"{where}.masks[{i}]") for i, m in enumerate(masks)]
    elif kind == "painted":
        allowed = _COMMON | {"blob"}
        blob = spec.get("blob")
        if not isinstance(blob, str) or len(blob) != 64 or any(c not in "0123456789abcdef" for c in blob):
            raise MaskSpecError(f"{where}.blob: expected the 64-character digest of a stored mask, got {blob!r}")
        out["blob"] = blob
    elif kind == "selection":
        allowed = set(_COMMON)
    else:
        numeric = _NUMERIC[kind]
        points = _POINTS.get(kind, {})
        allowed = _COMMON | set(numeric) | set(points) | ({"band"} if kind == "color" else set())
        if kind == "color" and "band" in spec:
            band = spec["band"]
            if band not in BANDS:
                raise MaskSpecError(f"{where}.band: expected one of {', '.join(BANDS)}, got {band!r}")
            if "hue" in spec:
                raise MaskSpecError(f"{where}: give either 'band' or 'hue', not both")
            out["hue"] = BANDS[band]
        for name, (lo, hi, default) in numeric.items():
            if name in out:
                continue
            out[name] = round(_num(f"{where}.{name}", spec.get(name, default), lo, hi), 4)
        for name, default in points.items():
            out[name] = _point(f"{where}.{name}", spec.get(name, list(default)))
        if kind == "luminance" and out["low"] > out["high"]:
            raise MaskSpecError(f"{where}: low ({out['low']}) is above high ({out['high']})")
        if kind == "radial" and min(out["radius"]) <= 0:
            raise MaskSpecError(f"{where}.radius: both radii must be above 0")
        if kind == "gradient" and out["start"] == out["end"]:
            raise MaskSpecError(f"{where}: start and end are the same point")
    unknown = set(spec) - allowed
    if unknown:
        raise MaskSpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} for a {kind} mask")
    feather = spec.get("feather", 0)
    if feather:
        out["feather"] = round(_num(f"{where}.feather", feather, 0, 100), 2)
    inv = spec.get("invert", False)
    if not isinstance(inv, bool):
        raise MaskSpecError(f"{where}.invert: expected true or false, got {inv!r}")
    if inv:
        out["invert"] = True
    return out


def where_words(target: Mapping | None) -> str:
    """' on the sky' for a local target, '' for the whole photo (' on a local area' for a spec it cannot name)."""
    if not target:
        return ""
    try:
        return f" on {describe_mask(target)}"
    except (KeyError, TypeError, ValueError):
        return " on a local area"


def describe_mask(spec: Mapping) -> str:
    """A short phrase a person understands: 'the sky', 'blue colours', 'top of the frame'."""
    kind = spec.get("type")
    prefix = "outside " if spec.get("invert") else ""
    if kind in ("sky", "face", "skin", "subject"):
        text = {"sky": "the sky", "face": "faces", "skin": "skin", "subject": "the subject"}[kind]
    elif kind == "luminance":
        lo, hi = spec.get("low", 0), spec.get("high", 1)
        text = "the shadows" if hi <= 0.4 else "the highlights" if lo >= 0.6 else f"tones {lo:.0%}-{hi:.0%}"
    elif kind == "color":
        hue = spec.get("hue", 0)
        band = min(BANDS, key=lambda b: min(abs(BANDS[b] - hue), 360 - abs(BANDS[b] - hue)))
        text = f"{band} colours"
    elif kind == "gradient":
        (x0, y0), (x1, y1) = spec.get("start", (0.5, 0)), spec.get("end", (0.5, 1))
        if abs(y1 - y0) >= abs(x1 - x0):
            text = "the top of the frame" if y0 < y1 else "the bottom of the frame"
        else:
            text = "the left of the frame" if x0 < x1 else "the right of the frame"
    elif kind == "radial":
        text = "a radial area"
    elif kind in SELECTION_TYPES:
        text = "the selection"
    elif kind == "invert":
        text = "everything but " + describe_mask(spec["mask"])
    else:
        joiner = " and " if kind == "union" else " within "
        text = joiner.join(describe_mask(m) for m in spec.get("masks", []))
    return prefix + text


def mask_json_schema() -> dict:
    """JSON Schema of a mask spec (recursive for combinations)."""
    point = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
    props: dict[str, Any] = {
        "type": {"type": "string", "enum": list(MASK_TYPES)},
        "feather": {"type": "number", "minimum": 0, "maximum": 100},
        "invert": {"type": "boolean"},
        "band": {"type": "string", "enum": list(BANDS)},
        "start": point, "end": point, "center": point, "radius": point,
        "mask": {"$ref": "#/$defs/mask"},
        "masks": {"type": "array", "items": {"$ref": "#/$defs/mask"}, "minItems": 1, "maxItems": 8},
        "blob": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    }
    for fields in _NUMERIC.values():
        for name, (lo, hi, _) in fields.items():
            props[name] = {"type": "number", "minimum": lo, "maximum": hi}
    mask = {"type": "object", "required": ["type"], "additionalProperties": False, "properties": props}
    return {"$defs": {"mask": mask}, "$ref": "#/$defs/mask"}


# ---------------------------------------------------------------------------
# Building masks: spec + original -> float32 (h, w) in 0..1
# ---------------------------------------------------------------------------

#: Sky and skin masks are computed on a copy of the original with this long side.
CONTENT_SIDE = 768
#: Faces are searched on a copy with this long side (the cascade's 20 px window is ~3% of it).
FACE_SIDE = 640
#: Saliency and GrabCut for the subject run on a copy with this long side.
SUBJECT_SIDE = 320
#: ``feather: 100`` is a gaussian blur whose sigma is this fraction of the mask's short side.
FEATHER_MAX = 0.05
#: Default budget of :data:`DEFAULT_MASK_CACHE`.
DEFAULT_CACHE_BYTES = 64 * 2**20


class MaskCache:
    """Thread-safe least-recently-used cache of content-aware masks, bounded by bytes.

    Keys are ``(original digest, canonical spec json)``. Values are read-only
    float32 arrays at analysis resolution (a 768 x 512 sky mask is 1.5 MB), so
    sharing one array between threads and callers is safe. A key is computed at
    most once even when several threads ask for it at the same time; a value
    larger than ``max_bytes`` is returned but not kept.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes: expected an integer >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, np.ndarray] = OrderedDict()
        self._nbytes = 0
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}
        self._hits = 0
        self._computed = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    @property
    def nbytes(self) -> int:
        """Bytes held now (always <= ``max_bytes``)."""
        with self._lock:
            return self._nbytes

    def stats(self) -> dict:
        """``{"entries", "bytes", "max_bytes", "hits", "computed"}``: ``computed`` counts
        the masks that :meth:`get_or_compute` had to build."""
        with self._lock:
            return {"entries": len(self._items), "bytes": self._nbytes, "max_bytes": self.max_bytes,
                    "hits": self._hits, "computed": self._computed}

    def keys(self) -> list[Hashable]:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._items)

    def get(self, key: Hashable) -> np.ndarray | None:
        """The cached mask for ``key`` (marking it recently used), or None."""
        with self._lock:
            return self._lookup(key)

    def put(self, key: Hashable, mask: np.ndarray) -> np.ndarray:
        """Store a read-only float32 copy of ``mask`` and return it."""
        value = np.array(mask, dtype=np.float32)
        value.setflags(write=False)
        with self._lock:
            self._store(key, value)
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The cached mask for ``key``, calling ``compute()`` only on a miss.

        Concurrent callers with the same key wait for the one computation
        instead of repeating it; different keys compute in parallel.
        """
        with self._lock:
            found = self._lookup(key)
            if found is not None:
                return found
            gate = self._computing.setdefault(key, threading.Lock())
        try:
            with gate:
                with self._lock:
                    found = self._lookup(key)
                    if found is not None:
                        return found
                value = np.ascontiguousarray(compute(), dtype=np.float32)
                value.setflags(write=False)
                with self._lock:
                    self._computed += 1
                    self._store(key, value)
                return value
        finally:
            with self._lock:
                if self._computing.get(key) is gate:
                    del self._computing[key]

    def clear(self) -> None:
        """Forget every mask (counters are kept)."""
        with self._lock:
            self._items.clear()
            self._nbytes = 0

    # The two helpers below expect self._lock to be held.
    def _lookup(self, key: Hashable) -> np.ndarray | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
            self._hits += 1
        return found

    def _store(self, key: Hashable, value: np.ndarray) -> None:
        if value.nbytes > self.max_bytes:
            return
        old = self._items.pop(key, None)
        if old is not None:
            self._nbytes -= old.nbytes
        self._items[key] = value
        self._nbytes += value.nbytes
        while self._nbytes > self.max_bytes:
            _, evicted = self._items.popitem(last=False)
            self._nbytes -= evicted.nbytes


#: The cache :func:`build_mask` uses when it is given none. It is the module's only
#: shared state and is itself thread-safe; it holds masks, never session data.
DEFAULT_MASK_CACHE = MaskCache()


def image_digest(original: np.ndarray) -> str:
    """Content digest (hex) of a pixel array, used as the cache key when none is given."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((original.shape, str(original.dtype))).encode())
    h.update(np.ascontiguousarray(original).data)
    return h.hexdigest()


def build_mask(spec: Any, original: np.ndarray, size: tuple[int, int], *,
               cache: MaskCache | None = None, key: str | None = None, blobs: Any = None,
               resized: Callable[[tuple[int, int]], np.ndarray] | None = None) -> np.ndarray:
    """Soft mask for ``spec`` at ``size`` = (height, width): float32, 0..1, 1 = fully selected.

    ``original`` is the untouched uint8 RGB original (HxWx3, any resolution; a
    downscaled copy gives nearly the same mask). ``key`` is its content digest;
    content-aware masks (face, skin, sky, subject) are computed once per
    (key, spec) at analysis resolution, kept in ``cache`` (default
    :data:`DEFAULT_MASK_CACHE`) and resized. Luminance and colour masks are
    computed per pixel at the target size, gradients and radials analytically,
    so the same spec gives the same mask, up to resampling, at any size.

    ``blobs`` (a :class:`pipeline.blobs.BlobStore`) is where painted masks are read.
    ``resized(size)``, when given, returns ``original`` area-downscaled to ``size``
    (a renderer's cached copy, e.g. ``SourceImage.resized``): luminance and colour
    masks then reuse it instead of resizing the full original again.

    Raises :class:`MaskSpecError` for a bad spec (or a painted mask that cannot
    be read) and ``ValueError`` for a bad image or size.
    """
    spec = normalize_mask_spec(spec)
    _check_original(original)
    height, width = _check_size(size)
    canvas = _Canvas(original, (height, width), DEFAULT_MASK_CACHE if cache is None else cache, key)
    canvas.blobs = blobs
    canvas.resized = resized
    mask = _build(spec, canvas)
    if not mask.flags.writeable or mask.dtype != np.float32:
        mask = np.array(mask, dtype=np.float32)
    return np.clip(mask, 0.0, 1.0, out=mask)


def face_boxes(original: np.ndarray, *, cache: MaskCache | None = None,
               key: str | None = None) -> list[tuple[float, float, float, float]]:
    """Frontal faces in ``original`` as ``(x, y, w, h)`` fractions of the image (origin top-left).

    Uses the LBP frontal-face cascade that ships with scikit-image (OpenCV 5
    wheels no longer bundle Haar cascades); detections are kept only if they
    are mostly skin-toned (colour photos), which removes most false hits.
    """
    _check_original(original)
    canvas = _Canvas(original, original.shape[:2], DEFAULT_MASK_CACHE if cache is None else cache, key)
    return [tuple(float(v) for v in row) for row in canvas.face_boxes()]


def feather_mask(mask: np.ndarray, feather: float) -> np.ndarray:
    """Gaussian-soften ``mask`` (float32 HxW): ``feather`` 0..100, 100 = sigma of 5% of the short side.

    Returns a new array; the mean is kept (reflecting borders).
    """
    h, w = mask.shape
    sigma = float(feather) / 100.0 * FEATHER_MAX * min(h, w)
    if sigma < 0.3:
        return np.array(mask, dtype=np.float32)
    # A wide gaussian at 4K is slow; the blurred result is smooth, so blur a
    # copy where sigma is ~6 px and upsample it.
    scale = min(1.0, 6.0 / sigma)
    sw, sh = max(8, round(w * scale)), max(8, round(h * scale))
    if scale < 1.0 and sw < w and sh < h:
        small = cv2.resize(mask, (sw, sh), interpolation=cv2.INTER_AREA)
        small = cv2.GaussianBlur(small, (0, 0), sigma * sw / w, borderType=cv2.BORDER_REFLECT)
        return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    return cv2.GaussianBlur(mask.astype(np.float32), (0, 0), sigma, borderType=cv2.BORDER_REFLECT)


# --- boundary checks ---------------------------------------------------------

def _check_original(original: Any) -> None:
    if not isinstance(original, np.ndarray) or original.dtype != np.uint8 \
            or original.ndim != 3 or original.shape[2] != 3 or min(original.shape[:2]) < 1:
        got = f"{original.dtype} array of shape {original.shape}" if isinstance(original, np.ndarray) \
            else type(original).__name__
        raise ValueError(f"original: expected a uint8 RGB array (height, width, 3), got {got}")


def _check_size(size: Any) -> tuple[int, int]:
    ok = isinstance(size, (tuple, list)) and len(size) == 2 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in size)
    if not ok:
        raise ValueError(f"size: expected (height, width) as two positive integers, got {size!r}")
    return int(size[0]), int(size[1])


# --- small numeric helpers ---------------------------------------------------

def _smoothstep(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 below ``lo``, 1 above ``hi``, a smooth (C1) ramp between; new float32 array."""
    if hi <= lo:
        return (np.asarray(x) >= lo).astype(np.float32)
    t = (np.asarray(x, dtype=np.float32) - np.float32(lo)) * np.float32(1.0 / (hi - lo))
    return _smooth_unit(t)


def _smooth_unit(t: np.ndarray) -> np.ndarray:
    """In place: clip ``t`` (float32) to 0..1 and return 3t^2 - 2t^3."""
    np.clip(t, 0.0, 1.0, out=t)
    sq = t * t
    t *= np.float32(-2.0)
    t += np.float32(3.0)
    t *= sq
    return t


def _resize(mask: np.ndarray, height: int, width: int) -> np.ndarray:
    """A new float32 mask at (height, width); area-averaged when shrinking."""
    h, w = mask.shape
    if (h, w) == (height, width):
        return np.array(mask, dtype=np.float32)
    interp = cv2.INTER_AREA if height < h and width < w else cv2.INTER_LINEAR
    return cv2.resize(mask, (width, height), interpolation=interp)


def _fit_long_side(img: np.ndarray, side: int) -> np.ndarray:
    """``img`` resized so its long side is ``side`` (area-averaged down, bilinear up)."""
    h, w = img.shape[:2]
    scale = side / max(h, w)
    if scale == 1.0:
        return img
    interp = cv2.INTER_AREA if scale < 1.0 else cv2.INTER_LINEAR
    return cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=interp)


def _hue_sat_val(img: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """HSV of a uint8 RGB image: hue in degrees 0..360, saturation and value 0..1 (float32)."""
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
    lut = np.arange(256, dtype=np.float32)
    return (lut * np.float32(360.0 / 256.0))[hsv[..., 0]], (lut / 255.0)[hsv[..., 1]], (lut / 255.0)[hsv[..., 2]]


def _hue_weight(hue: np.ndarray, centre: float, width: float) -> np.ndarray:
    """Full weight within ``width/2`` degrees of ``centre``, fading smoothly to 0 at ``width``."""
    d = np.abs((np.asarray(hue, dtype=np.float32) - np.float32(centre) + 180.0) % 360.0 - 180.0)
    return 1.0 - _smoothstep(d, width / 2.0, width)


def _ellipse(height: int, width: int, cx: float, cy: float, rx: float, ry: float,
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
    return _smooth_unit(r)


# --- the build ---------------------------------------------------------------

class _Canvas:
    """What one :func:`build_mask` call needs from the original, each made at most once."""

    def __init__(self, original: np.ndarray, size: tuple[int, int], cache: MaskCache, key: str | None):
        self.original = original
        self.size = size
        self.cache = cache
        self._key = key
        self._at_target: np.ndarray | None = None
        self._copies: dict[int, np.ndarray] = {}
        self.blobs: Any = None
        self.resized: Callable[[tuple[int, int]], np.ndarray] | None = None

    def painted(self, digest: str) -> np.ndarray:
        """A stored painted mask (float32 0..1 at its stored size), cached like content masks."""
        def load() -> np.ndarray:
            if self.blobs is None:
                raise MaskSpecError("a painted mask needs the blob store it was saved in")
            try:
                arr = self.blobs.get_array(digest)
            except (LookupError, ValueError) as exc:
                raise MaskSpecError(f"the painted mask cannot be read: {exc}") from None
            if arr.ndim == 3:
                arr = arr[..., -1] if arr.shape[2] == 4 else arr.max(axis=2)
            scale = 1.0 / (65535.0 if arr.dtype == np.uint16 else 255.0)
            return arr.astype(np.float32) * np.float32(scale)
        return self.cache.get_or_compute(("painted", digest), load)

    @property
    def key(self) -> str:
        if self._key is None:
            self._key = image_digest(self.original)
        return self._key

    def at_target(self) -> np.ndarray:
        """The original resized to the target size (for per-pixel masks)."""
        if self._at_target is None:
            h, w = self.size
            oh, ow = self.original.shape[:2]
            if (oh, ow) == (h, w):
                self._at_target = self.original
            elif self.resized is not None and h < oh and w < ow:
                self._at_target = self.resized((h, w))   # the same INTER_AREA copy, already made
            else:
                interp = cv2.INTER_AREA if h < oh and w < ow else cv2.INTER_LINEAR
                self._at_target = cv2.resize(self.original, (w, h), interpolation=interp)
        return self._at_target

    def analysis(self, side: int) -> np.ndarray:
        """The original with its long side exactly ``side``: detectors and texture
        thresholds then see the same scale whether given the original or a proxy."""
        if side not in self._copies:
            self._copies[side] = _fit_long_side(self.original, side)
        return self._copies[side]

    def face_boxes(self) -> np.ndarray:
        """(N, 4) float32 face boxes as fractions, cached with the masks."""
        return self.cache.get_or_compute(face_boxes_key(self.key),
                                         lambda: _detect_faces(self.analysis(FACE_SIDE)).reshape(-1, 4))


def content_key(digest: str, spec: Mapping) -> tuple[str, str]:
    """The MaskCache key of a content-aware mask (face, skin, sky, subject) of the original with
    ``digest``: its canonical spec without feather and invert, which are applied after the cache."""
    core = {k: v for k, v in normalize_mask_spec(spec).items() if k not in ("feather", "invert")}
    return digest, json.dumps(core, sort_keys=True, separators=(",", ":"))


def face_boxes_key(digest: str) -> tuple[str, str]:
    """The MaskCache key of the face boxes of the original with ``digest`` (face, skin and portrait use them)."""
    return digest, "face-boxes"


def _build(spec: dict, canvas: _Canvas) -> np.ndarray:
    kind = spec["type"]
    h, w = canvas.size
    if kind == "invert":
        mask = 1.0 - _build(spec["mask"], canvas)
    elif kind == "intersect":
        mask = _build(spec["masks"][0], canvas)
        for part in spec["masks"][1:]:
            np.minimum(mask, _build(part, canvas), out=mask)
    elif kind == "union":
        mask = _build(spec["masks"][0], canvas)
        for part in spec["masks"][1:]:
            np.maximum(mask, _build(part, canvas), out=mask)
    elif kind == "painted":
        mask = _resize(canvas.painted(spec["blob"]), h, w)
    elif kind == "selection":
        raise MaskSpecError("there is no selection to use here: brush over, click or box an area first")
    elif kind == "gradient":
        mask = gradient_mask(spec["start"], spec["end"], (h, w))
    elif kind == "radial":
        mask = radial_mask(spec["center"], spec["radius"], spec["softness"], (h, w))
    elif kind == "luminance":
        mask = luminance_mask(canvas.at_target(), spec["low"], spec["high"], spec["softness"])
    elif kind == "color":
        mask = color_mask(canvas.at_target(), spec["hue"], spec["hue_width"], spec["min_saturation"])
    else:
        small = canvas.cache.get_or_compute(content_key(canvas.key, spec), lambda: _CONTENT[kind](canvas))
        mask = _resize(small, h, w)
    if spec.get("feather"):
        mask = feather_mask(mask, spec["feather"])
    if spec.get("invert"):
        mask = 1.0 - mask
    return mask.astype(np.float32, copy=False)


# --- geometric and per-pixel masks --------------------------------------------

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
        profile = 1.0 - _smooth_unit(ty + tx[0] if dx == 0 else tx + ty[0])
        shape = (h, 1) if dx == 0 else (1, w)
        return np.ascontiguousarray(np.broadcast_to(profile.reshape(shape), (h, w)))
    t = np.add.outer(ty, tx)
    t = _smooth_unit(t)
    t *= np.float32(-1.0)
    t += np.float32(1.0)
    return t


def radial_mask(center: tuple[float, float], radius: tuple[float, float], softness: float,
                size: tuple[int, int]) -> np.ndarray:
    """Ellipse at ``size`` = (h, w): centre [x, y] and radii [rx, ry] as fractions of width and
    height; 1 inside, fading over the outer ``softness`` (0..1) of the radius to 0 at the edge."""
    h, w = size
    return _ellipse(h, w, center[0] * w, center[1] * h, radius[0] * w, radius[1] * h, softness)


#: Rec.709 luma weights for R, G, B.
_REC709 = np.array([[0.2126, 0.7152, 0.0722]], dtype=np.float32)


def luminance_mask(img: np.ndarray, low: float, high: float, softness: float) -> np.ndarray:
    """Tones of ``img`` (uint8 RGB) whose Rec.709 luma (display-referred, 0..1) lies in
    ``low..high``: 1 inside, fading to 0 over ``softness`` beyond each end (none past 0 or 1)."""
    levels = np.arange(256, dtype=np.float32) / 255.0
    weight = np.ones(256, dtype=np.float32)
    if low > 0:
        weight *= _smoothstep(levels, low - softness, low) if softness > 0 else (levels >= low)
    if high < 1:
        weight *= 1.0 - (_smoothstep(levels, high, high + softness) if softness > 0 else (levels > high))
    luma = cv2.transform(img, _REC709)  # uint8, rounded: 256 levels are plenty for a mask
    return cv2.LUT(luma.reshape(luma.shape[:2]), weight)


def color_mask(img: np.ndarray, hue: float, hue_width: float, min_saturation: float) -> np.ndarray:
    """Pixels of ``img`` (uint8 RGB) whose HSV hue is within ``hue_width/2`` degrees of ``hue``
    (fading to 0 at ``hue_width``) and whose HSV saturation is above ``min_saturation``
    (full weight from 0.1 above it). Near-black pixels are left out: their hue is noise."""
    h_, s_, v_ = cv2.split(cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL))
    levels = np.arange(256, dtype=np.float32)
    hue_lut = _hue_weight(levels * np.float32(360.0 / 256.0), hue, hue_width)
    # below the floor nothing; full weight 0.1 above it (greys have no meaningful hue)
    sat_lut = _smoothstep(levels / 255.0, min_saturation, min_saturation + 0.1)
    val_lut = _smoothstep(levels / 255.0, 0.04, 0.12)
    mask = cv2.LUT(h_, hue_lut)
    cv2.multiply(mask, cv2.LUT(s_, sat_lut), dst=mask)
    cv2.multiply(mask, cv2.LUT(v_, val_lut), dst=mask)
    return mask


# --- content-aware masks (analysis resolution, cached) ---------------------------

def _skin_likelihood(img: np.ndarray) -> np.ndarray:
    """Generic skin-tone membership 0..1 of a uint8 RGB image.

    Soft version of the classic YCrCb box (Cr 133..173, Cb 77..127, Chai & Ngan)
    with a saturation floor (grey-beige walls are not skin) and no very dark
    or blown pixels (their chroma says nothing).
    """
    _, cr, cb = cv2.split(cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb).astype(np.float32))
    _, sat, val = _hue_sat_val(img)
    m = _smoothstep(cr, 128, 138) * (1.0 - _smoothstep(cr, 168, 178))
    m *= _smoothstep(cb, 72, 82) * (1.0 - _smoothstep(cb, 122, 132))
    m *= _smoothstep(sat, 0.10, 0.18) * (1.0 - _smoothstep(sat, 0.75, 0.9))
    m *= _smoothstep(val, 0.15, 0.3)
    return m


def _detect_faces(img: np.ndarray) -> np.ndarray:
    """(N, 4) float32 boxes (x, y, w, h) as fractions, from the LBP frontal-face cascade."""
    from skimage.data import lbp_frontal_face_cascade_filename  # bundled XML, no download
    from skimage.feature import Cascade

    h, w = img.shape[:2]
    gray = cv2.equalizeHist(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))
    # A fresh detector per call: cheap (~2 ms) and nothing shared between threads.
    detector = Cascade(lbp_frontal_face_cascade_filename())
    found = detector.detect_multi_scale(img=gray, scale_factor=1.08, step_ratio=1, min_size=(20, 20),
                                        max_size=(h, w), min_neighbor_number=6,
                                        intersection_score_threshold=0.5)
    _, sat, _ = _hue_sat_val(img)
    colourful = float(np.mean(sat > 0.15)) > 0.02
    skin = _skin_likelihood(img) if colourful else None
    boxes = []
    for f in found:
        x, y, bw, bh = f["c"], f["r"], f["width"], f["height"]
        if skin is not None:
            # The cascade fires on fur, wood and fabric too; a real face is mostly skin-toned.
            core = skin[y + bh // 4: y + 3 * bh // 4, x + bw // 4: x + 3 * bw // 4]
            if core.size == 0 or float(core.mean()) < 0.35:
                continue
        boxes.append((x / w, y / h, bw / w, bh / h))
    # A small hit on the hair or chin of a bigger face is the same person.
    boxes.sort(key=lambda b: -b[2] * b[3])
    kept: list[tuple[float, float, float, float]] = []
    for x, y, bw, bh in boxes:
        cx, cy = x + bw / 2, y + bh / 2
        if not any(abs(cx - (kx + kw / 2)) < kw and abs(cy - (ky + kh / 2)) < kh for kx, ky, kw, kh in kept):
            kept.append((x, y, bw, bh))
    return np.array(kept, dtype=np.float32).reshape(-1, 4)


def _face_ellipses(boxes: np.ndarray, height: int, width: int, grow: float = 1.0) -> np.ndarray:
    """Soft ellipses over face boxes, extended to take in hair and chin."""
    mask = np.zeros((height, width), np.float32)
    for x, y, bw, bh in boxes:
        cx, cy = (x + bw / 2) * width, (y + 0.45 * bh) * height
        rx, ry = 0.68 * bw * width * grow, 0.85 * bh * height * grow
        np.maximum(mask, _ellipse(height, width, cx, cy, rx, ry, 0.35), out=mask)
    return mask


def _face_mask(canvas: _Canvas) -> np.ndarray:
    img = canvas.analysis(FACE_SIDE)
    return _face_ellipses(canvas.face_boxes(), *img.shape[:2])


def _skin_mask(canvas: _Canvas) -> np.ndarray:
    img = canvas.analysis(CONTENT_SIDE)
    h, w = img.shape[:2]
    skin = _skin_likelihood(img)
    boxes = canvas.face_boxes()
    if len(boxes):
        # Learn this person's skin from the face centres (CrCb mean and spread),
        # then keep skin-toned pixels that match it, stronger near the people.
        ycc = cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb).astype(np.float32)[..., 1:]
        samples = []
        for x, y, bw, bh in boxes:
            x0, x1 = int((x + bw * 0.25) * w), int((x + bw * 0.75) * w)
            y0, y1 = int((y + bh * 0.3) * h), int((y + bh * 0.8) * h)
            patch, weight = ycc[y0:y1, x0:x1].reshape(-1, 2), skin[y0:y1, x0:x1].reshape(-1)
            samples.append(patch[weight > 0.5])
        pts = np.concatenate(samples)
        if len(pts) >= 20:
            mean = pts.mean(axis=0)
            cov = np.cov(pts.T) + np.eye(2) * 4.0  # floor: a few CrCb units of spread
            inv = np.linalg.inv(cov).astype(np.float32)
            d = ycc - mean.astype(np.float32)
            dist2 = (d[..., 0] ** 2 * inv[0, 0] + 2 * d[..., 0] * d[..., 1] * inv[0, 1]
                     + d[..., 1] ** 2 * inv[1, 1])
            personal = 1.0 - _smoothstep(np.sqrt(dist2), 2.5, 4.5)
            skin = np.maximum(skin * 0.5, personal * (skin > 0.05))
        # People's skin is near their faces: a broad region around each face and body below.
        near = np.zeros((h, w), np.float32)
        for x, y, bw, bh in boxes:
            near = np.maximum(near, _ellipse(h, w, (x + bw / 2) * w, (y + 2.5 * bh) * h,
                                             3.0 * bw * w, 4.0 * bh * h, 0.5))
        skin *= 0.35 + 0.65 * near
        np.maximum(skin, _face_ellipses(boxes, h, w) * _smoothstep(skin, 0.02, 0.2), out=skin)
    # Drop speckle, then let the edges follow the photo.
    skin = cv2.morphologyEx(skin, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return _refine(skin, img, radius=max(2, round(0.006 * min(h, w))), eps=1e-2)


def _refine(mask: np.ndarray, img: np.ndarray, radius: int, eps: float) -> np.ndarray:
    """Edge-aware smoothing of ``mask`` guided by the photo (guided filter), clipped to 0..1."""
    guide = img.astype(np.float32) / 255.0
    out = cv2.ximgproc.guidedFilter(guide, mask.astype(np.float32), radius, eps)
    return np.clip(out, 0.0, 1.0)


#: Mean b* / a* (Lab units) above which a grey, non-blue candidate is a warm surface, not sky.
_SKY_WARM_B = 2.0
_SKY_WARM_A = 2.0


def _sky_mask(canvas: _Canvas) -> np.ndarray:
    """Top-connected, smooth, blue or bright regions, refined along the skyline."""
    img = canvas.analysis(CONTENT_SIDE)
    h, w = img.shape[:2]
    f = img.astype(np.float32) / 255.0
    lab = cv2.cvtColor(f, cv2.COLOR_RGB2Lab)
    L = lab[..., 0]
    chroma = np.hypot(lab[..., 1], lab[..., 2])
    hue, sat, _ = _hue_sat_val(img)
    blue = _hue_weight(hue, 215.0, 70.0) * _smoothstep(sat, 0.08, 0.18)
    bright = _smoothstep(L, 55.0, 70.0) * (1.0 - _smoothstep(chroma, 12.0, 25.0))
    skyish = np.maximum(blue, bright)
    # Texture: local mean gradient of lightness in L units per pixel (sky is smooth).
    smooth_L = cv2.GaussianBlur(L, (0, 0), 1.0)
    gx = cv2.Sobel(smooth_L, cv2.CV_32F, 1, 0, ksize=3) / 8.0
    gy = cv2.Sobel(smooth_L, cv2.CV_32F, 0, 1, ksize=3) / 8.0
    texture = cv2.GaussianBlur(cv2.magnitude(gx, gy), (0, 0), 2.0)
    flat = 1.0 - _smoothstep(texture, 0.6, 1.5)
    candidate = ((skyish * flat) > 0.5).astype(np.uint8)
    # Keep the candidate regions that reach the top of the frame.
    top = max(2, round(0.04 * h))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(candidate, connectivity=8)
    keep = np.zeros(count, bool)
    for i in range(1, count):
        in_top = int(np.count_nonzero(labels[:top] == i))
        keep[i] = in_top >= 0.05 * top * w and stats[i, cv2.CC_STAT_AREA] >= 0.01 * h * w
        if keep[i]:
            part = labels == i
            # A flat bright region that is not blue must be neutral or cool to be an overcast sky:
            # a warm or pink grey at the top (a studio backdrop, a wall, a lamp-lit ceiling) is not.
            if float(blue[part].mean()) < 0.5 and (float(lab[..., 2][part].mean()) > _SKY_WARM_B
                                                   or float(lab[..., 1][part].mean()) > _SKY_WARM_A):
                keep[i] = False
    if not keep.any():
        return np.zeros((h, w), np.float32)
    sky = keep[labels].astype(np.uint8)
    # The texture test leaves a margin around towers, branches and the skyline;
    # take back nearby pixels whose colour matches the sky at the same height.
    sky = _grow_by_colour(sky, lab, reach=max(3, round(0.03 * min(h, w))), tolerance=7.0)
    # Close pinholes (stars, birds, JPEG blocks) that are inside the sky.
    sky = cv2.morphologyEx(sky, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    return _refine(sky.astype(np.float32), img, radius=max(2, round(0.012 * min(h, w))), eps=1e-3)


def _grow_by_colour(region: np.ndarray, lab: np.ndarray, reach: int, tolerance: float) -> np.ndarray:
    """Add pixels within ``reach`` px of ``region`` whose Lab colour is within ``tolerance``
    (Delta E) of the region's mean colour on the same row (sky changes with height)."""
    h = region.shape[0]
    weight = region.astype(np.float32)
    per_row = weight.sum(axis=1)
    rows = np.flatnonzero(per_row > 0)
    if rows.size == 0:
        return region
    means = (lab * weight[..., None]).sum(axis=1)[rows] / per_row[rows, None]
    # rows without sky take the colour of the nearest row that has some
    row_colour = np.stack([np.interp(np.arange(h), rows, means[:, c]) for c in range(3)], axis=1)
    dist = np.linalg.norm(lab - row_colour[:, None, :].astype(np.float32), axis=2)
    near = cv2.dilate(region, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1)))
    return (region | (near & (dist < tolerance))).astype(np.uint8)


def _subject_mask(canvas: _Canvas) -> np.ndarray:
    """The salient subject: a saliency map (colour contrast + spectral residual +
    fine-grained, with a gentle centre prior) boxes the subject, GrabCut cuts it
    out by colour, and the cut is kept where the saliency agrees."""
    img = canvas.analysis(SUBJECT_SIDE)
    h, w = img.shape[:2]
    sal = _saliency(img)
    hot = (sal >= 0.45).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(hot, connectivity=8)
    if count <= 1:
        return np.zeros((h, w), np.float32)
    areas = stats[1:, cv2.CC_STAT_AREA]
    # Box the main salient parts (small bright specks such as lamps are left out).
    parts = stats[1:][areas >= 0.3 * areas.max()]
    x0, y0 = parts[:, 0].min(), parts[:, 1].min()
    x1, y1 = (parts[:, 0] + parts[:, 2]).max(), (parts[:, 1] + parts[:, 3]).max()
    mx, my = int(0.08 * (x1 - x0)) + 2, int(0.08 * (y1 - y0)) + 2
    x0, y0, x1, y1 = max(2, x0 - mx), max(2, y0 - my), min(w - 2, x1 + mx), min(h - 2, y1 + my)
    cut = np.zeros((h, w), np.uint8)
    if x1 - x0 >= 4 and y1 - y0 >= 4:
        bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
        cv2.setRNGSeed(0)  # GrabCut's GMM init uses OpenCV's RNG: same photo, same mask
        cv2.grabCut(cv2.cvtColor(img, cv2.COLOR_RGB2BGR), cut, (int(x0), int(y0), int(x1 - x0), int(y1 - y0)),
                    bgd, fgd, 4, cv2.GC_INIT_WITH_RECT)
    fg = (((cut == cv2.GC_FGD) | (cut == cv2.GC_PR_FGD)) & (sal >= 0.2)).astype(np.uint8)
    if fg.mean() < 0.01:  # GrabCut found nothing: fall back to the saliency itself
        fg = hot
    fg = _largest_parts(fg)
    soft = _refine(fg.astype(np.float32), img, radius=max(2, round(0.015 * min(h, w))), eps=1e-2)
    return cv2.GaussianBlur(soft, (0, 0), 1.0)


def _saliency(img: np.ndarray) -> np.ndarray:
    """Saliency 0..1 of a small uint8 RGB image."""
    h, w = img.shape[:2]
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    lab = cv2.cvtColor(img.astype(np.float32) / 255.0, cv2.COLOR_RGB2Lab)
    # Frequency-tuned colour contrast (Achanta et al.): distance from the photo's mean colour.
    contrast = np.linalg.norm(cv2.GaussianBlur(lab, (0, 0), 2.0) - lab.reshape(-1, 3).mean(axis=0), axis=2)
    _, spectral = cv2.saliency.StaticSaliencySpectralResidual_create().computeSaliency(bgr)
    _, fine = cv2.saliency.StaticSaliencyFineGrained_create().computeSaliency(bgr)
    blur = 0.03 * min(h, w)
    sal = (_normalise(contrast) * 0.5
           + _normalise(cv2.GaussianBlur(_resize(np.asarray(spectral, np.float32), h, w), (0, 0), blur)) * 0.25
           + _normalise(cv2.GaussianBlur(np.asarray(fine, np.float32), (0, 0), blur)) * 0.25)
    # Photographers centre their subjects more often than not: a gentle centre prior.
    ys = ((np.arange(h, dtype=np.float32) + 0.5) / h - 0.5) / 0.35
    xs = ((np.arange(w, dtype=np.float32) + 0.5) / w - 0.5) / 0.35
    prior = np.exp(-0.5 * np.add.outer(ys ** 2, xs ** 2)).astype(np.float32)
    return _normalise(cv2.GaussianBlur(sal, (0, 0), 0.02 * min(h, w)) * (0.3 + 0.7 * prior))


def _normalise(x: np.ndarray) -> np.ndarray:
    """Stretch ``x`` to 0..1 (float32); a flat array becomes zeros."""
    x = np.asarray(x, np.float32)
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def _largest_parts(fg: np.ndarray, keep_share: float = 0.25) -> np.ndarray:
    """Keep connected parts at least ``keep_share`` of the largest one; fill their holes."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
    if count <= 1:
        return fg
    areas = stats[1:, cv2.CC_STAT_AREA]
    keep = np.zeros(count, bool)
    keep[1:] = areas >= keep_share * areas.max()
    out = keep[labels].astype(np.uint8)
    # Holes = background parts that do not touch the frame's edge.
    count, labels = cv2.connectedComponents((1 - out).astype(np.uint8), connectivity=4)
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    hole = np.ones(count, bool)
    hole[0] = False
    hole[edge] = False
    out[hole[labels]] = 1
    return out


_CONTENT: dict[str, Callable[[_Canvas], np.ndarray]] = {
    "face": _face_mask,
    "skin": _skin_mask,
    "sky": _sky_mask,
    "subject": _subject_mask,
}
