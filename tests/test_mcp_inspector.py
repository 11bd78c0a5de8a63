"""The MCP server through a client we did not write: the MCP Inspector's CLI (``npx @modelcontextprotocol/inspector
--cli``, installed by ``make test`` under .venv/node) against a launched HTTP server.

It lists the tools — each with a description, annotations, an output schema, and a description for every
parameter — and calls every tool once with the arguments a model would send. The Inspector's own SDK checks
each structured result against the tool's declared output schema, so a result that does not match fails here.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.imageio import save_image
from tests.conftest import copy_shipped_schemas, free_port, small_photo
from tests.test_mcp import REPO, _env, _wait_for_port, stop

INSPECTOR = REPO / ".venv" / "node" / "node_modules" / ".bin" / "mcp-inspector"
pytestmark = pytest.mark.skipif(not INSPECTOR.exists() or shutil.which("node") is None,
                                reason="the MCP Inspector is installed by `make test` (npm)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp-inspector")
    photo = root / "coffee.png"
    save_image(small_photo("coffee", 240), photo)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "agent.mcp", "--http", "--host", "127.0.0.1", "--port", str(port)], cwd=REPO,
        env=_env(root / "sessions", ATELIER_MCP_ROOTS=str(root),
                 ATELIER_SCHEMAS_DIR=str(copy_shipped_schemas(root / "schemas"))),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/mcp", root, photo
    finally:
        stop(proc)


def inspector(url: str, method: str, *args: str) -> dict:
    done = subprocess.run([str(INSPECTOR), "--cli", url, "--transport", "http", "--method", method, *args],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:] + done.stdout[-2000:]
    return json.loads(done.stdout)


def call(url: str, tool: str, **arguments) -> dict:
    pairs = [f"{k}={json.dumps(v) if isinstance(v, (dict, list)) else v}" for k, v in arguments.items()]
    answer = inspector(url, "tools/call", "--tool-name", tool, *(["--tool-arg", *pairs] if pairs else []))
    result = answer["structuredContent"]
    assert result["tool"] == tool and answer.get("isError", False) == (not result["ok"])
    assert json.loads(answer["content"][0]["text"]) == result        # text and structured content agree
    return result


def test_the_inspector_lists_every_tool_described_for_a_model(server):
    url, _, _ = server
    tools = {t["name"]: t for t in inspector(url, "tools/list")["tools"]}
    assert {"open_photo", "edit", "review", "history", "export", "list_skills", "apply_skill", "get_defaults",
            "set_defaults", "generate_image", "regenerate", "list_schemas", "generate_schema", "use_schema"} <= set(tools)
    for name, tool in tools.items():
        assert tool["description"].strip(), name
        assert tool["inputSchema"].get("additionalProperties") is False, name
        for param, spec in tool["inputSchema"].get("properties", {}).items():
            assert spec.get("description"), f"{name}.{param} has no description"
        out = tool["outputSchema"]
        assert out["required"] == ["ok", "tool"] and "errors" in out["properties"], name
        assert set(tool["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint"}, name
    assert tools["history"]["annotations"]["readOnlyHint"] is True
    assert tools["review"]["annotations"]["destructiveHint"] is True
    assert tools["set_defaults"]["annotations"]["idempotentHint"] is True
    export = tools["export"]["inputSchema"]["properties"]["long_side"]["anyOf"][0]
    assert (export["minimum"], export["maximum"]) == (16, 16384)
    assert tools["edit"]["inputSchema"]["properties"]["message"]["examples"]
    templates = inspector(url, "resources/templates/list")["resourceTemplates"]
    assert {"atelier://sessions/{session_id}/history",
            "atelier://sessions/{session_id}/assets/{asset_id}"} <= {t["uriTemplate"] for t in templates}


def test_the_inspector_calls_every_tool_once(server):
    url, root, photo = server
    opened = call(url, "open_photo", path=str(photo))
    assert opened["ok"], opened
    sid = opened["data"]["session_id"]
    turn = call(url, "edit", session_id=sid, message="make it warmer")
    assert turn["ok"] and any(g["op"] == "temperature" for g in turn["data"]["sub_goals"])
    history = call(url, "history", session_id=sid)
    versions = history["data"]["versions"]
    assert len(versions) == 2 and versions[-1]["is_head"] and versions[-1]["settings"]["temperature"] > 0
    rolled = call(url, "review", session_id=sid, action="rollback", target=versions[0]["asset_id"])
    assert rolled["ok"] and rolled["data"]["head_asset_id"] == versions[0]["asset_id"]
    skills = call(url, "list_skills")
    assert "film" in {s["name"] for s in skills["data"]["skills"]}
    skilled = call(url, "apply_skill", session_id=sid, skill="film")
    assert skilled["ok"] and skilled["data"]["status"] in ("auto_approved", "awaiting_review")
    written = call(url, "export", session_id=sid, format="png", path=str(root / "out.png"))
    assert written["ok"] and Path(written["data"]["path"]).is_file()
    defaults = call(url, "get_defaults")
    assert defaults["ok"] and defaults["data"]["image"]["steps"] >= 1
    changed = call(url, "set_defaults", image={"steps": 12})
    assert changed["ok"] and changed["data"]["updated"] == {"steps": 12} and changed["data"]["applies_to"] == "session"
    made = call(url, "generate_image", prompt="a red fox in snow")       # no generation backend here
    assert not made["ok"] and "generation backend" in made["errors"][0]
    again = call(url, "regenerate", asset_id=versions[0]["asset_id"])
    assert not again["ok"] and "no generated pixels" in again["errors"][0]    # a retouch, not a generation
    schemas = call(url, "list_schemas")
    assert schemas["ok"] and "cinematographer" in schemas["data"]["schemas"]["quality"]
    generated = call(url, "generate_schema", agent="planner", name="moodboard",
                     example={"reply": "Warmer.", "understood": True, "mood_keywords": ["warm", "nostalgic"],
                              "sub_goals": [{"op": "temperature", "value": 20, "mode": "add", "target": None}]})
    assert generated["ok"] and generated["data"]["fields"] == ["mood_keywords"]
    used = call(url, "use_schema", session_id=sid, name="moodboard")
    assert used["ok"] and used["data"]["planner_schema"] == "moodboard"
    # a misspelt argument is refused with the canonical error, not ignored
    typo = call(url, "history", session_id=sid, sesion_id=sid)
    assert not typo["ok"] and typo["errors"] == ["sesion_id: unknown argument; session_id is the argument"]
    resource = inspector(url, "resources/read", "--uri", f"atelier://sessions/{sid}/history")
    read = json.loads(resource["contents"][0]["text"])
    assert read["ok"] and [v["asset_id"] for v in read["data"]["versions"]][:2] == [v["asset_id"] for v in versions]
    assert [t["message"] for t in read["data"]["turns"]][0] == "make it warmer"


def test_set_defaults_holds_for_its_own_client_session_until_persisted(server):
    """Two MCP client sessions of one HTTP server (the SDK's client, initialize handshake): each sees its own
    set_defaults; a stateless request (protocol 2026-07-28) has no session, and the answer says so."""
    from mcp import Client

    from tests.test_mcp import run_async

    url, root, _ = server

    async def steps(client) -> int:
        return (await client.call_tool("get_defaults", {})).structured_content["data"]["image"]["steps"]

    async def main():
        async with Client(url, mode="legacy") as a, Client(url, mode="legacy") as b:
            before = await steps(b)
            mine = (await a.call_tool("set_defaults", {"image": {"steps": 7}})).structured_content
            seen = (await steps(a), await steps(b))
            saved = (await b.call_tool("set_defaults", {"image": {"steps": 9}, "persist": True})).structured_content
            after = (await steps(a), await steps(b))
        async with Client(url, mode="legacy") as c:
            fresh = await steps(c)
        async with Client(url) as stateless:
            alone = (await stateless.call_tool("set_defaults", {"image": {"cfg": 4.0}})).structured_content
        return before, mine, seen, saved, after, fresh, alone

    before, mine, seen, saved, after, fresh, alone = run_async(main)
    assert alone["data"]["applies_to"] == "process"
    assert mine["data"]["applies_to"] == "session" and mine["data"]["previous"] == {"steps": before}
    assert seen == (7, before)                          # b is untouched by a's change
    assert saved["data"]["applies_to"] == "saved" and (root / "sessions" / "generation_defaults.json").is_file()
    assert after == (7, 9) and fresh == 9               # a keeps its own; everyone else gets the saved value
