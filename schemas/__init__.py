"""Output schemas: the contracts of the planner, executor and quality agents, as YAML.

A schema is a person-readable YAML file (``schemas/<agent>/<name>.yaml``) that
lists the fields an agent returns: type, required, ranges, enums and a
description. A person reshapes an agent's output by adding a file under
``schemas/<agent>/custom/`` that ``extends: default`` and adds fields.

- :func:`load_schema` resolves ``custom/<name>`` -> ``<name>`` and merges the
  ``extends`` chain down to ``default``; an unknown name is a clear
  :class:`SchemaError` listing the names that exist.
- :meth:`Schema.validate` returns every problem as a line naming the bad
  field (``sub_goals[2].op: unknown op 'glow'``); :meth:`Schema.check` raises
  :class:`SchemaValidationError` with all of them.
- :meth:`Schema.prompt_text` and :meth:`Schema.json_schema` are what a VLM sees.
- :func:`fill_custom_fields` lets a judge without a model fill what it can
  measure and mark the rest as not assessed (None).

Two field types tie a schema to the edit engine, so a schema can never widen
what the agent can do: ``op`` accepts only a name from the op registry
(``pipeline.ops``) and ``mask_spec`` only a spec ``pipeline.masks`` accepts.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

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

_FIELD_KEYS = {
    "type", "required", "nullable", "description", "minimum", "maximum", "enum",
    "pattern", "max_length", "fields", "items", "min_items", "max_items", "additional_fields",
}
_SCHEMA_KEYS = {"agent", "name", "description", "extends", "fields", "additional_fields"}
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


@dataclass(frozen=True)
class Field:
    """One field of a schema. Ranges are inclusive; ``items`` describes list entries."""

    name: str
    type: str = "any"
    required: bool = False
    nullable: bool = False
    description: str = ""
    minimum: float | None = None
    maximum: float | None = None
    enum: tuple | None = None
    pattern: str | None = None
    max_length: int | None = None
    fields: dict = field(default_factory=dict)      # name -> Field, for objects
    items: "Field | None" = None                    # for arrays
    min_items: int | None = None
    max_items: int | None = None
    additional_fields: bool = False                 # objects: accept keys not listed

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


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


@dataclass(frozen=True)
class Schema:
    """A resolved schema (inheritance merged). ``chain`` lists the files, child first."""

    agent: str
    name: str
    description: str
    fields: dict                                  # name -> Field, in file order
    chain: tuple = ()
    additional_fields: bool = False

    @property
    def label(self) -> str:
        return f"{self.agent} schema '{self.name}'"

    @property
    def required(self) -> list[str]:
        return [n for n, f in self.fields.items() if f.required]

    # -- validation -----------------------------------------------------
    def validate(self, data: Any) -> list[str]:
        """Every problem with ``data``, one line each naming the field; [] when valid."""
        problems: list[str] = []
        root = Field(name="", type="object", fields=self.fields,
                     additional_fields=self.additional_fields)
        _check(root, data, "", problems)
        return problems

    def check(self, data: Any) -> dict:
        """Return ``data`` if it validates, else raise :class:`SchemaValidationError`."""
        problems = self.validate(data)
        if problems:
            raise SchemaValidationError(self.label, problems)
        return data

    # -- what a model sees ----------------------------------------------
    def prompt_text(self) -> str:
        """The fields as an indented list with types, ranges and descriptions."""
        lines: list[str] = []
        _describe(self.fields, lines, 0)
        return "\n".join(lines)

    def json_schema(self) -> dict:
        """JSON Schema (draft 2020-12) of this contract, for servers with a JSON-schema mode."""
        defs: dict = {}
        root = Field(name="", type="object", fields=self.fields, additional_fields=self.additional_fields)
        out = _to_json_schema(root, defs)
        if defs:
            out = {"$defs": defs, **out}
        out["title"] = f"{self.agent}_{self.name}"
        return out

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


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------

def _where(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check(f: Field, value: Any, path: str, problems: list[str]) -> None:
    label = path or "(top level)"
    if value is None:
        if not f.nullable and f.type != "any":
            problems.append(f"{label}: expected {f.type_phrase()}, got null")
        return
    t = f.type
    if t == "string":
        if not isinstance(value, str):
            problems.append(f"{label}: expected text, got {_show(value)}")
            return
        limit = f.max_length or DEFAULT_MAX_LENGTH
        if len(value) > limit:
            problems.append(f"{label}: text of {len(value)} characters, at most {limit} allowed")
        if f.pattern and not re.fullmatch(f.pattern, value):
            problems.append(f"{label}: {_show(value)} does not match the pattern {f.pattern}")
    elif t in ("number", "integer"):
        if not _is_number(value):
            problems.append(f"{label}: expected {f.type_phrase()}, got {_show(value)}")
            return
        if t == "integer" and not float(value).is_integer():
            problems.append(f"{label}: expected a whole number, got {_show(value)}")
            return
        if (f.minimum is not None and value < f.minimum) or (f.maximum is not None and value > f.maximum):
            lo = _fmt(f.minimum) if f.minimum is not None else "-inf"
            hi = _fmt(f.maximum) if f.maximum is not None else "inf"
            problems.append(f"{label}: {_show(value)} is outside {lo}..{hi}")
    elif t == "boolean":
        if not isinstance(value, bool):
            problems.append(f"{label}: expected true or false, got {_show(value)}")
            return
    elif t == "op":
        try:
            ops.get_op(value)
        except ops.OpError as exc:
            problems.append(f"{label}: {exc}")
        return
    elif t == "mask_spec":
        try:
            normalize_mask_spec(value, label)
        except MaskSpecError as exc:
            problems.append(str(exc))
        return
    elif t == "object":
        if not isinstance(value, Mapping):
            problems.append(f"{label}: expected an object, got {_show(value)}")
            return
        if f.fields:
            for name, sub in f.fields.items():
                if name not in value:
                    if sub.required:
                        problems.append(f"{_where(path, name)}: required ({sub.description or sub.type_phrase()})")
                    continue
                _check(sub, value[name], _where(path, name), problems)
            if not f.additional_fields:
                unknown = [k for k in value if k not in f.fields]
                if unknown:
                    allowed = ", ".join(f.fields)
                    problems.append(
                        f"{label}: unknown field(s) {', '.join(map(str, unknown))}; "
                        f"allowed: {allowed}"
                    )
    elif t == "array":
        if not isinstance(value, list):
            problems.append(f"{label}: expected a list, got {_show(value)}")
            return
        if f.min_items is not None and len(value) < f.min_items:
            problems.append(f"{label}: {len(value)} item(s), at least {f.min_items} needed")
        if f.max_items is not None and len(value) > f.max_items:
            problems.append(f"{label}: {len(value)} items, at most {f.max_items} allowed")
            return  # a huge list would drown the real problem in per-item noise
        if f.items is not None:
            for i, item in enumerate(value):
                _check(f.items, item, f"{label}[{i}]", problems)
    if f.enum and value not in f.enum:
        problems.append(f"{label}: {_show(value)} is not one of {', '.join(map(str, f.enum))}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------
# description for prompts, JSON Schema
# ---------------------------------------------------------------------------

def _describe(fields: Mapping[str, Field], lines: list[str], depth: int) -> None:
    pad = "  " * depth
    for name, f in fields.items():
        need = "required" if f.required else "optional"
        desc = f": {f.description}" if f.description else ""
        lines.append(f"{pad}- {name} ({f.type_phrase()}, {need}){desc}")
        if f.type == "object" and f.fields:
            _describe(f.fields, lines, depth + 1)
        if f.type == "array" and f.items is not None and f.items.type == "object" and f.items.fields:
            _describe(f.items.fields, lines, depth + 1)


def _to_json_schema(f: Field, defs: dict) -> dict:
    t = f.type
    if t == "op":
        out: dict = {"type": "string", "enum": list(ops.OP_NAMES)}
    elif t == "mask_spec":
        m = mask_json_schema()
        defs.update(m["$defs"])
        out = {"$ref": m["$ref"]}
    elif t == "object":
        out = {"type": "object"}
        if f.fields:
            out["properties"] = {n: _to_json_schema(s, defs) for n, s in f.fields.items()}
            out["required"] = [n for n, s in f.fields.items() if s.required]
            out["additionalProperties"] = bool(f.additional_fields)
    elif t == "array":
        out = {"type": "array"}
        if f.items is not None:
            out["items"] = _to_json_schema(f.items, defs)
        if f.min_items is not None:
            out["minItems"] = f.min_items
        if f.max_items is not None:
            out["maxItems"] = f.max_items
    elif t == "any":
        out = {}
    else:
        out = {"type": t}
        if f.minimum is not None:
            out["minimum"] = f.minimum
        if f.maximum is not None:
            out["maximum"] = f.maximum
        if f.pattern:
            out["pattern"] = f.pattern
    if f.enum:
        out["enum"] = list(f.enum)
    if f.description:
        out["description"] = f.description
    if f.nullable and out:
        if "$ref" in out:
            out = {"anyOf": [out, {"type": "null"}]}
        elif isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
    return out


# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------

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
    raws = [_read(p) for p in chain]
    for p, raw in zip(chain, raws):
        unknown = set(raw) - _SCHEMA_KEYS
        if unknown:
            raise SchemaError(f"{_rel(p)}: unknown key(s) {', '.join(sorted(unknown))}; "
                              f"expected {', '.join(sorted(_SCHEMA_KEYS))}")
        if raw.get("agent", agent) != agent:
            raise SchemaError(f"{_rel(p)}: agent: says {raw.get('agent')!r} but lives under {agent}/")
        if not isinstance(raw.get("fields", {}), Mapping):
            raise SchemaError(f"{_rel(p)}: fields: expected a mapping of field name -> spec")
    merged: dict = {}
    for raw in reversed(raws):
        merged = _merge_fields(merged, raw.get("fields") or {})
    where = _rel(chain[0])
    fields = {n: _parse_field(n, spec, f"{where}: fields.{n}") for n, spec in merged.items()}
    if not fields:
        raise SchemaError(f"{where}: fields: a schema needs at least one field")
    return Schema(
        agent=agent,
        name=name,
        description=str(raws[0].get("description") or ""),
        fields=fields,
        chain=tuple(str(p) for p in chain),
        additional_fields=bool(raws[0].get("additional_fields", False)),
    )


def _parse_field(name: str, spec: Any, where: str) -> Field:
    if not isinstance(spec, Mapping):
        raise SchemaError(f"{where}: expected a mapping with at least 'type', got {spec!r}")
    unknown = set(spec) - _FIELD_KEYS
    if unknown:
        raise SchemaError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    t = spec.get("type", "any")
    if t not in FIELD_TYPES:
        raise SchemaError(f"{where}.type: expected one of {', '.join(FIELD_TYPES)}, got {t!r}")
    for key in ("minimum", "maximum"):
        if key in spec and not _is_number(spec[key]):
            raise SchemaError(f"{where}.{key}: expected a number, got {spec[key]!r}")
    if spec.get("minimum") is not None and spec.get("maximum") is not None and spec["minimum"] > spec["maximum"]:
        raise SchemaError(f"{where}: minimum {spec['minimum']} is above maximum {spec['maximum']}")
    for key in ("required", "nullable", "additional_fields"):
        if key in spec and not isinstance(spec[key], bool):
            raise SchemaError(f"{where}.{key}: expected true or false, got {spec[key]!r}")
    for key in ("min_items", "max_items", "max_length"):
        if key in spec and (not isinstance(spec[key], int) or isinstance(spec[key], bool) or spec[key] < 0):
            raise SchemaError(f"{where}.{key}: expected a whole number >= 0, got {spec[key]!r}")
    enum = spec.get("enum")
    if enum is not None and (not isinstance(enum, list) or not enum):
        raise SchemaError(f"{where}.enum: expected a non-empty list, got {enum!r}")
    pattern = spec.get("pattern")
    if pattern is not None:
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise SchemaError(f"{where}.pattern: not a valid regular expression ({exc})") from None
    sub_fields = spec.get("fields") or {}
    if not isinstance(sub_fields, Mapping):
        raise SchemaError(f"{where}.fields: expected a mapping")
    if sub_fields and t != "object":
        raise SchemaError(f"{where}.fields: only an object field has fields (type is {t})")
    items = spec.get("items")
    if items is not None and t != "array":
        raise SchemaError(f"{where}.items: only an array field has items (type is {t})")
    desc = spec.get("description", "")
    if not isinstance(desc, str):
        raise SchemaError(f"{where}.description: expected text")
    return Field(
        name=name,
        type=t,
        required=bool(spec.get("required", False)),
        nullable=bool(spec.get("nullable", False)),
        description=desc.strip(),
        minimum=spec.get("minimum"),
        maximum=spec.get("maximum"),
        enum=tuple(enum) if enum else None,
        pattern=pattern,
        max_length=spec.get("max_length"),
        fields={n: _parse_field(n, s, f"{where}.fields.{n}") for n, s in sub_fields.items()},
        items=_parse_field("items", items, f"{where}.items") if items is not None else None,
        min_items=spec.get("min_items"),
        max_items=spec.get("max_items"),
        additional_fields=bool(spec.get("additional_fields", False)),
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
            problems: list[str] = []
            _check(f, value, name, problems)
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
