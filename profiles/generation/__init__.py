"""Generation model profiles: one YAML per model (profiles/generation/<name>.yaml).

Each profile has ``meta`` (model id, family, aliases) and a ``generation``
section: model class, architecture, resolution buckets, steps / cfg / sampler /
scheduler / denoise defaults, prompt patterns and negative prompts, known
quirks, the quality signatures the generated-region judge looks for, and
iteration signals (diagnosis -> new seed and parameter overrides) for a
regenerate. The format is ``_schema.yaml`` in this folder.

>>> p = load_generation_profile("stabilityai/stable-diffusion-2-inpainting")
>>> p.name, p.defaults["width"]
('sd2_inpainting', 512)

An unknown model falls back to ``default`` with ``is_fallback=True``; a
malformed profile raises :class:`profiles.ProfileError` naming the file and field.
"""

from __future__ import annotations

import fnmatch
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from profiles import ProfileError

GENERATION_DIR = Path(__file__).resolve().parent
SCHEMA_PATH = GENERATION_DIR / "_schema.yaml"
CONTRACT_PATH = GENERATION_DIR.parents[1] / "schemas" / "tools" / "generation.json"
FALLBACK = "default"

_cache: dict[str, "GenerationProfile"] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class GenerationProfile:
    name: str
    model_id: str
    family: str
    model_class: str
    architecture: str
    buckets: tuple
    defaults: dict
    prompt_patterns: dict
    negative_prompts: dict
    quirks: tuple
    quality: dict
    iteration_signals: tuple
    path: str = ""
    is_fallback: bool = False
    warning: str = ""
    aliases: tuple = field(default=())

    def prompt_for(self, operation: str, prompt: str = "", scene: str = "the photo") -> str:
        pattern = self.prompt_patterns.get(operation, "{prompt}")
        text = pattern.replace("{prompt}", prompt.strip()).replace("{scene}", scene.strip() or "the photo")
        return " ".join(text.split()).strip(" ,")

    def negative_for(self, operation: str) -> str:
        return self.negative_prompts.get(operation, self.negative_prompts.get("default", ""))

    def signal(self, diagnosis: str) -> dict | None:
        for s in self.iteration_signals:
            if s["diagnosis"] == diagnosis:
                return dict(s)
        return None


def list_generation_profiles() -> list[str]:
    return sorted(p.stem for p in GENERATION_DIR.glob("*.yaml") if not p.name.startswith("_"))


def _contract_defs() -> dict:
    return json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))["$defs"]


def _check(path: Path, data: Any) -> None:
    schema = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        e = errors[0]
        raise ProfileError(str(path), ".".join(str(p) for p in e.path) or "(top)", e.message)
    gen = data["generation"]
    defs = _contract_defs()
    image = {"$defs": defs, **defs["image"]}
    defaults = {k: v for k, v in gen["defaults"].items()}
    for err in jsonschema.Draft202012Validator(image).iter_errors(defaults):
        key = ".".join(str(p) for p in err.path) or "defaults"
        raise ProfileError(str(path), f"generation.defaults.{key}", f"outside the tool contract: {err.message}")
    for i, (w, h) in enumerate(gen["resolution_buckets"]):
        if w % 8 or h % 8:
            raise ProfileError(str(path), f"generation.resolution_buckets[{i}]", f"{w}x{h} is not a multiple of 8")
    overrides = {"$defs": defs, **defs["overrides"]}
    for i, sig in enumerate(gen["iteration_signals"]):
        for err in jsonschema.Draft202012Validator(overrides).iter_errors(sig["overrides"]):
            raise ProfileError(str(path), f"generation.iteration_signals[{i}].overrides", err.message)


def _load(path: Path, *, fallback: bool = False, warning: str = "") -> GenerationProfile:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ProfileError(str(path), "", f"cannot read the file ({exc.strerror})") from None
    except yaml.YAMLError:
        raise ProfileError(str(path), "", "not valid YAML") from None
    if not isinstance(data, dict):
        raise ProfileError(str(path), "", "expected a mapping with meta and generation")
    _check(path, data)
    meta, gen = data["meta"], data["generation"]
    defaults = dict(gen["defaults"])
    defaults.setdefault("negative_prompt", gen["negative_prompts"]["default"])
    return GenerationProfile(
        name=path.stem, model_id=meta["model_id"], family=meta["family"], model_class=gen["model_class"],
        architecture=gen["architecture"], buckets=tuple(tuple(b) for b in gen["resolution_buckets"]),
        defaults=defaults, prompt_patterns=dict(gen["prompt_patterns"]),
        negative_prompts=dict(gen["negative_prompts"]), quirks=tuple(gen["quirks"]),
        quality=dict(gen["quality_signatures"]), iteration_signals=tuple(gen["iteration_signals"]),
        path=str(path), is_fallback=fallback, warning=warning, aliases=tuple(meta.get("aliases") or ()))


def resolve_generation_profile(model: str) -> Path | None:
    """The profile file for a model id, folder or checkpoint name (stem, model_id, then aliases)."""
    text = (model or "").strip()
    if not text:
        return None
    candidates = {text.lower(), text.rstrip("/").rsplit("/", 1)[-1].lower()}
    for stem in list_generation_profiles():
        if stem.lower() in candidates:
            return GENERATION_DIR / f"{stem}.yaml"
    for stem in list_generation_profiles():
        path = GENERATION_DIR / f"{stem}.yaml"
        meta = (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("meta") or {}
        if str(meta.get("model_id", "")).lower() in candidates:
            return path
        for pattern in meta.get("aliases") or []:
            if any(fnmatch.fnmatch(c, pattern.lower()) for c in candidates | {text.lower()}):
                return path
    return None


def load_generation_profile(model: str | None) -> GenerationProfile:
    """The (cached) profile for a model; the ``default`` profile, flagged, when none names it."""
    key = (model or "").strip()
    with _lock:
        if key in _cache:
            return _cache[key]
    path = resolve_generation_profile(key)
    if path is None:
        warning = (f"no generation profile names {key!r}: using conservative defaults "
                   "(write profiles/generation/<model>.yaml)") if key else ""
        profile = _load(GENERATION_DIR / f"{FALLBACK}.yaml", fallback=bool(key), warning=warning)
    else:
        profile = _load(path)
    with _lock:
        _cache[key] = profile
    return profile


def check_all_generation_profiles() -> list[str]:
    """Load every profile (raising ProfileError on the first bad one); their names."""
    names = list_generation_profiles()
    for name in names:
        _load(GENERATION_DIR / f"{name}.yaml")
    return names


__all__ = ["GenerationProfile", "check_all_generation_profiles", "list_generation_profiles",
           "load_generation_profile", "resolve_generation_profile"]
