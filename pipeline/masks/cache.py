"""The cache of content-aware masks, and the keys masks are cached under.

Content-aware masks (face, skin, sky, subject) and face boxes cost tens to hundreds of
milliseconds; they are kept per (original digest, canonical spec) in a byte-bounded LRU
(:class:`cachetools.LRUCache` sized by ``nbytes``) behind one lock.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Callable, Hashable, Mapping

import cachetools
import numpy as np

from pipeline.masks.specs import normalize_mask_spec

#: Default budget of :data:`DEFAULT_MASK_CACHE`.
DEFAULT_CACHE_BYTES = 64 * 2**20


def _nbytes(value: np.ndarray) -> int:
    return int(value.nbytes)


class MaskCache:
    """Thread-safe least-recently-used cache of content-aware masks, bounded by bytes.

    Keys are ``(original digest, canonical spec json)``. Values are read-only
    float32 arrays at analysis resolution (a 768 x 512 sky mask is 1.5 MB), so
    sharing one array between threads and callers is safe. A key is computed at
    most once even when several threads ask for it at the same time; a value
    larger than ``max_bytes`` is returned but not kept.
    """

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES):
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"max_bytes: expected an integer >= 0, got {max_bytes!r}")
        self.max_bytes = max_bytes
        self._items: cachetools.LRUCache = cachetools.LRUCache(maxsize=max_bytes, getsizeof=_nbytes)
        self._lock = threading.Lock()
        self._computing: dict[Hashable, threading.Lock] = {}
        self._hits = 0
        self._computed = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

    @property
    def nbytes(self) -> int:
        """Bytes held now (always <= ``max_bytes``)."""
        with self._lock:
            return int(self._items.currsize)

    def stats(self) -> dict:
        """``{"entries", "bytes", "max_bytes", "hits", "computed"}``: ``computed`` counts
        the masks that :meth:`get_or_compute` had to build."""
        with self._lock:
            return {"entries": len(self._items), "bytes": int(self._items.currsize), "max_bytes": self.max_bytes,
                    "hits": self._hits, "computed": self._computed}

    def keys(self) -> list[Hashable]:
        """Cached keys, in the order they were stored."""
        with self._lock:
            return list(self._items)

    def get(self, key: Hashable) -> np.ndarray | None:
        """The cached mask for ``key`` (marking it recently used), or None."""
        with self._lock:
            return self._lookup(key)

    def put(self, key: Hashable, mask: np.ndarray) -> np.ndarray:
        """Store a read-only float32 copy of ``mask`` and return it."""
        value = np.array(mask, dtype=np.float32)
        value.setflags(write=False)
        with self._lock:
            self._store(key, value)
        return value

    def get_or_compute(self, key: Hashable, compute: Callable[[], np.ndarray]) -> np.ndarray:
        """The cached mask for ``key``, calling ``compute()`` only on a miss.

        Concurrent callers with the same key wait for the one computation
        instead of repeating it; different keys compute in parallel.
        """
        with self._lock:
            found = self._lookup(key)
            if found is not None:
                return found
            gate = self._computing.setdefault(key, threading.Lock())
        try:
            with gate:
                with self._lock:
                    found = self._lookup(key)
                    if found is not None:
                        return found
                value = np.ascontiguousarray(compute(), dtype=np.float32)
                value.setflags(write=False)
                with self._lock:
                    self._computed += 1
                    self._store(key, value)
                return value
        finally:
            with self._lock:
                if self._computing.get(key) is gate:
                    del self._computing[key]

    def clear(self) -> None:
        """Forget every mask (counters are kept)."""
        with self._lock:
            self._items.clear()

    # The two helpers below expect self._lock to be held.
    def _lookup(self, key: Hashable) -> np.ndarray | None:
        found = self._items.get(key)
        if found is not None:
            self._hits += 1
        return found

    def _store(self, key: Hashable, value: np.ndarray) -> None:
        if value.nbytes <= self.max_bytes:  # a larger one is returned but not kept
            self._items[key] = value


#: The cache :func:`pipeline.masks.build_mask` uses when it is given none. It is the package's
#: only shared state and is itself thread-safe; it holds masks, never session data.
DEFAULT_MASK_CACHE = MaskCache()


def image_digest(original: np.ndarray) -> str:
    """Content digest (hex) of a pixel array, used as the cache key when none is given."""
    h = hashlib.blake2b(digest_size=16)
    h.update(repr((original.shape, str(original.dtype))).encode())
    h.update(np.ascontiguousarray(original).data)
    return h.hexdigest()


def content_key(digest: str, spec: Mapping) -> tuple[str, str]:
    """The MaskCache key of a content-aware mask (face, skin, sky, subject) of the original with
    ``digest``: its canonical spec without feather and invert, which are applied after the cache."""
    core = {k: v for k, v in normalize_mask_spec(spec).items() if k not in ("feather", "invert")}
    return digest, json.dumps(core, sort_keys=True, separators=(",", ":"))


def face_boxes_key(digest: str) -> tuple[str, str]:
    """The MaskCache key of the face boxes of the original with ``digest`` (face, skin and portrait use them)."""
    return digest, "face-boxes"
