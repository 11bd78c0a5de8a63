"""Output schemas a session may choose, and new ones inferred from an example output.

Schemas live under ``schemas/<agent>/[custom/]<name>.yaml`` (or a Studio's own
``schemas_root``); see :mod:`schemas` for the format and :mod:`schemas.generate`
for the inference.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agent.errors import InvalidInput
from agent.service.schema_quota import SchemaQuota, parse_example
from schemas import AGENTS, SCHEMA_NAME, SCHEMAS_DIR, SchemaError, check_schema_name, list_schemas
from schemas.generate import generate_schema


def _kind_of(example) -> str:
    return ("an empty object" if isinstance(example, dict) else "a list" if isinstance(example, list)
            else "null" if example is None else "true/false" if isinstance(example, bool)
            else "a number" if isinstance(example, (int, float)) else "text" if isinstance(example, str)
            else type(example).__name__)


class OutputSchemas:
    """The planner, executor and quality schemas under one root (None: the shipped ``schemas/``)."""

    def __init__(self, root: Path | None, quota: SchemaQuota):
        self.root = root
        self.quota = quota          # schemas.max_custom / max_per_visitor
        self._lock = threading.Lock()

    def check(self, agent: str, name: str | None) -> str:
        """A schema name a session may use ("default" for None); an unknown one is InvalidInput."""
        if name is None:
            return "default"
        try:
            return check_schema_name(agent, name, root=self.root)
        except SchemaError as exc:
            raise InvalidInput(str(exc)) from None

    def names(self, agent: str) -> list[str]:
        """Names of the output schemas ``agent`` can use, "default" first."""
        try:
            return list_schemas(agent, root=self.root)
        except SchemaError as exc:
            raise InvalidInput(str(exc)) from None

    def generate(self, example: dict | str, *, agent: str, name: str, overwrite: bool = False,
                 visitor: str | None = None) -> dict:
        """Infer a schema from one example output and save it (see Studio.generate_schema)."""
        if agent not in AGENTS:
            raise InvalidInput(f"agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not SCHEMA_NAME.match(name) or name == "default":
            raise InvalidInput(f"name: {name!r} is not a schema name: use 1-64 letters, digits, '-' and '_' "
                               "(starting with a letter or digit), and not 'default'")
        example = parse_example(example)
        if not isinstance(example, dict) or not example:
            raise InvalidInput(f"example: expected a JSON object with at least one field, got {_kind_of(example)}")
        with self._lock:
            if not overwrite and name in self.names(agent):
                raise InvalidInput(f"name: a {agent} schema named {name!r} already exists; "
                                   "choose another name (or overwrite it)")
            self.quota.admit(visitor, (self.root or SCHEMAS_DIR) / agent / "custom", name)
            try:
                path, doc = generate_schema(example, agent=agent, name=name, root=self.root,
                                            overwrite=overwrite, source="an example output")
            except SchemaError as exc:
                raise InvalidInput(str(exc)) from None
            self.quota.record(visitor)
        return {"agent": agent, "name": name, "path": str(path), "extends": doc.get("extends"),
                "fields": list(doc.get("fields") or {}), "yaml": path.read_text(encoding="utf-8")}
