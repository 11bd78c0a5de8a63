"""Known answers for the judging measurements in pipeline.measure, and their
behaviour on real photos (skimage.data)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data as skdata

from pipeline import measure


def flat(rgb, h=64, w=96) -> np.ndarray:
    return np.full((h, w, 3), rgb, np.uint8)


def hsv_image(hue_deg: float, h=48, w=48) -> np.ndarray:
    """A uniform, fully saturated colour at an HSV hue in degrees."""
    hsv = np.zeros((h, w, 3), np.uint8)
    hsv[..., 0] = round(hue_deg * 256 / 360) % 256
    hsv[..., 1] = 255
    hsv[..., 2] = 255
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB_FULL)


@pytest.fixture(scope="module")
def astronaut():
    return skdata.astronaut()


# -- LabImage -----------------------------------------------------------------------

def test_lab_image_matches_lab_within_half_a_unit(astronaut):
    v = measure.LabImage.of(astronaut)
    small, _ = measure.analysis_copy(astronaut)
    ref = measure.lab(small)
    assert np.abs(v.L - ref[..., 0]).max() < 0.5
    assert np.abs(v.a - ref[..., 1]).max() < 0.6
    assert np.abs(v.b - ref[..., 2]).max() < 0.6
    assert np.allclose(v.chroma, np.hypot(v.a, v.b))


def test_lab_image_masked_weights_follow_the_mask(astronaut):
    mask = np.zeros(astronaut.shape[:2], np.float32)
    mask[:, :256] = 1.0
    v = measure.LabImage.of(astronaut).masked(mask)
    assert v.weight.shape == v.L.shape
    assert v.weight[:, :100].min() == 1.0 and v.weight[:, -100:].max() == 0.0


# -- colour difference -------------------------------------------------------------

def test_delta_e_known_answers(astronaut):
    assert measure.delta_e(astronaut, astronaut) == 0.0
    # black to white is exactly 100 L* apart
    assert measure.delta_e(flat(0), flat(255)) == pytest.approx(100.0, abs=0.1)


def test_delta_e_only_counts_inside_the_mask():
    before = flat(128)
    after = before.copy()
    after[:, 48:] = 255                       # right half changes
    left = np.zeros(before.shape[:2], np.float32)
    left[:, :48] = 1
    assert measure.delta_e(before, after, left) == pytest.approx(0.0, abs=1e-6)
    assert measure.delta_e(before, after, 1 - left) > 40


# -- texture and detail ------------------------------------------------------------

def test_local_contrast_flat_is_zero_and_blur_lowers_it(astronaut):
    assert measure.local_contrast(flat(90)) == pytest.approx(0.0, abs=1e-4)
    soft = cv2.GaussianBlur(astronaut, (0, 0), 6)
    assert measure.local_contrast(soft) < 0.7 * measure.local_contrast(astronaut)


def test_fine_detail_known_answer_for_alternating_columns():
    # columns alternate 0 / 255: the 4-neighbour Laplacian is +-510 everywhere
    img = np.zeros((32, 32, 3), np.uint8)
    img[:, 1::2] = 255
    assert measure.fine_detail(img) == pytest.approx(510.0 ** 2, rel=1e-4)
    assert measure.fine_detail(flat(77)) == pytest.approx(0.0, abs=1e-6)


def test_fine_detail_sees_sharpening_and_softening(astronaut):
    blur = cv2.GaussianBlur(astronaut, (0, 0), 1.0)
    sharp = cv2.addWeighted(astronaut, 2.0, blur, -1.0, 0)
    base = measure.fine_detail(astronaut)
    assert measure.fine_detail(sharp) > 1.5 * base
    assert measure.fine_detail(blur) < 0.5 * base


# -- haze ------------------------------------------------------------------------------

def test_dark_channel_of_a_flat_colour_is_its_smallest_channel():
    assert measure.dark_channel(flat((200, 100, 50))) == pytest.approx(50 / 255, abs=1e-6)


def test_dark_channel_rises_with_a_veil(astronaut):
    veiled = cv2.addWeighted(astronaut, 0.6, flat(220, *astronaut.shape[:2]), 0.4, 0)
    assert measure.dark_channel(veiled) > measure.dark_channel(astronaut) + 0.2


# -- clipping ---------------------------------------------------------------------------

def test_clipped_shares_known_answers():
    img = flat(128, 40, 40)
    img[:10] = 255                 # a quarter blown to white
    img[10:20] = (255, 255, 0)     # two channels at the ceiling: blown too
    img[20:25] = (255, 0, 0)       # one channel at the ceiling: just a saturated red
    img[25:30] = 0                 # an eighth pure black
    img[30:35] = (0, 0, 120)       # a deep blue is not crushed
    shares = measure.clipped_shares(img)
    assert shares["highlights"] == pytest.approx(0.5)
    assert shares["shadows"] == pytest.approx(0.125)


def test_clipped_shares_inside_a_mask():
    img = flat(128, 40, 40)
    img[:, :20] = 255
    left = np.zeros((40, 40), np.float32)
    left[:, :20] = 1
    assert measure.clipped_shares(img, left)["highlights"] == pytest.approx(1.0)
    assert measure.clipped_shares(img, 1 - left)["highlights"] == pytest.approx(0.0)


# -- banding ------------------------------------------------------------------------------

def _gradient(levels: int | None = None) -> np.ndarray:
    x = np.linspace(0, 255, 1024)
    if levels:
        x = np.round(x / 255 * (levels - 1)) * (255 / (levels - 1))
    row = np.clip(np.round(x), 0, 255).astype(np.uint8)
    return np.repeat(np.repeat(row[None, :, None], 64, axis=0), 3, axis=2)


def test_level_step_smooth_gradient_uses_every_level():
    assert measure.level_step(_gradient()) == pytest.approx(1.0, abs=0.02)


def test_level_step_posterised_gradient():
    # 16 levels over 0..255 sit 17 levels apart
    assert measure.level_step(_gradient(16)) == pytest.approx(17.0, rel=0.1)


def test_level_step_real_photo_is_smooth_and_posterised_is_not(astronaut):
    assert measure.level_step(astronaut) < 1.2
    poster = (astronaut // 32 * 32 + 16).astype(np.uint8)
    assert measure.level_step(poster) > 10


# -- saturation ----------------------------------------------------------------------------

def test_pure_colour_share_known_answers():
    img = flat(128, 40, 40)
    img[:10] = (255, 0, 0)     # pure red
    img[10:20] = (60, 0, 0)    # pure but too dark to matter
    img[20:30] = (230, 40, 40)  # strong red, not at the gamut edge
    assert measure.pure_colour_share(img) == pytest.approx(0.25, abs=0.01)


def test_high_chroma_share_known_answers():
    assert measure.high_chroma_share(flat((255, 0, 0))) == pytest.approx(1.0)   # red: chroma ~104
    assert measure.high_chroma_share(flat(128)) == pytest.approx(0.0)
    assert measure.high_chroma_share(flat((255, 0, 0)), limit=110) == pytest.approx(0.0)


def test_hue_shift_known_answer():
    before, after = hsv_image(100), hsv_image(112)
    # HSV_FULL hue is quantised to 360/256 degrees
    assert measure.hue_shift(before, after) == pytest.approx(12.0, abs=1.5)
    assert measure.hue_shift(after, before) == pytest.approx(-12.0, abs=1.5)
    # across 0/360 the short way round
    assert measure.hue_shift(hsv_image(355), hsv_image(5)) == pytest.approx(10.0, abs=1.5)


def test_hue_shift_by_band_ignores_other_colours():
    before = np.concatenate([hsv_image(120), hsv_image(225)], axis=1)   # green | blue
    after = np.concatenate([hsv_image(130), hsv_image(225)], axis=1)    # only green moved
    assert measure.hue_shift(before, after, band="green") == pytest.approx(10.0, abs=1.5)
    assert measure.hue_shift(before, after, band="blue") == pytest.approx(0.0, abs=0.5)
    assert measure.hue_shift(flat(128), flat(140)) == 0.0                 # greys have no hue


def test_weighted_mean():
    x = np.array([[1.0, 3.0]], np.float32)
    assert measure.weighted_mean(x) == 2.0
    assert measure.weighted_mean(x, np.array([[0.0, 1.0]], np.float32)) == 3.0
    assert measure.weighted_mean(x, np.zeros((1, 2), np.float32)) == 0.0


def test_colour_balance_known_answers():
    grey = measure.colour_balance(flat(128))
    assert grey["warm"] == pytest.approx(0.0, abs=1e-6) and grey["magenta"] == pytest.approx(0.0, abs=1e-6)
    warm = measure.colour_balance(flat((140, 128, 116)))
    assert warm["warm"] > 0.1
    green = measure.colour_balance(flat((120, 140, 120)))
    assert green["magenta"] < -0.1 and green["warm"] == pytest.approx(0.0, abs=1e-6)


def test_colour_balance_ignores_exposure_but_not_white_balance(astronaut):
    from pipeline.adjust import adjust_exposure, adjust_white_balance

    def apply(fn, value):
        return np.clip(fn(astronaut.astype(np.float32) / 255, value) * 255 + 0.5, 0, 255).astype(np.uint8)

    base = measure.colour_balance(astronaut)["warm"]
    brighter = measure.colour_balance(apply(adjust_exposure, -40))["warm"]
    warmer = measure.colour_balance(apply(adjust_white_balance, 30))["warm"]
    assert abs(brighter - base) < 0.03
    assert warmer - base > 0.15


def _direct_band_stats(img, mask=None):
    """image_stats' bands computed pixel by pixel from the float hue (no tables), as the definition reads."""
    small, m = measure.analysis_copy(img, mask)
    lab_img = measure.lab(small)
    L, chroma = lab_img[..., 0], np.hypot(lab_img[..., 1], lab_img[..., 2])
    hue, _ = measure.hue_degrees(small)
    base = (chroma > 8).astype(np.float32)
    if m is not None:
        base = base * m.astype(np.float32)
    rad = np.deg2rad(hue)
    out = {}
    for band in measure.BANDS:
        bw = measure.band_weights(hue, band) * base
        s = float(bw.sum())
        if s > 1e-6:
            out[band] = (float(np.rad2deg(np.arctan2((np.sin(rad) * bw).sum(), (np.cos(rad) * bw).sum())) % 360),
                         s, float((chroma * bw).sum() / s), float((L * bw).sum() / s))
    top = small.max(axis=2)
    return out, float((top >= 255).astype(np.float32).mean()), float((top <= 0).astype(np.float32).mean())


@pytest.mark.parametrize("name", ["astronaut", "coffee", "rocket"])
def test_image_stats_hue_tables_give_exactly_the_per_pixel_numbers(name):
    img = getattr(skdata, name)()
    rng = np.random.default_rng(1)
    for mask in (None, rng.random(img.shape[:2]).astype(np.float32)):
        stats = measure.image_stats(img, mask)
        bands, high, low = _direct_band_stats(img, mask)
        assert bands, "a colour photo has coloured pixels"
        for band, (hue_mean, share, chroma_mean, l_mean) in bands.items():
            got = stats["bands"][band]
            assert (got["hue_mean"], got["chroma_mean"], got["L_mean"]) == (hue_mean, chroma_mean, l_mean)
        if mask is None:
            assert (stats["clip_high"], stats["clip_low"]) == (high, low)


def _rgb(img: np.ndarray) -> np.ndarray:
    return np.stack([img] * 3, axis=-1) if img.ndim == 2 else img


@pytest.mark.parametrize("name, surface", [
    ("brick", True), ("gravel", True), ("grass", True),          # one stuff from edge to edge
    ("astronaut", False), ("coffee", False), ("chelsea", False), ("camera", False), ("coins", False),
    ("moon", False),                                               # craters: texture differs across the frame
    ("page", False),                                               # a page with its shadowed edge
])
def test_one_surface_is_the_same_stuff_in_every_part_of_the_frame(name, surface):
    assert measure.one_surface(_rgb(getattr(skdata, name)())) is surface


def test_one_surface_is_not_a_flat_frame_with_a_thing_in_it():
    img = _rgb(skdata.gravel())
    spot = img.copy()
    spot[100:220, 120:260] = (200, 40, 40)                         # a red thing on the gravel
    assert measure.one_surface(img) and not measure.one_surface(spot)
