"""Image measurements a photographer reads: lightness, colour cast, chroma, contrast.

Shared by the embedded planner (relative requests such as "fix the exposure"),
the embedded judge and the evaluation harness. All functions take uint8 RGB
arrays (HxWx3) and an optional float mask (HxW, 0..1) that weights pixels.

Units: CIELAB (D65). ``L`` is 0..100, ``a``/``b`` and chroma are Lab units,
hue in degrees 0..360 of the HSV hue circle (so it matches the op registry's
HSL bands), clip fractions 0..1.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import cv2
import numpy as np

from pipeline.ops import BANDS

#: Measurements run on a copy whose long side is at most this (statistics barely move).
ANALYSIS_SIDE = 512


def analysis_copy(img: np.ndarray, mask: np.ndarray | None = None, side: int = ANALYSIS_SIDE):
    """Downscale ``img`` (and ``mask`` alike) so the long side is at most ``side``."""
    h, w = img.shape[:2]
    scale = side / max(h, w)
    if scale >= 1:
        return img, mask
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    small = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    if mask is not None:
        mask = cv2.resize(mask.astype(np.float32), size, interpolation=cv2.INTER_AREA)
    return small, mask


def lab(img: np.ndarray) -> np.ndarray:
    """uint8 RGB -> float32 CIELAB."""
    from skimage.color import rgb2lab  # scikit-image (and SciPy) load only where measured: 0.3-0.9 s of imports

    return rgb2lab(img).astype(np.float32)


def hue_degrees(img: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """HSV hue (degrees) and saturation (0..1) of a uint8 RGB image."""
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV_FULL)
    return hsv[..., 0].astype(np.float32) * (360.0 / 256.0), hsv[..., 1].astype(np.float32) / 255.0


def band_weights(hue: np.ndarray, band: str) -> np.ndarray:
    """Smooth (raised-cosine) membership of each hue in ``band``, 0..1."""
    names = list(BANDS)
    centres = [BANDS[n] for n in names]
    i = names.index(band)
    c = centres[i]
    prev_c = centres[i - 1]
    next_c = centres[(i + 1) % len(names)]
    left = (c - prev_c) % 360 or 360
    right = (next_c - c) % 360 or 360
    d = (hue - c + 180.0) % 360.0 - 180.0
    width = np.where(d < 0, left, right)
    x = np.clip(np.abs(d) / width, 0, 1)
    return (0.5 + 0.5 * np.cos(np.pi * x)).astype(np.float32)


#: HSV_FULL hue codes 0..255 in degrees, exactly as :func:`hue_degrees` converts them.
_HUE_CODES_DEG = np.arange(256, dtype=np.uint8).astype(np.float32) * (360.0 / 256.0)


@functools.lru_cache(maxsize=1)
def _hue_tables() -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """sin and cos of the hue, and every band's :func:`band_weights`, per hue code (read-only)."""
    rad = np.deg2rad(_HUE_CODES_DEG)
    tables = (np.sin(rad), np.cos(rad), {band: band_weights(_HUE_CODES_DEG, band) for band in BANDS})
    for t in (tables[0], tables[1], *tables[2].values()):
        t.setflags(write=False)
    return tables


def _channel_max(img: np.ndarray) -> np.ndarray:
    """Per-pixel max of R, G and B of a uint8 image (``img.max(axis=2)``, without numpy's slow strided reduction)."""
    return np.maximum(np.maximum(img[..., 0], img[..., 1]), img[..., 2])


def _wmean(x: np.ndarray, w: np.ndarray | None) -> float:
    if w is None:
        return float(x.mean())
    s = float(w.sum())
    return float((x * w).sum() / s) if s > 1e-6 else 0.0


def _wpercentile(x: np.ndarray, w: np.ndarray | None, q: float) -> float:
    if w is None:
        return float(np.percentile(x, q))
    sel = x[w > 0.5]
    return float(np.percentile(sel, q)) if sel.size else 0.0


def image_stats(img: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """Summary statistics of ``img`` (optionally inside ``mask``).

    Returns a dict with ``L_mean``, ``L_p01``, ``L_p50``, ``L_p99``, ``a_mean``,
    ``b_mean``, ``chroma_mean``, ``rms_contrast`` (std of L), ``clip_high`` and
    ``clip_low`` (share of pixels with a channel at 255 / all channels at 0),
    ``saturation_mean`` (HSV, 0..1) and ``bands``: per HSL band its
    ``share`` of coloured pixels, ``hue_mean`` (circular, degrees), ``chroma_mean``
    and ``L_mean``.
    """
    small, m = analysis_copy(img, mask)
    lab_img = lab(small)
    L, a, b = lab_img[..., 0], lab_img[..., 1], lab_img[..., 2]
    chroma = np.hypot(a, b)
    hsv = cv2.cvtColor(small, cv2.COLOR_RGB2HSV_FULL)
    codes = hsv[..., 0]
    sat = hsv[..., 1].astype(np.float32) / 255.0
    w = None if m is None else m.astype(np.float32)
    brightest = _channel_max(small)
    clip_high = (brightest >= 255).astype(np.float32)
    clip_low = (brightest <= 0).astype(np.float32)
    if w is None:
        Lw = L
        std = float(L.std())
    else:
        mean = _wmean(L, w)
        std = float(np.sqrt(_wmean((L - mean) ** 2, w)))
        Lw = L
    stats = {
        "L_mean": _wmean(L, w),
        "L_p01": _wpercentile(Lw, w, 1),
        "L_p50": _wpercentile(Lw, w, 50),
        "L_p99": _wpercentile(Lw, w, 99),
        "a_mean": _wmean(a, w),
        "b_mean": _wmean(b, w),
        "chroma_mean": _wmean(chroma, w),
        "saturation_mean": _wmean(sat, w),
        "rms_contrast": std,
        "clip_high": _wmean(clip_high, w),
        "clip_low": _wmean(clip_low, w),
    }
    coloured = (chroma > 8).astype(np.float32)
    base = coloured if w is None else coloured * w
    total = float(base.sum()) or 1.0
    # Hue takes 256 values (HSV_FULL codes): per-band weights, sin and cos are read from
    # 256-entry tables of the same functions (the same numbers, ~10x less work).
    sin_t, cos_t, weight_t = _hue_tables()
    sin_h, cos_h = sin_t[codes], cos_t[codes]
    bands = {}
    for band in BANDS:
        bw = weight_t[band][codes] * base
        s = float(bw.sum())
        if s > 1e-6:
            hm = float(np.rad2deg(np.arctan2((sin_h * bw).sum(), (cos_h * bw).sum())) % 360)
            bands[band] = {
                "share": s / total,
                "hue_mean": hm,
                "chroma_mean": float((chroma * bw).sum() / s),
                "L_mean": float((L * bw).sum() / s),
            }
        else:
            bands[band] = {"share": 0.0, "hue_mean": BANDS[band], "chroma_mean": 0.0, "L_mean": 0.0}
    stats["bands"] = bands
    return stats


def ssim(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Structural similarity of two same-size uint8 RGB images (luma), optionally
    averaged only where ``mask`` > 0.5."""
    sa, m = analysis_copy(a, mask)
    sb, _ = analysis_copy(b)
    ga = cv2.cvtColor(sa, cv2.COLOR_RGB2GRAY)
    gb = cv2.cvtColor(sb, cv2.COLOR_RGB2GRAY)
    from skimage.metrics import structural_similarity  # loaded where used (see lab)

    _, full = structural_similarity(ga, gb, data_range=255, full=True)
    if m is None:
        return float(full.mean())
    sel = m > 0.5
    return float(full[sel].mean()) if sel.any() else 1.0


# -- measurements for judging an edit -------------------------------------------
#
# The functions below are what the embedded judge reads. Those that look at
# tone or colour run on the analysis copy (statistics barely move when
# downscaled); those that look at single pixel levels (clipping, banding) or
# fine detail run on a strided or full-size copy, because area averaging would
# hide exactly what they look for.

#: Long side of the strided copy used for per-pixel level counts.
LEVELS_SIDE = 800


@dataclass(frozen=True)
class LabImage:
    """An image's analysis copy in CIELAB, computed once and read by many measurements.

    ``L`` 0..100, ``a``/``b``/``chroma`` Lab units, ``hue`` HSV degrees 0..360,
    ``sat`` HSV saturation 0..1, ``weight`` the (downscaled) mask 0..1 or None.
    Build it with :meth:`of`; every function below that takes an image also
    accepts a LabImage of it, so a caller that asks many questions converts once.
    """

    rgb: np.ndarray
    L: np.ndarray
    a: np.ndarray
    b: np.ndarray
    chroma: np.ndarray
    hue: np.ndarray
    sat: np.ndarray
    weight: np.ndarray | None = None

    @classmethod
    def of(cls, img: np.ndarray, mask: np.ndarray | None = None, side: int = ANALYSIS_SIDE) -> "LabImage":
        small, m = analysis_copy(img, mask, side)
        # OpenCV's float conversion: the same D65 CIELAB as lab() within 0.5, three times faster
        lab_img = cv2.cvtColor(small.astype(np.float32) * np.float32(1 / 255), cv2.COLOR_RGB2Lab)
        hue, sat = hue_degrees(small)
        a, b = lab_img[..., 1], lab_img[..., 2]
        return cls(small, lab_img[..., 0], a, b, np.hypot(a, b), hue, sat,
                   None if m is None else np.clip(m.astype(np.float32), 0, 1))

    def masked(self, mask: np.ndarray | None) -> "LabImage":
        """The same image weighted by ``mask`` (any size; resized to the copy)."""
        if mask is None:
            return LabImage(self.rgb, self.L, self.a, self.b, self.chroma, self.hue, self.sat, None)
        h, w = self.L.shape
        m = mask.astype(np.float32)
        if m.shape != (h, w):
            m = cv2.resize(m, (w, h), interpolation=cv2.INTER_AREA)
        return LabImage(self.rgb, self.L, self.a, self.b, self.chroma, self.hue, self.sat, np.clip(m, 0, 1))


def _lab_image(img, mask: np.ndarray | None = None) -> LabImage:
    if isinstance(img, LabImage):
        return img if mask is None else img.masked(mask)
    return LabImage.of(img, mask)


def weighted_mean(x: np.ndarray, weight: np.ndarray | None = None) -> float:
    """Mean of ``x``, weighted by ``weight`` (0..1, same shape) when given; 0.0 if the weights are empty."""
    return _wmean(x, weight)


def delta_e(before, after, mask: np.ndarray | None = None) -> float:
    """Mean colour difference CIE76 ΔE*ab between two same-size images (where ``mask`` weights).

    About 1 is a just-noticeable difference; 2-3 is visible side by side;
    above 5 anyone sees it. Returns 0.0 for identical images.
    """
    x, y = _lab_image(before, mask), _lab_image(after)
    d = np.sqrt((x.L - y.L) ** 2 + (x.a - y.a) ** 2 + (x.b - y.b) ** 2)
    return _wmean(d, x.weight)


def local_contrast(img, mask: np.ndarray | None = None) -> float:
    """Midtone texture (what clarity moves): mean |L* - L* blurred| at a radius
    of 2% of the long side, in L* units (0 for a flat image)."""
    v = _lab_image(img, mask)
    sigma = 0.02 * max(v.L.shape)
    base = cv2.GaussianBlur(v.L, (0, 0), sigma)
    return _wmean(np.abs(v.L - base), v.weight)


def fine_detail(img: np.ndarray, mask: np.ndarray | None = None) -> float:
    """High-frequency energy (what sharpening moves): the weighted variance of
    the Laplacian of luma, in 8-bit levels squared, at full size (0 for a
    flat image). Only comparable between images of the same size."""
    grey = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
    lap = cv2.Laplacian(grey, cv2.CV_32F, ksize=1)
    w = None if mask is None else mask.astype(np.float32)
    mean = _wmean(lap, w)
    return _wmean((lap - mean) ** 2, w)


def dark_channel(img, mask: np.ndarray | None = None) -> float:
    """Mean dark channel (minimum of R, G, B over a patch of 3% of the long side), 0..1.

    Haze lifts it (a veil adds light to every channel); dehazing lowers it.
    """
    v = _lab_image(img, mask)
    patch = max(3, round(max(v.L.shape) * 0.03)) | 1
    kernel = cv2.getStructuringElement(cv2.MORPH_RECT, (patch, patch))
    dark = cv2.erode(v.rgb.min(axis=2), kernel).astype(np.float32) / 255.0
    return _wmean(dark, v.weight)


def _strided(img: np.ndarray, mask: np.ndarray | None, side: int = LEVELS_SIDE):
    """Every n-th pixel (no averaging, so single 8-bit levels survive)."""
    step = max(1, int(np.ceil(max(img.shape[:2]) / side)))
    return img[::step, ::step], None if mask is None else mask[::step, ::step].astype(np.float32)


def clipped_shares(img: np.ndarray, mask: np.ndarray | None = None) -> dict:
    """Share (0..1) of pixels with blown highlights and crushed shadows.

    ``highlights``: at least two channels at 254-255 (a warm sky blows in R and
    G before B; one channel at the ceiling is just a saturated colour).
    ``shadows``: all three channels at 0-2 (pure black; a deep blue legitimately
    has R = G = 0).
    """
    px, w = _strided(img, mask)
    r, g, b = cv2.split(np.ascontiguousarray(px))
    hr, hg, hb = r >= 254, g >= 254, b >= 254
    blown = ((hr & hg) | (hr & hb) | (hg & hb)).astype(np.float32)
    crushed = (cv2.inRange(px, (0, 0, 0), (2, 2, 2)) > 0).astype(np.float32)
    return {"highlights": _wmean(blown, w), "shadows": _wmean(crushed, w)}


def level_step(img: np.ndarray, mask: np.ndarray | None = None) -> float:
    """Mean spacing between the 8-bit levels an image actually uses, per channel.

    Within each channel's 1st-99th percentile range, ``range / levels used``:
    1.0 for a smooth photo (every level occurs), about 2 after a 2x tone
    stretch, 16 or more for a gradient posterised to 16 levels. Banding shows
    once this grows well above the original's value. Where ``mask`` > 0.5 when given.
    """
    px, w = _strided(img, mask)
    px = np.ascontiguousarray(px)
    sel = None if w is None else (w > 0.5).astype(np.uint8)
    n = px.shape[0] * px.shape[1] if sel is None else int(sel.sum())
    if n < 64:
        return 1.0
    steps = []
    # A level counts as used when it holds at least 1 in 20,000 pixels, so a
    # few stray pixels do not fill a posterised histogram's gaps.
    floor = max(1, n // 20000)
    for c in range(3):
        counts = cv2.calcHist([px], [c], sel, [256], [0, 256]).ravel()
        cdf = np.cumsum(counts) / max(float(counts.sum()), 1.0)
        lo, hi = int(np.searchsorted(cdf, 0.01)), int(np.searchsorted(cdf, 0.99))
        if hi - lo < 8:
            continue  # a near-flat channel says nothing about banding
        used = int((counts[lo:hi + 1] >= floor).sum())
        steps.append((hi - lo + 1) / max(used, 1))
    return float(np.mean(steps)) if steps else 1.0


def pure_colour_share(img, mask: np.ndarray | None = None) -> float:
    """Share (0..1) of pixels pushed to the edge of the colour gamut: HSV
    saturation >= 0.97 (a channel at zero) at a visible brightness (value >= 0.3).

    Natural photos have a few percent at most; an oversaturated render floods
    whole areas with pure colour, losing the gradation within them.
    """
    v = _lab_image(img, mask)
    value = v.rgb.max(axis=2).astype(np.float32) / 255.0
    pure = ((v.sat >= 0.97) & (value >= 0.3)).astype(np.float32)
    return _wmean(pure, v.weight)


def high_chroma_share(img, mask: np.ndarray | None = None, limit: float = 70.0) -> float:
    """Share (0..1) of pixels whose Lab chroma exceeds ``limit`` (Lab units; skin sits near 20-35)."""
    v = _lab_image(img, mask)
    return _wmean((v.chroma > limit).astype(np.float32), v.weight)


def hue_shift(before, after, band: str | None = None, mask: np.ndarray | None = None) -> float:
    """Mean signed hue change in degrees (-180..180) of the coloured pixels of
    two same-size images; positive = towards higher HSV hue (red -> orange ->
    yellow ...). With ``band`` only that band's pixels (membership from
    ``before``) count. 0.0 when no pixel is coloured."""
    x, y = _lab_image(before, mask), _lab_image(after)
    w = (x.chroma > 8).astype(np.float32)
    if band is not None:
        w = w * band_weights(x.hue, band)
    if x.weight is not None:
        w = w * x.weight
    if float(w.sum()) < 1e-6:
        return 0.0
    d = np.deg2rad(y.hue - x.hue)
    return float(np.rad2deg(np.arctan2((np.sin(d) * w).sum(), (np.cos(d) * w).sum())))


def colour_balance(img, mask: np.ndarray | None = None) -> dict:
    """White-balance position of an image, read from its near-neutral pixels.

    ``warm``: mean ln(R / B) in linear light (positive = amber, negative = blue);
    ``magenta``: mean ln(sqrt(R * B) / G) (positive = magenta, negative = green).
    Each pixel is weighted by how grey it is ((1 - HSV saturation)^2) and
    pixels near black or white are left out, so exposure (which scales R, G, B
    alike in linear light) and saturation (which spares greys) barely move
    it, while a white-balance shift moves it directly: +0.1 is about 10% more
    red than blue. Both 0.0 for a neutral grey.
    """
    v = _lab_image(img, mask)
    lin = np.where(v.rgb <= 10, v.rgb / (255 * 12.92), ((v.rgb / 255 + 0.055) / 1.055) ** 2.4).astype(np.float32)
    r, g, b = lin[..., 0] + 0.005, lin[..., 1] + 0.005, lin[..., 2] + 0.005
    w = (1.0 - v.sat) ** 2 * ((v.L > 5) & (v.L < 97))
    if v.weight is not None:
        w = w * v.weight
    return {"warm": _wmean(np.log(r / b), w), "magenta": _wmean(0.5 * np.log(r * b) - np.log(g), w)}


#: One surface edge to edge (a wall, gravel, a lawn, a star field): on a copy this long, cut into
#: ``SURFACE_GRID`` x ``SURFACE_GRID`` tiles, the tiles' mean lightness spreads less than
#: ``SURFACE_L_SPREAD`` L*, their texture (std of L*) by less than ``SURFACE_TEXTURE_SPREAD`` of its
#: mean, and their colour (a*, b*) by less than ``SURFACE_COLOUR_SPREAD``. On the scikit-image photos
#: brick, gravel, grass and the Hubble deep field are; a page with a shadowed edge, the moon's craters
#: and every scene with a subject are not (lightness spread 2.3 to 27 L*, texture spread 0.16 to 1.2).
SURFACE_SIDE = 128
SURFACE_GRID = 4
SURFACE_L_SPREAD = 2.0
SURFACE_TEXTURE_SPREAD = 0.35
SURFACE_COLOUR_SPREAD = 1.5


def one_surface(img: np.ndarray) -> bool:
    """Whether ``img`` is one surface from edge to edge, the same stuff in every part of the frame, so a
    thing named that covers it ("the gravel", "the bricks") is the whole photo."""
    small, _ = analysis_copy(img, None, SURFACE_SIDE)
    lab_img = lab(small)
    h, w = lab_img.shape[:2]
    k = SURFACE_GRID
    if min(h, w) < 2 * k:
        return False
    tiles = [lab_img[i * h // k:(i + 1) * h // k, j * w // k:(j + 1) * w // k].reshape(-1, 3)
             for i in range(k) for j in range(k)]
    means = np.array([t.mean(0) for t in tiles])
    texture = np.array([t[:, 0].std() for t in tiles])
    colour = np.linalg.norm(means[:, 1:] - means[:, 1:].mean(0), axis=1).mean()
    return bool(means[:, 0].std() < SURFACE_L_SPREAD
                and texture.std() < SURFACE_TEXTURE_SPREAD * max(float(texture.mean()), 1e-6)
                and colour < SURFACE_COLOUR_SPREAD)
