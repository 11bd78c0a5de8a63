"""Healing and removal on CPU: dust spots, skin blemishes, painted regions, red eyes.

Pure, deterministic functions over uint8 RGB images (HxWx3); each returns a
new image and changes only the pixels it heals (everything else stays
bit-identical). Sizes scale with the image, so a proxy and the full-resolution
export of the same state heal the same spots.

- :func:`find_dust` / :func:`heal_dust`: sensor dust (:mod:`pipeline.dust`): soft,
  round, neutral, faint shadows on a plain surround (sky, walls, backdrops), not
  one of many like it; healed by a smooth fill from their clean surroundings.
- :func:`find_blemishes`: the same idea inside the skin mask, at the scale of
  the face, away from eyes, nostrils and mouth.
- :func:`remove_region`: a painted or clicked region filled from its
  surroundings (:mod:`pipeline.inpaint`): a biharmonic fill, and where the
  surroundings are textured, the fine detail of the best-matching nearby patch.
- :func:`fix_red_eye`: red pupils inside eye boxes found by
  :mod:`pipeline.portrait`, neutralised and darkened.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from pipeline import dust as sensor_dust
from pipeline import inpaint

#: A removal mask counts from this value up (0..1): every pixel it touches is refilled.
REMOVE_FLOOR = 0.02
#: Removed regions at least this fraction of the long side across are filled harmonically with the
#: surroundings' texture; smaller ones (spots, specks) with the smoother biharmonic fill.
TEXTURE_MIN = 0.012


def _spot_candidates(depth: np.ndarray, threshold: float, max_d: int, min_area: int = 2) -> list[np.ndarray]:
    """Connected parts of ``depth > threshold`` that are small and round: their pixel masks (bool)."""
    hot = (depth > threshold).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(hot, connectivity=8)
    keep = np.zeros(count, bool)
    max_area = np.pi * (max_d / 2.0) ** 2
    for i in range(1, count):
        x, y, w, h, area = stats[i]
        if not min_area <= area <= max_area or max(w, h) > max_d:
            continue
        if max(w, h) > 3 * max(1, min(w, h)) or area < 0.3 * w * h:  # lines and scratches are not dust
            continue
        keep[i] = True
    return [keep[labels]] if keep.any() else []


#: What :func:`find_dust` measures once per photo and size (:class:`pipeline.dust.DustMap`).
DustMap = sensor_dust.DustMap


def dust_map(img: np.ndarray) -> DustMap:
    """The amount-independent part of :func:`find_dust` for ``img`` (uint8 RGB)."""
    return sensor_dust.dust_map(img)


def find_dust(img: np.ndarray, amount: float, dust: DustMap | None = None) -> np.ndarray:
    """Mask (uint8 0/255) of the dust spots to heal; ``amount`` 0..100 (higher: fainter spots too).
    See :mod:`pipeline.dust`: soft, round, neutral, faint shadows on a plain surround, not one of
    many. ``dust``: the :func:`dust_map` of ``img`` when the caller keeps one."""
    return sensor_dust.dust_mask(img, amount, dust)


def _tile_windows(mask: np.ndarray, cell: int):
    """Windows around the occupied ``cell`` x ``cell`` tiles of ``mask`` (HxW, > 0 = in), so sparse
    work costs a scan, not a full-frame pass. Tiles that touch share a window, so a connected part
    of the mask never crosses between windows. Each window is ``(x0, y0, x1, y1, own)``: its tiles'
    box clipped to the frame, and ``own`` (bool, the window's size) marking its own tiles, in the
    order OpenCV labels them."""
    h, w = mask.shape
    th, tw = (h + cell - 1) // cell, (w + cell - 1) // cell
    m8 = mask if mask.dtype == np.uint8 else (np.asarray(mask) > 0).astype(np.uint8)
    if not cv2.countNonZero(m8):
        return []
    # Band by band of tile rows: an empty band costs a count, an occupied one a column maximum
    # (listing the pixels of a 12 MP frame, or a block maximum in numpy, costs several times more).
    tiles = np.zeros((th, tw), np.uint8)
    row = np.zeros(tw * cell, np.uint8)
    for ty in range(th):
        band = m8[ty * cell:(ty + 1) * cell]
        if cv2.countNonZero(band):
            row[:w] = cv2.reduce(band, 0, cv2.REDUCE_MAX).ravel()
            tiles[ty] = row.reshape(tw, cell).max(axis=1) > 0
    n, labels, stats, _ = cv2.connectedComponentsWithStats(tiles, connectivity=8)
    out = []
    for k in range(1, n):
        tx, ty, tbw, tbh = (int(v) for v in stats[k, :4])
        x0, y0 = tx * cell, ty * cell
        x1, y1 = min(w, (tx + tbw) * cell), min(h, (ty + tbh) * cell)
        cx, cy = x0 // cell, y0 // cell                                  # the tiles under the window
        own = cv2.resize((labels[cy:(y1 + cell - 1) // cell, cx:(x1 + cell - 1) // cell] == k).astype(np.uint8),
                         None, fx=cell, fy=cell, interpolation=cv2.INTER_NEAREST)
        out.append((x0, y0, x1, y1, own[y0 - cy * cell:y1 - cy * cell, x0 - cx * cell:x1 - cx * cell] > 0))
    return out


def _isolated(raw: np.ndarray, labels: np.ndarray, i: int, box: tuple, sigma: float, *,
              spread: tuple[float, float] = (1.5, 0.2)) -> bool:
    """A spot sits alone on a plain surround: the ring around it is much flatter than the spot is deep
    (ring std below ``spread[0]`` x the noise or ``spread[1]`` x the depth)."""
    x, y, bw, bh = (int(v) for v in box)
    h, w = raw.shape
    pad = max(4, max(bw, bh))
    x0, y0, x1, y1 = max(0, x - pad), max(0, y - pad), min(w, x + bw + pad), min(h, y + bh + pad)
    spot = (labels[y0:y1, x0:x1] == i).astype(np.uint8)
    inner = cv2.dilate(spot, np.ones((5, 5), np.uint8))
    outer = cv2.dilate(spot, cv2.getStructuringElement(cv2.MORPH_RECT, (2 * pad + 5, 2 * pad + 5)))
    ring = (outer > 0) & (inner == 0)
    if ring.sum() < 8:
        return False
    patch = np.asarray(raw[y0:y1, x0:x1], np.float32)
    surround = patch[ring]
    depth = float(np.median(surround) - patch[spot > 0].min())
    return float(surround.std()) < max(spread[0] * sigma, spread[1] * depth) and depth > 3 * sigma


def mask_parts(mask: np.ndarray, cell: int = 32, *, masks: bool = False):
    """Connected parts (8-connected) of a sparse mask (any dtype, > 0 = in): their
    ``(x, y, w, h, area)`` rows like ``cv2.connectedComponentsWithStats``'s, in raster order of the box;
    with ``masks=True`` also each part's own pixels (bool, its box's size): ``(rows, [masks])``.

    Labelled window by window around the occupied ``cell`` x ``cell`` tiles, so a
    4K mask with a few spots costs a scan, not a full-frame labelling.
    """
    m8 = mask if mask.dtype == np.uint8 else (np.asarray(mask) > 0).astype(np.uint8)
    windows = _tile_windows(m8, cell)
    if not windows:
        return (np.zeros((0, 5), np.int32), []) if masks else np.zeros((0, 5), np.int32)
    rows, own_pixels = [], []
    for x0, y0, x1, y1, own in windows:
        count, labels, stats, _ = cv2.connectedComponentsWithStats(m8[y0:y1, x0:x1] & own, connectivity=8)
        part = stats[1:].copy()
        if masks:
            own_pixels += [labels[y:y + bh, x:x + bw] == j for j, (x, y, bw, bh, _) in enumerate(part, 1)]
        part[:, 0] += x0
        part[:, 1] += y0
        rows.append(part)
    parts = np.concatenate(rows).astype(np.int32)
    order = np.lexsort((parts[:, 0], parts[:, 1]))
    return (parts[order], [own_pixels[i] for i in order]) if masks else parts[order]


def heal_spots(img: np.ndarray, mask: np.ndarray, *, smooth: bool = True) -> np.ndarray:
    """Fill the (small, scattered) spots of ``mask`` from their surroundings; only masked pixels change.

    Each spot is filled in its own small window. ``smooth=True`` (dust on
    flat areas): a normalised convolution of the clean surroundings, which
    is unbiased on a noisy sky; ``smooth=False``: OpenCV's Telea inpainting,
    which carries edges and gradients in (blemishes, small removals).
    """
    parts = mask_parts(mask)
    if not len(parts):
        return img
    h, w = img.shape[:2]
    out = img.copy()
    radius = max(3, round(0.002 * max(h, w)))
    for x, y, bw, bh, _ in parts:
        size = max(bw, bh)
        pad = (size + 4) if smooth else 2 * radius + 2
        x0, y0, x1, y1 = max(0, x - pad), max(0, y - pad), min(w, x + bw + pad), min(h, y + bh + pad)
        window = (mask[y0:y1, x0:x1] > 0).astype(np.uint8)
        src = np.ascontiguousarray(img[y0:y1, x0:x1])
        if smooth:
            filled = _smooth_fill(src, window, max(1.5, size / 3.0))
        else:
            filled = cv2.inpaint(src, window * 255, radius, cv2.INPAINT_TELEA)
        cv2.copyTo(filled, window, out[y0:y1, x0:x1])  # nothing outside the mask changes
    return out


def _smooth_fill(src: np.ndarray, hole: np.ndarray, sigma: float) -> np.ndarray:
    """``src`` (uint8 RGB) with a normalised convolution of its pixels outside ``hole`` (uint8 0/1):
    a smooth fill that is unbiased on noise. A wide fill (sigma over 16 px) is computed on a copy
    reduced to sigma ~8 px and upsampled: the field is smooth, and a 300 px hole costs a blur of 40 px."""
    known = (1 - hole).astype(np.float32)
    num = src.astype(np.float32) * known[..., None]
    f = int(sigma // 8)
    if f >= 2 and min(hole.shape) >= 4 * f:
        h, w = hole.shape
        size = (max(1, round(w / f)), max(1, round(h / f)))
        num = cv2.resize(cv2.GaussianBlur(cv2.resize(num, size, interpolation=cv2.INTER_AREA), (0, 0), sigma / f),
                         (w, h), interpolation=cv2.INTER_LINEAR)
        den = cv2.resize(cv2.GaussianBlur(cv2.resize(known, size, interpolation=cv2.INTER_AREA), (0, 0), sigma / f),
                         (w, h), interpolation=cv2.INTER_LINEAR)[..., None]
    else:
        num = cv2.GaussianBlur(num, (0, 0), sigma)
        den = cv2.GaussianBlur(known, (0, 0), sigma)[..., None]
    return np.clip(num / np.maximum(den, 1e-4) + 0.5, 0, 255).astype(np.uint8)


def heal_dust(img: np.ndarray, amount: float, dust: DustMap | None = None) -> tuple[np.ndarray, int]:
    """Find and heal dust spots (``dust``: the :func:`dust_map` of ``img``, if kept); returns
    (image, number of spots healed)."""
    found = dust if dust is not None else sensor_dust.dust_map(img)
    mask = sensor_dust.dust_mask(None, amount, found)
    return heal_spots(img, mask), len(sensor_dust.dust_spots(amount=amount, dust=found))


def find_blemishes(img: np.ndarray, amount: float, skin: np.ndarray, faces: Sequence[Sequence[float]],
                   keep_out: np.ndarray | None = None) -> np.ndarray:
    """Mask (uint8 0/255) of small dark or red blemishes inside ``skin`` (float HxW 0..1).

    ``faces``: boxes (x, y, w, h) as fractions; the blemish scale follows the
    largest face and the search stays on the faces. ``keep_out`` (float HxW):
    eyes, brows and mouths, which are dark or red on purpose; the nostrils are
    always left out. Nothing is found without a face.
    """
    h, w = img.shape[:2]
    if amount <= 0 or not len(faces):
        return np.zeros((h, w), np.uint8)
    face_w = max(fw * w for _, _, fw, _ in faces)
    scale = min(1.0, 320.0 / face_w)
    if scale < 0.9:  # found where the face is ~320 px wide (blemishes are then 3-20 px), healed at full size
        small = cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
        small_skin = cv2.resize(np.asarray(skin, np.float32), (small.shape[1], small.shape[0]),
                                interpolation=cv2.INTER_AREA)
        small_out = None if keep_out is None else cv2.resize(np.asarray(keep_out, np.float32),
                                                              (small.shape[1], small.shape[0]),
                                                              interpolation=cv2.INTER_AREA)
        found = find_blemishes(small, amount, small_skin, faces, small_out)
        if not found.any():
            return np.zeros((h, w), np.uint8)
        big = cv2.resize(found, (w, h), interpolation=cv2.INTER_NEAREST)
        grow = max(1, round(1 / scale))
        return cv2.dilate(big, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1)))
    max_d = int(np.clip(round(0.06 * face_w), 3, 60))
    # Everything is worked out on the faces' box with room for the filters and the surround
    # test (3 spot sizes): the rest of the frame has no face, so no blemish.
    boxes = [(int((fx + 0.05 * fw) * w), int((fy + 0.05 * fh) * h), int((fx + 0.95 * fw) * w) + 1,
              int((fy + 1.05 * fh) * h) + 1) for fx, fy, fw, fh in faces]
    margin = 3 * max_d + 8
    x0, y0 = max(0, min(b[0] for b in boxes) - margin), max(0, min(b[1] for b in boxes) - margin)
    x1, y1 = min(w, max(b[2] for b in boxes) + margin), min(h, max(b[3] for b in boxes) + margin)
    out = np.zeros((h, w), np.uint8)
    if x1 <= x0 or y1 <= y0:
        return out
    box = (slice(y0, y1), slice(x0, x1))
    found = _blemishes_in_box(np.ascontiguousarray(img[box]), amount, np.ascontiguousarray(skin[box]),
                              faces, None if keep_out is None else np.ascontiguousarray(keep_out[box]),
                              (x0, y0, w, h), max_d)
    if found is not None:
        out[box] = found
    return out


def _blemishes_in_box(img: np.ndarray, amount: float, skin: np.ndarray, faces, keep_out: np.ndarray | None,
                      frame: tuple[int, int, int, int], max_d: int) -> np.ndarray | None:
    """:func:`find_blemishes` on a box of the frame (``frame``: the box's corner and the frame's size)."""
    x0, y0, w, h = frame
    bh, bw = img.shape[:2]
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (max_d | 1, max_d | 1))
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2Lab).astype(np.float32)
    L, a = lab[..., 0], lab[..., 1]
    dark = cv2.morphologyEx(L, cv2.MORPH_CLOSE, kernel) - L
    red = a - cv2.morphologyEx(a, cv2.MORPH_OPEN, kernel)
    inside = cv2.erode((skin > 0.6).astype(np.uint8), kernel).astype(bool)
    if keep_out is not None:
        inside &= keep_out < 0.05
    zone = np.zeros((bh, bw), bool)
    for fx, fy, fw, fh in faces:  # on the face (the skin mask also covers hair, neck and hands), not the nostrils
        zone[max(0, int((fy + 0.05 * fh) * h) - y0):max(0, int((fy + 1.05 * fh) * h) + 1 - y0),
             max(0, int((fx + 0.05 * fw) * w) - x0):max(0, int((fx + 0.95 * fw) * w) + 1 - x0)] = True
        zone[max(0, int((fy + 0.52 * fh) * h) - y0):max(0, int((fy + 0.7 * fh) * h) + 1 - y0),
             max(0, int((fx + 0.36 * fw) * w) - x0):max(0, int((fx + 0.64 * fw) * w) + 1 - x0)] = False
    where = inside & zone
    if not where.any():
        return None
    # Skin texture level, measured on this skin: a blemish must stand out from it.
    resid = L - cv2.GaussianBlur(L, (0, 0), 1.0)
    sigma = max(0.5, 1.4826 * float(np.median(np.abs(resid[where]))))
    k = 7.0 - 4.0 * min(100.0, float(amount)) / 100.0
    score = (dark + 0.5 * np.maximum(red, 0)) / max(2.5, k * sigma)
    parts = _spot_candidates(score * where, 1.0, max_d)
    if not parts:
        return None
    count, labels, stats, _ = cv2.connectedComponentsWithStats(parts[0].astype(np.uint8), connectivity=8)
    keep = np.zeros(count, bool)
    for i in range(1, count):  # a blemish stands out from plain skin, like dust from a plain sky
        box = stats[i, :4]  # skin has more texture than a sky: a looser surround test
        keep[i] = _isolated(L, labels, i, box, sigma, spread=(3.0, 1.0)) or \
            _isolated(-a, labels, i, box, sigma, spread=(3.0, 1.0))
    if not keep.any():
        return None
    grow = max(2, max_d // 3)  # the soft rim of the blemish goes too
    return cv2.dilate(keep[labels].astype(np.uint8),
                      cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1))) * 255


def remove_region(img: np.ndarray, mask: np.ndarray, strength: float = 1.0) -> np.ndarray:
    """Fill ``mask`` (float 0..1 or uint8 0..255, HxW) from its surroundings; ``strength`` 0..1 blends
    the fill over the original (1: the region is replaced).

    Every pixel the mask touches is unknown; each connected part is filled on its own window
    by :mod:`pipeline.inpaint` (biharmonic fill, then the surroundings' texture where they are
    textured). The fill replaces the image fully where the mask is at least half on and blends
    in along a feathered edge below that; pixels where the mask is 0 never change.
    """
    m = np.asarray(mask)
    unit = 1.0 if m.dtype.kind == "f" else 255.0
    support = cv2.compare(m, REMOVE_FLOOR * unit, cv2.CMP_GT)  # 0 / 255; one fast pass over the frame
    parts, pixels = mask_parts(support, masks=True)
    if not len(parts):
        return img
    h, w = img.shape[:2]
    out = img.copy()
    # Small parts first: a filled spot is surroundings (and a texture source) for a larger region.
    for k in sorted(range(len(parts)), key=lambda k: (max(parts[k][2], parts[k][3]), k)):
        (x, y, bw, bh, _), own = parts[k], pixels[k]
        size = max(bw, bh)
        large = size >= TEXTURE_MIN * max(h, w)
        # A large region needs room around it for the exemplar search (two sizes each way).
        pad = 2 * size if large else inpaint.margin_for(size)
        x0, y0, x1, y1 = max(0, x - pad), max(0, y - pad), min(w, x + bw + pad), min(h, y + bh + pad)
        hole = np.zeros((y1 - y0, x1 - x0), bool)
        hole[y - y0:y - y0 + bh, x - x0:x - x0 + bw] = own
        # Parts not filled yet inside this window stay unknown too: they are not surroundings.
        unknown = hole | (support[y0:y1, x0:x1] > 0)
        if large:
            # Harmonic, then texture: over a wide hole a biharmonic surface overshoots on textured
            # surroundings, and the texture pass restores what the smooth fill lacks.
            fy, fx, filled = inpaint.fill_textured(out[y0:y1, x0:x1], unknown, (x - x0, y - y0, bw, bh))
        else:
            fy, fx, filled = 0, 0, inpaint.biharmonic_fill(out[y0:y1, x0:x1].astype(np.float32), unknown)
        # Only the hole's box is blended (the window may be six times wider for the search).
        by, bx = y - y0 - fy, x - x0 - fx
        filled = filled[by:by + bh, bx:bx + bw]
        region = out[y:y + bh, x:x + bw]
        alpha = np.clip(m[y:y + bh, x:x + bw].astype(np.float32) * np.float32(2.0 / unit), 0.0, 1.0) * np.float32(strength)
        blend = region + (filled - region) * alpha[..., None]
        region[own] = np.clip(blend[own] + 0.5, 0, 255).astype(np.uint8)
        support[y:y + bh, x:x + bw][own] = 0
    return out


def red_pupils(img: np.ndarray, eyes: Sequence[tuple[float, float, float]]) -> np.ndarray:
    """Soft mask (float32 HxW) of red pupils inside eye circles ``(cx, cy, r)`` in pixels."""
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.float32)
    for cx, cy, r in eyes:
        x0, y0 = max(0, int(cx - r)), max(0, int(cy - r))
        x1, y1 = min(w, int(cx + r) + 1), min(h, int(cy + r) + 1)
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        R, G, B = (img[y0:y1, x0:x1, c].astype(np.float32) for c in range(3))
        redness = (R - np.maximum(G, B)) / (R + 1.0)
        core = ((redness > 0.45) & (R > 60)).astype(np.uint8)
        count, labels, stats, cents = cv2.connectedComponentsWithStats(core)
        if count <= 1:
            continue
        # the red part nearest the eye centre
        i = 1 + int(np.argmin(np.hypot(cents[1:, 0] + x0 - cx, cents[1:, 1] + y0 - cy)))
        if stats[i, cv2.CC_STAT_AREA] < 4:
            continue
        part = (labels == i).astype(np.float32)
        part = cv2.GaussianBlur(cv2.dilate(part, np.ones((3, 3), np.uint8)), (0, 0), max(0.7, r / 12))
        soft = np.clip(part * np.clip((redness + 0.1) / 0.5, 0, 1), 0, 1)
        np.maximum(mask[y0:y1, x0:x1], soft, out=mask[y0:y1, x0:x1])
    return mask


def fix_red_eye(img: np.ndarray, eyes: Sequence[tuple[float, float, float]], amount: float) -> tuple[np.ndarray, int]:
    """Red pupils made neutral and dark; returns (image, pupils fixed)."""
    mask = red_pupils(img, eyes) * np.float32(min(100.0, amount) / 100.0)
    if not mask.any():
        return img, 0
    # Only the pupils' box is worked on (per-pixel math): the rest of a 4K frame is copied.
    x, y, bw, bh = cv2.boundingRect((mask > 0).astype(np.uint8))
    f = img[y:y + bh, x:x + bw].astype(np.float32)
    m = mask[y:y + bh, x:x + bw, None]
    # The red channel takes the mean of green and blue, and the pupil darkens a little: a natural dark pupil.
    fixed = f.copy()
    gb = (f[..., 1] + f[..., 2]) / 2.0
    fixed[..., 0] = gb
    fixed *= 0.8
    box = np.clip(f * (1 - m) + fixed * m + 0.5, 0, 255).astype(np.uint8)
    unchanged = m[..., 0] == 0
    box[unchanged] = img[y:y + bh, x:x + bw][unchanged]
    out = img.copy()
    out[y:y + bh, x:x + bw] = box
    return out, len(mask_parts(mask > 0.3))
