"""Sessions: a new one from a photo (the untouched original), the resume token, the session row as info.

The original's file is written before the row that names it; a photo that does
not load creates nothing.
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path
from typing import Any, Callable

import numpy as np

from agent.config import REVIEW_MODES, AgentConfig
from agent.errors import InvalidInput, SessionBusy, SessionNotFound
from agent.service.leases import SessionLeases
from agent.service.output_schemas import OutputSchemas
from agent.service.records import SessionInfo, iso
from agent.service.sources import PhotoSources
from agent.store import SessionRecord, Store, new_id
from pipeline.admission import AdmissionTimeout
from pipeline.imageio import ImageLoadError, encode_image, load_image
from pipeline.render import SourceImage
from pipeline.state import EditState

_FORMAT_EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "TIFF": "tif", "GIF": "gif", "MPO": "jpg",
               "DNG": "dng", "CR2": "cr2", "CR3": "cr3", "NEF": "nef", "ARW": "arw", "RAF": "raf", "ORF": "orf"}
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{20,128}$")


class Sessions:
    """Creating, finding and describing one Studio's sessions.

    ``styles()``: the named looks a session may start with.
    """

    def __init__(self, store: Store, storage, leases: SessionLeases, sources: PhotoSources,
                 schemas: OutputSchemas, config: AgentConfig, styles: Callable[[], list[str]]):
        self.store, self.storage, self.leases, self.sources = store, storage, leases, sources
        self.schemas, self.config, self.styles = schemas, config, styles

    def start(self, image: Any, *, style: str | None = None, review_mode: str | None = None,
              filename: str | None = None, planner_schema: str | None = None,
              quality_schema: str | None = None, executor_schema: str | None = None) -> SessionInfo:
        """Store ``image`` as the untouched original of a new session (see Studio.start_session)."""
        schema_names = {"planner_schema": self.schemas.check("planner", planner_schema),
                        "quality_schema": self.schemas.check("quality", quality_schema),
                        "executor_schema": self.schemas.check("executor", executor_schema)}
        mode = review_mode or self.config.review_mode
        if mode not in REVIEW_MODES:
            raise InvalidInput(f"review_mode: expected one of {', '.join(REVIEW_MODES)}, got {review_mode!r}")
        if style is not None:
            if not isinstance(style, str) or not style.strip():
                raise InvalidInput(f"style: expected a look name, got {style!r}")
            known = self.styles()
            if known and style not in known:
                raise InvalidInput(f"style: unknown look {style!r}; choose one of {', '.join(known)}")
        data, title = self._original_bytes(image, filename)
        try:
            loaded = load_image(data, max_pixels=self.config.max_upload_pixels, alpha="keep", name=title or None)
        except ImageLoadError as exc:
            raise InvalidInput(str(exc)) from None
        except AdmissionTimeout as exc:      # the memory budget stayed full: nothing was stored
            raise SessionBusy(str(exc)) from None
        if loaded.pixels.ndim == 3 and loaded.pixels.shape[2] == 4 and (loaded.pixels[:, :, 3] < 255).any():
            loaded.notices.append("Transparency kept: PNG, TIFF and WebP exports keep it.")
        session_id = new_id()
        name = f"original.{_FORMAT_EXT.get(loaded.format, 'img')}"
        try:
            self.storage.write_bytes(f"{session_id}/{name}", data)   # the file before the row that names it
            record, _ = self.store.create_session(
                session_id=session_id, resume_token=secrets.token_urlsafe(32), title=title, style=style,
                review_mode=mode, original_path=name, width=loaded.width, height=loaded.height,
                original_state=EditState().to_dict(),
                settings={"notices": list(loaded.notices), **schema_names})
        except Exception:
            self.store.remove_session_files(session_id)
            raise
        source = SourceImage.from_loaded(loaded)
        self.sources.remember(session_id, source)
        self.leases.mark_settled(session_id)
        self.sources.warm(source)
        return self.info(record)

    def _original_bytes(self, image: Any, filename: str | None) -> tuple[bytes, str]:
        title = (Path(filename).name if filename else "") or ""
        if isinstance(image, np.ndarray):
            if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3 or min(image.shape[:2]) < 1:
                raise InvalidInput(f"image: expected a uint8 RGB array (H, W, 3), got {image.dtype} {image.shape}")
            if image.shape[0] * image.shape[1] > self.config.max_upload_pixels:
                raise InvalidInput(f"image: {image.shape[1]}x{image.shape[0]} is larger than "
                                   f"{self.config.max_upload_pixels / 1e6:.0f} MP")
            return encode_image(np.ascontiguousarray(image), "png"), title or "Untitled"
        if isinstance(image, (bytes, bytearray, memoryview)):
            return bytes(image), title or "Untitled"
        if isinstance(image, (str, os.PathLike)):
            path = Path(image)
            try:
                return path.read_bytes(), title or path.name
            except FileNotFoundError:
                raise InvalidInput(f"There is no file named {path.name!r}.") from None
            except IsADirectoryError:
                raise InvalidInput(f"{path.name!r} is a folder, not an image file.") from None
            except OSError as exc:
                raise InvalidInput(f"The file {path.name!r} could not be read ({exc.strerror}).") from None
        raise InvalidInput(f"image: expected bytes, a file path or an RGB array, got {type(image).__name__}")

    def info(self, s: SessionRecord) -> SessionInfo:
        return SessionInfo(id=s.id, resume_token=s.resume_token, created_at=iso(s.created_at),
                           updated_at=iso(s.updated_at), title=s.title, style=s.style,
                           review_mode=s.review_mode, turns=self.store.turn_count(s.id),
                           head_asset_id=s.head_asset_id, width=s.width, height=s.height,
                           notices=list(s.settings.get("notices") or []),
                           planner_schema=str(s.settings.get("planner_schema") or "default"),
                           quality_schema=str(s.settings.get("quality_schema") or "default"),
                           executor_schema=str(s.settings.get("executor_schema") or "default"),
                           shareable=bool(s.settings.get("shareable", False)))

    def get(self, session_id: str) -> SessionInfo:
        return self.info(self.leases.session(session_id))

    def set_shareable(self, session_id: str, shareable: bool) -> SessionInfo:
        """Mark (or unmark) a session as shareable training data."""
        if not isinstance(shareable, bool):
            raise InvalidInput(f"shareable: expected true or false, got {shareable!r}")
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            settings = dict(session.settings)
            settings["shareable"] = shareable
            self.store.update_session(session_id, settings=settings)
            return self.info(self.leases.session(session_id))

    def use_schema(self, session_id: str, name: str, agent: str | None = None) -> SessionInfo:
        """Make ``name`` the session's output schema for ``agent`` (planner, executor, quality) from the next
        turn on; without ``agent``, for every agent that has a schema by that name. InvalidInput when none has."""
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(f"name: expected a schema name, got {name!r}")
        agents = [agent] if agent is not None else ["planner", "executor", "quality"]
        found = [a for a in agents if name.strip() in self.schemas.names(a)]
        if not found:
            where = agent or "planner, executor or quality"
            raise InvalidInput(f"name: no {where} schema named {name.strip()!r}; "
                               + "; ".join(f"{a}: {', '.join(self.schemas.names(a))}" for a in agents))
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            settings = dict(session.settings)
            settings.update({f"{a}_schema": self.schemas.check(a, name.strip()) for a in found})
            self.store.update_session(session_id, settings=settings)
            return self.info(self.leases.session(session_id))

    def resume(self, token: str) -> SessionInfo:
        """The session a browser's resume token names; unknown or malformed tokens raise SessionNotFound."""
        if not isinstance(token, str) or not _TOKEN_RE.match(token):
            raise SessionNotFound("that session link is not valid")
        record = self.store.find_by_token(token)
        if not secrets.compare_digest(record.resume_token, token):
            raise SessionNotFound("that session link is not valid")
        return self.get(record.id)

    def all(self) -> list[SessionInfo]:
        return [self.info(s) for s in self.store.list_sessions()]
