"""The session's selection: a painted mask, a clicked region or a box, kept as a content-addressed blob.

"The selection" is what chat refers to ("brighten the selection", "remove this");
the planner swaps ``{"type": "selection"}`` for the stored painted spec.

A person selects on the picture as the studio shows it: the version under review,
else the head, in that version's frame (cropped, rotated, straightened, mirrored).
The mask is made there and stored in the original's frame (pipeline/selections.py
maps it), so every version, cropped or not, applies it to the same pixels.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agent.errors import InvalidInput
from agent.service.leases import SessionLeases
from agent.service.sources import PhotoSources
from agent.service.turns import TurnRunner
from agent.store import SessionRecord, Store
from pipeline import selections
from pipeline.geometry import framed
from pipeline.imageio import save_image
from pipeline.render import Renderer
from pipeline.state import EditState

#: Long side of the selection previews (the photo with the selection tinted).
PREVIEW_SIDE = 1024


class Selections:
    """Selections of one Studio's sessions (pixels in the shared blob store)."""

    def __init__(self, store: Store, leases: SessionLeases, sources: PhotoSources, blobs, renderer: Renderer,
                 turns: TurnRunner):
        self.store, self.leases, self.sources, self.blobs = store, leases, sources, blobs
        self.renderer, self.turns = renderer, turns

    def _shown_state(self, session: SessionRecord) -> EditState:
        """The version the studio shows to select on: the one under review, else the head."""
        pending = self.turns.pending(session) if session.active_thread else None
        asset_id = pending["asset_id"] if pending else session.head_asset_id
        return EditState.from_dict(self.store.get_asset(asset_id, session.id).state)

    def select(self, session_id: str, *, mask: Any = None, point: Any = None, box: Any = None) -> dict:
        """Make the session's selection from exactly one of ``mask``, ``point`` or ``box`` (see Studio.select)."""
        given = {k: v for k, v in (("mask", mask), ("point", point), ("box", box)) if v is not None}
        if len(given) != 1:
            raise InvalidInput("select: give exactly one of mask (a painted mask), point [x, y] or box "
                               f"[x0, y0, x1, y1]; got {', '.join(given) or 'none'}")
        (kind, value), = given.items()
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            source = self.sources.get(session_id)
            state = self._shown_state(session)
            frame = self.renderer.frame(source, state)
            full = frame.size_at(None) if frame is not None else (source.height, source.width)
            try:
                if kind == "mask":
                    shown = selections.painted_mask(value, full)
                else:
                    # the displayed frame of the untouched original, at the size clicks are analysed
                    small = (framed(source.pixels, frame, frame.size_at(selections.CLICK_SIDE))
                             if frame is not None else source.pixels)
                    shown = (selections.click_mask(small, value) if kind == "point"
                             else selections.box_mask(small, value))
            except selections.SelectionError as exc:
                raise InvalidInput(str(exc)) from None
            if not np.any(shown >= 128):
                raise InvalidInput("The selection is empty (zero pixels): brush over, click on or drag a box "
                                   "around what you want to select. Nothing was changed.")
            share = selections.coverage(shown)               # of the picture as the person sees it
            pixels = selections.to_original(shown, frame, (source.height, source.width))
            digest = self.blobs.put_array(pixels)
            spec = {"type": "painted", "blob": digest}
            preview = self._preview(session_id, source, state, pixels, digest)
            settings = dict(session.settings)
            settings["selection"] = {"mask": spec, "coverage": round(share, 6), "source": kind}
            self.store.update_session(session_id, settings=settings)
        return {"selection_id": digest, "coverage": share, "preview": str(preview), "mask": spec, "source": kind}

    def _preview(self, session_id: str, source, state: EditState, pixels: np.ndarray, digest: str) -> Path:
        """The version as shown with the selection tinted and outlined (a PNG, cached by content)."""
        preview = self.store.session_dir(session_id) / "selections" / f"{digest[:24]}-{state.key()[:16]}.png"
        if not preview.exists():
            shown = self.renderer.render(source, state, PREVIEW_SIDE)
            frame = self.renderer.frame(source, state)
            here = selections.to_display(pixels, frame, shown.shape[:2], (source.height, source.width))
            save_image(selections.preview(np.ascontiguousarray(shown), here, PREVIEW_SIDE), preview)
        return preview

    def current(self, session_id: str) -> dict | None:
        """The session's latest selection (as select returned it, without the preview), or None."""
        found = self.leases.session(session_id).settings.get("selection")
        if not found:
            return None
        return {"selection_id": found["mask"]["blob"], "coverage": found["coverage"], "mask": dict(found["mask"]),
                "source": found.get("source")}

    def shown(self, session_id: str) -> Path | None:
        """The session's selection tinted on the version the studio shows, in that version's frame
        (a later crop or rotation moves it with the picture); None without a selection."""
        with self.leases.lock(session_id):
            session = self.leases.session(session_id)
            found = session.settings.get("selection")
            if not found:
                return None
            digest = found["mask"]["blob"]
            try:
                pixels = np.asarray(self.blobs.get_array(digest), np.uint8)
            except (LookupError, ValueError):
                return None          # a selection whose pixels are gone: nothing to show
            return self._preview(session_id, self.sources.get(session_id), self._shown_state(session), pixels,
                                 digest)
