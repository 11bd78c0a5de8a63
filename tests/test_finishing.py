"""Finishing: vignette, grain, tone curves, colour grading, noise reduction.

Measured on images the tests build (a flat grey card, a grey ramp, a noisy
card with an edge) and on real photos.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from pipeline import measure
from pipeline.finishing import CURVE_NAMES, grain_seed
from pipeline.render import Renderer, SourceImage, render, render_exact
from pipeline.state import EditState


def _state(**settings) -> EditState:
    return EditState.from_dict({"settings": settings})


def grey(h=400, w=600, level=128) -> np.ndarray:
    return np.full((h, w, 3), level, np.uint8)


def ramp(h=64, w=256) -> np.ndarray:
    return np.repeat(np.repeat(np.arange(w, dtype=np.uint8)[None, :, None], h, 0), 3, 2)


def luma(img) -> np.ndarray:
    return cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(np.float64)


# -- vignette ------------------------------------------------------------------------------

@pytest.mark.parametrize("img", [grey(), data.coffee()], ids=["grey", "coffee"])
def test_vignette_darkens_the_corners_and_keeps_the_centre(img):
    out = render(img, _state(vignette=60))
    h, w = img.shape[:2]
    c = (slice(h // 2 - h // 8, h // 2 + h // 8), slice(w // 2 - w // 8, w // 2 + w // 8))
    assert np.array_equal(out[c], img[c])  # the centre keeps its brightness exactly
    for ys, xs in ((slice(0, h // 10), slice(0, w // 10)), (slice(-h // 10, None), slice(-w // 10, None))):
        assert luma(out[ys, xs]).mean() < 0.75 * luma(img[ys, xs]).mean()
    lighter = render(img, _state(vignette=-60))
    assert luma(lighter[:h // 10, :w // 10]).mean() > luma(img[:h // 10, :w // 10]).mean() + 10
    assert np.array_equal(lighter[c], img[c])


def test_vignette_midpoint_and_feather_move_the_falloff():
    img = grey()
    row = lambda s: luma(render(img, s))[200]  # the middle row, centre to edge
    base = row(_state(vignette=80))
    far = row(_state(vignette=80, vignette_midpoint=80))
    assert (far >= base - 1e-9).all() and far.sum() > base.sum()  # starts further out: less darkening
    hard = row(_state(vignette=80, vignette_feather=-100))
    assert np.abs(np.diff(hard)).max() > np.abs(np.diff(base)).max()  # a harder edge


def test_vignette_is_centred_on_the_crop():
    img = grey(400, 800)
    out = render(img, _state(vignette=70, crop_left=50))
    assert out.shape == (400, 400, 3)
    assert np.array_equal(out[180:220, 180:220], img[180:220, 180:220])  # the crop's centre, untouched
    assert luma(out[:20, :20]).mean() < 100


# -- grain ---------------------------------------------------------------------------------

def test_grain_is_deterministic_for_a_state_and_adds_fine_variance():
    img = grey()
    state = _state(grain=50)
    a, b = render(img, state), Renderer().render(SourceImage.from_array(img), state)
    assert np.array_equal(a, b)  # the same state, the same grain, in a fresh renderer
    assert abs(luma(a).mean() - 128) < 1.0  # grain does not shift the exposure
    fine = luma(a) - cv2.GaussianBlur(luma(a), (0, 0), 3)
    assert fine.std() > 2.0  # fine-scale variance where the card was flat
    assert np.array_equal(a[..., 0], a[..., 1])  # monochrome grain
    assert not np.array_equal(render(img, _state(grain=50, grain_size=60)), a)
    # coarser grain (on a frame large enough for particles over a pixel): more of its variance survives a blur
    big = grey(1500, 2400)
    fine_grain, coarse = render(big, _state(grain=50)), render(big, _state(grain=50, grain_size=80))
    ratio = lambda x: cv2.GaussianBlur(luma(x), (0, 0), 2).std() / luma(x).std()
    assert ratio(coarse) > 1.3 * ratio(fine_grain)
    # the pattern stays put while other sliders move (seeded by the grain size only)
    assert grain_seed(0) == grain_seed(0) != grain_seed(60)
    warmer = render(img, _state(grain=50, exposure=10))
    assert np.corrcoef(luma(warmer).ravel(), luma(a).ravel())[0, 1] > 0.9


def test_grain_amount_is_monotone():
    img = grey()
    stds = [luma(render(img, _state(grain=g))).std() for g in (0, 20, 50, 100)]
    assert stds[0] == 0 and all(b > a for a, b in zip(stds, stds[1:]))


# -- tone curves and grading ---------------------------------------------------------------------

def test_named_curves_shape_the_tones():
    r = ramp()
    s = luma(render(r, _state(tone_curve="s-curve")))[0]
    assert s[40] < 40 and s[215] > 215 and abs(s[128] - 128) <= 1  # darker darks, brighter lights
    matte = luma(render(r, _state(tone_curve="faded-matte")))[0]
    assert matte[0] >= 30 and matte[255] <= 242  # lifted blacks, softened whites
    assert (np.diff(matte) >= -0.5).all()  # still monotone
    for name in CURVE_NAMES[1:]:
        out = render(data.coffee(), _state(tone_curve=name))
        assert not np.array_equal(out, data.coffee()), name


def test_curve_points_go_through_the_points_and_fuse_into_the_lut():
    r = ramp()
    out = luma(render(r, EditState.from_dict({"settings": {"curve_points": [[0, 20], [128, 150], [255, 235]]}})))[0]
    assert abs(out[0] - 20) <= 1 and abs(out[128] - 150) <= 1 and abs(out[255] - 235) <= 1
    # the LUT against the exact per-pixel math, on a real photo
    photo = data.astronaut()
    state = _state(tone_curve="strong-s", grade_shadows_hue=190, grade_shadows=40,
                   grade_highlights_hue=35, grade_highlights=30, exposure=10)
    err = np.abs(render(photo, state).astype(int) - render_exact(photo, state).astype(int))
    assert err.max() <= 3 and err.mean() <= 0.2


def test_teal_and_orange_tints_shadows_teal_and_highlights_orange():
    r = ramp()
    out = render(r, _state(grade_shadows_hue=190, grade_shadows=50, grade_highlights_hue=35, grade_highlights=50))
    lab = measure.lab(out)
    shadows, highlights = lab[:, 30:70], lab[:, 190:230]
    assert shadows[..., 2].mean() < -4 and shadows[..., 1].mean() < 0  # blue-green
    assert highlights[..., 2].mean() > 4 and highlights[..., 1].mean() > 0  # orange
    # luminance is kept: the grade tints, it does not brighten or darken
    assert np.abs(luma(out) - luma(r)).mean() < 2.0


# -- noise reduction ---------------------------------------------------------------------

def test_noise_reduction_removes_noise_and_keeps_edges():
    rng = np.random.default_rng(1)
    clean = np.zeros((300, 400, 3), np.uint8)
    clean[:, :200], clean[:, 200:] = 70, 180
    noisy = np.clip(clean + rng.normal(0, 10, (300, 400, 1)), 0, 255).astype(np.uint8)
    chroma = np.clip(noisy.astype(int) + rng.normal(0, 8, noisy.shape), 0, 255).astype(np.uint8)
    out = render(chroma, _state(noise_reduction=70, color_noise_reduction=70))
    flat = (slice(20, 280), slice(20, 180))
    assert luma(out[flat]).std() < 0.5 * luma(chroma[flat]).std()
    spread = lambda x: np.std(x.astype(float) - x.astype(float).mean(axis=2, keepdims=True), axis=(0, 1)).mean()
    assert spread(out[flat]) < 0.5 * spread(chroma[flat])
    # the edge stays sharp: the step still happens within a few pixels
    profile = luma(out)[150]
    assert profile[195] < 100 and profile[205] > 150


def test_finishing_ops_at_zero_are_the_identity():
    img = data.chelsea()
    zero = {k: 0 for k in ("vignette", "grain", "noise_reduction", "color_noise_reduction", "tone_curve",
                           "grade_shadows", "grade_highlights", "crop_left", "straighten", "rotate")}
    assert np.array_equal(render(img, EditState.from_dict({"settings": zero})), img)
