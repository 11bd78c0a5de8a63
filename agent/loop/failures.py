"""Typed failure kinds of a turn, each with its own retry budget and backoff (``failures:`` in the config).

A node that fails (see ``agent.loop.nodes.guarded``) names what went wrong as one of :data:`KINDS`; the
error handler retries that kind at most ``retries`` times, waiting ``backoff_s * 2**(attempt-1)``
seconds (at most ``max_backoff_s``) before going back to the planner, and then ends the turn with a
clear message. A judged candidate below the bar is the fifth kind (``quality_below_bar``): its
replans are the quality tiers' business (``quality.min_pass_score``), recorded the same way.

>>> classify(TimeoutError("read timed out"), "planner")
'model_timeout'
"""

from __future__ import annotations

from typing import Any, Mapping

from agent.config import AgentConfig, FailurePolicy, load_section

KINDS = (*FailurePolicy.kinds(), "quality_below_bar")
#: What a person reads for each kind.
LABELS = {"plan_invalid": "the plan was not valid", "render_error": "rendering failed",
          "model_timeout": "the model did not answer in time", "model_refused": "the model refused",
          "quality_below_bar": "the result was below the quality bar"}


def failure_policy(config: Any = None) -> FailurePolicy:
    """The ``failures:`` section of an AgentConfig, or a mapping of it checked the same way; defaults without either.

    Raises ValueError (AgentConfigError) naming the key for an unknown kind or a bad value.
    """
    if isinstance(config, AgentConfig):
        return config.failures
    if isinstance(config, Mapping):
        return load_section("failures", config)
    return FailurePolicy()


def backoff_seconds(policy: FailurePolicy, kind: str, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...) of ``kind``: doubling, capped."""
    base = policy.budget(kind).backoff_s
    return min(policy.max_backoff_s, base * (2 ** max(0, attempt - 1))) if base > 0 else 0.0


def classify(exc: BaseException, node: str) -> str:
    """The failure kind of an exception raised in ``node`` ("planner", "executor", "quality")."""
    from agent.planning.base import PlanError

    text = str(exc).lower()
    name = type(exc).__name__.lower()
    if isinstance(exc, TimeoutError) or "timeout" in name or "timed out" in text or "deadline" in text:
        return "model_timeout"
    if "refus" in text:
        return "model_refused"
    if isinstance(exc, PlanError):
        return "plan_invalid"
    if node == "executor":
        return "render_error"
    if node == "planner":
        return "plan_invalid"
    return "render_error"


__all__ = ["KINDS", "LABELS", "backoff_seconds", "classify", "failure_policy"]
