"""SchemaGenerator: infer an output schema from one example output.

    python -m schemas.generate EXAMPLE.json --agent quality --name cinematographer

writes ``schemas/quality/custom/cinematographer.yaml``. Types come from the
example's values (text, whole numbers, numbers, true/false, nested objects,
lists); a number between 0 and 1 becomes a 0..1 score; every field in the
example is required. When the example carries the agent's default fields
(say ``score`` and ``assessment``) the new schema ``extends: default`` and
lists only the new fields. The result is checked by validating the example
against it (the round trip), so a generated schema always accepts its example.

The same function (:func:`generate_schema`) is the service call behind the UI
panel and the in-chat command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping

import yaml

from schemas import AGENTS, SCHEMAS_DIR, SchemaError, SCHEMA_NAME, load_schema


def infer_field(value: Any, name: str = "") -> dict:
    """The YAML field spec for one example value (recursive for objects and lists)."""
    if isinstance(value, bool):
        spec: dict = {"type": "boolean"}
    elif isinstance(value, int):
        spec = {"type": "integer"}
    elif isinstance(value, float):
        spec = {"type": "number"}
        if 0.0 <= value <= 1.0:
            # scores, shares and confidences live on 0..1; a person can widen it
            spec.update(minimum=0, maximum=1)
    elif isinstance(value, str):
        spec = {"type": "string"}
    elif isinstance(value, Mapping):
        spec = {"type": "object", "fields": {str(k): {**infer_field(v, str(k)), "required": True}
                                             for k, v in value.items()}}
    elif isinstance(value, list):
        spec = {"type": "array"}
        if value:
            spec["items"] = _merge_items([infer_field(v) for v in value], value)
    elif value is None:
        spec = {"type": "any", "nullable": True}
    else:
        raise SchemaError(f"{name or 'value'}: cannot infer a type for {type(value).__name__}")
    if name:
        spec["description"] = f"Describe what '{name}' means (inferred from the example value {_example(value)})."
    return spec


def _example(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _merge_items(specs: list[dict], values: list) -> dict:
    """One item spec that accepts every example item."""
    types = {s["type"] for s in specs}
    if types == {"integer", "number"}:
        types = {"number"}
        specs = [{**s, "type": "number"} for s in specs]
    if len(types) > 1:
        return {"type": "any"}
    first = dict(specs[0])
    t = first["type"]
    if t == "number":
        in_unit = all(0 <= v <= 1 for v in values)
        first.pop("minimum", None), first.pop("maximum", None)
        if in_unit:
            first.update(minimum=0, maximum=1)
    if t == "object":
        # a field is required only when every item has it
        names: dict[str, dict] = {}
        for v in values:
            for k, sub in v.items():
                names.setdefault(str(k), []).append(sub)
        fields = {}
        for k, subs in names.items():
            spec = _merge_items([infer_field(s) for s in subs], subs)
            spec["required"] = len(subs) == len(values)
            spec["description"] = f"Describe what '{k}' means (inferred from the example value {_example(subs[0])})."
            fields[k] = spec
        first["fields"] = fields
    if t == "array":
        inner = [x for v in values for x in v]
        first = {"type": "array"}
        if inner:
            first["items"] = _merge_items([infer_field(x) for x in inner], inner)
    first.pop("description", None)
    return first


def infer_schema(example: Mapping, *, agent: str, name: str, root: str | Path | None = None,
                 source: str = "an example") -> dict:
    """A schema document (plain data, YAML-ready) that accepts ``example``.

    Fields the agent's default schema already declares, with example values
    it accepts, are inherited (``extends: default``) rather than repeated.
    """
    if not isinstance(example, Mapping) or not example:
        raise SchemaError("example: expected a JSON object with at least one field")
    fields = {str(k): {**infer_field(v, str(k)), "required": True} for k, v in example.items()}
    doc = {"agent": agent, "name": name, "description": f"Inferred from {source}; edit the descriptions.",
           "fields": fields}
    try:
        base = load_schema(agent, "default", root=root)
    except SchemaError:
        return doc
    shared = {k: v for k, v in example.items() if k in base.fields}
    missing_required = [n for n in base.required if n not in example]
    if shared and not missing_required:
        probe = {k: example[k] for k in shared}
        if not base.validate(probe):
            new_fields = {k: v for k, v in fields.items() if k not in base.fields}
            return {"agent": agent, "name": name, "extends": "default",
                    "description": doc["description"], "fields": new_fields or {}}
    return doc


def generate_schema(example: Mapping, *, agent: str, name: str, root: str | Path | None = None,
                    overwrite: bool = False, source: str = "an example") -> tuple[Path, dict]:
    """Infer a schema from ``example``, write ``<root>/<agent>/custom/<name>.yaml``, return (path, doc).

    Refuses to replace an existing file unless ``overwrite``; raises
    :class:`SchemaError` if the written schema does not accept the example
    (then nothing is left behind).
    """
    if agent not in AGENTS:
        raise SchemaError(f"agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
    if not isinstance(name, str) or not SCHEMA_NAME.match(name) or name == "default":
        raise SchemaError(f"name: {name!r} - use letters, digits, '-' and '_' (and not 'default')")
    base = Path(root) if root else SCHEMAS_DIR
    doc = infer_schema(example, agent=agent, name=name, root=root, source=source)
    if doc.get("extends") and not doc["fields"]:
        raise SchemaError(f"example: every field is already in the default {agent} schema; nothing to add")
    path = base / agent / "custom" / f"{name}.yaml"
    if path.exists() and not overwrite:
        raise SchemaError(f"{path}: already exists (pass overwrite / --force to replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (f"# Generated by `python -m schemas.generate` from {source}.\n"
              "# Edit the descriptions: a VLM reads them to know what to return.\n")
    previous = path.read_bytes() if path.exists() else None
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100),
                   encoding="utf-8")
    tmp.replace(path)
    try:
        problems = load_schema(agent, name, root=root).validate(dict(example))
    except SchemaError:
        problems = ["the generated file does not load"]
    if problems:
        if previous is None:
            path.unlink()
        else:
            path.write_bytes(previous)
        raise SchemaError(f"generated schema rejects its own example: {'; '.join(problems)}")
    return path, doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m schemas.generate",
                                     description="Infer an output schema from an example JSON output.")
    parser.add_argument("example", help="a JSON file holding one example output (an object)")
    parser.add_argument("--agent", required=True, choices=AGENTS)
    parser.add_argument("--name", required=True, help="schema name (file schemas/<agent>/custom/<name>.yaml)")
    parser.add_argument("--root", default=None, help="schemas folder (default: the shipped one)")
    parser.add_argument("--force", action="store_true", help="replace an existing schema of that name")
    args = parser.parse_args(argv)
    try:
        example = json.loads(Path(args.example).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {args.example}: {exc}", file=sys.stderr)
        return 2
    try:
        path, doc = generate_schema(example, agent=args.agent, name=args.name, root=args.root,
                                    overwrite=args.force, source=Path(args.example).name)
    except SchemaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    inherited = " (extends default)" if doc.get("extends") else ""
    print(f"wrote {path}{inherited}: fields {', '.join(doc['fields'])}; the example validates against it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
