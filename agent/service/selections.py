"""The session's selection: a painted mask, a clicked region or a box, kept as a content-addressed blob.

"The selection" is what chat refers to ("brighten the selection", "remove this");
the planner swaps ``{"type": "selection"}`` for the stored painted spec.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agent.errors import InvalidInput
from agent.service.leases import SessionLeases
from agent.service.sources import PhotoSources
from agent.store import Store
from pipeline import selections
from pipeline.imageio import save_image


class Selections:
    """Selections of one Studio's sessions (pixels in the shared blob store)."""

    def __init__(self, store: Store, leases: SessionLeases, sources: PhotoSources, blobs):
        self.store, self.leases, self.sources, self.blobs = store, leases, sources, blobs

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
            try:
                if kind == "mask":
                    pixels = selections.painted_mask(value, (source.height, source.width))
                elif kind == "point":
                    pixels = selections.click_mask(source.pixels, value)
                else:
                    pixels = selections.box_mask(source.pixels, value)
            except selections.SelectionError as exc:
                raise InvalidInput(str(exc)) from None
            share = selections.coverage(pixels)
            if not np.any(pixels >= 128):
                raise InvalidInput("The selection is empty (zero pixels): brush over, click on or drag a box "
                                   "around what you want to select. Nothing was changed.")
            digest = self.blobs.put_array(pixels)
            preview = self.store.session_dir(session_id) / "selections" / f"{digest[:24]}.png"
            if not preview.exists():
                save_image(selections.preview(source.pixels, pixels), preview)
            spec = {"type": "painted", "blob": digest}
            settings = dict(session.settings)
            settings["selection"] = {"mask": spec, "coverage": round(share, 6), "source": kind}
            self.store.update_session(session_id, settings=settings)
        return {"selection_id": digest, "coverage": share, "preview": str(preview), "mask": spec, "source": kind}

    def current(self, session_id: str) -> dict | None:
        """The session's latest selection (as select returned it, without the preview), or None."""
        found = self.leases.session(session_id).settings.get("selection")
        if not found:
            return None
        return {"selection_id": found["mask"]["blob"], "coverage": found["coverage"], "mask": dict(found["mask"]),
                "source": found.get("source")}
