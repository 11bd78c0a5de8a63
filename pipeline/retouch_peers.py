"""Retouching measured against its peers: the scenes and the figures of ``python -m pipeline.bench --peers``.

Every scene is a real photo from scikit-image with ground truth made here: dust
spots and an object painted over a clean photo (so the healed pixels can be
compared with the pixels under the paint), and photos turned by a known angle.
The tests use the same scenes, so the figures and the tests measure one thing.
"""

from __future__ import annotations

import time
from typing import Callable

import cv2
import numpy as np
from skimage import data


def photo(name: str = "coffee", width: int = 4000, height: int = 3000) -> np.ndarray:
    """A scikit-image photo (``name``), centre-cropped to width:height and upscaled (bicubic), uint8 RGB."""
    img = getattr(data, name)()
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    h, w = img.shape[:2]
    target = width / height
    if w / h > target:
        cw = round(h * target)
        img = img[:, (w - cw) // 2:(w - cw) // 2 + cw]
    else:
        ch = round(w / target)
        img = img[(h - ch) // 2:(h - ch) // 2 + ch]
    return np.ascontiguousarray(cv2.resize(img, (width, height), interpolation=cv2.INTER_CUBIC))


def painted_photo(truth: np.ndarray, spots: int = 20, object_side: int = 200, seed: int = 3,
                  object_at: tuple[float, float] = (0.62, 0.55)):
    """``truth`` with ``spots`` dark dust spots (radius 0.15-0.5% of the long side, 60% darker) and one
    ``object_side`` px square sign painted over it. Returns (painted, spot mask, object mask): uint8
    masks (255 = painted, with a 2 px margin), the same for every method that is measured."""
    rng = np.random.default_rng(seed)
    h, w = truth.shape[:2]
    out = truth.astype(np.float32)
    spot_mask = np.zeros((h, w), np.uint8)
    long_side = max(h, w)
    margin = max(10, long_side // 40)
    for _ in range(spots):
        x, y = int(rng.integers(margin, w - margin)), int(rng.integers(margin, h - margin))
        r = max(2, int(rng.uniform(0.0015, 0.005) * long_side))
        cv2.circle(spot_mask, (x, y), r + 2, 255, -1)
        blob = np.zeros((h, w), np.float32)
        cv2.circle(blob, (x, y), r, 1.0, -1, cv2.LINE_AA)
        out *= 1.0 - 0.6 * blob[..., None]
    painted = np.clip(out + 0.5, 0, 255).astype(np.uint8)
    object_mask = np.zeros((h, w), np.uint8)
    if object_side:
        x, y = int(object_at[0] * w), int(object_at[1] * h)
        s = object_side
        cv2.rectangle(painted, (x, y), (x + s - 1, y + s - 1), (200, 30, 40), -1)
        cv2.putText(painted, "AD", (x + s // 7, y + 2 * s // 3), cv2.FONT_HERSHEY_SIMPLEX, s / 65, (255, 255, 255),
                    max(1, s // 25))
        object_mask[max(0, y - 2):y + s + 2, max(0, x - 2):x + s + 2] = 255
    return painted, spot_mask, object_mask


def psnr(a: np.ndarray, b: np.ndarray, where: np.ndarray) -> float:
    """PSNR (dB) of ``a`` against ``b`` over the pixels where ``where`` > 0."""
    err = ((a.astype(np.float64) - b.astype(np.float64)) ** 2)[where > 0].mean()
    return float(10.0 * np.log10(255.0 ** 2 / max(err, 1e-10)))


def moved_outside(out: np.ndarray, before: np.ndarray, mask: np.ndarray, levels: int = 2) -> int:
    """Pixels outside ``mask`` (> 0 = inside) that changed by more than ``levels`` in any channel."""
    moved = (np.abs(out.astype(np.int16) - before.astype(np.int16)) > levels).any(axis=2)
    return int(np.count_nonzero(moved & (mask == 0)))


def ssim_in(a: np.ndarray, b: np.ndarray, mask: np.ndarray) -> float:
    """Mean SSIM of ``a`` against ``b`` over the boxes of the parts of ``mask`` (each grown by 8 px),
    weighted by their area: the healed areas and their seams, not the untouched frame."""
    from skimage.metrics import structural_similarity

    count, _, stats, _ = cv2.connectedComponentsWithStats((mask > 0).astype(np.uint8))
    total, weight = 0.0, 0.0
    h, w = mask.shape
    for x, y, bw, bh, area in stats[1:]:
        x0, y0, x1, y1 = max(0, x - 8), max(0, y - 8), min(w, x + bw + 8), min(h, y + bh + 8)
        score = structural_similarity(a[y0:y1, x0:x1], b[y0:y1, x0:x1], channel_axis=2, data_range=255)
        total += score * area
        weight += area
    return total / max(weight, 1.0)


def detail_ratio(out: np.ndarray, hole: np.ndarray) -> float:
    """Fine detail inside ``hole`` over fine detail on a ring around it (std of the image minus a
    gaussian of sigma 2 px, grey): near 0 for a flat fill, near 1 when the texture carries on."""
    grey = cv2.cvtColor(out, cv2.COLOR_RGB2GRAY).astype(np.float32)
    detail = grey - cv2.GaussianBlur(grey, (0, 0), 2.0)
    inner = cv2.erode((hole > 0).astype(np.uint8), np.ones((7, 7), np.uint8)) > 0
    ring = (cv2.dilate((hole > 0).astype(np.uint8), np.ones((41, 41), np.uint8)) > 0) & (hole == 0)
    return float(detail[inner].std() / max(detail[ring].std(), 1e-6))


def _timed(fn: Callable[[], np.ndarray], runs: int) -> tuple[np.ndarray, float]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append((time.perf_counter() - t) * 1000.0)
    return out, float(np.median(times))


def removal_peers(width: int = 4000, height: int = 3000, runs: int = 3) -> dict:
    """Removal on one painted photo, same mask for every method: PSNR (spots, object), SSIM,
    pixels moved outside the mask by more than 2 levels, and the median time in ms. Atelier is
    timed through the Renderer (a painted-mask layer with ``remove``), as a person's turn runs it."""
    import tempfile

    from skimage.restoration import inpaint_biharmonic

    from pipeline.blobs import BlobStore
    from pipeline.render import Renderer, SourceImage
    from pipeline.state import EditState

    truth = photo("coffee", width, height)
    scale = max(width, height) / 4000
    painted, spots, obj = painted_photo(truth, object_side=max(8, round(200 * scale)))
    mask = spots | obj
    rows: dict[str, dict] = {}

    def biharmonic() -> np.ndarray:
        # skimage works region by region on the whole image; a window per region keeps it to minutes.
        out = painted.copy()
        count, labels, stats, _ = cv2.connectedComponentsWithStats(mask)
        for i in range(1, count):
            x, y, bw, bh, _ = stats[i]
            x0, y0, x1, y1 = max(0, x - 4), max(0, y - 4), min(width, x + bw + 4), min(height, y + bh + 4)
            hole = labels[y0:y1, x0:x1] == i
            filled = inpaint_biharmonic(painted[y0:y1, x0:x1], hole, channel_axis=-1)
            out[y0:y1, x0:x1][hole] = np.clip(filled[hole] * 255.0 + 0.5, 0, 255).astype(np.uint8)
        return out

    methods: dict[str, Callable[[], np.ndarray]] = {
        "cv2.inpaint Telea": lambda: cv2.inpaint(painted, mask, 3, cv2.INPAINT_TELEA),
        "cv2.inpaint NS": lambda: cv2.inpaint(painted, mask, 3, cv2.INPAINT_NS),
        "skimage biharmonic": biharmonic,
    }
    with tempfile.TemporaryDirectory() as folder:
        blobs = BlobStore(folder)
        renderer = Renderer(blobs=blobs)
        source = SourceImage.from_array(painted)
        spec = {"type": "painted", "blob": blobs.put_array(mask)}
        state = lambda i: EditState.from_dict({"layers": [{"mask": spec, "settings": {"remove": 99 - (i % 50)}}]})
        counter = iter(range(10_000))
        renderer.mask(source, spec, (height, width))  # the painted mask is read once per session, like the photo
        methods["Atelier (through the renderer)"] = lambda: np.asarray(renderer.render(source, state(next(counter))))
        full = EditState.from_dict({"layers": [{"mask": spec, "settings": {"remove": 100}}]})
        for name, fn in methods.items():
            out, ms = _timed(fn, 1 if "skimage" in name else runs)
            if name.startswith("Atelier"):  # timed on new amounts (no cache answers); measured at 100
                out = np.asarray(renderer.render(source, full))
            rows[name] = {"psnr_spots_db": round(psnr(out, truth, spots), 2),
                          "psnr_object_db": round(psnr(out, truth, obj), 2),
                          "ssim": round(ssim_in(out, truth, mask), 4),
                          "moved_outside_mask": moved_outside(out, painted, mask), "ms": round(ms, 1)}
    atelier, telea = rows["Atelier (through the renderer)"], rows["cv2.inpaint Telea"]
    best = {k: max(rows[m][k] for m in ("cv2.inpaint Telea", "cv2.inpaint NS")) for k in ("psnr_spots_db", "psnr_object_db")}
    return {"photo": f"coffee {width}x{height}, 20 spots + a {max(8, round(200 * scale))} px object", "rows": rows,
            "time_vs_telea": round(atelier["ms"] / max(telea["ms"], 1e-6), 2),
            "psnr_margin_spots_db": round(atelier["psnr_spots_db"] - best["psnr_spots_db"], 2),
            "psnr_margin_object_db": round(atelier["psnr_object_db"] - best["psnr_object_db"], 2)}


#: Textured walls and ground: (photo, where the 90 px sign goes) on a 1200x900 copy. Bricks are a
#: regular texture (a smooth fill shows as a blank patch across the courses); grass and gravel random.
TEXTURE_SCENES = (("brick", (0.7, 0.6)), ("brick", (0.25, 0.3)), ("grass", (0.7, 0.6)), ("gravel", (0.25, 0.3)))


def texture_peers() -> dict:
    """PSNR (dB) inside a 90 px sign removed from each of :data:`TEXTURE_SCENES`: Atelier
    (:func:`pipeline.healing.remove_region`) against cv2.inpaint Telea and NS, and Atelier's detail
    ratio (:func:`detail_ratio`: near 0 for a flat fill, near 1 when the texture carries on)."""
    from pipeline.healing import remove_region

    rows = {}
    for name, at in TEXTURE_SCENES:
        truth = photo(name, 1200, 900)
        painted, _, obj = painted_photo(truth, spots=0, object_side=90, object_at=at)
        out = remove_region(painted, obj)
        row = {"atelier_db": psnr(out, truth, obj)}
        for peer, flag in (("telea_db", cv2.INPAINT_TELEA), ("ns_db", cv2.INPAINT_NS)):
            row[peer] = psnr(cv2.inpaint(painted, obj, 3, flag), truth, obj)
        rows[f"{name} at {at[0]:.2f},{at[1]:.2f}"] = {k: round(v, 2) for k, v in row.items()} | {
            "detail_ratio": round(detail_ratio(out, obj), 2)}
    return {"rows": rows, "worst_margin_over_telea_db": min(r["atelier_db"] - r["telea_db"] for r in rows.values())}


def tilted(img: np.ndarray, degrees: float) -> np.ndarray:
    """``img`` turned clockwise by ``degrees`` and centre-cropped to 80% (no empty corners)."""
    h, w = img.shape[:2]
    turn = cv2.getRotationMatrix2D((w / 2, h / 2), -degrees, 1.0)
    out = cv2.warpAffine(img, turn, (w, h), flags=cv2.INTER_CUBIC, borderMode=cv2.BORDER_REFLECT)
    y0, x0 = int(0.1 * h), int(0.1 * w)
    return np.ascontiguousarray(out[y0:h - y0, x0:w - x0])


#: Photos with straight lines, (name, long side): the cameraman (buildings behind a level horizon),
#: a scanned page (text lines), the rocket (tapered launch towers), a brick wall, night towers seen
#: from below (verticals converging), abbey arches, a sea horizon, a cafeteria interior.
STRAIGHTEN_PHOTOS = (("camera", 512), ("page", 600), ("rocket", 640), ("brick", 512),
                     ("asset:eval/night_towers.jpg", 720), ("asset:eval/abbey_arches.jpg", 1024),
                     ("asset:eval/sea_island.jpg", 640), ("asset:eval/lunch_table.jpg", 500))
STRAIGHTEN_ANGLES = (2.5, -3.0, 6.0, -1.5)


def straighten_peers() -> dict:
    """Residual tilt (degrees) of :func:`pipeline.geometry.detect_tilt` on each of
    :data:`STRAIGHTEN_PHOTOS` turned by each of :data:`STRAIGHTEN_ANGLES`: the tilt found minus the
    tilt the photo itself reads (its own lean, 0 for a level photo) minus the angle turned."""
    from pipeline.geometry import detect_tilt

    rows, own = {}, {}
    for name, side in STRAIGHTEN_PHOTOS:
        img = scene(name, side)
        key = name.split("/")[-1].removeprefix("asset:").removesuffix(".jpg")
        own[key] = detect_tilt(tilted(img, 0.0), tolerance=0.0)
        rows[key] = {f"{a:+.1f}": round(detect_tilt(tilted(img, a), tolerance=0.0) - own[key] - a, 2)
                     for a in STRAIGHTEN_ANGLES}
    worst = max(abs(v) for r in rows.values() for v in r.values())
    return {"residual_deg": rows, "own_tilt_deg": own, "worst_residual_deg": worst}


# -- dust: painted shadows to find, real small things to leave alone --------------------------------

def _asset(name: str) -> np.ndarray:
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "assets" / name
    img = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(path)
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def scene(name: str, long_side: int) -> np.ndarray:
    """A photo at ``long_side`` px (bicubic up, area down): a scikit-image name or ``asset:PATH``
    under ``assets/``; grey photos as RGB."""
    img = _asset(name[6:]) if name.startswith("asset:") else getattr(data, name)()
    img = np.dstack([img] * 3) if img.ndim == 2 else img[..., :3]
    h, w = img.shape[:2]
    s = long_side / max(h, w)
    return np.ascontiguousarray(cv2.resize(img, (round(w * s), round(h * s)),
                                           interpolation=cv2.INTER_CUBIC if s > 1 else cv2.INTER_AREA))


def _plain_places(img: np.ndarray, sigma: float) -> np.ndarray:
    """Where a dust shadow of ``sigma`` px can be painted: bool HxW, smooth (no edge or texture within
    five sigma) and not dark."""
    g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
    r = int(5 * sigma)
    b = cv2.GaussianBlur(g, (0, 0), sigma)
    slope = cv2.magnitude(cv2.Sobel(b, cv2.CV_32F, 1, 0) / 8, cv2.Sobel(b, cv2.CV_32F, 0, 1) / 8)
    busy = cv2.GaussianBlur(np.abs(g - cv2.GaussianBlur(g, (0, 0), 2 * sigma)), (0, 0), 2 * sigma) + \
        sigma * cv2.GaussianBlur(slope, (0, 0), 2 * sigma) / 2
    ok = (cv2.dilate(busy, np.ones((2 * r + 1, 2 * r + 1), np.uint8)) < 2.5) & (b > 40)
    ok[:r], ok[-r:], ok[:, :r], ok[:, -r:] = False, False, False, False
    return ok


def paint_dust(img: np.ndarray, n: int = 12, seed: int = 0):
    """``img`` with up to ``n`` sensor-dust shadows painted on its plain places: gaussian (sigma
    0.08-0.4% of the long side), taking 8-35% of the light in every channel alike, at least 4% of
    the long side apart. Returns (painted uint8, [(cx, cy, sigma), ...] in pixels)."""
    rng = np.random.default_rng(seed)
    h, w = img.shape[:2]
    long_side = max(h, w)
    out, spots = img.astype(np.float32), []
    ys, xs = np.nonzero(_plain_places(img, 0.004 * long_side))
    for _ in range(5000):
        if len(spots) >= n or not len(ys):
            break
        i = rng.integers(len(ys))
        cx, cy = xs[i] + rng.uniform(-0.5, 0.5), ys[i] + rng.uniform(-0.5, 0.5)
        s = rng.uniform(0.0008, 0.004) * long_side
        if any(np.hypot(cx - x, cy - y) < max(12 * max(s, t), 0.04 * long_side) for x, y, t in spots):
            continue
        share = rng.uniform(0.08, 0.35)
        r = int(4 * s) + 2
        x0, y0, x1, y1 = max(0, int(cx) - r), max(0, int(cy) - r), min(w, int(cx) + r + 1), min(h, int(cy) + r + 1)
        yy, xx = np.mgrid[y0:y1, x0:x1]
        out[y0:y1, x0:x1] *= (1 - share * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s)))[..., None]
        spots.append((float(cx), float(cy), float(s)))
    return np.clip(out + 0.5, 0, 255).astype(np.uint8), spots


def boats(long_side: int = 2000, seed: int = 5):
    """sea_island's sea with ten small boats in focus (hard-edged hulls, white, red, dark or cream,
    each with a dark cabin). Returns (photo, [(cx, cy, half length), ...])."""
    img = scene("asset:eval/sea_island.jpg", long_side).copy()
    h, w = img.shape[:2]
    rng = np.random.default_rng(seed)
    out = []
    for k in range(10):
        cx, cy = rng.uniform(0.08, 0.92) * w, rng.uniform(0.80, 0.95) * h
        size = rng.uniform(0.006, 0.014) * long_side
        hull = [(255, 255, 255), (200, 40, 30), (40, 40, 45), (230, 220, 200)][k % 4]
        pts = np.array([[cx - size, cy], [cx + size, cy], [cx + 0.7 * size, cy + 0.35 * size],
                        [cx - 0.7 * size, cy + 0.35 * size]], np.int32)
        cv2.fillPoly(img, [pts], hull, cv2.LINE_AA)
        cv2.rectangle(img, (int(cx - 0.3 * size), int(cy - 0.4 * size)), (int(cx + 0.2 * size), int(cy)),
                      (60, 60, 70), -1, cv2.LINE_AA)
        out.append((cx, cy, size))
    return img, out


#: Photos with plain places (skies, walls, backdrops) to paint dust on: (photo, long side).
DUST_PHOTOS = (("rocket", 2000), ("camera", 1600), ("asset:eval/tower.jpg", 1600),
               ("asset:eval/mountain_meadow.jpg", 2000), ("asset:eval/sea_island.jpg", 2000),
               ("asset:eval/abbey_arches.jpg", 2000), ("asset:eval/friends_shore.jpg", 2000),
               ("asset:coffee.jpg", 1600), ("asset:astronaut.jpg", 1600))
#: Clean photos whose small dark things are real: (photo, long side).
CLEAN_PHOTOS = (("asset:eval/friends_shore.jpg", 2000), ("asset:eval/lunch_table.jpg", 1600), ("page", 1600),
                ("text", 1600), ("hubble_deep_field", 1600), ("asset:astronaut.jpg", 1600),
                ("asset:eval/night_tent.jpg", 1600), ("moon", 1600), ("asset:eval/department_store.jpg", 2000),
                ("coins", 1600), ("asset:eval/luispedro.jpg", 1200), ("asset:eval/sea_island.jpg", 2000),
                ("asset:eval/golden_puppy.jpg", 1600), ("asset:eval/desk_cat.jpg", 1600),
                ("asset:eval/camera_table.jpg", 1600), ("asset:eval/quokka.jpg", 1600), ("asset:chelsea.jpg", 1600))
#: The astronaut's pupils (x, y) on the 512 px original.
ASTRONAUT_PUPILS = ((203, 101), (247, 103))


def _spots_px(img: np.ndarray, amount: float) -> list[tuple[float, float, float, float]]:
    from pipeline.dust import dust_spots

    h, w = img.shape[:2]
    return [(s.x * w, s.y * h, s.radius * max(h, w), s.confidence) for s in dust_spots(img, amount)]


def _text_strokes(img: np.ndarray) -> np.ndarray:
    """Pixels of dark strokes (text, lines): 30% darker than their neighbourhood's median-ish level."""
    g = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float32)
    return g < 0.7 * cv2.dilate(cv2.GaussianBlur(g, (0, 0), 2.0), np.ones((15, 15), np.uint8))


def dust_peers(amount: float = 50.0) -> dict:
    """Dust found by :func:`pipeline.dust.dust_spots` at ``amount``: recall and precision on
    :data:`DUST_PHOTOS` with painted shadows (a find matches a shadow within max(2 sigma, 3 px));
    real things taken for dust (boats, text strokes, stars' surroundings, the astronaut's pupils);
    and the spots found on :data:`CLEAN_PHOTOS` (faint specks: some are real dust or dirt)."""
    found_right = missed = extra = 0
    for i, (name, side) in enumerate(DUST_PHOTOS):
        painted, truth = paint_dust(scene(name, side), 12, seed=10 + i)
        found = _spots_px(painted, amount)
        hit = [any(np.hypot(fx - cx, fy - cy) <= max(2 * s, 3) for fx, fy, *_ in found) for cx, cy, s in truth]
        ok = [any(np.hypot(fx - cx, fy - cy) <= max(2 * s, 3) for cx, cy, s in truth) for fx, fy, *_ in found]
        found_right, missed, extra = found_right + sum(hit), missed + len(hit) - sum(hit), extra + len(ok) - sum(ok)
    real = {}
    img, hulls = boats()
    real["boats (of 10)"] = sum(any(np.hypot(fx - cx, fy - cy) <= 1.5 * size for cx, cy, size in hulls)
                                for fx, fy, *_ in _spots_px(img, amount))
    on_text = 0
    for name in ("page", "text"):
        img = scene(name, 1600)
        strokes = _text_strokes(img)
        for fx, fy, fr, _ in _spots_px(img, amount):
            disc = np.zeros(strokes.shape, np.uint8)
            cv2.circle(disc, (int(fx), int(fy)), max(1, int(fr)), 1, -1)
            on_text += int((strokes & (disc > 0)).any())
    real["text strokes (page, text)"] = on_text
    img = scene("hubble_deep_field", 1600)
    real["stars (hubble deep field)"] = len(_spots_px(img, amount))
    img = scene("asset:astronaut.jpg", 1600)
    f = 1600 / 512
    real["pupils (astronaut)"] = sum(any(np.hypot(fx - px * f, fy - py * f) <= 8 * f for px, py in ASTRONAUT_PUPILS)
                                     for fx, fy, *_ in _spots_px(img, amount))
    clean = {name.split("/")[-1].replace("asset:", ""): len(_spots_px(scene(name, side), amount))
             for name, side in CLEAN_PHOTOS}
    return {"amount": amount, "photos": len(DUST_PHOTOS), "painted": found_right + missed, "recall": round(found_right / max(1, found_right + missed), 3),
            "precision": round(found_right / max(1, found_right + extra), 3), "real_things_taken": real,
            "spots_on_clean_photos": clean}


# -- masks from models against the heuristics: faces, eyes and mouths labelled by hand ---------------

#: Hand-labelled faces of people the project never tuned on: per photo (at its own size) each face's
#: box (x, y, w, h: brows to chin, cheek to cheek), eye centres (pupils; lens centres behind
#: sunglasses) and mouth centre, in pixels. friends_shore and lunch_table are held-out eval photos
#: (labelled here; their dialogues were not read); the astronaut's eyes are the red-eye test's.
LABELLED_FACES = {
    "asset:eval/friends_shore.jpg": [
        ((200, 82, 115, 100), ((242.5, 105), (285, 109)), (261, 146)),
        ((318, 262, 88, 94), ((346, 283), (388, 281)), (369, 325)),
        ((440, 232, 78, 80), ((460.8, 248.7), (496.7, 249.2)), (478.3, 283.3)),
        ((532, 338, 100, 94), ((555, 353), (597, 357)), (575, 398)),
        ((683, 322, 104, 95), ((713, 338), (758, 343)), (731, 384)),
    ],
    "asset:eval/lunch_table.jpg": [
        ((231, 102, 40, 44), ((245, 109), (262.5, 110)), (250, 132.5)),
        ((419, 101, 48, 44), ((426.7, 110), (446.7, 109)), (435, 128)),
    ],
    "astronaut": [((183, 88, 84, 90), ((203, 101), (245, 102)), (224, 145))],
}


#: The astronaut as a person (hand-drawn polygon on the 512 px original, the helmet she holds left out)
#: and the helmet (a disc), for the person masks' IoU.
ASTRONAUT_PERSON = ((157, 63), (167, 33), (200, 17), (240, 15), (280, 30), (300, 60), (298, 95), (290, 115),
                    (275, 135), (270, 148), (290, 158), (303, 190), (303, 220), (333, 253), (353, 287), (363, 333),
                    (363, 347), (313, 373), (293, 400), (283, 433), (280, 467), (280, 511), (27, 511), (27, 400),
                    (33, 320), (47, 280), (73, 240), (100, 213), (117, 193), (123, 172), (150, 155), (185, 145),
                    (180, 130), (165, 110), (157, 87))
ASTRONAUT_HELMET = ((395, 470), 128)


def person_peers() -> dict:
    """IoU of the person mask on the astronaut (:data:`ASTRONAUT_PERSON`, with and without the helmet she
    holds): the person model against the saliency cut ("subject" without the model)."""
    from pipeline.masks import build_mask, models
    from pipeline.masks.detectors import subject_mask

    img = data.astronaut()
    truth = np.zeros(img.shape[:2], np.uint8)
    cv2.fillPoly(truth, [np.array(ASTRONAUT_PERSON, np.int32)], 1)
    helmet = np.zeros_like(truth)
    cv2.circle(helmet, ASTRONAUT_HELMET[0], ASTRONAUT_HELMET[1], 1, -1)
    person, holding = truth > 0, (truth | helmet) > 0

    def iou(m, t):
        return round(float((m & t).sum() / max(1, (m | t).sum())), 3)

    small = cv2.resize(img, (320, 320), interpolation=cv2.INTER_AREA)
    masks = {"saliency cut (heuristic)": cv2.resize(subject_mask(small), (512, 512)) > 0.5}
    if models.available():
        masks["person model (LiteRT)"] = models.person_mask(img) > 0.5
    masks["subject mask as built"] = build_mask({"type": "subject"}, img, (512, 512)) > 0.5
    return {name: {"iou_person": iou(m, person), "iou_with_helmet": iou(m, holding)} for name, m in masks.items()}


def _photo_at_own_size(name: str) -> np.ndarray:
    img = _asset(name[6:]) if name.startswith("asset:") else getattr(data, name)()
    return np.ascontiguousarray(np.dstack([img] * 3) if img.ndim == 2 else img[..., :3])


def _detected(name: str, img: np.ndarray) -> dict:
    """Faces with eyes and mouth (pixels) found by each detector: {detector: [(box, eyes|None, mouth|None)]}."""
    from pipeline import portrait
    from pipeline.masks import FACE_SIDE, face_boxes, models
    from pipeline.masks.detectors import cascade_faces

    h, w = img.shape[:2]
    px = np.array([w, h], np.float64)
    found = {}
    s = min(1.0, FACE_SIDE / max(h, w))  # the cascade runs where face_boxes runs it
    small = cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA) if s < 1 else img
    feats = portrait.find_features(img, [tuple(b) for b in cascade_faces(small)], use_models=False)
    found["heuristic (LBP cascade + blobs)"] = [
        (np.array(f.box) * np.tile(px, 2), None if not f.eyes else [np.array(e[:2]) * px for e in f.eyes],
         None if not f.mouth else (np.array(f.mouth[:2]) + np.array(f.mouth[2:]) / 2) * px) for f in feats.faces]
    if models.available():
        feats = portrait.find_features(img, face_boxes(img))
        found["models (BlazeFace + mesh, LiteRT)"] = [
            (np.array(f.box) * np.tile(px, 2), None if not f.eyes else [np.array(e[:2]) * px for e in f.eyes],
             None if not f.mouth else (np.array(f.mouth[:2]) + np.array(f.mouth[2:]) / 2) * px) for f in feats.faces]
    return found


def mask_peers() -> dict:
    """Each face detector on :data:`LABELLED_FACES`: faces found (a detection holding a labelled face's
    eyes and mouth), false detections, and the eye and mouth placement error in units of the face's
    eye distance (mean over the faces found with eyes / a mouth; 0.1 is about an iris)."""
    rows: dict[str, dict] = {}
    for name, faces in LABELLED_FACES.items():
        img = _photo_at_own_size(name)
        for detector, found in _detected(name, img).items():
            r = rows.setdefault(detector, {"labelled": 0, "found": 0, "false": 0, "eye_err": [], "mouth_err": [],
                                           "eyes_missing": 0, "mouth_missing": 0})
            used = set()
            for box, eyes, mouth in faces:
                r["labelled"] += 1
                pts = np.array([*eyes, mouth], np.float64)
                match = None
                for k, (fb, fe, fm) in enumerate(found):
                    if k in used:
                        continue
                    x, y, bw, bh = fb
                    if ((pts[:, 0] >= x) & (pts[:, 0] <= x + bw) & (pts[:, 1] >= y) & (pts[:, 1] <= y + bh)).all():
                        match = k
                        break
                if match is None:
                    continue
                used.add(match)
                r["found"] += 1
                _, fe, fm = found[match]
                iod = float(np.hypot(*(np.array(eyes[1]) - np.array(eyes[0]))))
                if fe is None:
                    r["eyes_missing"] += 1
                else:
                    fe = sorted(fe, key=lambda p: p[0])
                    r["eye_err"] += [float(np.hypot(*(fe[i] - np.array(eyes[i])))) / iod for i in (0, 1)]
                if fm is None:
                    r["mouth_missing"] += 1
                else:
                    r["mouth_err"].append(float(np.hypot(*(fm - np.array(mouth)))) / iod)
            r["false"] += len(found) - len(used)
    for r in rows.values():
        r["eye_err"] = round(float(np.mean(r["eye_err"])), 3) if r["eye_err"] else None
        r["mouth_err"] = round(float(np.mean(r["mouth_err"])), 3) if r["mouth_err"] else None
    return rows
