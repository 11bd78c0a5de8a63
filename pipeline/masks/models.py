"""Faces, face landmarks and the person from MediaPipe's bundled models, run by LiteRT.

The four ``.tflite`` files in ``models/`` are copied unchanged from the mediapipe
0.10.21 wheel (Apache-2.0, its LICENSE beside them): BlazeFace short range
(close-ups) and full range (group photos), the 468-point face mesh, and selfie
(person) segmentation. Nothing is downloaded. They run under ``ai-edge-litert``
(the TensorFlow Lite runtime, numpy 2 compatible), an optional extra
(``requirements-models.txt``); without it :func:`available` is False and the
callers keep the heuristics of :mod:`.detectors`.

All functions take uint8 RGB photos; boxes and points are fractions of the photo.
"""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import cv2
import numpy as np

MODELS = Path(__file__).resolve().parent / "models"
#: Lowest detection score kept (BlazeFace's sigmoid), and the overlap at which two detections are one face.
FACE_SCORE = 0.6
FACE_OVERLAP = 0.3
#: Mesh points of each eye's rim and of the lips (outer and inner), in MediaPipe's face-mesh numbering.
LEFT_EYE = (33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246)
RIGHT_EYE = (263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466)
LIPS = (61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39, 40, 185)
#: The face's outline (the silhouette of the mesh), in order around it.
FACE_OVAL = (10, 338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379, 378, 400, 377, 152, 148,
             176, 149, 150, 136, 172, 58, 132, 93, 234, 127, 162, 21, 54, 103, 67, 109)


def available() -> bool:
    """True when the LiteRT runtime is installed and the bundled models are here."""
    try:
        import ai_edge_litert.interpreter  # noqa: F401
    except ImportError:
        return False
    return all((MODELS / f).is_file() for f in ("face_detection_short_range.tflite",
                                                 "face_detection_full_range_sparse.tflite",
                                                 "face_landmark.tflite", "selfie_segmentation.tflite"))


class _Model:
    """One interpreter per model file; calls are serialised (an interpreter is not thread-safe)."""

    def __init__(self, name: str):
        from ai_edge_litert.interpreter import Interpreter

        self.interpreter = Interpreter(model_path=str(MODELS / name), num_threads=1)
        self.interpreter.allocate_tensors()
        self.input = self.interpreter.get_input_details()[0]
        self.outputs = self.interpreter.get_output_details()
        self.lock = threading.Lock()

    @property
    def size(self) -> tuple[int, int]:
        _, h, w, _ = self.input["shape"]
        return int(h), int(w)

    def __call__(self, tensor: np.ndarray) -> list[np.ndarray]:
        with self.lock:
            self.interpreter.set_tensor(self.input["index"], tensor[None].astype(np.float32))
            self.interpreter.invoke()
            return [self.interpreter.get_tensor(o["index"])[0].copy() for o in self.outputs]


@functools.cache
def _model(name: str) -> _Model:
    return _Model(name)


@functools.cache
def _anchors(size: int, strides: tuple[int, ...], per_cell: tuple[int, ...]) -> np.ndarray:
    """SSD anchor centres (N, 2) in 0..1, as MediaPipe's SsdAnchorsCalculator lays them (fixed size)."""
    out = []
    for stride, count in zip(strides, per_cell):
        n = size // stride
        ys, xs = np.mgrid[0:n, 0:n]
        centres = np.stack([(xs + 0.5) / n, (ys + 0.5) / n], -1).reshape(-1, 1, 2)
        out.append(np.repeat(centres, count, axis=1).reshape(-1, 2))
    return np.concatenate(out).astype(np.float32)


def _letterbox(img: np.ndarray, size: int) -> tuple[np.ndarray, float, float, float]:
    """``img`` scaled to fit a ``size`` square, padded; (tensor in -1..1, scale, pad x, pad y)."""
    h, w = img.shape[:2]
    s = size / max(h, w)
    nw, nh = max(1, round(w * s)), max(1, round(h * s))
    canvas = np.zeros((size, size, 3), np.float32)
    px, py = (size - nw) // 2, (size - nh) // 2
    canvas[py:py + nh, px:px + nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_AREA)
    return canvas / 127.5 - 1.0, s, px, py


def _blazeface(img: np.ndarray, name: str, strides: tuple[int, ...], per_cell: tuple[int, ...]) -> np.ndarray:
    """(N, 5) rows x, y, w, h (fractions of ``img``) and score, before merging overlaps."""
    model = _model(name)
    size = model.size[0]
    tensor, s, px, py = _letterbox(img, size)
    outs = model(tensor)
    raw = next(o for o in outs if o.shape[-1] == 16)
    logits = next(o for o in outs if o.shape[-1] == 1)[:, 0]
    score = 1.0 / (1.0 + np.exp(-np.clip(logits.astype(np.float64), -80, 80)))
    keep = score >= FACE_SCORE
    if not keep.any():
        return np.zeros((0, 5), np.float32)
    anchors = _anchors(size, strides, per_cell)[keep]
    r = raw[keep]
    cx, cy = anchors[:, 0] * size + r[:, 0], anchors[:, 1] * size + r[:, 1]
    bw, bh = r[:, 2], r[:, 3]
    h, w = img.shape[:2]
    x0, y0 = (cx - bw / 2 - px) / s / w, (cy - bh / 2 - py) / s / h
    return np.stack([x0, y0, bw / s / w, bh / s / h, score[keep]], 1).astype(np.float32)


def _iou(a: np.ndarray, b: np.ndarray) -> float:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    inter = max(0.0, x1 - x0) * max(0.0, y1 - y0)
    return inter / max(1e-9, a[2] * a[3] + b[2] * b[3] - inter)


def detect_faces(img: np.ndarray) -> np.ndarray:
    """(N, 4) float32 face boxes (x, y, w, h fractions), largest first: BlazeFace full range on the
    whole photo and short range on it (close-ups), overlapping detections merged (score-weighted)."""
    rows = np.concatenate([
        _blazeface(img, "face_detection_full_range_sparse.tflite", (4,), (1,)),
        _blazeface(img, "face_detection_short_range.tflite", (8, 16), (2, 6)),
    ])
    merged = []
    for i in np.argsort(-rows[:, 4]):
        if any(_iou(rows[i], m[0]) > FACE_OVERLAP for m in merged):
            for m in merged:
                if _iou(rows[i], m[0]) > FACE_OVERLAP:
                    m[1].append(rows[i])
                    break
            continue
        merged.append((rows[i], [rows[i]]))
    boxes = []
    for _, group in merged:
        g = np.array(group)
        boxes.append((g[:, :4] * g[:, 4:5]).sum(0) / g[:, 4].sum())
    boxes.sort(key=lambda b: -b[2] * b[3])
    return np.array(boxes, np.float32).reshape(-1, 4)


def face_mesh(img: np.ndarray, box) -> np.ndarray | None:
    """(468, 2) face-mesh points (fractions of ``img``) of the face in ``box`` (x, y, w, h fractions),
    or None when the model says the crop holds no face."""
    model = _model("face_landmark.tflite")
    size = model.size[0]
    h, w = img.shape[:2]
    x, y, bw, bh = box
    side = 1.5 * max(bw * w, bh * h)   # the mesh wants the face with room around it (MediaPipe: 1.5x)
    cx, cy = (x + bw / 2) * w, (y + bh / 2) * h
    x0, y0 = cx - side / 2, cy - side / 2
    to_crop = np.array([[size / side, 0, -x0 * size / side], [0, size / side, -y0 * size / side]], np.float32)
    crop = cv2.warpAffine(img, to_crop, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    points, flag = model(crop.astype(np.float32) / 255.0)
    if 1.0 / (1.0 + np.exp(-float(np.ravel(flag)[0]))) < 0.5:
        return None
    pts = np.ravel(points).reshape(-1, 3)[:, :2] * side / size + np.array([x0, y0])
    return (pts / np.array([w, h])).astype(np.float32)


def person_mask(img: np.ndarray) -> np.ndarray:
    """float32 (h, w) 0..1: the people in ``img`` (selfie segmentation, at the photo's size)."""
    model = _model("selfie_segmentation.tflite")
    mh, mw = model.size
    h, w = img.shape[:2]
    small = cv2.resize(img, (mw, mh), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    out = np.ravel(model(small)[0]).reshape(mh, mw)
    return np.clip(cv2.resize(out, (w, h), interpolation=cv2.INTER_LINEAR), 0.0, 1.0).astype(np.float32)


def features(img: np.ndarray, boxes) -> list[dict]:
    """For each face box, its eyes' and mouth's centres, the lips' box and the face's outline from the
    mesh (fractions): ``{"box", "eyes": [(x, y), (x, y)], "eye_boxes": [(x, y, w, h)] * 2, "mouth": (x, y),
    "lips_box": (x, y, w, h), "oval": (K, 2) array}``, eyes left to right; faces the mesh does not
    confirm are left out (the mesh places eyes even where they are covered: see pipeline.portrait)."""
    out = []
    for box in boxes:
        pts = face_mesh(img, box)
        if pts is None:
            continue
        rings = sorted((pts[list(ring)] for ring in (LEFT_EYE, RIGHT_EYE)), key=lambda r: float(r[:, 0].mean()))
        eyes = [tuple(r.mean(0)) for r in rings]
        lips = pts[list(LIPS)]
        out.append({"box": tuple(float(v) for v in box), "eyes": eyes, "mouth": tuple(lips.mean(0)),
                    "eye_boxes": [(*r.min(0), *(r.max(0) - r.min(0))) for r in rings],
                    "lips_box": (*lips.min(0), *(lips.max(0) - lips.min(0))), "oval": pts[list(FACE_OVAL)]})
    return out
