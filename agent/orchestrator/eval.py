"""Canned conversations through the orchestrator: did each reach its tools, within the limits?"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONVERSATIONS = Path(__file__).with_name("conversations.yaml")


def load_conversations(path: str | Path | None = None) -> list[dict]:
    """The conversations file: a list of {name, photo, turns, expect}; a bad entry raises ValueError naming it."""
    p = Path(path) if path else DEFAULT_CONVERSATIONS
    data = yaml.safe_load(p.read_text(encoding="utf-8"))
    if not isinstance(data, list) or not data:
        raise ValueError(f"{p}: expected a list of conversations")
    out = []
    for i, conv in enumerate(data):
        where = f"{p.name}: [{i}]"
        if not isinstance(conv, dict) or not isinstance(conv.get("name"), str):
            raise ValueError(f"{where}.name: expected a name")
        turns = conv.get("turns")
        if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
            raise ValueError(f"{where}.turns: expected a list of messages")
        photo = conv.get("photo")
        if photo is not None:
            path = Path(photo) if Path(photo).is_absolute() else (p.parent / photo if (p.parent / photo).exists()
                                                                   else REPO / photo)
            if not path.is_file():
                raise ValueError(f"{where}.photo: no file {photo!r}")
            photo = str(path.resolve())
        expect = conv.get("expect") or {}
        if not isinstance(expect, dict):
            raise ValueError(f"{where}.expect: expected a mapping")
        out.append({"name": conv["name"], "photo": photo, "turns": turns, "expect": expect})
    return out


async def run_conversation(make_orchestrator, conv: dict, *, verbose=None) -> dict:
    """One conversation on a fresh orchestrator; returns its record (turn outcomes, checks, passed)."""
    orch = await make_orchestrator()
    outcomes = []
    t0 = time.perf_counter()
    for text in conv["turns"]:
        message = text.replace("{photo}", conv["photo"] or "")
        outcome = await orch.turn(message)
        outcomes.append(outcome.to_dict())
        if verbose:
            verbose(f"[{conv['name']}] you: {message}")
            for c in outcome.calls:
                verbose(f"[{conv['name']}]   tool {c['tool']}: {'ok' if c['ok'] else 'invalid' if not c['valid'] else 'failed'}")
            verbose(f"[{conv['name']}] atelier: {outcome.answer}  ({outcome.stopped})")
    expect = conv["expect"]
    ok_tools = {c["tool"] for o in outcomes for c in o["calls"] if c["ok"]}
    checks: dict[str, Any] = {}
    wanted = list(expect.get("tools") or [])
    checks["tools"] = {"wanted": wanted, "missing": [t for t in wanted if t not in ok_tools]}
    stopped = expect.get("stopped", "answered")
    checks["stopped"] = {"wanted": stopped, "got": [o["stopped"] for o in outcomes]}
    checks["answers"] = all(o["answer"].strip() for o in outcomes)
    passed = not checks["tools"]["missing"] and all(s == stopped for s in checks["stopped"]["got"]) \
        and checks["answers"]
    return {"name": conv["name"], "passed": passed, "turns": outcomes, "checks": checks,
            "seconds": round(time.perf_counter() - t0, 2),
            "tool_calls": sum(o["tool_calls"] for o in outcomes),
            "invalid_calls": sum(o["invalid_calls"] for o in outcomes)}


def summary(records: list[dict], tracer_records: list[dict]) -> dict:
    calls = [r for r in tracer_records if r.get("type") == "tool_call" and r.get("turn")]
    ms = sorted(r["ms"] for r in calls if r["validation"]["ok"])
    return {"conversations": len(records), "passed": sum(r["passed"] for r in records),
            "tool_calls": sum(r["tool_calls"] for r in records),
            "invalid_calls": sum(r["invalid_calls"] for r in records),
            "tool_ms_median": ms[len(ms) // 2] if ms else None,
            "failed": [r["name"] for r in records if not r["passed"]]}
