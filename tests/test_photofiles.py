"""Files photographers have: RAW, 16-bit, colour profiles, transparency, metadata, export options.

RAW files are DNGs the tests write (an RGGB mosaic of a real photo, with a
known as-shot white balance); ICC profiles are built in code. Everything goes
through the real Studio on a real SQLite file.
"""

from __future__ import annotations

import io
import struct

import cv2
import numpy as np
import pytest
from PIL import Image
from skimage import data

from agent.service import InvalidInput
from conftest import ScriptedJudge, ScriptedPlanner
from pipeline.imageio import ImageLoadError, load_image
from pipeline.raw import to_8bit, write_cfa_dng
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState


@pytest.fixture
def studio(make_studio):
    return make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")


def test_a_dng_develops_with_the_camera_white_balance(tmp_path):
    photo = data.astronaut()
    path = tmp_path / "shot.dng"
    write_cfa_dng(photo, path, neutral=(0.45, 1.0, 0.65))  # a warm light: raw red and blue far apart
    loaded = load_image(path)
    assert loaded.format == "DNG" and loaded.bit_depth == 16 and loaded.deep.dtype == np.uint16
    assert loaded.pixels.shape == photo.shape
    # as-shot white balance undone: the photo's own colours come back (a bilinear demosaic softens edges)
    assert np.abs(loaded.pixels.astype(int) - photo.astype(int)).mean() < 6
    assert np.abs(loaded.pixels.reshape(-1, 3).mean(0) - photo.reshape(-1, 3).mean(0)).max() < 3
    assert "white balance" in loaded.notices[0]


def test_a_corrupt_raw_is_a_clear_error_and_no_session(studio, tmp_path):
    path = tmp_path / "broken.dng"
    write_cfa_dng(data.astronaut(), path)
    path.write_bytes(path.read_bytes()[:3000])
    with pytest.raises(ImageLoadError, match="RAW file is damaged") as exc:
        load_image(path)
    assert exc.value.reason == "damaged"
    before = studio.list_sessions()
    with pytest.raises(InvalidInput, match="RAW file is damaged"):
        studio.start_session(path)
    assert studio.list_sessions() == before
    nef = tmp_path / "not-really.nef"
    nef.write_bytes(b"II*\x00" + b"\x00" * 200)
    with pytest.raises(InvalidInput, match="RAW"):
        studio.start_session(nef)


def test_raw_session_edits_and_exports_at_16_bits(studio, tmp_path):
    path = tmp_path / "shot.dng"
    write_cfa_dng(data.astronaut(), path)
    info = studio.start_session(path)
    studio.send_message(info.id, "exposure+20")
    png = cv2.imread(str(studio.export(info.id, fmt="png")), cv2.IMREAD_UNCHANGED)
    tif = cv2.imread(str(studio.export(info.id, fmt="tiff")), cv2.IMREAD_UNCHANGED)
    jpg = cv2.imread(str(studio.export(info.id, fmt="jpeg")), cv2.IMREAD_UNCHANGED)
    assert png.dtype == np.uint16 and tif.dtype == np.uint16 and jpg.dtype == np.uint8
    shown = studio.render(info.id, long_side=None)
    assert np.abs(to_8bit(png[..., ::-1]).astype(int) - shown.astype(int)).max() <= 2


def _gradient16() -> np.ndarray:
    x = np.linspace(0, 65535, 1200)
    return np.ascontiguousarray(np.stack([np.tile(x, (60, 1))] * 3, -1).astype(np.uint16))


def test_16_bit_png_and_tiff_stay_16_bit_through_render_and_export(studio):
    grad = _gradient16()
    ok, png = cv2.imencode(".png", grad)
    info = studio.start_session(png.tobytes(), filename="ramp.png")
    assert any("16 bits" in n for n in info.notices)
    # unedited: the export is the original, bit for bit
    out = cv2.imread(str(studio.export(info.id, fmt="png")), cv2.IMREAD_UNCHANGED)
    assert out.dtype == np.uint16 and np.array_equal(out, grad)
    # edited: far more than 256 levels survive (no 8-bit banding), and it matches the 8-bit preview
    studio.send_message(info.id, "exposure+30 contrast+20")
    out = cv2.imread(str(studio.export(info.id, fmt="tiff")), cv2.IMREAD_UNCHANGED)[..., ::-1]
    assert out.dtype == np.uint16 and len(np.unique(out[0, :, 1])) > 900
    preview = studio.render(info.id, long_side=None)
    assert len(np.unique(preview[0, :, 1])) <= 256
    assert np.abs(to_8bit(out).astype(int) - preview.astype(int)).max() <= 1


def test_the_8_bit_render_of_a_16_bit_original_is_unchanged_by_the_16_bit_path():
    grad = _gradient16()
    ok, png = cv2.imencode(".png", grad)
    source = SourceImage.from_loaded(load_image(png.tobytes()))
    renderer = Renderer()
    state = EditState.from_dict({"settings": {"exposure": 30}})
    plain = Renderer().render(SourceImage.from_array(source.pixels), state)
    assert np.array_equal(renderer.render(source, state), plain)


# -- colour profiles built in code ---------------------------------------------------------------

def _s15(v: float) -> bytes:
    return struct.pack(">i", int(round(v * 65536)))


def _icc(name: str, red, green, blue, gamma: float) -> bytes:
    """A minimal ICC v2 RGB display profile: D50 primaries (XYZ) and one gamma per channel."""
    def xyz(v):
        return b"XYZ " + b"\0" * 4 + b"".join(_s15(c) for c in v)

    def desc(text):
        t = text.encode("ascii") + b"\0"
        return b"desc" + b"\0" * 4 + struct.pack(">I", len(t)) + t + b"\0" * 4 + b"\0" * 4 + b"\0" * 2 + b"\0" + b"\0" * 67

    curve = b"curv" + b"\0" * 4 + struct.pack(">I", 1) + struct.pack(">H", int(round(gamma * 256))) + b"\0\0"
    tags = [(b"desc", desc(name)), (b"wtpt", xyz((0.9642, 1.0, 0.8249))), (b"rXYZ", xyz(red)),
            (b"gXYZ", xyz(green)), (b"bXYZ", xyz(blue)), (b"rTRC", curve), (b"gTRC", curve), (b"bTRC", curve),
            (b"cprt", b"text" + b"\0" * 4 + b"none\0\0\0\0")]
    offset = 128 + 4 + 12 * len(tags)
    table, blobs = b"", b""
    for sig, body in tags:
        while (offset + len(blobs)) % 4:
            blobs += b"\0"
        table += sig + struct.pack(">II", offset + len(blobs), len(body))
        blobs += body
    body = struct.pack(">I", len(tags)) + table + blobs
    size = 128 + len(body)
    header = (struct.pack(">I", size) + b"lcms" + bytes([2, 0x10, 0, 0]) + b"mntrRGB XYZ " + b"\0" * 12
              + b"acsp" + b"APPL" + b"\0" * 4 + b"\0" * 8 + b"\0" * 8 + b"\0" * 4
              + _s15(0.9642) + _s15(1.0) + _s15(0.8249) + b"lcms" + b"\0" * 44)
    assert len(header) == 128
    return header + body


DISPLAY_P3 = _icc("Display P3", (0.5151, 0.2412, -0.0011), (0.2920, 0.6922, 0.0419), (0.1571, 0.0666, 0.7841), 2.2)
ADOBE_RGB = _icc("Adobe RGB (1998)", (0.6097, 0.3111, 0.0195), (0.2053, 0.6257, 0.0609),
                 (0.1492, 0.0632, 0.7446), 2.19921875)


@pytest.mark.parametrize("name, icc", [("Display P3", DISPLAY_P3), ("Adobe RGB (1998)", ADOBE_RGB)])
def test_wide_gamut_profiles_are_converted_to_srgb(studio, name, icc):
    img = np.zeros((40, 80, 3), np.uint8)
    img[:, :40] = (128, 128, 128)   # a neutral grey
    img[:, 40:] = (200, 40, 40)     # a saturated red in the wide space
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, "PNG", icc_profile=icc)
    loaded = load_image(buf.getvalue())
    assert any(name in n and "sRGB" in n for n in loaded.notices), loaded.notices
    grey, red = loaded.pixels[20, 10].astype(int), loaded.pixels[20, 60].astype(int)
    assert grey.max() - grey.min() <= 2                      # grey stays grey
    assert red[0] > 200 and red[1] < 40 and red[2] < 40      # the wider red is redder in sRGB numbers
    info = studio.start_session(buf.getvalue(), filename="wide.png")
    exported = Image.open(studio.export(info.id, fmt="jpeg"))
    from PIL import ImageCms

    embedded = ImageCms.ImageCmsProfile(io.BytesIO(exported.info["icc_profile"]))
    assert "sRGB" in ImageCms.getProfileDescription(embedded)


# -- transparency --------------------------------------------------------------------------------

def test_transparency_is_kept_and_edits_do_not_tint_the_clear_area(studio):
    rgba = np.zeros((90, 140, 4), np.uint8)
    rgba[..., :3] = (120, 140, 160)
    rgba[20:70, 30:110, 3] = 255
    rgba[20:70, 30:40, 3] = 128
    ok, png = cv2.imencode(".png", cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGRA))
    info = studio.start_session(png.tobytes(), filename="logo.png")
    assert any("Transparency kept" in n for n in info.notices)
    studio.send_message(info.id, "temperature+60")
    for fmt in ("png", "tiff"):
        out = np.asarray(Image.open(studio.export(info.id, fmt=fmt)).convert("RGBA"))
        assert np.array_equal(out[..., 3], rgba[..., 3])
        clear = rgba[..., 3] == 0
        assert np.array_equal(out[clear][:, :3], rgba[clear][:, :3])   # no tint where nothing shows
        assert out[40, 80, 0] > rgba[40, 80, 0] and out[40, 80, 2] < rgba[40, 80, 2]  # warmer where it shows
    jpg = np.asarray(Image.open(studio.export(info.id, fmt="jpeg")))
    assert jpg[5, 5].min() >= 250  # flattened onto white


# -- metadata and export options -------------------------------------------------------------------

def _jpeg_with_exif() -> bytes:
    exif = Image.Exif()
    exif[0x010F] = "Atelier"
    exif[0x0110] = "Test Camera"
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2] = "N", (52.0, 31.0, 12.0)
    buf = io.BytesIO()
    Image.fromarray(data.astronaut()).save(buf, "JPEG", quality=92, exif=exif.tobytes())
    return buf.getvalue()


def test_exports_keep_exif_and_drop_gps_by_default(studio):
    info = studio.start_session(_jpeg_with_exif(), filename="holiday.jpg")
    studio.send_message(info.id, "exposure+10")
    default = Image.open(studio.export(info.id)).getexif()
    assert default.get(0x010F) == "Atelier" and default.get(0x0110) == "Test Camera"
    assert not default.get_ifd(0x8825)
    with_gps = Image.open(studio.export(info.id, drop_gps=False)).getexif()
    assert with_gps.get_ifd(0x8825).get(1) == "N"
    bare = Image.open(studio.export(info.id, keep_metadata=False)).getexif()
    assert bare.get(0x010F) is None
    for fmt in ("png", "webp"):
        assert Image.open(studio.export(info.id, fmt=fmt)).getexif().get(0x010F) == "Atelier"


def test_export_quality_and_long_side(studio):
    info = studio.start_session(data.astronaut())
    small = studio.export(info.id, fmt="jpeg", quality=40, long_side=200)
    big = studio.export(info.id, fmt="jpeg", quality=95, long_side=200)
    assert Image.open(small).size == (200, 200) and small.stat().st_size < big.stat().st_size
    assert Image.open(studio.export(info.id, fmt="webp", long_side=300)).size == (300, 300)
    assert Image.open(studio.export(info.id)).size == (512, 512)   # full resolution, never upscaled
    for bad in ({"quality": 0}, {"quality": 101}, {"long_side": 3}, {"fmt": "bmp"}):
        with pytest.raises(InvalidInput):
            studio.export(info.id, **bad)


def test_pipeline_apply_develops_raw_and_keeps_16_bits(tmp_path):
    from pipeline.apply import main

    write_cfa_dng(data.astronaut(), tmp_path / "shot.dng")
    assert main([str(tmp_path / "shot.dng"), str(tmp_path / "out.png"), "--set", "exposure=10"]) == 0
    out = cv2.imread(str(tmp_path / "out.png"), cv2.IMREAD_UNCHANGED)
    assert out.dtype == np.uint16 and out.shape == (512, 512, 3)
    src = tmp_path / "holiday.jpg"
    src.write_bytes(_jpeg_with_exif())
    assert main([str(src), str(tmp_path / "kept.jpg")]) == 0
    assert main([str(src), str(tmp_path / "bare.jpg"), "--strip-metadata"]) == 0
    kept = Image.open(tmp_path / "kept.jpg").getexif()
    assert kept.get(0x010F) == "Atelier" and not kept.get_ifd(0x8825)
    assert Image.open(tmp_path / "bare.jpg").getexif().get(0x010F) is None
