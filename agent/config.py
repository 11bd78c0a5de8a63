"""The agent's numbers, loaded once from ``configs/agent_config.yaml``.

:func:`load_config` reads the YAML into a frozen :class:`AgentConfig` and
checks every value; a bad value raises :class:`AgentConfigError` naming the
key (``quality.min_pass_score``) and what was expected. Nothing else in the
agent hard-codes a threshold or a limit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG_PATH = REPO_ROOT / "configs" / "agent_config.yaml"

REVIEW_MODES = ("always", "below_auto_approve", "never")


class AgentConfigError(ValueError):
    """A missing, unknown or out-of-range config value: the message names the key."""


@dataclass(frozen=True)
class AgentConfig:
    """Thresholds and limits of the agent. Scores are 0..1, sizes are pixels (long side)."""

    max_sub_goals: int = 6
    max_retries_per_sub_goal: int = 2
    max_error_retries: int = 2
    min_pass_score: float = 0.6
    auto_approve_threshold: float = 0.9
    review_mode: str = "below_auto_approve"
    budget_tokens: int = 2000
    keep_recent_turns: int = 3
    chars_per_token: int = 4
    proxy_long_side: int = 1600
    judge_long_side: int = 768
    render_cache_bytes: int = 256 * 1024 * 1024
    max_upload_pixels: int = 50_000_000
    export_quality: int = 92
    source_cache_sessions: int = 8
    sessions_dir: str = "sessions"
    database_file: str = "atelier.db"
    checkpoints_file: str = "checkpoints.db"
    source_cache_bytes: int = 512 * 1024 * 1024
    warm_on_upload: bool = True
    lease_ttl_s: float = 30.0
    lease_wait_s: float = 5.0
    memory_cap_mb: int = 2048
    max_custom_schemas: int = 100
    max_schemas_per_visitor: int = 5
    # Sections owned by their consumers and validated by them at load:
    # ``vlm:`` (agent.model.vlm.vlm_limits) and ``quality.judge:`` (the embedded judge's thresholds).
    vlm: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    judge: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    # ``skills:`` (agent.skills), ``orchestrator:`` (agent.orchestrator), ``failures:`` (agent.loop.failures).
    skills: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    orchestrator: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    failures: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def with_overrides(self, **values: Any) -> "AgentConfig":
        """A copy with some values replaced, validated like the YAML."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        unknown = set(values) - set(data)
        if unknown:
            raise AgentConfigError(f"unknown config key(s): {', '.join(sorted(unknown))}")
        data.update(values)
        return _validated(data)

    def sessions_path(self) -> Path:
        """``sessions_dir`` as an absolute path (relative = relative to the repository root)."""
        p = Path(self.sessions_dir).expanduser()
        return p if p.is_absolute() else REPO_ROOT / p


# YAML key -> (field, kind, lo, hi). Kinds: int, score (float 0..1), mode, name.
_SPEC: dict[str, tuple[str, str, float | None, float | None]] = {
    "planning.max_sub_goals": ("max_sub_goals", "int", 1, 20),
    "planning.max_retries_per_sub_goal": ("max_retries_per_sub_goal", "int", 0, 10),
    "planning.max_error_retries": ("max_error_retries", "int", 0, 10),
    "quality.min_pass_score": ("min_pass_score", "score", 0.0, 1.0),
    "quality.auto_approve_threshold": ("auto_approve_threshold", "score", 0.0, 1.0),
    "review.review_mode": ("review_mode", "mode", None, None),
    "context.budget_tokens": ("budget_tokens", "int", 200, 1_000_000),
    "context.keep_recent_turns": ("keep_recent_turns", "int", 0, 100),
    "context.chars_per_token": ("chars_per_token", "int", 1, 16),
    "images.proxy_long_side": ("proxy_long_side", "int", 64, 8192),
    "images.judge_long_side": ("judge_long_side", "int", 64, 4096),
    "images.render_cache_bytes": ("render_cache_bytes", "int", 0, 1 << 40),
    "images.max_upload_pixels": ("max_upload_pixels", "int", 1, 1_000_000_000),
    "images.export_quality": ("export_quality", "int", 1, 100),
    "images.source_cache_sessions": ("source_cache_sessions", "int", 1, 1000),
    "paths.sessions_dir": ("sessions_dir", "name", None, None),
    "paths.database_file": ("database_file", "name", None, None),
    "paths.checkpoints_file": ("checkpoints_file", "name", None, None),
    "images.source_cache_bytes": ("source_cache_bytes", "int", 0, 1 << 40),
    "images.warm_on_upload": ("warm_on_upload", "bool", None, None),
    "replicas.lease_ttl_s": ("lease_ttl_s", "float", 0.5, 3600),
    "replicas.lease_wait_s": ("lease_wait_s", "float", 0, 600),
    "replicas.memory_cap_mb": ("memory_cap_mb", "int", 64, 1 << 20),
    "schemas.max_custom": ("max_custom_schemas", "int", 0, 100_000),
    "schemas.max_per_visitor": ("max_schemas_per_visitor", "int", 0, 10_000),
}
_KEY_OF = {name: key for key, (name, *_rest) in _SPEC.items()}
_KEY_OF.update(vlm="vlm", judge="quality.judge")
#: Sections owned and validated by their consumers (the section name is the AgentConfig field).
_OWNED = ("vlm", "skills", "orchestrator", "failures")


def _check(key: str, kind: str, lo: float | None, hi: float | None, value: Any) -> Any:
    if kind == "mode":
        if value not in REVIEW_MODES:
            raise AgentConfigError(f"{key}: expected one of {', '.join(REVIEW_MODES)}, got {value!r}")
        return value
    if kind == "name":
        if not isinstance(value, str) or not value.strip():
            raise AgentConfigError(f"{key}: expected a non-empty path, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise AgentConfigError(f"{key}: expected true or false, got {value!r}")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AgentConfigError(f"{key}: expected a number {lo}..{hi}, got {value!r}")
    if kind == "int" and value != int(value):
        raise AgentConfigError(f"{key}: expected a whole number, got {value!r}")
    if not lo <= value <= hi:
        raise AgentConfigError(f"{key}: {value!r} is outside {lo}..{hi}")
    return int(value) if kind == "int" else float(value)  # "score" and "float"


def _check_vlm(body: Mapping[str, Any]) -> None:
    from agent.model.vlm import vlm_limits  # the VLM client owns its limits and their ranges

    vlm_limits({"vlm": dict(body)})


def _check_judge(body: Mapping[str, Any]) -> None:
    from agent.judging.embedded import DEFAULTS  # the judge owns its thresholds

    unknown = set(body) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"quality.judge: unknown key(s) {', '.join(sorted(unknown))}; "
                         f"expected some of {', '.join(DEFAULTS)}")


def _check_skills(body: Mapping[str, Any]) -> None:
    from agent.skills import skills_settings

    skills_settings(type("C", (), {"skills": dict(body)})())


def _check_orchestrator(body: Mapping[str, Any]) -> None:
    from agent.orchestrator.config import orchestrator_settings

    orchestrator_settings(dict(body))


def _check_failures(body: Mapping[str, Any]) -> None:
    from agent.loop.failures import failure_policy

    failure_policy(dict(body))


def _checked_section(key: str, body: Any, check) -> Mapping[str, Any]:
    if body is None:
        return MappingProxyType({})
    if not isinstance(body, Mapping):
        raise AgentConfigError(f"{key}: expected a mapping of settings, got {body!r}")
    try:
        check(body)
    except ValueError as exc:
        raise AgentConfigError(str(exc)) from None
    return MappingProxyType(dict(body))


def _validated(data: Mapping[str, Any]) -> AgentConfig:
    out = {}
    for key, (field, kind, lo, hi) in _SPEC.items():
        out[field] = _check(key, kind, lo, hi, data[field])
    out["vlm"] = _checked_section("vlm", data.get("vlm"), _check_vlm)
    out["judge"] = _checked_section("quality.judge", data.get("judge"), _check_judge)
    out["skills"] = _checked_section("skills", data.get("skills"), _check_skills)
    out["orchestrator"] = _checked_section("orchestrator", data.get("orchestrator"), _check_orchestrator)
    out["failures"] = _checked_section("failures", data.get("failures"), _check_failures)
    if out["min_pass_score"] > out["auto_approve_threshold"]:
        raise AgentConfigError(
            "quality.min_pass_score: must not be above quality.auto_approve_threshold "
            f"({out['min_pass_score']} > {out['auto_approve_threshold']})"
        )
    return AgentConfig(**out)


def config_from_mapping(raw: Any, where: str = "agent_config.yaml") -> AgentConfig:
    """Validate a parsed YAML document (sections of keys) into an AgentConfig.

    Missing keys take the defaults above; unknown sections or keys are errors so
    a typo never silently falls back to a default.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise AgentConfigError(f"{where}: expected sections of settings, got {type(raw).__name__}")
    data: dict[str, Any] = {f.name: getattr(AgentConfig(), f.name) for f in fields(AgentConfig)}
    sections = {key.split(".")[0] for key in _SPEC} | set(_OWNED)
    for section, body in raw.items():
        if section not in sections:
            raise AgentConfigError(f"{where}: unknown section {section!r}; expected {', '.join(sorted(sections))}")
        if not isinstance(body, Mapping):
            raise AgentConfigError(f"{where}: {section}: expected a mapping of settings")
        if section in _OWNED:
            data[section] = body
            continue
        for name, value in body.items():
            key = f"{section}.{name}"
            if key == "quality.judge":
                data["judge"] = value
                continue
            if key not in _SPEC:
                raise AgentConfigError(f"{where}: unknown key {key!r}")
            data[_SPEC[key][0]] = value
    try:
        return _validated(data)
    except AgentConfigError as exc:
        raise AgentConfigError(f"{where}: {exc}") from None


def load_config(path: str | os.PathLike | None = None) -> AgentConfig:
    """Load ``configs/agent_config.yaml`` (or ``path``) into a validated AgentConfig."""
    p = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AgentConfigError(f"{p}: cannot read the agent config ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise AgentConfigError(f"{p.name}: not valid YAML ({exc})") from None
    return config_from_mapping(raw, p.name)


def config_key(field: str) -> str:
    """The YAML key of a config field, for messages: 'min_pass_score' -> 'quality.min_pass_score'."""
    return _KEY_OF.get(field, field)


__all__ = ["AgentConfig", "AgentConfigError", "REVIEW_MODES", "config_from_mapping", "load_config"]
