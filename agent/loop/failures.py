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

KINDS = ("plan_invalid", "render_error", "model_timeout", "model_refused", "quality_below_bar")
#: What a person reads for each kind.
LABELS = {"plan_invalid": "the plan was not valid", "render_error": "rendering failed",
          "model_timeout": "the model did not answer in time", "model_refused": "the model refused",
          "quality_below_bar": "the result was below the quality bar"}
DEFAULTS: dict[str, dict[str, float]] = {
    "plan_invalid": {"retries": 2, "backoff_s": 0.0},
    "render_error": {"retries": 1, "backoff_s": 0.0},
    "model_timeout": {"retries": 1, "backoff_s": 1.0},
    "model_refused": {"retries": 0, "backoff_s": 0.0},
}  # quality_below_bar: its replans are planning.max_retries_per_sub_goal (the reject tier)
MAX_BACKOFF_S = 30.0


def failure_policy(config: Any = None) -> dict[str, dict[str, float]]:
    """Per kind {retries, backoff_s} from ``failures:`` of the agent config over :data:`DEFAULTS`.

    Raises ValueError naming the key for an unknown kind or a bad value.
    """
    raw = dict(getattr(config, "failures", None) or {}) if config is not None and not isinstance(config, Mapping) \
        else dict(config or {})
    out = {k: dict(v) for k, v in DEFAULTS.items()}
    for kind, body in raw.items():
        if kind == "max_backoff_s":
            continue
        if kind not in out:
            hint = (" (a rejected candidate's replans are planning.max_retries_per_sub_goal)"
                    if kind == "quality_below_bar" else "")
            raise ValueError(f"failures.{kind}: unknown failure kind; expected one of {', '.join(DEFAULTS)}{hint}")
        if not isinstance(body, Mapping):
            raise ValueError(f"failures.{kind}: expected {{retries, backoff_s}}, got {body!r}")
        for key, value in body.items():
            if key not in ("retries", "backoff_s"):
                raise ValueError(f"failures.{kind}.{key}: unknown key; expected retries, backoff_s")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 \
                    or (key == "retries" and (value != int(value) or value > 10)) \
                    or (key == "backoff_s" and value > MAX_BACKOFF_S):
                limit = "a whole number 0..10" if key == "retries" else f"seconds 0..{MAX_BACKOFF_S:g}"
                raise ValueError(f"failures.{kind}.{key}: expected {limit}, got {value!r}")
            out[kind][key] = int(value) if key == "retries" else float(value)
    cap = raw.get("max_backoff_s", MAX_BACKOFF_S)
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not 0 <= cap <= 300:
        raise ValueError(f"failures.max_backoff_s: expected seconds 0..300, got {cap!r}")
    out["max_backoff_s"] = {"value": float(cap)}
    return out


def backoff_seconds(policy: Mapping[str, Mapping[str, float]], kind: str, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...) of ``kind``: doubling, capped."""
    base = float(policy[kind]["backoff_s"])
    cap = float(policy.get("max_backoff_s", {}).get("value", MAX_BACKOFF_S))
    return min(cap, base * (2 ** max(0, attempt - 1))) if base > 0 else 0.0


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


__all__ = ["DEFAULTS", "KINDS", "LABELS", "backoff_seconds", "classify", "failure_policy"]
