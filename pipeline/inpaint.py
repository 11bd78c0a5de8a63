"""Filling a hole from its surroundings: a smooth biharmonic fill, then the surroundings' texture.

The smooth part is the biharmonic interpolant (the surface that continues the
surroundings' values and slopes with the least curvature): it measures better
than OpenCV's Telea and Navier-Stokes inpainting on painted spots and objects
(``python -m pipeline.bench --peers``). Small holes are solved exactly (sparse
LU); a large one is solved on a half-size copy first and refined by conjugate
gradients at each finer scale (a cascade: the coarse solution is already right
far from the edge, so a few dozen iterations fix the fine detail near it).

A smooth fill looks flat where the surroundings are textured (grass, fabric,
bark): :func:`texture_pass` then adds the fine detail of the nearby patch whose
ring matches the hole's ring best (exemplar search by masked template matching),
scaled to the ring's own detail.

All functions work on float32 windows (h, w, c) in 8-bit levels; ``hole`` is a
bool (h, w) array whose pixels are unknown. The window needs a margin of at
least :func:`margin_for` pixels of known pixels around the hole.
"""

from __future__ import annotations

import cv2
import numpy as np

#: Holes with at most this many pixels are solved exactly (sparse LU, a few ms).
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
    import scipy.sparse as sp
    from scipy.sparse.linalg import splu

    h, w = hole.shape
    chans = window.reshape(h * w, -1).astype(np.float64)
    unknown = np.flatnonzero(hole.ravel())
    if unknown.size == 0:
        return window
    index = np.full(h * w, -1, np.int64)
    index[unknown] = np.arange(unknown.size)
    rows = np.flatnonzero((cv2.dilate(hole.astype(np.uint8), _CROSS) if order == 2 else hole).ravel())
    ry, rx = np.divmod(rows, w)
    r_idx, c_idx, vals = [], [], []
    for dy, dx, v in ((0, 0, -4.0), (-1, 0, 1.0), (1, 0, 1.0), (0, -1, 1.0), (0, 1, 1.0)):
        r_idx.append(np.arange(rows.size))
        c_idx.append(np.clip(ry + dy, 0, h - 1) * w + np.clip(rx + dx, 0, w - 1))
        vals.append(np.full(rows.size, v))
    r_all, c_all, v_all = np.concatenate(r_idx), np.concatenate(c_idx), np.concatenate(vals)
    free = index[c_all] >= 0
    # Laplacian rows around the hole, split into the unknown columns and the known pixels' share.
    lap_u = sp.csr_matrix((v_all[free], (r_all[free], index[c_all[free]])), shape=(rows.size, unknown.size))
    known_part = np.zeros((rows.size, chans.shape[1]))
    np.add.at(known_part, r_all[~free], v_all[~free, None] * chans[c_all[~free]])
    if order == 1:  # rows are the hole's own pixels: -Laplacian is symmetric positive definite
        system, rhs = (-lap_u).tocsc(), known_part
    else:
        system, rhs = (lap_u.T @ lap_u).tocsc(), -(lap_u.T @ known_part)
    # The system is symmetric positive definite: a symmetric ordering without pivoting is ~2x faster.
    lu = splu(system, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    solution = lu.solve(rhs)
    out = chans.copy()
    out[unknown] = solution
    return out.reshape(window.shape).astype(np.float32)


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


def _detail(x: np.ndarray) -> np.ndarray:
    return _band(x, 0.0, DETAIL_SIGMA)


def texture_pass(window: np.ndarray, hole: np.ndarray, filled: np.ndarray) -> np.ndarray:
    """``filled`` (the smooth fill of ``window``) with the fine detail of the best-matching nearby
    patch added in the hole, when the hole's ring is textured; unchanged on smooth surroundings.

    The exemplar is the offset whose ring (pixels within a quarter of the hole's size) matches the
    hole's ring best in colour (sum of squared differences), searched on a copy about 64 px across
    the hole and never overlapping it. Its detail is scaled by how well it predicts the ring's
    detail, at least :data:`MIN_TEXTURE` of the ring's own amplitude.
    """
    h, w = hole.shape
    ys, xs = np.nonzero(hole)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    size = max(y1 - y0, x1 - x0)
    ring_w = max(3, size // 4)
    outside = (~hole).astype(np.uint8)
    dist = cv2.distanceTransform(outside, cv2.DIST_L2, 3)
    ring = (dist > 0) & (dist <= ring_w)
    grey = window.mean(axis=2) if window.ndim == 3 else window
    ring_detail = _detail(grey.astype(np.float32))[ring]
    spread = float(ring_detail.std()) if ring_detail.size else 0.0
    if spread < FLAT_DETAIL:
        return filled
    # Exemplar search on a small copy, by masked SSD over every offset at once.
    scale = min(1.0, 64.0 / size)
    small = cv2.resize(window, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale < 1 else window
    sh, sw = small.shape[:2]
    ty0, tx0 = max(0, int(y0 * scale) - max(1, int(ring_w * scale))), max(0, int(x0 * scale) - max(1, int(ring_w * scale)))
    ty1 = min(sh, int(np.ceil(y1 * scale)) + max(1, int(ring_w * scale)))
    tx1 = min(sw, int(np.ceil(x1 * scale)) + max(1, int(ring_w * scale)))
    ring_s = cv2.resize(ring.astype(np.uint8), (sw, sh), interpolation=cv2.INTER_NEAREST)[ty0:ty1, tx0:tx1]
    hole_s = cv2.resize(hole.astype(np.uint8), (sw, sh), interpolation=cv2.INTER_NEAREST)
    templ = np.ascontiguousarray(small[ty0:ty1, tx0:tx1])
    if templ.shape[0] >= sh or templ.shape[1] >= sw or not ring_s.any():
        return filled
    weight = np.repeat(ring_s[..., None], small.shape[2], axis=2).astype(np.float32)
    cost = cv2.matchTemplate(np.ascontiguousarray(small), templ, cv2.TM_SQDIFF, mask=weight)
    # A source must not overlap the hole (sum of the hole under the template's footprint).
    overlap = cv2.matchTemplate(hole_s.astype(np.float32), np.ones(templ.shape[:2], np.float32), cv2.TM_CCORR)
    cost[(overlap > 0.5) | ~np.isfinite(cost)] = np.inf
    if not np.isfinite(cost).any():
        return filled
    by, bx = np.unravel_index(int(np.argmin(cost)), cost.shape)
    dy, dx = int(round((by - ty0) / scale)), int(round((bx - tx0) / scale))
    # The source window at full resolution, kept inside the window.
    py0, px0 = max(0, y0 - ring_w), max(0, x0 - ring_w)
    py1, px1 = min(h, y1 + ring_w), min(w, x1 + ring_w)
    dy = int(np.clip(dy, -py0, h - py1))
    dx = int(np.clip(dx, -px0, w - px1))
    src = window[py0 + dy:py1 + dy, px0 + dx:px1 + dx]
    if hole[py0 + dy:py1 + dy, px0 + dx:px1 + dx].any():
        return filled
    out = filled.copy()
    inside = hole[py0:py1, px0:px1]
    ring_p = ring[py0:py1, px0:px1]
    src, tgt = np.ascontiguousarray(src), np.ascontiguousarray(window[py0:py1, px0:px1])
    # Two bands: the fine grain (kept at least at MIN_TEXTURE of the ring's amplitude) and a coarser
    # band (bricks, planks, tiles) added only as far as it predicts the ring (least-squares gain).
    for lo, hi, floor in ((0.0, DETAIL_SIGMA, MIN_TEXTURE), (DETAIL_SIGMA, 3 * DETAIL_SIGMA, 0.0)):
        s_band, t_band = _band(src, lo, hi), _band(tgt, lo, hi)
        s, t = s_band[ring_p], t_band[ring_p]
        power = float((s * s).sum())
        if power <= 0:
            continue
        fit = max(0.0, float((s * t).sum()) / power)             # the least-squares gain on the ring
        match = float(np.sqrt((t * t).sum() / power))              # the gain that matches the ring's amplitude
        gain = min(max(fit, floor * match), 1.5 * match)
        out[py0:py1, px0:px1][inside] += gain * s_band[inside]
    return out


def _band(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The detail of ``x`` between gaussian sigmas ``lo`` and ``hi`` (px; ``lo`` 0: from the finest)."""
    fine = x if lo <= 0 else cv2.GaussianBlur(x, (0, 0), lo).reshape(x.shape)
    return fine - cv2.GaussianBlur(x, (0, 0), hi).reshape(x.shape)
