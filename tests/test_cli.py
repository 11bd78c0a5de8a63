"""The CLI end to end in a subprocess (embedded planner and judge, real SQLite), and its command parser."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.interfaces.cli import CommandError, parse_command
from conftest import small_photo

REPO = Path(__file__).resolve().parents[1]


def _cli(args, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATELIER_")}
    env.update(ATELIER_SESSIONS_DIR=str(tmp_path / "sessions"), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "agent.cli", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def photo_file(tmp_path):
    from pipeline.imageio import save_image

    return save_image(small_photo("astronaut"), tmp_path / "astronaut.png")


def test_parse_command():
    assert parse_command("make it warmer") == ("say", {"text": "make it warmer"})
    assert parse_command("/approve") == ("approve", {})
    assert parse_command("/rollback 1") == ("rollback", {"target": 1})
    assert parse_command("/rollback 3f2a9c") == ("rollback", {"target": "3f2a9c"})
    assert parse_command("/replan gentler please") == ("replan", {"feedback": "gentler please"})
    assert parse_command("/modify saturation=-20 contrast=15") == ("modify", {"values": {"saturation": -20, "contrast": 15}})
    assert parse_command("/undo") == ("undo", {}) and parse_command("/redo") == ("redo", {})
    assert parse_command("/export png") == ("export", {"fmt": "png"})
    for bad in ("/modify saturation", "/modify saturation=lots", "/rollback", "/frobnicate", "/export gif"):
        with pytest.raises(CommandError):
            parse_command(bad)


def test_bad_input_exits_2_with_a_message(tmp_path):
    missing = _cli(["nope.jpg", "--say", "warmer"], tmp_path)
    assert missing.returncode == 2 and "nope.jpg" in missing.stderr
    malformed = _cli([str(tmp_path), "--session", "x", "--say", "/modify saturation"], tmp_path)
    assert malformed.returncode == 2 and "op=" in malformed.stderr


def test_a_scripted_session_prints_one_json_object_per_turn(tmp_path, photo_file):
    run = _cli([str(photo_file), "--auto-approve", "--json",
                "--say", "make it warmer and brighter",
                "--say", "/approve",  # already kept: a note, not a turn
                "--say", "more contrast",
                "--say", "/rollback 1",
                "--say", "/modify saturation=-20"], tmp_path)
    assert run.returncode == 0, run.stderr
    turns = [json.loads(line) for line in run.stdout.splitlines()]
    assert [t["turn"] for t in turns] == [1, 2, 3, 4]
    assert "nothing is waiting for review" in run.stderr
    first, second, rollback, modify = turns
    assert first["status"] == "auto_approved"
    moved = {g["op"]: g["value"] for g in first["sub_goals"]}
    assert moved.get("temperature", 0) > 0 and moved.get("exposure", 0) > 0
    assert Path(first["rendered_path"]).is_file()
    assert any(g["op"] == "contrast" and g["value"] > 0 for g in second["sub_goals"])
    assert rollback["status"] == "rolled_back" and rollback["head_asset_id"] == first["asset_id"]
    assert modify["sub_goals"][-1]["op"] == "saturation" and modify["sub_goals"][-1]["value"] == -20
    session_id = first["session_id"]

    # --session continues the same session (IMAGE may be left out)
    more = _cli(["--session", session_id, "--json", "--say", "/rollback 1"], tmp_path)
    assert more.returncode == 0, more.stderr
    assert json.loads(more.stdout.splitlines()[0])["turn"] == 5
    readable = _cli(["--session", session_id, "--say", "/modify contrast=10"], tmp_path)
    assert readable.returncode == 0, readable.stderr
    assert "[T6 auto_approved]" in readable.stdout and "contrast to 10" in readable.stdout
    unknown = _cli(["--session", "no-such-session", "--say", "warmer"], tmp_path)
    assert unknown.returncode == 2 and "no session" in unknown.stderr


def test_quick_replies_are_numbered_and_picked_by_number(tmp_path, photo_file):
    run = _cli([str(photo_file), "--auto-approve", "--json",
                "--say", "a bit more",            # nothing to refer to yet: a question with quick replies
                "--say", "1",                     # pick the first: "Brighter"
                "--say", "undo", "--say", "/redo", "--say", "hello",
                "--export", "png"], tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    turns = [json.loads(line) for line in lines if line.startswith("{")]
    ask, picked, undo, redo, hello = turns
    assert ask["kind"] == "clarify" and ask["quick_replies"] and ask["asset_id"] is None
    assert picked["kind"] == "edit" and any(g["op"] == "exposure" and g["value"] > 0 for g in picked["sub_goals"])
    assert undo["status"] == "rolled_back" and redo["head_asset_id"] == picked["asset_id"]
    assert hello["kind"] == "chat" and hello["status"] == "answered"
    exported = [l for l in lines if l.startswith("exported: ")]
    assert exported and Path(exported[0].split(": ", 1)[1]).suffix == ".png"
    readable = _cli(["--session", picked["session_id"], "--say", "what would you change?"], tmp_path)
    assert readable.returncode == 0 and "  1) " in readable.stdout
