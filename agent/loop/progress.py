"""Progress events of a running turn, read from LangGraph's ``tasks`` stream.

``Studio.send_message(..., progress=fn)`` and ``Studio.review(..., progress=fn)``
run the graph with ``graph.stream(..., stream_mode="tasks")``: LangGraph emits
one part when a node starts (``{"id", "name", "input", "triggers"}``) and one
when it finishes (``{"id", "name", "result", "error", "interrupts"}``).
:func:`progress_event` turns each part into a small event for a person:

```
{"stage": "planner" | "executor" | "quality" | "review" | "error" | "finish",
 "status": "running" | "done" | "waiting",
 "message": "Applying 2 adjustments: temperature +25, exposure +20",
 "sub_goals": [...],          # the turn's sub-goals as known at that moment (with a per-step status;
                              # absent when this part does not carry them: the caller keeps the last known)
 "fraction": 0.45,            # rough share of the turn done, for a progress bar
 "score": 0.81}               # quality "done" only
```

Pure functions of the stream parts: nothing here touches the store or the graph.
"""

from __future__ import annotations

from typing import Any, Mapping

from agent.planning.base import SubGoal

#: Graph node -> the stage name a person sees.
STAGES = {"planner": "planner", "executor": "executor", "quality": "quality", "human_review": "review",
          "error_handler": "error", "context_fold": "finish"}

#: (node, started?) -> share of the turn done when that happens (a replan goes back down: honest).
_FRACTION = {("planner", True): 0.05, ("planner", False): 0.3, ("executor", True): 0.35,
             ("executor", False): 0.6, ("quality", True): 0.65, ("quality", False): 0.9,
             ("human_review", True): 0.92, ("human_review", False): 0.95, ("error_handler", True): 0.2,
             ("error_handler", False): 0.25, ("context_fold", True): 0.95, ("context_fold", False): 1.0}


def goal_summary(row: Mapping[str, Any]) -> str:
    """A sub-goal row as 'temperature +25' (or its op name when the row is not a valid sub-goal)."""
    try:
        return SubGoal.from_dict({k: v for k, v in row.items() if k != "status"}).summary()
    except Exception:  # noqa: BLE001 - a progress line never breaks a turn
        return str(row.get("op") or "a step")


def _steps(rows: list[Mapping[str, Any]], limit: int = 4) -> str:
    words = [goal_summary(r) for r in rows[:limit]]
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return ", ".join(words) + more


def _plural(n: int) -> str:
    return f"{n} adjustment" + ("" if n == 1 else "s")


def _rows(value: Any) -> list[dict]:
    return [dict(r) for r in value or [] if isinstance(r, Mapping)]


def progress_event(part: Any) -> dict | None:
    """One part of ``graph.stream(..., stream_mode="tasks")`` -> a progress event, or None to skip."""
    if not isinstance(part, Mapping) or part.get("name") not in STAGES:
        return None
    node = str(part["name"])
    started = "input" in part
    event: dict[str, Any] = {"stage": STAGES[node], "status": "running" if started else "done",
                             "fraction": _FRACTION[(node, started)]}
    if started:
        state = part.get("input") if isinstance(part.get("input"), Mapping) else {}
        rows = _rows(state.get("sub_goals"))
        event["sub_goals"] = rows
        review = state.get("review") if isinstance(state.get("review"), Mapping) else {}
        if node == "planner":
            again = review.get("action") == "replan" or state.get("assessment") or state.get("feedback")
            event["message"] = "Replanning…" if again else "Planning…"
            event["sub_goals"] = []
        elif node == "executor":
            values = review.get("values") if review.get("action") == "modify" else state.get("modify_values")
            if isinstance(values, Mapping) and values:
                event["message"] = "Applying your values: " + ", ".join(f"{k} = {v}" for k, v in values.items())
            else:
                event["message"] = f"Applying {_plural(len(rows))}: {_steps(rows)}" if rows else "Applying…"
                event["sub_goals"] = [dict(r, status="running") for r in rows]
        elif node == "quality":
            event["message"] = "Judging…"
        elif node == "human_review":
            return None   # the result says whether the turn waits or goes on
        elif node == "error_handler":
            event["message"] = f"Something went wrong ({state.get('error') or 'an error'}); trying again…"
        else:
            event["message"] = "Saving…"
        return event

    # a node finished
    result = part.get("result") if isinstance(part.get("result"), Mapping) else {}
    error = result.get("error") or part.get("error")
    if node == "planner":
        rows = _rows(result.get("sub_goals"))
        event["sub_goals"] = [dict(r, status="planned") for r in rows]
        if error:
            event["message"] = f"The plan did not work: {error}"
        elif result.get("status") == "not_understood" or not rows:
            event["message"] = "Nothing to change"
        else:
            event["message"] = f"Planned {_plural(len(rows))}: {_steps(rows)}"
    elif node == "executor":
        rows = _rows(result.get("sub_goals"))
        event["sub_goals"] = rows
        event["message"] = f"Rendering failed: {error}" if error else f"Applied {_plural(len(rows))}"
    elif node == "quality":
        score = (result.get("assessment") or {}).get("score") if not error else None
        if score is not None:
            event["score"] = float(score)
            event["message"] = f"Scored {float(score):.2f}"
        else:
            event["message"] = f"Judging failed: {error}" if error else "Judged"
    elif node == "human_review":
        if part.get("interrupts"):
            event.update(status="waiting", message="Waiting for your review")
        else:
            action = (result.get("review") or {}).get("action") or "decision"
            event["message"] = {"approve": "Approved", "modify": "Applying your values…",
                                "rollback": "Rolling back…", "replan": "Asking for a new plan…"}.get(action, "Decided")
    elif node == "error_handler":
        event["message"] = "Giving up on this edit" if result.get("status") == "failed" else "Trying again…"
    else:
        event["message"] = "Done"
    return event


__all__ = ["STAGES", "goal_summary", "progress_event"]
