"""Portrait retouching: faces, eyes and mouths found conservatively, skin smoothing, even tone, teeth, eyes.

Features come from the LBP frontal-face cascade (:func:`pipeline.masks.face_boxes`)
and are localised inside each face box on a fixed-size crop, so the answer
does not depend on the render size:

- eyes: the two darkest round blobs (difference of Gaussians) in the upper
  half of the face, one per side, accepted only as a level, plausibly spaced
  pair that clearly stands out from the skin;
- mouth: the reddest horizontal blob (Lab a*) in the lower face, centred and
  of a mouth's width; teeth are its bright, low-chroma pixels.

Anything not found reliably is ``None``; the ops then leave the photo alone
and :func:`describe_findings` says so in plain words (an honest reply).

Ops (uint8 RGB in, new uint8 RGB out, only masked pixels change):
:func:`smooth_skin` (frequency separation: mid frequencies, the blotches,
are smoothed edge-aware; the finest band, pores, is kept), :func:`even_skin_tone`
(chroma pulled towards the local skin colour, lightness untouched),
:func:`whiten_teeth`, :func:`brighten_eyes`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

#: Face crops are analysed at this width (px), whatever the photo's size.
FACE_CROP = 128


@dataclass(frozen=True)
class Face:
    """One face, all coordinates as fractions of the photo (x, y origin top-left)."""

    box: tuple[float, float, float, float]
    eyes: tuple[tuple[float, float, float], ...] | None = None   # ((cx, cy, r), (cx, cy, r)), r: fraction of width
    mouth: tuple[float, float, float, float] | None = None       # (x, y, w, h)
    teeth: float = 0.0                                            # share of the mouth box that is teeth


@dataclass(frozen=True)
class Features:
    faces: tuple[Face, ...] = field(default_factory=tuple)

    @property
    def eyes(self) -> list[tuple[float, float, float]]:
        return [e for f in self.faces if f.eyes for e in f.eyes]

    @property
    def mouths(self) -> list[tuple[float, float, float, float]]:
        return [f.mouth for f in self.faces if f.mouth]

    def to_array(self) -> np.ndarray:
        """Flat float32 rows (for the mask cache): box(4), eyes(6, NaN if none), mouth(4, NaN), teeth(1)."""
        rows = []
        for f in self.faces:
            eyes = [v for e in f.eyes for v in e] if f.eyes else [np.nan] * 6
            mouth = list(f.mouth) if f.mouth else [np.nan] * 4
            rows.append(list(f.box) + eyes + mouth + [f.teeth])
        return np.array(rows, np.float32).reshape(-1, 15)

    @classmethod
    def from_array(cls, arr: np.ndarray) -> "Features":
        faces = []
        for row in np.asarray(arr, np.float64).reshape(-1, 15):
            box = tuple(float(v) for v in row[:4])
            eyes = None if np.isnan(row[4]) else (tuple(map(float, row[4:7])), tuple(map(float, row[7:10])))
            mouth = None if np.isnan(row[10]) else tuple(float(v) for v in row[10:14])
            faces.append(Face(box, eyes, mouth, float(row[14])))
        return cls(tuple(faces))


def find_features(original: np.ndarray, boxes, *, use_models: bool = True) -> Features:
    """Eyes and mouth inside each face box of ``original`` (uint8 RGB); boxes as (x, y, w, h) fractions.

    With the LiteRT runtime installed, the face mesh (:mod:`pipeline.masks.models`) places them (see
    ``python -m pipeline.bench --peers``: every labelled face found, eyes within 0.07 of the eye
    distance); eyes it places under sunglasses, a hand or a fringe are not claimed. A face it does
    not confirm, or no runtime, falls back to the blob search in the face crop (``use_models=False``: always)."""
    from pipeline.masks import models

    h, w = original.shape[:2]
    mesh = {m["box"]: m for m in models.features(original, boxes)} \
        if use_models and models.available() and len(boxes) else {}
    faces = []
    for box in boxes:
        found = mesh.get(tuple(float(v) for v in box))
        if found is not None:
            faces.append(_mesh_face(original, found))
            continue
        x, y, bw, bh = (float(v) for v in box)
        x0, y0 = max(0, int(x * w)), max(0, int(y * h))
        x1, y1 = min(w, int(round((x + bw) * w))), min(h, int(round((y + bh) * h)))
        if x1 - x0 < 24 or y1 - y0 < 24:
            faces.append(Face((x, y, bw, bh)))
            continue
        crop = cv2.resize(original[y0:y1, x0:x1], (FACE_CROP, FACE_CROP),
                          interpolation=cv2.INTER_AREA if x1 - x0 > FACE_CROP else cv2.INTER_CUBIC)
        sx, sy = (x1 - x0) / FACE_CROP / w, (y1 - y0) / FACE_CROP / h
        eyes = _find_eyes(crop)
        mouth, teeth = _find_mouth(crop)
        eyes_frac = None if eyes is None else tuple(
            (x0 / w + ex * sx, y0 / h + ey * sy, er * sx) for ex, ey, er in eyes)
        mouth_frac = None if mouth is None else (
            x0 / w + mouth[0] * sx, y0 / h + mouth[1] * sy, mouth[2] * sx, mouth[3] * sy)
        faces.append(Face((x, y, bw, bh), eyes_frac, mouth_frac, teeth))
    return Features(tuple(faces))


def _mesh_face(original: np.ndarray, found: dict) -> Face:
    """A :class:`Face` from the mesh's eyes and lips; the teeth share measured in the lips' box."""
    h, w = original.shape[:2]
    x, y, bw, bh = found["box"]
    eyes = tuple((float(ex), float(ey), 0.07 * bw) for ex, ey in found["eyes"])  # r as the blob search's
    if not all(_eye_visible(original, b) for b in found["eye_boxes"]):
        eyes = None  # the mesh places eyes under a hand or a fringe too: only visible ones count
    mx, my, mw, mh = (float(v) for v in found["lips_box"])
    x0, y0 = max(0, int(mx * w)), max(0, int(my * h))
    x1, y1 = min(w, int(np.ceil((mx + mw) * w))), min(h, int(np.ceil((my + mh) * h)))
    # Teeth: light, colourless pixels of the lips' box, against this face's cheeks (Lab of the face only).
    fx0, fy0 = max(0, int(x * w)), max(0, int(y * h))
    fx1, fy1 = min(w, int((x + bw) * w) + 1), min(h, int((y + bh) * h) + 1)
    face = cv2.cvtColor(original[fy0:fy1, fx0:fx1], cv2.COLOR_RGB2Lab).astype(np.float32)
    mouth = face[max(0, y0 - fy0):max(0, y1 - fy0), max(0, x0 - fx0):max(0, x1 - fx0)]
    teeth = 0.0
    if face.size and mouth.size:
        cheek = _cheek_colour(face, (0, 0, 1, 1), fy1 - fy0, fx1 - fx0)
        teeth = float(_teeth_mask_crop(mouth[..., 0], mouth[..., 1], mouth[..., 2],
                                       (0, 0, mouth.shape[1], mouth.shape[0]), cheek).mean())
    return Face((float(x), float(y), float(bw), float(bh)), eyes, (mx, my, mw, mh), teeth)


def _eye_visible(original: np.ndarray, box) -> bool:
    """An eye shows in ``box`` (x, y, w, h fractions): its darkest pixels (iris, pupil, lashes) stand
    at least 25 levels below the box's median, as they never do on covered, plain skin."""
    h, w = original.shape[:2]
    x, y, bw, bh = box
    x0, y0 = max(0, int(x * w)), max(0, int(y * h))
    x1, y1 = min(w, int(np.ceil((x + bw) * w)) + 1), min(h, int(np.ceil((y + bh) * h)) + 1)
    if x1 - x0 < 2 or y1 - y0 < 2:
        return False
    grey = cv2.cvtColor(original[y0:y1, x0:x1], cv2.COLOR_RGB2GRAY).astype(np.float32)
    return float(np.median(grey) - np.percentile(grey, 5)) >= 25.0


def _find_eyes(crop: np.ndarray) -> tuple[tuple[float, float, float], ...] | None:
    """Two eyes in a FACE_CROP x FACE_CROP face crop as (cx, cy, r) in crop pixels, or None."""
    n = FACE_CROP
    gray = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY).astype(np.float32)
    dog = cv2.GaussianBlur(gray, (0, 0), 2.5) - cv2.GaussianBlur(gray, (0, 0), 7.0)
    zone_y = (int(0.2 * n), int(0.55 * n))
    found = []
    for xa, xb in ((0.08, 0.5), (0.5, 0.92)):
        zone = dog[zone_y[0]:zone_y[1], int(xa * n):int(xb * n)]
        iy, ix = np.unravel_index(int(np.argmin(zone)), zone.shape)
        found.append((ix + int(xa * n), iy + zone_y[0], float(zone.min()), float(zone.std())))
    (lx, ly, lv, ls), (rx, ry, rv, rs) = found
    spacing = (rx - lx) / n
    level = abs(ry - ly) / n
    strong = lv < -2.5 * max(ls, 1.0) and rv < -2.5 * max(rs, 1.0) and min(-lv, -rv) > 6.0
    if not (0.25 <= spacing <= 0.65 and level <= 0.08 and strong):
        return None
    r = 0.07 * n
    return ((float(lx), float(ly), r), (float(rx), float(ry), r))


def _find_mouth(crop: np.ndarray) -> tuple[tuple[float, float, float, float] | None, float]:
    """Mouth box (x, y, w, h) in crop pixels and the teeth share of it, or (None, 0)."""
    n = FACE_CROP
    lab = cv2.cvtColor(crop, cv2.COLOR_RGB2Lab).astype(np.float32)
    L, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
    y0, y1, x0, x1 = int(0.6 * n), int(0.98 * n), int(0.15 * n), int(0.85 * n)
    zone_a = a[y0:y1, x0:x1]
    cheeks = np.concatenate([a[int(0.45 * n):int(0.6 * n), int(0.15 * n):int(0.3 * n)].ravel(),
                             a[int(0.45 * n):int(0.6 * n), int(0.7 * n):int(0.85 * n)].ravel()])
    skin_a, skin_spread = float(np.median(cheeks)), float(np.std(cheeks)) + 1.0
    lips = (zone_a > skin_a + max(6.0, 2.5 * skin_spread)).astype(np.uint8)
    lips = cv2.morphologyEx(lips, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(lips)
    if count <= 1:
        return None, 0.0
    i = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    lx, ly, lw, lh, area = stats[i]
    cx = (x0 + lx + lw / 2) / n
    if not (0.2 <= lw / n <= 0.7 and 0.3 <= cx <= 0.7 and lw > 1.5 * lh and area >= 0.01 * n * n):
        return None, 0.0
    box = (float(x0 + lx), float(y0 + ly), float(lw), float(lh))
    teeth = _teeth_mask_crop(L, a, b, box, _cheek_colour(lab, (0, 0, 1, 1), n, n))
    return box, float(teeth.mean())


def _cheek_colour(lab: np.ndarray, box, h: int, w: int) -> tuple[float, float]:
    """Median lightness and chroma of the cheeks of face ``box`` (fractions) in a Lab image."""
    fx, fy, fw, fh = box
    parts = [lab[int((fy + 0.45 * fh) * h):int((fy + 0.6 * fh) * h) + 1,
                 int((fx + x0 * fw) * w):int((fx + x1 * fw) * w) + 1].reshape(-1, 3)
             for x0, x1 in ((0.15, 0.3), (0.7, 0.85))]
    cheeks = np.concatenate(parts)
    if not len(cheeks):
        return 160.0, 25.0
    return float(np.median(cheeks[:, 0])), float(np.median(np.hypot(cheeks[:, 1] - 128, cheeks[:, 2] - 128)))


def _teeth_mask_crop(L, a, b, box, cheek: tuple[float, float]) -> np.ndarray:
    """Teeth inside a mouth ``box`` (pixels of L/a/b): about as light as the cheeks or lighter, far less colourful."""
    x, y, w, h = (int(round(v)) for v in box)
    Lm, am, bm = L[y:y + h, x:x + w], a[y:y + h, x:x + w], b[y:y + h, x:x + w]
    chroma = np.hypot(am - 128, bm - 128)
    skin_L, skin_chroma = cheek
    return ((Lm > 0.85 * skin_L) & (chroma < 0.55 * skin_chroma)).astype(np.float32)


def describe_findings(features: Features, wanted: set[str]) -> list[str]:
    """Plain sentences for what a portrait op could not do ("No face was found ...")."""
    notes = []
    if not features.faces:
        if wanted:
            names = ", ".join(sorted(w.replace("_", " ") for w in wanted))
            notes.append(f"I couldn't find a face reliably, so {names} left the photo as it was.")
        return notes
    if wanted & {"eye_brightening", "red_eye"} and not features.eyes:
        notes.append("I couldn't find the eyes reliably, so I left them as they were.")
    if "teeth_whitening" in wanted:
        if not features.mouths:
            notes.append("I couldn't find the mouth reliably, so I left the teeth as they were.")
        elif max(f.teeth for f in features.faces) < 0.04:
            notes.append("No teeth are visible, so there was nothing to whiten.")
    return notes


# --- masks in pixels --------------------------------------------------------------

#: Soft shape masks (face zones, eyes) are drawn and blurred at this long side at most, then upsampled.
SHAPE_SIDE = 768


def _small_then_up(make, size: tuple[int, int], features: Features) -> np.ndarray:
    """A smooth mask made at most SHAPE_SIDE px on its long side and resized to ``size`` (fast at 4K)."""
    h, w = size
    s = SHAPE_SIDE / max(h, w)
    if s >= 1.0:
        return make(size, features)
    small = make((max(1, round(h * s)), max(1, round(w * s))), features)
    if not small.any():
        return np.zeros((h, w), np.float32)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def eye_mask(size: tuple[int, int], features: Features) -> np.ndarray:
    return _small_then_up(eye_mask_at, size, features)


def eye_mask_at(size: tuple[int, int], features: Features) -> np.ndarray:
    """Soft discs over the eyes (float32 HxW)."""
    h, w = size
    mask = np.zeros((h, w), np.float32)
    for cx, cy, r in features.eyes:
        rad = max(1.0, r * w)
        cv2.circle(mask, (int(round(cx * w)), int(round(cy * h))), int(round(rad * 1.1)), 1.0, -1)
    if mask.any():
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.8, 0.02 * features.faces[0].box[2] * w))
    return mask


def near_faces(size: tuple[int, int], features: Features) -> np.ndarray:
    return _small_then_up(near_faces_at, size, features)


def near_faces_at(size: tuple[int, int], features: Features) -> np.ndarray:
    """Soft zone (float32 HxW) of each face and its neck: skin ops stay there, off skin-coloured objects."""
    h, w = size
    mask = np.zeros((h, w), np.float32)
    for fx, fy, fw, fh in (f.box for f in features.faces):
        cv2.ellipse(mask, (int((fx + fw / 2) * w), int((fy + 0.7 * fh) * h)),
                    (max(1, int(0.75 * fw * w)), max(1, int(1.1 * fh * h))), 0, 0, 360, 1.0, -1)
    if mask.any():
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.8, 0.08 * max(f.box[2] for f in features.faces) * w))
    return mask


def feature_mask(size: tuple[int, int], features: Features) -> np.ndarray:
    return _small_then_up(feature_mask_at, size, features)


def feature_mask_at(size: tuple[int, int], features: Features) -> np.ndarray:
    """Soft mask (float32 HxW) over eyes (with lids and brows) and mouths: skin ops leave these alone."""
    h, w = size
    mask = np.zeros((h, w), np.float32)
    for f in features.faces:
        fx, fy, fw, fh = f.box
        if f.eyes:
            for cx, cy, r in f.eyes:
                axes = (max(1, int(0.2 * fw * w)), max(1, int(0.16 * fh * h)))
                cv2.ellipse(mask, (int(cx * w), int((cy - 0.03 * fh) * h)), axes, 0, 0, 360, 1.0, -1)
        else:  # no eyes found: keep the whole eye band out
            cv2.rectangle(mask, (int((fx + 0.05 * fw) * w), int((fy + 0.12 * fh) * h)),
                          (int((fx + 0.95 * fw) * w), int((fy + 0.5 * fh) * h)), 1.0, -1)
        if f.mouth:
            mx, my, mw, mh = f.mouth
            cv2.ellipse(mask, (int((mx + mw / 2) * w), int((my + mh / 2) * h)),
                        (max(1, int(0.65 * mw * w)), max(1, int(1.0 * mh * h))), 0, 0, 360, 1.0, -1)
    if mask.any():
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.8, 0.03 * max(f.box[2] for f in features.faces) * w))
    return mask


def teeth_mask(img: np.ndarray, features: Features) -> np.ndarray:
    """Soft mask of the teeth (float32 HxW) inside each found mouth."""
    h, w = img.shape[:2]
    mask = np.zeros((h, w), np.float32)
    for f in features.faces:
        if not f.mouth or f.teeth < 0.04:
            continue
        fx, fy, fw, fh = f.box
        bx0, by0 = max(0, int(fx * w)), max(0, int(fy * h))
        bx1, by1 = min(w, int(round((fx + fw) * w))), min(h, int(round((fy + fh) * h)))
        if bx1 - bx0 < 4 or by1 - by0 < 4:
            continue
        lab = cv2.cvtColor(np.ascontiguousarray(img[by0:by1, bx0:bx1]), cv2.COLOR_RGB2Lab).astype(np.float32)
        mx, my, mw, mh = f.mouth
        x0, y0 = max(bx0, int(mx * w)), max(by0, int(my * h))
        x1, y1 = min(bx1, int(round((mx + mw) * w))), min(by1, int(round((my + mh) * h)))
        if x1 - x0 < 2 or y1 - y0 < 2:
            continue
        L, a, b = lab[..., 0], lab[..., 1], lab[..., 2]
        cheek = _cheek_colour(lab, (0, 0, 1, 1), by1 - by0, bx1 - bx0)
        sx, sy = x0 - bx0, y0 - by0
        region = _teeth_mask_crop(L, a, b, (sx, sy, x1 - x0, y1 - y0), cheek)
        mask[y0:y1, x0:x1] = np.maximum(mask[y0:y1, x0:x1], region)
    if mask.any():
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.7, 0.002 * max(h, w)))
    return mask


# --- ops --------------------------------------------------------------------------

def _blend(img: np.ndarray, edited: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``edited`` where mask is 1; pixels where the mask is 0 stay bit-identical."""
    m = np.ascontiguousarray(mask, np.float32)
    out = cv2.blendLinear(img, edited, 1.0 - m, m)
    cv2.copyTo(img, (m <= 0).astype(np.uint8), out)
    return out


def _face_scale(features: Features, width: int) -> float:
    """Width in pixels of the largest face (or a tenth of the frame without one)."""
    if features.faces:
        return max(f.box[2] for f in features.faces) * width
    return 0.1 * width


def _work_scale(face_px: float, target: float = 256.0) -> float:
    """Scale at which the largest face is about ``target`` px wide (never above 1)."""
    return min(1.0, target / max(1.0, face_px))


def _down(img: np.ndarray, s: float) -> np.ndarray:
    if s >= 1.0:
        return img
    h, w = img.shape[:2]
    return cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)


def _up(img: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    if img.shape[:2] == shape:
        return img
    return cv2.resize(img, (shape[1], shape[0]), interpolation=cv2.INTER_LINEAR)


def _in_box(op, img: np.ndarray, mask: np.ndarray, reach: float) -> np.ndarray:
    """``op(img, mask)`` run only on the box where ``mask`` is at least 1/512, grown by ``reach`` px (how
    far the op's filters read): a face fills a small part of a 4K frame. A weaker mask moves a pixel by
    under half a level, which rounds back to the pixel: nothing outside the box changes."""
    h, w = mask.shape
    x, y, bw, bh = cv2.boundingRect((mask >= 1 / 512).astype(np.uint8))
    if bw == 0:
        return img
    pad = int(np.ceil(reach))
    x0, y0, x1, y1 = max(0, x - pad), max(0, y - pad), min(w, x + bw + pad), min(h, y + bh + pad)
    if (x1 - x0) * (y1 - y0) > 0.6 * h * w:
        return op(img, mask)
    out = img.copy()
    out[y0:y1, x0:x1] = op(np.ascontiguousarray(img[y0:y1, x0:x1]), np.ascontiguousarray(mask[y0:y1, x0:x1]))
    return out


def smooth_skin(img: np.ndarray, skin: np.ndarray, amount: float, face_px: float) -> np.ndarray:
    """Frequency separation on ``skin`` (float32 HxW 0..1): blotches smoothed, pore texture kept.

    The image splits into a fine band (detail finer than ~0.6% of the face:
    pores, fine hair), which is kept at full resolution, and the rest, which is
    smoothed with a guided filter (edge-aware: the jawline and nose stay sharp)
    on a copy where the face is ~256 px wide (the base is smooth, so this is
    indistinguishable and keeps 4K fast). ``amount`` 0..100 blends it in.
    """
    if amount <= 0 or not skin.any():
        return img
    fine_sigma = max(0.8, 0.006 * face_px)
    s = _work_scale(face_px)
    radius = max(2, int(round(0.04 * face_px * s)))

    def smooth(img: np.ndarray, skin: np.ndarray) -> np.ndarray:
        f = img.astype(np.float32)
        low = cv2.GaussianBlur(f, (0, 0), fine_sigma) * np.float32(1 / 255.0)
        small = _down(low, s)
        smoothed_small = cv2.ximgproc.guidedFilter(small, small, radius, 2e-3)
        # smoothed base + fine texture = the image + the base's change (only the change is upsampled)
        change = _up(smoothed_small - small, low.shape[:2])
        out = cv2.add(cv2.scaleAdd(change, 255.0, f), 0.0, dtype=cv2.CV_8U)  # rounded and saturated
        return _blend(img, out, skin * np.float32(min(100.0, amount) / 100.0))
    # the fine blur reads 4 sigma; the guided filter two box means of its radius, on the small copy
    return _in_box(smooth, img, skin, 4 * fine_sigma + 2 * (radius + 2) / s + 8)


def even_skin_tone(img: np.ndarray, skin: np.ndarray, amount: float, face_px: float) -> np.ndarray:
    """Pull skin chroma (Lab a*, b*) towards its broad local average: redness and patches even out.

    The broad average is smooth: it is computed where the face is ~256 px wide and upsampled."""
    if amount <= 0 or not skin.any():
        return img
    s = _work_scale(face_px)
    sigma = max(2.0, 0.15 * face_px * s)

    def even_out(img: np.ndarray, skin: np.ndarray) -> np.ndarray:
        lab = cv2.cvtColor(img, cv2.COLOR_RGB2Lab).astype(np.float32)
        small_lab, weight = _down(lab, s), _down(skin.astype(np.float32), s)
        den = cv2.GaussianBlur(weight, (0, 0), sigma) + 1e-4
        even = lab.copy()
        for c in (1, 2):
            avg = cv2.GaussianBlur(small_lab[..., c] * weight, (0, 0), sigma) / den
            even[..., c] = _up(avg, lab.shape[:2])
        out = cv2.cvtColor(cv2.add(even, 0.0, dtype=cv2.CV_8U), cv2.COLOR_Lab2RGB)  # rounded and saturated
        return _blend(img, out, skin * np.float32(0.85 * min(100.0, amount) / 100.0))
    # the average weighs skin, faint outside the box; two sigma around it keep the blur's edge out of the face
    return _in_box(even_out, img, skin, 2 * sigma / s + 2 / s + 4)


def whiten_teeth(img: np.ndarray, features: Features, amount: float) -> np.ndarray:
    """Less yellow (b* towards neutral) and a little brighter, inside the teeth mask only."""
    mask = teeth_mask(img, features)
    if amount <= 0 or not mask.any():
        return img
    ys, xs = np.nonzero(mask > 0)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    region = np.ascontiguousarray(img[y0:y1, x0:x1])
    lab = cv2.cvtColor(region, cv2.COLOR_RGB2Lab).astype(np.float32)
    a = min(100.0, amount) / 100.0
    lab[..., 2] = 128 + (lab[..., 2] - 128) * (1 - 0.8 * a) - 2 * a
    lab[..., 1] = 128 + (lab[..., 1] - 128) * (1 - 0.4 * a)
    lab[..., 0] = lab[..., 0] + (255 - lab[..., 0]) * 0.18 * a
    edited = cv2.cvtColor(np.clip(lab + 0.5, 0, 255).astype(np.uint8), cv2.COLOR_Lab2RGB)
    out = img.copy()
    out[y0:y1, x0:x1] = _blend(region, edited, np.ascontiguousarray(mask[y0:y1, x0:x1]))
    return out


def brighten_eyes(img: np.ndarray, features: Features, amount: float) -> np.ndarray:
    """Brighter, slightly crisper eyes: a lift in lightness plus a little local contrast."""
    mask = eye_mask(img.shape[:2], features)
    if amount <= 0 or not mask.any():
        return img
    a = min(100.0, amount) / 100.0
    ys, xs = np.nonzero(mask > 0)
    pad = 8
    y0, y1 = max(0, ys.min() - pad), min(img.shape[0], ys.max() + 1 + pad)
    x0, x1 = max(0, xs.min() - pad), min(img.shape[1], xs.max() + 1 + pad)
    region = np.ascontiguousarray(img[y0:y1, x0:x1])
    f = region.astype(np.float32)
    blur = cv2.GaussianBlur(f, (0, 0), max(1.0, 0.004 * max(img.shape[:2])))
    lifted = f + (255 - f) * 0.25 * a + (f - blur) * 0.6 * a
    out = img.copy()
    out[y0:y1, x0:x1] = _blend(region, np.clip(lifted + 0.5, 0, 255).astype(np.uint8),
                               np.ascontiguousarray(mask[y0:y1, x0:x1]))
    return out
