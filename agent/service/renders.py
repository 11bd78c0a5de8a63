"""Pixels of a version: renders in memory, cached PNGs, the original, and exports.

Every version renders from the untouched original with its own EditState, so a
render here is a cache of a pure function. Files go under the session's folder
(renders, the original at a size) or the shared storage (exports).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np

from agent.config import AgentConfig
from agent.errors import AtelierError, InvalidInput
from agent.service.sources import PhotoSources
from agent.store import AssetRecord, SessionRecord, Store
from pipeline.export import export_bytes
from pipeline.imageio import save_image
from pipeline.render import Renderer, SourceImage, in_frame_of
from pipeline.state import EditState

EXPORT_FORMATS = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "tiff": "tif", "tif": "tif", "webp": "webp"}
#: JPEG quality of the pictures the studio shows (exports keep their own format and quality).
VIEW_QUALITY = 92
#: The checkerboard behind transparent pixels: two greys, squares of this share of the long side.
CHECKER_GREYS = (0x9c, 0x6a)
CHECKER_SHARE = 1 / 80


def on_checkerboard(pixels: np.ndarray, alpha: np.ndarray | None) -> np.ndarray:
    """uint8 RGB pixels over a grey checkerboard where ``alpha`` (uint8, same size) is transparent;
    ``pixels`` themselves when there is no alpha (the hidden colours under alpha 0 never show)."""
    if alpha is None:
        return pixels
    h, w = pixels.shape[:2]
    cell = max(4, round(max(h, w) * CHECKER_SHARE))
    ys, xs = np.indices((h, w))
    board = np.where(((ys // cell) + (xs // cell)) % 2 == 0, CHECKER_GREYS[0], CHECKER_GREYS[1]).astype(np.float32)
    a = alpha.astype(np.float32)[..., None] / 255.0
    out = pixels.astype(np.float32) * a + board[..., None] * (1.0 - a)
    return np.clip(out + 0.5, 0, 255).astype(np.uint8)


def canonical_side(width: int, height: int, long_side: int | None) -> int:
    """The long side a render at ``long_side`` really has (renders never upscale)."""
    full = max(width, height)
    return full if long_side is None else min(int(long_side), full)


def check_side(long_side: Any) -> int | None:
    """A long side in pixels (16..16384) or None for full resolution; anything else is InvalidInput."""
    if long_side is None:
        return None
    if isinstance(long_side, bool) or not isinstance(long_side, int) or not 16 <= long_side <= 16384:
        raise InvalidInput(f"long_side: expected a whole number of pixels 16..16384, got {long_side!r}")
    return long_side


class Renders:
    """Renders and exports of one Studio's sessions.

    ``session(session_id)``: the settled session row (see SessionLeases.session).
    """

    def __init__(self, store: Store, sources: PhotoSources, renderer: Renderer, storage, config: AgentConfig,
                 session: Callable[[str], SessionRecord]):
        self.store, self.sources, self.renderer, self.storage, self.config = store, sources, renderer, storage, config
        self._session = session

    def asset(self, session_id: str, asset_id: str | None) -> AssetRecord:
        """A version of the session (default: the head); an unknown id is InvalidInput."""
        if asset_id is None:
            asset_id = self._session(session_id).head_asset_id
        try:
            return self.store.get_asset(asset_id, session_id)
        except AtelierError:
            raise InvalidInput(f"no version {asset_id!r} in this session") from None

    def render(self, session_id: str, asset_id: str | None = None, *, long_side: int | None = 1600) -> np.ndarray:
        """uint8 RGB render of a version (default: the head); ``long_side=None`` is full resolution."""
        side = check_side(long_side)
        asset = self.asset(session_id, asset_id)
        pixels = self.renderer.render(self.sources.get(session_id), EditState.from_dict(asset.state), side)
        return np.array(pixels, copy=True)

    def render_path(self, session_id: str, asset_id: str | None = None, *, long_side: int = 1600) -> Path:
        """The same render as a cached PNG under the session's folder."""
        side = check_side(long_side)
        asset = self.asset(session_id, asset_id)
        session = self.store.get_session(session_id)
        path = self.store.render_path(session_id, asset.id, canonical_side(session.width, session.height, side))
        if not path.exists():
            pixels = self.renderer.render(self.sources.get(session_id), EditState.from_dict(asset.state), side)
            save_image(pixels, path)
        return path

    def proxy_path(self, session_id: str, asset_id: str | None) -> str | None:
        """The proxy a turn's answer shows (None when there is no version, or it cannot be rendered)."""
        if not asset_id:
            return None
        try:
            return str(self.render_path(session_id, asset_id, long_side=self.config.proxy_long_side))
        except AtelierError:
            return None

    def original_path(self, session_id: str, *, long_side: int = 1600) -> Path:
        """The untouched original as a cached PNG at ``long_side``."""
        side = check_side(long_side)
        session = self._session(session_id)
        path = self.store.session_dir(session_id) / "renders" / \
            f"original-{canonical_side(session.width, session.height, side)}.png"
        if not path.exists():
            source = self.sources.get(session_id)
            save_image(source.proxy(side) if side else source.pixels, path)
        return path

    def shown(self, source: SourceImage, state: EditState, long_side: int | None) -> np.ndarray:
        """A render as the studio shows it: transparency over a checkerboard (uint8 RGB)."""
        pixels = self.renderer.render(source, state, long_side)
        return on_checkerboard(pixels, self.renderer.alpha_for(source, state, long_side))

    def view_path(self, session_id: str, asset_id: str | None = None, *, long_side: int = 1600,
                  before: bool = False) -> Path:
        """A version as the studio shows it (default: the head), a JPEG cached under the session's folder.

        Transparent pixels sit on a grey checkerboard. ``before``: the untouched original in the same
        frame as the version (cropped, rotated, straightened and mirrored like it), so a before/after
        comparison lines up.
        """
        side = check_side(long_side)
        asset = self.asset(session_id, asset_id)
        state = EditState.from_dict(asset.state)
        if before:
            state = in_frame_of(EditState(), state)
        session = self.store.get_session(session_id)
        tag = f"{asset.id}-{canonical_side(session.width, session.height, side)}{'-before' if before else ''}"
        path = self.store.session_dir(session_id) / "views" / f"{tag}.jpg"
        if not path.exists():
            save_image(self.shown(self.sources.get(session_id), state, side), path, quality=VIEW_QUALITY)
        return path

    def export(self, session_id: str, asset_id: str | None = None, *, fmt: str = "jpeg", quality: int | None = None,
               long_side: int | None = None, keep_metadata: bool = True, drop_gps: bool = True) -> Path:
        """Render a version (default: the head) for export: jpeg, png, tiff or webp (see Studio.export)."""
        ext = EXPORT_FORMATS.get(str(fmt).lower())
        if ext is None:
            raise InvalidInput(f"fmt: expected jpeg, png, tiff or webp, got {fmt!r}")
        if quality is not None and (isinstance(quality, bool) or not isinstance(quality, int)
                                    or not 1 <= quality <= 100):
            raise InvalidInput(f"quality: expected a whole number 1..100, got {quality!r}")
        side = check_side(long_side)
        asset = self.asset(session_id, asset_id)
        q = self.config.export_quality if quality is None else quality
        tag = "full" if side is None else str(side)
        if quality is not None and ext in ("jpg", "webp"):
            tag += f"-q{q}"
        if not keep_metadata:
            tag += "-nometa"
        elif not drop_gps:
            tag += "-gps"
        key = f"{session_id}/exports/{asset.id}-{tag}.{ext}"   # in the shared storage: any replica finds it
        if not self.storage.exists(key):
            data = export_bytes(self.renderer, self.sources.get(session_id), EditState.from_dict(asset.state),
                                fmt=ext, long_side=side, quality=q, keep_metadata=keep_metadata, drop_gps=drop_gps)
            self.storage.write_bytes(key, data)
        return self.storage.local_path(key)
