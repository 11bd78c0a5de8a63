"""The orchestrator's edges: the server it launches gets the ``ATELIER_*`` environment, its cached defaults follow
``set_defaults``, it keeps the last session and version, and its own model client is deadline-bound with
redacted traces. Real parts: the stdio MCP server as a subprocess, the ``openai`` SDK against the tests'
OpenAI-compatible server on 127.0.0.1.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack
from pathlib import Path

from agent.orchestrator.config import orchestrator_settings
from agent.orchestrator.loop import Orchestrator, ToolBox, Tracer, model_client
from agent.service import Studio
from pipeline.imageio import save_image
from tests.conftest import small_photo
from tests.fake_openai_server import FakeOpenAIServer, Received, Reply
from tests.test_mcp import run_async

SECRET = "sk-orchestrator-secret-0123456789abcdef"


def _session(tmp_path: Path, server: FakeOpenAIServer, turns: list[str], **limits) -> tuple[list, Tracer, Orchestrator]:
    """Turns through an Orchestrator whose stdio server is launched with no explicit environment."""
    tracer = Tracer(level="full")

    async def main():
        async with AsyncExitStack() as stack:
            tools = await ToolBox.connect(stack, "stdio", roots=[tmp_path])
            orch = Orchestrator(model_client(server.base_url, SECRET, 5.0), "scripted", tools,
                                orchestrator_settings({}, **limits), tracer)
            await orch.start()
            return [await orch.turn(t) for t in turns], orch

    outcomes, orch = run_async(main)
    return outcomes, tracer, orch


def test_the_server_gets_the_environment_and_the_loop_keeps_defaults_and_ids_fresh(tmp_path, monkeypatch):
    photo = tmp_path / "coffee.png"
    save_image(small_photo("coffee", 200), photo)
    monkeypatch.setenv("ATELIER_SESSIONS_DIR", str(tmp_path / "sessions"))   # only in this process's env
    monkeypatch.setenv("ATELIER_MCP_ROOTS", str(tmp_path))

    def agent(received: Received) -> Reply:
        done = [json.loads(m["content"]) for m in received.messages if m["role"] == "tool"]
        tools = [d["tool"] for d in done]
        if "tools" not in received.body or "edit" in tools:
            return Reply(content="Warmer now.")
        if "set_defaults" not in tools:
            return Reply.calls(("set_defaults", {"image": {"steps": 12}}))
        if "open_photo" not in tools:
            return Reply.calls(("open_photo", {"path": str(photo)}))
        sid = next(d["data"]["session_id"] for d in done if d["tool"] == "open_photo")
        return Reply.calls(("edit", {"session_id": sid, "message": "make it warmer"}))

    with FakeOpenAIServer() as server:
        server.responder = agent
        (outcome,), _, orch = _session(tmp_path, server, ["use 12 steps, then open the coffee photo and warm it"])
        system = server.requests[-1].messages[0]["content"]
    assert outcome.stopped == "answered" and [c["tool"] for c in outcome.calls] == ["set_defaults", "open_photo", "edit"]
    assert all(c["ok"] for c in outcome.calls)
    # the launched server used ATELIER_SESSIONS_DIR: the session is in that folder's database
    with Studio(sessions_dir=tmp_path / "sessions") as studio:
        sessions = studio.list_sessions()
        assert len(sessions) == 1 and sessions[0].turns == 1
        head = sessions[0].head_asset_id
    # the cached defaults were refreshed after set_defaults, and the last ids are in the system prompt
    assert '"steps": 12' in system and orch.defaults["data"]["image"]["steps"] == 12
    assert orch.last_session_id == sessions[0].id and orch.last_asset_id == head and head in system


def test_a_trickling_model_ends_at_the_deadline_and_an_echoed_key_never_reaches_the_trace(tmp_path):
    with FakeOpenAIServer() as server:
        server.script(Reply.trickle({"choices": []}, every_s=0.5), Reply.echoing(400))
        outcomes, tracer, _ = _session(tmp_path, server, ["make it warmer", "and brighter"], model_timeout_s=1.5)
        sent = server.requests[-1].headers.get("authorization", "")
    trickled, echoed = outcomes
    # per-read timeouts never fire on a trickle; the wall-clock deadline does
    assert trickled.stopped == "model_timeout" and "did not answer within 1.5 s" in trickled.answer
    assert echoed.stopped == "model_error" and SECRET in sent                  # the endpoint did echo the key
    written = json.dumps(tracer.records) + echoed.answer
    assert SECRET not in written and "[redacted]" in written
