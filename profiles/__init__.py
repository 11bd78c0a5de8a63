"""Model-communication profiles: one YAML per model, read by three consumers.

A profile has four sections (the format is documented, and validated, by
``profiles/_schema.yaml``):

- ``meta``: model_id, family, modality, aliases (how a model id finds its file);
- ``prompt_engineering`` (+ ``intent_translations``): for planners: how to talk to a model;
  the engine profile (no model) has ``vocabulary`` instead: the embedded planner's words and
  grammar, one file per concern in ``profiles/engine/``, merged when the profile loads;
- ``parameter_space``: per-op ranges, sweet spots and failure modes, for the executor;
- ``quality_signatures``: expected characteristics, known artifacts, quality floor
  and iteration signals (diagnosis -> op + direction + amount), for the judge and replans.

>>> p = load_profile("engine")
>>> p.sweet_spot("saturation").high
40

``load_profile`` caches: the same name gives the same (read-only) object. An
unknown model id falls back to ``default_vlm`` with ``is_fallback=True`` and a
``warning`` to surface. A malformed profile raises :class:`ProfileError`
naming the file and the field.
"""

from __future__ import annotations

import copy
import fnmatch
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import jsonschema
import yaml

from pipeline import ops
from pipeline.masks import MaskSpecError, normalize_mask_spec

PROFILES_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = PROFILES_DIR / "_schema.yaml"
FALLBACK_PROFILE = "default_vlm"
#: The profile whose named looks (styles) are filled from the skill registry (skills/).
LOOKS_PROFILE = "engine"

__all__ = [
    "IterationSignal", "Profile", "ProfileError", "SweetSpot", "clear_profile_cache",
    "list_profiles", "load_profile", "resolve_profile_path",
]


class ProfileError(ValueError):
    """A missing or malformed profile. ``file`` and ``field`` name the problem."""

    def __init__(self, file: str, field: str, problem: str):
        self.file, self.field, self.problem = file, field, problem
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {problem}")


@dataclass(frozen=True)
class SweetSpot:
    """Where an op looks good (``low``..``high`` on -100..100) and why it ends there."""

    op: str
    low: int
    high: int
    why: str
    failure_modes: tuple[str, ...] = ()

    def contains(self, value: int) -> bool:
        return self.low <= value <= self.high


@dataclass(frozen=True)
class Adjustment:
    """One concrete correction: move ``op`` by ``amount`` (1..100) in ``direction``."""

    op: str
    direction: str            # "increase" | "decrease"
    amount: int
    target: dict | None = None

    @property
    def value(self) -> int:
        """Signed change on the op's scale."""
        return self.amount if self.direction == "increase" else -self.amount


@dataclass(frozen=True)
class IterationSignal:
    """A diagnosed problem and its fix: concrete adjustments and/or a plan scale."""

    diagnosis: str
    adjust: tuple[Adjustment, ...] = ()
    scale_plan: float | None = None
    why: str = ""


def _freeze(value: Any) -> Any:
    """Deep read-only copy: a cached profile is shared, so nobody may mutate it."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


def _key(text: str) -> str:
    """Lookup key for diagnoses and style names: 'Highlights clipped' -> 'highlights_clipped'."""
    return "_".join(str(text).strip().lower().replace("-", " ").replace("_", " ").split())


@dataclass(frozen=True, eq=False)
class Profile:
    """One loaded, validated, read-only profile. Use the accessors, not ``data``."""

    name: str
    path: Path
    data: Mapping = field(repr=False)
    is_fallback: bool = False
    requested: str = ""
    warning: str | None = None

    # -- sections ------------------------------------------------------
    @property
    def meta(self) -> Mapping:
        return self.data["meta"]

    @property
    def model_id(self) -> str:
        return self.meta["model_id"]

    @property
    def family(self) -> str:
        return self.meta["family"]

    @property
    def modality(self) -> str:
        return self.meta["modality"]

    @property
    def prompt_engineering(self) -> Mapping:
        """How to talk to the model (VLM profiles; empty for the engine)."""
        return self.data.get("prompt_engineering") or MappingProxyType({})

    @property
    def vocabulary(self) -> Mapping:
        """The embedded planner's words and grammar (the engine profile; empty for VLM profiles)."""
        return self.data.get("vocabulary") or MappingProxyType({})

    @property
    def planner_section(self) -> Mapping:
        """What planners read: a model's prompt_engineering, or the engine's vocabulary."""
        return self.data.get("prompt_engineering") or self.vocabulary

    @property
    def parameter_space(self) -> Mapping:
        return self.data["parameter_space"]

    @property
    def quality_signatures(self) -> Mapping:
        return self.data["quality_signatures"]

    @property
    def quality_floor(self) -> float:
        return float(self.quality_signatures["quality_floor"])

    # -- per-consumer views (fresh plain dicts; safe to mutate) ---------
    def planner_view(self) -> dict:
        """The planner section (prompt_engineering or vocabulary) with its intent_translations, plus meta."""
        view = _thaw(self.planner_section)
        view.setdefault("intent_translations", {})
        return {"meta": _thaw(self.meta), **view, "is_fallback": self.is_fallback,
                "warning": self.warning}

    def executor_view(self) -> dict:
        """parameter_space for the executor: per-op range, sweet spot, why, failure modes."""
        return _thaw(self.parameter_space)

    def judge_view(self) -> dict:
        """quality_signatures for judges: characteristics, artifacts, floor, iteration signals."""
        return {"meta": _thaw(self.meta), **_thaw(self.quality_signatures),
                "is_fallback": self.is_fallback, "warning": self.warning}

    def to_dict(self) -> dict:
        return _thaw(self.data)

    # -- lookups -------------------------------------------------------
    def sweet_spot(self, op: str) -> SweetSpot | None:
        """The op's sweet spot, or None when the profile says nothing about it."""
        ops.get_op(op)
        entry = self.parameter_space["ops"].get(op)
        if not entry or "sweet_spot" not in entry:
            return None
        low, high = entry["sweet_spot"]
        return SweetSpot(op, int(low), int(high), entry.get("why", ""),
                         tuple(entry.get("failure_modes", ())))

    def iteration_signal(self, diagnosis: str) -> IterationSignal | None:
        """The fix for a diagnosed problem ("highlights_clipped", "Oversaturated"), or None.

        Matches the signal's name or one of its aliases, ignoring case, spaces,
        hyphens and underscores. A scope after a colon ("too_weak:temperature",
        the op the judge measured) is ignored here; planners read it themselves.
        """
        wanted = _key(str(diagnosis).split(":", 1)[0])
        for name, sig in self.quality_signatures["iteration_signals"].items():
            if wanted == _key(name) or wanted in {_key(a) for a in sig.get("aliases", ())}:
                adjust = tuple(
                    Adjustment(a["op"], a["direction"], int(a["amount"]),
                               _thaw(a["target"]) if a.get("target") else None)
                    for a in sig.get("adjust", ())
                )
                scale = sig.get("scale_plan")
                return IterationSignal(name, adjust, None if scale is None else float(scale),
                                       sig.get("why", ""))
        return None

    def iteration_signal_words(self) -> dict[str, tuple[str, ...]]:
        """diagnosis -> phrases in free-text feedback that mean it."""
        return {name: tuple(sig.get("words", ()))
                for name, sig in self.quality_signatures["iteration_signals"].items()}

    def styles(self) -> list[str]:
        """Names of the named looks (session styles) this profile defines."""
        return list(self.planner_section.get("styles", {}))

    def style(self, name: str) -> dict[str, int]:
        """Absolute op settings of the look called ``name`` ("film", "Black and white")."""
        styles = self.planner_section.get("styles", {})
        wanted = _key(name)
        for key, entry in styles.items():
            if _key(key) == wanted or wanted in {_key(w) for w in entry.get("words", ())}:
                return dict(entry["settings"])
        raise ProfileError(str(self.path.name), f"{self.section_name}.styles",
                           f"no style {name!r}; known styles: {', '.join(styles) or 'none'}")

    def intent_translations(self) -> dict:
        return _thaw(self.planner_section.get("intent_translations", {}))

    @property
    def section_name(self) -> str:
        """The planner section's key: "vocabulary" (the engine) or "prompt_engineering"."""
        return "prompt_engineering" if "prompt_engineering" in self.data else "vocabulary"


# -- loading ---------------------------------------------------------------
_lock = threading.Lock()
_by_path: dict[Path, Profile] = {}
_by_request: dict[str, Profile] = {}
_schema_cache: list[dict] = []


def clear_profile_cache() -> None:
    """Forget every loaded profile (tests, or after editing a YAML file)."""
    with _lock:
        _by_path.clear()
        _by_request.clear()
        _schema_cache.clear()


def _schema() -> dict:
    if not _schema_cache:
        with open(SCHEMA_PATH, encoding="utf-8") as fh:
            _schema_cache.append(yaml.safe_load(fh))
    return _schema_cache[0]


def list_profiles(directory: Path | None = None) -> list[str]:
    """Names of the shipped profiles (file stems; files starting with '_' are not profiles)."""
    d = directory or PROFILES_DIR
    return sorted(p.stem for p in d.glob("*.yaml") if not p.name.startswith("_"))


def _read_yaml(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ProfileError(str(path), "", f"cannot read the file ({exc.strerror})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise ProfileError(str(path), "", f"not valid YAML{at}") from None
    if not isinstance(data, dict):
        raise ProfileError(str(path), "", "expected a mapping with meta, prompt_engineering, "
                                          "parameter_space and quality_signatures")
    return data


def _merge(base: Any, over: Any) -> Any:
    """Deep merge for ``extends``: mappings merge key by key, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merge(base.get(k), v) if k in base else copy.deepcopy(v)
        return out
    return copy.deepcopy(over)


def _resolve_extends(path: Path, data: dict, seen: tuple[Path, ...] = ()) -> dict:
    parent = data.get("extends")
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ProfileError(str(path), "extends", f"expected a profile name, got {parent!r}")
    parent_path = path.parent / f"{parent}.yaml"
    if not parent_path.is_file():
        parent_path = PROFILES_DIR / f"{parent}.yaml"
    if not parent_path.is_file():
        raise ProfileError(str(path), "extends", f"no profile called {parent!r}")
    if parent_path.resolve() in seen:
        raise ProfileError(str(path), "extends", f"circular extends through {parent!r}")
    base = _resolve_extends(parent_path, _read_yaml(parent_path), seen + (path.resolve(),))
    base.pop("extends", None)
    merged = _merge(base, {k: v for k, v in data.items() if k != "extends"})
    return merged


def _field_path(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _validate_schema(path: Path, data: dict) -> None:
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        field_name = _field_path(err.absolute_path) or "(top level)"
        if err.validator == "additionalProperties" and err.absolute_path:
            problem = err.message
        elif err.validator == "required":
            missing = err.message.split("'")[1] if "'" in err.message else err.message
            field_name = f"{_field_path(err.absolute_path)}.{missing}".lstrip(".")
            problem = "required"
        else:
            problem = err.message
        raise ProfileError(str(path), field_name, problem)


def _check_op(path: Path, where: str, name: Any) -> ops.Op:
    try:
        return ops.get_op(name)
    except ops.OpError as exc:
        raise ProfileError(str(path), where, str(exc)) from None


def _check_values(path: Path, where: str, values: Mapping, mode: str = "set") -> None:
    for name, value in values.items():
        op = _check_op(path, f"{where}.{name}", name)
        if mode == "add" and op.min == 0 and op.control not in ("choice", "points"):
            lo = -(op.max - op.min)  # a move on a 0..N op may go down ("less grain")
        else:
            lo = op.min
        if not lo <= value <= op.max:
            raise ProfileError(str(path), f"{where}.{name}", f"{value} is outside {lo}..{op.max}")


def _check_mask(path: Path, where: str, spec: Any) -> None:
    try:
        normalize_mask_spec(spec, where)
    except MaskSpecError as exc:
        raise ProfileError(str(path), where, str(exc)) from None


def _check_semantics(path: Path, data: dict) -> None:
    """Checks the JSON Schema cannot express: op names, mask specs, ranges, references."""
    section = "prompt_engineering" if "prompt_engineering" in data else "vocabulary"
    pe = data[section]
    intents = pe.get("intent_translations") or {}
    for name, intent in intents.items():
        where = f"{section}.intent_translations.{name}"
        if not intent["ops"]:
            raise ProfileError(str(path), f"{where}.ops", "expected at least one op")
        _check_values(path, f"{where}.ops", intent["ops"], intent.get("mode", "add"))
        opp = intent.get("opposite")
        if opp is not None and opp not in intents:
            raise ProfileError(str(path), f"{where}.opposite", f"no intent called {opp!r}")
    levels = (pe.get("magnitudes") or {}).get("words", {})
    for word, entry in levels.items():
        if entry["level"] not in ops.MAGNITUDES:
            raise ProfileError(str(path), f"{section}.magnitudes.words.{word}.level",
                               f"expected one of {', '.join(ops.MAGNITUDES)}, got {entry['level']!r}")
    for name, target in (pe.get("targets") or {}).items():
        _check_mask(path, f"{section}.targets.{name}.mask", target["mask"])
    for band in pe.get("bands") or {}:
        if band not in ops.BANDS:
            raise ProfileError(str(path), f"{section}.bands.{band}",
                               f"expected one of {', '.join(ops.BANDS)}")
    for op_name, pattern in (pe.get("band_ops") or {}).items():
        _check_op(path, f"{section}.band_ops.{op_name}", op_name)
        for band in ops.BANDS:
            _check_op(path, f"{section}.band_ops.{op_name}", pattern.format(band=band))
    for name, style in (pe.get("styles") or {}).items():
        _check_values(path, f"{section}.styles.{name}.settings", style["settings"])
    for op_name, entry in data["parameter_space"]["ops"].items():
        where = f"parameter_space.ops.{op_name}"
        op = _check_op(path, where, op_name)
        for key in ("range", "sweet_spot"):
            if key in entry:
                low, high = entry[key]
                if low > high or low < op.min or high > op.max:
                    raise ProfileError(str(path), f"{where}.{key}",
                                       f"expected low <= high within {op.min}..{op.max}, got [{low}, {high}]")
    for name, sig in data["quality_signatures"]["iteration_signals"].items():
        for i, adj in enumerate(sig.get("adjust", ())):
            where = f"quality_signatures.iteration_signals.{name}.adjust[{i}]"
            _check_op(path, f"{where}.op", adj["op"])
            if adj.get("target") is not None:
                _check_mask(path, f"{where}.target", adj["target"])


def _read_vocabulary(path: Path, data: dict) -> None:
    """``vocabulary: <folder>``: the folder's YAML files (one per concern) merged into one section.

    A key in two files is an error naming both: each word table has one home.
    """
    folder = data.get("vocabulary")
    if not isinstance(folder, str):
        return
    where = path.parent / folder
    if not where.is_dir():
        raise ProfileError(str(path), "vocabulary", f"no folder {folder!r} beside the profile")
    merged: dict = {}
    home: dict[str, str] = {}
    for part in sorted(where.glob("*.yaml")):
        for key, value in _read_yaml(part).items():
            if key in merged:
                raise ProfileError(str(part), key, f"already in {home[key]}: a table has one home")
            merged[key], home[key] = value, part.name
    data["vocabulary"] = merged


def _fill_sweet_spots(data: dict) -> None:
    """The engine profile's parameter_space: each op's sweet spot, why and failure modes from the registry
    (pipeline/ops.py), where the profile itself says nothing of that op."""
    space = data.setdefault("parameter_space", {})
    space.setdefault("ops", {})
    if not isinstance(space["ops"], dict):
        return      # the schema names the problem
    for op in ops.OPS.values():
        if op.sweet_spot is not None and op.name not in space["ops"]:
            space["ops"][op.name] = {"sweet_spot": list(op.sweet_spot), "why": op.why,
                                     "failure_modes": list(op.failure_modes)}


def _fill_looks(path: Path, data: dict) -> None:
    """The engine profile's named looks (``vocabulary.styles``) come from the skill registry.

    Looks are skills (``skills/*.yaml``, ``kind: look``); planner code keeps reading
    ``Profile.styles()`` / ``Profile.style(name)``. A style written in the profile itself wins.
    """
    from skills import SkillError, looks

    pe = data.get("vocabulary")
    if not isinstance(pe, dict):
        return
    try:
        found = looks()
    except SkillError as exc:
        raise ProfileError(exc.file, exc.key, exc.problem) from None
    pe["styles"] = {**found, **(pe.get("styles") or {})}


def _load_file(path: Path) -> Profile:
    path = path.resolve()
    with _lock:
        cached = _by_path.get(path)
    if cached is not None:
        return cached
    data = _resolve_extends(path, _read_yaml(path))
    _read_vocabulary(path, data)
    if path.stem == LOOKS_PROFILE:
        _fill_looks(path, data)
        _fill_sweet_spots(data)
    _validate_schema(path, data)
    _check_semantics(path, data)
    profile = Profile(name=path.stem, path=path, data=_freeze(data), requested=path.stem)
    with _lock:
        return _by_path.setdefault(path, profile)


def _matches(profile_meta: Mapping, wanted: str) -> bool:
    tail = wanted.rsplit("/", 1)[-1]
    names = [profile_meta["model_id"], *profile_meta.get("aliases", ())]
    for pattern in names:
        p = pattern.lower()
        if fnmatch.fnmatchcase(wanted, p) or fnmatch.fnmatchcase(tail, p):
            return True
    return False


def resolve_profile_path(name_or_model_id: str, directory: Path | None = None) -> Path | None:
    """The profile file for a name or model id, or None when nothing matches.

    Order: a path to a .yaml file; a file stem; a profile's model_id; its
    aliases (fnmatch patterns, case-insensitive, against the full id and the
    part after the last '/').
    """
    d = directory or PROFILES_DIR
    text = name_or_model_id.strip()
    as_path = Path(text)
    if as_path.suffix in (".yaml", ".yml") and (as_path.is_file() or len(as_path.parts) > 1):
        return as_path
    wanted = text.lower()
    stems = {s.lower(): d / f"{s}.yaml" for s in list_profiles(d)}
    if wanted in stems:
        return stems[wanted]
    exact, pattern = None, None
    for stem, path in stems.items():
        try:
            meta = _read_yaml(path).get("meta") or {}
        except ProfileError:
            continue  # a broken profile fails when it is loaded by name, not while resolving others
        if not isinstance(meta, dict) or not isinstance(meta.get("model_id"), str):
            continue
        if meta["model_id"].lower() in (wanted, wanted.rsplit("/", 1)[-1]):
            exact = exact or path
        elif pattern is None and _matches({"model_id": meta["model_id"],
                                           "aliases": [a for a in meta.get("aliases") or [] if isinstance(a, str)]},
                                          wanted):
            pattern = path
    return exact or pattern


def load_profile(name_or_model_id: str | Path) -> Profile:
    """Load (cached) the profile for a name, a model id or a path to a YAML file.

    An unknown name or model id falls back to ``default_vlm``: the returned
    profile has ``is_fallback=True`` and a ``warning`` to show the person. A
    path that does not exist, or a malformed profile, raises :class:`ProfileError`.
    """
    if isinstance(name_or_model_id, Path):
        if not name_or_model_id.is_file():
            raise ProfileError(str(name_or_model_id), "", "no such profile file")
        return _load_file(name_or_model_id)
    if not isinstance(name_or_model_id, str) or not name_or_model_id.strip():
        raise ProfileError("profiles", "name", f"expected a profile name or model id, got {name_or_model_id!r}")
    requested = name_or_model_id.strip()
    with _lock:
        cached = _by_request.get(requested)
    if cached is not None:
        return cached
    path = resolve_profile_path(requested)
    if path is not None:
        if not path.is_file():
            raise ProfileError(str(path), "", "no such profile file")
        profile = _load_file(path)
    else:
        base = _load_file(PROFILES_DIR / f"{FALLBACK_PROFILE}.yaml")
        profile = Profile(
            name=base.name, path=base.path, data=base.data, is_fallback=True, requested=requested,
            warning=(f"No profile for model {requested!r}; using the generic {FALLBACK_PROFILE} "
                     f"profile. Add profiles/<name>.yaml with meta.aliases matching it to tune it."),
        )
    with _lock:
        return _by_request.setdefault(requested, profile)
