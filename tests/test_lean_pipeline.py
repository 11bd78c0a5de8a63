"""The fast, lean paths give the same photos as the paths they replace, and memory stays bounded.

- OpenCV's direct decode (JPEG, 16-bit PNG / TIFF) returns exactly what Pillow's path returns;
- the LUT pass in strips, with or without kept coordinates, gives the same bytes as the whole-frame one;
- a RAW's half-size first look has the full develop's colours;
- opening a 16-bit 7000 x 7000 PNG and a turn on it stay under 1.5 GB, the one-shot CLI's memory grows
  by at most 12 MB per megapixel, and its imports leave scikit-image and SciPy out.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageCms
from skimage import data

from conftest import small_photo
from pipeline import imageio
from pipeline.imageio import load_image
from pipeline.raw import develop, write_cfa_dng
from pipeline.render import (Renderer, SourceImage, apply_lut, apply_lut_image, compile_lut, compile_table,
                             lookup_table, lut_coordinates, STRIP_ROWS)
from pipeline.workload import naive_render
from pipeline.state import EditState

REPO = Path(__file__).resolve().parents[1]


def _jpeg(img: np.ndarray, **params) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(img).save(buffer, "JPEG", quality=90, **params)
    return buffer.getvalue()


def _both_paths(monkeypatch, data_bytes: bytes, **kwargs):
    fast = load_image(data_bytes, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(imageio, "_decode_with_opencv", lambda *a, **k: None)
        slow = load_image(data_bytes, **kwargs)
    return fast, slow


def _same(fast, slow):
    assert np.array_equal(fast.pixels, slow.pixels)
    assert (fast.deep is None) == (slow.deep is None)
    if fast.deep is not None:
        assert np.array_equal(fast.deep, slow.deep)
    assert (fast.format, fast.width, fast.height, fast.bit_depth, fast.has_alpha, fast.notices, fast.exif) == \
        (slow.format, slow.width, slow.height, slow.bit_depth, slow.has_alpha, slow.notices, slow.exif)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_a_jpeg_decodes_to_pillows_pixels_in_every_exif_orientation(monkeypatch, orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    exif[0x010F] = "Atelier"
    photo = data.coffee()  # not square: a wrong turn shows
    fast, slow = _both_paths(monkeypatch, _jpeg(photo, exif=exif.tobytes()))
    _same(fast, slow)
    assert fast.pixels.flags.writeable and fast.pixels.flags.c_contiguous


def test_grey_srgb_tagged_and_progressive_jpegs_decode_to_pillows_pixels(monkeypatch):
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    photo = small_photo("astronaut", 300)
    for blob in (_jpeg(photo[..., 1]), _jpeg(photo, icc_profile=srgb), _jpeg(photo, progressive=True),
                 _jpeg(photo, subsampling="4:4:4")):
        _same(*_both_paths(monkeypatch, blob))


def test_a_jpeg_with_bytes_after_its_end_or_cut_short_takes_pillows_path(monkeypatch):
    blob = _jpeg(small_photo("chelsea", 300))
    trailer = load_image(blob + b"camera trailer")
    assert np.array_equal(trailer.pixels, load_image(blob).pixels)
    with pytest.raises(imageio.ImageLoadError, match="truncated or damaged"):
        load_image(blob[: len(blob) * 2 // 3])


def _png16(img16: np.ndarray) -> bytes:
    bgr = cv2.cvtColor(img16, cv2.COLOR_RGBA2BGRA if img16.shape[2] == 4 else cv2.COLOR_RGB2BGR) \
        if img16.ndim == 3 else img16
    return cv2.imencode(".png", bgr)[1].tobytes()


def _deep(h: int = 120, w: int = 200) -> np.ndarray:
    x = np.linspace(0, 65535, w)[None, :]
    y = np.linspace(0, 65535, h)[:, None]
    return np.stack([x + 0 * y, 0 * x + y, 65535 - (x + y) / 2], -1).astype(np.uint16)


def test_16_bit_png_and_tiff_decode_once_to_the_same_pixels(monkeypatch):
    import tifffile

    deep = _deep()
    opaque = np.dstack([deep, np.full(deep.shape[:2], 65535, np.uint16)])
    see_through = np.dstack([deep, np.tile(np.linspace(0, 65535, deep.shape[1]).astype(np.uint16),
                                           (deep.shape[0], 1))])
    tiff = io.BytesIO()
    tifffile.imwrite(tiff, deep, photometric="rgb")
    for blob, alpha in ((_png16(deep), "flatten"), (_png16(deep[..., 0].copy()), "flatten"),
                        (_png16(opaque), "flatten"), (_png16(see_through), "keep"),
                        (_png16(see_through), "flatten"), (tiff.getvalue(), "flatten")):
        fast, slow = _both_paths(monkeypatch, blob, alpha=alpha)
        _same(fast, slow)
    assert fast.deep is not None and np.array_equal(fast.deep, deep)


def test_a_16_bit_png_whose_exif_follows_the_pixels_is_still_turned_upright():
    exif = Image.Exif()
    exif[0x0112] = 6
    png = _png16(_deep())
    body = exif.tobytes()
    chunk = len(body).to_bytes(4, "big") + b"eXIf" + body
    import zlib
    chunk += zlib.crc32(b"eXIf" + body).to_bytes(4, "big")
    late = png[:-12] + chunk + png[-12:]  # just before IEND
    loaded = load_image(late)
    assert loaded.pixels.shape[:2] == (200, 120) and "Rotated upright" in " ".join(loaded.notices)


def test_the_strip_pass_gives_the_whole_frame_bytes_and_coordinates():
    lut = compile_lut({"exposure": 25, "contrast": 30, "saturation": 20, "hue_blue": 30})
    img = small_photo("coffee", 333)
    img = np.ascontiguousarray(img[: 2 * STRIP_ROWS + 7])  # a last strip that is not full
    ref = lut_coordinates(img)
    keep = (np.empty_like(ref[0]), np.empty_like(ref[1]))
    out = apply_lut_image(lut, img, keep)
    assert np.array_equal(out, apply_lut(lut, ref)) and np.array_equal(out, apply_lut_image(lut, img))
    assert all(np.array_equal(a, b) for a, b in zip(keep, ref))
    xy, frac = lut_coordinates(img[:1, :1])  # one pixel
    assert xy.shape == (1, 1, 2) and frac.shape == (1, 1)


@pytest.mark.parametrize("stages", [
    [{"exposure": 25, "contrast": 30, "saturation": 20, "hue_blue": 30}],   # per-channel head, then the rest
    [{"exposure": -70}], [{"contrast": -40}], [{"vibrance": 35, "temperature": -20}],   # head only, no head
    [{"exposure": 40, "highlights": -30}, {"exposure": -20, "luminance_green": 30}],   # a layer's second stage
])
def test_the_8_bit_table_is_the_uint16_lut_read_as_levels(stages):
    """compile_table skips the uint16 image but holds the same numbers (and the per-channel head,
    evaluated on the grid's axes, gives the grid's own values)."""
    assert np.array_equal(compile_table(*stages), lookup_table(compile_lut(*stages)))


@pytest.mark.parametrize("settings", [
    {"exposure": 30, "contrast": 25, "highlights": -30, "shadows": 25, "temperature": 15, "saturation": 10,
     "vibrance": 20, "hue_orange": -10, "luminance_green": -20},
    {"vibrance": 80, "whites": 40, "blacks": -40, "hue_blue": 50},
    # strong exposure and contrast: the ops a draft reads through its cubic instead of on its grid
    {"exposure": 60, "contrast": 50, "highlights": -30, "saturation": 20},
    {"exposure": -70, "contrast": -50, "temperature": -20},
])
def test_a_draft_frame_while_a_slider_moves_is_close_to_the_exact_one(settings):
    """The exact LUT stays within 3 levels (mean about 0.2; the bench's bound is on its own photo); a
    draft (an eighth of the grid read through a cubic, 8-bit table) may be a few levels off on rare
    colours, far below the error of the JPEG its live preview is shown as."""
    photo = small_photo("astronaut", 640)
    state = EditState.from_dict({"settings": settings})
    renderer, source = Renderer(), SourceImage.from_array(photo)
    exact, draft = renderer.render(source, state), renderer.render(source, state, draft=True)
    truth = naive_render(photo, settings).astype(np.int16)
    err = np.abs(exact.astype(np.int16) - truth)
    assert err.max() <= 3 and err.mean() <= 0.25
    err = np.abs(draft.astype(np.int16) - truth)
    assert err.max() <= 8 and err.mean() <= 0.5
    buffer = io.BytesIO()
    Image.fromarray(exact).save(buffer, "JPEG", quality=90)
    jpeg = np.asarray(Image.open(buffer).convert("RGB")).astype(np.int16)
    assert err.mean() < np.abs(jpeg - truth).mean() / 3
    assert not np.array_equal(exact, draft)                       # a different, cheaper table
    assert np.array_equal(renderer.render(source, state), exact)  # the exact frame is not the cached draft


def test_an_exposure_drag_reuses_the_rest_of_the_stack_and_keeps_no_draft_frames():
    """While exposure (or contrast) moves, every other op of the stack is the same: each draft frame
    reads one cached grid through new curves instead of evaluating it again. Draft frames are not kept
    in the render cache (each is shown once); the exact frame is."""
    from pipeline import render

    photo = small_photo("coffee", 320)
    renderer, source = Renderer(), SourceImage.from_array(photo)
    rest = {"highlights": -30, "temperature": 15, "saturation": 10, "hue_orange": -10}
    frames = []
    render._draft_grid.cache_clear()
    for value in (10, 20, 30, 40):
        state = EditState.from_dict({"settings": {**rest, "exposure": value}})
        frames.append(renderer.render(source, state, draft=True))
        assert renderer.render(source, state, draft=True) is not frames[-1]   # drafts are not kept
    info = render._draft_grid.cache_info()
    assert info.misses == 1 and info.hits == 3
    assert all(frames[i].mean() < frames[i + 1].mean() for i in range(3))   # brighter frame by frame
    exact = EditState.from_dict({"settings": {**rest, "exposure": 40}})
    assert renderer.render(source, exact) is renderer.render(source, exact)   # the kept frame is cached
    truth = naive_render(photo, exact.settings).astype(np.int16)
    assert np.abs(frames[-1].astype(np.int16) - truth).mean() <= 0.5
    # another slider's drag evaluates its grid again (the cache holds what the moving op does not touch)
    renderer.render(source, EditState.from_dict({"settings": {**rest, "exposure": 40, "saturation": 30}}),
                    draft=True)
    assert render._draft_grid.cache_info().misses == 2


@pytest.mark.parametrize("layers", [[], [{"mask": {"type": "gradient", "start": [0.5, 0], "end": [0.5, 1]},
                                          "settings": {"exposure": -30, "saturation": 20}}]])
def test_a_render_too_big_to_keep_coordinates_for_gives_the_same_bytes(layers):
    photo = small_photo("astronaut", 480)
    state = EditState.from_dict({"settings": {"exposure": 15, "contrast": 20, "vibrance": 30, "clarity": 20},
                                 "layers": layers})
    keeps = Renderer()                                   # 64 MB of coordinates: this photo's are kept
    tight = Renderer(max_cache_bytes=4 * photo.shape[0] * photo.shape[1])  # too small to keep them
    a = keeps.render(SourceImage.from_array(photo), state)
    b = tight.render(SourceImage.from_array(photo), state)
    assert np.array_equal(a, b)
    assert len(keeps.coords) == 1 and len(tight.coords) == 0


def test_an_original_is_taken_over_not_copied_and_keeps_its_digest():
    loaded = load_image(_jpeg(small_photo("rocket", 300)))
    source = SourceImage.from_loaded(loaded)
    assert np.shares_memory(source.pixels, loaded.pixels) and not source.pixels.flags.writeable
    assert source.digest == SourceImage.from_array(loaded.pixels).digest
    deep = load_image(_png16(_deep()))
    a, b = SourceImage.from_loaded(deep), SourceImage.from_array(deep.pixels)
    assert a.digest != b.digest                          # a 16-bit original is known by its 16 bits
    assert a.nbytes == deep.pixels.nbytes + deep.deep.nbytes


def test_a_raw_first_look_is_developed_at_half_size_with_the_same_colours(tmp_path):
    photo = small_photo("astronaut", 512)
    path = tmp_path / "shot.dng"
    write_cfa_dng(photo, path, neutral=(0.45, 1.0, 0.65))
    full = load_image(path)
    first = load_image(path, draft_long_side=200)
    assert first.draft and not full.draft and first.pixels.shape == (256, 256, 3)
    assert "half size" in first.notices[0]
    shrunk = cv2.resize(full.deep, (256, 256), interpolation=cv2.INTER_AREA)
    # the same colours (channel means within 1.5 levels); edges differ a little (no demosaic: each 2x2 block's
    # red, greens and blue sit half a pixel apart)
    assert np.abs(shrunk.reshape(-1, 3).mean(0) - first.deep.reshape(-1, 3).mean(0)).max() / 257 < 1.5
    assert np.median(np.abs(shrunk.astype(float) - first.deep)) / 257 < 1.5
    assert not load_image(path, draft_long_side=300).draft   # half size would not cover 300 px
    assert develop(path.read_bytes(), half_size=True).shape == (256, 256, 3)


def test_apply_previews_a_raw_from_a_half_size_develop(tmp_path):
    from pipeline.apply import main

    write_cfa_dng(small_photo("coffee", 600), tmp_path / "shot.dng")
    assert main([str(tmp_path / "shot.dng"), str(tmp_path / "small.png"), "--long-side", "200"]) == 0
    assert main([str(tmp_path / "shot.dng"), str(tmp_path / "full.png")]) == 0
    small = cv2.imread(str(tmp_path / "small.png"), cv2.IMREAD_UNCHANGED)
    full = cv2.imread(str(tmp_path / "full.png"), cv2.IMREAD_UNCHANGED)
    assert small.shape == (133, 200, 3) and small.dtype == np.uint16
    shrunk = cv2.resize(full, (200, 133), interpolation=cv2.INTER_AREA)
    assert (np.abs(shrunk.astype(float) - small) / 257).mean() < 3


# The child's own peak: its VmHWM, not getrusage's ru_maxrss, which Linux carries across exec from the
# forked parent (a test suite grown to gigabytes would be counted as the child's peak).
_PEAK = """
def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
"""


def _child(code: str) -> dict:
    code = _PEAK + code
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_one_shot_cli_imports_no_scikit_image_scipy_or_pydantic():
    """Heavy imports wait for their first use: measurements (scikit-image, SciPy) and the mask spec
    models (pydantic, 0.1 s to build) are never needed by a one-shot edit of global values."""
    got = _child("import json, sys, pipeline.apply\n"
                 "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & {'skimage', 'scipy', 'pydantic'})))")
    assert got == []


def test_opening_a_16_bit_7000_px_png_and_a_turn_stay_under_one_and_a_half_gigabytes(tmp_path):
    x = np.linspace(0, 65535, 7000, dtype=np.float32)
    img = np.empty((7000, 7000, 3), np.uint16)
    img[..., 0] = x[None, :]
    img[..., 1] = x[:, None]
    img[..., 2] = 30000
    path = tmp_path / "deep.png"
    cv2.imwrite(str(path), img, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    del img
    got = _child(f"""
import json
import os
from pipeline.imageio import load_image
from pipeline.measure import image_stats
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState
source = SourceImage.from_loaded(load_image({str(path)!r}, alpha="keep"))
renderer = Renderer(max_cache_bytes=256 * 2**20)
state = EditState.from_dict({{"settings": {{"exposure": 20, "contrast": 10, "clarity": 20}}}})
proxy = renderer.render(source, state, 1600)
image_stats(renderer.render(source, state, 768)); image_stats(renderer.render(source, EditState(), 768))
print(json.dumps({{"peak_mb": peak_mb(),
                   "deep": source.deep is not None, "proxy": list(proxy.shape)}}))
""")
    assert got["deep"] and got["proxy"] == [1600, 1600, 3]
    assert got["peak_mb"] < 1536, got


def test_the_one_shot_cli_grows_by_at_most_12_mb_per_megapixel(tmp_path):
    sizes = {}
    for w, h in ((1200, 900), (4000, 3000)):
        path = tmp_path / f"{w}.jpg"
        Image.fromarray(cv2.resize(small_photo("coffee", 600), (w, h))).save(path, quality=90)
        sizes[w * h / 1e6] = _child(f"""
import json
import os
from pipeline.apply import main
main([{str(path)!r}, {str(tmp_path / 'out.jpg')!r}, "--set", "exposure=20", "--set", "vibrance=30"])
print(json.dumps({{"peak_mb": peak_mb()}}))
""")["peak_mb"]
    (mp0, rss0), (mp1, rss1) = sorted(sizes.items())
    assert (rss1 - rss0) / (mp1 - mp0) <= 12, sizes


def test_apply_develops_a_cropped_raw_in_full_even_when_wanted_small(tmp_path):
    from pipeline.apply import main

    write_cfa_dng(small_photo("coffee", 600), tmp_path / "shot.dng")
    assert main([str(tmp_path / "shot.dng"), str(tmp_path / "crop.png"), "--long-side", "250",
                 "--set", "crop=0.25,0.25,0.75,0.75"]) == 0
    assert cv2.imread(str(tmp_path / "crop.png"), cv2.IMREAD_UNCHANGED).shape[:2] == (167, 250)


_BLAS_PROBE = """
import os, runpy, sys
os.environ.pop("OPENBLAS_NUM_THREADS", None)
sys.argv = ["pipeline.apply", "--list-ops"]
if os.environ.get("AS_MAIN"):
    try:
        runpy.run_module("pipeline.apply", run_name="__main__")
    except SystemExit:
        pass
else:
    import pipeline.apply
print("BLAS", os.environ.get("OPENBLAS_NUM_THREADS"), "numpy" in sys.modules)
"""


@pytest.mark.parametrize("as_main, expected", [("1", "BLAS 1 True"), ("", "BLAS None True")])
def test_the_one_shot_command_runs_without_a_blas_thread_pool_and_importers_keep_theirs(as_main, expected):
    # OpenBLAS's idle threads spin through a whole one-shot edit (a third of its CPU time): the command
    # asks for one thread before numpy loads; a program that imports the module is left as it is
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["AS_MAIN"] = as_main
    done = subprocess.run([sys.executable, "-c", _BLAS_PROBE], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[1], timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == expected
