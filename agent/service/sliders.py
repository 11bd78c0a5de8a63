"""Hands on the sliders: live previews that record nothing, and slider values kept as a version.

What the sliders move is the version under review, else the head. Values are
checked against the op registry (canonical names, ranges) before anything renders.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent.config import AgentConfig
from agent.errors import InvalidInput
from agent.service.leases import SessionLeases
from agent.service.records import ProgressFn, TurnResult
from agent.service.renders import VIEW_QUALITY, canonical_side, on_checkerboard
from agent.service.sources import PhotoSources
from agent.service.turns import TurnRunner
from agent.store import AssetRecord, SessionRecord, Store
from pipeline import ops
from pipeline.imageio import save_image
from pipeline.render import Renderer
from pipeline.state import EditState, EditStateError

#: Live slider previews kept per session (older ones are deleted as new ones are written).
PREVIEWS_KEPT = 16


def checked_ops(values: dict, where: str) -> dict[str, int]:
    """``{op name or alias: value}`` -> ``{canonical op: checked int}``; the first bad one is InvalidInput."""
    out: dict[str, int] = {}
    for name, value in values.items():
        try:
            op = ops.get_op(name)
            out[op.name] = op.check(value)
        except ops.OpError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
    return out


def check_values(values: Any) -> dict[str, int]:
    """Modify values: at least one op and its new value, each checked."""
    if not isinstance(values, dict) or not values:
        raise InvalidInput("modify: give at least one op and its new value, e.g. saturation=-20")
    return checked_ops(values, "modify")


def check_layer_values(layers: Any, state: EditState) -> list[dict]:
    """``{layer index: {op: value}}`` (or a list aligned with the layers) -> ``[{"mask", "values"}]``."""
    if layers is None:
        return []
    if isinstance(layers, (list, tuple)):
        layers = {i: v for i, v in enumerate(layers) if v}
    if not isinstance(layers, dict):
        raise InvalidInput("layers: expected {layer index: {op: value}}")
    out = []
    for index, values in layers.items():
        try:
            i = int(index)
        except (TypeError, ValueError):
            raise InvalidInput(f"layers: {index!r} is not a layer number") from None
        if isinstance(index, bool) or not 0 <= i < len(state.layers):
            raise InvalidInput(f"layers: this version has no local layer {index!r} "
                               f"({len(state.layers)} layer(s), numbered from 0)")
        if not isinstance(values, dict):
            raise InvalidInput(f"layers[{i}]: expected {{op: value}}, got {type(values).__name__}")
        checked = checked_ops(values, f"layers[{i}]")
        if checked:
            out.append({"index": i, "mask": dict(state.layers[i].mask), "values": checked})
    return out


def with_values(state: EditState, values: dict[str, int], layers: list[dict]) -> EditState:
    """``state`` with the global ``values`` and the layers' values set (not clamped: they were checked)."""
    try:
        if values:
            state = state.with_settings(values, clamp=False)
        for layer in layers:
            for name, value in layer["values"].items():
                state = state.with_value(name, value, mask=layer["mask"], mode="set", clamp=False)
    except EditStateError as exc:  # fine one by one, not together (a crop that keeps nothing)
        raise InvalidInput(f"values: {exc}") from None
    return state


def check_together(store: Store, session: SessionRecord, pending: dict | None, values: dict) -> None:
    """Values that are fine one by one but not together (a crop that keeps nothing): InvalidInput."""
    asset_id = (pending or {}).get("asset_id") or session.head_asset_id
    if not asset_id:
        return
    try:
        EditState.from_dict(store.get_asset(asset_id, session.id).state).with_settings(values, clamp=False)
    except EditStateError as exc:
        raise InvalidInput(f"modify: {exc}") from None


class Sliders:
    """Previews and slider versions for one Studio's sessions."""

    def __init__(self, store: Store, leases: SessionLeases, turns: TurnRunner, sources: PhotoSources,
                 renderer: Renderer, config: AgentConfig):
        self.store, self.leases, self.turns = store, leases, turns
        self.sources, self.renderer, self.config = sources, renderer, config

    def _base(self, session: SessionRecord) -> AssetRecord:
        """What the sliders move: the version under review, else the head."""
        pending = self.turns.pending(session)
        return self.store.get_asset(pending["asset_id"] if pending else session.head_asset_id, session.id)

    def preview(self, session_id: str, values: dict | None, *, layers: Any = None) -> Path:
        """A proxy render of the shown version with ``values`` set, recording nothing (see Studio.preview)."""
        # no session lock: a preview reads the base as it is and never waits for a turn (or a commit) to end
        session = self.leases.session(session_id)
        base = EditState.from_dict(self._base(session).state)
        checked = check_values(values) if values else {}
        state = with_values(base, checked, check_layer_values(layers, base))
        side = self.config.proxy_long_side
        folder = self.store.session_dir(session_id) / "previews"
        path = folder / f"{state.key()}-{canonical_side(session.width, session.height, side)}.jpg"
        if not path.exists():
            source = self.sources.get(session_id)
            # a draft frame: the slider is moving; the frame it stops on is kept exactly (keep / set_values)
            shown = on_checkerboard(self.renderer.render(source, state, side, draft=True),
                                    self.renderer.alpha_for(source, state, side))
            save_image(shown, path, quality=VIEW_QUALITY)
            for old in sorted(folder.glob("*.jpg"), key=lambda p: p.stat().st_mtime)[:-PREVIEWS_KEPT]:
                old.unlink(missing_ok=True)
        return path

    def keep(self, session_id: str, values: dict | None, *, layers: Any = None,
             progress: ProgressFn | None = None) -> TurnResult:
        """Record the sliders' values as a version (see Studio.set_values)."""
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            base = EditState.from_dict(self._base(session).state)
            checked = check_values(values) if values else {}
            layer_values = check_layer_values(layers, base)
            if with_values(base, checked, layer_values) == base:
                raise InvalidInput("set_values: those are already the values of this version")
            if self.turns.pending(session) is not None:
                decision = {"action": "modify", "values": checked, "layers": layer_values}
                return self.turns.resume(session, decision, "/modify", progress)
            words = " ".join([f"{k}={v}" for k, v in checked.items()]
                             + [f"{k}@layer{l['index']}={v}" for l in layer_values for k, v in l["values"].items()])
            return self.turns.start(session, f"/modify {words}", modify_values=checked or None,
                                    modify_layers=layer_values or None, progress=progress)
