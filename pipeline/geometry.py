"""Geometry: crop, rotate, flip and straighten, non-destructively.

The frame of a render is a function of the EditState's geometry ops and the
original's size (and, for automatic straightening, of the original's pixels):
:func:`frame_for` returns a :class:`Frame`, an affine map from output pixels to
original pixels plus the output size. The renderer samples the original through
it first, then develops the framed pixels (every per-pixel op commutes with
the frame, so the order does not change the look, only the work). Masks of
local layers are computed on the original, in its coordinates, and warped
through the same frame, so a sky layer stays on the sky after a crop or a
rotation.

Order of the frame, as a photographer sets it:

1. ``rotate`` (0, 90, 180, 270 degrees clockwise) and ``flip_h`` / ``flip_v``;
2. ``straighten`` (degrees, positive turns the picture clockwise) plus the
   detected tilt when ``auto_straighten`` is on; the rotated picture is cropped
   to the largest rectangle of its own aspect that holds only valid pixels (no
   empty corners);
3. the free crop ``crop_left/top/right/bottom`` (percent of that frame cut from
   each side, i.e. the normalised rectangle ``[l, t, 1-r, 1-b]``);
4. ``crop_aspect`` (the largest centred rectangle of 1:1, 4:5, 3:2, ... inside);
5. ``crop_zoom`` (a centred crop: 100 keeps the middle half of each side).

Coordinates are continuous: pixel ``i`` spans ``[i, i+1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import cv2
import numpy as np

#: crop_aspect choices (index 0 keeps the frame's own aspect).
ASPECTS: tuple[str, ...] = ("original", "1:1", "4:5", "3:2", "2:3", "16:9", "9:16", "5:4", "4:3", "3:4")
#: A tilt found below this (degrees) counts as level: auto straighten leaves the photo untouched.
LEVEL_TOLERANCE = 0.5
#: The steepest straighten, either way (degrees).
MAX_ANGLE = 45
#: The most a free crop may cut from one side (percent), and the least it must keep (percent of a side).
MAX_INSET = 95.0
MIN_KEEP = 5.0
#: Long side of the copy on which the tilt of an original is detected.
DETECT_SIDE = 1024


class GeometryError(ValueError):
    """A crop or angle that cannot frame the picture; the message says why."""


def geometry_ops(Op) -> list:
    """The geometry rows of the op registry (``Op`` is :class:`pipeline.ops.Op`)."""
    g = "geometry"

    def inset(side: str) -> Any:
        return Op(f"crop_{side}", f"Crop {side}", g, "crop",
                  f"Free crop: percent of the straightened frame cut from the {side} "
                  f"(the normalised rectangle is [left, top, 1-right, 1-bottom]).",
                  "", f"{MAX_INSET:g}% of the frame cut from the {side}", kind="geometry",
                  min=0, max=int(MAX_INSET), step=0.1, unit="percent")

    return [
        Op("rotate", "Rotate", g, "orientation",
           "Turns the picture by quarter turns, applied first (degrees clockwise: 90 = rotate right, "
           "-90 or 270 = rotate left; stored as 0, 90, 180 or 270).",
           "turned left (counter-clockwise)", "turned right (clockwise)", kind="geometry",
           min=-270, max=270, step=90, period=360, control="angle", unit="degrees"),
        Op("flip_h", "Flip horizontal", g, "orientation", "Mirror left-right.",
           "", "mirrored left-right", kind="geometry", min=0, max=1, control="toggle", period=2),
        Op("flip_v", "Flip vertical", g, "orientation", "Mirror top-bottom.",
           "", "mirrored top-bottom", kind="geometry", min=0, max=1, control="toggle", period=2),
        Op("straighten", "Straighten", g, "straighten",
           "Rotates the picture by this many degrees (positive = clockwise) and crops to the largest "
           "rectangle of valid pixels.", f"{MAX_ANGLE} degrees counter-clockwise",
           f"{MAX_ANGLE} degrees clockwise", kind="geometry", min=-MAX_ANGLE, max=MAX_ANGLE,
           control="angle", step=0.1, unit="degrees"),
        Op("auto_straighten", "Auto straighten", g, "straighten",
           "Levels the horizon (or the dominant verticals) found by line detection; straighten adds to it.",
           "", "levelled automatically", kind="geometry", min=0, max=1, control="toggle"),
        inset("left"), inset("top"), inset("right"), inset("bottom"),
        Op("crop_aspect", "Aspect ratio", g, "crop",
           "Crops to the largest centred rectangle of this aspect (width:height).",
           "", "", kind="geometry", min=0, max=len(ASPECTS) - 1, control="choice", choices=ASPECTS),
        Op("crop_zoom", "Tighter crop", g, "crop",
           "A centred crop after the others: 100 keeps the middle half of each side.",
           "", "keeps the middle half", kind="geometry", min=0, max=100),
    ]


# -- the frame ------------------------------------------------------------------------

@dataclass(frozen=True)
class Frame:
    """Output pixels -> original pixels.

    ``matrix`` (3x3) maps continuous output coordinates at full resolution to
    continuous original coordinates; ``width``/``height`` are the output size at
    full resolution (fractional); ``angle`` the total straighten (degrees);
    ``quarter`` and ``flip`` the orientation.
    """

    matrix: np.ndarray
    width: float
    height: float
    angle: float
    quarter: int
    flip_h: bool
    flip_v: bool
    #: False when an aspect crop could not hold every box it was asked to keep (faces too far apart).
    kept_all: bool = True

    @property
    def axis_aligned(self) -> bool:
        return self.angle == 0

    def size_at(self, long_side: int | None) -> tuple[int, int]:
        """(height, width) of a render whose long side is at most ``long_side`` (never upscaled)."""
        s = 1.0 if long_side is None else min(1.0, long_side / max(self.width, self.height))
        return max(1, round(self.height * s)), max(1, round(self.width * s))

    def pixel_matrix(self, out_size: tuple[int, int], src_full: tuple[int, int],
                     src_size: tuple[int, int] | None = None) -> np.ndarray:
        """2x3 matrix for ``cv2.warpAffine(..., WARP_INVERSE_MAP)``: output pixel
        index -> pixel index of the original resized to ``src_size`` (default full)."""
        oh, ow = out_size
        H, W = src_full
        sh, sw = src_size or src_full
        to_out = _scale(self.width / ow, self.height / oh) @ _translate(0.5, 0.5)
        to_src = _translate(-0.5, -0.5) @ _scale(sw / W, sh / H)
        return (to_src @ self.matrix @ to_out)[:2]

    def source_box(self, src_full: tuple[int, int], margin: float = 2.0) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) of the original's pixels the frame reads, clipped to the image."""
        H, W = src_full
        corners = np.array([[0, 0, 1], [self.width, 0, 1], [0, self.height, 1], [self.width, self.height, 1]]).T
        pts = (self.matrix @ corners)[:2]
        x0 = max(0, int(math.floor(pts[0].min() - margin)))
        y0 = max(0, int(math.floor(pts[1].min() - margin)))
        x1 = min(W, int(math.ceil(pts[0].max() + margin)))
        y1 = min(H, int(math.ceil(pts[1].max() + margin)))
        return x0, y0, x1, y1


def _translate(x: float, y: float) -> np.ndarray:
    return np.array([[1.0, 0, x], [0, 1.0, y], [0, 0, 1.0]])


def _scale(x: float, y: float) -> np.ndarray:
    return np.array([[x, 0, 0], [0, y, 0], [0, 0, 1.0]])


def _rotation(degrees: float) -> np.ndarray:
    """Turns a point clockwise on screen (y points down) by ``degrees``."""
    a = math.radians(degrees)
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def _orientation(quarter: int, flip_h: bool, flip_v: bool, W: float, H: float) -> tuple[np.ndarray, float, float]:
    """Oriented-frame coords -> original coords, and the oriented size."""
    if quarter == 1:    # turned clockwise: displayed (u, v) <- original (v, H - u)
        m, Wo, Ho = np.array([[0, 1.0, 0], [-1.0, 0, H], [0, 0, 1.0]]), H, W
    elif quarter == 2:
        m, Wo, Ho = np.array([[-1.0, 0, W], [0, -1.0, H], [0, 0, 1.0]]), W, H
    elif quarter == 3:  # turned counter-clockwise: displayed (u, v) <- original (W - v, u)
        m, Wo, Ho = np.array([[0, -1.0, W], [1.0, 0, 0], [0, 0, 1.0]]), H, W
    else:
        m, Wo, Ho = np.eye(3), W, H
    if flip_h:
        m = m @ np.array([[-1.0, 0, Wo], [0, 1.0, 0], [0, 0, 1.0]])
    if flip_v:
        m = m @ np.array([[1.0, 0, 0], [0, -1.0, Ho], [0, 0, 1.0]])
    return m, Wo, Ho


def valid_scale(angle: float, width: float, height: float) -> float:
    """Largest k such that a centred ``k*width x k*height`` rectangle fits inside
    the ``width x height`` picture rotated by ``angle`` degrees (no empty corners)."""
    a = math.radians(angle)
    c, s = abs(math.cos(a)), abs(math.sin(a))
    A, B = width / 2.0, height / 2.0
    return min(A / (A * c + B * s), B / (A * s + B * c))


def aspect_value(label: str) -> float:
    w, h = label.split(":")
    return float(w) / float(h)


def frame_for(settings: Mapping[str, Any], width: int, height: int, tilt: float = 0.0,
              keep_boxes: Sequence[Sequence[float]] = ()) -> Frame:
    """The frame of ``settings`` on a ``width x height`` original.

    ``tilt`` is the detected tilt of the original in degrees (clockwise), used
    when ``auto_straighten`` is on. ``keep_boxes``: boxes (x, y, w, h, fractions of the
    original) an aspect crop must not cut, most important first (faces, then the
    main subject): the crop slides off centre to hold them, and the frame's
    ``kept_all`` says whether it could. Raises :class:`GeometryError` for a crop
    that keeps too little of the frame.
    """
    quarter = int(settings.get("rotate", 0)) // 90 % 4
    fh, fv = bool(settings.get("flip_h", 0)), bool(settings.get("flip_v", 0))
    m, Wo, Ho = _orientation(quarter, fh, fv, float(width), float(height))
    angle = float(settings.get("straighten", 0))
    if settings.get("auto_straighten"):
        # A mirror image tilts the other way; quarter turns keep the tilt.
        angle -= tilt * (-1 if fh != fv else 1)
    angle = max(-MAX_ANGLE, min(MAX_ANGLE, round(angle, 3)))
    k = valid_scale(angle, Wo, Ho) if angle else 1.0
    Ws, Hs = k * Wo, k * Ho
    if angle:
        cx, cy = Wo / 2.0, Ho / 2.0
        # straightened (x, y) -> oriented: undo the clockwise turn about the centre.
        m = m @ _translate(cx, cy) @ _rotation(-angle) @ _translate(-Ws / 2.0, -Hs / 2.0)
    left, top, right, bottom = (float(settings.get(f"crop_{s}", 0)) / 100.0 for s in ("left", "top", "right", "bottom"))
    keep = MIN_KEEP / 100.0
    if 1.0 - left - right < keep or 1.0 - top - bottom < keep:
        raise GeometryError(
            f"crop: the rectangle [{left:.3f}, {top:.3f}, {1 - right:.3f}, {1 - bottom:.3f}] keeps less than "
            f"{MIN_KEEP:g}% of a side of the frame")
    x0, y0, w, h = left * Ws, top * Hs, (1.0 - left - right) * Ws, (1.0 - top - bottom) * Hs
    aspect = int(settings.get("crop_aspect", 0))
    kept_all = True
    if 0 < aspect < len(ASPECTS):
        r = aspect_value(ASPECTS[aspect])
        nw, nh = (h * r, h) if w / h > r else (w, w / r)
        # Centred, unless that cuts a face or the subject: then slid along the side with room to spare.
        boxes = [_box_in_frame(b, m, width, height) for b in keep_boxes]
        if nw < w:
            x0, kept_all = _place(x0, w, nw, [(b[0], b[2]) for b in boxes])
        elif nh < h:
            y0, kept_all = _place(y0, h, nh, [(b[1], b[3]) for b in boxes])
        w, h = nw, nh
    zoom = float(settings.get("crop_zoom", 0))
    if zoom:
        f = 1.0 - 0.5 * zoom / 100.0
        x0, y0, w, h = x0 + w * (1 - f) / 2.0, y0 + h * (1 - f) / 2.0, w * f, h * f
    m = m @ _translate(x0, y0)
    return Frame(matrix=m, width=w, height=h, angle=angle, quarter=quarter, flip_h=fh, flip_v=fv, kept_all=kept_all)


#: A face box is grown by this share of its size on each side before an aspect crop keeps it (hair, chin).
FACE_MARGIN = 0.15


def _box_in_frame(box: Sequence[float], m: np.ndarray, width: int, height: int) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) in the straightened frame's coordinates of ``box`` ((x, y, w, h) fractions of
    the original, grown by :data:`FACE_MARGIN`), through the inverse of ``m`` (frame -> original)."""
    x, y, bw, bh = (float(v) for v in box)
    x, y, bw, bh = x - FACE_MARGIN * bw, y - FACE_MARGIN * bh, bw * (1 + 2 * FACE_MARGIN), bh * (1 + 2 * FACE_MARGIN)
    corners = np.array([[x, y, 1], [x + bw, y, 1], [x, y + bh, 1], [x + bw, y + bh, 1]]).T * \
        np.array([[width], [height], [1.0]])
    pts = (np.linalg.inv(m) @ corners)[:2]
    return float(pts[0].min()), float(pts[1].min()), float(pts[0].max()), float(pts[1].max())


def _place(start: float, room: float, size: float, spans: list[tuple[float, float]]) -> tuple[float, bool]:
    """Where a ``size`` window goes inside [start, start + room] to hold the ``spans`` ((lo, hi) each):
    as near the middle as holding them all allows, else on the most of them that fit together.
    Returns (window start, all kept)."""
    lo_room, hi_room = start, start + room - size
    centred = start + (room - size) / 2.0
    spans = [(max(a, start), min(b, start + room)) for a, b in spans if b > start and a < start + room]
    if not spans:
        return centred, True

    def fits(group):
        return max(b for _, b in group) - min(a for a, _ in group) <= size

    def placed(group):  # the position nearest the centre that holds the whole group
        need_lo, need_hi = max(b for _, b in group) - size, min(a for a, _ in group)
        return float(np.clip(centred, max(lo_room, need_lo), min(hi_room, need_hi)))

    if fits(spans):
        return placed(spans), True
    # Too far apart: of the windows that start at a box or end at one, the one holding the most (by
    # size), nearest the centre among equals; then as near the middle as what it holds allows.
    best, best_score = [], -1.0
    for a, b in spans:
        for p in (float(np.clip(a, lo_room, hi_room)), float(np.clip(b - size, lo_room, hi_room))):
            inside = [(x, y) for x, y in spans if x >= p - 1e-6 and y <= p + size + 1e-6]
            score = sum(y - x for x, y in inside) - 1e-9 * abs(p - centred)
            if inside and score > best_score:
                best, best_score = inside, score
    return (placed(best) if best else centred), False


def crop_insets(rect: Any) -> dict[str, float]:
    """A normalised rectangle ``[x0, y0, x1, y1]`` (0..1 of the straightened frame)
    -> the crop_left/top/right/bottom values (percent). Raises :class:`GeometryError`
    for a rectangle outside the image or too small."""
    if isinstance(rect, str):
        rect = [p for p in rect.replace(",", " ").split()]
    try:
        x0, y0, x1, y1 = (float(v) for v in rect)
    except (TypeError, ValueError):
        raise GeometryError(f"crop: expected four numbers x0,y0,x1,y1 between 0 and 1, got {rect!r}") from None
    if not all(math.isfinite(v) for v in (x0, y0, x1, y1)):
        raise GeometryError(f"crop: expected finite numbers, got {rect!r}")
    if min(x0, y0, x1, y1) < 0 or max(x0, y0, x1, y1) > 1:
        raise GeometryError(f"crop: the rectangle {[x0, y0, x1, y1]} lies outside the image; "
                            f"coordinates are fractions of the frame, 0..1")
    if x1 - x0 < MIN_KEEP / 100 or y1 - y0 < MIN_KEEP / 100:
        raise GeometryError(f"crop: the rectangle {[x0, y0, x1, y1]} is empty or keeps less than "
                            f"{MIN_KEEP:g}% of a side (x1 must exceed x0, y1 must exceed y0)")
    return {"crop_left": round(x0 * 100, 1), "crop_top": round(y0 * 100, 1),
            "crop_right": round((1 - x1) * 100, 1), "crop_bottom": round((1 - y1) * 100, 1)}


# -- sampling the original through a frame ---------------------------------------------------

def axis_box(frame: Frame, H: int, W: int) -> tuple[int, int, int, int]:
    """Whole-pixel (x0, y0, x1, y1) of the original that an axis-aligned frame shows."""
    corners = (frame.matrix @ np.array([[0, frame.width], [0, frame.height], [1, 1]]))[:2]
    lo, hi = corners.min(axis=1), corners.max(axis=1)
    ex, ey = (max(1, int(round(v))) for v in hi - lo)
    x0 = min(max(0, int(round(lo[0]))), W - min(ex, W))
    y0 = min(max(0, int(round(lo[1]))), H - min(ey, H))
    return x0, y0, min(W, x0 + ex), min(H, y0 + ey)


def orient(region: np.ndarray, frame: Frame) -> np.ndarray:
    """``region`` (an original's slice, any per-pixel array) turned and mirrored like the frame."""
    out = np.rot90(region, -frame.quarter) if frame.quarter else region
    if frame.flip_h:
        out = out[:, ::-1]
    if frame.flip_v:
        out = out[::-1]
    return out


def framed(original: np.ndarray, frame: Frame, out_size: tuple[int, int],
           interpolation: int = cv2.INTER_LINEAR) -> np.ndarray:
    """The original's pixels seen through ``frame``, at ``out_size`` (height, width).

    Without a straighten angle this is a slice, a quarter turn and a flip
    (exact pixels at full resolution), area-resized for a proxy. With an angle
    the needed part of the original is area-reduced towards the output scale
    (no aliasing) and sampled with ``cv2.warpAffine``.
    """
    H, W = original.shape[:2]
    oh, ow = out_size
    if frame.axis_aligned:
        x0, y0, x1, y1 = axis_box(frame, H, W)
        region = orient(original[y0:y1, x0:x1], frame)
        if region.shape[:2] != (oh, ow):
            shrink = region.shape[0] >= oh and region.shape[1] >= ow
            region = cv2.resize(np.ascontiguousarray(region), (ow, oh),
                                interpolation=cv2.INTER_AREA if shrink else interpolation)
        return np.ascontiguousarray(region)
    x0, y0, x1, y1 = frame.source_box((H, W))
    region = original[y0:y1, x0:x1]
    m = frame.pixel_matrix(out_size, (H, W)) + np.array([[0, 0, -x0], [0, 0, -y0]])
    scale = ow / frame.width
    if scale < 0.75:
        rh, rw = max(1, round((y1 - y0) * scale)), max(1, round((x1 - x0) * scale))
        sx, sy = rw / (x1 - x0), rh / (y1 - y0)
        region = cv2.resize(np.ascontiguousarray(region), (rw, rh), interpolation=cv2.INTER_AREA)
        # index in the full region -> index in the reduced one (pixel centres).
        m = np.array([[sx, 0, 0.5 * sx - 0.5], [0, sy, 0.5 * sy - 0.5]]) @ np.vstack([m, [0, 0, 1]])
    return cv2.warpAffine(np.ascontiguousarray(region), m, (ow, oh), flags=interpolation | cv2.WARP_INVERSE_MAP,
                          borderMode=cv2.BORDER_REPLICATE)


def framed_image(pixels: np.ndarray, frame: Frame, out_size: tuple[int, int],
                 src_full: tuple[int, int]) -> np.ndarray:
    """An array laid out like the original but at any size (a mask, a retouched copy) seen through
    ``frame`` at ``out_size``; same dtype as ``pixels``."""
    if pixels.shape[:2] == src_full:
        return framed(pixels, frame, out_size)
    m = frame.pixel_matrix(out_size, src_full, pixels.shape[:2])
    return cv2.warpAffine(np.ascontiguousarray(pixels), m, (out_size[1], out_size[0]),
                          flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP, borderMode=cv2.BORDER_REPLICATE)


def framed_mask(mask: np.ndarray, frame: Frame, out_size: tuple[int, int], src_full: tuple[int, int]) -> np.ndarray:
    """A float mask computed on the original (at any size) warped into the frame."""
    return framed_image(np.asarray(mask, np.float32), frame, out_size, src_full)


# -- automatic straightening ---------------------------------------------------------------

def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def _vanishing_tilt(lines: np.ndarray, width: int, height: int) -> float | None:
    """Clockwise tilt (degrees) of the direction from the frame's centre to the point the near-vertical
    ``lines`` ((rho, theta, votes) rows, Hough normal form) converge to: the least-squares point,
    reweighted so lines far from it (a slanted roof) count less; None when most lines do not point
    at it within a degree."""
    rho, theta, votes = lines[:, 0], lines[:, 1], lines[:, 2].astype(np.float64)
    scale = float(max(width, height))
    # Centred, scaled coordinates keep the 3x3 system well conditioned.
    offset = (rho - 0.5 * width * np.cos(theta) - 0.5 * height * np.sin(theta)) / scale
    hom = np.stack([np.cos(theta), np.sin(theta), -offset], axis=1)
    weight = votes.copy()
    point = None
    for _ in range(8):
        _, vecs = np.linalg.eigh((hom * weight[:, None]).T @ hom)
        point = vecs[:, 0]
        weight = votes / np.maximum(np.abs(hom @ point), 1e-3)
    if point is None or not np.isfinite(point).all():
        return None
    # Each line's angle to the direction from its foot (nearest the centre) to the point: most lines
    # must point at it within a degree, or they do not converge to one point.
    foot = hom[:, :2] * offset[:, None]
    to_point = point[None, :2] - foot * point[2]
    along = np.stack([-np.sin(theta), np.cos(theta)], axis=1)
    cos_miss = np.abs((to_point * along).sum(axis=1)) / np.maximum(np.linalg.norm(to_point, axis=1), 1e-12)
    miss = np.degrees(np.arccos(np.clip(cos_miss, 0.0, 1.0)))
    if _weighted_median(miss, votes) > 1.0:
        return None
    dx, dy = (point[0], point[1]) if abs(point[2]) < 1e-9 else (point[0] / point[2], point[1] / point[2])
    if abs(point[2]) >= 1e-9 and abs(dx) * scale < 0.5 * width and abs(dy) * scale < 0.5 * height:
        return None  # they cross inside the picture: a stray line across them, not a vanishing point
    if dy < 0:  # the same direction, pointing down the frame
        dx, dy = -dx, -dy
    return float(np.degrees(np.arctan2(-dx, dy)))


def detect_tilt(original: np.ndarray, max_tilt: float = 20.0, tolerance: float = LEVEL_TOLERANCE) -> float:
    """Clockwise tilt of the horizon or the dominant verticals, in degrees (0 = level).

    The reading of :func:`line_tilt`; 0.0 when no line is long enough to trust, and when
    the tilt found is under :data:`LEVEL_TOLERANCE` (a level photo is neither turned nor
    cropped).
    """
    tilt = line_tilt(original, max_tilt)
    # Below the level tolerance a turn would cost a crop for a lean nobody sees: a level photo stays as it is.
    return 0.0 if tilt is None or abs(tilt) < tolerance else round(tilt, 3)


def _mode(angles: np.ndarray, weights: np.ndarray, sigma: float) -> float:
    """The most supported of weighted angle readings (degrees): the peak of their Gaussian kernel
    density (``sigma`` wide) on a 0.05 degree grid, refined by mean-shift steps, so the reading moves
    smoothly with the lines rather than snapping from one line to another."""
    grid = np.arange(angles.min() - 1.0, angles.max() + 1.0001, 0.05)
    density = (weights[None, :] * np.exp(-0.5 * ((grid[:, None] - angles[None, :]) / sigma) ** 2)).sum(axis=1)
    mode = float(grid[int(np.argmax(density))])
    for _ in range(30):
        k = weights * np.exp(-0.5 * ((angles - mode) / sigma) ** 2)
        step = float((k * angles).sum() / k.sum()) - mode
        mode += step
        if abs(step) < 1e-4:
            break
    return mode


#: An edge pixel votes for the horizontal (vertical) lines only when its gradient lies within
#: max_tilt plus this many degrees of vertical (horizontal): arches, foliage and the crossing
#: family do not pile votes onto lines they do not belong to.
EDGE_SLACK = 10.0
#: Width (degrees) of the kernel that gathers line readings into one family.
FAMILY_WIDTH = 0.5
#: Verticals whose weighted median spread is at most this (degrees) are parallel; beyond it they converge.
PARALLEL_SPREAD = 0.5


def line_tilt(original: np.ndarray, max_tilt: float = 20.0) -> float | None:
    """Clockwise tilt of the strongest straight-line family in degrees, or None without one.

    Straight edges are found with Canny on a copy whose long side is
    :data:`DETECT_SIDE`; edge pixels are split by the direction of their gradient into
    those of near-horizontal and of near-vertical edges (within ``max_tilt`` plus
    :data:`EDGE_SLACK`), and a standard Hough transform at 0.05 degree resolution on each
    set votes for lines within ``max_tilt`` of horizontal or vertical. The strongest line
    family wins: the vote-weighted mode of the lines' angles (a :data:`FAMILY_WIDTH` kernel,
    refined by mean shift), so one slanted edge does not outvote a family of parallels.
    Where verticals carry half the votes they decide: their median when parallel, the
    direction to the point they converge to when in perspective. None when no line is long
    enough to trust (a third of the short side).
    """
    img = np.asarray(original)
    if img.ndim == 3:
        img = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    h, w = img.shape[:2]
    s = min(1.0, DETECT_SIDE / max(h, w))
    if s < 1.0:
        img = cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)
    img = cv2.GaussianBlur(img, (0, 0), 1.2)
    med = float(np.median(img))
    edges = cv2.Canny(img, max(10.0, 0.5 * med), max(30.0, 1.2 * med), L2gradient=True) > 0
    f = img.astype(np.float32)
    gx = cv2.Sobel(f, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(f, cv2.CV_32F, 0, 1, ksize=3)
    # Angle of the gradient from vertical: 0 on a horizontal edge, 90 on a vertical one.
    from_vertical = np.degrees(np.arctan2(np.abs(gx), np.abs(gy)))
    reach = max_tilt + EDGE_SLACK
    horizontal_px = (edges & (from_vertical <= reach)).astype(np.uint8) * 255
    vertical_px = (edges & (from_vertical >= 90.0 - reach)).astype(np.uint8) * 255
    short = min(img.shape[:2])
    threshold = max(20, int(short / 3))
    step = math.radians(0.05)
    t = math.radians(max_tilt)
    found: list[tuple[float, float]] = []  # (clockwise tilt in degrees, votes)
    verticals = []  # (rho, theta, votes) of the lines near vertical
    for px, lo, hi, centre in ((horizontal_px, math.pi / 2 - t, math.pi / 2 + t, 90.0),
                               (vertical_px, 0.0, t, 0.0), (vertical_px, math.pi - t, math.pi, 180.0)):
        lines = cv2.HoughLinesWithAccumulator(px, 1, step, threshold, min_theta=lo, max_theta=hi)
        if lines is None:
            continue
        lines = lines.reshape(-1, 3)[:200]
        found += [(math.degrees(theta) - centre, float(votes)) for _rho, theta, votes in lines]
        if centre != 90.0:
            verticals.append(lines)
    if not found:
        return None
    # Consensus, not the single strongest edge: the angle whose neighbourhood gathers the most
    # votes, so one slanted edge (a roof, a leaning pole in perspective) does not outvote a family
    # of parallel lines.
    angles = np.array([a for a, _ in found])
    votes = np.array([v for _, v in found])
    tilt = _mode(angles, votes, FAMILY_WIDTH)
    if verticals:
        # Buildings: verticals in perspective converge, and tapered towers lean both ways, so no one
        # family of parallels is the true vertical; the point they converge to is (seen from the centre).
        vert = np.concatenate(verticals)
        v_angles = np.degrees(vert[:, 1]) - np.where(vert[:, 1] > math.pi / 2, 180.0, 0.0)
        if len(vert) >= 4 and vert[:, 2].sum() >= 0.5 * votes.sum():
            middle = _weighted_median(v_angles, vert[:, 2])
            spread = _weighted_median(np.abs(v_angles - middle), vert[:, 2])
            if spread <= PARALLEL_SPREAD:  # parallel verticals: their median
                tilt = middle
            else:  # converging ones: where they meet, if most of them do meet in one point
                converge = _vanishing_tilt(vert, img.shape[1], img.shape[0])
                # Tapered shapes leaning both ways that meet nowhere in particular: their middle.
                tilt = converge if converge is not None else middle
    return tilt
