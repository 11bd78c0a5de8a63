"""Content-aware detection: faces, skin, sky and the main subject, from the photo alone.

Pure functions over a small uint8 RGB copy of the original (its long side is
:data:`FACE_SIDE`, :data:`CONTENT_SIDE` or :data:`SUBJECT_SIDE`); each returns a
float32 (h, w) mask in 0..1 at that copy's size. OpenCV and scikit-image only: no
downloaded models. Faces come from MediaPipe's bundled BlazeFace models when the
optional LiteRT runtime is installed (:mod:`.models`), else from the LBP
frontal-face cascade bundled with scikit-image (OpenCV 5 wheels no longer ship
Haar cascades).
"""

from __future__ import annotations

import cv2
import numpy as np

from pipeline.masks.shapes import colour_lean, ellipse, hue_sat_val, hue_weight, resize_mask, smoothstep

#: Sky and skin masks are computed on a copy of the original with this long side.
CONTENT_SIDE = 768
#: Faces are searched on a copy with this long side (the cascade's 20 px window is ~3% of it).
FACE_SIDE = 640
#: Saliency and GrabCut for the subject run on a copy with this long side.
SUBJECT_SIDE = 320


def skin_likelihood(img: np.ndarray) -> np.ndarray:
    """Generic skin-tone membership 0..1 of a uint8 RGB image.

    Soft version of the classic YCrCb box (Cr 133..173, Cb 77..127, Chai & Ngan)
    with a saturation floor (grey-beige walls are not skin) and no very dark
    or blown pixels (their chroma says nothing).
    """
    _, cr, cb = cv2.split(cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb).astype(np.float32))
    _, sat, val = hue_sat_val(img)
    m = smoothstep(cr, 128, 138) * (1.0 - smoothstep(cr, 168, 178))
    m *= smoothstep(cb, 72, 82) * (1.0 - smoothstep(cb, 122, 132))
    m *= smoothstep(sat, 0.10, 0.18) * (1.0 - smoothstep(sat, 0.75, 0.9))
    m *= smoothstep(val, 0.15, 0.3)
    return m


def detect_faces(img: np.ndarray) -> np.ndarray:
    """(N, 4) float32 boxes (x, y, w, h) as fractions: MediaPipe's BlazeFace models when the LiteRT
    runtime is installed (:mod:`.models`; found 8 of 8 labelled faces against the cascade's 5,
    ``python -m pipeline.bench --peers``), else the LBP frontal-face cascade."""
    import pipeline.masks.models as models

    if models.available():
        return models.detect_faces(img)
    return cascade_faces(img)


def cascade_faces(img: np.ndarray) -> np.ndarray:
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
    _, sat, _ = hue_sat_val(img)
    colourful = float(np.mean(sat > 0.15)) > 0.02
    skin = skin_likelihood(img) if colourful else None
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
        np.maximum(mask, ellipse(height, width, cx, cy, rx, ry, 0.35), out=mask)
    return mask


def face_mask(img: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Soft ellipses over the face ``boxes`` ((N, 4) fractions), at the size of ``img``."""
    return _face_ellipses(boxes, *img.shape[:2])


def skin_mask(img: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Skin of ``img`` (uint8 RGB), learnt from the faces in ``boxes`` where there are any."""
    h, w = img.shape[:2]
    skin = skin_likelihood(img)
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
            personal = 1.0 - smoothstep(np.sqrt(dist2), 2.5, 4.5)
            skin = np.maximum(skin * 0.5, personal * (skin > 0.05))
        # People's skin is near their faces: a broad region around each face and body below.
        near = np.zeros((h, w), np.float32)
        for x, y, bw, bh in boxes:
            near = np.maximum(near, ellipse(h, w, (x + bw / 2) * w, (y + 2.5 * bh) * h,
                                             3.0 * bw * w, 4.0 * bh * h, 0.5))
        skin *= 0.35 + 0.65 * near
        np.maximum(skin, _face_ellipses(boxes, h, w) * smoothstep(skin, 0.02, 0.2), out=skin)
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


def sky_mask(img: np.ndarray) -> np.ndarray:
    """Top-connected, smooth, blue or bright regions of ``img`` (uint8 RGB), refined along the skyline."""
    h, w = img.shape[:2]
    f = img.astype(np.float32) / 255.0
    lab = cv2.cvtColor(f, cv2.COLOR_RGB2Lab)
    L = lab[..., 0]
    chroma = np.hypot(lab[..., 1], lab[..., 2])
    hue, sat, _ = hue_sat_val(img)
    blue = hue_weight(hue, 215.0, 70.0) * smoothstep(sat, 0.08, 0.18)
    bright = smoothstep(L, 55.0, 70.0) * (1.0 - smoothstep(chroma, 12.0, 25.0))
    skyish = np.maximum(blue, bright)
    # Texture: local mean gradient of lightness in L units per pixel (sky is smooth).
    smooth_L = cv2.GaussianBlur(L, (0, 0), 1.0)
    gx = cv2.Sobel(smooth_L, cv2.CV_32F, 1, 0, ksize=3) / 8.0
    gy = cv2.Sobel(smooth_L, cv2.CV_32F, 0, 1, ksize=3) / 8.0
    texture = cv2.GaussianBlur(cv2.magnitude(gx, gy), (0, 0), 2.0)
    flat = 1.0 - smoothstep(texture, 0.6, 1.5)
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
    keep |= _sky_through_openings(keep, labels, stats, lab, blue, h, w)
    sky = keep[labels].astype(np.uint8)
    # The texture test leaves a margin around towers, branches and the skyline;
    # take back nearby pixels whose colour matches the sky at the same height.
    sky = _grow_by_colour(sky, lab, reach=max(3, round(0.03 * min(h, w))), tolerance=7.0)
    # Close pinholes (stars, birds, JPEG blocks) that are inside the sky.
    sky = cv2.morphologyEx(sky, cv2.MORPH_CLOSE, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5)))
    return _refine(sky.astype(np.float32), img, radius=max(2, round(0.012 * min(h, w))), eps=1e-3)


#: Sky seen through an opening (an arch, a window, between branches): a flat, blue region that does not
#: reach the top, at least this share of the frame, within this Delta E of the sky's mean colour at the
#: top (the sky deepens away from the sun) and of its hue, and no wider than this share of the frame (water that
#: reflects the sky spans it); one that reaches the bottom edge must be cut by a side edge too (an arch
#: at the frame's corner; a pond at the bottom is not sky).
_OPENING_MIN_AREA = 0.0008
_OPENING_DELTA_E = 20.0
_OPENING_MAX_WIDTH = 0.5
_OPENING_HUE = 10.0     # degrees of Lab hue from the sky's


def _sky_through_openings(keep: np.ndarray, labels: np.ndarray, stats: np.ndarray, lab: np.ndarray,
                          blue: np.ndarray, h: int, w: int) -> np.ndarray:
    """The candidate regions (not kept) that are the sky seen through an opening (see above)."""
    sky_colour = lab[keep[labels]].mean(axis=0)
    out = np.zeros_like(keep)
    for i in range(1, len(keep)):
        x, y, bw, bh, area = stats[i]
        if keep[i] or area < _OPENING_MIN_AREA * h * w or bw > _OPENING_MAX_WIDTH * w:
            continue
        if y + bh >= h and x > 0 and x + bw < w:
            continue
        part = labels == i
        colour = lab[part].mean(axis=0)
        # the same hue as the sky (water is greener: turquoise under a blue sky, 13-17 degrees off)
        turn = abs((np.degrees(np.arctan2(colour[2], colour[1]) - np.arctan2(sky_colour[2], sky_colour[1]))
                    + 180.0) % 360.0 - 180.0)
        out[i] = float(blue[part].mean()) >= 0.8 and turn <= _OPENING_HUE \
            and float(np.linalg.norm(colour - sky_colour)) < _OPENING_DELTA_E
    return out


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


def subject_mask(img: np.ndarray) -> np.ndarray:
    """The salient subject: a saliency map (colour contrast + spectral residual +
    fine-grained, with a gentle centre prior) boxes the subject, GrabCut cuts it
    out by colour, and the cut is kept where the saliency agrees."""
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
           + _normalise(cv2.GaussianBlur(resize_mask(np.asarray(spectral, np.float32), h, w), (0, 0), blur)) * 0.25
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



# --- a thing described by its look, where the person says it is ------------------------------------

#: Tones a spot is described by ("the bright crater", "the dark spot"); a colour band names the rest.
SPOT_TONES = ("bright", "dark")
#: A pixel counts towards a spot when it stands out this far from the middle of its part of the frame (L* or
#: a*b* units) and among the most outstanding of that part (:data:`SPOT_SHARE` of it).
SPOT_MIN_EXCESS = 4.0
SPOT_SHARE = 0.12


def spot_mask(img: np.ndarray, tone: str, within: np.ndarray) -> np.ndarray:
    """The one thing in ``within`` (a soft mask of the part of the frame the person named, the size of ``img``)
    that stands out most by ``tone``: "bright" or "dark" (L* against the middle of that part) or a colour band
    (its CIELAB lean, as :func:`pipeline.masks.shapes.shade_mask` reads it, with a little of the lightness).

    The pixels standing out most (the top :data:`SPOT_SHARE` of the part, at least :data:`SPOT_MIN_EXCESS`)
    split into connected blobs; the blob standing out most in all (excess summed over it) is the thing. It then
    takes in what stands out at least half as much as its own peak next to it (so a crater's bright rim is one
    thing with the floor inside it, and a glow does not creep over the frame), grown a little and feathered.
    Empty when nothing in the part stands out.
    """
    h, w = img.shape[:2]
    sigma = max(1.0, 0.006 * max(h, w))        # a speck of noise or grain is no thing
    lab = cv2.cvtColor(img.astype(np.float32) * np.float32(1.0 / 255.0), cv2.COLOR_RGB2Lab)
    light = cv2.GaussianBlur(lab[..., 0], (0, 0), sigma)
    area = within > 0.35
    if not area.any():
        return np.zeros((h, w), np.float32)
    middle = float(np.median(light[area]))
    if tone in SPOT_TONES:
        excess = light - middle if tone == "bright" else middle - light
    else:
        lean = colour_lean(cv2.GaussianBlur(lab[..., 1], (0, 0), sigma), cv2.GaussianBlur(lab[..., 2], (0, 0), sigma),
                           tone)
        excess = lean - float(np.median(lean[area])) + np.float32(0.3) * (light - middle)
    threshold = max(float(np.percentile(excess[area], 100.0 * (1.0 - SPOT_SHARE))), SPOT_MIN_EXCESS)
    count, labels = cv2.connectedComponents(((excess > threshold) & area).astype(np.uint8), connectivity=8)
    if count < 2:
        return np.zeros((h, w), np.float32)
    sums = np.bincount(labels.ravel(), weights=np.clip(excess, 0, None).ravel(), minlength=count)
    seed = (labels == int(np.argmax(sums[1:])) + 1).astype(np.uint8)
    reach = int(np.sqrt(seed.sum() / np.pi)) + 2
    near = cv2.dilate(seed, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * reach + 1, 2 * reach + 1)))
    peak = float(np.percentile(excess[seed.astype(bool)], 95))
    grown = ((excess > max(0.6 * threshold, 0.5 * peak)) & area & near.astype(bool)).astype(np.uint8)
    _, parts = cv2.connectedComponents(grown | seed, connectivity=8)
    thing = np.isin(parts, np.unique(parts[seed.astype(bool)])).astype(np.uint8)
    edge = max(2, int(0.35 * np.sqrt(thing.sum() / np.pi)))
    thing = cv2.dilate(thing, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * edge + 1, 2 * edge + 1)))
    return cv2.GaussianBlur(thing.astype(np.float32), (0, 0), 0.6 * edge)
