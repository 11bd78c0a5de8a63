"""The canonical results other programs read (MCP tools, A2A artifacts), and their JSON schemas.

    {"ok": true,  "tool": "edit", "data": {...}}
    {"ok": false, "tool": "edit", "errors": ["session_id: no session 'x'"]}

``turn_data`` / ``session_data`` / ``version_data`` make a Studio record small (no image bytes, no
executor record); the ``*_SCHEMA`` dicts describe them for clients (MCP ``outputSchema``), so a model
knows what it gets back before it calls.
"""

from __future__ import annotations

import logging
from typing import Any

from agent.loop.failures import describe_failure, one_line

log = logging.getLogger("atelier.mcp")


def ok(tool: str, data: Any) -> dict:
    return {"ok": True, "tool": tool, "data": data}


def failed(tool: str, *errors: str) -> dict:
    """The failure result: each reason on one line, credentials redacted."""
    return {"ok": False, "tool": tool, "errors": [one_line(e, 500) for e in errors if e] or ["failed"]}


def unexpected(tool: str, exc: BaseException) -> dict:
    """A failure nobody planned for: one line to the client, the cause (with its traceback) in the log."""
    reason = describe_failure(exc)
    log.error("tool %s failed: %s", tool, reason, exc_info=(type(exc), exc, exc.__traceback__))
    return failed(tool, reason)


def turn_data(result) -> dict:
    """A TurnResult, small: what happened, the score, the version, what is under review, custom fields."""
    d = result.to_dict()
    review = d.get("review")
    details = d.get("details") or {}
    return {
        "session_id": d["session_id"], "turn": d["turn"], "status": d["status"], "reply": d["reply"],
        "sub_goals": [{k: g.get(k) for k in ("op", "value", "mode", "target", "status") if k in g}
                      for g in d.get("sub_goals") or []],
        "score": d.get("score"), "assessment": d.get("assessment", ""),
        "asset_id": d.get("asset_id"), "head_asset_id": d.get("head_asset_id"),
        "rendered_path": d.get("rendered_path"), "warnings": list(d.get("warnings") or []),
        # the active output schemas' custom fields: the planner's (e.g. mood_keywords) and the judge's
        "fields": {"planner": dict(details.get("planner_fields") or {}), "quality": dict(d.get("fields") or {})},
        "details": details_data(details),
        "review": None if not review else {"asset_id": review.get("asset_id"), "turn": review.get("turn"),
                                           "ops": review.get("ops") or []},
    }


def details_data(details: dict) -> dict:
    """The turn's details, small: which skill did what, the review tier, failures, the judge's own words."""
    out = {}
    skills = details.get("skills")
    if skills:
        out["skills"] = {"confidence": skills.get("confidence"),
                         "trace": [{k: t.get(k) for k in ("step", "skill", "status", "did", "why", "depends_on")
                                    if t.get(k) is not None} for t in skills.get("trace") or []]}
    for key in ("review_tier", "failure", "failure_counts", "measurements", "model_limitations",
                "executor_schema", "executor_problems"):
        if details.get(key):
            out[key] = details[key]
    return out


def session_data(info) -> dict:
    d = info.to_dict()
    return {"session_id": d["id"], "title": d["title"], "width": d["width"], "height": d["height"],
            "style": d["style"], "review_mode": d["review_mode"], "turns": d["turns"],
            "head_asset_id": d["head_asset_id"], "notices": d["notices"],
            "planner_schema": d.get("planner_schema", "default"), "quality_schema": d.get("quality_schema", "default")}


def version_data(asset) -> dict:
    d = asset.to_dict()
    state = d.get("state") or {}
    changed = {k: v for k, v in (state.get("settings") or {}).items() if v}
    return {"asset_id": d["id"], "parent_id": d["parent_id"], "turn": d["turn"], "summary": d["summary"],
            "score": d["score"], "status": d["status"], "is_head": d["is_head"],
            "on_head_path": d["on_head_path"], "settings": changed,
            "local_layers": len(state.get("layers") or [])}


# -- the schemas of those results (MCP outputSchema) --------------------------------------------------

_NULLABLE_STR = {"type": ["string", "null"]}
_NUMBER_OR_NULL = {"type": ["number", "null"]}

SUB_GOAL_SCHEMA = {
    "type": "object", "description": "One step of the turn's plan.",
    "properties": {
        "op": {"type": "string", "description": "The adjustment, e.g. temperature, exposure, saturation."},
        "value": {"type": ["number", "null"], "description": "-100..100 on the op's scale (0 = unchanged)."},
        "mode": {"type": ["string", "null"], "description": "add (relative) or set (absolute)."},
        "target": {"type": ["object", "null"], "description": "A mask spec ({\"type\": \"sky\"}...), null = whole photo."},
        "status": {"type": ["string", "null"], "description": "applied, clamped, skipped..."},
    },
}

TURN_SCHEMA = {
    "type": "object", "description": "One turn of a session.",
    "required": ["session_id", "turn", "status", "reply"],
    "properties": {
        "session_id": {"type": "string"},
        "turn": {"type": "integer", "minimum": 0, "description": "The turn's number (1 = the first request)."},
        "status": {"type": "string", "description": "auto_approved, approved, awaiting_review, not_understood, "
                                                    "rolled_back, answered, failed..."},
        "reply": {"type": "string", "description": "What the agent says to the person, in plain words."},
        "sub_goals": {"type": "array", "items": SUB_GOAL_SCHEMA},
        "score": {**_NUMBER_OR_NULL, "description": "The judge's score 0..1 of the new version (null: none)."},
        "assessment": {"type": "string", "description": "The judge's own words about the result."},
        "asset_id": {**_NULLABLE_STR, "description": "The version this turn made (null: none)."},
        "head_asset_id": {**_NULLABLE_STR, "description": "The session's current version."},
        "rendered_path": {**_NULLABLE_STR, "description": "A preview render of the version shown (PNG, on the server)."},
        "warnings": {"type": "array", "items": {"type": "string"}},
        "fields": {"type": "object", "description": "Custom fields of the active output schemas.",
                   "properties": {"planner": {"type": "object"}, "quality": {"type": "object"}}},
        "details": {"type": "object", "description": "Skills trace, review tier, failures, the numbers behind the reply."},
        "review": {"type": ["object", "null"], "description": "What waits for review(): asset_id, turn, ops."},
    },
}

SESSION_SCHEMA = {
    "type": "object", "required": ["session_id"],
    "properties": {
        "session_id": {"type": "string", "description": "Pass it to edit, review, history and export."},
        "title": {"type": "string"}, "width": {"type": "integer"}, "height": {"type": "integer"},
        "style": _NULLABLE_STR, "review_mode": {"type": "string"}, "turns": {"type": "integer"},
        "head_asset_id": _NULLABLE_STR, "notices": {"type": "array", "items": {"type": "string"}},
        "planner_schema": {"type": "string"}, "quality_schema": {"type": "string"},
    },
}

VERSION_SCHEMA = {
    "type": "object",
    "properties": {
        "asset_id": {"type": "string"}, "parent_id": _NULLABLE_STR, "turn": {"type": "integer"},
        "summary": {"type": "string"}, "score": _NUMBER_OR_NULL, "status": _NULLABLE_STR,
        "is_head": {"type": "boolean"}, "on_head_path": {"type": "boolean"},
        "settings": {"type": "object", "description": "The non-zero global settings {op: value}."},
        "local_layers": {"type": "integer"},
    },
}

HISTORY_SCHEMA = {"type": "object", "required": ["session_id", "versions"],
                  "properties": {"session_id": {"type": "string"},
                                 "versions": {"type": "array", "items": VERSION_SCHEMA}}}

EXPORT_SCHEMA = {
    "type": "object", "required": ["path", "format", "width", "height", "bytes"],
    "properties": {"session_id": {"type": "string"}, "path": {"type": "string", "description": "The file written."},
                   "format": {"enum": ["jpeg", "png", "tiff"]}, "width": {"type": "integer"},
                   "height": {"type": "integer"}, "bytes": {"type": "integer"}},
}


def canonical_schema(data: dict | None = None) -> dict:
    """The canonical envelope: ``{ok: true, tool, data}`` (``data`` as given) or ``{ok: false, tool, errors}``."""
    return {
        "type": "object", "required": ["ok", "tool"],
        "properties": {
            "ok": {"type": "boolean", "description": "true: data holds the answer; false: errors say why, "
                                                     "and nothing changed."},
            "tool": {"type": "string"},
            "data": data or {"type": "object"},
            "errors": {"type": "array", "items": {"type": "string"}, "description": "One line per problem."},
        },
    }


__all__ = ["EXPORT_SCHEMA", "HISTORY_SCHEMA", "SESSION_SCHEMA", "TURN_SCHEMA", "VERSION_SCHEMA",
           "canonical_schema", "details_data", "failed", "ok", "session_data", "turn_data", "unexpected",
           "version_data"]
