"""The per-turn trace: one JSON object per line (JSONL).

``basic`` keeps what a person debugging the agent reads first: the step, the
prompt size, the plan (sub-goals), validation errors and warnings, timings,
the judge's score and the pixel checks. ``full`` adds prompts and model
replies where the service exposes them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping

from agent.eval.scenarios import without_hidden_text

TRACE_LEVELS = ("basic", "full")

#: Fields written at level "basic"; "full" writes every field of the record.
BASIC_FIELDS = ("scenario", "suite", "split", "kind", "image", "step", "action", "instruction", "local",
                "implicit_approve", "details", "unchanged", "refused", "stronger",
                "status", "answered_as", "reply", "sub_goals", "plans", "planner_calls", "judge_calls",
                "validation_errors", "warnings", "error",
                "prompt_tokens", "budget_tokens", "wall_s", "model_s", "latency_s", "timings",
                "score", "judge_scores", "diagnoses", "judge_pass", "assessment", "pixel_pass", "checks", "preservation_ssim",
                "preserve_min", "rollback_exact", "head_asset_id", "shown_asset_id", "render_sha1")


def clean(value: Any) -> Any:
    """JSON-safe copy: numpy scalars to Python, NaN/inf to None, objects via to_dict()."""
    if isinstance(value, Mapping):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    if hasattr(value, "to_dict"):
        return clean(value.to_dict())
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float):
        return round(value, 5) if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return str(value)


def trace_line(turn: Mapping[str, Any], level: str = "basic") -> str:
    """One turn record as one JSON line at ``level``."""
    if level not in TRACE_LEVELS:
        raise ValueError(f"trace level: expected one of {', '.join(TRACE_LEVELS)}, got {level!r}")
    record = dict(turn) if level == "full" else {k: turn.get(k) for k in BASIC_FIELDS}
    record = without_hidden_text(record)      # a held-out sentence is never written down
    return json.dumps(clean(record), sort_keys=False, ensure_ascii=False)


def write_trace(path: str | Path, turns: Iterable[Mapping[str, Any]], level: str = "basic") -> int:
    """Write every turn to ``path`` (JSONL, replaced atomically); returns the line count."""
    path = Path(path)
    lines = [trace_line(t, level) for t in turns]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    tmp.replace(path)
    return len(lines)
