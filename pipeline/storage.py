"""Where a session's durable files live: a local folder, or any fsspec URL shared by replicas.

Durable files are the ones that cannot be rebuilt: each session's untouched
original, content-addressed pixel blobs (painted masks, healed patches,
generated layers; :class:`StoredBlobs`) and exports. Renders and previews are
a cache (``render(original, state)``), so they stay in each machine's local
sessions folder and are rebuilt on demand.

    storage = open_storage(None, "sessions")                    # the default: a local folder
    storage = open_storage("s3://bucket/atelier", "sessions")   # shared by every replica (needs s3fs)
    storage.write_bytes("3f2a.../original.jpg", data)           # atomic: readers see all or nothing
    storage.local_path("3f2a.../original.jpg")                  # a local file with those bytes

Keys are relative, '/'-separated paths (no '..', no leading '/'); anything
else is a ``ValueError``. :func:`open_storage` reads ``ATELIER_STORAGE_URL``
when no URL is given. With an fsspec URL, :meth:`Storage.local_path` keeps a
local copy under ``<cache_dir>/.storage/``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from pipeline.blobs import BlobError, BlobStore, check_digest
from pipeline.imageio import write_bytes_atomic

STORAGE_URL_ENV = "ATELIER_STORAGE_URL"

_PART = re.compile(r"^[A-Za-z0-9._-]+$")


def check_key(key: str) -> str:
    """``key`` if it is a safe relative path of plain names; ValueError otherwise."""
    if not isinstance(key, str) or not key or key.startswith("/"):
        raise ValueError(f"a storage key is a relative path, got {key!r}")
    parts = key.split("/")
    if any(p in ("", ".", "..") or not _PART.match(p) for p in parts):
        raise ValueError(f"a storage key is made of plain names (letters, digits, '.', '_', '-'), got {key!r}")
    return key


class Storage:
    """The interface: bytes by key. Subclasses: :class:`LocalStorage`, :class:`FsspecStorage`."""

    url: str = ""
    #: The local folder that holds the files themselves, when there is one (to keep it off the web server).
    local_root: Path | None = None

    def write_bytes(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def read_bytes(self, key: str) -> bytes:
        """The file's bytes; FileNotFoundError when there is none."""
        raise NotImplementedError

    def exists(self, key: str) -> bool:
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove one file (a missing one is fine)."""
        raise NotImplementedError

    def delete_tree(self, prefix: str) -> None:
        """Remove every file under ``prefix``."""
        raise NotImplementedError

    def list(self, prefix: str) -> list[str]:
        """Keys of the files under ``prefix`` (recursively), sorted."""
        raise NotImplementedError

    def local_path(self, key: str) -> Path:
        """A local file holding the key's bytes (for servers and decoders that want a path)."""
        raise NotImplementedError


class LocalStorage(Storage):
    """Files in a folder on this machine: ``<root>/<key>``. The default (root = the sessions folder)."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root).resolve()
        self.local_root = self.root
        self.url = self.root.as_uri()

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def write_bytes(self, key: str, data: bytes) -> None:
        write_bytes_atomic(self._path(key), data)

    def read_bytes(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def delete_tree(self, prefix: str) -> None:
        shutil.rmtree(self._path(prefix), ignore_errors=True)

    def list(self, prefix: str) -> list[str]:
        base = self._path(prefix)
        if not base.is_dir():
            return []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*") if p.is_file())

    def local_path(self, key: str) -> Path:
        path = self._path(key)
        if not path.is_file():
            raise FileNotFoundError(f"no stored file {key!r}")
        return path


class FsspecStorage(Storage):
    """Files under any fsspec URL (``s3://bucket/prefix``, ``gcs://...``, ``file:///shared``, ``memory://x``).

    ``cache_dir`` (this machine's sessions folder) holds local copies for
    :meth:`local_path`; a copy is only a cache of the shared file.
    """

    def __init__(self, url: str, cache_dir: str | os.PathLike):
        try:
            import fsspec
        except ImportError:
            raise ValueError(f"{STORAGE_URL_ENV}={url!r} needs the fsspec package (pip install fsspec)") from None
        self.url = url.rstrip("/")
        try:
            self.fs, self.base = fsspec.core.url_to_fs(self.url)
        except (ImportError, ValueError) as exc:
            raise ValueError(f"{STORAGE_URL_ENV}={url!r}: {exc}") from None
        self.base = self.base.rstrip("/")
        self.cache = Path(cache_dir).resolve() / ".storage"
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        self._is_file = protocol in ("file", "local")
        self.local_root = Path(self.base).resolve() if self._is_file else None

    def _full(self, key: str) -> str:
        return f"{self.base}/{check_key(key)}"

    def write_bytes(self, key: str, data: bytes) -> None:
        full = self._full(key)
        if self._is_file:  # a shared folder: temp file + rename, as locally
            write_bytes_atomic(full, data)
        else:              # object stores replace a whole object in one PUT
            self.fs.pipe_file(full, data)
        cached = self.cache / key
        if cached.exists():
            cached.unlink()

    def read_bytes(self, key: str) -> bytes:
        try:
            return self.fs.cat_file(self._full(key))
        except FileNotFoundError:
            raise FileNotFoundError(f"no stored file {key!r}") from None

    def exists(self, key: str) -> bool:
        return bool(self.fs.isfile(self._full(key)))

    def delete(self, key: str) -> None:
        try:
            self.fs.rm_file(self._full(key))
        except FileNotFoundError:
            pass
        (self.cache / key).unlink(missing_ok=True)

    def delete_tree(self, prefix: str) -> None:
        full = self._full(prefix)
        if self.fs.exists(full):
            self.fs.rm(full, recursive=True)
        shutil.rmtree(self.cache / prefix, ignore_errors=True)

    def list(self, prefix: str) -> list[str]:
        full = self._full(prefix)
        if not self.fs.exists(full):
            return []
        start = len(self.base.lstrip("/")) + 1
        return sorted(p.lstrip("/")[start:] for p in self.fs.find(full))

    def local_path(self, key: str) -> Path:
        path = self.cache / check_key(key)
        if not path.is_file():
            write_bytes_atomic(path, self.read_bytes(key))
        return path


def open_storage(url: str | None, local_root: str | os.PathLike) -> Storage:
    """The storage for ``url`` (else ``ATELIER_STORAGE_URL``, else the local folder ``local_root``).

    A plain path or a ``file://`` URL to ``local_root`` itself is the local default.
    """
    url = (url or os.environ.get(STORAGE_URL_ENV) or "").strip()
    if not url:
        return LocalStorage(local_root)
    if "://" not in url:
        return LocalStorage(url)
    return FsspecStorage(url, local_root)


class StoredBlobs(BlobStore):
    """The content-addressed blob store (pipeline/blobs.py) kept in a :class:`Storage` under ``prefix``.

    Layout as in BlobStore: ``<prefix>/ab/abcdef....png``. Every replica that
    shares the storage sees the same blobs.
    """

    def __init__(self, storage: Storage, prefix: str = "blobs"):
        self.storage = storage
        self.prefix = check_key(prefix)
        super().__init__(storage.local_root / prefix if storage.local_root else Path(prefix))

    def key(self, digest: str) -> str:
        digest = check_digest(digest)
        return f"{self.prefix}/{digest[:2]}/{digest}.png"

    def exists(self, digest: str) -> bool:
        return self.storage.exists(self.key(digest))

    def _write(self, digest: str, data: bytes) -> None:
        self.storage.write_bytes(self.key(digest), data)

    def _read(self, digest: str) -> bytes:
        try:
            return self.storage.read_bytes(self.key(digest))
        except FileNotFoundError:
            raise BlobError(f"no stored pixels with digest {digest[:12]}...") from None



__all__ = ["FsspecStorage", "LocalStorage", "STORAGE_URL_ENV", "Storage", "StoredBlobs", "check_key",
           "open_storage"]
