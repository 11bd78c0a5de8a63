"""Planner and judge wrappers that record what each call saw and how long it took.

The harness injects them into :class:`agent.service.Studio` (its public
``planner=``/``judge=`` arguments), so it can read the folded planner context
size, the plan and the judge's verdict of every turn without reaching inside
the service. They delegate every other attribute to the wrapped object.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from agent.loop.context_folding import estimate_tokens


class CallLog:
    """Thread-safe list of call records; :meth:`take` returns and clears them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[dict[str, Any]] = []

    def add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._calls.append(record)

    def take(self) -> list[dict[str, Any]]:
        with self._lock:
            calls, self._calls = self._calls, []
        return calls


class RecordingPlanner:
    """Wraps a planner: records the folded context size (estimated tokens, the
    same estimate the agent budgets with), the plan and the call's seconds."""

    def __init__(self, inner: Any, chars_per_token: int = 4) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "planner")
        self.chars_per_token = chars_per_token
        self.log = CallLog()

    def __getattr__(self, item: str) -> Any:   # styles(), profile, ... of the wrapped planner
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def plan(self, request):
        t0 = time.perf_counter()
        record: dict[str, Any] = {
            "context_tokens": estimate_tokens(request.context or "", self.chars_per_token),
            "context_chars": len(request.context or ""),
            "message": request.message, "feedback": request.feedback,
            "diagnoses": list(request.diagnoses or []), "context": request.context,
        }
        try:
            plan = self.inner.plan(request)
        except Exception as exc:
            record.update(seconds=time.perf_counter() - t0, error=f"{type(exc).__name__}: {exc}")
            self.log.add(record)
            raise
        record["seconds"] = time.perf_counter() - t0
        record["plan"] = plan.to_dict() if hasattr(plan, "to_dict") else None
        record["raw_reply"] = getattr(plan, "fields", {}).get("raw_reply") if hasattr(plan, "fields") else None
        self.log.add(record)
        return plan


class RecordingJudge:
    """Wraps a judge: records its score, diagnoses and the call's seconds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "judge")
        self.log = CallLog()

    def __getattr__(self, item: str) -> Any:
        if item == "inner":
            raise AttributeError(item)
        return getattr(self.inner, item)

    def assess(self, request):
        t0 = time.perf_counter()
        try:
            result = self.inner.assess(request)
        except Exception as exc:
            self.log.add({"seconds": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"})
            raise
        self.log.add({"seconds": time.perf_counter() - t0,
                      "assessment": result.to_dict() if hasattr(result, "to_dict") else None})
        return result
