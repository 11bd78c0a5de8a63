"""Planners: embedded (rule-based, profile-driven) and VLM, one interface."""

from __future__ import annotations

from agent.planners.base import Plan, Planner, PlanError, PlanRequest, SubGoal

__all__ = ["Plan", "Planner", "PlanError", "PlanRequest", "SubGoal", "default_planner"]


def default_planner() -> Planner:
    """The planner a Studio uses when none is injected: embedded unless a VLM is configured."""
    from agent.planners.embedded import EmbeddedPlanner

    return EmbeddedPlanner()
