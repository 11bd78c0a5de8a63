"""Skill files: Atelier's looks and retouch recipes as YAML, one skill per file, and their loader.

A skill is data (the format is documented in docs/mcp.md, "Skills")::

    name: clean_portrait          # 1-48 letters, digits, '_' (default: the file name)
    kind: retouch                 # look | retouch | compound
    order: 10                     # where it shows in lists (optional; lower first, then by name)
    label: Clean portrait
    description: softer skin, brighter face, gentle colour
    words: [clean portrait, clean up her skin, smooth skin]   # phrases that ask for it
    gates: {needs_face: true, needs_sky: false, colour_only: false}
    adjust:                       # look / retouch: applied in order
      - {op: clarity, value: -25, target: {type: skin}}       # mode: set (default) or add
      - {op: exposure, value: 8, mode: add, target: {type: face}}
    steps:                        # compound: other skills as a task graph
      - {id: skin, skill: clean_portrait}
      - {id: look, skill: film, depends_on: [skin]}

The shipped skills live here (``skills/*.yaml``); people add their own by
dropping YAML files in the folder named by ``ATELIER_SKILLS_DIR`` (a user
skill with a shipped name replaces it). A broken file is refused at load
with :class:`SkillError` naming the file and the key. Loading is bounded, so a
hostile or mistaken file costs milliseconds, never minutes: at most
:data:`MAX_FILE_BYTES` per file, :data:`MAX_FILES` files per folder,
:data:`MAX_YAML_VALUES` values once YAML aliases are expanded (a "billion
laughs" file is refused before it is built), nesting :data:`MAX_YAML_DEPTH`
deep, :data:`MAX_SKILL_STEPS` steps per compound skill and ``depends_on`` chains
:data:`MAX_CHAIN` long (checked without recursion). Looks (``kind: look``,
global ``set`` values only) are what the engine profile offers as named
styles: ``profiles`` fills its ``styles`` from :func:`looks`.

This module only reads and checks files; choosing, gating and running skills
is the agent's job (``agent.skills``).
"""

from __future__ import annotations

import os
import re
import reprlib
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from pipeline import ops
from pipeline.masks import MaskSpecError, normalize_mask_spec

SKILLS_DIR = Path(__file__).resolve().parent
SKILLS_DIR_ENV = "ATELIER_SKILLS_DIR"
KINDS = ("look", "retouch", "compound")
GATES = ("needs_face", "needs_sky", "colour_only")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,47}$")
_TOP_KEYS = {"name", "kind", "order", "label", "description", "words", "gates", "adjust", "steps", "version", "author"}
#: Bounds on what one skill file may cost to load (see the module docstring).
MAX_FILE_BYTES = 64 * 1024
MAX_FILES = 500
MAX_YAML_VALUES = 5000
MAX_YAML_DEPTH = 16
MAX_SKILL_STEPS = 32
MAX_CHAIN = 32
_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxstring, _SHOW.maxother = 3, 6, 6, 60, 60

__all__ = ["GATES", "KINDS", "SKILLS_DIR", "SKILLS_DIR_ENV", "Adjustment", "Skill", "SkillError", "SkillStep",
           "check_graph", "clear_skill_cache", "load_skill_file", "load_skills", "looks"]


class SkillError(ValueError):
    """A broken skill file or skill graph; ``file`` and ``key`` name the problem."""

    def __init__(self, file: str, key: str, problem: str):
        problem = problem if len(problem) <= 300 else problem[:297] + "..."
        self.file, self.key, self.problem = file, key, problem
        super().__init__(f"{file}: {key}: {problem}" if key else f"{file}: {problem}")


@dataclass(frozen=True)
class Adjustment:
    """One step of a look or recipe: ``op`` set to / moved by ``value``, globally or inside ``target``."""

    op: str
    value: int
    mode: str = "set"
    target: dict | None = None

    def to_dict(self) -> dict:
        return {"op": self.op, "value": self.value, "mode": self.mode, "target": self.target}


@dataclass(frozen=True)
class SkillStep:
    """One node of a compound skill's task graph."""

    id: str
    skill: str
    depends_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class Skill:
    name: str
    kind: str
    label: str
    description: str
    words: tuple[str, ...] = ()
    gates: Mapping[str, bool] = field(default_factory=dict)
    adjust: tuple[Adjustment, ...] = ()
    steps: tuple[SkillStep, ...] = ()
    path: str = ""
    user: bool = False            # from ATELIER_SKILLS_DIR
    order: int = 100              # where it shows in lists and menus (then by name)

    @property
    def is_look(self) -> bool:
        return self.kind == "look"

    def settings(self) -> dict[str, int]:
        """A look's absolute global values (what a named style is)."""
        return {a.op: a.value for a in self.adjust if a.target is None and a.mode == "set"}

    def summary(self) -> dict:
        """A small row for lists (MCP, the agent card, the studio's menu)."""
        return {"name": self.name, "kind": self.kind, "label": self.label, "description": self.description,
                "gates": [g for g in GATES if self.gates.get(g)], "words": list(self.words[:6]),
                "steps": [s.skill for s in self.steps], "user": self.user}


# -- reading one file --------------------------------------------------------------------------

def _fail(path: Path, key: str, problem: str):
    raise SkillError(str(path), key, problem)


def _text(path: Path, key: str, value: Any, *, required: bool = True, default: str = "") -> str:
    if value is None and not required:
        return default
    if not isinstance(value, str) or not value.strip():
        _fail(path, key, f"expected text, got {value!r}")
    return value.strip()


def _adjustment(path: Path, key: str, raw: Any) -> Adjustment:
    if not isinstance(raw, Mapping):
        _fail(path, key, f"expected {{op, value, mode, target}}, got {raw!r}")
    unknown = set(raw) - {"op", "value", "mode", "target"}
    if unknown:
        _fail(path, f"{key}.{sorted(unknown)[0]}", "unknown key; expected op, value, mode, target")
    try:
        op = ops.get_op(raw.get("op"))
    except ops.OpError as exc:
        _fail(path, f"{key}.op", str(exc))
    value = raw.get("value")
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(path, f"{key}.value", f"expected a whole number {op.min}..{op.max}, got {value!r}")
    mode = raw.get("mode", "set")
    if mode not in ("set", "add"):
        _fail(path, f"{key}.mode", f"expected set or add, got {mode!r}")
    lo, hi = (op.min, op.max) if mode == "set" else (op.min - op.max, op.max - op.min)
    if not lo <= value <= hi:
        _fail(path, f"{key}.value", f"{value} is outside {lo}..{hi}")
    target = raw.get("target")
    if target is not None:
        try:
            target = normalize_mask_spec(target, f"{key}.target")
        except MaskSpecError as exc:
            _fail(path, f"{key}.target", str(exc))
    return Adjustment(op=op.name, value=int(value), mode=mode, target=target)


def _check_nodes(path: Path, root: yaml.Node) -> None:
    """Refuse a node graph that expands past MAX_YAML_VALUES values or MAX_YAML_DEPTH levels (or loops).

    Counted on the composed graph with each shared (aliased) node's size remembered, so a file of
    nested aliases is measured in microseconds, before anything is built from it.
    """
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value) if isinstance(node, yaml.SequenceNode) else [])
        if not done:
            if key in size:
                continue
            if key in open_nodes:
                _fail(path, "", "a YAML alias refers to itself (a recursive structure)")
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((c, False) for c in children)
            continue
        open_nodes.discard(key)
        size[key] = 1 + sum(size[id(c)] for c in children)
        depth[key] = 1 + max((depth[id(c)] for c in children), default=0)
        if size[key] > MAX_YAML_VALUES:
            _fail(path, "", f"the YAML expands to more than {MAX_YAML_VALUES} values (through aliases); "
                            "a skill file is small data")
        if depth[key] > MAX_YAML_DEPTH:
            _fail(path, "", f"the YAML is nested more than {MAX_YAML_DEPTH} levels deep")


def _read_yaml(path: Path) -> Any:
    """The file's YAML data, within the size, expansion and depth bounds."""
    try:
        if not path.is_file():               # a FIFO or device named *.yaml must not block the loader
            _fail(path, "", "not a regular file")
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        _fail(path, "", f"cannot read the file ({exc.strerror})")
    if len(raw) > MAX_FILE_BYTES:
        _fail(path, "", f"larger than {MAX_FILE_BYTES // 1024} KB; a skill file is a few lines of YAML")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        _fail(path, "", "not UTF-8 text")
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_nodes(path, node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        _fail(path, "", f"not valid YAML{f' at line {mark.line + 1}' if mark else ''}")
    except RecursionError:   # the composer recurses per level: absurd nesting ends here
        _fail(path, "", f"the YAML is nested more than {MAX_YAML_DEPTH} levels deep")
    finally:
        loader.dispose()


def load_skill_file(path: str | os.PathLike, *, user: bool = False) -> Skill:
    """Read and check one skill file; :class:`SkillError` names the file and the key that is wrong."""
    path = Path(path)
    data = _read_yaml(path)
    if not isinstance(data, Mapping):
        _fail(path, "", "expected a mapping with name, kind, description and adjust or steps")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        _fail(path, sorted(unknown)[0], f"unknown key; expected some of {', '.join(sorted(_TOP_KEYS))}")
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not _NAME.match(name):
        _fail(path, "name", f"expected 1-48 lower-case letters, digits or '_', got {name!r}")
    kind = data.get("kind")
    if kind not in KINDS:
        _fail(path, "kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    order = data.get("order", 100)
    if isinstance(order, bool) or not isinstance(order, int):
        _fail(path, "order", f"expected a whole number (lists show lower numbers first), got {order!r}")
    label = _text(path, "label", data.get("label"), required=False, default=name.replace("_", " ").capitalize())
    description = _text(path, "description", data.get("description"))
    words = data.get("words") or []
    if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
        _fail(path, "words", f"expected a list of phrases, got {words!r}")
    gates = data.get("gates") or {}
    if not isinstance(gates, Mapping):
        _fail(path, "gates", f"expected a mapping of {', '.join(GATES)} to true/false")
    for gate, on in gates.items():
        if gate not in GATES:
            _fail(path, f"gates.{gate}", f"unknown gate; expected one of {', '.join(GATES)}")
        if not isinstance(on, bool):
            _fail(path, f"gates.{gate}", f"expected true or false, got {on!r}")
    adjust, steps = data.get("adjust"), data.get("steps")
    if kind == "compound":
        if adjust:
            _fail(path, "adjust", "a compound skill lists steps (other skills), not adjustments")
        if not isinstance(steps, list) or not steps:
            _fail(path, "steps", "expected a list of {id, skill, depends_on}")
        if len(steps) > MAX_SKILL_STEPS:
            _fail(path, "steps", f"{len(steps)} steps; a compound skill has at most {MAX_SKILL_STEPS}")
        parsed_steps = tuple(_step(path, f"steps[{i}]", s) for i, s in enumerate(steps))
        check_graph(parsed_steps, where=str(path))
        parsed_adjust: tuple[Adjustment, ...] = ()
    else:
        if steps:
            _fail(path, "steps", f"only a compound skill has steps; this one is a {kind}")
        if not isinstance(adjust, list) or not adjust:
            _fail(path, "adjust", "expected a list of {op, value, mode, target}")
        parsed_adjust = tuple(_adjustment(path, f"adjust[{i}]", a) for i, a in enumerate(adjust))
        parsed_steps = ()
        if kind == "look":
            for i, a in enumerate(parsed_adjust):
                if a.target is not None or a.mode != "set":
                    _fail(path, f"adjust[{i}]", "a look sets global values (mode set, no target); "
                                                "make it a retouch skill to use masks or relative moves")
    return Skill(name=name, kind=kind, label=label, description=description,
                 words=tuple(w.strip().lower() for w in words), gates=dict(gates), adjust=parsed_adjust,
                 steps=parsed_steps, path=str(path), user=user, order=order)


def _step(path: Path, key: str, raw: Any) -> SkillStep:
    if not isinstance(raw, Mapping):
        _fail(path, key, f"expected {{id, skill, depends_on}}, got {raw!r}")
    unknown = set(raw) - {"id", "skill", "depends_on"}
    if unknown:
        _fail(path, f"{key}.{sorted(unknown)[0]}", "unknown key; expected id, skill, depends_on")
    sid = raw.get("id") or raw.get("skill")
    skill = raw.get("skill")
    if not isinstance(skill, str) or not skill:
        _fail(path, f"{key}.skill", f"expected a skill name, got {skill!r}")
    deps = raw.get("depends_on") or []
    if isinstance(deps, str):
        deps = [deps]
    if not isinstance(deps, list) or not all(isinstance(d, str) for d in deps):
        _fail(path, f"{key}.depends_on", f"expected a list of step ids, got {deps!r}")
    return SkillStep(id=str(sid), skill=skill, depends_on=tuple(deps))


def check_graph(steps: tuple[SkillStep, ...] | list[SkillStep], where: str = "skill graph",
                max_chain: int = MAX_CHAIN) -> list[SkillStep]:
    """The steps in an order that respects ``depends_on`` (stable).

    A cycle, an unknown id or a ``depends_on`` chain longer than ``max_chain`` steps raises SkillError.
    Iterative: a long chain is an error message, never a RecursionError.
    """
    by_id: dict[str, SkillStep] = {}
    for i, s in enumerate(steps):
        if s.id in by_id:
            raise SkillError(where, f"steps[{i}].id", f"duplicate step id {s.id!r}")
        by_id[s.id] = s
    for i, s in enumerate(steps):
        for d in s.depends_on:
            if d not in by_id:
                raise SkillError(where, f"steps[{i}].depends_on", f"no step with id {d!r}")
    order: list[SkillStep] = []
    state: dict[str, int] = {}      # 1 = visiting, 2 = done
    chain: dict[str, int] = {}      # the longest depends_on chain ending at a step, in steps

    for first in steps:
        if state.get(first.id) == 2:
            continue
        path: list[str] = [first.id]                        # the ids being visited, outermost first
        todo: list[tuple[SkillStep, int]] = [(first, 0)]    # (step, index of the next dependency to visit)
        state[first.id] = 1
        while todo:
            s, i = todo[-1]
            if i < len(s.depends_on):
                todo[-1] = (s, i + 1)
                d = by_id[s.depends_on[i]]
                if state.get(d.id) == 2:
                    continue
                if state.get(d.id) == 1:
                    cycle = " -> ".join(path[path.index(d.id):] + [d.id])
                    raise SkillError(where, "steps", f"depends_on has a cycle: {cycle}")
                if len(path) >= max_chain:
                    raise SkillError(where, "steps", f"a depends_on chain longer than {max_chain} steps "
                                                     f"(through {s.id!r})")
                state[d.id] = 1
                path.append(d.id)
                todo.append((d, 0))
                continue
            todo.pop()
            path.pop()
            state[s.id] = 2
            chain[s.id] = 1 + max((chain[d] for d in s.depends_on), default=0)
            if chain[s.id] > max_chain:
                raise SkillError(where, "steps", f"a depends_on chain longer than {max_chain} steps "
                                                 f"(ending at {s.id!r})")
            order.append(s)
    return order


# -- the registry --------------------------------------------------------------------------------

_lock = threading.Lock()
_cache: dict[tuple, dict[str, Skill]] = {}


def clear_skill_cache() -> None:
    with _lock:
        _cache.clear()


def _folders() -> list[tuple[Path, bool]]:
    out = [(SKILLS_DIR, False)]
    extra = os.environ.get(SKILLS_DIR_ENV, "").strip()
    if extra:
        folder = Path(extra).expanduser()
        if not folder.is_dir():
            raise SkillError(str(folder), "", f"{SKILLS_DIR_ENV} names a folder that does not exist")
        out.append((folder, True))
    return out


def _stamp(folders: list[tuple[Path, bool]]) -> tuple:
    return tuple((str(f), tuple(sorted((p.name, p.stat().st_mtime_ns) for p in f.glob("*.y*ml"))))
                 for f, _ in folders)


def load_skills() -> dict[str, Skill]:
    """Every skill, shipped then the user's folder (a user skill replaces a shipped one of the same name).

    Cached until a file in either folder changes. Compound skills must name known skills.
    """
    folders = _folders()
    key = _stamp(folders)
    with _lock:
        if key in _cache:
            return dict(_cache[key])
    found: dict[str, Skill] = {}
    for folder, user in folders:
        seen: dict[str, Path] = {}
        files = sorted(folder.glob("*.y*ml"))
        if len(files) > MAX_FILES:
            raise SkillError(str(folder), "", f"{len(files)} skill files; a folder holds at most {MAX_FILES}")
        for path in files:
            if path.suffix not in (".yaml", ".yml") or path.name.startswith("_"):
                continue
            skill = load_skill_file(path, user=user)
            if skill.name in seen:
                raise SkillError(str(path), "name", f"{skill.name!r} is also the name of {seen[skill.name].name}")
            seen[skill.name] = path
            found[skill.name] = skill
    for skill in found.values():
        for i, step in enumerate(skill.steps):
            if step.skill not in found:
                raise SkillError(skill.path, f"steps[{i}].skill", f"no skill called {step.skill!r}")
            if found[step.skill].kind == "compound":
                raise SkillError(skill.path, f"steps[{i}].skill", "a compound skill's steps are looks or retouch "
                                                                  "skills, not other compound skills")
    found = dict(sorted(found.items(), key=lambda kv: (kv[1].order, kv[0])))
    with _lock:
        _cache.clear()
        _cache[key] = found
    return dict(found)


def looks() -> dict[str, dict]:
    """The looks as engine-profile styles: name -> {label, description, words, settings}."""
    out = {}
    for skill in load_skills().values():
        if skill.is_look:
            out[skill.name] = {"label": skill.label, "description": skill.description,
                               "words": list(skill.words), "settings": skill.settings()}
    return out
