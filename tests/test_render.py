"""The renderer on real photos: identity, monotone ops, sane extremes, LUT accuracy,
determinism, proxies that match the export, and local layers that stay local."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data

from pipeline import measure, ops
from pipeline.adjust import apply_pixel_ops
from pipeline.render import Renderer, SourceImage, render, render_exact
from pipeline.state import EditState

REPO = Path(__file__).resolve().parents[1]


def _small(img: np.ndarray, side: int = 320) -> np.ndarray:
    h, w = img.shape[:2]
    s = side / max(h, w)
    return cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA)


@pytest.fixture(scope="module")
def photos() -> dict[str, np.ndarray]:
    return {name: _small(getattr(data, name)()) for name in ("astronaut", "coffee", "chelsea", "rocket")}


@pytest.fixture(scope="module")
def renderer() -> Renderer:
    return Renderer()


def _render(renderer, img, settings):
    return renderer.render(SourceImage.from_array(img), EditState.from_dict({"settings": settings}))


def test_identity_is_exact(photos, renderer):
    for img in photos.values():
        assert np.array_equal(render(img, EditState()), img)
        assert np.array_equal(render(img, EditState.from_dict({"settings": {"exposure": 0, "clarity": 0}})), img)


# The tone and colour table; geometry, finishing and retouch have their own tests.
TONE_OPS = [n for n, o in ops.OPS.items() if o.stage not in ("finishing", "geometry", "retouch")]


@pytest.mark.parametrize("name", TONE_OPS)
def test_each_op_at_zero_is_identity_and_nonzero_changes_pixels(name, photos, renderer):
    img = photos["astronaut"]
    assert np.array_equal(_render(renderer, img, {name: 0}), img)
    assert not np.array_equal(_render(renderer, img, {name: 60}), img), f"{name} +60 changed nothing"


def _band_stat(key, photo, band):
    """Mean Lab chroma or L* of the pixels that are ``band``-coloured in the original
    photo (fixed pixels, so pixels entering or leaving the band do not skew it)."""
    def f(img):
        orig = _small(getattr(data, photo)())
        hue, _ = measure.hue_degrees(orig)
        lab0 = measure.lab(orig)
        w = measure.band_weights(hue, band) * (np.hypot(lab0[..., 1], lab0[..., 2]) > 8)
        lab1 = measure.lab(img)
        value = np.hypot(lab1[..., 1], lab1[..., 2]) if key == "chroma" else lab1[..., 0]
        return float((value * w).sum() / w.sum())
    return f


# op -> (photo, statistic that must rise with the value)
MONOTONE = {
    "exposure": ("coffee", lambda i: measure.image_stats(i)["L_mean"]),
    "contrast": ("chelsea", lambda i: measure.image_stats(i)["rms_contrast"]),
    "highlights": ("coffee", lambda i: float(np.percentile(measure.lab(i)[..., 0], 90))),
    "shadows": ("rocket", lambda i: float(np.percentile(measure.lab(i)[..., 0], 10))),
    "whites": ("chelsea", lambda i: float(np.percentile(measure.lab(i)[..., 0], 95))),
    "blacks": ("chelsea", lambda i: float(np.percentile(measure.lab(i)[..., 0], 2))),
    "temperature": ("astronaut", lambda i: measure.image_stats(i)["b_mean"]),
    "tint": ("astronaut", lambda i: measure.image_stats(i)["a_mean"]),
    "saturation": ("coffee", lambda i: measure.image_stats(i)["chroma_mean"]),
    "vibrance": ("chelsea", lambda i: measure.image_stats(i)["chroma_mean"]),
    "saturation_orange": ("coffee", _band_stat("chroma", "coffee", "orange")),
    "luminance_orange": ("coffee", _band_stat("L", "coffee", "orange")),
    "saturation_blue": ("rocket", _band_stat("chroma", "rocket", "blue")),
    "luminance_blue": ("rocket", _band_stat("L", "rocket", "blue")),
    "saturation_green": ("astronaut", _band_stat("chroma", "astronaut", "green")),
    "clarity": ("chelsea", lambda i: measure.local_contrast(i)),
    "sharpen": ("chelsea", lambda i: measure.fine_detail(i)),
    "dehaze": ("rocket", lambda i: -measure.dark_channel(i)),
}


@pytest.mark.parametrize("name", list(MONOTONE))
def test_ops_are_monotone_in_their_value(name, photos, renderer):
    photo, stat = MONOTONE[name]
    img = photos[photo]
    values = [-100, -60, -30, 0, 30, 60, 100]
    if name == "highlights":
        values = [-100, -50, 0, 50, 100]
    measured = [stat(_render(renderer, img, {name: v})) for v in values]
    assert all(b >= a - 1e-6 for a, b in zip(measured, measured[1:])), f"{name}: {measured}"
    assert measured[-1] > measured[0], f"{name} did not move its statistic: {measured}"


def test_hue_shift_moves_the_band_hue_towards_the_neighbour(photos, renderer):
    img = photos["coffee"]  # lots of orange
    base = measure.image_stats(img)["bands"]["orange"]["hue_mean"]
    plus = measure.image_stats(_render(renderer, img, {"hue_orange": 80}))["bands"]["orange"]["hue_mean"]
    minus = measure.image_stats(_render(renderer, img, {"hue_orange": -80}))["bands"]["orange"]["hue_mean"]
    assert minus < base < plus


@pytest.mark.parametrize("value", [-100, 100])
@pytest.mark.parametrize("name", TONE_OPS)
def test_extremes_are_strong_but_not_broken(name, value, photos, renderer):
    img = photos["astronaut"]
    out = _render(renderer, img, {name: value})
    assert out.dtype == np.uint8 and out.shape == img.shape
    y_in = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float64)
    y_out = cv2.cvtColor(out, cv2.COLOR_RGB2GRAY).astype(np.float64)
    # No wrap-around: the brightest tenth of the photo stays brighter than its darkest tenth.
    hi, lo = y_in >= np.percentile(y_in, 90), y_in <= np.percentile(y_in, 10)
    assert y_out[hi].mean() > y_out[lo].mean() + 20
    # No posterisation: the tonal range keeps many distinct levels.
    assert len(np.unique(y_out)) >= min(60, len(np.unique(y_in)) // 3)


def test_per_pixel_math_is_finite_everywhere():
    grid = np.stack(np.meshgrid(*[np.linspace(0, 1, 17, dtype=np.float32)] * 3, indexing="ij"), -1).reshape(-1, 3)
    for name in ops.PIXEL_OPS:
        op = ops.OPS[name]
        for v in ((op.min, op.max) if op.control != "points" else ([[0, 40], [128, 100], [255, 230]],)):
            out = apply_pixel_ops(grid, {name: v})
            assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1, name


STACK = {"exposure": 20, "contrast": 25, "highlights": -30, "shadows": 25, "whites": 10, "blacks": -10,
         "temperature": 15, "tint": 5, "saturation": 10, "vibrance": 20, "hue_orange": -10,
         "saturation_blue": 30, "luminance_green": -20}


@pytest.mark.parametrize("photo", ["astronaut", "coffee", "chelsea"])
def test_fused_lut_matches_exact_math(photo, photos, renderer):
    img = photos[photo]
    state = EditState.from_dict({"settings": STACK})
    fused = renderer.render(SourceImage.from_array(img), state)
    exact = render_exact(img, state)
    err = np.abs(fused.astype(int) - exact.astype(int))
    assert err.max() <= 3 and err.mean() <= 0.2, (err.max(), err.mean())


def test_same_inputs_same_bytes_across_renderers_and_threads(photos):
    img = photos["chelsea"]
    state = EditState.from_dict({"settings": {**STACK, "clarity": 30, "dehaze": 20, "sharpen": 20},
                                 "layers": [{"mask": {"type": "gradient", "start": [0.5, 0], "end": [0.5, 0.6]},
                                             "settings": {"exposure": -30, "saturation": 20}}]})
    first = render(img, state)
    assert np.array_equal(first, render(img, state))
    shared = Renderer()
    source = SourceImage.from_array(img)
    results: list[np.ndarray] = []
    lock = threading.Lock()

    def work(i):
        s = state.with_value("tint", i % 3)
        out = shared.render(source, s)
        with lock:
            results.append((i % 3, out.copy()))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for tint, out in results:
        assert np.array_equal(out, render(img, state.with_value("tint", tint)))


def test_render_cache_is_bounded_and_hits(photos):
    img = photos["coffee"]
    source = SourceImage.from_array(img)
    r = Renderer(max_cache_bytes=8 * img.nbytes)  # room for about 4 renders
    for v in range(1, 12):
        r.render(source, EditState.from_dict({"settings": {"exposure": v}}))
    assert r.renders.nbytes <= r.renders.max_bytes
    assert len(r.renders) < 11
    hits = r.renders.hits
    r.render(source, EditState.from_dict({"settings": {"exposure": 11}}))
    assert r.renders.hits == hits + 1


def test_proxy_matches_a_downscaled_full_render():
    img = data.astronaut()  # 512 px
    state = EditState.from_dict({"settings": {**STACK, "clarity": 40, "sharpen": 30, "dehaze": 20}})
    full = render(img, state)
    proxy = render(img, state, long_side=256)
    assert proxy.shape == (256, 256, 3)
    down = cv2.resize(full, (256, 256), interpolation=cv2.INTER_AREA)
    assert np.abs(down.astype(int) - proxy.astype(int)).mean() < 2.5


def test_long_side_never_upscales():
    img = _small(data.coffee(), 200)
    assert render(img, EditState(), long_side=4000).shape == img.shape


def test_local_layer_changes_inside_its_mask_only(photos, renderer):
    img = photos["rocket"]
    source = SourceImage.from_array(img)
    top_half = {"type": "gradient", "start": [0.5, 0.35], "end": [0.5, 0.5]}
    glob = EditState.from_dict({"settings": {"contrast": 20}})
    local = glob.with_value("exposure", -50, mask=top_half).with_value("clarity", 40, mask=top_half)
    a = renderer.render(source, glob).astype(int)
    b = renderer.render(source, local).astype(int)
    h = img.shape[0]
    assert np.array_equal(a[int(h * 0.55):], b[int(h * 0.55):]), "pixels below the mask moved"
    assert b[: int(h * 0.3)].mean() < a[: int(h * 0.3)].mean() - 10, "the masked area did not darken"


def test_layer_opacity_scales_the_effect(photos, renderer):
    img = photos["coffee"]
    source = SourceImage.from_array(img)
    spec = {"type": "radial", "center": [0.5, 0.5], "radius": [0.3, 0.3]}
    full = EditState.from_dict({"layers": [{"mask": spec, "settings": {"exposure": 60}}]})
    half = EditState.from_dict({"layers": [{"mask": spec, "settings": {"exposure": 60}, "opacity": 0.5}]})
    d_full = renderer.render(source, full).astype(int) - img
    d_half = renderer.render(source, half).astype(int) - img
    assert 0.35 < d_half.mean() / d_full.mean() < 0.65


def test_apply_cli_renders_a_recipe(tmp_path):
    src = tmp_path / "in.png"
    cv2.imwrite(str(src), cv2.cvtColor(_small(data.coffee(), 300), cv2.COLOR_RGB2BGR))
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"settings": {"temperature": 30},
                                 "layers": [{"mask": {"type": "gradient"}, "settings": {"exposure": -20}}]}))
    out = tmp_path / "out.jpg"
    res = subprocess.run([sys.executable, "-m", "pipeline.apply", str(src), str(out), "--state", str(state),
                          "--set", "exposure=15", "--long-side", "200"], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    line = json.loads(res.stdout.splitlines()[-1])
    assert line["width"] == 200 and line["state"]["settings"] == {"exposure": 15, "temperature": 30}
    rendered = cv2.imread(str(out))
    assert rendered.shape[1] == 200
    before = measure.image_stats(cv2.resize(cv2.imread(str(src))[..., ::-1], (200, rendered.shape[0])))
    after = measure.image_stats(rendered[..., ::-1].copy())
    assert after["b_mean"] > before["b_mean"] + 3  # warmer, as the recipe says


@pytest.mark.parametrize("args, message", [
    (["--set", "exposure=300"], "exposure: 300 is outside its range"),
    (["--set", "sparkle=3"], "unknown op 'sparkle'"),
    (["--set", "exposure"], "expected op=value"),
    (["--long-side", "0"], "--long-side must be a positive number"),
])
def test_apply_cli_rejects_bad_input_clearly(tmp_path, args, message):
    src = tmp_path / "in.png"
    cv2.imwrite(str(src), np.zeros((8, 8, 3), np.uint8))
    res = subprocess.run([sys.executable, "-m", "pipeline.apply", str(src), str(tmp_path / "o.png"), *args],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 2
    assert message in res.stderr
    assert not (tmp_path / "o.png").exists()


def test_apply_cli_refuses_a_broken_image(tmp_path):
    src = tmp_path / "notes.jpg"
    src.write_text("this is not a photo")
    res = subprocess.run([sys.executable, "-m", "pipeline.apply", str(src), str(tmp_path / "o.png")],
                         cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 2 and "not an image" in res.stderr
