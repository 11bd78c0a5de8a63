"""Judges: embedded (image metrics) and VLM, one interface."""

from __future__ import annotations

from agent.judging.base import Assessment, Judge, JudgeRequest

__all__ = ["Assessment", "Judge", "JudgeRequest", "default_judge"]


def default_judge(env=None, config=None) -> Judge:
    """The judge a Studio uses when none is injected: embedded unless a VLM is configured.

    A VLM is configured when both ``ATELIER_VLM_BASE_URL`` and ``ATELIER_VLM_MODEL``
    are set (``env`` defaults to ``os.environ``); the VLM judge still falls back to
    the embedded one, turn by turn, when the model cannot give a valid assessment.
    """
    from agent.judging.embedded import EmbeddedJudge
    from agent.judging.vlm import VLMJudge

    embedded = EmbeddedJudge(config=config)
    judge = VLMJudge.from_env(env, config, fallback=embedded)
    return judge if judge is not None else embedded
