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
with :class:`SkillError` naming the file and the key: the file's data is checked by pydantic models
(:class:`SkillFile`, :class:`AdjustmentSpec`, :class:`StepSpec`; :func:`skill_json_schema` is their JSON
schema) and built into the frozen :class:`Skill` the rest of Atelier uses. Loading is bounded, so a
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
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping

import yaml
from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError,
                      ValidationInfo, WrapValidator, field_validator, model_validator)
from pydantic_core import PydanticCustomError

from pipeline import ops
from pipeline.masks import MaskSpecError, normalize_mask_spec

SKILLS_DIR = Path(__file__).resolve().parent
SKILLS_DIR_ENV = "ATELIER_SKILLS_DIR"
KINDS = ("look", "retouch", "compound")
GATES = ("needs_face", "needs_sky", "colour_only")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_]{0,47}$")
#: Bounds on what one skill file may cost to load (see the module docstring).
MAX_FILE_BYTES = 64 * 1024
MAX_FILES = 500
MAX_YAML_VALUES = 5000
MAX_YAML_DEPTH = 16
MAX_SKILL_STEPS = 32
MAX_CHAIN = 32

__all__ = ["GATES", "KINDS", "SKILLS_DIR", "SKILLS_DIR_ENV", "Adjustment", "AdjustmentSpec", "Skill", "SkillError",
           "SkillFile", "SkillStep", "StepSpec", "check_graph", "clear_skill_cache", "load_skill_file", "load_skills",
           "looks", "skill_json_schema"]


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


#: Stands for an adjustment's key in a mask spec's message (``pipeline.masks`` names the place it is given).
_HERE = "\x00here\x00"


def _wrong(text: str, key: str | None = None) -> PydanticCustomError:
    """A problem worded where it is found; ``key`` continues the dotted key past the model it is raised in."""
    return PydanticCustomError("skill", text, {"key": key} if key else None)


def _falsy_is(empty: type) -> BeforeValidator:
    # ``words: null``, ``gates: []``, ``depends_on: ''`` and the like mean none, as they always have
    return BeforeValidator(lambda value: value or empty())


def _step_ids(value: Any) -> Any:
    return [value] if isinstance(value, str) and value else value or []      # one id may stand alone


def _op_name(value: Any) -> str:
    try:
        return ops.get_op(value).name
    except ops.OpError as exc:
        raise _wrong(str(exc)) from None


def _mask_spec(value: Any) -> Any:
    try:
        return None if value is None else normalize_mask_spec(value, _HERE)
    except MaskSpecError as exc:
        raise _wrong(str(exc)) from None


def _gate_name(value: Any) -> Any:
    if value not in GATES:
        raise _wrong(f"unknown gate; expected one of {', '.join(GATES)}")
    return value


def _as_one(what: str) -> WrapValidator:
    """A problem inside a list of plain values reads as one, on the whole list (``words: expected ...``)."""
    def check(value: Any, handler: Any) -> Any:
        try:
            return handler(value)
        except ValidationError:
            raise _wrong(f"expected {what}, got {value!r}") from None
    return WrapValidator(check)


#: Text: stripped, never empty.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
#: A phrase that asks for a skill, as the agent matches it (stripped, lower case).
Phrase = Annotated[str, StringConstraints(strip_whitespace=True, to_lower=True, min_length=1)]


class _Spec(BaseModel):
    """Part of a skill file: typed (no "5" for 5, no 1 for true), frozen; an unknown key is an error.

    A field's ``description`` is what it expects: a wrong value reads "expected <description>, got ...".
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, regex_engine="python-re")


class AdjustmentSpec(_Spec):
    """One entry of ``adjust:``: an op set to (``set``) or moved by (``add``) a whole number, globally or in a mask."""

    op: Annotated[str, BeforeValidator(_op_name)] = Field(description="an op name")
    value: int = Field(description="a whole number in the op's range")
    mode: Literal["set", "add"] = Field("set", description="set or add")
    target: Annotated[dict | None, BeforeValidator(_mask_spec)] = Field(None, description="a mask spec")

    @field_validator("value", mode="wrap")
    @classmethod
    def _whole(cls, value: Any, handler: Any, info: ValidationInfo) -> int:
        try:
            return handler(value)
        except ValidationError:
            op = ops.OPS.get(info.data.get("op"))       # absent when the op itself is wrong
            raise _wrong(f"expected a whole number{f' {op.min}..{op.max}' if op else ''}, got {value!r}") from None

    @model_validator(mode="after")
    def _in_range(self) -> "AdjustmentSpec":
        op = ops.get_op(self.op)
        lo, hi = (op.min, op.max) if self.mode == "set" else (op.min - op.max, op.max - op.min)
        if not lo <= self.value <= hi:
            raise _wrong(f"{self.value} is outside {lo}..{hi}", "value")
        return self

    def adjustment(self) -> Adjustment:
        return Adjustment(op=self.op, value=self.value, mode=self.mode, target=self.target)


class StepSpec(_Spec):
    """One entry of ``steps:``: a skill in a compound skill's task graph."""

    id: Any = Field(None, description="a step id (default: the skill's name)")
    skill: str = Field(min_length=1, description="a skill name")
    depends_on: Annotated[list[str], _as_one("a list of step ids"), BeforeValidator(_step_ids)] = Field(
        [], description="a list of step ids")

    def step(self) -> SkillStep:
        return SkillStep(id=str(self.id or self.skill), skill=self.skill, depends_on=tuple(self.depends_on))


class SkillFile(_Spec):
    """A skill file's data (the format in the module docstring and docs/mcp.md, "Skills")."""

    name: str = Field(pattern=_NAME.pattern, description="1-48 lower-case letters, digits or '_'")
    kind: Literal["look", "retouch", "compound"] = Field(description=f"one of {', '.join(KINDS)}")
    order: int = Field(100, description="a whole number (lists show lower numbers first)")
    label: Text | None = Field(None, description="text")
    description: Text = Field(description="text")
    words: Annotated[list[Phrase], _as_one("a list of phrases"), _falsy_is(list)] = Field(
        [], description="a list of phrases")
    gates: Annotated[dict[Annotated[str, BeforeValidator(_gate_name)], bool], _falsy_is(dict)] = Field(
        {}, description=f"a mapping of {', '.join(GATES)} to true/false")
    adjust: Annotated[list[AdjustmentSpec], _falsy_is(list)] = Field(
        [], description="a list of {op, value, mode, target}")
    steps: Annotated[list[StepSpec], _falsy_is(list)] = Field([], description="a list of {id, skill, depends_on}")
    version: Any = None
    author: Any = None

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            raise _wrong("expected a mapping with name, kind, description and adjust or steps")
        stem = (info.context or {}).get("stem")       # the name defaults to the file's
        return {"name": stem, **data} if stem is not None and "name" not in data else data

    @model_validator(mode="after")
    def _by_kind(self) -> "SkillFile":
        if self.kind == "compound":
            if self.adjust:
                raise _wrong("a compound skill lists steps (other skills), not adjustments", "adjust")
            if not self.steps:
                raise _wrong("expected a list of {id, skill, depends_on}", "steps")
            if len(self.steps) > MAX_SKILL_STEPS:
                raise _wrong(f"{len(self.steps)} steps; a compound skill has at most {MAX_SKILL_STEPS}", "steps")
            return self
        if self.steps:
            raise _wrong(f"only a compound skill has steps; this one is a {self.kind}", "steps")
        if not self.adjust:
            raise _wrong("expected a list of {op, value, mode, target}", "adjust")
        for i, a in enumerate(self.adjust):
            if self.kind == "look" and (a.target is not None or a.mode != "set"):
                raise _wrong("a look sets global values (mode set, no target); "
                                "make it a retouch skill to use masks or relative moves", f"adjust[{i}]")
        return self

    def skill(self, path: Path, user: bool) -> Skill:
        return Skill(name=self.name, kind=self.kind, label=self.label or self.name.replace("_", " ").capitalize(),
                     description=self.description, words=tuple(self.words), gates=dict(self.gates),
                     adjust=tuple(a.adjustment() for a in self.adjust), steps=tuple(s.step() for s in self.steps),
                     path=str(path), user=user, order=self.order)


def skill_json_schema() -> dict:
    """The JSON schema of a skill file (for editors and other agents)."""
    return SkillFile.model_json_schema()


_ITEMS = {"adjust": AdjustmentSpec, "steps": StepSpec}


def _problem(err: Mapping[str, Any]) -> tuple[str, str]:
    """The dotted key (``adjust[0].value``, ``gates.needs_sky``) and what is wrong, for one pydantic error."""
    loc, ctx, kind = tuple(err["loc"]), err.get("ctx") or {}, err["type"]
    parts = [p for p in loc if p != "[key]"] + ([ctx["key"]] if ctx.get("key") else [])
    key = "".join(f"[{p}]" if i and parts[i - 1] in _ITEMS else f".{p}" for i, p in enumerate(parts)).lstrip(".")
    value = None if kind == "missing" else err.get("input")
    owner = SkillFile if len(loc) == 1 else _ITEMS.get(loc[0]) if len(loc) == 3 else None
    if kind == "skill":
        return key, err["msg"].replace(_HERE, key)
    if kind in ("extra_forbidden", "invalid_key"):
        names = (", ".join(owner.model_fields) if owner is not SkillFile
                 else "some of " + ", ".join(sorted(SkillFile.model_fields)))
        return key, f"unknown key; expected {names}"
    if kind == "model_type":                       # an entry of adjust or steps
        return key, f"expected {{{', '.join(_ITEMS[loc[0]].model_fields)}}}, got {value!r}"
    info = owner.model_fields.get(loc[-1]) if owner is not None else None
    if info is not None and info.description:
        return key, f"expected {info.description}, got {value!r}"
    if kind == "bool_type":                        # a gate
        return key, f"expected true or false, got {value!r}"
    return key, err["msg"]


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
    try:
        spec = SkillFile.model_validate(data, context={"stem": path.stem})
    except ValidationError as exc:
        # one problem, as a person fixes them: an unknown key (often a typo) before what it leaves missing
        unknown = ("extra_forbidden", "invalid_key")
        errors = sorted(exc.errors(include_url=False),
                        key=lambda e: (e["type"] not in unknown, str(e["loc"]) if e["type"] in unknown else ""))
        _fail(path, *_problem(errors[0]))
    skill = spec.skill(path, user)
    check_graph(skill.steps, where=str(path))
    return skill


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
