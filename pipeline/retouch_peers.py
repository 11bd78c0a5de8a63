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


#: Skin labelled by hand, per photo at its own size ("size" is (width, height), checked): "skin" polygons
#: (face, ears, neck, chest, arms, hands, legs), minus "not" (eyes, brows, lips and open mouths, the
#: sunglasses) and leaving out "ignore" (a pearl necklace, fingers curled in shadow, the small people at
#: the tables behind, beards' edges), which count neither way. Hair, clothes, the astronaut's suit and
#: everything else is not skin. Each label was rasterised (cv2.fillPoly) over its photo and checked by
#: eye at 2-5x, to a few pixels at the edges. Photos: the astronaut (the person IoU's), friends_shore
#: (five people, long blond and red hair, a warm evening sky), mountain_selfie, latte_cheers (three
#: hands over a wooden table, no face), luispedro (a close-up) and lunch_table (three men at a
#: cafeteria table, a beige shirt). The five eval photos are held out (assets/eval/README.md;
#: mountain_selfie is in a planner tuning file, not a mask's); the astronaut is a demo photo.
LABELLED_SKIN: dict[str, dict] = {
    "astronaut": {  # face, ear and neck down to the turtleneck
        "size": (512, 512),
        "skin": (
            ((181, 97), (185, 89), (192, 84), (200, 80), (210, 78), (225, 77), (240, 78), (250, 80), (258, 86),
             (264, 93), (268, 100), (269, 115), (274, 118), (276, 128), (272, 138), (266, 142), (263, 152),
             (262, 165), (258, 172), (254, 178), (248, 183), (240, 187), (230, 190), (220, 190), (205, 188),
             (195, 186), (190, 180), (186, 175), (186, 160), (184, 150), (181, 130), (180, 110)),
        ),
        "not": (
            ((190, 102), (196, 98), (204, 97), (213, 101), (206, 106), (197, 106)),
            ((236, 104), (242, 99), (250, 98), (258, 102), (251, 107), (242, 107)),
            ((187, 95), (195, 92), (205, 92), (212, 95), (205, 95), (195, 96)),
            ((235, 97), (245, 94), (255, 95), (262, 99), (255, 98), (245, 98)),
            ((206, 140), (224, 136), (244, 140), (238, 153), (224, 157), (210, 152)),
        ),
    },
    "asset:eval/friends_shore.jpg": {
        "size": (1000, 667),
        "skin": (
            # sunglasses: head and neck; arm, hand and leg; the hand on the blonde's shoulder
            ((201, 90), (207, 86), (215, 84), (240, 80), (265, 81), (290, 85), (305, 95), (312, 105), (310, 120),
             (307, 130), (300, 145), (295, 158), (298, 165), (285, 175), (270, 178), (250, 188), (233, 195),
             (222, 175), (212, 153), (207, 140), (210, 125), (203, 118), (200, 100)),
            ((53, 313), (75, 318), (97, 325), (140, 328), (170, 307), (203, 297), (227, 292), (237, 296),
             (243, 315), (243, 340), (240, 360), (237, 375), (236, 395), (230, 410), (218, 430), (205, 460),
             (197, 500), (193, 540), (191, 580), (190, 620), (157, 620), (156, 590), (152, 560), (146, 525),
             (137, 485), (131, 445), (127, 410), (127, 390), (97, 387), (63, 390), (50, 380), (48, 350)),
            ((237, 283), (257, 273), (283, 270), (293, 273), (294, 303), (280, 313), (275, 327), (260, 327),
             (243, 300)),
            # the blonde: face and neck; behind her: face, ear and neck
            ((360, 240), (373, 240), (387, 245), (400, 258), (407, 282), (407, 308), (403, 332), (390, 355),
             (387, 380), (385, 395), (340, 395), (340, 370), (343, 362), (327, 348), (318, 332), (315, 300),
             (315, 282), (320, 272), (330, 252)),
            ((440, 240), (470, 237), (507, 240), (517, 250), (522, 250), (530, 262), (527, 278), (517, 282),
             (510, 300), (502, 312), (502, 333), (480, 348), (460, 350), (443, 344), (440, 320), (438, 300),
             (438, 260)),
            # centre: face, neck and chest; her right arm; right: face, neck and chest; her right arm
            ((585, 301), (600, 302), (615, 310), (632, 330), (636, 365), (640, 385), (632, 395), (615, 420),
             (622, 440), (620, 470), (625, 490), (618, 520), (600, 535), (580, 552), (565, 562), (545, 560),
             (530, 552), (515, 545), (520, 520), (535, 490), (545, 460), (548, 440), (550, 425), (537, 410),
             (531, 390), (531, 365), (535, 340), (555, 310)),
            ((670, 445), (680, 440), (710, 450), (735, 480), (745, 515), (752, 565), (760, 615), (757, 666),
             (687, 666), (685, 610), (680, 550), (672, 490)),
            ((690, 310), (720, 295), (760, 292), (785, 305), (797, 340), (797, 375), (787, 400), (795, 410),
             (810, 420), (840, 428), (863, 428), (840, 437), (827, 453), (817, 477), (807, 503), (800, 523),
             (793, 543), (780, 560), (760, 565), (745, 515), (735, 480), (710, 450), (700, 430), (700, 415),
             (690, 385), (680, 375), (682, 350), (685, 320)),
            ((870, 435), (880, 443), (890, 477), (893, 510), (887, 543), (873, 577), (860, 603), (857, 597),
             (847, 570), (830, 560), (820, 543), (820, 510), (827, 477), (833, 460), (847, 443)),
        ),
        "not": (
            # the sunglasses, a mouth, then each face's eyes, brows and mouth
            ((207, 86), (225, 87), (260, 95), (290, 103), (314, 107), (314, 118), (308, 127), (297, 131),
             (282, 125), (272, 113), (262, 118), (248, 123), (230, 119), (224, 110), (220, 96), (207, 93)),
            ((240, 137), (260, 140), (283, 137), (278, 148), (262, 153), (248, 150)),
            ((333, 282), (343, 278), (355, 283), (345, 287)),
            ((378, 281), (390, 277), (400, 280), (390, 285)),
            ((328, 272), (340, 267), (357, 270), (340, 273)),
            ((377, 270), (390, 265), (402, 269), (390, 271)),
            ((348, 320), (368, 318), (388, 318), (380, 333), (368, 338), (355, 333)),
            ((448, 248), (458, 245), (467, 249), (457, 252)),
            ((483, 249), (493, 245), (502, 248), (493, 252)),
            ((443, 241), (457, 238), (470, 241), (457, 243)),
            ((480, 241), (495, 238), (507, 241), (495, 243)),
            ((460, 280), (478, 278), (495, 281), (480, 288), (465, 287)),
            ((542, 353), (555, 350), (567, 354), (555, 357)),
            ((587, 356), (600, 352), (615, 356), (600, 360)),
            ((540, 341), (555, 337), (570, 340), (555, 344)),
            ((585, 344), (600, 340), (620, 344), (600, 347)),
            ((552, 392), (577, 390), (600, 392), (590, 405), (575, 408), (560, 404)),
            ((700, 340), (712, 335), (725, 340), (712, 345)),
            ((745, 342), (760, 337), (775, 342), (760, 347)),
            ((695, 327), (710, 322), (725, 326), (710, 329)),
            ((745, 329), (760, 325), (780, 329), (760, 332)),
            ((705, 378), (730, 375), (755, 378), (745, 392), (730, 395), (715, 390)),
        ),
        "ignore": (
            # the right one's pearl necklace
            ((691, 403), (692, 423), (695, 444), (705, 465), (719, 478), (737, 482), (754, 477), (769, 459),
             (780, 441), (786, 424), (790, 411), (784, 409), (780, 422), (774, 439), (765, 455), (750, 473),
             (737, 476), (721, 472), (709, 461), (701, 442), (698, 423), (697, 403)),
        ),
    },
    "asset:eval/mountain_selfie.jpg": {
        "size": (572, 562),
        "skin": (
            ((192, 205), (205, 195), (220, 180), (240, 167), (270, 160), (300, 162), (330, 170), (350, 185),
             (365, 205), (370, 215), (372, 240), (385, 240), (395, 255), (395, 285), (385, 300), (375, 302),
             (370, 330), (345, 365), (350, 400), (342, 450), (330, 485), (300, 498), (290, 500), (282, 495),
             (274, 475), (260, 452), (250, 440), (242, 430), (240, 400), (235, 390), (215, 370), (200, 350),
             (192, 330), (190, 280)),
        ),
        "not": (
            ((200, 223), (220, 217), (245, 220), (245, 230), (220, 227), (202, 230)),
            ((290, 221), (315, 216), (343, 219), (343, 229), (315, 226), (290, 230)),
            ((207, 250), (225, 242), (243, 248), (235, 255), (218, 256)),
            ((292, 248), (310, 242), (330, 246), (320, 253), (300, 254)),
            ((235, 318), (260, 312), (285, 314), (320, 313), (310, 335), (290, 348), (268, 351), (248, 343)),
        ),
        "ignore": (
            # a blurred arm in the corner
            ((0, 505), (30, 505), (60, 540), (70, 561), (0, 561)),
        ),
    },
    "asset:eval/latte_cheers.jpg": {
        "size": (640, 427),
        "skin": (
            # the arm with the iced coffee, the hand from above, the darker hand on the right
            ((0, 282), (50, 277), (90, 267), (120, 250), (150, 225), (180, 205), (200, 190), (225, 180), (231, 186),
             (210, 205), (195, 220), (190, 250), (192, 280), (200, 297), (237, 313), (270, 315), (297, 307),
             (308, 304), (310, 312), (290, 330), (270, 337), (257, 343), (250, 360), (237, 367), (203, 382),
             (193, 381), (167, 376), (133, 365), (100, 352), (70, 348), (33, 346), (0, 345)),
            ((243, 0), (320, 0), (333, 20), (345, 32), (360, 50), (372, 70), (376, 82), (366, 82), (355, 62),
             (330, 55), (310, 55), (285, 60), (265, 70), (252, 90), (247, 110), (248, 135), (255, 155), (262, 165),
             (248, 172), (232, 162), (213, 142), (206, 118), (213, 95), (222, 70), (230, 40), (236, 20)),
            ((400, 170), (430, 160), (465, 163), (490, 175), (515, 195), (540, 215), (557, 232), (570, 245),
             (590, 255), (596, 252), (602, 303), (593, 311), (567, 316), (533, 319), (500, 318), (470, 314),
             (452, 322), (430, 322), (410, 326), (401, 320), (408, 312), (422, 310), (440, 300), (455, 292),
             (470, 285), (485, 275), (492, 265), (495, 250), (492, 225), (485, 205), (465, 190), (440, 180),
             (400, 178)),
        ),
        "ignore": (
            # fingers curled round the cup, in shadow
            ((440, 180), (470, 183), (492, 205), (496, 235), (480, 215), (460, 200), (445, 192)),
        ),
    },
    "asset:eval/luispedro.jpg": {
        "size": (300, 377),
        "skin": (
            ((43, 97), (57, 77), (87, 67), (120, 68), (153, 67), (180, 73), (190, 90), (192, 107), (200, 125),
             (207, 150), (217, 167), (233, 170), (253, 170), (268, 183), (268, 213), (260, 237), (247, 250),
             (227, 253), (227, 257), (223, 280), (223, 313), (220, 327), (213, 340), (207, 376), (90, 376),
             (83, 333), (87, 320), (70, 305), (56, 285), (48, 260), (43, 230), (42, 190), (42, 140)),
        ),
        "not": (
            ((52, 172), (62, 163), (75, 161), (85, 166), (80, 176), (65, 180), (55, 178)),
            ((123, 160), (135, 152), (150, 150), (163, 156), (155, 168), (140, 172), (128, 168)),
            ((43, 148), (60, 140), (80, 140), (88, 146), (85, 152), (62, 150), (45, 156)),
            ((113, 135), (135, 127), (160, 128), (180, 138), (178, 145), (158, 138), (135, 138), (115, 145)),
            ((78, 252), (95, 245), (112, 245), (133, 250), (125, 262), (105, 272), (88, 270), (80, 262)),
        ),
    },
    "asset:eval/lunch_table.jpg": {
        "size": (500, 375),
        "skin": (
            # left: face, the hand at his chin and forearm; his other forearm; centre: face above the beard,
            # clasped hands; right: face, crossed forearms
            ((64, 152), (76, 150), (84, 158), (88, 175), (89, 190), (88, 208), (90, 224), (94, 240), (100, 260),
             (104, 305), (85, 310), (76, 314), (73, 290), (72, 262), (62, 255), (58, 245), (50, 232), (44, 214),
             (50, 206), (52, 195), (62, 188), (64, 170)),
            ((100, 250), (120, 248), (130, 245), (140, 242), (150, 244), (158, 250), (160, 258), (158, 265),
             (150, 268), (130, 268), (100, 270)),
            ((235, 104), (255, 102), (275, 105), (278, 115), (276, 125), (270, 130), (262, 128), (255, 127),
             (245, 127), (238, 130), (233, 127), (232, 115)),
            ((267, 152), (280, 149), (292, 152), (302, 160), (305, 172), (300, 182), (285, 185), (267, 182),
             (252, 177), (251, 167), (260, 160)),
            ((418, 97), (440, 94), (462, 95), (467, 100), (468, 120), (466, 132), (452, 145), (438, 146),
             (426, 143), (420, 125), (416, 110)),
            ((378, 185), (385, 180), (400, 177), (412, 185), (420, 200), (445, 202), (475, 207), (499, 210),
             (499, 232), (470, 230), (440, 225), (407, 220), (378, 215)),
        ),
        "not": (
            ((239, 109), (244, 106), (249, 108), (244, 112)),  # the centre man's eyes, then the right man's
            ((257, 111), (262, 108), (267, 111), (262, 114)),
            ((422, 109), (429, 105), (436, 108), (430, 113)),
            ((445, 109), (450, 106), (455, 109), (450, 111)),
            ((430, 128), (438, 126), (445, 128), (438, 132)),
        ),
        "ignore": (
            # the four people at the tables behind; the centre man's beard line
            ((38, 35), (105, 35), (110, 125), (38, 125)),
            ((140, 40), (205, 40), (205, 100), (140, 100)),
            ((185, 25), (220, 25), (220, 60), (185, 60)),
            ((300, 28), (370, 28), (370, 100), (300, 100)),
            ((232, 125), (278, 125), (276, 133), (234, 133)),
        ),
    },
}


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


def skin_label(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(skin, counted) bool masks of :data:`LABELLED_SKIN` ``name`` at the photo's own size: the skin
    polygons less the "not" ones, and every pixel but the "ignore" ones."""
    label = LABELLED_SKIN[name]
    w, h = label["size"]

    def fill(polys) -> np.ndarray:
        m = np.zeros((h, w), np.uint8)
        if polys:
            cv2.fillPoly(m, [np.array(p, np.int32) for p in polys], 1)
        return m > 0

    return fill(label["skin"]) & ~fill(label.get("not")), ~fill(label.get("ignore"))


def skin_mask_peers(names: tuple[str, ...] | None = None) -> dict:
    """Each way of making the skin mask on :data:`LABELLED_SKIN` (``names``: some of its photos):
    IoU, precision and recall of the mask at 0.5 and the soft IoU (sum of min / sum of max of the soft
    mask and the label), per photo and their means, over the counted pixels. The ways: the colour model
    alone (a photo where no face is found), skin learnt from the LBP cascade's faces (the heuristic),
    with the LiteRT runtime, skin learnt from BlazeFace's faces, and the skin mask as built (``build_mask``:
    with the runtime, that one held to the people the person model finds)."""
    from pipeline.masks import CONTENT_SIDE, FACE_SIDE, MaskCache, build_mask, models
    from pipeline.masks.detectors import cascade_faces, detect_faces, skin_mask
    from pipeline.masks.shapes import fit_long_side, resize_mask

    rows: dict[str, dict] = {}
    for name in names or tuple(LABELLED_SKIN):
        img = _photo_at_own_size(name)
        h, w = img.shape[:2]
        if (w, h) != LABELLED_SKIN[name]["size"]:
            raise ValueError(f"{name}: the photo is {w}x{h}, its skin label {LABELLED_SKIN[name]['size']}")
        truth, counted = skin_label(name)
        small = fit_long_side(img, CONTENT_SIDE)
        masks = {"colour only (no face found)": skin_mask(small, np.zeros((0, 4), np.float32)),
                 "cascade faces (heuristic)": skin_mask(small, cascade_faces(fit_long_side(img, FACE_SIDE)))}
        masks = {k: resize_mask(m, h, w) for k, m in masks.items()}
        if models.available():   # what was built before the person model held it (BlazeFace's faces)
            masks["model faces, skin tones alone"] = resize_mask(
                skin_mask(small, detect_faces(fit_long_side(img, FACE_SIDE)).reshape(-1, 4)), h, w)
        masks["skin mask as built"] = build_mask({"type": "skin"}, img, (h, w), cache=MaskCache())
        t = truth[counted]
        for way, m in masks.items():
            soft = np.clip(m[counted], 0.0, 1.0)
            on = soft >= 0.5
            both = float(np.count_nonzero(on & t))
            rows.setdefault(way, {"photos": {}})["photos"][name.split("/")[-1].removesuffix(".jpg")] = {
                "iou": round(both / max(1, np.count_nonzero(on | t)), 3),
                "precision": round(both / max(1, np.count_nonzero(on)), 3),
                "recall": round(both / max(1, np.count_nonzero(t)), 3),
                "soft_iou": round(float(np.minimum(soft, t).sum() / max(1e-9, np.maximum(soft, t).sum())), 3)}
    for r in rows.values():
        for k in ("iou", "soft_iou", "precision", "recall"):
            r[f"mean_{k}"] = round(float(np.mean([v[k] for v in r["photos"].values()])), 3)
    return rows
