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
- ``{"type": "shade", "band": "green", "share": 0.01..0.5}``: the photo's own shade of a
  named colour, the pixels leaning furthest towards it in CIELAB (at most ``share``
  of the frame), cached like the content-aware masks ("the green mat").
- ``{"type": "spot", "tone": "bright" | "dark" | BAND, "within": SPEC}``: the one thing
  standing out most by that tone inside ``within``, the part of the frame a person said
  it is in ("the bright crater top left"), found in the original and cached like the
  content-aware masks.
- ``{"type": "gradient", "start": [x, y], "end": [x, y]}``: 1 at ``start``
  falling smoothly to 0 at ``end`` (a graduated filter).
- ``{"type": "radial", "center": [x, y], "radius": [rx, ry], "softness": 0..1}``:
  1 inside the ellipse, soft edge.
- ``{"type": "face"}``, ``{"type": "skin"}``, ``{"type": "sky"}``,
  ``{"type": "subject"}``: content-aware, computed from the original, cached per
  (original, spec). Faces and (for a photo with people) the subject come from
  MediaPipe's models bundled in ``models/`` when the optional LiteRT runtime is
  installed (:mod:`.models`), else from OpenCV heuristics; nothing is downloaded.
- ``{"type": "painted", "blob": DIGEST}``: a mask painted, clicked or boxed
  in the studio (``Studio.select``), stored as an 8-bit grey PNG in a
  content-addressed :class:`pipeline.blobs.BlobStore`; ``build_mask`` needs
  ``blobs=`` to read it. ``{"type": "selection"}`` stands for the session's
  latest selection in a plan; the agent replaces it with that painted spec
  before anything is built.
- ``{"type": "invert", "mask": SPEC}``, ``{"type": "intersect", "masks": [SPEC, ...]}``,
  ``{"type": "union", "masks": [SPEC, ...]}``: combinations.

:func:`build_mask` (:mod:`.build`) turns a spec and the original into the mask at any size;
content-aware results live in a :class:`MaskCache` keyed by (original digest,
canonical spec). A colour mask selects ``hue ± hue_width/2`` fully and fades to
nothing at ``hue ± hue_width``. Faces come from BlazeFace (:mod:`.models`) or,
without its runtime, the LBP frontal-face cascade bundled with scikit-image.

The package's rooms: :mod:`.specs` (validation, canonical form, JSON schema),
:mod:`.words` (a mask in a person's words), :mod:`.shapes` (geometric and per-pixel
masks), :mod:`.detectors` (faces, skin, sky, subject), :mod:`.models` (the bundled face and
person models), :mod:`.cache` (the mask cache
and its keys) and :mod:`.build` (spec + original -> mask). The names below are the
package's public interface; callers import them from ``pipeline.masks``.
"""

from pipeline.masks.build import FEATHER_MAX, build_mask, face_boxes, feather_mask
from pipeline.masks.cache import (DEFAULT_CACHE_BYTES, DEFAULT_MASK_CACHE, MaskCache, content_key,
                                  face_boxes_key, image_digest)
from pipeline.masks.detectors import CONTENT_SIDE, FACE_SIDE, SUBJECT_SIDE
from pipeline.masks.shapes import color_mask, gradient_mask, luminance_mask, radial_mask
from pipeline.masks.specs import (CONTENT_TYPES, MASK_TYPES, SELECTION_TYPES, MaskSpecError, mask_json_schema,
                                  normalize_mask_spec)
from pipeline.masks.words import describe_mask, where_words

__all__ = [
    "CONTENT_SIDE", "CONTENT_TYPES", "DEFAULT_CACHE_BYTES", "DEFAULT_MASK_CACHE", "FACE_SIDE", "FEATHER_MAX",
    "MASK_TYPES", "SELECTION_TYPES", "SUBJECT_SIDE", "MaskCache", "MaskSpecError", "build_mask", "color_mask",
    "content_key", "describe_mask", "face_boxes", "face_boxes_key", "feather_mask", "gradient_mask",
    "image_digest", "luminance_mask", "mask_json_schema", "normalize_mask_spec", "radial_mask", "where_words",
]
