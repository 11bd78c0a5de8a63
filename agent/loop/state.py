"""AgentState and its small records: what one turn of the graph carries.

The graph's state holds ids and small JSON-able records only — never pixels
or base64 — so every checkpoint stays a few kilobytes. Versions of the photo
live in the store as assets (EditState JSON rows); renders are a cache.

Records:

- :class:`~agent.planning.base.SubGoal` (one planned step; defined with the
  planner interface and used here as ``SubGoal.to_dict()`` rows).
- :class:`ToolContext`: what the executor did for one step (op, value before
  and after, whether the value was clamped to the op's range). Per turn; cleared
  when the turn is folded.
- :class:`ActionRecord`: one line per finished turn (message, what was done,
  score, outcome). Persistent; the context folder keeps the last few in full
  and folds older ones to ``T{n}:{outcome}``.
"""

from __future__ import annotations

import operator
from dataclasses import asdict, dataclass
from typing import Annotated, Any, TypedDict

from agent.planning.base import SubGoal
from pipeline.masks import describe_mask

#: Turn outcomes (also the ``status`` of a finished TurnResult).
OUTCOMES = ("approved", "auto_approved", "rolled_back", "not_understood", "failed")


@dataclass
class ToolContext:
    """One executor step: ``op`` moved from ``before`` to ``after`` (op scale -100..100).

    ``requested`` is the value the plan asked for before clamping; ``clamped``
    is True when the op's range cut it. ``status`` is "applied", "clamped" or
    "no_change" (the op was already at the requested value or limit).
    """

    step: int
    op: str
    mode: str
    value: int
    before: int
    after: int
    requested: int
    clamped: bool
    status: str
    target: dict | None = None
    limit: str | None = None          # what held the value: "op range", "range" (model profile), "sweet spot"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ToolContext":
        return cls(**data)

    def line(self) -> str:
        """'temperature 0 -> 20 on the sky (clamped)' — a line for the planner and the log."""
        where = f" on {describe_mask(self.target)}" if self.target else ""
        note = " (clamped)" if self.clamped else " (no change)" if self.status == "no_change" else ""
        return f"{self.op} {self.before} -> {self.after}{where}{note}"


@dataclass
class ActionRecord:
    """One finished turn, as one line: what was asked, what was done, how it went."""

    turn: int
    message: str
    outcome: str
    summary: str = ""
    score: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ActionRecord":
        return cls(**{k: data.get(k) for k in ("turn", "message", "outcome", "summary", "score")})

    def line(self, max_message_chars: int = 120) -> str:
        """'T4 "more contrast" -> contrast +20; score 0.82; approved'."""
        msg = self.message if len(self.message) <= max_message_chars else self.message[: max_message_chars - 1] + "…"
        parts = [f'T{self.turn} "{msg}"']
        if self.summary:
            parts.append(f"-> {self.summary}")
        text = " ".join(parts)
        if self.score is not None:
            text += f"; score {self.score:.2f}"
        return f"{text}; {self.outcome}"

    def folded(self) -> str:
        """The short form older turns fold to: 'T4:approved'."""
        return f"T{self.turn}:{self.outcome}"


def add_new(old: list | None, new: list | None) -> list:
    """A list channel that appends what is not there yet (warnings are said once).

    A node that must take some back returns ``langgraph.types.Overwrite(list)`` instead."""
    out = list(old or [])
    out += [x for x in new or () if x not in out]
    return out


#: Lists inside ``details`` that grow through the turn (a judge's tier per candidate, each failure).
DETAILS_LOGS = ("tiers", "failures")


def merge_details(old: dict | None, new: dict | None) -> dict:
    """The turn's details: a node returns only the keys it sets; the logs of :data:`DETAILS_LOGS` grow."""
    out = dict(old or {})
    for key, value in (new or {}).items():
        out[key] = list(out.get(key) or []) + list(value or []) if key in DETAILS_LOGS else value
    return out


class AgentState(TypedDict, total=False):
    """The graph state of one turn (one LangGraph thread per turn of a session).

    Ids and small records only. ``base_asset_id`` is the head when the turn
    began; ``asset_id`` the version this turn proposes (None until the
    executor ran); the head itself moves only in ``context_fold``.
    """

    session_id: str
    turn: int
    message: str
    style: str | None
    review_mode: str
    base_asset_id: str
    head_asset_id: str
    asset_id: str | None
    plan: dict | None                # Plan.to_dict() of the latest plan
    sub_goals: list[dict]            # SubGoal.to_dict() rows, each with a per-step "status"
    tool_contexts: list[dict]        # ToolContext.to_dict() per executor step (this turn only)
    action: dict | None              # ActionRecord.to_dict() once the turn is folded
    assessment: dict | None          # Assessment.to_dict() of the latest candidate
    retries: int                     # automatic replans after a low score, this turn
    error_retries: int               # error_handler round trips, this turn
    errors: Annotated[list[str], operator.add]   # every error this turn, oldest first
    error: str | None                # the error the error_handler has to deal with now
    feedback: str | None             # what the planner should take into account when replanning
    replan_feedback: str | None      # the person's own words when they sent a plan back: the judge reads them
    diagnoses: list[str]
    diagnoses_seen: list[str]        # every diagnosis this turn's automatic replans answered, in order
    modify_values: dict | None       # {op: absolute value} from the person, applied without the planner
    modify_layers: list | None       # [{"mask": spec, "values": {op: absolute value}}]: the person's local values
    person_modified: bool            # the candidate carries the person's own values: never auto-replan
    person_replanned: bool           # the candidate answers the person's own replan: never auto-replanned away
    replans: list[str]               # the person's replan feedback this turn, in order
    review: dict | None              # the person's latest decision: {"action": ..., ...}
    rollback_asset_id: str | None
    status: str                      # "running", then one of OUTCOMES
    reply: str
    warnings: Annotated[list[str], add_new]
    failure: dict | None             # the latest failure: {"kind": agent.loop.failures.KINDS, "node", "message"}
    details: Annotated[dict, merge_details]   # the turn's details: skills trace, review tier(s), failures by kind
    repeat_plan: bool                # an automatic replan came back with the same plan: stop replanning
    best_attempt: dict | None        # the best-scored automatic attempt this turn (see TurnNodes.assess)


def fresh_turn_state(*, session_id: str, turn: int, message: str, style: str | None,
                     review_mode: str, head_asset_id: str,
                     modify_values: dict | None = None, modify_layers: list | None = None) -> AgentState:
    """Input of a new turn: every per-turn field set, so nothing leaks from a previous run."""
    return AgentState(
        session_id=session_id, turn=turn, message=message, style=style,
        review_mode=review_mode, base_asset_id=head_asset_id, head_asset_id=head_asset_id,
        asset_id=None, plan=None, sub_goals=[], tool_contexts=[], action=None,
        assessment=None, retries=0, error_retries=0, errors=[], error=None,
        feedback=None, replan_feedback=None, diagnoses=[], diagnoses_seen=[], modify_values=modify_values, modify_layers=modify_layers,
        person_modified=False, person_replanned=False, replans=[], review=None, rollback_asset_id=None,
        status="running", reply="", warnings=[], failure=None, details={}, repeat_plan=False,
        best_attempt=None,
    )


__all__ = ["AgentState", "ActionRecord", "OUTCOMES", "SubGoal", "ToolContext", "fresh_turn_state"]
