"""Studio.undo / Studio.redo: bit-exact steps along the head path that survive a restart.

Real SQLite file, real renderer, a real skimage photo; scripted planner and judge injected.
"""

from __future__ import annotations

import pytest

from agent.service import InvalidInput
from conftest import ScriptedJudge, ScriptedPlanner


def test_undo_then_redo_is_bit_exact_and_survives_a_restart(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    original = studio.render(info.id).tobytes()
    t1 = studio.send_message(info.id, "temperature+20 exposure+10")
    t1_pixels = studio.render(info.id).tobytes()
    t2 = studio.send_message(info.id, "contrast+40 saturation-30")
    t2_pixels = studio.render(info.id).tobytes()
    assert t2_pixels != t1_pixels

    u = studio.undo(info.id)
    assert u.status == "rolled_back" and u.kind == "command" and u.head_asset_id == t1.asset_id
    assert "redo" in u.reply.lower()
    assert studio.render(info.id).tobytes() == t1_pixels
    u2 = studio.undo(info.id)
    assert u2.head_asset_id == info.head_asset_id
    assert studio.render(info.id).tobytes() == original
    with pytest.raises(InvalidInput, match="nothing to undo"):
        studio.undo(info.id)
    assert studio.head(info.id).id == info.head_asset_id  # unchanged by the refusal
    studio.close()

    # a new Studio (a restart) still knows what the undos stepped away from
    again = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    r1 = again.redo(info.id)
    assert r1.head_asset_id == t1.asset_id and r1.kind == "command"
    assert again.render(info.id).tobytes() == t1_pixels
    r2 = again.redo(info.id)
    assert r2.head_asset_id == t2.asset_id
    assert again.render(info.id).tobytes() == t2_pixels
    turns_before = again.session(info.id).turns
    with pytest.raises(InvalidInput, match="nothing to redo"):
        again.redo(info.id)
    assert again.session(info.id).turns == turns_before and again.head(info.id).id == t2.asset_id


def test_a_new_edit_after_undo_leaves_nothing_to_redo(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "temperature+20")
    t2 = studio.send_message(info.id, "exposure+15")
    studio.undo(info.id)
    t4 = studio.send_message(info.id, "saturation-20")
    with pytest.raises(InvalidInput, match="nothing to redo"):
        studio.redo(info.id)
    assert studio.head(info.id).id == t4.asset_id
    # undo the new edit: redo brings back the new edit, not the abandoned one
    studio.undo(info.id)
    assert studio.redo(info.id).head_asset_id == t4.asset_id
    assert t2.asset_id != t4.asset_id


def test_undo_is_refused_while_a_turn_waits_for_review(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.5]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "temperature+20")
    with pytest.raises(InvalidInput, match="waiting for your review"):
        studio.undo(info.id)
    assert studio.pending_review(info.id) is not None


def test_undo_reports_progress_once(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "temperature+20")
    events = []
    studio.undo(info.id, progress=events.append)
    assert [e["stage"] for e in events] == ["finish"] and events[0]["fraction"] == 1.0
