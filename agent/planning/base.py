"""The planner interface: every planner (embedded, VLM, scripted in tests) speaks it.

A planner turns one request from the person into 1..max_sub_goals SubGoals on
the op registry's scale. It never renders and never touches the store.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from pipeline import ops
from pipeline.masks import MaskSpecError, describe_mask, normalize_mask_spec
from pipeline.state import EditState


class PlanError(ValueError):
    """A plan that does not validate: the message names the bad field."""


@dataclass
class SubGoal:
    """One step of a turn: move (mode="add") or set (mode="set") one op.

    ``value`` is on the op's -100..100 scale. ``target`` is a mask spec for a
    local layer (None = the whole image). ``stage`` is derived from the op.
    """

    op: str
    value: int
    mode: str = "add"
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

    @classmethod
    def from_dict(cls, data: Any, where: str = "sub_goal") -> "SubGoal":
        """Validate plain data (from a model or a YAML file) into a SubGoal."""
        if not isinstance(data, dict):
            raise PlanError(f"{where}: expected an object, got {type(data).__name__}")
        unknown = set(data) - {"op", "value", "mode", "target", "description", "id", "stage"}
        if unknown:
            raise PlanError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        mode = data.get("mode", "add")
        if mode not in ("add", "set"):
            raise PlanError(f"{where}.mode: expected 'add' or 'set', got {mode!r}")
        try:
            op = ops.get_op(data.get("op"))
            value = op.check(data.get("value")) if mode == "set" else op.check_change(data.get("value"))
        except ops.OpError as exc:
            raise PlanError(f"{where}: {exc}") from None
        target = data.get("target")
        if target is not None:
            try:
                target = normalize_mask_spec(target, f"{where}.target")
            except MaskSpecError as exc:
                raise PlanError(str(exc)) from None
        desc = data.get("description") or ""
        if not isinstance(desc, str):
            raise PlanError(f"{where}.description: expected text")
        return cls(op=op.name, value=value, mode=mode, target=target,
                   description=desc[:200], id=str(data.get("id") or ""))

    def summary(self) -> str:
        """'temperature +20 on the sky' — a line a person reads."""
        where = f" on {describe_mask(self.target)}" if self.target else ""
        amount = f"{self.value:+}" if self.mode == "add" else f"= {self.value}"
        return f"{self.op} {amount}{where}"


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
    feedback_from: str = ""                # who gave ``feedback``: "judge", "person" or "error"
    style: str | None = None               # session style (a named look from the engine profile)
    turn: int = 1
    max_sub_goals: int = 6
    schema: str = "default"                # planner output schema name
    schema_root: str | None = None         # schemas folder (None = the shipped schemas/)
    dialogue: Any = None                   # agent.conversation.dialogue.DialogueState: the moves of earlier turns


@dataclass
class Plan:
    """A planner's answer. ``understood=False`` means: nothing to do, say ``reply``."""

    sub_goals: list[SubGoal]
    reply: str
    understood: bool = True
    notes: list[str] = field(default_factory=list)
    source: str = "embedded"
    fields: dict = field(default_factory=dict)   # custom planner-schema fields
    #: "edit", or "clarify": a short question instead of a guess (no version; ``quick_replies`` filled).
    kind: str = "edit"
    quick_replies: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)     # the looks / qualities named ("warmer", "dreamy")
    intents: list[str] = field(default_factory=list)    # the profile intents behind them
    dialogue: dict = field(default_factory=dict)        # a follow-up: {"move": ..., "base_asset": ...}

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
        }


@runtime_checkable
class Planner(Protocol):
    name: str

    def plan(self, request: PlanRequest) -> Plan: ...
