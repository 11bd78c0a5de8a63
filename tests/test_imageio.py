"""Safe image I/O: what a person uploading or exporting a photo would run into.

Every file is generated here (Pillow, or OpenCV for 16-bit colour) from
scikit-image's sample photos, or crafted byte by byte for hostile headers.
"""

from __future__ import annotations

import io
import os
import struct
import threading
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image, ImageCms, ImageFile
from skimage import data

from pipeline.imageio import (
    SUPPORTED_FORMATS,
    ImageLoadError,
    LoadedImage,
    describe_supported,
    encode_image,
    load_image,
    save_image,
    write_bytes_atomic,
)


# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return data.astronaut()  # 512x512 RGB


@pytest.fixture(scope="module")
def coffee() -> np.ndarray:
    return data.coffee()  # 400x600 RGB: not square, so rotations show


def pil_bytes(image: Image.Image, fmt: str, **params) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def png_header_only(width: int, height: int) -> bytes:
    """A PNG signature + IHDR claiming width x height RGB, and no pixel data at all."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IEND", b"")


def mean_abs_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def assert_load_fails(source, reason: str, *words: str, **kwargs) -> ImageLoadError:
    with pytest.raises(ImageLoadError) as caught:
        load_image(source, **kwargs)
    error = caught.value
    assert isinstance(error, ValueError)
    assert error.reason == reason, str(error)
    for word in words:
        assert word in str(error), f"{word!r} not in {str(error)!r}"
    return error


# --------------------------------------------------------------------------- refused files


def test_empty_file_and_empty_bytes_are_refused(tmp_path):
    empty = tmp_path / "holiday.jpg"
    empty.write_bytes(b"")
    assert_load_fails(empty, "empty", "The file is empty.")
    assert_load_fails(b"", "empty", "The file is empty.")


def test_text_file_renamed_png_is_not_an_image(tmp_path):
    fake = tmp_path / "sunset.png"
    fake.write_text("These are my holiday notes, not a picture.\n")
    error = assert_load_fails(fake, "unsupported", "not an image Atelier can open", "text file renamed .png")
    assert "JPEG, PNG, WebP, TIFF" in str(error)
    assert describe_supported() in str(error)


def test_known_but_unsupported_format_is_named(tmp_path, astronaut):
    bmp = tmp_path / "scan.bmp"
    bmp.write_bytes(pil_bytes(Image.fromarray(astronaut), "BMP"))
    assert_load_fails(bmp, "unsupported", "cannot open BMP", "Supported: JPEG")


def test_missing_file_is_a_load_error(tmp_path):
    assert_load_fails(tmp_path / "nowhere.jpg", "missing", "nowhere.jpg")


def test_truncated_jpeg_is_refused(tmp_path, astronaut):
    whole = pil_bytes(Image.fromarray(astronaut), "JPEG", quality=90)
    cut = tmp_path / "cut.jpg"
    cut.write_bytes(whole[: len(whole) * 6 // 10])
    assert_load_fails(cut, "damaged", "The file is truncated or damaged.")
    assert_load_fails(whole[: len(whole) // 2], "damaged", "truncated or damaged")


def test_truncated_files_are_refused_even_when_pillow_is_told_to_pad_them(monkeypatch, astronaut):
    # Some libraries flip this process-wide switch; it must not let half a photo through.
    whole_jpeg = pil_bytes(Image.fromarray(astronaut), "JPEG", quality=90)
    whole_png = pil_bytes(Image.fromarray(astronaut), "PNG")
    cut_jpeg, cut_png = whole_jpeg[: len(whole_jpeg) // 2], whole_png[: len(whole_png) // 2]
    monkeypatch.setattr(ImageFile, "LOAD_TRUNCATED_IMAGES", True)
    # Precondition: with the switch on, Pillow alone silently pads the cut JPEG.
    padded = Image.open(io.BytesIO(cut_jpeg))
    padded.load()
    assert padded.size == (512, 512)
    assert_load_fails(cut_jpeg, "damaged", "truncated or damaged")
    assert_load_fails(cut_png, "damaged", "truncated or damaged")
    # ... while complete files still load under the same switch.
    assert load_image(whole_jpeg).pixels.shape == (512, 512, 3)
    assert np.array_equal(load_image(whole_png).pixels, astronaut)


def test_decompression_bomb_header_fails_fast_with_the_size(tmp_path):
    bomb = tmp_path / "bomb.png"
    bomb.write_bytes(png_header_only(100_000, 100_000))  # 10 gigapixels claimed in 57 bytes
    assert bomb.stat().st_size < 100
    limits_before = (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES)
    assert_load_fails(bomb, "too_large", "10000 megapixels", "the limit is 50 MP")
    assert (Image.MAX_IMAGE_PIXELS, ImageFile.LOAD_TRUNCATED_IMAGES) == limits_before


def test_pixel_cap_is_checked_before_decoding():
    # 81 MP is under Pillow's own limits but over ours. The file has no pixel
    # data, so if anything were decoded the error would say "damaged" instead.
    error = assert_load_fails(png_header_only(9000, 9000), "too_large", "81 megapixels", "9000 x 9000", "50 MP")
    assert "damaged" not in str(error)


def test_oversized_dimensions_against_a_small_cap(astronaut):
    encoded = pil_bytes(Image.fromarray(astronaut), "PNG")
    assert_load_fails(encoded, "too_large", "512 x 512", "the limit is 0.1 MP", max_pixels=100_000)
    assert load_image(encoded, max_pixels=512 * 512).pixels.shape == (512, 512, 3)


def test_zero_size_image_is_refused(tmp_path):
    zero = tmp_path / "zero.png"
    zero.write_bytes(png_header_only(0, 0))
    assert_load_fails(zero, "zero_size", "no pixels", "0 x 0")
    gif_zero_wide = b"GIF89a" + struct.pack("<HH", 0, 16) + b"\x00\x00\x00" + b";"
    assert_load_fails(gif_zero_wide, "zero_size", "no pixels", "0 x 16")


# --------------------------------------------------------------------------- orientation and colour modes


def test_exif_orientation_6_is_rotated_upright(tmp_path, coffee):
    # Orientation 6: the camera was turned; the viewer must rotate 90 degrees clockwise.
    exif = Image.Exif()
    exif[0x0112] = 6
    sideways = tmp_path / "portrait.jpg"
    Image.fromarray(coffee).save(sideways, "JPEG", quality=95, exif=exif.tobytes())

    loaded = load_image(sideways)
    assert (coffee.shape[0], coffee.shape[1]) == (400, 600)
    assert (loaded.height, loaded.width) == (600, 400)
    assert loaded.pixels.shape == (600, 400, 3)
    assert "Rotated upright from EXIF orientation." in loaded.notices
    clockwise, counter_clockwise = np.rot90(coffee, k=-1), np.rot90(coffee, k=1)
    assert mean_abs_diff(loaded.pixels, clockwise) < 3
    assert mean_abs_diff(loaded.pixels, counter_clockwise) > 20


def test_cmyk_jpeg_comes_back_as_rgb(astronaut):
    cmyk = Image.fromarray(astronaut).convert("CMYK")
    loaded = load_image(pil_bytes(cmyk, "JPEG", quality=95))
    assert loaded.source_mode == "CMYK"
    assert loaded.pixels.shape == (512, 512, 3) and loaded.pixels.dtype == np.uint8
    assert any("CMYK converted to RGB" in notice for notice in loaded.notices)
    assert mean_abs_diff(loaded.pixels, astronaut) < 4
    # Not inverted or channel-swapped: the red suit stays red.
    red_patch = loaded.pixels[300:340, 80:120].reshape(-1, 3).mean(axis=0)
    assert red_patch[0] > red_patch[2] + 40


def test_sixteen_bit_grey_png_is_scaled_not_clipped(tmp_path):
    ramp = np.arange(65536, dtype=np.uint32).reshape(256, 256).astype(np.uint16)  # 0..65535
    path = tmp_path / "ramp16.png"
    Image.fromarray(ramp).save(path)
    loaded = load_image(path)
    assert loaded.bit_depth == 16
    assert any("16 bits" in n for n in loaded.notices) and loaded.deep is not None  # kept at 16 bits for export
    grey = loaded.pixels[:, :, 0].ravel().astype(int)
    assert np.array_equal(loaded.pixels[:, :, 0], loaded.pixels[:, :, 2])
    assert np.all(np.diff(grey) >= 0), "a 16-bit ramp must stay a monotone ramp"
    assert grey[0] == 0 and grey[-1] == 255
    assert len(np.unique(grey)) == 256
    # Clipping would make everything above 255 white; scaling puts mid-grey in the middle.
    assert grey[32768] in (127, 128)
    assert np.array_equal(grey[257 * np.arange(256)], np.arange(256))


def test_sixteen_bit_colour_png_keeps_the_photo(astronaut):
    deep = astronaut.astype(np.uint16) * 257  # 8-bit photo spread over the 16-bit range
    ok, encoded = cv2.imencode(".png", cv2.cvtColor(deep, cv2.COLOR_RGB2BGR))
    assert ok
    loaded = load_image(encoded.tobytes())
    assert loaded.bit_depth == 16 and any("16 bits" in n for n in loaded.notices) and loaded.deep.dtype == np.uint16
    assert np.array_equal(loaded.pixels, astronaut)


def test_palette_png_with_transparency_is_flattened_onto_white(tmp_path):
    index = np.zeros((40, 60), dtype=np.uint8)
    index[:, 20:40] = 1  # a transparent band in the middle
    index[:, 40:] = 2
    palette = Image.fromarray(index, mode="P")
    palette.putpalette([200, 30, 30, 0, 0, 0, 30, 30, 200] + [0] * (256 * 3 - 9))
    path = tmp_path / "logo.png"
    palette.save(path, transparency=1)

    flat = load_image(path)
    assert flat.source_mode == "P" and flat.has_alpha
    assert flat.pixels.shape == (40, 60, 3)
    assert "Transparency flattened onto white." in flat.notices
    assert np.all(flat.pixels[:, 20:40] == 255)  # transparent -> white, not the black palette entry
    assert np.all(flat.pixels[:, :20] == (200, 30, 30))
    assert np.all(flat.pixels[:, 40:] == (30, 30, 200))

    on_black = load_image(path, background=(0, 0, 0))
    assert np.all(on_black.pixels[:, 20:40] == 0)
    assert "Transparency flattened onto black." in on_black.notices

    kept = load_image(path, alpha="keep")
    assert kept.pixels.shape == (40, 60, 4)
    assert np.all(kept.pixels[:, 20:40, 3] == 0) and np.all(kept.pixels[:, :20, 3] == 255)


def test_grey_with_alpha_is_blended_with_the_background():
    grey = data.camera()[::4, ::4]  # 128x128
    alpha = np.tile(np.linspace(0, 255, grey.shape[1]).round().astype(np.uint8), (grey.shape[0], 1))
    la = Image.merge("LA", (Image.fromarray(grey), Image.fromarray(alpha)))
    loaded = load_image(pil_bytes(la, "PNG"))
    assert loaded.source_mode == "LA" and loaded.pixels.shape == (128, 128, 3)
    a = alpha.astype(float) / 255
    expected = np.rint(grey * a + 255 * (1 - a))
    assert np.abs(loaded.pixels[:, :, 1].astype(float) - expected).max() <= 1
    assert np.all(loaded.pixels[:, 0] == 255)  # fully transparent column is white
    assert np.array_equal(loaded.pixels[:, -1, 0], grey[:, -1])  # fully opaque column is untouched


def test_animated_gif_gives_first_frame_and_a_notice(tmp_path):
    colours = [(220, 40, 40), (40, 200, 40), (40, 40, 220)]
    frames = [Image.new("RGB", (48, 32), colour) for colour in colours]
    path = tmp_path / "blink.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100, loop=0)
    loaded = load_image(path)
    assert loaded.format == "GIF"
    assert "Animated image: using the first frame." in loaded.notices
    assert loaded.pixels.shape == (32, 48, 3)
    assert np.abs(loaded.pixels.reshape(-1, 3).mean(axis=0) - colours[0]).max() < 6


def test_multi_page_tiff_gives_first_page(astronaut):
    pages = [Image.fromarray(astronaut), Image.fromarray(astronaut[::-1].copy())]
    encoded = pil_bytes(pages[0], "TIFF", save_all=True, append_images=pages[1:])
    loaded = load_image(encoded)
    assert "Multi-page TIFF: using the first page." in loaded.notices
    assert np.array_equal(loaded.pixels, astronaut)


def test_srgb_tagged_photo_is_left_alone(astronaut):
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    loaded = load_image(pil_bytes(Image.fromarray(astronaut), "PNG", icc_profile=srgb))
    assert loaded.notices == []
    assert np.array_equal(loaded.pixels, astronaut)


# --------------------------------------------------------------------------- round trips


def test_webp_round_trips(astronaut):
    lossless = load_image(pil_bytes(Image.fromarray(astronaut), "WEBP", lossless=True))
    assert lossless.format == "WEBP" and np.array_equal(lossless.pixels, astronaut)
    lossy = load_image(encode_image(astronaut, "webp", quality=92))
    assert lossy.format == "WEBP" and mean_abs_diff(lossy.pixels, astronaut) < 4


def test_sixteen_bit_tiff_round_trips(tmp_path, astronaut):
    ok, colour = cv2.imencode(".tiff", cv2.cvtColor(astronaut.astype(np.uint16) * 257, cv2.COLOR_RGB2BGR))
    assert ok
    loaded = load_image(colour.tobytes())
    assert loaded.format == "TIFF" and loaded.bit_depth == 16
    assert np.array_equal(loaded.pixels, astronaut)

    grey16 = data.camera().astype(np.uint16) * 257 + 100  # not a multiple of 257: rounding matters
    path = tmp_path / "camera16.tif"
    Image.fromarray(grey16).save(path, "TIFF")
    grey = load_image(path)
    assert grey.bit_depth == 16 and grey.source_mode.startswith("I;16")
    assert np.array_equal(grey.pixels[:, :, 0], np.rint(grey16 / 257).astype(np.uint8))


def test_path_and_bytes_give_identical_pixels(tmp_path, coffee):
    path = tmp_path / "coffee.jpg"
    Image.fromarray(coffee).save(path, "JPEG", quality=88)
    from_path, from_bytes = load_image(path), load_image(path.read_bytes())
    assert isinstance(from_path, LoadedImage)
    assert from_path.format == from_bytes.format == "JPEG"
    assert np.array_equal(from_path.pixels, from_bytes.pixels)
    assert from_path.pixels.dtype == np.uint8
    assert from_path.pixels.flags["C_CONTIGUOUS"] and from_path.pixels.flags["WRITEABLE"]
    assert (from_path.width, from_path.height) == (600, 400)


def test_encode_and_save_round_trip(tmp_path, astronaut):
    png = save_image(astronaut, tmp_path / "out.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    assert np.array_equal(load_image(png).pixels, astronaut)

    jpeg = save_image(astronaut, tmp_path / "out.JPG", quality=92)
    assert jpeg.read_bytes().startswith(b"\xff\xd8\xff")
    back = load_image(jpeg).pixels
    assert mean_abs_diff(back, astronaut) < 3
    # Colour order survives OpenCV's BGR world: the red suit is still red, not blue.
    assert back[300:340, 80:120, 0].mean() > back[300:340, 80:120, 2].mean() + 40

    tiff = save_image(astronaut, tmp_path / "out.tif")
    assert np.array_equal(load_image(tiff).pixels, astronaut)
    webp = save_image(astronaut, tmp_path / "out.bin", fmt="webp")
    assert load_image(webp).format == "WEBP"
    assert set(SUPPORTED_FORMATS) >= {"JPEG", "PNG", "WEBP", "TIFF"}

    with pytest.raises(ValueError, match="format"):
        save_image(astronaut, tmp_path / "out.bmp")
    with pytest.raises(ValueError, match="transparency"):
        encode_image(np.zeros((4, 4, 4), np.uint8), "jpeg")


def test_rgba_png_keeps_its_alpha_when_asked(astronaut):
    rgba = np.dstack([astronaut, np.linspace(0, 255, 512).astype(np.uint8)[None, :].repeat(512, 0)])
    kept = load_image(encode_image(rgba, "png"), alpha="keep")
    assert kept.pixels.shape == (512, 512, 4) and np.array_equal(kept.pixels, rgba)


# --------------------------------------------------------------------------- atomic writes


def leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name not in keep)


def test_atomic_save_leaves_no_temp_files_and_never_a_half_written_target(tmp_path, astronaut):
    target = tmp_path / "export.png"
    save_image(astronaut, target)
    before = target.read_bytes()
    assert leftovers(tmp_path, {"export.png"}) == []

    # A failing encode never touches the file that is already there.
    with pytest.raises(ValueError):
        save_image(np.zeros((8, 8), dtype=np.float32), target)
    assert target.read_bytes() == before
    assert leftovers(tmp_path, {"export.png"}) == []

    # A failing rename (the target is a folder) cleans up its temporary file.
    blocked = tmp_path / "blocked.png"
    blocked.mkdir()
    with pytest.raises(OSError):
        write_bytes_atomic(blocked, before)
    assert leftovers(tmp_path, {"export.png", "blocked.png"}) == []


def test_readers_see_the_old_file_or_the_new_one_never_half(tmp_path, astronaut):
    versions = [encode_image(astronaut, "png"), encode_image(astronaut[::-1].copy(), "png")]
    target = write_bytes_atomic(tmp_path / "original.png", versions[0])
    seen, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            seen.append(target.read_bytes())

    watcher = threading.Thread(target=reader)
    watcher.start()
    try:
        for i in range(30):
            write_bytes_atomic(target, versions[i % 2])
    finally:
        stop.set()
        watcher.join()
    assert seen, "the reader never got to read"
    assert all(content in versions for content in seen)
    assert leftovers(tmp_path, {"original.png"}) == []
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)


@pytest.mark.parametrize("shape", [(120, 160, 3), (120, 160, 4), (120, 160)])
def test_png_encoding_is_lossless_for_every_8_bit_layout(shape):
    from pipeline.imageio import encode_image

    rng = np.random.default_rng(3)
    pixels = rng.integers(0, 256, shape, dtype=np.uint8)
    pixels[:40] = 200  # a flat band and noise: both filter paths
    decoded = cv2.imdecode(np.frombuffer(encode_image(pixels, "png"), np.uint8), cv2.IMREAD_UNCHANGED)
    if decoded.ndim == 3:
        decoded = cv2.cvtColor(decoded, cv2.COLOR_BGR2RGB if shape[-1] == 3 else cv2.COLOR_BGRA2RGBA)
    assert decoded.dtype == np.uint8 and np.array_equal(decoded, pixels)
