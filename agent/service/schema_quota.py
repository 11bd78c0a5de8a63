"""How many output schemas the studio's visitors may make, and how big an example may be.

The studio lets anyone who opens it make a judge schema from an example output (a YAML file under
``schemas/<agent>/custom/``). Unbounded, one anonymous visitor could fill the disk and every
visitor's schema menu. :class:`SchemaQuota` bounds it (``schemas:`` in configs/agent_config.yaml):

- ``max_per_visitor`` schemas per anonymous browser session (the studio names it; local callers such
  as the CLI name none and are not counted);
- ``max_custom`` custom schemas per agent in all, whoever made them;
- an example of at most :data:`MAX_EXAMPLE_CHARS` characters of JSON, nested at most
  :data:`MAX_EXAMPLE_DEPTH` levels.

A refusal is an ``InvalidInput`` saying which bound was met; nothing is written.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from agent.errors import InvalidInput

#: Longest example output (JSON text) the schema generator accepts.
MAX_EXAMPLE_CHARS = 20_000
#: Deepest nesting of objects and lists in an example (a judge's output is a few levels at most).
MAX_EXAMPLE_DEPTH = 8


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of JSON-like ``value``, counted without recursion and stopping past ``limit``."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, level)
            if deepest > limit:
                return deepest
            stack.extend((v, level + 1) for v in (item.values() if isinstance(item, dict) else item))
    return deepest


def parse_example(example: Any) -> Any:
    """The example as data: JSON text parsed, within the size and depth bounds (InvalidInput otherwise)."""
    parsed = isinstance(example, str)
    if parsed:
        if len(example) > MAX_EXAMPLE_CHARS:
            raise InvalidInput(f"example: too long ({len(example)} characters; at most {MAX_EXAMPLE_CHARS})")
        if not example.strip():
            raise InvalidInput("example: paste one example output as a JSON object")
        try:
            example = json.loads(example)
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"example: not valid JSON ({exc.msg} at line {exc.lineno}, "
                               f"column {exc.colno})") from None
        except RecursionError:
            raise InvalidInput(f"example: nested more than {MAX_EXAMPLE_DEPTH} levels deep") from None
    if _depth(example, MAX_EXAMPLE_DEPTH) > MAX_EXAMPLE_DEPTH:
        raise InvalidInput(f"example: nested more than {MAX_EXAMPLE_DEPTH} levels deep")
    if isinstance(example, (dict, list)) and not parsed:
        size = len(json.dumps(example, default=str))
        if size > MAX_EXAMPLE_CHARS:
            raise InvalidInput(f"example: too long ({size} characters as JSON; at most {MAX_EXAMPLE_CHARS})")
    return example


class SchemaQuota:
    """Counts the schemas each visitor made (in this process) and checks the bounds before one is written."""

    def __init__(self, max_custom: int = 100, max_per_visitor: int = 5):
        self.max_custom, self.max_per_visitor = int(max_custom), int(max_per_visitor)
        self._made: dict[str, int] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: Any) -> "SchemaQuota":
        return cls(config.schemas.max_custom, config.schemas.max_per_visitor)

    def admit(self, visitor: str | None, custom_folder: Path, name: str) -> None:
        """Raise InvalidInput when ``visitor`` may not make another schema in ``custom_folder`` now."""
        if visitor is not None:
            with self._lock:
                made = self._made.get(visitor, 0)
            if made >= self.max_per_visitor:
                raise InvalidInput(f"name: you have made {made} schemas in this session, the most one visitor may "
                                   "make (schemas.max_per_visitor); use one of them")
        existing = [p for p in custom_folder.glob("*.yaml")] if custom_folder.is_dir() else []
        if len(existing) >= self.max_custom and not any(p.stem == name for p in existing):
            raise InvalidInput(f"name: the studio already keeps {len(existing)} custom schemas, the most it keeps "
                               "(schemas.max_custom); ask whoever runs it to remove some")

    def record(self, visitor: str | None) -> None:
        if visitor is not None:
            with self._lock:
                self._made[visitor] = self._made.get(visitor, 0) + 1


__all__ = ["MAX_EXAMPLE_CHARS", "MAX_EXAMPLE_DEPTH", "SchemaQuota", "parse_example"]
