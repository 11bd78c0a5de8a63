"""Pixel checks: does a render show what the instruction asked for?

Everything here is judged from pixels with :mod:`pipeline.measure`, never from
the agent's own judge. Pure functions over uint8 RGB arrays (HxWx3) and float
masks (HxW, 0..1).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Mapping

import cv2
import numpy as np

from pipeline.measure import analysis_copy, image_stats, lab, ssim
from pipeline.ops import BANDS

if TYPE_CHECKING:   # scenarios read the statistic names from here
    from agent.eval.scenarios import Condition

#: Whole-image statistics from pipeline.measure.image_stats (units: L* 0..100,
#: a*/b*/chroma in Lab units, saturation and clip shares 0..1).
BASE_STATS = ("L_mean", "L_p01", "L_p50", "L_p99", "a_mean", "b_mean", "chroma_mean",
              "saturation_mean", "rms_contrast", "clip_high", "clip_low")
#: Detail statistics added here (L* units): ``local_contrast`` = mean |L - blur(L)|
#: with a large blur (what clarity moves), ``detail`` = mean |Laplacian of L|
#: (what sharpen moves).
DETAIL_STATS = ("local_contrast", "detail")
BAND_FIELDS = ("share", "hue_mean", "chroma_mean", "L_mean")
STAT_NAMES: tuple[str, ...] = BASE_STATS + DETAIL_STATS + tuple(
    f"bands.{b}.{f}" for b in BANDS for f in BAND_FIELDS)

#: Statistics whose change is measured around the hue circle (degrees).
CIRCULAR_STATS = frozenset(f"bands.{b}.hue_mean" for b in BANDS)


def _detail_stats(img: np.ndarray, mask: np.ndarray | None) -> dict[str, float]:
    small, m = analysis_copy(img, mask)
    L = lab(small)[..., 0]
    sigma = max(2.0, 0.02 * max(L.shape))
    local = np.abs(L - cv2.GaussianBlur(L, (0, 0), sigma))
    fine = np.abs(cv2.Laplacian(L, cv2.CV_32F, ksize=3))
    if m is None:
        return {"local_contrast": float(local.mean()), "detail": float(fine.mean())}
    w = m.astype(np.float32)
    s = float(w.sum())
    if s <= 1e-6:
        return {"local_contrast": 0.0, "detail": 0.0}
    return {"local_contrast": float((local * w).sum() / s), "detail": float((fine * w).sum() / s)}


def photo_stats(img: np.ndarray, mask: np.ndarray | None = None) -> dict[str, float]:
    """Every statistic in :data:`STAT_NAMES` for ``img`` (weighted by ``mask``), flat.

    Band statistics are flattened to ``bands.<band>.<field>``.
    """
    stats = image_stats(img, mask)
    flat = {k: float(stats[k]) for k in BASE_STATS}
    for band, fields in stats["bands"].items():
        for f in BAND_FIELDS:
            flat[f"bands.{band}.{f}"] = float(fields[f])
    flat.update(_detail_stats(img, mask))
    return flat


def stat_change(name: str, before: float, after: float) -> float:
    """``after - before``; for hue statistics the signed shortest way round (-180..180)."""
    d = after - before
    if name in CIRCULAR_STATS:
        d = (d + 180.0) % 360.0 - 180.0
    return float(d)


@dataclass(frozen=True)
class ConditionResult:
    """A condition checked: the measured values, the change and the verdict."""

    condition: str
    stat: str
    region: str
    direction: str
    before: float
    after: float
    change: float
    passed: bool

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("before", "after", "change"):
            d[k] = round(d[k], 3)
        return d


def condition_holds(cond: Condition, change: float) -> bool:
    """The verdict for one measured change (same units as the statistic)."""
    if cond.direction == "within":
        return abs(change) <= cond.amount
    signed = change if cond.direction == "up" else -change
    if signed < cond.amount:
        return False
    return cond.at_most is None or signed <= cond.at_most


def check_condition(cond: Condition, before: Mapping[str, float], after: Mapping[str, float]) -> ConditionResult:
    """Check ``cond`` given the statistics before and after (for its region)."""
    b, a = before[cond.stat], after[cond.stat]
    change = stat_change(cond.stat, b, a)
    return ConditionResult(cond.describe(), cond.stat, cond.region, cond.direction, b, a, change, condition_holds(cond, change))


def outside(mask: np.ndarray) -> np.ndarray:
    """The complement of a soft mask (0..1)."""
    return (1.0 - mask).astype(np.float32)


def preservation_ssim(before: np.ndarray, after: np.ndarray, region: np.ndarray) -> float:
    """SSIM (0..1, 1 = untouched) between two renders outside ``region`` (mask < 0.5)."""
    return ssim(before, after, outside(region))


def pixels_identical(a: np.ndarray, b: np.ndarray) -> bool:
    """True when two renders are the same size and byte-for-byte equal."""
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


class StatsCache:
    """Statistics per (render, region), so a render measured as "after" of one
    step is not measured again as "before" of the next."""

    def __init__(self) -> None:
        self._stats: dict[tuple[int, str, int | None], dict[str, float]] = {}
        self._keep: list[np.ndarray] = []   # keep renders and masks alive so id() stays unique

    def stats(self, img: np.ndarray, region_key: str = "all", mask: np.ndarray | None = None) -> dict[str, float]:
        # keyed by the mask too: two steps with different regions both measure "inside", and the
        # render after one is the render before the next
        key = (id(img), region_key, None if mask is None else id(mask))
        if key not in self._stats:
            self._keep.append(img)
            if mask is not None:
                self._keep.append(mask)
            self._stats[key] = photo_stats(img, mask)
        return self._stats[key]
