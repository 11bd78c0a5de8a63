"""The pydantic models behind :mod:`pipeline.masks.specs`: one model per mask type, chosen by its
``type`` (a discriminated union), the reading of their errors into lines a person reads, and the JSON
schema a model is shown. Imported on the first spec checked, so a process that never meets a mask
(a one-shot edit of global values) does not pay for building them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, ClassVar, Literal, Mapping, NamedTuple, Union, get_args

from annotated_types import Ge, Le
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, TypeAdapter,
                      ValidationError, ValidationInfo, WithJsonSchema, WrapValidator, model_serializer,
                      model_validator)
from pydantic_core import PydanticCustomError

from pipeline.ops import BANDS

#: How many masks one intersect or union combines.
MAX_COMBINED = 8
#: How many levels masks nest inside combinations (invert, intersect, union) below the top one.
MAX_NESTING = 8


# -- field types --------------------------------------------------------------------------------------

def _rounded(digits: int) -> AfterValidator:
    return AfterValidator(lambda value: round(float(value), digits))


def _number(lo: float, hi: float) -> Any:
    """A number lo..hi (an int is fine, a bool or text is not), kept to 4 decimals."""
    return Annotated[float, Field(ge=lo, le=hi), _rounded(4)]


def _no_feather(value: Any, handler: Any) -> Any:
    # as ever: a missing, 0, false or null feather is no feather (left out of the canonical spec)
    return None if not value else handler(value)


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value  # a Python caller's (x, y)


def _both_radii(radius: list[float]) -> list[float]:
    if min(radius) <= 0:
        raise PydanticCustomError("mask_radius", "both radii must be above 0")
    return radius


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) and not isinstance(value, dict) else value


def _one_level_deeper(value: Any, handler: Any, info: ValidationInfo) -> Any:
    """Validate a nested mask, refusing one more than MAX_NESTING levels below the top (the depth
    so far lives in the validation context)."""
    context = info.context if isinstance(info.context, dict) else {}
    depth = context.get("depth", 0) + 1
    if depth > MAX_NESTING:
        raise PydanticCustomError("mask_depth", "masks nest at most {most} levels deep", {"most": MAX_NESTING})
    context["depth"] = depth
    try:
        return handler(value)
    finally:
        context["depth"] = depth - 1


Fraction = _number(0, 1)
Hue = _number(0, 360)
HueWidth = _number(1, 180)
#: A point's coordinate, a fraction of the image; -1..2 lets a gradient start off the frame. The
#: schema shows a point's shape only, as it always has.
Coord = Annotated[_number(-1, 2), WithJsonSchema({"type": "number"})]
Point = Annotated[list[Coord], Field(min_length=2, max_length=2), BeforeValidator(_as_list)]
Radii = Annotated[Point, AfterValidator(_both_radii)]
Band = Literal[tuple(BANDS)]
Feather = Annotated[float, Field(ge=0, le=100), _rounded(2), WrapValidator(_no_feather)]
Digest = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


# -- one model per type -------------------------------------------------------------------------------

class MaskSpec(BaseModel):
    """What every mask spec may carry: a feather (0..100, a blur of up to 5% of the short side) and
    ``invert``. Its dump is the canonical spec: ``type`` first, then the type's own fields, then
    ``feather`` and ``invert`` where set."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)
    _COMMON: ClassVar[tuple[str, ...]] = ("type", "feather", "invert")

    feather: Feather = None
    invert: bool = False

    @model_serializer(mode="plain")
    def _canonical(self) -> dict:
        out = {"type": self.type}
        out.update((name, getattr(self, name)) for name, info in type(self).model_fields.items()
                   if name not in self._COMMON and not info.exclude)
        if self.feather is not None:
            out["feather"] = self.feather
        if self.invert:
            out["invert"] = True
        return out


class LuminanceMask(MaskSpec):
    """Tones between ``low`` and ``high``, soft edges of ``softness``."""

    type: Literal["luminance"]
    low: Fraction = 0.0
    high: Fraction = 1.0
    softness: Fraction = 0.1

    @model_validator(mode="after")
    def _in_order(self) -> LuminanceMask:
        if self.low > self.high:
            raise PydanticCustomError("mask_order", "low ({low}) is above high ({high})",
                                      {"low": self.low, "high": self.high})
        return self


class ColorMask(MaskSpec):
    """A hue range (``hue ± hue_width``), or a named ``band`` read as its hue."""

    type: Literal["color"]
    hue: Hue = 0.0
    hue_width: HueWidth = 30.0
    min_saturation: Fraction = 0.12
    band: Band = Field(None, exclude=True)  # None: not given; never in the canonical spec

    @model_validator(mode="after")
    def _band_as_hue(self) -> ColorMask:
        if self.band is not None:
            if "hue" in self.model_fields_set:
                raise PydanticCustomError("mask_band", "give either 'band' or 'hue', not both")
            self.hue = BANDS[self.band]
        return self


class ShadeMask(MaskSpec):
    """The photo's own shade of a named colour: the pixels leaning furthest towards ``band`` (in CIELAB),
    at most ``share`` of the frame ("the green mat" where the mat is the greenest thing in it)."""

    type: Literal["shade"]
    band: Band
    share: Annotated[float, Field(ge=0.01, le=0.5), _rounded(4)] = 0.15


class SpotMask(MaskSpec):
    """The one thing standing out most by ``tone`` ("bright", "dark" or a colour band) inside ``within``, the
    part of the frame it is said to be in ("the bright crater top left", "the dark spot in the middle")."""

    type: Literal["spot"]
    tone: Literal[("bright", "dark") + tuple(BANDS)]
    within: Nested


class GradientMask(MaskSpec):
    """1 at ``start`` falling to 0 at ``end`` (fractions of the image)."""

    type: Literal["gradient"]
    start: Point = [0.5, 0.0]
    end: Point = [0.5, 1.0]

    @model_validator(mode="after")
    def _apart(self) -> GradientMask:
        if self.start == self.end:
            raise PydanticCustomError("mask_points", "start and end are the same point")
        return self


class RadialMask(MaskSpec):
    """An ellipse at ``center`` with radii ``radius``, soft edge of ``softness``."""

    type: Literal["radial"]
    softness: Fraction = 0.5
    center: Point = [0.5, 0.5]
    radius: Radii = [0.3, 0.3]


class FaceMask(MaskSpec):
    """Faces."""

    type: Literal["face"]


class SkinMask(MaskSpec):
    """Skin tones."""

    type: Literal["skin"]


class SkyMask(MaskSpec):
    """The sky."""

    type: Literal["sky"]


class SubjectMask(MaskSpec):
    """The main subject."""

    type: Literal["subject"]


class InvertMask(MaskSpec):
    """Everything outside ``mask``."""

    type: Literal["invert"]
    mask: Nested


class IntersectMask(MaskSpec):
    """Where all of ``masks`` are."""

    type: Literal["intersect"]
    masks: list[Nested] = Field(min_length=1, max_length=MAX_COMBINED)


class UnionMask(MaskSpec):
    """Where any of ``masks`` is."""

    type: Literal["union"]
    masks: list[Nested] = Field(min_length=1, max_length=MAX_COMBINED)


class PaintedMask(MaskSpec):
    """A mask painted in the studio, stored as a blob: its sha256 digest."""

    type: Literal["painted"]
    blob: Digest


class SelectionMask(MaskSpec):
    """The session's latest selection, in a plan (replaced by its painted spec before anything is built)."""

    type: Literal["selection"]


AnyMask = Annotated[Union[LuminanceMask, ColorMask, ShadeMask, SpotMask, GradientMask, RadialMask, FaceMask, SkinMask, SkyMask, SubjectMask,
                          InvertMask, IntersectMask, UnionMask, PaintedMask, SelectionMask],
                    Discriminator("type"), BeforeValidator(_plain)]
#: Stands for a nested mask in the models' JSON schemas until :func:`mask_json_schema` links ``#/$defs/mask``.
_NESTED_MARK = "x-nested-mask"
#: A mask inside a combination: the same schema, one level deeper.
Nested = Annotated[AnyMask, WrapValidator(_one_level_deeper), WithJsonSchema({_NESTED_MARK: True})]
for _combination in (InvertMask, IntersectMask, UnionMask, SpotMask):
    _combination.model_rebuild()

#: type -> its model, in the order the types are listed to a model and in messages.
_MODELS: dict[str, type[MaskSpec]] = {get_args(m.model_fields["type"].annotation)[0]: m
                                      for m in get_args(get_args(AnyMask)[0])}
MASK_TYPES = tuple(_MODELS)
_VALIDATOR = TypeAdapter(AnyMask)


# -- the gate -----------------------------------------------------------------------------------------

def validate(spec: Any, where: str) -> tuple[dict | None, list[str]]:
    """``spec`` in canonical form and no problems, or None and one line per problem (from ``where``)."""
    try:
        mask = _VALIDATOR.validate_python(spec, context={"depth": 0})
    except ValidationError as exc:
        return None, _problems(exc, where)
    return mask.model_dump(), []


# -- errors a person reads ----------------------------------------------------------------------------

class _Place(NamedTuple):
    """Where a pydantic error is: the label of the mask it is in and that mask's model, the field's
    name (None: the mask as a whole) and label, and whether it is one coordinate of a point."""

    owner: str
    model: type[MaskSpec] | None
    name: Any
    label: str
    element: bool


def _place(loc: tuple, where: str) -> _Place:
    """Read a pydantic loc such as ``('union', 'masks', 1, 'luminance', 'low')``, where each mask is
    named by its tag, as ``mask.masks[1].low``."""
    owner = label = where
    model, name, element, parts = None, None, False, iter(loc)
    for tag in parts:  # a mask, by its tag...
        model, owner, name = _MODELS.get(tag), label, next(parts, None)
        if name is None:
            break
        label = f"{owner}.{name}"  # ...then its field: a number, a point, or a nested mask or list of them
        if name not in ("mask", "within"):
            index = next(parts, None)
            if index is not None:
                label += f"[{index}]"
                element = name != "masks"
            if name != "masks" or index is None:
                break
    return _Place(owner, model, name, label, element)


def _bounds(at: _Place) -> str:
    """'0..1': the declared range of a number field (or of a point's coordinates)."""
    meta = ([x for m in Coord.__metadata__ for x in getattr(m, "metadata", ())] if at.element
            else at.model.model_fields[at.name].metadata)
    lo = next(m.ge for m in meta if isinstance(m, Ge))
    hi = next(m.le for m in meta if isinstance(m, Le))
    return f"{lo}..{hi}"


#: How a field that is not a number reads when it has the wrong shape (``{value!r}``: what came).
_EXPECTED = {
    "mask": "required for an invert mask",
    "masks": f"expected a list of 1..{MAX_COMBINED} mask specs",
    "blob": "expected the 64-character digest of a stored mask, got {value!r}",
    "band": f"expected one of {', '.join(BANDS)}, got {{value!r}}",
    "tone": f"expected bright, dark or one of {', '.join(BANDS)}, got {{value!r}}",
    "within": "required for a spot mask: the part of the frame to look in",
    "invert": "expected true or false, got {value!r}",
    **dict.fromkeys(("start", "end", "center", "radius"), "expected [x, y] as fractions of the image, got {value!r}"),
}
_NOT_A_NUMBER = {"float_type", "finite_number", "float_parsing"}
_OUT_OF_RANGE = {"greater_than_equal", "less_than_equal"}


def _problem(err: Mapping[str, Any], at: _Place) -> str:
    """One line for one pydantic error: the dotted field, then what was expected and what came."""
    kind, value = err["type"], err.get("input")
    if kind.startswith("mask_"):  # the checks above word their own
        return f"{at.label}: {err['msg']}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tag = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
        return f"{at.label}.type: expected one of {', '.join(MASK_TYPES)}, got {tag!r}"
    if kind in ("model_attributes_type", "model_type", "dict_type"):
        return f"{at.label}: expected an object with a 'type', got {type(value).__name__}"
    if at.model is not None and at.name is not None:
        if kind in _NOT_A_NUMBER:
            return f"{at.label}: expected a number {_bounds(at)}, got {value!r}"
        if kind in _OUT_OF_RANGE:
            return f"{at.label}: {value!r} is outside {_bounds(at)}"
        if at.name in _EXPECTED and not at.element:
            return f"{at.label}: " + _EXPECTED[at.name].format(value=None if kind == "missing" else value)
    return f"{at.label}: {err['msg']}"


def _problems(exc: ValidationError, where: str) -> list[str]:
    """One line per problem; a mask's unknown fields share one line."""
    lines: list[str] = []
    unknown: dict[str, tuple[type[MaskSpec], list[str]]] = {}
    for err in exc.errors(include_url=False):
        at = _place(tuple(err["loc"]), where)
        if err["type"] in ("extra_forbidden", "invalid_key") and at.model is not None:
            unknown.setdefault(at.owner, (at.model, []))[1].append(str(at.name))
        else:
            lines.append(_problem(err, at))
    for owner, (model, names) in unknown.items():
        kind = get_args(model.model_fields["type"].annotation)[0]
        lines.append(f"{owner}: unknown field(s) {', '.join(sorted(names))} for a {kind} mask")
    return lines


# -- what a model is shown ----------------------------------------------------------------------------

def _linked(node: Any) -> Any:
    """A model's JSON schema without pydantic's titles and defaults, nested masks as ``#/$defs/mask``."""
    if isinstance(node, list):
        return [_linked(item) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get(_NESTED_MARK):
        return {"$ref": "#/$defs/mask"}
    return {key: _linked(value) for key, value in node.items() if key not in ("title", "default")}


@lru_cache(maxsize=1)
def schema() -> dict:
    """The flat JSON schema of a mask spec (callers copy it before changing it)."""
    # one flat object: every type's fields (a name two types share has one schema), "type" naming them all
    props: dict[str, Any] = {"type": {"type": "string", "enum": list(MASK_TYPES)}}
    for model in _MODELS.values():
        for name, prop in model.model_json_schema()["properties"].items():
            props.setdefault(name, _linked(prop))
    mask = {"type": "object", "required": ["type"], "additionalProperties": False, "properties": props}
    return {"$defs": {"mask": mask}, "$ref": "#/$defs/mask"}
