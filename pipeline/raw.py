"""RAW files (DNG, CR2, CR3, NEF, ARW, RAF, ORF) developed through rawpy / LibRaw to 16-bit sRGB.

:func:`develop` gives an upright uint16 RGB image with the camera's white
balance (as shot), the camera's colour matrix to sRGB and the sRGB tone
curve; no auto-brightening, so a RAW looks like its exposure. Bayer sensors
(nearly all) are demosaiced with OpenCV's bilinear-plus-edge-aware Bayer
conversion on the raw data LibRaw unpacks, which is several times faster than
LibRaw's own pipeline on a 24 MP file; other sensors (Fuji X-Trans, Foveon,
linear DNGs) go through LibRaw's ``postprocess``.

A file that LibRaw cannot read is a :class:`RawError` whose message a person
understands; :mod:`pipeline.imageio` turns it into an ``ImageLoadError``.
"""

from __future__ import annotations

import io

import cv2
import numpy as np

#: File suffixes treated as RAW (lower case, with the dot).
RAW_SUFFIXES: tuple[str, ...] = (".dng", ".cr2", ".cr3", ".nef", ".arw", ".raf", ".orf")


class RawError(ValueError):
    """A RAW file that could not be developed; the message is for a person."""


def looks_like_raw(head: bytes, name: str | None) -> bool:
    """Is this a RAW file? By suffix, or by the signatures that plain TIFF/JPEG never carry."""
    if name and any(name.lower().endswith(s) for s in RAW_SUFFIXES):
        return True
    if head.startswith(b"FUJIFILMCCD-RAW"):
        return True  # RAF
    if head[:4] in (b"IIRO", b"IIRS", b"MMOR"):
        return True  # ORF
    if head[4:8] == b"ftyp" and head[8:12] == b"crx ":
        return True  # CR3
    if head[:4] in (b"II*\x00", b"MM\x00*") and head[8:10] == b"CR":
        return True  # CR2
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return _tiff_is_dng(head)
    return False


def _tiff_is_dng(head: bytes) -> bool:
    """A TIFF whose first IFD carries DNGVersion (50706) or a CFA photometric (32803)."""
    try:
        import struct

        order = "<" if head[:2] == b"II" else ">"
        (offset,) = struct.unpack(order + "I", head[4:8])
        (count,) = struct.unpack(order + "H", head[offset:offset + 2])
        for i in range(count):
            entry = head[offset + 2 + 12 * i: offset + 14 + 12 * i]
            if len(entry) < 12:
                return False
            tag, typ = struct.unpack(order + "HH", entry[:4])
            if tag == 50706:
                return True
            if tag == 262 and typ == 3:
                (value,) = struct.unpack(order + "H", entry[8:10])
                if value in (32803, 34892):  # CFA, LinearRaw
                    return True
        return False
    except Exception:
        return False


def raw_size(data: bytes) -> tuple[int, int]:
    """(width, height) of the developed image, read from the header without developing."""
    rawpy = _rawpy()
    try:
        with rawpy.imread(io.BytesIO(data)) as r:
            s = r.sizes
            w, h = int(s.width), int(s.height)
            return (h, w) if s.flip in (5, 6) else (w, h)
    except Exception as exc:
        raise RawError(_message(exc)) from None


def develop(data: bytes, *, fast: bool = True, half_size: bool = False) -> np.ndarray:
    """Develop RAW bytes to an upright uint16 sRGB image (HxWx3), camera white balance as shot.

    ``half_size``: each 2x2 block of the sensor becomes one pixel (its red, the mean of its two greens,
    its blue): half the width and height, no demosaicing, a quarter of the work; what a first preview
    needs (the same colours as the full develop, which export uses).
    """
    rawpy = _rawpy()
    try:
        with rawpy.imread(io.BytesIO(data)) as r:
            bayer = r.num_colors == 3 and r.raw_pattern is not None and r.raw_pattern.shape == (2, 2)
            if fast and bayer:
                return _fast_develop(r, half_size)
            out = r.postprocess(use_camera_wb=True, output_bps=16, no_auto_bright=True, gamma=(2.4, 12.92),
                                demosaic_algorithm=rawpy.DemosaicAlgorithm.LINEAR, half_size=half_size,
                                output_color=rawpy.ColorSpace.sRGB)
            return np.ascontiguousarray(out)
    except RawError:
        raise
    except Exception as exc:
        raise RawError(_message(exc)) from None


def _rawpy():
    try:
        import rawpy
    except ImportError:  # pragma: no cover - rawpy is a requirement
        raise RawError("RAW files need the rawpy package, which is not installed.") from None
    return rawpy


def _message(exc: Exception) -> str:
    kind = type(exc).__name__
    if "Unsupported" in kind:
        return "This RAW file is not one LibRaw can read (unsupported or not really a RAW file)."
    return f"This RAW file is damaged or incomplete and could not be developed ({kind})."


# OpenCV names Bayer patterns by the second row's pixels: a sensor whose top-left 2x2 is
# R G / G B is "BayerBG" to OpenCV.
_CV_BAYER = {"RGGB": cv2.COLOR_BayerBG2RGB, "BGGR": cv2.COLOR_BayerRG2RGB,
             "GRBG": cv2.COLOR_BayerGB2RGB, "GBRG": cv2.COLOR_BayerGR2RGB}


def _srgb_curve16() -> np.ndarray:
    x = np.linspace(0.0, 1.0, 65536)
    y = np.where(x <= 0.0031308, 12.92 * x, 1.055 * np.power(x, 1 / 2.4) - 0.055)
    return np.clip(y * 65535.0 + 0.5, 0, 65535).astype(np.uint16)


_CURVE = None


def _fast_develop(r, half_size: bool = False) -> np.ndarray:
    """Bayer RAW -> uint16 sRGB: all in OpenCV's 16-bit paths (demosaic, one 3x3 transform, a curve),
    in place where it can be (the peak is the sensor data plus one 16-bit RGB frame)."""
    global _CURVE
    desc = r.color_desc.decode()
    pattern = "".join(desc[i] for i in r.raw_pattern.ravel())
    if pattern not in _CV_BAYER:
        raise RawError(f"Unexpected colour filter pattern {pattern!r}.")
    raw = r.raw_image_visible
    h, w = raw.shape
    raw = raw[:h - h % 2, :w - w % 2]
    black = float(np.mean(r.black_level_per_channel))
    white = float(r.white_level)
    wb = np.asarray(r.camera_whitebalance[:3], np.float32)
    if not np.all(wb > 0):
        wb = np.asarray(r.daylight_whitebalance[:3], np.float32)
    wb = wb / wb[1]
    if black > 0:
        raw = cv2.subtract(np.ascontiguousarray(raw), black)
    if half_size:
        rgb = _half_size_rgb(raw, pattern)
    else:
        rgb = cv2.cvtColor(np.ascontiguousarray(raw), _CV_BAYER[pattern])
    del raw
    # White balance, camera RGB -> linear sRGB (LibRaw's rgb_cam) and the 0..white -> 0..65535 scale
    # folded into one matrix, applied in place with saturation at 16 bits.
    m = np.asarray(r.color_matrix, np.float32)[:, :3]
    if not np.isfinite(m).all() or abs(float(m.sum())) < 1e-6:
        m = np.eye(3, dtype=np.float32)
    full = (m * wb[None, :]) * np.float32(65535.0 / max(1.0, white - black))
    cv2.transform(rgb, full, dst=rgb)
    if _CURVE is None:
        _CURVE = _srgb_curve16()
    for y in range(0, rgb.shape[0], 64):  # the tone curve in place, a band at a time (no second frame)
        rgb[y:y + 64] = _CURVE[rgb[y:y + 64]]
    flip = int(r.sizes.flip)
    if flip == 3:
        return cv2.rotate(rgb, cv2.ROTATE_180)
    if flip == 5:
        return cv2.rotate(rgb, cv2.ROTATE_90_COUNTERCLOCKWISE)
    if flip == 6:
        return cv2.rotate(rgb, cv2.ROTATE_90_CLOCKWISE)
    return rgb


def _half_size_rgb(raw: np.ndarray, pattern: str) -> np.ndarray:
    """One RGB pixel per 2x2 sensor block (red, mean of the greens, blue), uint16."""
    sites = {(i, j): pattern[2 * i + j] for i in (0, 1) for j in (0, 1)}
    planes = {c: [np.ascontiguousarray(raw[i::2, j::2]) for (i, j), k in sites.items() if k == c] for c in "RGB"}
    green = cv2.addWeighted(planes["G"][0], 0.5, planes["G"][1], 0.5, 0.0)
    return cv2.merge([planes["R"][0], green, planes["B"][0]])


def to_8bit(deep: np.ndarray) -> np.ndarray:
    """uint16 -> uint8, rounded to nearest (65535 -> 255): ``(v + 128) // 257``, in one OpenCV pass
    (no 32-bit temporaries: 12 bytes a pixel less at the peak)."""
    return cv2.convertScaleAbs(np.ascontiguousarray(deep), alpha=1.0 / 257.0)


#: XYZ (D65) -> linear sRGB, the colour matrix of :func:`write_cfa_dng`'s make-believe camera.
_XYZ_TO_SRGB = np.array([[3.2404542, -1.5371385, -0.4985314], [-0.9692660, 1.8760108, 0.0415560],
                         [0.0556434, -0.2040259, 1.0572252]])


def write_cfa_dng(rgb: np.ndarray, path, *, neutral=(0.5, 1.0, 0.7), white: int = 16383,
                  exif_make: str = "Atelier", exif_model: str = "Test Camera") -> None:
    """Write an RGGB Bayer DNG that records ``rgb`` (uint8 sRGB) as a camera would under a
    light whose white balance is ``neutral`` (AsShotNeutral; developing with the camera's white
    balance gives the photo back). For tests and the benchmark: nothing is downloaded."""
    import tifffile

    lut = np.linspace(0, 1, 256, dtype=np.float32)
    lut = np.where(lut <= 0.04045, lut / 12.92, ((lut + 0.055) / 1.055) ** 2.4).astype(np.float32)
    h, w = rgb.shape[0] - rgb.shape[0] % 2, rgb.shape[1] - rgb.shape[1] % 2
    cfa = np.empty((h, w), np.float32)
    n = np.asarray(neutral, np.float32) * white
    cfa[0::2, 0::2] = lut[rgb[0:h:2, 0:w:2, 0]] * n[0]
    cfa[0::2, 1::2] = lut[rgb[0:h:2, 1:w:2, 1]] * n[1]
    cfa[1::2, 0::2] = lut[rgb[1:h:2, 0:w:2, 1]] * n[1]
    cfa[1::2, 1::2] = lut[rgb[1:h:2, 1:w:2, 2]] * n[2]
    raw = np.clip(cfa + 0.5, 0, white).astype(np.uint16)

    def srational(values):
        out = []
        for v in values:
            out += [int(round(float(v) * 10000)), 10000]
        return out

    tags = [(33421, 3, 2, (2, 2), True), (33422, 1, 4, (0, 1, 1, 2), True),
            (50706, 1, 4, (1, 4, 0, 0), True), (50707, 1, 4, (1, 1, 0, 0), True),
            (50708, 2, 0, f"{exif_make} {exif_model}", True), (271, 2, 0, exif_make, True),
            (272, 2, 0, exif_model, True), (50714, 4, 1, 0, True), (50717, 4, 1, int(white), True),
            (50721, 10, 9, srational(_XYZ_TO_SRGB.ravel()), True), (50778, 3, 1, 21, True),
            (50728, 5, 3, srational(neutral), True)]
    tifffile.imwrite(path, raw, photometric=32803, planarconfig=1, extratags=tags, subfiletype=0)
