"""Judges: embedded (image metrics) and VLM, one interface."""

from __future__ import annotations

from agent.judges.base import Assessment, Judge, JudgeRequest

__all__ = ["Assessment", "Judge", "JudgeRequest", "default_judge"]


def default_judge() -> Judge:
    """The judge a Studio uses when none is injected: embedded unless a VLM is configured."""
    from agent.judges.embedded import EmbeddedJudge

    return EmbeddedJudge()
