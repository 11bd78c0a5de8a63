"""The orchestrator against a real OpenAI-compatible server on 127.0.0.1 scripted with tool calls.

The "model" is :class:`ScriptedAgent` behind ``tests/fake_openai_server.py``: it reads the conversation
the orchestrator sends (user text, tool results) and answers with tool calls, like a chat model would.
The tools are Atelier's real MCP server (stdio subprocess, or streamable HTTP). Tests check the limits
(tool calls, invalid-call retries, model timeout), schema validation before a call runs, errors fed
back, defaults fetched once, and the JSONL traces of ``eval`` and ``chat``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import pytest
from openai import AsyncOpenAI

from agent.orchestrator.config import orchestrator_settings
from agent.orchestrator.loop import Orchestrator, ToolBox, Tracer
from pipeline.imageio import save_image
from tests.conftest import free_port, small_photo
from tests.fake_openai_server import FakeOpenAIServer, Received, Reply
from tests.test_mcp import _wait_for_port, run_async

REPO = Path(__file__).resolve().parents[1]


class ScriptedAgent:
    """A rule-based stand-in for a chat model: one tool call at a time, then a plain answer.

    ``first_bad``: the first tool call of the conversation is invalid (no session_id), to see the
    validation error fed back and the agent recover.
    """

    def __init__(self, first_bad: bool = False):
        self.first_bad = first_bad

    def __call__(self, received: Received) -> Reply:
        msgs = received.messages
        if "tools" not in received.body:
            return Reply(content="Finished without tools.")
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        user = msgs[last_user]["content"]
        results = [json.loads(m["content"]) for m in msgs[last_user + 1:] if m["role"] == "tool"]
        session = None
        for m in msgs:
            if m["role"] == "tool":
                r = json.loads(m["content"])
                if r.get("ok") and r["tool"] == "open_photo":
                    session = r["data"]["session_id"]
        if self.first_bad and not any(m["role"] == "tool" for m in msgs):
            return Reply.calls(("edit", {"message": "make it warmer"}))
        last = results[-1] if results else None
        path = re.search(r"(/\S+\.(?:png|jpg))", user)
        if path and session is None:
            return Reply.calls(("open_photo", {"path": path.group(1)}))
        if last and last["tool"] == "edit" and last["ok"] and last["data"]["status"] == "awaiting_review":
            return Reply.calls(("review", {"session_id": session, "action": "approve"}))
        if last and last["ok"] and last["tool"] in ("edit", "review", "export", "history"):
            data = last["data"]
            said = data.get("reply") or data.get("path") or f"{len(data.get('versions', []))} versions"
            return Reply(content=f"Done: {said}")
        if last and not last["ok"] and last["tool"] != "open_photo":
            if any(r["tool"] == "edit" and not r["ok"] for r in results[:-1]):
                return Reply(content="That did not work: " + "; ".join(last["errors"]))
        text = user.lower()
        if "export" in text:
            return Reply.calls(("export", {"session_id": session, "format": "png", "long_side": 200}))
        if "done so far" in text:
            return Reply.calls(("history", {"session_id": session}))
        wish = re.sub(r"^.*?\band\b\s+", "", user) if path else user
        return Reply.calls(("edit", {"session_id": session, "message": wish.strip(" .")}))


@pytest.fixture()
def photo(tmp_path) -> Path:
    path = tmp_path / "astronaut.png"
    save_image(small_photo("astronaut", 320), path)
    return path


def _env(tmp_path: Path, server: FakeOpenAIServer | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATELIER_")}
    # the photos live in tmp_path: an allowed root of the MCP file tools (the server runs in the repository)
    env.update(ATELIER_SESSIONS_DIR=str(tmp_path / "sessions"), PYTHONPATH=str(REPO), ATELIER_MCP_ROOTS=str(tmp_path))
    if server is not None:
        env.update(ATELIER_ORCH_BASE_URL=server.base_url, ATELIER_ORCH_MODEL="scripted-agent",
                   ATELIER_ORCH_API_KEY="test")
    return env


def _run_turns(server: FakeOpenAIServer, tmp_path: Path, turns: list[str], **limits) -> tuple[list, Tracer]:
    """Turns through an Orchestrator over the stdio MCP server; returns the outcomes and the tracer."""
    settings = orchestrator_settings({}, **limits)
    tracer = Tracer(level="full")

    async def main():
        async with AsyncExitStack() as stack:
            tools = await ToolBox.connect(stack, "stdio", env=_env(tmp_path))
            client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
            orch = Orchestrator(client, "scripted-agent", tools, settings, tracer)
            await orch.start()
            return [await orch.turn(t) for t in turns]

    return run_async(main), tracer


def test_a_conversation_edits_reviews_and_answers_in_words(tmp_path, photo):
    with FakeOpenAIServer() as server:
        server.responder = ScriptedAgent(first_bad=True)
        outcomes, tracer = _run_turns(server, tmp_path, [f"Open {photo} and make it warmer",
                                                         "export it please"])
        first, second = outcomes
        assert first.stopped == "answered" and first.answer.startswith("Done: ")
        assert [c["tool"] for c in first.calls][:2] == ["edit", "open_photo"]
        assert first.invalid_calls == 1 and first.calls[0]["valid"] is False
        # the validation error went back to the model before anything ran
        fed_back = [m for m in server.requests[1].messages if m["role"] == "tool"]
        assert "session_id" in fed_back[0]["content"] and "invalid call, not run" in fed_back[0]["content"]
        assert second.stopped == "answered" and second.answer.endswith(".png")
        assert Path(second.answer.split("Done: ")[1]).is_file()
        # the defaults were fetched once, before the first turn, and are in the system prompt
        defaults = [r for r in tracer.records if r.get("tool") == "get_defaults"]
        assert len(defaults) == 1 and defaults[0]["turn"] == 0
        system = server.requests[-1].messages[0]["content"]
        assert json.dumps(defaults[0]["result"]["data"]) in system and "(cached)" in system
        # canonical results are what the model reads
        tool_msgs = [json.loads(m["content"]) for m in server.requests[-1].messages if m["role"] == "tool"]
        assert all(set(m) in ({"ok", "tool", "data"}, {"ok", "tool", "errors"}) for m in tool_msgs)


def test_a_runaway_model_is_stopped_at_the_tool_call_limit(tmp_path):
    with FakeOpenAIServer() as server:
        server.responder = lambda r: Reply.calls(("list_skills", {})) if "tools" in r.body \
            else Reply(content="Here are the skills again.")
        (outcome,), tracer = _run_turns(server, tmp_path, ["list the skills forever"], max_tool_calls=3)
    assert outcome.stopped == "tool_limit" and outcome.tool_calls == 3
    assert "stopped after 3 tool calls" in outcome.answer
    run = [r for r in tracer.records if r.get("type") == "tool_call" and r["turn"] == 1]
    assert len(run) == 3 and all(r["result"]["ok"] for r in run)
    assert "tools" not in server.requests[-1].body        # the last request asked for words only
    assert len(server.requests) == 4


def test_invalid_calls_are_fed_back_and_limited(tmp_path):
    with FakeOpenAIServer() as server:
        replies = [Reply.calls(("edit", {"session_id": 5, "message": "warmer"})),
                   Reply.calls(("export", "{not json")),
                   Reply.calls(("crop_it", {"x": 1})),
                   Reply.calls(("edit", {"session_id": "abc"}))]
        server.script(*replies)
        server.responder = lambda r: Reply(content="I give up.")
        (outcome,), tracer = _run_turns(server, tmp_path, ["make it warmer"], max_invalid_retries=2)
    assert outcome.stopped == "invalid_limit" and outcome.invalid_calls == 3 and outcome.tool_calls == 0
    assert "3 invalid tool calls" in outcome.answer
    checked = [r for r in tracer.records if r.get("type") == "tool_call" and r["turn"] == 1]
    assert [r["validation"]["ok"] for r in checked] == [False, False, False]
    assert "5 is not of type 'string'" in checked[0]["validation"]["errors"][0]
    assert "not valid JSON" in checked[1]["validation"]["errors"][0]
    assert "unknown tool 'crop_it'" in checked[2]["validation"]["errors"][0]
    fed = [m["content"] for m in server.requests[1].messages if m["role"] == "tool"]
    assert "5 is not of type 'string'" in fed[0]
    # after the third invalid call the model is asked once more, with tools off; its tool call is not run
    assert len(server.requests) == 4 and "tools" not in server.requests[-1].body


def test_a_hung_model_ends_the_turn_at_the_model_timeout(tmp_path):
    with FakeOpenAIServer() as server:
        server.script(Reply.hang(20))
        (outcome,), _ = _run_turns(server, tmp_path, ["make it warmer"], model_timeout_s=0.5)
    assert outcome.stopped == "model_timeout" and "did not answer within 0.5 s" in outcome.answer


def test_eval_runs_canned_conversations_and_writes_traces(tmp_path, photo):
    conversations = tmp_path / "conversations.yaml"
    conversations.write_text(
        "- name: warm_then_export\n"
        f"  photo: {photo}\n"
        "  turns: ['Open {photo} and make it a little warmer.', 'Export it as a PNG.']\n"
        "  expect: {tools: [open_photo, edit, export]}\n"
        "- name: history\n"
        f"  photo: {photo}\n"
        "  turns: ['Open {photo} and give it a moody look.', 'What have we done so far?']\n"
        "  expect: {tools: [open_photo, edit, history]}\n", encoding="utf-8")
    trace = tmp_path / "trace.jsonl"
    with FakeOpenAIServer() as server:
        server.responder = ScriptedAgent()
        proc = subprocess.run(
            [sys.executable, "-m", "agent.orchestrator", "eval", "--conversations", str(conversations),
             "--verbose", "--trace", "--trace-level", "basic", "--trace-out", str(trace),
             "--mcp-transport", "stdio", "--model-timeout", "30"],
            cwd=REPO, env=_env(tmp_path, server), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS warm_then_export" in proc.stdout and "PASS history" in proc.stdout
    assert "2/2 conversations passed" in proc.stdout
    assert "atelier: Done:" in proc.stdout                  # --verbose shows the turns
    assert "trace {" in proc.stderr                          # --trace echoes the trace
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    calls = [r for r in lines if r["type"] == "tool_call"]
    assert {"request", "validation", "result", "ms"} <= set(calls[0])
    assert [r["tool"] for r in calls if r["turn"] > 0][:3] == ["open_photo", "edit", "export"]
    assert all(r["validation"]["ok"] for r in calls)
    assert "messages" not in lines[0] and "data_keys" in calls[1]["result"]   # basic level stays small


def test_chat_over_streamable_http_with_a_trace(tmp_path, photo):
    port = free_port()
    env = _env(tmp_path)
    mcp = subprocess.Popen([sys.executable, "-m", "agent.mcp", "--http", "--port", str(port)], cwd=REPO, env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    trace = tmp_path / "chat.jsonl"
    try:
        _wait_for_port(port, mcp)
        with FakeOpenAIServer() as server:
            server.responder = ScriptedAgent()
            proc = subprocess.run(
                [sys.executable, "-m", "agent.orchestrator", "chat", "--mcp-transport", "streamable-http",
                 "--mcp-url", f"http://127.0.0.1:{port}/mcp", "--trace-out", str(trace), "--trace-level", "full"],
                cwd=REPO, env=_env(tmp_path, server), input=f"Open {photo} and make it warmer\n\n",
                capture_output=True, text=True, timeout=300)
    finally:
        mcp.terminate()
        mcp.wait(timeout=10)
    assert proc.returncode == 0, proc.stderr
    assert "Done: " in proc.stdout
    lines = [json.loads(x) for x in trace.read_text().splitlines()]
    assert any(r["type"] == "model_call" and "messages" in r for r in lines)      # full level
    edit = next(r for r in lines if r.get("tool") == "edit")
    assert edit["result"]["ok"] and edit["result"]["data"]["status"] in ("auto_approved", "awaiting_review")


def test_the_orchestrator_refuses_to_start_without_a_model(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "agent.orchestrator", "eval"], cwd=REPO, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "ATELIER_ORCH_BASE_URL" in proc.stderr
