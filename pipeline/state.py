"""EditState: the whole recipe of one version of a photo.

An EditState is global op settings plus an ordered list of local layers, each
a mask spec with its own settings. It is small, immutable, JSON round-trips
exactly, and hashes to a stable key, so every version of a photo is a row of
JSON and pixels are only ever a cache (``render(original, state)``).

Values are integers -100..100 from the op registry; zero values are never
stored, so two states that render the same compare equal and share a key.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from pipeline import ops
from pipeline.generate.layers import GeneratedLayer, GeneratedLayerError
from pipeline.geometry import GeometryError, crop_insets, frame_for
from pipeline.masks import MaskSpecError, mask_json_schema, normalize_mask_spec


class EditStateError(ValueError):
    """A malformed EditState: the message names the bad field."""


def _settings(data: Any, where: str, clamp: bool, *, local: bool = True) -> dict[str, int]:
    try:
        settings = ops.check_settings(data or {}, clamp=clamp)
    except ops.OpError as exc:
        raise EditStateError(f"{where}: {exc}") from None
    if not local:
        _refuse_region_ops(settings, where)
    if where.endswith("layers") or ".layers[" in where:
        whole = [k for k in settings if k in _WHOLE_FRAME]
        if whole:
            raise EditStateError(f"{where}: {', '.join(whole)} apply to the whole picture, not to a local layer")
    elif any(ops.OPS[k].kind == "geometry" for k in settings):
        try:
            frame_for(settings, 1000, 1000)
        except GeometryError as exc:
            raise EditStateError(f"{where}: {exc}") from None
    return settings


def _refuse_region_ops(settings: Mapping[str, Any], where: str) -> None:
    region = [n for n in settings if n in ops.REGION_OPS]
    if region:
        raise EditStateError(f"{where}: {', '.join(region)} works on a selected region only "
                             "(a local layer with a mask), not on the whole photo")


#: Ops that only make sense for the whole frame (never inside a layer's mask).
WHOLE_FRAME_OPS = _WHOLE_FRAME = frozenset(
    n for n, o in ops.OPS.items()
    if o.kind == "geometry" or n in ("vignette", "vignette_midpoint", "vignette_feather", "grain", "grain_size"))


@dataclass(frozen=True)
class LocalLayer:
    """A local adjustment: ``settings`` applied where ``mask`` is 1.

    ``opacity`` 0..1 scales the whole layer; ``feather`` 0..100 softens the
    mask edge (100 = a blur of 5% of the short side).
    """

    mask: dict
    settings: dict = field(default_factory=dict)
    opacity: float = 1.0
    feather: int = 0
    name: str = ""

    def to_dict(self) -> dict:
        d: dict[str, Any] = {"mask": self.mask, "settings": dict(self.settings)}
        if self.opacity != 1.0:
            d["opacity"] = self.opacity
        if self.feather:
            d["feather"] = self.feather
        if self.name:
            d["name"] = self.name
        return d

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "layer", clamp: bool = False) -> "LocalLayer":
        if not isinstance(data, Mapping):
            raise EditStateError(f"{where}: expected an object, got {type(data).__name__}")
        unknown = set(data) - {"mask", "settings", "opacity", "feather", "name"}
        if unknown:
            raise EditStateError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        if "mask" not in data:
            raise EditStateError(f"{where}.mask: required")
        try:
            mask = normalize_mask_spec(data["mask"])
        except MaskSpecError as exc:
            raise EditStateError(f"{where}.mask: {exc}") from None
        opacity = data.get("opacity", 1.0)
        if isinstance(opacity, bool) or not isinstance(opacity, (int, float)) or not 0 <= opacity <= 1:
            if clamp and isinstance(opacity, (int, float)) and not isinstance(opacity, bool):
                opacity = min(1.0, max(0.0, float(opacity)))
            else:
                raise EditStateError(f"{where}.opacity: expected a number 0..1, got {opacity!r}")
        feather = data.get("feather", 0)
        if isinstance(feather, bool) or not isinstance(feather, (int, float)) or not 0 <= feather <= 100:
            if clamp and isinstance(feather, (int, float)) and not isinstance(feather, bool):
                feather = min(100, max(0, feather))
            else:
                raise EditStateError(f"{where}.feather: expected a number 0..100, got {feather!r}")
        name = data.get("name", "")
        if not isinstance(name, str):
            raise EditStateError(f"{where}.name: expected text, got {name!r}")
        return cls(
            mask=mask,
            settings=_settings(data.get("settings"), f"{where}.settings", clamp),
            opacity=float(opacity),
            feather=int(round(feather)),
            name=name[:80],
        )


def _generated(data: Any) -> tuple:
    if not data:
        return ()
    if not isinstance(data, (list, tuple)):
        raise EditStateError("state.generated: expected a list")
    try:
        return tuple(GeneratedLayer.from_dict(g, where=f"state.generated[{i}]") for i, g in enumerate(data))
    except GeneratedLayerError as exc:
        raise EditStateError(str(exc)) from None


@dataclass(frozen=True)
class EditState:
    """Global settings plus ordered local layers. Treat as immutable."""

    settings: dict = field(default_factory=dict)
    layers: tuple = ()
    #: Generated layers (pipeline.generate.layers.GeneratedLayer), composited onto the
    #: original before any adjustment; their pixels live in the blob store.
    generated: tuple = ()

    # -- construction -------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, *, clamp: bool = False) -> "EditState":
        """Build from plain data, rejecting unknown ops and out-of-range values.

        With ``clamp=True`` out-of-range numbers are rounded into range instead;
        unknown op names are always an error (never silently dropped).
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise EditStateError(f"state: expected an object, got {type(data).__name__}")
        unknown = set(data) - {"settings", "layers", "version", "generated"}
        if unknown:
            raise EditStateError(f"state: unknown field(s) {', '.join(sorted(unknown))}")
        layers = data.get("layers") or []
        if not isinstance(layers, list):
            raise EditStateError("state.layers: expected a list")
        return cls(
            settings=_settings(data.get("settings"), "state.settings", clamp, local=False),
            layers=tuple(
                LocalLayer.from_dict(l, where=f"state.layers[{i}]", clamp=clamp)
                for i, l in enumerate(layers)
            ),
            generated=_generated(data.get("generated")),
        )

    @classmethod
    def from_json(cls, text: str, *, clamp: bool = False) -> "EditState":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EditStateError(f"state: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_dict(data, clamp=clamp)

    def to_dict(self) -> dict:
        d = {"settings": dict(self.settings), "layers": [l.to_dict() for l in self.layers]}
        if self.generated:  # absent when empty, so states without generation keep their keys
            d["generated"] = [g.to_dict() for g in self.generated]
        return d

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, indent=indent, separators=None if indent else (",", ":"))

    def key(self) -> str:
        """Stable content hash: equal states give equal keys."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:32]

    # -- queries ------------------------------------------------------
    @property
    def is_identity(self) -> bool:
        return not self.settings and all(not l.settings for l in self.layers) and not self.generated

    def value(self, op: str, mask: Mapping | None = None) -> Any:
        """The op's value (0 when unset): an int, an angle (float) or curve points."""
        o = ops.get_op(op)
        empty = () if o.control == "points" else 0
        if mask is None:
            return self.settings.get(op, empty)
        layer = self.find_layer(mask)
        return layer.settings.get(op, empty) if layer else empty

    def find_layer(self, mask: Mapping) -> LocalLayer | None:
        spec = normalize_mask_spec(mask)
        for layer in self.layers:
            if layer.mask == spec:
                return layer
        return None

    # -- edits (return new states) -------------------------------------
    def with_value(self, op: str, value: Any, *, mask: Mapping | None = None,
                   mode: str = "set", clamp: bool = True, layer_name: str = "") -> "EditState":
        """Return a copy with ``op`` set (mode="set") or moved by ``value`` (mode="add").

        With ``mask`` the change goes to the local layer with that exact mask
        spec, created at the end of the layer list if missing.
        """
        if mode not in ("set", "add"):
            raise EditStateError(f"mode: expected 'set' or 'add', got {mode!r}")
        o = ops.get_op(op)
        if mask is None:
            _refuse_region_ops({op: 1}, "state.settings")
        current = self.value(op, mask)
        if mode == "add" and o.control in ("points", "choice") and not o.wrap:
            mode = "set"  # a curve or a choice has no "more": the value replaces it
        target = current + ops._as_number(op, value) if mode == "add" else value
        new = o.clamp(target) if clamp else o.check(target)
        if mask is None:
            settings = dict(self.settings)
            settings[op] = new
            return EditState(settings=_settings(settings, "state.settings", False), layers=self.layers,
                             generated=self.generated)
        spec = normalize_mask_spec(mask)
        layers = list(self.layers)
        for i, layer in enumerate(layers):
            if layer.mask == spec:
                s = dict(layer.settings)
                s[op] = new
                layers[i] = LocalLayer(spec, _settings(s, "state.layers", False), layer.opacity, layer.feather, layer.name)
                break
        else:
            layers.append(LocalLayer(spec, _settings({op: new}, "state.layers", False), name=layer_name))
        return EditState(settings=dict(self.settings), layers=tuple(layers), generated=self.generated)

    def with_settings(self, values: Mapping[str, Any], *, clamp: bool = True) -> "EditState":
        """Return a copy with several global values set at once."""
        settings = dict(self.settings)
        settings.update(values)
        return EditState(settings=_settings(settings, "state.settings", clamp, local=False), layers=self.layers,
                         generated=self.generated)

    def with_crop(self, rect: Any) -> "EditState":
        """Return a copy cropped to the normalised rectangle ``[x0, y0, x1, y1]`` (0..1 of
        the straightened frame); raises EditStateError for a rectangle outside the image."""
        try:
            insets = crop_insets(rect)
        except GeometryError as exc:
            raise EditStateError(str(exc)) from None
        return self.with_settings(insets, clamp=False)

    def with_generated(self, layer: GeneratedLayer | Mapping) -> "EditState":
        """Return a copy with one more generated layer on top of the others."""
        return EditState(settings=dict(self.settings), layers=self.layers,
                         generated=self.generated + (_generated([layer])[0],))

    def diff(self, other: "EditState") -> dict[str, tuple[int, int]]:
        """Global op -> (self value, other value) for every op that differs."""
        names = set(self.settings) | set(other.settings)
        return {n: (self.settings.get(n, 0), other.settings.get(n, 0))
                for n in ops.OPS if n in names and self.settings.get(n, 0) != other.settings.get(n, 0)}


def state_json_schema() -> dict:
    """JSON Schema of a serialised EditState, derived from the op registry."""
    settings = ops.settings_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "EditState",
        "$defs": mask_json_schema()["$defs"],
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "settings": settings,
            "layers": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["mask"],
                    "additionalProperties": False,
                    "properties": {
                        "mask": {"$ref": "#/$defs/mask"},
                        "settings": settings,
                        "opacity": {"type": "number", "minimum": 0, "maximum": 1},
                        "feather": {"type": "number", "minimum": 0, "maximum": 100},
                        "name": {"type": "string"},
                    },
                },
            },
            "version": {"type": "integer"},
            "generated": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["pixels", "mask", "box", "canvas"],
                    "additionalProperties": False,
                    "properties": {
                        "pixels": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "mask": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "box": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 4, "maxItems": 4},
                        "canvas": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2},
                        "offset": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
                        "recipe": {"type": "object"},
                        "name": {"type": "string"},
                    },
                },
            },
        },
    }
