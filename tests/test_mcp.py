"""The MCP server through the SDK's real client: over stdio (a subprocess) and streamable HTTP (a launched server).

Each test opens a photo, edits, reviews, reads the history and exports, and sends bad calls (unknown session,
missing argument, wrong type, unknown tool) that must answer ``ok: false`` with the reason and change nothing.
The sessions live in a real SQLite file that a Studio in the test process reads too (the studio sees them).
The photo's folder is an allowed root: declared by the stdio client (MCP roots), and through
``ATELIER_MCP_ROOTS`` for the HTTP server (tests/test_mcp_security.py tries the rules themselves).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from agent.service import Studio
from pipeline.imageio import load_image, save_image
from tests.conftest import free_port, small_photo

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture()
def photo(tmp_path) -> Path:
    path = tmp_path / "portrait.png"
    save_image(small_photo("astronaut", 320), path)
    return path


def run_async(main):
    """anyio.run(main) on a thread of its own: a browser test's Playwright loop may be running on this one."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(anyio.run, main).result()


def _env(sessions: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATELIER_")}
    env.update(ATELIER_SESSIONS_DIR=str(sessions), PYTHONPATH=str(REPO), **extra)
    return env


def roots_of(*folders: Path):
    """A client's MCP roots callback declaring ``folders``."""
    async def list_roots(context) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=f.resolve().as_uri(), name=f.name) for f in folders])
    return list_roots


async def _call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    data = result.structured_content
    assert isinstance(data, dict) and data["tool"] == tool, result
    assert result.is_error == (not data["ok"])
    return data


async def _conversation(client: Client, photo: Path, out_dir: Path) -> str:
    """open -> edit -> review (modify, approve) -> rollback -> history -> export; returns the session id."""
    names = {t.name for t in (await client.list_tools()).tools}
    assert {"open_photo", "edit", "review", "history", "export", "get_defaults", "set_defaults",
            "generate_image", "regenerate", "list_skills", "apply_skill"} <= names

    opened = await _call(client, "open_photo", path=str(photo), review_mode="always")
    assert opened["ok"], opened
    sid = opened["data"]["session_id"]
    assert opened["data"]["width"] == 320

    turn = await _call(client, "edit", session_id=sid, message="make it warmer")
    assert turn["ok"] and turn["data"]["status"] == "awaiting_review"
    assert turn["data"]["sub_goals"][0]["op"] == "temperature" and turn["data"]["sub_goals"][0]["value"] > 0
    assert "base64" not in str(turn) and len(str(turn)) < 4000  # small, no inline pixels

    modified = await _call(client, "review", session_id=sid, action="modify", values={"saturation": -20})
    assert modified["ok"] and modified["data"]["status"] == "awaiting_review", modified
    kept = await _call(client, "review", session_id=sid, action="approve")
    assert kept["ok"] and kept["data"]["status"] == "approved"

    history = await _call(client, "history", session_id=sid)
    versions = history["data"]["versions"]
    head = [v for v in versions if v["is_head"]]
    assert len(head) == 1 and head[0]["settings"]["saturation"] == -20 and head[0]["settings"]["temperature"] > 0

    back = await _call(client, "review", session_id=sid, action="rollback", target=0)
    assert back["ok"] and back["data"]["status"] == "rolled_back"
    again = await _call(client, "review", session_id=sid, action="rollback", target=1)
    assert again["ok"] and again["data"]["head_asset_id"] == head[0]["asset_id"]

    exported = await _call(client, "export", session_id=sid, format="png", path=str(out_dir), long_side=160)
    assert exported["ok"], exported
    written = Path(exported["data"]["path"])
    assert written.parent == out_dir.resolve() and written.suffix == ".png"
    assert max(load_image(written.read_bytes()).pixels.shape[:2]) == 160

    # bad calls: ok false with the reason, nothing changes
    unknown = await _call(client, "edit", session_id="no-such-session", message="warmer")
    assert not unknown["ok"] and "session" in unknown["errors"][0]
    missing = await _call(client, "edit", session_id=sid)
    assert not missing["ok"] and missing["errors"] == ["message: required"]
    wrong = await _call(client, "export", session_id=sid, long_side="huge")
    assert not wrong["ok"] and wrong["errors"][0].startswith("long_side:")
    bad_action = await _call(client, "review", session_id=sid, action="delete")
    assert not bad_action["ok"] and "action" in bad_action["errors"][0]
    bad_value = await _call(client, "review", session_id=sid, action="modify", values={"saturation": 400})
    assert not bad_value["ok"] and "saturation" in bad_value["errors"][0]
    nothing = await _call(client, "review", session_id=sid, action="approve")
    assert not nothing["ok"] and "nothing is waiting" in nothing["errors"][0]
    no_file = await _call(client, "open_photo", path=str(photo.parent / "missing.jpg"))
    assert not no_file["ok"] and "missing.jpg" in no_file["errors"][0]
    defaults = await _call(client, "get_defaults")
    assert defaults["ok"] and "steps" in defaults["data"]["image"]
    gen = await _call(client, "generate_image", prompt="a red fox")   # no backend configured in the tests
    assert not gen["ok"] and "generation backend" in gen["errors"][0]
    bad_default = await _call(client, "set_defaults", image={"steps": "many"})
    assert not bad_default["ok"] and "steps" in bad_default["errors"][0]
    unknown_tool = await client.call_tool("crop_everything", {})
    assert unknown_tool.is_error and unknown_tool.structured_content["ok"] is False
    assert "unknown tool" in unknown_tool.structured_content["errors"][0]

    after = await _call(client, "history", session_id=sid)
    assert [v["asset_id"] for v in after["data"]["versions"] if v["is_head"]] == [head[0]["asset_id"]]
    assert [v["asset_id"] for v in after["data"]["versions"]] == [v["asset_id"] for v in versions]
    return sid


def _check_studio_sees(sessions: Path, sid: str) -> None:
    with Studio(sessions_dir=sessions) as studio:
        assert sid in [s.id for s in studio.list_sessions()]
        assert studio.session(sid).turns == 3  # the edit (modified, then approved), two rollbacks
        assert studio.head(sid).state["settings"]["saturation"] == -20


def test_stdio_client_drives_a_session(tmp_path, photo):
    sessions = tmp_path / "sessions"
    params = StdioServerParameters(command=sys.executable, args=["-m", "agent.mcp"], env=_env(sessions),
                                   cwd=str(REPO))

    async def main() -> str:
        async with Client(params, read_timeout_seconds=120, list_roots_callback=roots_of(tmp_path)) as client:
            return await _conversation(client, photo, tmp_path)

    sid = run_async(main)
    _check_studio_sees(sessions, sid)


def stop(proc: subprocess.Popen) -> None:
    """Stop a server the test launched: terminate, then kill if it does not go within 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the MCP server exited: {proc.stderr.read().decode()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the MCP server did not start listening")


def test_streamable_http_client_drives_a_session(tmp_path, photo):
    sessions = tmp_path / "sessions"
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agent.mcp", "--http", "--host", "127.0.0.1", "--port", str(port)],
                            cwd=REPO, env=_env(sessions, ATELIER_MCP_ROOTS=str(tmp_path)), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, proc)

        async def main() -> str:
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as client:
                return await _conversation(client, photo, tmp_path)

        sid = run_async(main)
    finally:
        stop(proc)
    _check_studio_sees(sessions, sid)
