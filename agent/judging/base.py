"""The judge interface: every judge (embedded metrics, VLM) speaks it.

A judge scores one turn's result against the original, once per turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from agent.planning.base import SubGoal
from pipeline.state import EditState


@dataclass
class JudgeRequest:
    original: np.ndarray                  # original proxy, uint8 RGB
    current: np.ndarray                   # render of the new state, same size
    sub_goals: list[SubGoal]
    state: EditState                      # the new state
    previous_state: EditState             # the state before this turn
    previous: np.ndarray | None = None    # render of previous_state, same size
    masks: dict[str, np.ndarray] = field(default_factory=dict)  # json.dumps(spec, sort_keys=True) -> float mask at this size
    message: str = ""
    schema: str = "default"               # quality output schema name
    schema_root: str | None = None        # schemas folder (None = the shipped schemas/)
    # The messages of the changes that still stand before this turn (oldest first) and the
    # render before the last of them: the judge reads follow-ups ("bit more", "halve it") with them.
    history: list[str] = field(default_factory=list)
    before_last: np.ndarray | None = None
    # the state of that render: where the last change went is the layers it moved (None: not known)
    before_last_state: EditState | None = None
    # The person's feedback when they sent the last plan back ("/replan no, softer instead"):
    # this attempt answers it, so the judge reads it with the message (agent.judging.reading.read_attempt).
    feedback: str = ""
    # spec -> soft mask at this size, sharing the renderer's mask cache (None: the judge builds its own)
    locate: Callable[[dict], np.ndarray] | None = None
    held: bool = False                    # the executor held a step short of the plan (sweet spot, range)
    # parts of the message the plan said it left out ("I skipped ..."): the result is not all that was asked
    skipped: list[str] = field(default_factory=list)
    # the plan put the change on its own guess for a place it could not find ("the archways": the subject)
    guessed: bool = False


@dataclass
class Assessment:
    """score 0..1; ``assessment`` is a short text a person understands (plain words, no
    measurements); ``details`` holds the numbers behind it."""

    score: float
    assessment: str
    dimensions: dict[str, float] = field(default_factory=dict)   # e.g. compliance, preservation, technical
    fields: dict[str, Any] = field(default_factory=dict)         # custom schema fields (None = not assessed)
    diagnoses: list[str] = field(default_factory=list)           # e.g. "highlights_clipped", "oversaturated"
    warnings: list[str] = field(default_factory=list)
    source: str = "embedded"
    details: str = ""             # the measurements behind the plain-words assessment (for a details fold)
    reading: dict[str, Any] = field(default_factory=dict)   # the judge's reading of the request

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": round(float(self.score), 4),
            "assessment": self.assessment,
            "details": self.details,
            "reading": dict(self.reading),
            "dimensions": {k: round(float(v), 4) for k, v in self.dimensions.items()},
            "fields": dict(self.fields),
            "diagnoses": list(self.diagnoses),
            "warnings": list(self.warnings),
            "source": self.source,
        }


@runtime_checkable
class Judge(Protocol):
    name: str

    def assess(self, request: JudgeRequest) -> Assessment: ...
