"""Planners: embedded (rule-based, profile-driven) and VLM, one interface."""

from __future__ import annotations

from agent.planning.base import Plan, Planner, PlanError, PlanRequest, SubGoal

__all__ = ["Plan", "Planner", "PlanError", "PlanRequest", "SubGoal", "default_planner"]


def default_planner(env=None, config=None) -> Planner:
    """The planner a Studio uses when none is injected: embedded unless a VLM is configured.

    A VLM is configured when both ``ATELIER_VLM_BASE_URL`` and ``ATELIER_VLM_MODEL``
    are set (``env`` defaults to ``os.environ``); the VLM planner still falls back
    to the embedded one, turn by turn, when the model cannot give a valid plan.
    """
    from agent.planning.embedded import EmbeddedPlanner
    from agent.planning.vlm import VLMPlanner

    planner = VLMPlanner.from_env(env, config)
    return planner if planner is not None else EmbeddedPlanner()
