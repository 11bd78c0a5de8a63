"""What the session API answers: small records that cross into the UI, the CLI, MCP and JSON.

Plain dataclasses with ``to_dict()``; nothing here touches the store or the graph.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

#: A progress callback: receives small dicts while a turn runs (see agent/loop/progress.py).
ProgressFn = Callable[[dict], None]
#: TurnResult.kind: an edit (a new version or a review), a chat command (undo, export ...), an answer
#: to a question, small talk, or a clarifying question (no version; quick_replies filled).
TURN_KINDS = ("edit", "command", "question", "chat", "clarify", "generate")


def iso(dt) -> str:
    """A database timestamp as ISO text ("" for none)."""
    return dt.isoformat() if dt is not None else ""


@dataclass
class SessionInfo:
    id: str
    resume_token: str
    created_at: str
    updated_at: str
    title: str
    style: str | None
    review_mode: str
    turns: int
    head_asset_id: str | None
    width: int
    height: int
    notices: list[str] = field(default_factory=list)
    planner_schema: str = "default"
    quality_schema: str = "default"
    executor_schema: str = "default"
    shareable: bool = False          # the person agreed to share this session as training data

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AssetInfo:
    id: str
    parent_id: str | None
    turn: int
    summary: str
    score: float | None
    state: dict
    created_at: str
    is_head: bool
    on_head_path: bool
    status: str
    #: The version's number as the studio, the chat and exports name it: "0" (the original), "3", "3b"
    #: (a variant of version 3); see agent/service/labels.py.
    version: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReviewPayload:
    asset_id: str
    turn: int
    score: float | None
    assessment: str
    dimensions: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)
    sub_goals: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    reply: str = ""
    #: dust spots found, to be confirmed: {x, y (centre, fractions of the original), radius, confidence}
    marks: list = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_interrupt(cls, value: dict) -> "ReviewPayload":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in dict(value).items() if k in known})


@dataclass
class TurnResult:
    session_id: str
    turn: int
    status: str
    reply: str
    sub_goals: list = field(default_factory=list)
    score: float | None = None
    assessment: str = ""
    dimensions: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)
    asset_id: str | None = None
    head_asset_id: str | None = None
    rendered_path: str | None = None
    warnings: list = field(default_factory=list)
    review: ReviewPayload | None = None
    #: Short answers the person can pick (buttons in the studio, numbers in the CLI).
    quick_replies: list[str] = field(default_factory=list)
    #: What kind of turn this was: one of TURN_KINDS.
    kind: str = "edit"
    #: The file a chat export wrote ("export as png"), else None.
    export_path: str | None = None
    #: The turn's details: skills trace, review tier(s), failures by kind, the executor's record, and
    #: ``details["measurements"]``: the numbers behind ``reply`` (op values, L*, b*, SSIM, the score) for a
    #: details fold; ``reply`` itself says what changed in plain words.
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["review"] = self.review.to_dict() if self.review else None
        return d


def notify_done(progress: ProgressFn | None, reply: str) -> None:
    """Tell a progress listener that a turn without a graph (undo, redo) is done."""
    if progress is None:
        return
    try:
        progress({"stage": "finish", "status": "done", "message": reply, "sub_goals": [], "fraction": 1.0})
    except Exception:  # noqa: BLE001 - a broken listener never costs the turn
        pass
