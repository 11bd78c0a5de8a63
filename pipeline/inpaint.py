"""Filling a hole from its surroundings: a smooth biharmonic fill, then the surroundings' texture.

The smooth part is the biharmonic interpolant (the surface that continues the
surroundings' values and slopes with the least curvature): it measures better
than OpenCV's Telea and Navier-Stokes inpainting on painted spots and objects
(``python -m pipeline.bench --peers``). Small holes are solved exactly (banded
Cholesky); a large one is solved on a half-size copy first and refined by conjugate
gradients at each finer scale (a cascade: the coarse solution is already right
far from the edge, so a few dozen iterations fix the fine detail near it).

A smooth fill looks flat where the surroundings are textured (grass, fabric,
bark): :func:`fill_textured` then takes the nearby patch whose ring matches the
hole's ring best (exemplar search by masked template matching); a regular texture
(bricks, tiles) is copied whole with a harmonic correction of the seam (a healing
brush), a random one gives its fine detail, scaled to the ring's own detail.

All functions work on float32 windows (h, w, c) in 8-bit levels; ``hole`` is a
bool (h, w) array whose pixels are unknown. The window needs a margin of at
least :func:`margin_for` pixels of known pixels around the hole.
"""

from __future__ import annotations

import functools

import cv2
import numpy as np
from threadpoolctl import ThreadpoolController

#: Holes with at most this many pixels are solved exactly (banded Cholesky, a few ms).
DIRECT_PIXELS = 3000
#: Conjugate-gradient iterations at each scale between the exact one and the finest.
CG_ITERATIONS = 30
#: Conjugate-gradient iterations at full resolution.
FINE_ITERATIONS = 10
#: Fine detail is what a gaussian of this sigma (pixels) removes.
DETAIL_SIGMA = 2.0
#: Below this detail (8-bit levels, std on the ring) the surroundings count as smooth: no texture pass.
FLAT_DETAIL = 1.5
#: The texture pass keeps at least this share of the ring's detail, even when the exemplar's
#: detail does not predict the ring's (random texture): a visible texture costs a little PSNR.
MIN_TEXTURE = 0.6
#: The exemplar is copied whole when what it misses of the ring's detail is below this share of
#: that detail's energy (bricks and tiles measure about 0.5; grass, gravel and fur 1.0 or more).
COPY_FIT = 0.75

_LAPLACE = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)
_CROSS = np.ones((3, 3), np.uint8)


def margin_for(hole_size: int) -> int:
    """Known pixels a window needs around a hole ``hole_size`` px across (the coarse scales
    of the cascade need a 2-pixel ring of their own)."""
    return max(3, hole_size // 8 + 2)


def biharmonic_fill(window: np.ndarray, hole: np.ndarray, _depth: int = 0, order: int = 2) -> np.ndarray:
    """``window`` (float32 h x w x c) with its ``hole`` pixels replaced by the biharmonic fill
    (``order=1``: the harmonic fill, which never overshoots the surroundings' values)."""
    if int(np.count_nonzero(hole)) <= DIRECT_PIXELS:
        return _direct(window, hole, order)
    h, w = hole.shape
    sw, sh = (w + 1) // 2, (h + 1) // 2
    known = (~hole).astype(np.float32)
    # A coarse pixel is known only when all its fine pixels are; its value averages them.
    den = cv2.resize(known, (sw, sh), interpolation=cv2.INTER_AREA)
    num = cv2.resize(window * known[..., None], (sw, sh), interpolation=cv2.INTER_AREA)
    hole_s = den < 0.999
    coarse = biharmonic_fill(num / np.maximum(den, 1e-6)[..., None], hole_s, _depth + 1, order)
    guess = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_LINEAR).reshape(window.shape)
    # The finest scale is the costliest and needs the fewest steps (its error is near the edge only).
    return _refine(window, hole, guess, CG_ITERATIONS if _depth else FINE_ITERATIONS, order)


def _direct(window: np.ndarray, hole: np.ndarray, order: int = 2) -> np.ndarray:
    """Exact fill: minimise the squared Laplacian around the hole (``order=2``) or the squared
    gradient (``order=1``: the Laplacian is 0 on the hole) over the hole's pixels."""
    # SciPy only here: a one-shot edit with no removal never loads it (pipeline.apply starts fast)
    from scipy.linalg import solveh_banded

    ys, xs = np.nonzero(hole)
    if xs.size and np.ptp(xs) > np.ptp(ys):  # raster order along the short side: the narrower band
        return np.ascontiguousarray(_direct(np.swapaxes(window, 0, 1), hole.T, order).swapaxes(0, 1))
    h, w = hole.shape
    chans = window.reshape(h * w, -1).astype(np.float64)
    unknown = np.flatnonzero(hole.ravel())
    if unknown.size == 0:
        return window
    n, nc = unknown.size, chans.shape[1]
    index = np.full(h * w, -1, np.int64)
    index[unknown] = np.arange(n)
    rows = np.flatnonzero((cv2.dilate(hole.astype(np.uint8), _CROSS) if order == 2 else hole).ravel())
    ry, rx = np.divmod(rows, w)
    # The Laplacian's five taps of each row: which unknown each reaches (-1: a known pixel) and its weight.
    taps = np.stack([np.clip(ry + dy, 0, h - 1) * w + np.clip(rx + dx, 0, w - 1)
                     for dy, dx in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))])
    weight = np.array([-4.0, 1.0, 1.0, 1.0, 1.0])[:, None].repeat(rows.size, axis=1)
    col = index[taps]
    # What the known pixels contribute to each row (the right-hand side before the normal equations).
    known_part = np.einsum("tr,trc->rc", np.where(col < 0, weight, 0.0), chans[taps])
    if order == 1:  # rows are the hole's own pixels: -Laplacian is symmetric positive definite
        pairs = [(index[rows], col[t], -weight[t]) for t in range(5)]
        rhs = known_part
    else:  # the normal equations of the Laplacian rows: L^T L x = -L^T b, built tap pair by tap pair
        pairs = [(col[a], col[b], weight[a] * weight[b]) for a in range(5) for b in range(5)]
        known = col >= 0
        rhs = np.stack([-np.bincount(col[known], (weight * known_part[:, c][None, :])[known], minlength=n)
                        for c in range(nc)], axis=1)
    # Symmetric positive definite and, in raster order, banded (a row of the hole plus two): a banded
    # Cholesky (LAPACK pbsv) is ~10x faster than a general sparse LU here. Upper form: ab[band + i - j, j].
    i = np.concatenate([p[0] for p in pairs])
    j = np.concatenate([p[1] for p in pairs])
    v = np.concatenate([p[2] for p in pairs])
    keep = (i >= 0) & (j >= 0) & (i <= j)
    i, j, v = i[keep], j[keep], v[keep]
    band = int((j - i).max())
    ab = np.bincount((band + i - j) * n + j, v, minlength=(band + 1) * n).reshape(band + 1, n)
    with _one_blas_thread():
        solution = solveh_banded(ab, rhs, check_finite=False)
    out = chans.copy()
    out[unknown] = solution
    return out.reshape(window.shape).astype(np.float32)


@functools.cache
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def _one_blas_thread():
    """A context in which BLAS runs on one thread: these solves are small, and OpenBLAS's threads
    spin-waiting on a busy machine made one 2 ms solve take 80 ms."""
    return _blas().limit(limits=1, user_api="blas")


def _refine(window: np.ndarray, hole: np.ndarray, guess: np.ndarray, iterations: int, order: int = 2) -> np.ndarray:
    """Conjugate gradients on the biharmonic system from ``guess``; the channels are one stacked
    vector (the same operator on each), worked on the hole's box plus the stencil's 2-pixel reach."""
    ys, xs = np.nonzero(hole)
    h, w = hole.shape
    y0, y1, x0, x1 = max(0, ys.min() - 2), min(h, ys.max() + 3), max(0, xs.min() - 2), min(w, xs.max() + 3)
    box = (slice(y0, y1), slice(x0, x1))
    inside = hole[box].astype(np.float32)[..., None]
    near = cv2.dilate(hole[box].astype(np.uint8), _CROSS).astype(np.float32)[..., None]
    base = window[box] * (1.0 - inside)

    def lap(x: np.ndarray) -> np.ndarray:
        return cv2.filter2D(x, -1, _LAPLACE, borderType=cv2.BORDER_REPLICATE).reshape(x.shape)

    def system(x: np.ndarray) -> np.ndarray:
        return inside * lap(near * lap(inside * x)) if order == 2 else -inside * lap(inside * x)

    x = inside * guess[box]
    rhs = -inside * lap(near * lap(base)) if order == 2 else inside * lap(base)
    r = rhs - system(x)
    p = r.copy()
    rs = float(np.vdot(r, r))
    for _ in range(iterations):
        ap = system(p)
        alpha = rs / max(float(np.vdot(p, ap)), 1e-12)
        x += alpha * p
        r -= alpha * ap
        rn = float(np.vdot(r, r))
        p *= rn / max(rs, 1e-12)
        p += r
        rs = rn
    out = window.copy()
    out[box] = base + inside * x
    return out


def fill_textured(area: np.ndarray, unknown: np.ndarray, box: tuple[int, int, int, int]):
    """The harmonic fill of one large hole with the surroundings' texture on it.

    ``area``: uint8 or float32 (h, w, c) around the hole, with room for the exemplar search (about
    two hole sizes each way); ``unknown``: bool (h, w), the hole and any other unknown pixels
    nearby; ``box``: the hole's (x, y, w, h) in ``area``. Returns ``(y0, x0, filled)``: float32
    pixels of the hole's box grown by its ring (a quarter of its size), whose corner is (y0, x0).
    Only that box is worked on at full resolution (the search runs on a copy ~64 px across the hole).
    """
    x, y, bw, bh = box
    h, w = unknown.shape
    size = max(bw, bh)
    ring_w = max(3, size // 4)
    y0, x0, y1, x1 = max(0, y - ring_w), max(0, x - ring_w), min(h, y + bh + ring_w), min(w, x + bw + ring_w)
    patch, hole = area[y0:y1, x0:x1].astype(np.float32), unknown[y0:y1, x0:x1]
    filled = biharmonic_fill(patch, hole, order=1)
    return y0, x0, texture_pass(area, unknown, (y0, x0, y1, x1), ring_w, filled)


def texture_pass(area: np.ndarray, unknown: np.ndarray, patch_box: tuple[int, int, int, int], ring_w: int,
                 filled: np.ndarray) -> np.ndarray:
    """``filled`` (float32: the pixels of ``area`` in ``patch_box`` = (y0, x0, y1, x1), its unknown
    pixels filled smoothly) with the texture of the best-matching nearby patch, when the hole's ring (``ring_w`` px
    wide) is textured; unchanged on smooth surroundings.

    The exemplar is the offset whose ring matches the hole's ring best in colour (sum of squared
    differences), searched on a copy of ``area`` about 64 px across the hole and never overlapping
    an unknown pixel. Where it predicts the ring's detail well (a regular texture: bricks, tiles,
    planks) it is copied whole and blended in by a harmonic correction of the ring's difference
    (a healing brush); elsewhere (grass, fur) its fine detail bands are added to the smooth fill,
    each scaled by its least-squares gain on the ring (the finest kept at :data:`MIN_TEXTURE` or more).
    """
    y0, x0, y1, x1 = patch_box
    hole = unknown[y0:y1, x0:x1]
    ph, pw = hole.shape
    dist = cv2.distanceTransform((~hole).astype(np.uint8), cv2.DIST_L2, 3)
    ring = (dist > 0) & (dist <= ring_w)
    # The ring's detail is measured on the smooth fill, not on what is painted over the hole (a
    # sign's edges would bleed into the ring's detail bands).
    patch = filled
    grey = cv2.cvtColor(patch, cv2.COLOR_RGB2GRAY) if patch.ndim == 3 and patch.shape[2] == 3 else patch.mean(axis=2)
    ring_detail = _band(grey, 0.0, DETAIL_SIGMA)[ring]
    if not ring_detail.size or float(ring_detail.std()) < FLAT_DETAIL:
        return filled
    offset = _exemplar_offset(area, unknown, patch_box, ring)
    if offset is None:
        return filled
    dy, dx = offset
    src = np.ascontiguousarray(area[y0 + dy:y1 + dy, x0 + dx:x1 + dx], np.float32)
    size = max(ph, pw) - 2 * ring_w
    # Copy whole where the exemplar explains most of the ring's detail above the hole's scale.
    coarse = max(2.0, size / 8.0)
    miss = (patch - src - _blur(patch - src, coarse))[ring]
    own = (patch - _blur(patch, coarse))[ring]
    if float((miss * miss).sum()) < COPY_FIT * float((own * own).sum()):
        correction = biharmonic_fill(patch - src, hole, order=1)
        out = filled.copy()
        out[hole] = (src + correction)[hole]
        return out
    out = filled.copy()
    # Two bands: the fine grain (kept at least at MIN_TEXTURE of the ring's amplitude) and a coarser
    # band added only as far as it predicts the ring (least-squares gain).
    for lo, hi, floor in ((0.0, DETAIL_SIGMA, MIN_TEXTURE), (DETAIL_SIGMA, 3 * DETAIL_SIGMA, 0.0)):
        s_band, t_band = _band(src, lo, hi), _band(patch, lo, hi)
        s, t = s_band[ring], t_band[ring]
        power = float((s * s).sum())
        if power <= 0:
            continue
        fit = max(0.0, float((s * t).sum()) / power)             # the least-squares gain on the ring
        match = float(np.sqrt((t * t).sum() / power))              # the gain that matches the ring's amplitude
        gain = min(max(fit, floor * match), 1.5 * match)
        out[hole] += gain * s_band[hole]
    return out


def _exemplar_offset(area: np.ndarray, unknown: np.ndarray, patch_box: tuple[int, int, int, int],
                     ring: np.ndarray) -> tuple[int, int] | None:
    """(dy, dx) from the patch at ``patch_box`` to the source patch of ``area`` whose ``ring`` pixels
    match best (masked SSD on a copy about 64 px across the hole); None when none fits."""
    y0, x0, y1, x1 = patch_box
    h, w = unknown.shape
    size = max(y1 - y0, x1 - x0)
    scale = min(1.0, 64.0 / size)
    small = cv2.resize(area, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale < 1 else area
    small = np.ascontiguousarray(small, np.float32)
    sh, sw = small.shape[:2]
    ty0, tx0 = int(y0 * scale), int(x0 * scale)
    ty1, tx1 = min(sh, ty0 + max(1, round((y1 - y0) * scale))), min(sw, tx0 + max(1, round((x1 - x0) * scale)))
    if ty1 - ty0 >= sh or tx1 - tx0 >= sw:
        return None
    ring_s = cv2.resize(ring.astype(np.uint8), (tx1 - tx0, ty1 - ty0), interpolation=cv2.INTER_NEAREST)
    if not ring_s.any():
        return None
    hole_s = cv2.resize(unknown.astype(np.uint8), (sw, sh), interpolation=cv2.INTER_NEAREST)
    templ = np.ascontiguousarray(small[ty0:ty1, tx0:tx1])
    weight = np.repeat(ring_s[..., None], small.shape[2], axis=2).astype(np.float32)
    cost = cv2.matchTemplate(small, templ, cv2.TM_SQDIFF, mask=weight)
    # A source must not overlap an unknown pixel (the unknown pixels under the template's footprint).
    overlap = cv2.matchTemplate((hole_s > 0).astype(np.float32), np.ones(templ.shape[:2], np.float32), cv2.TM_CCORR)
    cost[(overlap > 0.5) | ~np.isfinite(cost)] = np.inf
    if not np.isfinite(cost).any():
        return None
    by, bx = np.unravel_index(int(np.argmin(cost)), cost.shape)
    dy, dx = int(round((by - ty0) / scale)), int(round((bx - tx0) / scale))
    dy, dx = int(np.clip(dy, -y0, h - y1)), int(np.clip(dx, -x0, w - x1))
    if unknown[y0 + dy:y1 + dy, x0 + dx:x1 + dx].any():
        return None
    return dy, dx


def _blur(x: np.ndarray, sigma: float) -> np.ndarray:
    """A gaussian blur of ``x`` (float32 h x w x c) of ``sigma`` px; a wide one on a copy reduced to a
    sigma of 2 px and brought back (the blur is smooth, and a 200 px hole needs a sigma of 25 px)."""
    f = sigma / 2.0
    h, w = x.shape[:2]
    if f < 2 or min(h, w) < 8 * f:
        return cv2.GaussianBlur(x, (0, 0), sigma).reshape(x.shape)
    small = cv2.resize(x, (max(1, round(w / f)), max(1, round(h / f))), interpolation=cv2.INTER_AREA)
    return cv2.resize(cv2.GaussianBlur(small, (0, 0), 2.0), (w, h), interpolation=cv2.INTER_LINEAR).reshape(x.shape)


def _band(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The detail of ``x`` between gaussian sigmas ``lo`` and ``hi`` (px; ``lo`` 0: from the finest)."""
    fine = x if lo <= 0 else cv2.GaussianBlur(x, (0, 0), lo).reshape(x.shape)
    return fine - cv2.GaussianBlur(x, (0, 0), hi).reshape(x.shape)
