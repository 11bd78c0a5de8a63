"""Output schemas: the contracts of the planner, executor and quality agents, as YAML.

A schema is a person-readable YAML file (``schemas/<agent>/<name>.yaml``) that
lists the fields an agent returns: type, required, ranges, enums and a
description. A person reshapes an agent's output by adding a file under
``schemas/<agent>/custom/`` that ``extends: default`` and adds fields.

- :func:`load_schema` resolves ``custom/<name>`` -> ``<name>`` and merges the
  ``extends`` chain down to ``default``; an unknown name is a clear
  :class:`SchemaError` listing the names that exist. Each field's spec is a
  :class:`FieldSpec` (a pydantic model, so a malformed file names its field).
- The loaded :class:`Schema` is a pydantic model built from those fields
  (``Schema.model``, with ``create_model``): :meth:`Schema.validate` returns
  every problem as a line naming the bad field
  (``sub_goals[2].op: unknown op 'glow'``); :meth:`Schema.check` raises
  :class:`SchemaValidationError` with all of them.
- :meth:`Schema.prompt_text` and :meth:`Schema.json_schema` (the model's
  ``model_json_schema()``) are what a VLM sees.
- :func:`fill_custom_fields` lets a judge without a model fill what it can
  measure and mark the rest as not assessed (None).

Two field types tie a schema to the edit engine, so a schema can never widen
what the agent can do: ``op`` accepts only a name from the op registry
(``pipeline.ops``) and ``mask_spec`` only a spec ``pipeline.masks`` accepts.
"""

from __future__ import annotations

import copy
import functools
import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

import yaml
from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError,
                      ValidationInfo, WithJsonSchema, create_model, field_validator, model_validator)
from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import PydanticCustomError

from pipeline import ops
from pipeline.masks import MaskSpecError, mask_json_schema, normalize_mask_spec

#: Where the shipped schemas live (``<agent>/<name>.yaml``, ``<agent>/custom/<name>.yaml``).
SCHEMAS_DIR = Path(__file__).resolve().parent

#: The agents that have an output contract.
AGENTS: tuple[str, ...] = ("planner", "executor", "quality")

#: Field types a schema may use.
FIELD_TYPES: tuple[str, ...] = (
    "string", "number", "integer", "boolean", "object", "array", "op", "mask_spec", "any",
)

#: A schema name: 1-64 letters, digits, "-" and "_", starting with a letter or digit.
SCHEMA_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
#: Longest text a string field accepts unless the schema says otherwise (a model's essay is a fault).
DEFAULT_MAX_LENGTH = 2000


class SchemaError(ValueError):
    """A schema that cannot be loaded: unknown name, or a malformed file (file and field named)."""


class SchemaValidationError(ValueError):
    """Data that does not match its schema. ``problems`` lists one line per bad field."""

    def __init__(self, schema_label: str, problems: list[str]):
        self.problems = list(problems)
        super().__init__(f"{schema_label}: " + "; ".join(problems))


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


# ---------------------------------------------------------------------------
# a field as a schema file declares it
# ---------------------------------------------------------------------------

def _a_number(value: Any) -> Any:
    if value is not None and not _is_number(value):
        raise PydanticCustomError("spec", f"expected a number, got {value!r}")
    return value


def _a_count(value: Any) -> Any:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise PydanticCustomError("spec", f"expected a whole number >= 0, got {value!r}")
    return value


def _choices(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, list) or not value or not all(isinstance(v, (str, int, float)) for v in value):
        raise PydanticCustomError("spec", f"expected a non-empty list of names or numbers, got {value!r}")
    return tuple(value)


def _a_pattern(value: Any) -> Any:
    try:
        value is None or re.compile(value)
    except (re.error, TypeError) as exc:
        raise PydanticCustomError("spec", f"not a valid regular expression ({exc})") from None
    return value


#: A bound as written (0 stays 0, so the JSON schema reads as the file does).
_Bound = Annotated[Optional[float | int], BeforeValidator(_a_number)]
_Count = Annotated[Optional[int], BeforeValidator(_a_count)]


class FieldSpec(BaseModel):
    """One field of a schema file. Ranges are inclusive; ``items`` describes list entries."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    type: Literal[FIELD_TYPES] = "any"
    required: bool = False
    nullable: bool = False
    description: str = ""
    minimum: _Bound = None
    maximum: _Bound = None
    enum: Annotated[Optional[tuple], BeforeValidator(_choices)] = None
    pattern: Annotated[Optional[str], AfterValidator(_a_pattern)] = None
    max_length: _Count = None
    fields: dict[str, FieldSpec] = Field(default_factory=dict)      # for objects
    items: Optional[FieldSpec] = None                               # for arrays
    min_items: _Count = None
    max_items: _Count = None
    additional_fields: bool = False                                 # objects: accept keys not listed

    @field_validator("description")
    @classmethod
    def _trimmed(cls, text: str) -> str:
        return text.strip()

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise PydanticCustomError("spec", f"expected a mapping with at least 'type', got {data!r}")
        if data.get("fields") is None and "fields" in data:
            data = {**data, "fields": {}}  # an empty ``fields:`` line
        return data

    @model_validator(mode="after")
    def _consistent(self) -> "FieldSpec":
        if self.minimum is not None and self.maximum is not None and self.minimum > self.maximum:
            raise PydanticCustomError("spec", f"minimum {self.minimum} is above maximum {self.maximum}")
        if self.fields and self.type != "object":
            raise PydanticCustomError("spec", "only an object field has fields (type is {type})",
                                      {"key": "fields", "type": self.type})
        if self.items is not None and self.type != "array":
            raise PydanticCustomError("spec", "only an array field has items (type is {type})",
                                      {"key": "items", "type": self.type})
        return self

    # -- what a person (and a model) reads ------------------------------
    def type_phrase(self) -> str:
        """'number 0..1', 'list of 0..6 objects', 'op name from the op table'."""
        t = self.type
        if t == "op":
            text = "op name from the op table"
        elif t == "mask_spec":
            text = "mask spec object"
        elif t == "array":
            count = ""
            if self.min_items is not None or self.max_items is not None:
                count = f"{self.min_items or 0}..{self.max_items if self.max_items is not None else 'n'} "
            inner = self.items.type_phrase() if self.items else "value"
            word, _, rest = inner.partition(" ")
            text = f"list of {count}{word}s{(' ' + rest) if rest else ''}"
        elif t in ("number", "integer") and (self.minimum is not None or self.maximum is not None):
            lo = _fmt(self.minimum) if self.minimum is not None else ""
            hi = _fmt(self.maximum) if self.maximum is not None else ""
            text = f"{t} {lo}..{hi}"
        else:
            text = t
        if self.enum:
            text += " one of " + ", ".join(str(e) for e in self.enum)
        if self.nullable:
            text += " or null"
        return text


_SPECS = TypeAdapter(dict[str, FieldSpec])

#: How a spec's pydantic errors read (the rest read as pydantic or the validators word them).
_SPEC_WORDS = {"literal_error": "expected one of {choices}, got {value!r}",
               "bool_type": "expected true or false, got {value!r}", "string_type": "expected text",
               "dict_type": "expected a mapping", "model_type": "expected a mapping"}


def _spec_problems(exc: ValidationError, where: str) -> str:
    """What is wrong with a file's field specs: ``<file>: fields.<name>.<key>: <problem>``."""
    lines, unknown = [], {}
    for err in exc.errors(include_url=False):
        loc = ("fields",) + tuple(map(str, err["loc"]))
        if err["type"] == "extra_forbidden":
            unknown.setdefault(".".join(loc[:-1]), []).append(loc[-1])
            continue
        ctx = err.get("ctx") or {}
        key = ".".join(loc + ((ctx["key"],) if "key" in ctx else ()))
        template = _SPEC_WORDS.get(err["type"])
        text = err["msg"] if template is None else template.format(
            value=err["input"], choices=", ".join(FIELD_TYPES))
        lines.append(f"{where}: {key}: {text}")
    lines += [f"{where}: {path}: unknown key(s) {', '.join(sorted(names))}" for path, names in unknown.items()]
    return "; ".join(lines)


# ---------------------------------------------------------------------------
# the pydantic model of a schema: what validates a reply and what a model sees
# ---------------------------------------------------------------------------

#: Stands for the mask spec's JSON schema until :meth:`Schema.json_schema` links ``#/$defs/mask``.
_MASK_MARK = "x-atelier-mask-spec"
#: Stands for the field's label in a mask spec's message (pipeline.masks names the place it is given).
_HERE = "\x00here\x00"


def _whole(value: Any) -> Any:
    # a model may write 20.0 for 20; a fraction stays a float and the strict int check refuses it
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _op_name(value: Any) -> Any:
    try:
        ops.get_op(value)
    except ops.OpError as exc:
        raise PydanticCustomError("op", str(exc)) from None
    return value


def _mask_spec(value: Any) -> Any:
    try:
        normalize_mask_spec(value, _HERE)
    except MaskSpecError as exc:
        raise PydanticCustomError("mask", str(exc)) from None
    return value


def _text_checks(limit: int, pattern: str | None):
    def check(text: str) -> str:
        if len(text) > limit:
            raise PydanticCustomError("text", f"text of {len(text)} characters, at most {limit} allowed")
        if pattern and not re.fullmatch(pattern, text):
            raise PydanticCustomError("text", f"{_show(text)} does not match the pattern {pattern}")
        return text
    return check


def _annotation(spec: FieldSpec, path: tuple[str, ...]) -> Any:
    """The pydantic type of one field: its checks, and the JSON schema a model sees."""
    t = spec.type
    if spec.enum:
        ann: Any = Literal[spec.enum]
    elif t == "string":
        # the length limit is checked, not sent: a model's JSON-schema grammar stays as small as the file
        json_schema = {"type": "string", **({"pattern": spec.pattern} if spec.pattern else {})}
        ann = Annotated[str, AfterValidator(_text_checks(spec.max_length or DEFAULT_MAX_LENGTH, spec.pattern)),
                        WithJsonSchema(json_schema)]
    elif t == "number":
        ann = Annotated[float, Field(ge=spec.minimum, le=spec.maximum)]
    elif t == "integer":
        ann = Annotated[int, Field(ge=spec.minimum, le=spec.maximum), BeforeValidator(_whole)]
    elif t == "boolean":
        ann = bool
    elif t == "op":
        ann = Annotated[Any, AfterValidator(_op_name), WithJsonSchema({"type": "string", "enum": list(ops.OP_NAMES)})]
    elif t == "mask_spec":
        ann = Annotated[Any, AfterValidator(_mask_spec), WithJsonSchema({_MASK_MARK: True})]
    elif t == "object":
        ann = _model(spec.fields, spec.additional_fields, path) if spec.fields else dict
    elif t == "array":
        inner = _annotation(spec.items, path + ("items",)) if spec.items is not None else Any
        if spec.items is not None and spec.items.description:
            inner = Annotated[inner, Field(description=spec.items.description)]
        ann = Annotated[list[inner], Field(min_length=spec.min_items, max_length=spec.max_items)]
    else:
        ann = Any
    return Optional[ann] if spec.nullable and t != "any" else ann


def _model(specs: Mapping[str, FieldSpec], additional: bool, path: tuple[str, ...],
           title: str | None = None) -> type[BaseModel]:
    """A pydantic model of an object's fields (python names f0, f1...: a field may be called anything)."""
    config = ConfigDict(extra="allow" if additional else "forbid", strict=True, allow_inf_nan=False)
    fields = {f"f{i}": (_annotation(spec, path + (name,)),
                        Field(... if spec.required else None, alias=name, description=spec.description or None))
              for i, (name, spec) in enumerate(specs.items())}
    return create_model(title or "_".join(path), __config__=config, **fields)


class _ContractJsonSchema(GenerateJsonSchema):
    """JSON schema as a schema file reads: objects written in place (servers turn it into a grammar; a
    file's objects are a tree), no generated titles, no ``default: null`` for optional fields, and
    mask specs as ``#/$defs/mask`` (pipeline.masks.mask_json_schema)."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def default_schema(self, schema) -> dict:
        return self.generate_inner(schema["schema"])

    def generate(self, schema, mode="validation") -> dict:
        out = super().generate(schema, mode)
        objects = out.pop("$defs", {})
        masks = [False]

        def in_place(node: Any) -> Any:
            if isinstance(node, list):
                return [in_place(v) for v in node]
            if not isinstance(node, dict):
                return node
            if node.pop(_MASK_MARK, None):
                masks[0] = True
                node = {"$ref": "#/$defs/mask", **node}
            elif "$ref" in node:
                body = dict(objects[node["$ref"].rsplit("/", 1)[-1]])
                body.pop("title", None)
                node = {**body, **{k: v for k, v in node.items() if k != "$ref"}}
            return {k: in_place(v) for k, v in node.items()}

        out = in_place(out)
        if masks[0]:
            out = {"$defs": mask_json_schema()["$defs"], **out}
        return out


# ---------------------------------------------------------------------------
# problems a person reads
# ---------------------------------------------------------------------------

def _label(path: tuple) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _spec_at(root: FieldSpec, loc: tuple) -> FieldSpec | None:
    spec: FieldSpec | None = root
    for part in loc:
        if spec is None:
            return None
        spec = spec.items if isinstance(part, int) else spec.fields.get(part)
    return spec


def _type_fits(spec: FieldSpec, value: Any) -> bool:
    fits = {"string": isinstance(value, str), "boolean": isinstance(value, bool), "number": _is_number(value),
            "integer": _is_number(value) and float(value).is_integer()}
    return fits.get(spec.type, True)


def _wrong_type(spec: FieldSpec, value: Any) -> str:
    t = spec.type
    if value is None:
        return f"expected {spec.type_phrase()}, got null"
    if t == "string":
        return f"expected text, got {_show(value)}"
    if t == "boolean":
        return f"expected true or false, got {_show(value)}"
    if t == "object":
        return f"expected an object, got {_show(value)}"
    if t == "array":
        return f"expected a list, got {_show(value)}"
    if t == "integer" and _is_number(value):
        return f"expected a whole number, got {_show(value)}"
    return f"expected {spec.type_phrase()}, got {_show(value)}"


_TYPE_ERRORS = {"string_type", "bool_type", "int_type", "float_type", "finite_number", "int_from_float",
                "dict_type", "model_type", "list_type"}


def _data_problem(err: Mapping[str, Any], root: FieldSpec, prefix: tuple) -> str:
    """The line for one pydantic error, naming the field (``sub_goals[1].value: 400 is outside -359..359``)."""
    loc, kind, value = tuple(err["loc"]), err["type"], err["input"]
    spec = _spec_at(root, loc) or FieldSpec()
    label = _label(prefix + loc) or "(top level)"
    if kind == "mask":
        return err["msg"].replace(_HERE, label)  # pipeline.masks names the spec's own bad key
    if kind == "missing":
        text = f"required ({spec.description or spec.type_phrase()})"
    elif kind in _TYPE_ERRORS or (value is None and not spec.nullable and spec.type != "any"):
        text = _wrong_type(spec, value)
    elif kind == "literal_error":
        text = (f"{_show(value)} is not one of {', '.join(map(str, spec.enum))}" if _type_fits(spec, value)
                else _wrong_type(spec, value))
    elif kind in ("greater_than_equal", "less_than_equal"):
        lo = _fmt(spec.minimum) if spec.minimum is not None else "-inf"
        hi = _fmt(spec.maximum) if spec.maximum is not None else "inf"
        text = f"{_show(value)} is outside {lo}..{hi}"
    elif kind == "too_short":
        text = f"{len(value)} item(s), at least {spec.min_items} needed"
    elif kind == "too_long":
        text = f"{len(value)} items, at most {spec.max_items} allowed"
    else:
        text = err["msg"]
    return f"{label}: {text}"


def _data_problems(exc: ValidationError, root: FieldSpec, prefix: tuple = ()) -> list[str]:
    """One line per problem; an object's unknown keys share one line."""
    lines: list[str] = []
    unknown: dict[tuple, list[str]] = {}
    for err in exc.errors(include_url=False):
        if err["type"] == "extra_forbidden":
            unknown.setdefault(tuple(err["loc"][:-1]), []).append(str(err["loc"][-1]))
        else:
            lines.append(_data_problem(err, root, prefix))
    for where, names in unknown.items():
        spec = _spec_at(root, where) or FieldSpec()
        lines.append(f"{_label(prefix + where) or '(top level)'}: unknown field(s) {', '.join(names)}; "
                     f"allowed: {', '.join(spec.fields)}")
    return lines


# ---------------------------------------------------------------------------
# a resolved schema
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Schema:
    """A resolved schema (inheritance merged). ``chain`` lists the files, child first.

    ``model`` is the pydantic model of its fields: it validates a reply and gives the JSON schema.
    """

    agent: str
    name: str
    description: str
    fields: dict                                  # name -> FieldSpec, in file order
    chain: tuple = ()
    additional_fields: bool = False
    model: type[BaseModel] = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        return f"{self.agent} schema '{self.name}'"

    @property
    def required(self) -> list[str]:
        return [n for n, f in self.fields.items() if f.required]

    def _root(self) -> FieldSpec:
        return FieldSpec(type="object", fields=self.fields, additional_fields=self.additional_fields)

    # -- validation -----------------------------------------------------
    def validate(self, data: Any) -> list[str]:
        """Every problem with ``data``, one line each naming the field; [] when valid."""
        try:
            self.model.model_validate(data)
        except ValidationError as exc:
            return _data_problems(exc, self._root())
        return []

    def check(self, data: Any) -> dict:
        """Return ``data`` if it validates, else raise :class:`SchemaValidationError`."""
        problems = self.validate(data)
        if problems:
            raise SchemaValidationError(self.label, problems)
        return data

    def field_problems(self, name: str, value: Any) -> list[str]:
        """The problems of one field's value alone (``name`` is one of :attr:`fields`)."""
        spec = self.fields[name]
        ann = _annotation(spec, (name,))
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            adapter = TypeAdapter(ann)  # an object field: its model has its own config
        else:
            adapter = TypeAdapter(ann, config=ConfigDict(strict=True, allow_inf_nan=False))
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            return _data_problems(exc, spec, (name,))
        return []

    # -- what a model sees ----------------------------------------------
    def prompt_text(self) -> str:
        """The fields as an indented list with types, ranges and descriptions."""
        lines: list[str] = []
        _describe(self.fields, lines, 0)
        return "\n".join(lines)

    def json_schema(self) -> dict:
        """JSON Schema (draft 2020-12) of this contract, for servers with a JSON-schema mode."""
        return copy.deepcopy(self._json_schema)

    @functools.cached_property
    def _json_schema(self) -> dict:
        # generated once per loaded schema (about a millisecond); every model request sends it
        return self.model.model_json_schema(schema_generator=_ContractJsonSchema)

    def custom_field_names(self) -> list[str]:
        """Fields this schema has beyond the agent's default schema (e.g. composition_score)."""
        if self.name == "default":
            return []
        base = load_schema(self.agent, "default", root=_root_of(self))
        return [n for n in self.fields if n not in base.fields]


def _root_of(schema: Schema) -> Path | None:
    # chain holds file paths; the root is two (or three for custom/) levels up
    if not schema.chain:
        return None
    p = Path(schema.chain[0]).parent
    if p.name == "custom":
        p = p.parent
    return p.parent


def _describe(fields: Mapping[str, FieldSpec], lines: list[str], depth: int) -> None:
    pad = "  " * depth
    for name, f in fields.items():
        need = "required" if f.required else "optional"
        desc = f": {f.description}" if f.description else ""
        lines.append(f"{pad}- {name} ({f.type_phrase()}, {need}){desc}")
        if f.type == "object" and f.fields:
            _describe(f.fields, lines, depth + 1)
        if f.type == "array" and f.items is not None and f.items.type == "object" and f.items.fields:
            _describe(f.items.fields, lines, depth + 1)


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------

class SchemaFile(BaseModel):
    """The top of one schema file; its ``fields`` are merged down the ``extends`` chain, then checked."""

    model_config = ConfigDict(extra="forbid")

    agent: Optional[str] = None
    name: Optional[str] = None
    description: Optional[str] = None
    extends: Optional[str] = None
    fields: Optional[dict] = None                  # field name -> FieldSpec
    additional_fields: bool = False

    @model_validator(mode="after")
    def _in_its_folder(self, info: ValidationInfo) -> "SchemaFile":
        folder = (info.context or {}).get("agent")
        if self.agent is not None and folder is not None and self.agent != folder:
            raise PydanticCustomError("file", f"agent: says {self.agent!r} but lives under {folder}/")
        return self


def _file_problems(exc: ValidationError, where: str) -> str:
    unknown = [str(e["loc"][0]) for e in exc.errors() if e["type"] == "extra_forbidden"]
    if unknown:
        return (f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                f"expected {', '.join(sorted(SchemaFile.model_fields))}")
    err = exc.errors(include_url=False)[0]
    if err["loc"] == ("fields",):
        return f"{where}: fields: expected a mapping of field name -> spec"
    return f"{where}: " + (f"{err['loc'][0]}: {err['msg']}" if err["loc"] else err["msg"])


_cache: dict[tuple, tuple[tuple, Schema]] = {}
_cache_lock = threading.Lock()


def _candidates(root: Path, agent: str, name: str) -> list[Path]:
    # custom -> standard; "default" itself is the standard file every chain ends at
    return [root / agent / "custom" / f"{name}.yaml", root / agent / f"{name}.yaml"]


def list_schemas(agent: str, *, root: str | Path | None = None) -> list[str]:
    """Names of the schemas an agent can use (standard and custom), sorted, 'default' first."""
    base = Path(root) if root else SCHEMAS_DIR
    _check_agent(agent)
    names = {p.stem for d in (base / agent, base / agent / "custom") if d.is_dir()
             for p in d.glob("*.yaml") if not p.name.startswith("_")}
    return sorted(names, key=lambda n: (n != "default", n))


def _check_agent(agent: str) -> None:
    if agent not in AGENTS:
        raise SchemaError(f"unknown agent {agent!r}; schemas exist for {', '.join(AGENTS)}")


def check_schema_name(agent: str, name: str, *, root: str | Path | None = None) -> str:
    """Return ``name`` if ``agent`` has such a schema, else raise :class:`SchemaError`.

    Meant for the edge (session settings): an unknown name is rejected before a turn starts.
    """
    load_schema(agent, name, root=root)
    return name


def load_schema(agent: str, name: str = "default", *, root: str | Path | None = None) -> Schema:
    """Load ``schemas/<agent>/[custom/]<name>.yaml`` with its ``extends`` chain merged.

    Cached per file modification time, so editing a YAML file takes effect on
    the next turn. Raises :class:`SchemaError` for an unknown name or a
    malformed file (the file and the field are named).
    """
    _check_agent(agent)
    if not isinstance(name, str) or not SCHEMA_NAME.match(name):
        raise SchemaError(f"{agent} schema name {name!r}: use letters, digits, '-' and '_' only")
    base = Path(root).resolve() if root else SCHEMAS_DIR
    chain = _resolve_chain(base, agent, name)
    stamp = tuple((str(p), p.stat().st_mtime_ns) for p in chain)
    key = (str(base), agent, name)
    with _cache_lock:
        hit = _cache.get(key)
        if hit and hit[0] == stamp:
            return hit[1]
    schema = _build(agent, name, chain)
    with _cache_lock:
        _cache[key] = (stamp, schema)
    return schema


def _find(base: Path, agent: str, name: str, skip: set[Path]) -> Path | None:
    for p in _candidates(base, agent, name):
        if p.is_file() and p not in skip:
            return p
    return None


def _resolve_chain(base: Path, agent: str, name: str) -> list[Path]:
    """Files from ``name`` down to its root ancestor (child first)."""
    path = _find(base, agent, name, set())
    if path is None:
        known = ", ".join(list_schemas(agent, root=base)) or "none"
        raise SchemaError(f"unknown {agent} schema {name!r}; available: {known}")
    chain = [path]
    seen = {path}
    while True:
        raw = _read(chain[-1])
        parent = raw.get("extends")
        if parent in (None, ""):
            return chain
        if not isinstance(parent, str) or not SCHEMA_NAME.match(parent):
            raise SchemaError(f"{_rel(chain[-1])}: extends: expected a schema name, got {parent!r}")
        # a custom/default.yaml that extends default means the standard default below it
        nxt = _find(base, agent, parent, seen)
        if nxt is None:
            if any(_find(base, agent, parent, set()) == p for p in seen):
                raise SchemaError(f"{_rel(chain[-1])}: extends: {parent!r} makes a cycle")
            raise SchemaError(f"{_rel(chain[-1])}: extends: unknown {agent} schema {parent!r}")
        chain.append(nxt)
        seen.add(nxt)
        if len(chain) > 8:
            raise SchemaError(f"{_rel(path)}: extends chain is longer than 8")


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(SCHEMAS_DIR.parent))
    except ValueError:
        return str(p)


def _read(path: Path) -> dict:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise SchemaError(f"{_rel(path)}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise SchemaError(f"{_rel(path)}: expected a mapping with 'fields'")
    return raw


def _merge_fields(parent: Mapping, child: Mapping) -> dict:
    """Child field specs override the parent's key by key; nested ``fields`` merge too."""
    out = {k: dict(v) if isinstance(v, Mapping) else v for k, v in parent.items()}
    for name, spec in child.items():
        if isinstance(spec, Mapping) and isinstance(out.get(name), Mapping):
            merged = {**out[name], **spec}
            if isinstance(out[name].get("fields"), Mapping) and isinstance(spec.get("fields"), Mapping):
                merged["fields"] = _merge_fields(out[name]["fields"], spec["fields"])
            out[name] = merged
        else:
            out[name] = spec
    return out


def _build(agent: str, name: str, chain: list[Path]) -> Schema:
    files = []
    for p in chain:
        try:
            files.append(SchemaFile.model_validate(_read(p), context={"agent": agent}))
        except ValidationError as exc:
            raise SchemaError(_file_problems(exc, _rel(p))) from None
    merged: dict = {}
    for f in reversed(files):
        merged = _merge_fields(merged, f.fields or {})
    where = _rel(chain[0])
    try:
        fields = _SPECS.validate_python(merged)
    except ValidationError as exc:
        raise SchemaError(_spec_problems(exc, where)) from None
    if not fields:
        raise SchemaError(f"{where}: fields: a schema needs at least one field")
    return Schema(
        agent=agent,
        name=name,
        description=files[0].description or "",
        fields=fields,
        chain=tuple(str(p) for p in chain),
        additional_fields=files[0].additional_fields,
        model=_model(fields, files[0].additional_fields, (), title=f"{agent}_{name}"),
    )


# ---------------------------------------------------------------------------
# for judges and planners without a model
# ---------------------------------------------------------------------------

def fill_custom_fields(schema: Schema, measured: Mapping[str, Any], *,
                       judge: str = "the built-in judge") -> tuple[dict, list[str]]:
    """Fill a schema's custom fields from what a judge could ``measure``.

    Returns ``(fields, warnings)``: ``fields`` has every custom field of
    ``schema`` (beyond the agent's default), taken from ``measured`` when it
    validates there and None (= not assessed) otherwise. A *required* field
    left None gives one warning a person reads; nothing raises.
    """
    fields: dict[str, Any] = {}
    warnings: list[str] = []
    for name in schema.custom_field_names():
        f = schema.fields[name]
        value = measured.get(name)
        if value is not None:
            problems = schema.field_problems(name, value)
            if problems:
                warnings.append(f"{name}: measured value rejected ({problems[0]}); not assessed")
                value = None
        fields[name] = value
        if value is None and f.required:
            warnings.append(
                f"{name}: the {schema.label} asks for it, but {judge} cannot measure it "
                f"- not assessed (point Atelier at a VLM to fill it)"
            )
    return fields, warnings
