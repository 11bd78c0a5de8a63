"""Where the MCP file tools may read and write: the allowed roots, and the rules that hold inside them.

A tool that takes a path (``open_photo``, ``export``) works only inside an **allowed root**:

- the folders the MCP client declares (the MCP "roots" capability: ``file://`` URIs), unless
  ``ATELIER_MCP_CLIENT_ROOTS=ignore`` (then only the operator's roots count);
- plus the folders in ``ATELIER_MCP_ROOTS`` (separated by ``os.pathsep``: ``:`` on Linux and macOS);
- with neither, the server's current working directory.

Paths are resolved first (``~``, ``..`` and every symlink), so a link inside a root that points
outside it is outside. Atelier's own files — the sessions folder (originals of every session,
renders, the browser secret), the database and checkpoint files, a shared storage folder — are never
reachable, even inside a root. ``open_photo`` reads only regular files (never a FIFO, a device or a
folder: it cannot block or read forever), checks the size against ``ATELIER_MAX_UPLOAD`` before
reading a byte, and re-checks the file it actually opened. ``export`` never replaces an existing file
unless asked (``overwrite``), and writes through a temporary file renamed into place, so a reader
never sees half a file.

Every refusal is a :class:`PathRefused` (an ``InvalidInput``) whose message starts with ``path:`` and
names the rule; a path outside the roots is refused before anything about it (does it exist?) is
looked at.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import unquote, urlsplit

from agent.errors import InvalidInput

ROOTS_ENV = "ATELIER_MCP_ROOTS"
CLIENT_ROOTS_ENV = "ATELIER_MCP_CLIENT_ROOTS"
MAX_UPLOAD_ENV = "ATELIER_MAX_UPLOAD"
#: The studio's upload limit too (ui/layout.py): one photo, in Gradio's size syntax.
DEFAULT_MAX_UPLOAD = "60mb"
_UNITS = {"b": 1, "kb": 1024, "mb": 1024 ** 2, "gb": 1024 ** 3, "tb": 1024 ** 4}


class PathRefused(InvalidInput):
    """A path a file tool will not touch; the message names the rule."""


def parse_size(text: str | int) -> int:
    """Bytes from Gradio's size syntax: ``"60mb"`` -> 62914560 (units b, kb, mb, gb, tb; powers of 1024)."""
    if isinstance(text, int) and not isinstance(text, bool) and text > 0:
        return text
    raw = str(text).replace(" ", "").lower()
    digits = len(raw) - len(raw.lstrip("0123456789"))
    unit = raw[digits:] or "b"
    if not digits or unit not in _UNITS or int(raw[:digits]) <= 0:
        raise ValueError(f"{MAX_UPLOAD_ENV}: expected a size like 60mb, got {text!r}")
    return int(raw[:digits]) * _UNITS[unit]


def max_photo_bytes(env: Mapping[str, str] | None = None) -> int:
    """The largest photo file a tool reads (``ATELIER_MAX_UPLOAD``, default 60 MB)."""
    env = os.environ if env is None else env
    return parse_size(env.get(MAX_UPLOAD_ENV) or DEFAULT_MAX_UPLOAD)


def _human(n: int) -> str:
    for unit, size in (("GB", 1024 ** 3), ("MB", 1024 ** 2), ("KB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def root_from_uri(uri: str) -> Path | None:
    """The folder a client's root URI names (``file:///home/me/photos``); None for other schemes."""
    try:
        parts = urlsplit(str(uri))
    except ValueError:
        return None
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    path = unquote(parts.path)
    return Path(path) if path.startswith("/") or (len(path) > 2 and path[2] == ":") else None


def env_roots(env: Mapping[str, str] | None = None) -> list[Path]:
    """The folders in ``ATELIER_MCP_ROOTS`` (``os.pathsep``-separated; empty parts ignored)."""
    env = os.environ if env is None else env
    return [Path(p).expanduser() for p in (env.get(ROOTS_ENV) or "").split(os.pathsep) if p.strip()]


def client_roots_allowed(env: Mapping[str, str] | None = None) -> bool:
    """False when ``ATELIER_MCP_CLIENT_ROOTS=ignore``: only the operator's roots count."""
    env = os.environ if env is None else env
    value = (env.get(CLIENT_ROOTS_ENV) or "allow").strip().lower()
    if value not in ("allow", "ignore"):
        raise ValueError(f"{CLIENT_ROOTS_ENV}: expected allow or ignore, got {value!r}")
    return value == "allow"


def check_settings(env: Mapping[str, str] | None = None) -> None:
    """Raise ValueError naming the variable when ATELIER_MCP_CLIENT_ROOTS or ATELIER_MAX_UPLOAD is malformed."""
    client_roots_allowed(env)
    max_photo_bytes(env)


def _resolved(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


@dataclass(frozen=True)
class FileRules:
    """The allowed roots and Atelier's private paths for one tool call (see the module docstring)."""

    roots: tuple[Path, ...]
    private: tuple[Path, ...] = ()
    max_bytes: int = 60 * 1024 ** 2

    @classmethod
    def build(cls, client_uris: Iterable[str] = (), private: Iterable[os.PathLike | str] = (),
              env: Mapping[str, str] | None = None, cwd: Path | None = None) -> "FileRules":
        """Rules from the client's declared roots, ``ATELIER_MCP_ROOTS`` and (with neither) the working folder."""
        env = os.environ if env is None else env
        declared = [p for p in (root_from_uri(u) for u in client_uris) if p is not None] \
            if client_roots_allowed(env) else []
        roots = env_roots(env) + declared
        if not roots:
            roots = [cwd or Path.cwd()]
        unique = tuple(dict.fromkeys(_resolved(r) for r in roots))
        return cls(roots=unique, private=tuple(dict.fromkeys(_resolved(Path(p)) for p in private)),
                   max_bytes=max_photo_bytes(env))

    # -- the checks -------------------------------------------------------------------------
    def _named(self, path: object) -> Path:
        if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
            raise PathRefused(f"path: expected a file path, got {path!r}")
        if "\x00" in str(path):
            raise PathRefused("path: contains a NUL character")
        return Path(str(path).strip()).expanduser()

    def allowed(self, path: object) -> Path:
        """``path`` resolved (symlinks included), if it is inside a root and not one of Atelier's own files."""
        resolved = _resolved(self._named(path))
        for folder in self.private:
            if _inside(resolved, folder):
                raise PathRefused(f"path: {resolved} is one of Atelier's own files (the sessions folder, storage "
                                  "or database), which the file tools never read or write")
        if not any(_inside(resolved, root) for root in self.roots):
            where = ", ".join(str(r) for r in self.roots)
            raise PathRefused(f"path: {resolved} is outside the allowed roots ({where}); add its folder to "
                              f"{ROOTS_ENV} or declare it as an MCP root")
        return resolved

    def read_photo(self, path: object) -> tuple[bytes, str]:
        """(the file's bytes, its name), read under the rules: a regular file inside a root, within the size cap.

        Never blocks: a FIFO or device is refused before it is opened, and the file is opened non-blocking.
        """
        resolved = self.allowed(path)
        name = resolved.name
        try:
            before = os.stat(resolved)
        except FileNotFoundError:
            raise PathRefused(f"path: there is no file named {name!r} in {resolved.parent}") from None
        except OSError as exc:
            raise PathRefused(f"path: {name!r} cannot be read ({exc.strerror})") from None
        self._check_regular(before, resolved)
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(resolved, flags | getattr(os, "O_NOFOLLOW", 0))
        except OSError as exc:
            if exc.errno == errno.ELOOP:   # swapped for a symlink since it was resolved
                raise PathRefused(f"path: {name!r} changed while it was being opened; try again") from None
            raise PathRefused(f"path: {name!r} cannot be read ({exc.strerror})") from None
        with os.fdopen(fd, "rb", buffering=0) as fh:
            opened = os.fstat(fh.fileno())
            self._check_regular(opened, resolved)
            if (opened.st_dev, opened.st_ino) != (before.st_dev, before.st_ino):
                raise PathRefused(f"path: {name!r} changed while it was being opened; try again")
            real = Path(f"/proc/self/fd/{fh.fileno()}")
            if real.exists():   # Linux: the file actually opened passes the same rules (no folder swapped in)
                self.allowed(os.readlink(real))
            data = fh.read(self.max_bytes + 1)
        if len(data) > self.max_bytes:
            raise PathRefused(f"path: {name!r} grew past {_human(self.max_bytes)} while it was read "
                              f"({MAX_UPLOAD_ENV})")
        return data, name

    def _check_regular(self, st: os.stat_result, resolved: Path) -> None:
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"path: {resolved.name or resolved} is {_kind(st.st_mode)}, not a photo file; "
                              "only regular files are read")
        if st.st_size > self.max_bytes:
            raise PathRefused(f"path: {resolved.name!r} is {_human(st.st_size)}; photos larger than "
                              f"{_human(self.max_bytes)} are refused ({MAX_UPLOAD_ENV})")

    def export_target(self, path: object, default_name: str, overwrite: bool) -> Path:
        """Where ``export`` may write: a file, or ``default_name`` inside a folder; resolved and checked."""
        named = self._named(path)
        target = self.allowed(named)
        if target.is_dir():
            target = self.allowed(target / default_name)
        if not target.parent.is_dir():
            raise PathRefused(f"path: the folder {str(target.parent)!r} does not exist")
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            return target
        except OSError as exc:
            raise PathRefused(f"path: {target.name!r} cannot be checked ({exc.strerror})") from None
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"path: {target} is {_kind(st.st_mode)}; export writes regular files only")
        if not overwrite:
            raise PathRefused(f"path: {target} already exists; pass overwrite: true to replace it")
        return target

    def write_file(self, data: bytes, target: Path, overwrite: bool) -> Path:
        """Write ``data`` to ``target`` atomically (temporary file, fsync, rename); never clobbers unless asked."""
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o644)   # an ordinary file for its owner's other tools (mkstemp makes it 0600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if overwrite:
                os.replace(tmp, target)
            else:
                try:
                    os.link(tmp, target)      # fails if the name appeared meanwhile: nothing is replaced
                except FileExistsError:
                    raise PathRefused(f"path: {target} already exists; pass overwrite: true to replace it") from None
                except OSError as exc:
                    if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                        raise
                    _create_new(target, data)   # a file system without hard links: still never clobbers
                finally:
                    os.unlink(tmp)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return target


def _create_new(target: Path, data: bytes) -> None:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise PathRefused(f"path: {target} already exists; pass overwrite: true to replace it") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


__all__ = ["CLIENT_ROOTS_ENV", "DEFAULT_MAX_UPLOAD", "FileRules", "MAX_UPLOAD_ENV", "PathRefused", "ROOTS_ENV",
           "check_settings", "client_roots_allowed", "env_roots", "max_photo_bytes", "parse_size", "root_from_uri"]
