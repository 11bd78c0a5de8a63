"""The generated-region check: did a generative edit stay inside its mask, blend in and match the colours?

Three measurements on uint8 RGB at the canvas size (the image below the
generated layer, placed on the canvas, and the composite):

- ``preservation``: share of pixels outside the mask that are bit-for-bit
  unchanged (a generated layer must keep every one: 1.0);
- ``seam``: how much stronger edges are along the mask outline than just
  around it (mean Sobel magnitude of luminance, 8-bit levels; 0 = no seam);
- ``colour_delta``: CIE76 difference between the mean Lab colour of a ring
  just inside the mask and a ring just outside (only for remove and expand,
  where the new pixels should continue the surroundings).

Thresholds come from the model's profile (``quality_signatures``); the
embedded judge calls :func:`assess_generated` and the generation service
records the result with the version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import cv2
import numpy as np

DEFAULT_SIGNATURES = {"seam_max": 16.0, "colour_delta_max": 12.0, "min_preservation": 1.0}


@dataclass
class GeneratedRegionReport:
    score: float
    preservation: float
    seam: float
    colour_delta: float | None
    diagnoses: list[str] = field(default_factory=list)
    assessment: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"score": round(self.score, 4), "preservation": round(self.preservation, 6),
                "seam": round(self.seam, 3),
                "colour_delta": None if self.colour_delta is None else round(self.colour_delta, 3),
                "diagnoses": list(self.diagnoses), "assessment": self.assessment}


def _ring_width(mask: np.ndarray) -> int:
    ys, xs = np.nonzero(mask)
    extent = min(int(ys.max() - ys.min() + 1), int(xs.max() - xs.min() + 1)) if len(ys) else 1
    return int(np.clip(round(extent * 0.08), 2, 24))


def _luma(img: np.ndarray) -> np.ndarray:
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)


def assess_generated(before: np.ndarray, after: np.ndarray, mask: np.ndarray, *, operation: str = "fill",
                     signatures: Mapping[str, Any] | None = None) -> GeneratedRegionReport:
    """Score a generated region: ``before``/``after`` uint8 RGB (same size), ``mask`` uint8/bool (255 = generated)."""
    sig = {**DEFAULT_SIGNATURES, **{k: v for k, v in (signatures or {}).items() if k in DEFAULT_SIGNATURES}}
    hard = (np.asarray(mask) > 0).astype(np.uint8)
    if before.shape != after.shape or hard.shape != after.shape[:2]:
        raise ValueError(f"before {before.shape}, after {after.shape} and mask {hard.shape} must match")
    outside = hard == 0
    same = np.all(before == after, axis=-1)
    preservation = float(same[outside].mean()) if outside.any() else 1.0

    r = _ring_width(hard)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    grown, shrunk = cv2.dilate(hard, kernel), cv2.erode(hard, kernel)
    edge = cv2.dilate(hard, np.ones((3, 3), np.uint8)) - cv2.erode(hard, np.ones((3, 3), np.uint8))
    # only the outline inside the frame (an expand's mask meets the frame edge)
    edge[[0, -1], :] = 0
    edge[:, [0, -1]] = 0
    lum = _luma(after)
    grad = cv2.magnitude(cv2.Sobel(lum, cv2.CV_32F, 1, 0, ksize=3), cv2.Sobel(lum, cv2.CV_32F, 0, 1, ksize=3)) / 4.0
    around = ((grown - shrunk) > 0) & (edge == 0)
    seam = 0.0
    if edge.any() and around.any():
        seam = max(0.0, float(grad[edge > 0].mean() - grad[around].mean()))

    colour_delta = None
    if operation in ("remove", "expand"):
        inner, outer = (hard > 0) & (shrunk == 0), (grown > 0) & (hard == 0)
        if inner.any() and outer.any():
            lab = cv2.cvtColor(after.astype(np.float32) / 255.0, cv2.COLOR_RGB2LAB)
            colour_delta = float(np.linalg.norm(lab[inner].mean(0) - lab[outer].mean(0)))

    diagnoses = []
    if preservation < float(sig["min_preservation"]):
        diagnoses.append("changed_outside_mask")
    if seam > float(sig["seam_max"]):
        diagnoses.append("seam")
    if colour_delta is not None and colour_delta > float(sig["colour_delta_max"]):
        diagnoses.append("colour_mismatch")
    seam_score = float(np.clip(1.0 - max(0.0, seam - sig["seam_max"]) / max(sig["seam_max"], 1e-6), 0, 1))
    colour_score = 1.0 if colour_delta is None else float(
        np.clip(1.0 - max(0.0, colour_delta - sig["colour_delta_max"]) / max(sig["colour_delta_max"], 1e-6), 0, 1))
    score = 0.5 * (1.0 if preservation >= sig["min_preservation"] else preservation * 0.5) \
        + 0.25 * seam_score + 0.25 * colour_score
    words = {"changed_outside_mask": "pixels outside the area changed", "seam": "a visible edge around the area",
             "colour_mismatch": "the colours inside do not match the surroundings"}
    text = ("The new area blends in and nothing outside it changed." if not diagnoses
            else "Check the result: " + "; ".join(words[d] for d in diagnoses) + ".")
    return GeneratedRegionReport(score=float(score), preservation=preservation, seam=seam,
                                 colour_delta=colour_delta, diagnoses=diagnoses, assessment=text)
