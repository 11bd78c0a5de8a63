"""Building masks: a spec and the original -> a soft float32 (h, w) mask in 0..1 at any size.

:func:`build_mask` validates the spec and the image once, then hands off: geometric and
per-pixel masks come from :mod:`pipeline.masks.shapes`, content-aware ones from
:mod:`pipeline.masks.detectors` at analysis resolution, cached in a
:class:`pipeline.masks.cache.MaskCache` and resized; feather and invert come last.
"""

from __future__ import annotations

from typing import Any, Callable

import cv2
import numpy as np

from pipeline.masks.cache import DEFAULT_MASK_CACHE, MaskCache, content_key, face_boxes_key, image_digest
from pipeline.masks.detectors import (CONTENT_SIDE, FACE_SIDE, SUBJECT_SIDE, detect_faces, face_mask, skin_mask,
                                      sky_mask, spot_mask, subject_mask)
from pipeline.masks.shapes import (color_mask, fit_long_side, gradient_mask, luminance_mask, radial_mask,
                                   resize_mask, shade_mask)
from pipeline.masks.specs import MaskSpecError, normalize_mask_spec

#: ``feather: 100`` is a gaussian blur whose sigma is this fraction of the mask's short side.
FEATHER_MAX = 0.05


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
            self._copies[side] = fit_long_side(self.original, side)
        return self._copies[side]

    def face_boxes(self) -> np.ndarray:
        """(N, 4) float32 face boxes as fractions, cached with the masks."""
        return self.cache.get_or_compute(face_boxes_key(self.key),
                                         lambda: detect_faces(self.analysis(FACE_SIDE)).reshape(-1, 4))



def _subject(canvas: _Canvas) -> np.ndarray:
    """The main subject: the people, from the person model, when there is a face and the LiteRT
    runtime (IoU 0.74 against 0.57 for the saliency cut on a labelled portrait, bench --peers);
    else the saliency cut."""
    import pipeline.masks.models as models

    if models.available() and len(canvas.face_boxes()):
        return models.person_mask(canvas.analysis(CONTENT_SIDE))
    return subject_mask(canvas.analysis(SUBJECT_SIDE))


#: Below this share of the frame the person model found no one to hold skin to.
PERSON_MIN_SHARE = 0.02


def _skin(canvas: _Canvas) -> np.ndarray:
    """Skin: the skin-tone model (learnt from the faces found), held to the people the person model
    finds when the LiteRT runtime is here (IoU 0.558 against 0.522 on six hand-labelled photos, no photo
    worse: a wooden table or a sandy beach is no longer skin; bench --peers). Without the runtime, or
    when it finds no one, the skin-tone model alone."""
    import pipeline.masks.models as models

    skin = skin_mask(canvas.analysis(CONTENT_SIDE), canvas.face_boxes())
    if not models.available():
        return skin
    person = models.person_mask(canvas.analysis(CONTENT_SIDE))
    if person.shape != skin.shape or float(person.mean()) < PERSON_MIN_SHARE:
        return skin
    return (skin * person).astype(np.float32)


def _spot(spec: dict, canvas: _Canvas) -> np.ndarray:
    """A spot mask at analysis size: the part of the frame built at that size, the thing found in it."""
    img = canvas.analysis(CONTENT_SIDE)
    part = _Canvas(canvas.original, img.shape[:2], canvas.cache, canvas.key)
    part.blobs = canvas.blobs
    return spot_mask(img, spec["tone"], _build(spec["within"], part))


_CONTENT: dict[str, Callable[[_Canvas], np.ndarray]] = {
    "face": lambda canvas: face_mask(canvas.analysis(FACE_SIDE), canvas.face_boxes()),
    "skin": _skin,
    "sky": lambda canvas: sky_mask(canvas.analysis(CONTENT_SIDE)),
    "subject": lambda canvas: _subject(canvas),
}


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
        mask = resize_mask(canvas.painted(spec["blob"]), h, w)
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
    elif kind == "spot":
        # the thing stands out in the part of the frame it is said to be in, read at analysis size
        small = canvas.cache.get_or_compute(content_key(canvas.key, spec), lambda: _spot(spec, canvas))
        mask = resize_mask(small, h, w)
    elif kind == "shade":
        # relative to the whole photo: read once at analysis size, cached like the content masks
        small = canvas.cache.get_or_compute(content_key(canvas.key, spec), lambda: shade_mask(
            canvas.analysis(CONTENT_SIDE), spec["band"], spec["share"]))
        mask = resize_mask(small, h, w)
    else:
        small = canvas.cache.get_or_compute(content_key(canvas.key, spec), lambda: _CONTENT[kind](canvas))
        mask = resize_mask(small, h, w)
    if spec.get("feather"):
        mask = feather_mask(mask, spec["feather"])
    if spec.get("invert"):
        mask = 1.0 - mask
    return mask.astype(np.float32, copy=False)

