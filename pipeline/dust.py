"""Sensor dust: found by what it looks like, so real detail is spared.

A dust particle on the sensor's cover glass is far out of focus: it casts a soft,
round, faint shadow (a few to ~40% darker) that multiplies the light in every
channel alike, and it shows where the photo is smooth (sky, walls, backdrops).
Small real things look otherwise: boats, text, pupils and stars have sharp edges,
their own colour, a busy surround or many like them nearby. The tests here follow
that description:

1. candidates: dark blobs in log-lightness (a multiplicative shadow becomes a dip
   of fixed depth), at scales from :data:`SIGMA_MIN` to :data:`SIGMA_MAX` of the
   long side, standing out from the noise (difference of gaussians in noise units);
2. each candidate is measured on a window of its own: the background is a
   quadratic fitted on a ring around it (what the ring keeps after the fit is how
   busy the surround is), the dip is fitted by a gaussian (how far from a soft
   round shadow it is), per channel (how far from a neutral shadow it is);
3. a spot is kept when it is soft and round, neutral, faint (depth at most
   :data:`MAX_DEPTH`), its surround is plain, and few blobs like it are nearby
   (text, gravel and star fields are repeated structure, not dust).

:func:`dust_map` does the measuring once per photo and size; :func:`dust_spots`
and :func:`dust_mask` only apply thresholds (an amount slider costs nothing).
Every spot carries a confidence (0..1) so a person can be shown what was found.
"""

from __future__ import annotations

from typing import NamedTuple

import cv2
import numpy as np

#: Dust is looked for on a copy with this long side (a 24 MP frame's dust is 4-30 px across there).
DUST_SIDE = 2000
#: Gaussian sigma of the smallest and largest dust shadow, as fractions of the long side.
SIGMA_MIN, SIGMA_MAX = 0.0007, 0.0045
#: Deepest dip (natural log of the lightness ratio) a dust shadow makes: ln(1 / 0.5), half the light.
MAX_DEPTH = 0.7
#: Smallest spread of the blob response (log units) a candidate is measured against.
SPREAD_FLOOR = 0.002
#: Largest share of a candidate's surround (4-10 sigma) where blobs of its size stand out.
CLUTTER_MAX = 0.12
#: Candidates measured per photo (the strongest first): a busy photo has thousands of dark specks.
MAX_CANDIDATES = 4000

#: A shadow's radius in sigmas: where a gaussian dip has faded to 1% of its depth.
REACH = 3.0
#: Columns of :attr:`DustMap.spots`.
COLUMNS = ("x", "y", "sigma", "depth", "snr", "fit", "busy", "tint", "crowd", "clutter")


class DustMap(NamedTuple):
    """The measured candidates of one photo at one size (amount-independent).

    ``spots``: float32 (N, len(COLUMNS)): centre x, y and sigma in pixels of the photo,
    depth (log ratio), snr (the blob response in units of its spread at its scale), fit (gaussian misfit / depth), busy (the
    surround's residual / noise), tint (largest channel's departure from the mean dip / depth),
    crowd (similar blobs within 8 sigma). ``shape``: (height, width) of the photo.
    """

    spots: np.ndarray
    shape: tuple[int, int]

    def frozen(self) -> "DustMap":
        """The same map with a read-only array (for a shared cache)."""
        self.spots.flags.writeable = False
        return self


class DustSpot(NamedTuple):
    """A dust spot found: centre (x, y) and radius as fractions of the photo's width, height and
    long side; ``confidence`` 0..1 (how clearly it is a soft, neutral shadow on a plain surround)."""

    x: float
    y: float
    radius: float
    confidence: float


def _dog_noise(s1: float, s2: float) -> float:
    """Std of a difference of gaussians (sigmas ``s1`` < ``s2``) of unit white noise."""
    return float(np.sqrt(max(1e-12, 1 / (4 * np.pi * s1 * s1) + 1 / (4 * np.pi * s2 * s2)
                             - 1 / (np.pi * (s1 * s1 + s2 * s2)))))


def _scales(long_side: int) -> list[float]:
    out, s = [], max(1.0, SIGMA_MIN * long_side)
    while s <= SIGMA_MAX * long_side * 1.001:
        out.append(s)
        s *= 1.4
    return out


def dust_map(img: np.ndarray) -> DustMap:
    """Measure every dust candidate of ``img`` (uint8 RGB, any size)."""
    h, w = img.shape[:2]
    s = min(1.0, DUST_SIDE / max(h, w))
    small = cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA) \
        if s < 1 else img
    logc = np.log(small.astype(np.float32) + 8.0)  # +8: the darkest pixels' noise does not explode
    L = logc @ np.array([0.299, 0.587, 0.114], np.float32)
    noise = max(1e-3, 1.4826 * 1.6 * float(np.median(np.abs(L - cv2.GaussianBlur(L, (0, 0), 1.0)))))
    sig = _scales(max(L.shape))
    if not sig:
        return DustMap(np.zeros((0, len(COLUMNS)), np.float32), (h, w))
    blurs = [cv2.GaussianBlur(L, (0, 0), q) for q in sig] + [cv2.GaussianBlur(L, (0, 0), sig[-1] * 1.4)]
    # A dark blob is a dip: the wider blur minus the narrower one is positive there, in noise units.
    rows = []
    for k, q in enumerate(sig):
        dog = blurs[k + 1] - blurs[k]
        # In units of the noise's response at this scale, with a floor (a blob 0.2% deep on a
        # noiseless, upscaled sky does not stand out to anyone).
        spread = max(noise * _dog_noise(q, q * 1.4), SPREAD_FLOOR)
        z = dog / np.float32(spread)
        # Candidates at this scale: local maxima standing out of the noise, the strongest first.
        # Where many blobs of this size stand out around a candidate (text, gravel, craters, leaves)
        # it is structure, not dust: such candidates are not measured at all.
        clutter = _clutter(z, q)
        peak = (z >= cv2.dilate(z, np.ones((3, 3), np.uint8))) & (z > 4.0) & (clutter <= CLUTTER_MAX)
        ys, xs = np.nonzero(peak)
        order = np.argsort(-z[ys, xs], kind="stable")[:MAX_CANDIDATES // len(sig)]
        rows.append(_measure(L, logc, noise, xs[order], ys[order], q, clutter, z[ys[order], xs[order]]))
    spots = np.concatenate([r for r in rows if len(r)]) if any(len(r) for r in rows) else \
        np.zeros((0, len(COLUMNS)), np.float32)
    spots = _crowding(spots)
    spots[:, :3] /= s  # back to the photo's pixels
    return DustMap(spots.astype(np.float32), (h, w))


def _clutter(z: np.ndarray, sg: float) -> np.ndarray:
    """Share of the pixels between 4 and 10 sigma from each pixel (a square annulus) where the
    blob response at this scale stands out of the noise (|z| > 3): ~0 on a plain sky, high on
    text, gravel, craters and foliage."""
    hot = (np.abs(z) > 3.0).astype(np.float32)
    outer, inner = 2 * int(round(10 * sg)) + 1, 2 * int(round(4 * sg)) + 1
    big = cv2.boxFilter(hot, -1, (outer, outer), normalize=False, borderType=cv2.BORDER_REFLECT)
    small = cv2.boxFilter(hot, -1, (inner, inner), normalize=False, borderType=cv2.BORDER_REFLECT)
    return (big - small) / float(outer * outer - inner * inner)


def _measure(L: np.ndarray, logc: np.ndarray, noise: float, xs: np.ndarray, ys: np.ndarray, sg: float,
             clutter: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Rows of :data:`COLUMNS` for the candidates at (xs, ys) of scale ``sg`` (pixels of ``L``)."""
    h, w = L.shape
    R = int(np.ceil(4.5 * sg)) + 1
    inside = (xs >= R) & (ys >= R) & (xs < w - R) & (ys < h - R)
    xs, ys, z = xs[inside], ys[inside], z[inside]
    if not xs.size:
        return np.zeros((0, len(COLUMNS)), np.float32)
    yy, xx = (a.astype(np.float32) for a in np.mgrid[-R:R + 1, -R:R + 1])
    rr = np.hypot(xx, yy)
    ring = (rr >= 2.8 * sg) & (rr <= 4.5 * sg)
    core = rr <= 2.5 * sg
    basis = np.stack([np.ones_like(xx), xx, yy, xx * xx, yy * yy, xx * yy], -1)
    solve = np.linalg.pinv(basis[ring])                       # (6, ring pixels): the ring's quadratic fit
    windows = np.lib.stride_tricks.sliding_window_view(
        np.concatenate([L[..., None], logc], axis=2), (2 * R + 1, 2 * R + 1), axis=(0, 1))
    if xs.size > 256:  # in batches: a batch's windows are (n, 4, 2R+1, 2R+1) floats
        return np.concatenate([_measure(L, logc, noise, xs[i:i + 256], ys[i:i + 256], sg, clutter, z[i:i + 256])
                               for i in range(0, xs.size, 256)])
    patch = windows[ys - R, xs - R]                             # (n, 4 channels, 2R+1, 2R+1)
    fit = np.einsum("kp,ncp->nck", solve, patch[:, :, ring])    # (n, 4, 6)
    background = np.einsum("ijk,nck->ncij", basis, fit)
    dip = background - patch                                     # positive where darker than the surround
    busy = np.sqrt(np.mean((patch[:, 0, ring] - background[:, 0, ring]) ** 2, axis=1)) / noise
    # A shadow multiplies each channel by t; in log(c + 8) the dip is ln(1/t) x c / (c + 8): each
    # channel's gain at the background's level (dark channels dip less), the lightness's their mix.
    level = np.exp(fit[:, 1:, 0]) - 8.0
    gain = np.clip(level / (level + 8.0), 0.05, 1.0)
    gain_l = gain @ np.array([0.299, 0.587, 0.114], np.float32)
    best_err = np.full(xs.size, np.inf, np.float32)
    depth = np.zeros(xs.size, np.float32)
    sigma = np.zeros(xs.size, np.float32)
    tint = np.zeros(xs.size, np.float32)
    for f in (0.6, 0.75, 0.9, 1.1, 1.3):  # the dip's own width, around the scale it was found at
        g = np.exp(-(rr * rr) / (2 * (f * sg) ** 2))[core]
        amp = dip[:, :, core] @ g / float(g @ g)                 # (n, 4): least-squares amplitude per channel
        # The misfit beyond what the pixels' own noise explains (a faint spot on a noisy sky fits too).
        err = np.sqrt(np.maximum(0.0, np.mean((dip[:, 0, core] - amp[:, :1] * g) ** 2, axis=1) - (0.6 * noise) ** 2)) / gain_l
        better = err < best_err
        shadow = amp / np.concatenate([gain_l[:, None], gain], axis=1)   # log transmittance per channel
        best_err[better], depth[better], sigma[better] = err[better], shadow[better, 0], f * sg
        tint[better] = np.abs(shadow[better, 1:] - shadow[better, :1]).max(axis=1)
    positive = depth > 0
    safe = np.where(positive, depth, 1.0)
    out = np.stack([xs.astype(np.float32), ys.astype(np.float32), sigma, depth, z,
                    np.where(positive, best_err / safe, np.inf), busy, np.where(positive, tint / safe, np.inf),
                    np.zeros(xs.size, np.float32), clutter[ys, xs]], 1)
    return out[positive].astype(np.float32)


def _crowding(spots: np.ndarray) -> np.ndarray:
    """Fill the ``crowd`` column: other blobs at least half as deep within 8 sigma."""
    if not len(spots):
        return spots
    x, y, s, d = spots[:, 0], spots[:, 1], spots[:, 2], spots[:, 3]
    order = np.argsort(x)
    xs = x[order]
    for i in range(len(spots)):
        reach = 8.0 * s[i]
        lo, hi = np.searchsorted(xs, x[i] - reach), np.searchsorted(xs, x[i] + reach)
        j = order[lo:hi]
        dist = np.hypot(x[j] - x[i], y[j] - y[i])
        # The same blob found at another scale is not a neighbour.
        near = (dist <= reach) & (dist > 1.5 * np.maximum(s[j], s[i])) & (d[j] >= 0.5 * d[i])
        spots[i, 8] = float(near.sum())
    return spots


#: Test limits (see :data:`COLUMNS`): the gaussian misfit, the surround's residual (noise units),
#: the tint, the clutter of the wider surround, blobs nearby.
LIMITS = {"fit": 0.16, "busy": 2.0, "tint": 0.6, "clutter": 0.06, "crowd": 1}


def _confidence(spots: np.ndarray, amount: float) -> np.ndarray:
    """0..1 per row of ``spots``: 0 where a test fails, else how clearly each passes."""
    if not len(spots):
        return np.zeros(0, np.float32)
    x = {name: spots[:, i] for i, name in enumerate(COLUMNS)}
    # Higher amounts take fainter spots: 7 x the noise response at 1, 4 x at 100.
    snr_min = 7.0 - 3.0 * min(100.0, max(0.0, amount)) / 100.0

    def margin(name):  # 1 up to half the limit, falling to 0 at the limit
        return np.clip(2.0 - 2.0 * x[name] / LIMITS[name], 0.0, 1.0)

    score = np.clip(0.5 + (x["snr"] - snr_min) / 10.0, 0.0, 1.0) * (x["snr"] >= snr_min)
    score = score * np.clip((MAX_DEPTH - x["depth"]) / 0.2, 0.0, 1.0)
    for name in ("fit", "busy", "tint", "clutter"):
        score = score * margin(name)
    score = score * (x["crowd"] <= LIMITS["crowd"])
    return score.astype(np.float32)


def dust_spots(img: np.ndarray | None = None, amount: float = 50.0, dust: DustMap | None = None) -> list[DustSpot]:
    """The dust spots of ``img`` (uint8 RGB) at ``amount`` 0..100 (higher: fainter spots too), most
    confident first. ``dust``: its :func:`dust_map`, when the caller keeps one (then ``img`` may be None)."""
    dust = dust if dust is not None else dust_map(img)
    kept = _kept(dust, amount)
    h, w = dust.shape
    return [DustSpot(float(r[0] / w), float(r[1] / h), float(REACH * r[2] / max(h, w)), float(c))
            for r, c in kept]


def _kept(dust: DustMap, amount: float):
    """(row, confidence) of the spots kept at ``amount``, most confident first, one per shadow."""
    if amount <= 0 or not len(dust.spots):
        return []
    conf = _confidence(dust.spots, amount)
    # A spot that only just passes is left alone unless the amount asks for faint ones too.
    floor = 0.45 - 0.3 * min(100.0, float(amount)) / 100.0
    out = []
    for i in np.argsort(-conf, kind="stable"):
        if conf[i] < floor:
            break
        r = dust.spots[i]
        same = [o for o, _ in out if np.hypot(r[0] - o[0], r[1] - o[1]) < 1.5 * max(r[2], o[2])]
        if same:  # the same shadow found at another scale: it reaches as far as the widest finding
            same[0][2] = max(same[0][2], r[2])
            continue
        out.append((r.copy(), float(conf[i])))
    # A wide shadow's weaker findings at other scales are the same shadow too.
    for i in np.flatnonzero(conf > 0):
        r = dust.spots[i]
        for o, _ in out:
            if np.hypot(r[0] - o[0], r[1] - o[1]) < 1.5 * max(r[2], o[2]):
                o[2] = max(o[2], r[2])
    return out


def dust_mask(img: np.ndarray | None, amount: float, dust: DustMap | None = None) -> np.ndarray:
    """uint8 HxW mask (255 = heal) of the dust shadows kept at ``amount``: a disc of :data:`REACH`
    sigma around each (where the shadow has faded to about 1% of its depth)."""
    dust = dust if dust is not None else dust_map(img)
    h, w = dust.shape
    out = np.zeros((h, w), np.uint8)
    for r, _ in _kept(dust, amount):
        cv2.circle(out, (int(round(r[0])), int(round(r[1]))), int(np.ceil(REACH * r[2])) + 1, 255, -1)
    return out
