"""Content-addressed store for pixel assets: painted masks, healed patches, generated layers.

An EditState stays small and JSON-able by referring to pixels by digest; the
pixels live here, one lossless PNG per distinct array::

    store = BlobStore("sessions/blobs")
    digest = store.put_array(mask)          # 64 hex chars
    np.array_equal(store.get_array(digest), mask)   # True, bit-exact

- The digest is the SHA-256 of a short header (shape and dtype) followed by
  the array's C-order bytes (:func:`array_digest`), so equal arrays always get
  the same name, whatever file they came from, and a rollback that refers to an
  old digest finds exactly the old pixels.
- Arrays are uint8 or uint16, HxW (grey), HxWx3 (RGB) or HxWx4 (RGBA); HxWx1
  is stored as HxW. Anything else is refused with a ``ValueError`` saying what
  was expected; callers quantise float masks themselves (``mask * 255``).
- Writes are atomic (temporary file in the same folder, fsync, rename), and a
  second ``put_array`` of the same pixels writes nothing.
- ``get_array`` checks the decoded pixels against the digest, so a damaged
  file is a :class:`BlobError`, never wrong pixels.

The file system is touched in two private methods (:meth:`BlobStore._write`,
:meth:`BlobStore._read`) plus :meth:`BlobStore.exists`, so the store can be put
behind another storage (fsspec) by overriding those.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import cv2
import numpy as np

from pipeline.imageio import write_bytes_atomic

#: dtypes a blob may hold.
BLOB_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16))

_DIGEST = re.compile(r"^[0-9a-f]{64}$")


class BlobError(LookupError):
    """A blob that is missing or damaged; the message says which digest."""


def canonical_array(arr: np.ndarray) -> np.ndarray:
    """The form a blob is stored and hashed in: uint8/uint16, HxW / HxWx3 / HxWx4, C-contiguous.

    Raises ``ValueError`` for other dtypes, shapes or an empty array.
    """
    arr = np.asarray(arr)
    if arr.dtype not in BLOB_DTYPES:
        raise ValueError(f"a blob must be uint8 or uint16 pixels, got {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))):
        raise ValueError(f"a blob must be HxW, HxWx3 or HxWx4, got shape {arr.shape}")
    if arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"a blob must not be empty, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def array_digest(arr: np.ndarray) -> str:
    """SHA-256 (64 hex chars) of the canonical array's shape, dtype and bytes."""
    arr = canonical_array(arr)
    h = hashlib.sha256()
    h.update(f"atelier-blob:{arr.shape}:{arr.dtype.str}\n".encode())
    h.update(arr.data)
    return h.hexdigest()


def check_digest(digest: object) -> str:
    """Return ``digest`` if it is 64 lower-case hex chars; ``ValueError`` otherwise (no paths sneak in)."""
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ValueError(f"a blob digest is 64 lower-case hex characters, got {digest!r}")
    return digest


def encode_png(arr: np.ndarray) -> bytes:
    """Lossless PNG bytes of a canonical array (8 or 16 bits, grey/RGB/RGBA)."""
    arr = canonical_array(arr)
    if arr.ndim == 3:  # OpenCV writes BGR(A)
        arr = cv2.cvtColor(arr, cv2.COLOR_RGB2BGR if arr.shape[2] == 3 else cv2.COLOR_RGBA2BGRA)
    ok, buf = cv2.imencode(".png", arr, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise ValueError(f"could not encode a {arr.shape} {arr.dtype} array as PNG")
    return buf.tobytes()


def decode_png(data: bytes) -> np.ndarray | None:
    """Pixels of PNG bytes written by :func:`encode_png`, RGB(A) order; ``None`` if undecodable."""
    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if arr is None:
        return None
    if arr.ndim == 3:
        arr = cv2.cvtColor(arr, cv2.COLOR_BGR2RGB if arr.shape[2] == 3 else cv2.COLOR_BGRA2RGBA)
    return np.ascontiguousarray(arr)


class BlobStore:
    """Pixel arrays by content digest under ``root`` (created on first write).

    Layout: ``root/ab/abcdef....png`` (two-character fan-out keeps folders small).
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def path(self, digest: str) -> Path:
        """Where the blob with ``digest`` lives (whether or not it exists yet)."""
        digest = check_digest(digest)
        return self.root / digest[:2] / f"{digest}.png"

    def exists(self, digest: str) -> bool:
        return self.path(digest).is_file()

    def put_array(self, arr: np.ndarray) -> str:
        """Store ``arr`` losslessly; return its digest. Storing the same pixels twice writes once."""
        arr = canonical_array(arr)
        digest = array_digest(arr)
        if not self.exists(digest):
            self._write(digest, encode_png(arr))
        return digest

    def get_array(self, digest: str) -> np.ndarray:
        """The stored pixels, bit-exact. :class:`BlobError` if missing or damaged."""
        digest = check_digest(digest)
        data = self._read(digest)
        arr = decode_png(data)
        if arr is None or array_digest(arr) != digest:
            raise BlobError(f"the stored pixels {digest[:12]}... are damaged")
        return arr

    # -- storage: override these two (and exists) to keep blobs elsewhere
    def _write(self, digest: str, data: bytes) -> None:
        write_bytes_atomic(self.path(digest), data)

    def _read(self, digest: str) -> bytes:
        try:
            return self.path(digest).read_bytes()
        except FileNotFoundError:
            raise BlobError(f"no stored pixels with digest {digest[:12]}...") from None
