"""The agent's numbers, loaded once from ``configs/agent_config.yaml``.

Every section of the YAML file is a pydantic model below, with its defaults and ranges:
``planning``, ``quality`` (and ``quality.judge``), ``review``, ``context``, ``images``, ``paths``,
``replicas``, ``vlm``, ``skills``, ``failures`` and ``orchestrator``. :func:`load_config` reads the
file into a frozen :class:`AgentConfig`; a bad value raises :class:`AgentConfigError` naming the key
(``quality.min_pass_score: 1.5 is outside 0.0..1.0``). Nothing else in the agent hard-codes a
threshold or a limit.

This module is the bottom of the agent's layers: it imports nothing from ``agent``. The rooms
read their typed sections from it (``config.vlm``, ``config.failures``, ``config.quality.judge``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Mapping

import yaml
from annotated_types import Ge, Le
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG_PATH = REPO_ROOT / "configs" / "agent_config.yaml"

REVIEW_MODES = ("always", "below_auto_approve", "never")


class AgentConfigError(ValueError):
    """A missing, unknown or out-of-range config value: the message names the key."""


def _whole(value: Any) -> Any:
    # YAML and JSON write 6.0 for 6; a fraction stays a float and the strict int check refuses it
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _path_name(value: Any) -> Any:
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("path", f"expected a non-empty path, got {value!r}")
    return value


#: A whole number: 6 and 6.0 pass; 6.5, True and "6" are refused.
Whole = Annotated[int, BeforeValidator(_whole)]
#: A file or folder name: non-empty text.
PathName = Annotated[str, BeforeValidator(_path_name)]


class Section(BaseModel):
    """One section of agent_config.yaml: typed (no "6" for 6, no true for 1), ranged, frozen;
    an unknown key is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)
    #: How a value outside its range reads, after the key ("quality.min_pass_score: 1.5 is outside 0.0..1.0").
    OUT_OF_RANGE: ClassVar[str] = "{value!r} is outside {range}"


class OwnedSection(Section):
    """A section read by one room (the VLM client, the judge, skills, failures, the orchestrator)."""

    OUT_OF_RANGE: ClassVar[str] = "expected {what} {range}, got {value!r}"


# -- the turn ---------------------------------------------------------------------------------------

class PlanningSettings(Section):
    """``planning:`` how many steps a plan has and how often a turn goes back to the planner."""

    max_sub_goals: Whole = Field(6, ge=1, le=20)
    max_retries_per_sub_goal: Whole = Field(2, ge=0, le=10)
    max_error_retries: Whole = Field(2, ge=0, le=10)


class JudgeWeights(OwnedSection):
    """How the judge's dimensions combine into the score (renormalised over those that apply)."""

    compliance: float = Field(0.5, ge=0)
    preservation: float = Field(0.2, ge=0)
    technical: float = Field(0.3, ge=0)


class TechnicalWeights(OwnedSection):
    """Penalty weights of each technical problem at full severity."""

    highlights: float = Field(0.6, ge=0, le=1)
    shadows: float = Field(0.6, ge=0, le=1)
    oversaturation: float = Field(0.5, ge=0, le=1)
    banding: float = Field(0.5, ge=0, le=1)
    channels: float = Field(0.4, ge=0, le=1)


Share = Annotated[float, Field(ge=0, le=1)]


class JudgeSettings(OwnedSection):
    """``quality.judge:`` the embedded judge's thresholds (agent.judging.embedded).

    Shares are fractions of the image (0..1), ΔE in Lab units. Only the keys set here override the
    judge's defaults and the engine profile's ``quality_signatures.judge``.
    """

    weights: JudgeWeights = JudgeWeights()
    # A sub-goal's change must reach this share of the change expected for its value to count as
    # visible; below it the sub-goal is "too weak".
    visible_fraction: Share = 0.35
    # A move against the asked direction larger than this share of the expected change (and than the
    # metric's noise) is "wrong direction", not just weak.
    wrong_fraction: Share = 0.15
    # Newly blown highlights / crushed shadows: diagnosed above `tolerance`, full penalty at `bad`.
    # Doubled when a sub-goal asked for brighter whites or deeper blacks (the person asked for some of it).
    clip_tolerance: Share = 0.03
    clip_bad: Share = 0.25
    crush_tolerance: Share = 0.03
    crush_bad: Share = 0.25
    # New pure-colour (gamut-clipped) area.
    oversaturation_tolerance: Share = 0.06
    oversaturation_bad: Share = 0.35
    # Banding: the mean spacing of used tone levels grew by this factor and is at least
    # `banding_min_step` levels (a smooth photo uses every level: 1.0).
    banding_ratio: float = Field(1.8, ge=1)
    banding_min_step: float = Field(3.0, ge=0, le=255)
    technical_weights: TechnicalWeights = TechnicalWeights()
    # Preservation outside local masks: SSIM at or above `ssim_good` is perfect, at `ssim_floor` it
    # scores 0; ΔE up to `delta_e_good` is perfect, at `delta_e_bad` 0. Spill is diagnosed below
    # `spill_ssim` or above `spill_delta_e`.
    ssim_good: Share = 0.97
    ssim_floor: Share = 0.6
    delta_e_good: float = Field(1.0, ge=0, le=100)
    delta_e_bad: float = Field(8.0, ge=0, le=100)
    spill_ssim: Share = 0.9
    spill_delta_e: float = Field(2.5, ge=0, le=100)
    # A band op on a photo where the band covers less than this share has nothing to act on.
    min_band_share: Share = 0.003
    # Pixels with mask weight below this are "outside" (feathered edges are neither).
    outside_below: Share = 0.05
    # Per colour channel: a channel newly at 254-255 on this share of the image is "clipped" (a red
    # that loses its texture), full penalty at `channel_clip_bad`.
    channel_clip_tolerance: Share = 0.03
    channel_clip_bad: Share = 0.2
    # With a reading of the request: a compliance below `fail_below` caps the score at `fail_cap`
    # (under min_pass_score 0.6, so the agent replans or asks), one below `doubt_below` caps it at
    # `doubt_cap` (under auto_approve 0.85: the person decides).
    fail_below: Share = 0.5
    fail_cap: Share = 0.45
    doubt_below: Share = 0.8
    doubt_cap: Share = 0.8
    # Each doubt about the reading past the first (unread words, a part skipped, a spill, a fall-short)
    # lowers the ceiling by `doubt_step` below `doubt_cap`.
    doubt_step: Share = 0.05
    # A message with words no table knows ("too wobbly now") is read only in part: its result is capped at
    # `unread_cap` (under auto_approve 0.9), so the person sees it before it is kept.
    unread_cap: Share = 0.88
    # A local change on a place the judge has no independent check of (anything but faces, skin and a place
    # the person painted: the subject, the sky, a part of the frame, a colour) keeps this share of its score:
    # the judge confirms the change landed in the mask, not that the mask is the thing meant.
    unconfirmed_place_factor: Share = 0.92
    # Per-op expected change at value 100, in the metric's units (agent.judging.embedded EFFECTS);
    # calibrated on the renderer with astronaut, coffee, chelsea and rocket.
    gains: dict[str, float] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _known_thresholds(cls, data: Any) -> Any:
        if data is None:
            return {}  # an empty ``judge:`` line keeps every default
        if isinstance(data, Mapping) and (unknown := [k for k in data if k not in cls.model_fields]):
            raise PydanticCustomError("unknown", f"unknown key(s) {', '.join(map(str, sorted(unknown, key=str)))}; "
                                                 f"expected some of {', '.join(cls.model_fields)}")
        return data


class QualitySettings(Section):
    """``quality:`` the three review tiers: reject below ``min_pass_score``, ask the person up to
    ``auto_approve_threshold``, keep without asking from there (scores 0..1)."""

    min_pass_score: float = Field(0.6, ge=0.0, le=1.0)
    auto_approve_threshold: float = Field(0.9, ge=0.0, le=1.0)
    judge: JudgeSettings = JudgeSettings()

    @model_validator(mode="after")
    def _tiers_in_order(self) -> "QualitySettings":
        if self.min_pass_score > self.auto_approve_threshold:
            raise PydanticCustomError(
                "order", "must not be above quality.auto_approve_threshold ({low} > {high})",
                {"key": "min_pass_score", "low": self.min_pass_score, "high": self.auto_approve_threshold})
        return self


class ReviewSettings(Section):
    """``review:`` when a turn stops for the person (always | below_auto_approve | never)."""

    review_mode: Literal[REVIEW_MODES] = "below_auto_approve"


class ContextSettings(Section):
    """``context:`` the folded planner context: a token budget, recent turns kept in full."""

    budget_tokens: Whole = Field(2000, ge=200, le=1_000_000)
    keep_recent_turns: Whole = Field(3, ge=0, le=100)
    chars_per_token: Whole = Field(4, ge=1, le=16)


class ImageSettings(Section):
    """``images:`` sizes in pixels on the long side, caches in bytes, JPEG quality 1..100."""

    proxy_long_side: Whole = Field(1600, ge=64, le=8192)
    judge_long_side: Whole = Field(768, ge=64, le=4096)
    render_cache_bytes: Whole = Field(256 * 1024 * 1024, ge=0, le=1 << 40)
    max_upload_pixels: Whole = Field(50_000_000, ge=1, le=1_000_000_000)
    export_quality: Whole = Field(92, ge=1, le=100)
    source_cache_sessions: Whole = Field(8, ge=1, le=1000)
    source_cache_bytes: Whole = Field(512 * 1024 * 1024, ge=0, le=1 << 40)
    warm_on_upload: bool = True


class PathSettings(Section):
    """``paths:`` where sessions live (relative = relative to the repository root)."""

    sessions_dir: PathName = "sessions"
    database_file: PathName = "atelier.db"
    checkpoints_file: PathName = "checkpoints.db"


class ReplicaSettings(Section):
    """``replicas:`` several app processes on one database: lease times in seconds, memory in MiB."""

    lease_ttl_s: float = Field(30.0, ge=0.5, le=3600)
    lease_wait_s: float = Field(5.0, ge=0, le=600)
    memory_cap_mb: Whole = Field(2048, ge=64, le=1 << 20)


class SchemaSettings(Section):
    """``schemas:`` output schemas made in the studio from an example (agent.service.schema_quota)."""

    max_custom: Whole = Field(100, ge=0, le=100_000)
    max_per_visitor: Whole = Field(5, ge=0, le=10_000)


# -- sections read by one room ----------------------------------------------------------------------

class VLMLimits(OwnedSection):
    """``vlm:`` how long the agent waits for an OpenAI-compatible model (agent.model.vlm). Seconds."""

    timeout_s: float = Field(60.0, ge=0.1, le=600)
    max_retries: Whole = Field(2, ge=0, le=10)
    turn_deadline_s: float = Field(60.0, ge=0.5, le=3600)
    repair_attempts: Whole = Field(2, ge=0, le=10)
    temperature: float = Field(0.2, ge=0, le=2)
    max_tokens: Whole = Field(1500, ge=64, le=32768)
    circuit_cooldown_s: float = Field(120.0, ge=0, le=86400)


class SkillSettings(OwnedSection):
    """``skills:`` the skill registry's thresholds (agent.skills): a confidence and a share 0..1,
    Lab chroma units, a number of steps."""

    min_confidence: Share = 0.5
    max_steps: Whole = Field(16, ge=0)
    colour_chroma: float = Field(6.0, ge=0)
    sky_share: Share = 0.04


class FailureBudget(OwnedSection):
    """Retries of one failure kind before the turn ends, and the first backoff in seconds (doubling)."""

    retries: Whole = Field(0, ge=0, le=10)
    backoff_s: float = Field(0.0, ge=0, le=30)


class FailurePolicy(OwnedSection):
    """``failures:`` a budget per failure kind (agent.loop.failures) and the longest wait in seconds.

    A kind given in part keeps its own defaults for the rest. ``quality_below_bar`` is not here: a
    rejected candidate's replans are ``planning.max_retries_per_sub_goal``.
    """

    plan_invalid: FailureBudget = FailureBudget(retries=2)
    render_error: FailureBudget = FailureBudget(retries=1)
    model_timeout: FailureBudget = FailureBudget(retries=1, backoff_s=1.0)
    model_refused: FailureBudget = FailureBudget(retries=0)
    max_backoff_s: float = Field(30.0, ge=0, le=300)

    @classmethod
    def kinds(cls) -> tuple[str, ...]:
        """The failure kinds that have a budget, in order."""
        return tuple(n for n, f in cls.model_fields.items() if f.annotation is FailureBudget)

    def budget(self, kind: str) -> FailureBudget:
        """The budget of ``kind`` (one of :meth:`kinds`)."""
        return getattr(self, kind)

    @model_validator(mode="before")
    @classmethod
    def _over_kind_defaults(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        out = dict(data)
        for kind, body in data.items():
            if kind == "max_backoff_s":
                continue
            if kind not in cls.kinds():
                hint = (" (a rejected candidate's replans are planning.max_retries_per_sub_goal)"
                        if kind == "quality_below_bar" else "")
                raise PydanticCustomError("unknown", "unknown failure kind; expected one of {kinds}{hint}",
                                          {"key": kind, "kinds": ", ".join(cls.kinds()), "hint": hint})
            if isinstance(body, Mapping):
                out[kind] = {**cls.model_fields[kind].default.model_dump(), **body}
        return out


class OrchestratorSettings(OwnedSection):
    """``orchestrator:`` a chat model driving the MCP tools (agent.orchestrator): calls per turn,
    seconds per request, sampling."""

    max_tool_calls: Whole = Field(8, ge=1, le=100)
    max_invalid_retries: Whole = Field(2, ge=0, le=20)
    model_timeout_s: float = Field(60.0, ge=0.1, le=3600)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    max_tokens: Whole = Field(800, ge=16, le=32768)


# -- the whole file ---------------------------------------------------------------------------------

class AgentConfig(BaseModel):
    """Thresholds and limits of the agent: one typed section per section of agent_config.yaml.

    The sections' values also read flat, as the rest of the agent uses them: ``config.min_pass_score``
    is ``config.quality.min_pass_score``, ``config.judge`` is ``config.quality.judge``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    planning: PlanningSettings = PlanningSettings()
    quality: QualitySettings = QualitySettings()
    review: ReviewSettings = ReviewSettings()
    context: ContextSettings = ContextSettings()
    images: ImageSettings = ImageSettings()
    paths: PathSettings = PathSettings()
    replicas: ReplicaSettings = ReplicaSettings()
    schemas: SchemaSettings = SchemaSettings()
    vlm: VLMLimits = VLMLimits()
    skills: SkillSettings = SkillSettings()
    failures: FailurePolicy = FailurePolicy()
    orchestrator: OrchestratorSettings = OrchestratorSettings()

    @model_validator(mode="before")
    @classmethod
    def _known_sections(cls, data: Any) -> Any:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise PydanticCustomError("sections", f"expected sections of settings, got {type(data).__name__}")
        unknown = [k for k in data if k not in cls.model_fields]
        if unknown:
            raise PydanticCustomError("sections", f"unknown section {unknown[0]!r}; "
                                                  f"expected {', '.join(sorted(cls.model_fields))}")
        return data

    def __getattr__(self, name: str) -> Any:
        section = _SECTION_OF.get(name)
        if section is None:
            return super().__getattr__(name)
        return getattr(getattr(self, section), name)

    def with_overrides(self, **values: Any) -> "AgentConfig":
        """A copy with some values replaced, validated like the YAML.

        Keys are flat names (``review_mode="never"``) or whole sections (``vlm={...}``, ``judge={...}``),
        which replace the section.
        """
        unknown = [k for k in values if k not in type(self).model_fields and k not in _SECTION_OF]
        if unknown:
            raise AgentConfigError(f"unknown config key(s): {', '.join(sorted(unknown))}")
        doc = self.model_dump(exclude_unset=True)
        for name, value in values.items():
            if isinstance(value, BaseModel):
                value = value.model_dump(exclude_unset=True)
            if name in type(self).model_fields:
                doc[name] = value
            else:
                doc.setdefault(_SECTION_OF[name], {})[name] = value
        return _validated(doc)

    def sessions_path(self) -> Path:
        """``sessions_dir`` as an absolute path (relative = relative to the repository root)."""
        p = Path(self.paths.sessions_dir).expanduser()
        return p if p.is_absolute() else REPO_ROOT / p


#: Flat name -> the section that holds it (``min_pass_score`` -> ``quality``).
_SECTION_OF: dict[str, str] = {
    name: section for section in ("planning", "quality", "review", "context", "images", "paths", "replicas", "schemas")
    for name in AgentConfig.model_fields[section].annotation.model_fields
}


# -- errors a person reads --------------------------------------------------------------------------

def _model_at(loc: tuple) -> Any:
    """The section model at ``loc`` (a path into AgentConfig), or None inside a plain mapping."""
    model: Any = AgentConfig
    for part in loc:
        info = model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        if info is None:
            return None
        model = info.annotation
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _range(info: Any) -> str:
    """'1..20', '>= 0' or '' for a field's declared bounds."""
    lo = next((m.ge for m in getattr(info, "metadata", ()) if isinstance(m, Ge)), None)
    hi = next((m.le for m in getattr(info, "metadata", ()) if isinstance(m, Le)), None)
    return f"{lo}..{hi}" if lo is not None and hi is not None else f">= {lo}" if lo is not None else ""


def _problem(err: Mapping[str, Any]) -> str:
    """One line for one pydantic error: the dotted key, then what was expected and what came."""
    loc = tuple(err["loc"])
    kind, value, ctx = err["type"], err.get("input"), err.get("ctx") or {}
    owner = _model_at(loc[:-1])
    info = owner.model_fields.get(loc[-1]) if owner is not None and loc else None
    key = ".".join(map(str, loc + ((ctx["key"],) if "key" in ctx else ())))
    what = "a whole number" if getattr(info, "annotation", None) is int else "a number"
    span = _range(info)
    if kind == "extra_forbidden":
        return f"{key}: unknown key; expected one of {', '.join(owner.model_fields)}"
    if kind in ("model_type", "dict_type", "model_attributes_type"):
        return f"{key}: expected a mapping of settings, got {value!r}"
    if kind == "literal_error":
        return f"{key}: expected one of {', '.join(map(str, info.annotation.__args__))}, got {value!r}"
    if kind == "bool_type":
        return f"{key}: expected true or false, got {value!r}"
    if kind in ("int_type", "float_type", "finite_number", "int_from_float", "int_parsing", "float_parsing"):
        return f"{key}: expected {what} {span}".rstrip() + f", got {value!r}"
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        template = getattr(owner, "OUT_OF_RANGE", Section.OUT_OF_RANGE)
        return f"{key}: " + template.format(value=value, range=span, what=what)
    text = err["msg"]
    return f"{key}: {text}" if key else text


def _validated(doc: Any) -> AgentConfig:
    try:
        return AgentConfig.model_validate(doc)
    except ValidationError as exc:
        raise AgentConfigError("; ".join(_problem(e) for e in exc.errors(include_url=False))) from None


def config_from_mapping(raw: Any, where: str = "agent_config.yaml") -> AgentConfig:
    """Validate a parsed YAML document (sections of keys) into an AgentConfig.

    Missing keys take the defaults above; unknown sections or keys are errors so
    a typo never silently falls back to a default.
    """
    try:
        return _validated(raw)
    except AgentConfigError as exc:
        raise AgentConfigError(f"{where}: {exc}") from None


def load_section(name: str, raw: Any) -> Any:
    """``raw`` (a mapping, as under ``name:`` in the YAML) validated as that section, e.g. ``vlm``.

    Raises :class:`AgentConfigError` naming the key (``vlm.timeout_s: ...``).
    """
    if name not in AgentConfig.model_fields:
        raise AgentConfigError(f"unknown section {name!r}; expected {', '.join(sorted(AgentConfig.model_fields))}")
    return getattr(_validated({name: raw}), name)


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


__all__ = ["AgentConfig", "AgentConfigError", "FailureBudget", "FailurePolicy", "JudgeSettings",
           "OrchestratorSettings", "REVIEW_MODES", "SkillSettings", "VLMLimits", "config_from_mapping",
           "load_config", "load_section"]
