"""The planner interface: every planner (embedded, VLM, scripted in tests) speaks it.

A planner turns one request from the person into 1..max_sub_goals SubGoals on
the op registry's scale. It never renders and never touches the store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Mapping, Protocol, runtime_checkable

import numpy as np
from pydantic import ConfigDict, TypeAdapter, ValidationError, ValidationInfo, model_validator
from pydantic.dataclasses import dataclass as checked_dataclass
from pydantic_core import PydanticCustomError

from pipeline import ops
from pipeline.masks import MaskSpecError, describe_mask, normalize_mask_spec
from pipeline.state import EditState


class PlanError(ValueError):
    """A plan that does not validate: the message names the bad field."""


@checked_dataclass(config=ConfigDict(extra="forbid"))
class SubGoal:
    """One step of a turn: move (mode="add") or set (mode="set") one op.

    ``value`` is on the op's -100..100 scale. ``target`` is a mask spec for a
    local layer (None = the whole image). ``stage`` is derived from the op.
    Built in code, the field types are checked; :meth:`from_dict` also checks
    the op, its range and the mask spec (data from a model or a file).
    """

    op: str
    value: Any
    mode: Literal["add", "set"] = "add"
    target: dict | None = None
    description: str = ""
    id: str = ""

    @property
    def stage(self) -> str:
        return ops.get_op(self.op).stage

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["stage"] = self.stage
        return d

    @model_validator(mode="after")
    def _on_the_op_scale(self, info: ValidationInfo) -> "SubGoal":
        where = (info.context or {}).get("where")
        if where is None:
            return self  # built in code from parts already checked; outside data comes through from_dict
        try:
            op = ops.get_op(self.op)
            self.value = op.check(self.value) if self.mode == "set" else op.check_change(self.value)
        except ops.OpError as exc:
            raise PydanticCustomError("plan", f"{where}: {exc}") from None
        try:
            self.target = None if self.target is None else normalize_mask_spec(self.target, f"{where}.target")
        except MaskSpecError as exc:
            raise PydanticCustomError("plan", str(exc)) from None
        self.op, self.description = op.name, self.description[:200]
        return self

    @classmethod
    def from_dict(cls, data: Any, where: str = "sub_goal") -> "SubGoal":
        """Validate plain data (from a model or a YAML file) into a SubGoal."""
        if isinstance(data, Mapping):  # the derived stage of to_dict() reads back; absent text is empty
            data = {k: v for k, v in data.items() if k != "stage"}
            data.update(description=data.get("description") or "", id=str(data.get("id") or ""))
        try:
            return _SUB_GOAL.validate_python(data, context={"where": where})
        except ValidationError as exc:
            raise PlanError(_plan_problems(exc, where)) from None

    def summary(self) -> str:
        """'temperature +20 on the sky' — a line a person reads."""
        where = f" on {describe_mask(self.target)}" if self.target else ""
        amount = f"{self.value:+}" if self.mode == "add" else f"= {self.value}"
        return f"{self.op} {amount}{where}"


_SUB_GOAL = TypeAdapter(SubGoal)


def _plan_problems(exc: ValidationError, where: str) -> str:
    """The lines a person reads for a sub-goal that does not validate, each naming the field."""
    lines, unknown = [], []
    for err in exc.errors(include_url=False):
        kind, loc, value = err["type"], ".".join(map(str, err["loc"])), err["input"]
        if kind == "unexpected_keyword_argument":
            unknown.append(loc)
        elif kind == "dataclass_type":
            lines.append(f"{where}: expected an object, got {type(value).__name__}")
        elif kind == "plan":
            lines.append(err["msg"])
        elif kind == "literal_error":
            lines.append(f"{where}.{loc}: expected {err['ctx']['expected']}, got {value!r}")
        elif kind == "string_type":
            lines.append(f"{where}.{loc}: expected text")
        elif kind == "missing":
            lines.append(f"{where}.{loc}: required")
        else:
            lines.append(f"{where}.{loc}: {err['msg']}")
    if unknown:
        lines.insert(0, f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    return "; ".join(lines)


#: How a planner is given the turn's replans, each in order, after "The person asked for a different plan: "
#: ("too orange | and a bit brighter": the later one is said of the plan the earlier made).
REPLANS_JOINED = " | "


@dataclass
class PlanRequest:
    """Everything a planner may look at for one turn."""

    message: str
    state: EditState
    context: str = ""                      # folded multi-turn context (bounded)
    image_stats: dict = field(default_factory=dict)   # pipeline.measure.image_stats of the current render
    image: np.ndarray | None = None        # current proxy render, uint8 RGB (VLM planners send it)
    original: np.ndarray | None = None     # original proxy, uint8 RGB
    feedback: str | None = None            # judge assessment or the person's replan feedback
    diagnoses: list[str] = field(default_factory=list)  # judge diagnoses, e.g. "highlights_clipped"
    earlier_diagnoses: list[str] = field(default_factory=list)  # those this turn's earlier replans answered
    feedback_from: str = ""                # who gave ``feedback``: "judge", "person" or "error"
    style: str | None = None               # session style (a named look from the engine profile)
    turn: int = 1
    max_sub_goals: int = 6
    schema: str = "default"                # planner output schema name
    schema_root: str | None = None         # schemas folder (None = the shipped schemas/)
    dialogue: Any = None                   # agent.conversation.dialogue.DialogueState: the moves of earlier turns


@checked_dataclass
class Plan:
    """A planner's answer. ``understood=False`` means: nothing to do, say ``reply``."""

    sub_goals: list[SubGoal]
    reply: str
    understood: bool = True
    notes: list[str] = field(default_factory=list)
    source: str = "embedded"
    fields: dict = field(default_factory=dict)   # custom planner-schema fields
    #: "edit", or "clarify": a short question instead of a guess (no version; ``quick_replies`` filled).
    kind: Literal["edit", "clarify"] = "edit"
    quick_replies: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)     # the looks / qualities named ("warmer", "dreamy")
    intents: list[str] = field(default_factory=list)    # the profile intents behind them
    dialogue: dict = field(default_factory=dict)        # a follow-up: {"move": ..., "base_asset": ...}
    skipped: list[str] = field(default_factory=list)    # parts of the message the plan does not carry out

    def to_dict(self) -> dict[str, Any]:
        return {
            "sub_goals": [g.to_dict() for g in self.sub_goals],
            "reply": self.reply,
            "understood": self.understood,
            "notes": list(self.notes),
            "source": self.source,
            "fields": dict(self.fields),
            "kind": self.kind,
            "quick_replies": list(self.quick_replies),
            "labels": list(self.labels),
            "intents": list(self.intents),
            "dialogue": dict(self.dialogue),
            "skipped": list(self.skipped),
        }


@runtime_checkable
class Planner(Protocol):
    name: str

    def plan(self, request: PlanRequest) -> Plan: ...
