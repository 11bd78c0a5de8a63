"""Safe image loading and encoding: the one door pixels come in and go out by.

Loading (:func:`load_image`) takes a path or the uploaded bytes and returns
8-bit RGB pixels a photographer would recognise as their photo:

- only an allow-list of formats is ever parsed (:data:`SUPPORTED_FORMATS`):
  JPEG (including multi-picture MPO files), PNG, WebP, TIFF (8/16-bit) and
  GIF. GIF is accepted because people do upload them; an animated GIF, WebP,
  APNG or a multi-page TIFF gives its first frame/page and a notice;
- the pixel count is read from the header and checked against ``max_pixels``
  *before* anything is decoded (Pillow's ``Image.open`` is lazy), so a
  decompression bomb fails in microseconds with a message, not an OOM;
- the whole image is then decoded inside the guard, so a truncated or damaged
  file fails here, even if some other library switched Pillow's global
  ``ImageFile.LOAD_TRUNCATED_IMAGES`` on (we watch the reads ourselves);
- EXIF orientation is applied, CMYK and non-sRGB colour profiles are
  converted to sRGB through the embedded ICC profile, palette / grey / 16-bit /
  32-bit modes are converted (16-bit is *scaled*, 65535 -> 255, never
  clipped), and transparency is flattened onto a background on purpose (or
  kept with ``alpha="keep"``).

Every loading failure is an :class:`ImageLoadError` whose message a person
understands; ``reason`` says which kind of failure it was, for callers.

Encoding (:func:`encode_image`, :func:`save_image`) writes JPEG, PNG, TIFF or
WebP. JPEG and PNG go through OpenCV (``cv2.imencode``): on a 4K frame it is
about 25-30 % faster than Pillow for byte-identical JPEG output (same
libjpeg-turbo, same 4:2:0 subsampling), and the 4K turn benchmark includes a
JPEG export. Files are written atomically (:func:`write_bytes_atomic`): a
temporary file in the same folder, flushed, fsynced, then ``os.replace``.

Pillow's process-wide settings (``Image.MAX_IMAGE_PIXELS``,
``ImageFile.LOAD_TRUNCATED_IMAGES``) are never changed here: changing them is
not thread-safe and would leak into other callers.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Union

import cv2
import numpy as np
from PIL import ExifTags, Image, ImageCms, ImageFile, ImageOps, UnidentifiedImageError

from pipeline import admission
from pipeline.raw import RAW_SUFFIXES, RawError, develop, looks_like_raw, raw_size
from pipeline.raw import to_8bit as raw_to_8bit

#: Pillow format names Atelier opens. Nothing else is ever parsed.
#: (Pillow reports multi-picture JPEGs as "MPO"; they are opened by the JPEG
#: plugin and reported to callers as "JPEG".)
SUPPORTED_FORMATS: tuple[str, ...] = ("JPEG", "PNG", "WEBP", "TIFF", "GIF")

#: File suffixes for upload pickers (lower case, with the dot); RAW files are developed by pipeline.raw.
UPLOAD_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".gif",
                                    ".dng", ".cr2", ".cr3", ".nef", ".arw", ".raf", ".orf")

#: Export formats for :func:`encode_image` / :func:`save_image`.
EXPORT_FORMATS: tuple[str, ...] = ("jpeg", "png", "tiff", "webp")

#: Default pixel cap: 50 megapixels.
DEFAULT_MAX_PIXELS = 50_000_000

#: Default export quality for JPEG/WebP (1..100).
DEFAULT_QUALITY = 92

#: zlib level for PNG export: 1 is ~2x faster than 3 at 4K for a ~8 % bigger file.
PNG_COMPRESSION = 1

#: 8-bit PNGs (every turn's proxy render is one) use the Paeth filter on every row with
#: zlib's run-length strategy: on photos 30-45 % less CPU than libpng's per-row filter
#: search, and 10-20 % smaller files (a flat graphic or a gradient stays tiny). 16-bit
#: PNGs keep the defaults, which compress them better. Lossless either way: same pixels.
PNG_FAST_PARAMS = (cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_PAETH,
                   cv2.IMWRITE_PNG_STRATEGY, cv2.IMWRITE_PNG_STRATEGY_RLE)

_SUFFIX_TO_FORMAT = {
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".jpe": "jpeg",
    ".png": "png",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".webp": "webp",
}

_FORMAT_ALIASES = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png", "tif": "tiff", "tiff": "tiff", "webp": "webp"}


_EXIF_ORIENTATION = ExifTags.Base.Orientation

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]


def describe_supported() -> str:
    """One line for error messages and upload hints: which files Atelier opens."""
    return ("Supported: JPEG, PNG, WebP, TIFF (8/16-bit), GIF (first frame) and RAW "
            "(DNG, CR2, CR3, NEF, ARW, RAF, ORF).")


class ImageLoadError(ValueError):
    """An image Atelier cannot or will not open; the message is for a person.

    ``reason`` is one of ``"missing"``, ``"empty"``, ``"unsupported"``,
    ``"zero_size"``, ``"too_large"``, ``"damaged"``, ``"colour_mode"``.
    """

    def __init__(self, message: str, *, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass
class LoadedImage:
    """A decoded image, ready for the pipeline.

    ``pixels``: uint8, C-contiguous, HxWx3 RGB (HxWx4 RGBA only when loaded
    with ``alpha="keep"`` and the source has an alpha channel), already
    upright and in sRGB. ``format``: "JPEG", "PNG", "WEBP", "TIFF" or "GIF".
    ``width``/``height``: of ``pixels`` (after EXIF rotation), in pixels.
    ``notices``: sentences for the person about what was changed on the way
    in ("Transparency flattened onto white."). ``has_alpha``: the source had
    transparency information. ``source_mode``: Pillow's mode of the file
    ("RGB", "CMYK", "P", "I;16", ...). ``bit_depth``: bits per channel in the
    file (1, 8, 16 or 32). ``deep``: uint16 HxWx3 sRGB for 16-bit PNG / TIFF
    files and developed RAWs (``pixels`` is then its rounding to 8 bits), else
    None. ``exif``: the file's EXIF block (bytes) when it has one. ``draft``: the
    pixels are a quick half-size develop of a RAW (``load_image(draft_long_side=)``).
    """

    pixels: np.ndarray
    format: str
    width: int
    height: int
    notices: list[str] = field(default_factory=list)
    has_alpha: bool = False
    source_mode: str = "RGB"
    bit_depth: int = 8
    deep: np.ndarray | None = None
    exif: bytes | None = None
    draft: bool = False

    @property
    def megapixels(self) -> float:
        return self.width * self.height / 1e6


# --------------------------------------------------------------------------- loading


def load_image(
    source: Source,
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    alpha: str = "flatten",
    background: tuple[int, int, int] = (255, 255, 255),
    name: str | None = None,
    draft_long_side: int | None = None,
) -> LoadedImage:
    """Open a photo from a path or from bytes, safely, as 8-bit sRGB pixels.

    ``max_pixels``: cap on width x height, checked from the header before
    decoding (default 50 MP). Pillow refuses anything above twice its global
    ``Image.MAX_IMAGE_PIXELS`` (about 179 MP) on its own, so the effective cap
    is the smaller of the two. ``alpha``: ``"flatten"`` (default) composites
    transparency onto ``background`` (RGB, 0..255 each, default white) and
    returns HxWx3; ``"keep"`` returns HxWx4 RGBA for sources with alpha.
    ``name``: the file name of uploaded bytes (tells RAW formats without a
    signature, such as NEF and ARW, from plain TIFF). ``draft_long_side``: the
    photo is wanted at this long side or less (a first preview): a RAW file whose
    half-size develop still covers it is developed at half size (a quarter of the
    work; ``draft`` is then True and a later load without it gives full quality).

    Decoding reserves its estimated peak memory from :mod:`pipeline.admission`
    first (read from the header), so concurrent large decodes queue instead of
    stacking up.

    Raises :class:`ImageLoadError` for anything a person could have uploaded
    wrong; ``ValueError``/``TypeError`` for bad arguments.
    """
    _check_arguments(max_pixels, alpha, background)
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        if not data:
            raise ImageLoadError("The file is empty.", reason="empty")
        if looks_like_raw(data[:65536], name):
            return _load_raw(data, name, max_pixels, draft_long_side)
        with _WatchedBytes(data) as fp:
            return _decode(fp, name, max_pixels, alpha, tuple(background), lambda: data)
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        name = path.name
        try:
            raw = io.FileIO(path, "r")
        except FileNotFoundError:
            raise ImageLoadError(f"There is no file named {name!r}.", reason="missing") from None
        except IsADirectoryError:
            raise ImageLoadError(f"{name!r} is a folder, not an image file.", reason="missing") from None
        except OSError as exc:
            raise ImageLoadError(f"The file {name!r} could not be read ({exc.strerror}).", reason="missing") from exc
        with _WatchedReader(raw) as fp:
            if os.fstat(raw.fileno()).st_size == 0:
                raise ImageLoadError("The file is empty.", reason="empty")
            if looks_like_raw(fp.peek(65536)[:65536], name):
                raw.seek(0)
                return _load_raw(raw.readall(), name, max_pixels, draft_long_side)
            return _decode(fp, name, max_pixels, alpha, tuple(background), path.read_bytes)
    raise TypeError(f"source must be a path or bytes, not {type(source).__name__}")


def _check_arguments(max_pixels, alpha, background) -> None:
    if not isinstance(max_pixels, int) or isinstance(max_pixels, bool) or max_pixels < 1:
        raise ValueError(f"max_pixels must be a positive int, got {max_pixels!r}")
    if alpha not in ("flatten", "keep"):
        raise ValueError(f'alpha must be "flatten" or "keep", got {alpha!r}')
    if len(tuple(background)) != 3 or not all(
        isinstance(v, (int, np.integer)) and 0 <= v <= 255 for v in background
    ):
        raise ValueError(f"background must be three ints 0..255 (RGB), got {background!r}")


class _EndOfDataWatch:
    """Mixin: remember whether a read asked for data and found the end of the file.

    Pillow only reports truncation while ``ImageFile.LOAD_TRUNCATED_IMAGES`` is
    off; this lets us notice it ourselves when another library turned it on.
    """

    ran_out = False

    def read(self, size=-1, /):  # noqa: D401 - file protocol
        data = super().read(size)
        if size is not None and size > 0 and not data:
            self.ran_out = True
        return data


class _WatchedBytes(_EndOfDataWatch, io.BytesIO):
    pass


class _WatchedReader(_EndOfDataWatch, io.BufferedReader):
    pass


def _decode(fp, name: str | None, max_pixels: int, alpha: str, background: tuple,
            read: "Callable[[], bytes]") -> LoadedImage:
    im = _open_lazily(fp, name, max_pixels)
    with im:
        width, height = im.size
        if width == 0 or height == 0:
            raise ImageLoadError(f"The image has no pixels ({width} x {height}).", reason="zero_size")
        _check_pixel_count(width, height, max_pixels)
        bit_depth = _bit_depth(im)
        with admission.reserve(admission.decode_bytes(width, height, bit_depth), what=f"opening {name or 'a photo'}"):
            return _with_depth(_decode_pixels(im, fp, alpha, background, bit_depth), read)


def _decode_pixels(im: Image.Image, fp, alpha: str, background: tuple, bit_depth: int) -> LoadedImage:
    direct = _decode_with_opencv(im, fp, alpha, bit_depth)
    if direct is not None:
        return direct
    fmt = "JPEG" if im.format == "MPO" else im.format
    notices: list[str] = []
    source_mode = im.mode
    frames = _decode_fully(im, fp)
    if frames:
        notices.append(frames)

    orientation = _orientation(im)
    icc = im.info.get("icc_profile")
    exif = _exif_bytes(im)
    if orientation in range(2, 9):
        im = ImageOps.exif_transpose(im)
        notices.append("Rotated upright from EXIF orientation.")
    rgb, alpha_channel, mode_notices = _to_rgb8(im, source_mode, bit_depth, icc)
    notices.extend(mode_notices)

    has_alpha = alpha_channel is not None
    if has_alpha and alpha == "keep":
        pixels = np.dstack([rgb, alpha_channel])
    elif has_alpha:
        pixels = rgb
        if (alpha_channel < 255).any():
            pixels = _flatten(rgb, alpha_channel, background)
            notices.append(f"Transparency flattened onto {_colour_name(background)}.")
    else:
        pixels = rgb
    pixels = np.ascontiguousarray(pixels, dtype=np.uint8)
    if not pixels.flags.writeable:  # arrays straight from Pillow wrap read-only bytes
        pixels = pixels.copy()
    return LoadedImage(
        pixels=pixels,
        format=fmt,
        width=pixels.shape[1],
        height=pixels.shape[0],
        notices=notices,
        has_alpha=has_alpha,
        source_mode=source_mode,
        bit_depth=bit_depth,
        exif=exif,
    )


# --------------------------------------------------------------------------- OpenCV's direct decode

# EXIF orientation (2..8) -> the transform that makes the pixels upright (as ImageOps.exif_transpose does).
_UPRIGHT = {
    2: lambda a: cv2.flip(a, 1),
    3: lambda a: cv2.rotate(a, cv2.ROTATE_180),
    4: lambda a: cv2.flip(a, 0),
    5: cv2.transpose,
    6: lambda a: cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE),
    7: lambda a: cv2.rotate(cv2.transpose(a), cv2.ROTATE_180),
    8: lambda a: cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE),
}

_PNG_END = b"IEND\xaeB`\x82"


def _decode_with_opencv(im: Image.Image, fp, alpha: str, bit_depth: int) -> LoadedImage | None:
    """The common files decoded by OpenCV straight into the arrays Atelier keeps, or None for Pillow's path.

    An RGB or grey JPEG (8-bit, no profile or an sRGB one, complete up to its end marker) decodes into
    one uint8 RGB array: the same pixels as Pillow (both are libjpeg-turbo), a third of the CPU, and none
    of Pillow's 4-byte-a-pixel buffer and its two copies. A 16-bit PNG / TIFF (RGB, RGBA or grey, no
    rotation, profile or flattening to do) decodes once into the 16-bit array; the 8-bit pixels are its
    rounding. Anything unusual (and any file OpenCV cannot read whole) takes Pillow's path, which checks
    it and says what is wrong.
    """
    fmt = im.format
    if fmt == "JPEG" and bit_depth == 8 and im.mode in ("RGB", "L"):
        deep = False
    elif fmt in ("PNG", "TIFF") and bit_depth == 16 and im.mode in ("RGB", "RGBA", "I;16", "I;16B") \
            and "transparency" not in im.info:
        deep = True
    else:
        return None
    icc = im.info.get("icc_profile")
    if icc and not _is_srgb(icc):
        return None
    fp.seek(0)
    data = fp.read()
    if (fmt == "JPEG" and not data.endswith(b"\xff\xd9")) or (fmt == "PNG" and not data.endswith(_PNG_END)):
        return None  # truncated (or trailing data): OpenCV would pad it silently, Pillow refuses it
    no_exif = fmt == "PNG" and "exif" not in im.info  # (Pillow's getexif would decode every pixel to look)
    if no_exif and _png_chunk(data, b"eXIf"):
        return None  # EXIF after the pixels: Pillow's path reads it
    orientation = 1 if no_exif else _orientation(im)
    if deep and orientation in range(2, 9):
        return None
    try:
        frames = _frame_count_hint(im)
    except Exception:  # a damaged later frame: Pillow's path says so
        return None
    flags = (cv2.IMREAD_UNCHANGED if deep else cv2.IMREAD_COLOR_RGB) | cv2.IMREAD_IGNORE_ORIENTATION
    arr = cv2.imdecode(np.frombuffer(data, np.uint8), flags)
    del data
    width, height = im.size
    if arr is None or arr.shape[:2] != (height, width) or arr.dtype != (np.uint16 if deep else np.uint8):
        return None
    notices = [frames] if frames else []
    exif = None if no_exif else _exif_bytes(im)
    if not deep:
        if orientation in _UPRIGHT:
            arr = _UPRIGHT[orientation](arr)
            notices.append("Rotated upright from EXIF orientation.")
        return LoadedImage(pixels=arr, format=fmt, width=arr.shape[1], height=arr.shape[0], notices=notices,
                           source_mode=im.mode, bit_depth=8, exif=exif)
    channels = 1 if arr.ndim == 2 else arr.shape[2]
    if channels != {"RGB": 3, "RGBA": 4}.get(im.mode, 1):
        return None
    alpha8 = None
    if channels == 4:
        alpha8 = (arr[:, :, 3] >> 8).astype(np.uint8)  # Pillow keeps the high byte of a 16-bit alpha
        if alpha == "flatten" and (alpha8 < 255).any():
            return None  # flattening is done on the 8-bit pixels, by Pillow's path
        arr = cv2.cvtColor(arr, cv2.COLOR_BGRA2RGB)
    elif channels == 3:
        cv2.cvtColor(arr, cv2.COLOR_BGR2RGB, dst=arr)
    else:
        arr = cv2.merge([arr, arr, arr])
    rgb8 = raw_to_8bit(arr)
    pixels = np.dstack([rgb8, alpha8]) if alpha8 is not None and alpha == "keep" else rgb8
    notices.append("16-bit image: kept at 16 bits for rendering and export.")
    return LoadedImage(pixels=pixels, format=fmt, width=width, height=height, notices=notices,
                       has_alpha=alpha8 is not None, source_mode=im.mode, bit_depth=16, deep=arr, exif=exif)


def _png_chunk(data: bytes, kind: bytes) -> bool:
    """Does a PNG hold a chunk of ``kind`` (walked from the chunk headers, nothing decoded)?"""
    pos = 8
    while pos + 8 <= len(data):
        if data[pos + 4:pos + 8] == kind:
            return True
        pos += 12 + int.from_bytes(data[pos:pos + 4], "big")
    return False


def _is_srgb(icc: bytes) -> bool:
    """Is an embedded profile one whose pixels need no conversion (an sRGB profile)?"""
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        return profile.profile.xcolor_space.strip() == "RGB" and "srgb" in _profile_name(profile).lower()
    except (ImageCms.PyCMSError, OSError, ValueError, AttributeError):
        return False


# --------------------------------------------------------------------------- RAW, 16 bits, EXIF

_RAW_FORMAT_BY_MAGIC = ((b"FUJIFILMCCD-RAW", "RAF"), (b"IIRO", "ORF"), (b"IIRS", "ORF"), (b"MMOR", "ORF"))


def _raw_format(data: bytes, name: str | None) -> str:
    if name and Path(name).suffix.lower() in RAW_SUFFIXES:
        return Path(name).suffix.lower().lstrip(".").upper()
    for magic, fmt in _RAW_FORMAT_BY_MAGIC:
        if data.startswith(magic):
            return fmt
    if data[4:12] == b"ftypcrx ":
        return "CR3"
    if data[8:10] == b"CR":
        return "CR2"
    return "DNG"


def _load_raw(data: bytes, name: str | None, max_pixels: int, draft_long_side: int | None = None) -> LoadedImage:
    """Develop a RAW file (pipeline.raw) to 16-bit sRGB; the 8-bit pixels are its rounding.
    At half size when ``draft_long_side`` is no more than half the developed long side."""
    fmt = _raw_format(data, name)
    try:
        width, height = raw_size(data)
        if width == 0 or height == 0:
            raise ImageLoadError(f"The RAW file has no pixels ({width} x {height}).", reason="zero_size")
        _check_pixel_count(width, height, max_pixels)
        draft = draft_long_side is not None and 0 < draft_long_side <= max(width, height) // 2
        with admission.reserve(admission.decode_bytes(width, height, 16, raw=True) // (4 if draft else 1),
                               what=f"developing {name or 'a RAW file'}"):
            deep = develop(data, half_size=draft)
            pixels = raw_to_8bit(deep)
    except RawError as exc:
        raise ImageLoadError(str(exc), reason="damaged") from None
    how = "at half size for a first look" if draft else "to 16 bits"
    return LoadedImage(pixels=pixels, format=fmt, width=pixels.shape[1], height=pixels.shape[0],
                       notices=[f"{fmt} RAW developed {how} with the camera's white balance."],
                       source_mode="RAW", bit_depth=16, deep=deep, exif=None, draft=draft)


def _with_depth(loaded: LoadedImage, read: "Callable[[], bytes]") -> LoadedImage:
    """For a 16-bit PNG / TIFF, keep its 16-bit pixels (``deep``) next to the 8-bit ones.

    Only when nothing was done on the way in that the 8-bit path did alone
    (EXIF rotation, an ICC conversion, flattening transparency): then ``pixels``
    become the rounding of ``deep`` and the two always agree.
    """
    if loaded.bit_depth != 16 or loaded.format not in ("PNG", "TIFF") or loaded.deep is not None:
        return loaded
    if any(("converted to sRGB" in n) or ("Rotated" in n) or ("flattened" in n) for n in loaded.notices):
        return loaded
    arr = cv2.imdecode(np.frombuffer(read(), np.uint8), cv2.IMREAD_UNCHANGED)
    if arr is None or arr.dtype != np.uint16 or arr.shape[:2] != loaded.pixels.shape[:2]:
        return loaded
    if arr.ndim == 2:
        deep = np.repeat(arr[:, :, None], 3, axis=2)
    else:
        deep = cv2.cvtColor(arr, cv2.COLOR_BGRA2RGB if arr.shape[2] == 4 else cv2.COLOR_BGR2RGB)
    deep = np.ascontiguousarray(deep)
    rgb8 = raw_to_8bit(deep)
    if loaded.pixels.shape[2] == 4:
        pixels = np.dstack([rgb8, loaded.pixels[:, :, 3]])
    else:
        pixels = rgb8
    notices = [n for n in loaded.notices if n != "16-bit image converted to 8-bit."]
    notices.append("16-bit image: kept at 16 bits for rendering and export.")
    loaded.pixels, loaded.deep, loaded.notices = pixels, deep, notices
    return loaded


def _exif_bytes(im: Image.Image) -> bytes | None:
    """The file's EXIF block (as Pillow serialises it), or None."""
    raw = im.info.get("exif")
    if raw:
        return bytes(raw)
    try:
        exif = im.getexif()
    except Exception:
        return None
    return exif.tobytes() if len(exif) else None


def _open_lazily(fp, name: str | None, max_pixels: int) -> Image.Image:
    """Parse the header only, with the format allow-list."""
    try:
        return Image.open(fp, formats=SUPPORTED_FORMATS)
    except Image.DecompressionBombError as exc:
        # Pillow's own hard stop (above 2x its global limit) fires inside open.
        match = re.search(r"\((\d+) pixels\)", str(exc))
        pixels = int(match.group(1)) if match else None
        raise _too_large(pixels, None, _effective_limit(max_pixels)) from exc
    except UnidentifiedImageError as exc:
        fp.seek(0)
        head = fp.read(64)
        raise _not_an_image(head, name) from exc
    except MemoryError:
        raise
    except Exception as exc:  # OSError, SyntaxError, struct.error ... (or a warning turned error)
        # Recognised as an allowed format but the header itself is broken.
        raise ImageLoadError("The file is truncated or damaged.", reason="damaged") from exc


def _effective_limit(max_pixels: int) -> int:
    """The cap actually enforced: Pillow refuses above twice its global limit by itself."""
    pillow_hard_stop = 2 * Image.MAX_IMAGE_PIXELS if Image.MAX_IMAGE_PIXELS else max_pixels
    return min(max_pixels, pillow_hard_stop)


def _check_pixel_count(width: int, height: int, max_pixels: int) -> None:
    if width * height > max_pixels:
        raise _too_large(width * height, (width, height), max_pixels)


def _too_large(pixels: int | None, size: tuple[int, int] | None, limit: int) -> ImageLoadError:
    dims = f" ({size[0]} x {size[1]})" if size else ""
    what = f"{_megapixels(pixels)} megapixels{dims}" if pixels else "too large to open safely"
    return ImageLoadError(
        f"The image is {what}; the limit is {_megapixels(limit)} MP.", reason="too_large"
    )


def _megapixels(pixels: int) -> str:
    mp = pixels / 1e6
    if mp >= 10:
        return f"{mp:.0f}"
    if mp >= 1:
        return f"{mp:.1f}".rstrip("0").rstrip(".")
    return f"{mp:.2g}"


def _frame_count_hint(im: Image.Image) -> str | None:
    """A notice when the file holds more than one picture; stays on the first."""
    # is_animated only peeks at the second frame; n_frames would walk them all.
    if not getattr(im, "is_animated", False):
        return None
    im.seek(0)
    if im.format == "TIFF":
        return "Multi-page TIFF: using the first page."
    if im.format == "MPO":
        return "Multi-picture JPEG: using the main picture."
    return "Animated image: using the first frame."


def _bit_depth(im: Image.Image) -> int:
    """Bits per channel in the file, read from the header (before decoding)."""
    mode = im.mode
    if mode.startswith("I;16"):
        return 16
    if mode in ("I", "F"):
        return 32
    if mode == "1":
        return 1
    if im.format == "TIFF":
        bits = getattr(im, "tag_v2", {}).get(258)
        if bits:
            return int(max(bits) if isinstance(bits, tuple) else bits)
    for tile in im.tile:
        args = tile.args
        rawmode = args[0] if isinstance(args, tuple) and args else args
        if isinstance(rawmode, str) and ";16" in rawmode:
            return 16
    return 8


def _decode_fully(im: Image.Image, fp) -> str | None:
    """Decode every pixel of the first frame now, so damage shows here and not in the renderer.

    Returns the multi-frame notice, if any (peeking at frame 2 reads data too,
    so it runs inside the same guard).
    """
    fp.ran_out = False
    try:
        frames = _frame_count_hint(im)
        im.load()
    except MemoryError:
        raise
    except Image.DecompressionBombError as exc:  # e.g. a later frame bigger than the header said
        raise ImageLoadError("The image is too large to open safely.", reason="too_large") from exc
    except Exception as exc:  # Pillow's decoders raise OSError, SyntaxError, ValueError, struct.error ...
        raise ImageLoadError("The file is truncated or damaged.", reason="damaged") from exc
    if fp.ran_out and ImageFile.LOAD_TRUNCATED_IMAGES:
        # Pillow was told (globally, by someone) to pad missing data; we refuse.
        raise ImageLoadError("The file is truncated or damaged.", reason="damaged")
    return frames


def _orientation(im: Image.Image) -> int:
    try:
        value = im.getexif().get(_EXIF_ORIENTATION, 1)
    except Exception:  # a broken EXIF block is no reason to refuse the photo
        return 1
    return value if isinstance(value, int) else 1


# --------------------------------------------------------------------------- modes


def _to_rgb8(
    im: Image.Image, source_mode: str, bit_depth: int, icc: bytes | None
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    """Any supported Pillow mode -> (uint8 HxWx3 sRGB, uint8 HxW alpha or None, notices)."""
    notices: list[str] = []
    mode = im.mode
    if bit_depth == 16:
        notices.append("16-bit image converted to 8-bit.")

    if mode.startswith("I;16") or mode in ("I", "F"):
        grey, scale_notice = _grey_to_8bit(np.asarray(im), mode)
        if scale_notice:
            notices.append(scale_notice)
        return np.repeat(grey[:, :, None], 3, axis=2), None, notices

    if mode == "CMYK":
        rgb = _cmyk_to_rgb(im, icc, notices)
        return np.asarray(rgb), None, notices

    has_alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info
    if has_alpha:
        rgba = im.convert("RGBA")
        rgb_im, alpha_im = rgba.convert("RGB"), rgba.getchannel("A")
    elif mode == "RGB":
        rgb_im, alpha_im = im, None
    else:
        try:  # L, 1, P, RGBX, YCbCr, LAB, HSV
            rgb_im, alpha_im = im.convert("RGB"), None
        except (ValueError, OSError) as exc:
            raise ImageLoadError(
                f"The image uses the {mode} colour mode, which Atelier cannot convert to RGB.",
                reason="colour_mode",
            ) from exc
    rgb_im = _to_srgb(rgb_im, icc, notices)
    return np.asarray(rgb_im), (np.asarray(alpha_im) if alpha_im is not None else None), notices


def _grey_to_8bit(values: np.ndarray, mode: str) -> tuple[np.ndarray, str | None]:
    """16-bit / 32-bit / float grey -> uint8 by scaling (never clipping).

    16-bit: ``round(v / 257)``, so 0 -> 0 and 65535 -> 255 exactly. 32-bit
    integers that fit 0..65535 are treated as 16-bit; floats in 0..1 are
    multiplied by 255; anything else is stretched from its min..max.
    """
    if mode.startswith("I;16"):
        v = values.astype(np.uint32)
        return ((v + 128) // 257).astype(np.uint8), None
    v = values.astype(np.float64)
    finite = np.isfinite(v)
    v = np.where(finite, v, 0.0)
    lo, hi = (float(v.min()), float(v.max())) if v.size else (0.0, 0.0)
    if mode == "I" and lo >= 0 and hi <= 65535:
        return ((v.astype(np.uint32) + 128) // 257).astype(np.uint8), None
    if mode == "F" and lo >= 0 and hi <= 1:
        return np.rint(v * 255).astype(np.uint8), None
    span = hi - lo if hi > lo else 1.0
    stretched = np.rint((v - lo) / span * 255).astype(np.uint8)
    return stretched, f"High-bit-depth values ({lo:g}..{hi:g}) stretched to 0..255."


def _srgb_profile() -> ImageCms.ImageCmsProfile:
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB"))


def _profile_name(profile: ImageCms.ImageCmsProfile) -> str:
    try:
        return ImageCms.getProfileDescription(profile).strip() or "embedded"
    except ImageCms.PyCMSError:
        return "embedded"


def _cmyk_to_rgb(im: Image.Image, icc: bytes | None, notices: list[str]) -> Image.Image:
    """CMYK -> sRGB through the file's ICC profile when it has one (print files do)."""
    if icc:
        try:
            profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
            rgb = ImageCms.profileToProfile(
                im, profile, _srgb_profile(), outputMode="RGB",
                renderingIntent=ImageCms.Intent.PERCEPTUAL,
            )
            notices.append(f"CMYK converted to RGB using its colour profile ({_profile_name(profile)}).")
            return rgb
        except (ImageCms.PyCMSError, OSError, ValueError):
            pass  # unusable profile: fall back to the plain conversion below
    notices.append("CMYK converted to RGB.")
    return im.convert("RGB")


def _to_srgb(im: Image.Image, icc: bytes | None, notices: list[str]) -> Image.Image:
    """Convert RGB pixels tagged with a non-sRGB profile (Display P3, Adobe RGB) to sRGB."""
    if not icc:
        return im
    try:
        profile = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        if profile.profile.xcolor_space.strip() != "RGB":
            return im
        name = _profile_name(profile)
        if "srgb" in name.lower():
            return im
        converted = ImageCms.profileToProfile(
            im, profile, _srgb_profile(), outputMode="RGB",
            renderingIntent=ImageCms.Intent.PERCEPTUAL,
        )
    except (ImageCms.PyCMSError, OSError, ValueError, AttributeError):
        return im  # a broken profile: show the pixels as they are rather than refuse
    notices.append(f"Colour profile {name!r} converted to sRGB.")
    return converted


def _flatten(rgb: np.ndarray, alpha: np.ndarray, background: tuple) -> np.ndarray:
    """Composite straight-alpha RGB over a solid background, rounded to nearest."""
    a = alpha.astype(np.uint16)[:, :, None]
    bg = np.asarray(background, dtype=np.uint16)
    # max value 255*255 + 127 fits uint16
    out = (rgb.astype(np.uint16) * a + bg * (255 - a) + 127) // 255
    return out.astype(np.uint8)


def _colour_name(rgb: tuple) -> str:
    names = {(255, 255, 255): "white", (0, 0, 0): "black"}
    return names.get(tuple(int(v) for v in rgb), f"the background colour {tuple(int(v) for v in rgb)}")


# --------------------------------------------------------------------------- "not an image" messages

# Formats people upload that we recognise but do not open: name them instead of
# saying "not an image".
_KNOWN_UNSUPPORTED = (
    (b"BM", "BMP"),
    (b"8BPS", "Photoshop (PSD)"),
    (b"%PDF", "PDF"),
    (b"\x00\x00\x01\x00", "ICO"),
    (b"qoif", "QOI"),
)
_FTYP_BRANDS = {b"heic": "HEIC", b"heix": "HEIC", b"mif1": "HEIF", b"msf1": "HEIF", b"avif": "AVIF", b"avis": "AVIF"}
_MAGIC_TO_FORMAT = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF8", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def _not_an_image(head: bytes, name: str | None) -> ImageLoadError:
    supported = describe_supported()
    declared = _declared_zero_size(head)
    if declared:
        return ImageLoadError(f"The image has no pixels ({declared[0]} x {declared[1]}).", reason="zero_size")
    for magic, fmt in _MAGIC_TO_FORMAT:
        if head.startswith(magic):
            # Right signature, unreadable header: damaged, not "wrong type".
            return ImageLoadError(
                f"The file looks like a {fmt} but is truncated or damaged.", reason="damaged"
            )
    known = _known_unsupported(head)
    if known:
        return ImageLoadError(f"Atelier cannot open {known} files. {supported}", reason="unsupported")
    hint = ""
    suffix = Path(name).suffix.lower() if name else ""
    if _looks_like_text(head):
        hint = f" (a text file renamed {suffix}?)" if suffix else " (it looks like text)"
    elif suffix:
        hint = f" (its name ends in {suffix} but the content is not {suffix[1:].upper()})"
    return ImageLoadError(f"This file is not an image Atelier can open{hint}. {supported}", reason="unsupported")


def _known_unsupported(head: bytes) -> str | None:
    for magic, fmt in _KNOWN_UNSUPPORTED:
        if head.startswith(magic):
            return fmt
    if head[4:8] == b"ftyp" and head[8:12] in _FTYP_BRANDS:
        return _FTYP_BRANDS[head[8:12]]
    stripped = head.lstrip().lower()
    if stripped.startswith(b"<svg") or (stripped.startswith(b"<?xml") and b"<svg" in head.lower()):
        return "SVG"
    return None


def _declared_zero_size(head: bytes) -> tuple[int, int] | None:
    """PNG/GIF headers that declare 0 width or height (Pillow refuses to identify them)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR" and len(head) >= 24:
        w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    elif head.startswith(b"GIF8") and len(head) >= 10:
        w, h = int.from_bytes(head[6:8], "little"), int.from_bytes(head[8:10], "little")
    else:
        return None
    return (w, h) if w == 0 or h == 0 else None


def _looks_like_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ch.isprintable() or ch in "\r\n\t" for ch in text)


# --------------------------------------------------------------------------- encoding and saving


def encode_image(pixels: np.ndarray, fmt: str = "jpeg", *, quality: int = DEFAULT_QUALITY,
                 icc: bytes | None = None, exif: bytes | None = None) -> bytes:
    """Encode pixels (HxW grey, HxWx3 RGB or HxWx4 RGBA) as jpeg/png/tiff/webp bytes.

    uint8 always; uint16 for PNG and TIFF (kept at 16 bits). ``quality`` 1..100
    applies to JPEG (4:2:0 chroma subsampling) and WebP; PNG and TIFF are
    lossless (TIFF: LZW, or zlib at 16 bits). JPEG cannot hold transparency, so
    RGBA pixels are refused for it: flatten them first (``load_image`` does by
    default). ``icc``: an ICC profile to embed (``srgb_icc()`` for exports);
    ``exif``: an EXIF block to embed (``export_exif`` prepares one; not written
    into 16-bit TIFF).
    """
    fmt = _normalise_format(fmt)
    if not isinstance(quality, (int, np.integer)) or isinstance(quality, bool) or not 1 <= quality <= 100:
        raise ValueError(f"quality must be an int from 1 to 100, got {quality!r}")
    pixels = _checked_pixels(pixels, deep_ok=fmt in ("png", "tiff"))
    if fmt == "jpeg" and pixels.ndim == 3 and pixels.shape[2] == 4:
        raise ValueError("JPEG has no transparency: flatten RGBA pixels to RGB before encoding as jpeg")
    if fmt in ("jpeg", "png"):
        data = _encode_with_opencv(pixels, fmt, int(quality))
        return _with_metadata(data, fmt, icc, exif) if (icc or exif) else data
    if pixels.dtype == np.uint16:  # 16-bit TIFF: Pillow cannot write 16-bit RGB
        import tifffile

        buffer = io.BytesIO()
        extratags = [(34675, 7, len(icc), icc, True)] if icc else []
        photometric = "minisblack" if pixels.ndim == 2 else "rgb"
        tifffile.imwrite(buffer, pixels, photometric=photometric, compression="zlib", extratags=extratags,
                         extrasamples=("unassalpha",) if pixels.ndim == 3 and pixels.shape[2] == 4 else None)
        return buffer.getvalue()
    buffer = io.BytesIO()
    image = Image.fromarray(pixels)
    extra = {k: v for k, v in (("icc_profile", icc), ("exif", exif)) if v}
    if fmt == "webp":
        image.save(buffer, "WEBP", quality=int(quality), method=4, **extra)
    else:
        image.save(buffer, "TIFF", compression="tiff_lzw", **extra)
    return buffer.getvalue()


def srgb_icc() -> bytes:
    """The sRGB ICC profile embedded in exports (built by LittleCMS, no file needed)."""
    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


#: EXIF tag ids touched on export.
_GPS_IFD, _ORIENTATION = 0x8825, 0x0112


def export_exif(exif: bytes | None, *, drop_gps: bool = True) -> bytes | None:
    """An EXIF block for an export: the original's tags, orientation reset to 1 (pixels are
    upright), the GPS position removed unless ``drop_gps=False``. None when there is nothing."""
    if not exif:
        return None
    try:
        data = Image.Exif()
        data.load(exif)
    except Exception:
        return None
    if drop_gps and _GPS_IFD in data:
        del data[_GPS_IFD]
    if _ORIENTATION in data:
        data[_ORIENTATION] = 1
    return data.tobytes() if len(data) else None


def _with_metadata(data: bytes, fmt: str, icc: bytes | None, exif: bytes | None) -> bytes:
    """Splice an ICC profile and EXIF into OpenCV's JPEG / PNG bytes (no re-encode)."""
    import struct
    import zlib

    if fmt == "jpeg":
        segments = b""
        if exif:
            body = exif if exif.startswith(b"Exif\x00\x00") else b"Exif\x00\x00" + exif
            if len(body) + 2 <= 0xFFFF:
                segments += b"\xff\xe1" + struct.pack(">H", len(body) + 2) + body
        if icc:
            body = b"ICC_PROFILE\x00\x01\x01" + icc
            if len(body) + 2 <= 0xFFFF:
                segments += b"\xff\xe2" + struct.pack(">H", len(body) + 2) + body
        pos = 2
        if data[2:4] == b"\xff\xe0":  # keep JFIF's APP0 first
            pos = 4 + struct.unpack(">H", data[4:6])[0]
        return data[:pos] + segments + data[pos:]

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    extra = b""
    if icc:
        extra += chunk(b"iCCP", b"sRGB IEC61966-2.1\x00\x00" + zlib.compress(icc))
    if exif:
        extra += chunk(b"eXIf", exif[6:] if exif.startswith(b"Exif\x00\x00") else exif)
    ihdr_end = 8 + 8 + 13 + 4
    return data[:ihdr_end] + extra + data[ihdr_end:]


def _normalise_format(fmt: str) -> str:
    key = str(fmt).lower().lstrip(".")
    if key not in _FORMAT_ALIASES:
        raise ValueError(f"fmt must be one of {', '.join(EXPORT_FORMATS)}; got {fmt!r}")
    return _FORMAT_ALIASES[key]


def _checked_pixels(pixels: np.ndarray, deep_ok: bool = False) -> np.ndarray:
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8 and not (deep_ok and pixels.dtype == np.uint16):
        raise ValueError(f"pixels must be uint8{' or uint16' if deep_ok else ''}, got {pixels.dtype}")
    if pixels.ndim == 3 and pixels.shape[2] == 1:
        pixels = pixels[:, :, 0]
    if not (pixels.ndim == 2 or (pixels.ndim == 3 and pixels.shape[2] in (3, 4))):
        raise ValueError(f"pixels must be HxW, HxWx3 or HxWx4, got shape {pixels.shape}")
    if pixels.shape[0] == 0 or pixels.shape[1] == 0:
        raise ValueError(f"pixels must not be empty, got shape {pixels.shape}")
    return np.ascontiguousarray(pixels)


def _encode_with_opencv(pixels: np.ndarray, fmt: str, quality: int) -> bytes:
    # OpenCV stores channels as BGR(A); swap before handing pixels over.
    if pixels.ndim == 3:
        code = cv2.COLOR_RGB2BGR if pixels.shape[2] == 3 else cv2.COLOR_RGBA2BGRA
        pixels = cv2.cvtColor(pixels, code)
    if fmt == "jpeg":
        params = [
            cv2.IMWRITE_JPEG_QUALITY, quality,
            cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420,
        ]
        ok, buffer = cv2.imencode(".jpg", pixels, params)
    else:
        params = [cv2.IMWRITE_PNG_COMPRESSION, PNG_COMPRESSION]
        if pixels.dtype == np.uint8:
            params += PNG_FAST_PARAMS
        ok, buffer = cv2.imencode(".png", pixels, params)
    if not ok:
        raise ValueError(f"OpenCV could not encode a {pixels.shape} image as {fmt}")
    return buffer.tobytes()


def format_for_path(path: str | os.PathLike) -> str:
    """Export format from a file name's suffix: ``photo.JPG`` -> ``"jpeg"``."""
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIX_TO_FORMAT:
        raise ValueError(
            f"cannot tell the format from the file name {Path(path).name!r}; "
            f"use one of {', '.join(sorted(_SUFFIX_TO_FORMAT))} or pass fmt"
        )
    return _SUFFIX_TO_FORMAT[suffix]


def save_image(
    pixels: np.ndarray,
    path: str | os.PathLike,
    fmt: str | None = None,
    *,
    quality: int = DEFAULT_QUALITY,
    icc: bytes | None = None,
    exif: bytes | None = None,
) -> Path:
    """Encode ``pixels`` and write them to ``path`` atomically; returns the path.

    ``fmt`` defaults to the suffix of ``path`` (.jpg/.jpeg, .png, .tif/.tiff,
    .webp). Encoding happens before anything touches the disk, so a failure
    leaves an existing file exactly as it was.
    """
    fmt = _normalise_format(fmt) if fmt is not None else format_for_path(path)
    return write_bytes_atomic(path, encode_image(pixels, fmt, quality=quality, icc=icc, exif=exif))


def write_bytes_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half.

    The bytes go to a temporary file in the same folder (same filesystem, so
    the rename is atomic), which is flushed and fsynced, then moved over
    ``path`` with ``os.replace``; the folder is fsynced too so the rename
    survives a power cut. Missing parent folders are created.
    """
    path = Path(path)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as tmp:
            tmp.write(data)
            tmp.flush()
            os.fsync(tmp.fileno())
        os.chmod(tmp_name, 0o644)  # mkstemp makes 0600; a saved photo should be readable like any other
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
    _fsync_folder(path.parent)
    return path


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # e.g. Windows cannot open folders; the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
