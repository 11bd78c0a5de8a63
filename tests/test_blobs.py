"""The content-addressed blob store: lossless, bit-exact, atomic, content-named."""

from __future__ import annotations

import os

import numpy as np
import pytest

from pipeline.blobs import BlobError, BlobStore, array_digest


def _arrays():
    rng = np.random.default_rng(7)
    return {
        "mask8": (rng.random((37, 53)) > 0.5).astype(np.uint8) * 255,
        "grey16": rng.integers(0, 65536, (20, 31), dtype=np.uint16),
        "rgb8": rng.integers(0, 256, (19, 23, 3), dtype=np.uint8),
        "rgb16": rng.integers(0, 65536, (17, 29, 3), dtype=np.uint16),
        "rgba8": rng.integers(0, 256, (11, 13, 4), dtype=np.uint8),
        "rgba16": rng.integers(0, 65536, (9, 14, 4), dtype=np.uint16),
    }


@pytest.mark.parametrize("name", list(_arrays()))
def test_round_trip_is_bit_exact(tmp_path, name):
    arr = _arrays()[name]
    store = BlobStore(tmp_path / "blobs")
    digest = store.put_array(arr)
    assert store.exists(digest)
    assert store.path(digest).suffix == ".png"
    back = store.get_array(digest)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert np.array_equal(back, arr)


def test_digest_is_content_address(tmp_path):
    store = BlobStore(tmp_path)
    a = np.zeros((8, 8), np.uint8)
    d1 = store.put_array(a)
    mtime = os.stat(store.path(d1)).st_mtime_ns
    assert store.put_array(a.copy()) == d1  # same pixels, same name, no rewrite
    assert os.stat(store.path(d1)).st_mtime_ns == mtime
    # Same bytes, other shape or dtype: other digest.
    assert array_digest(a.reshape(4, 16)) != d1
    assert array_digest(np.zeros((8, 4), np.uint16)) != d1
    b = a.copy()
    b[3, 3] = 1
    assert store.put_array(b) != d1
    # HxWx1 is the same blob as HxW; a non-contiguous view hashes like its copy.
    assert array_digest(a[:, :, None]) == d1
    big = np.arange(64, dtype=np.uint8).reshape(8, 8)
    assert array_digest(big[:, ::2]) == array_digest(np.ascontiguousarray(big[:, ::2]))


def test_no_temporary_files_left(tmp_path):
    store = BlobStore(tmp_path)
    for arr in _arrays().values():
        store.put_array(arr)
    leftovers = [p for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".png")]
    assert leftovers == []
    assert len(list(tmp_path.rglob("*.png"))) == 6


def test_bad_input_is_a_clear_error(tmp_path):
    store = BlobStore(tmp_path)
    with pytest.raises(ValueError, match="uint8 or uint16"):
        store.put_array(np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match="HxW"):
        store.put_array(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(ValueError, match="empty"):
        store.put_array(np.zeros((0, 4), np.uint8))
    with pytest.raises(ValueError, match="64 lower-case hex"):
        store.path("../../etc/passwd")
    assert list(tmp_path.iterdir()) == []


def test_missing_and_damaged_blobs(tmp_path):
    store = BlobStore(tmp_path)
    with pytest.raises(BlobError, match="no stored pixels"):
        store.get_array("0" * 64)
    digest = store.put_array(np.full((6, 6), 9, np.uint8))
    other = store.put_array(np.full((6, 6), 10, np.uint8))
    # A file whose pixels do not match its name is refused, not returned.
    store.path(digest).write_bytes(store.path(other).read_bytes())
    with pytest.raises(BlobError, match="damaged"):
        store.get_array(digest)
    store.path(other).write_bytes(b"not a png")
    with pytest.raises(BlobError, match="damaged"):
        store.get_array(other)
