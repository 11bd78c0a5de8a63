"""Keep talking during review, live slider previews and slider versions (Studio.preview / set_values).

Real Studio on a real SQLite file with the scripted planner and judge from conftest.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from agent.service import InvalidInput
from agent.service.renders import VIEW_QUALITY
from conftest import ScriptedJudge, ScriptedPlanner, small_photo


def test_a_message_during_review_keeps_that_version_and_goes_on(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    first = studio.send_message(info.id, "temperature+25")
    assert first.status == "awaiting_review"
    second = studio.send_message(info.id, "exposure+10")
    assert second.status == "awaiting_review" and second.turn == first.turn + 1
    history = {a.id: a for a in studio.history(info.id)}
    # the version that was under review was kept, and the new turn starts from it
    assert history[first.asset_id].status == "approved"
    assert history[first.asset_id].is_head
    assert history[second.asset_id].parent_id == first.asset_id
    assert history[second.asset_id].state["settings"] == {"temperature": 25, "exposure": 10}
    assert studio.pending_review(info.id).asset_id == second.asset_id
    # the review panel stays for explicit actions on the new turn
    assert studio.review(info.id, "approve").head_asset_id == second.asset_id


def test_preview_renders_the_values_without_recording(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.95]))
    info = studio.start_session(photo)
    kept = studio.send_message(info.id, "exposure+20")
    before = [a.id for a in studio.history(info.id)]
    path = studio.preview(info.id, {"exposure": 60})
    assert path.exists() and path.suffix == ".jpg"
    shown = np.asarray(Image.open(path).convert("RGB"), dtype=float)
    brighter = studio.render(info.id, kept.asset_id).astype(float)
    assert shown.shape == brighter.shape
    assert shown.mean() > brighter.mean() + 5          # +60 is visibly brighter than the kept +20
    assert [a.id for a in studio.history(info.id)] == before   # nothing recorded
    assert studio.session(info.id).turns == 1
    # a live frame is a draft; the version the sliders record is rendered exactly
    recorded = studio.set_values(info.id, {"exposure": 60})
    buffer = io.BytesIO()
    Image.fromarray(studio.render(info.id, recorded.asset_id)).save(buffer, "JPEG", quality=VIEW_QUALITY)
    exact = np.asarray(Image.open(buffer).convert("RGB"), dtype=float)
    assert np.abs(shown - exact).mean() < 1.5                # the same picture (a draft) through the same JPEG
    before = [a.id for a in studio.history(info.id)]
    studio.undo(info.id)
    # the same values give the same file; bad values say which op and change nothing
    assert studio.preview(info.id, {"exposure": 60}) == path
    with pytest.raises(InvalidInput, match="exposure"):
        studio.preview(info.id, {"exposure": 400})
    with pytest.raises(InvalidInput, match="no local layer"):
        studio.preview(info.id, {}, layers={3: {"exposure": 10}})
    assert [a.id for a in studio.history(info.id)] == before


def test_set_values_records_a_version_without_the_planner(make_studio):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.95]))
    info = studio.start_session(small_photo("rocket"))          # a photo with a sky
    studio.send_message(info.id, "contrast+30 exposure+20@sky")
    previous = studio.render(info.id).astype(int)
    asked = len(planner.requests)
    preview = np.asarray(Image.open(studio.preview(info.id, {"contrast": 10}, layers={0: {"exposure": -40}})))
    r = studio.set_values(info.id, {"contrast": 10}, layers={0: {"exposure": -40}})
    assert len(planner.requests) == asked                      # no planner
    assert r.status == "auto_approved" and r.head_asset_id == r.asset_id
    head = studio.head(info.id)
    assert head.state["settings"] == {"contrast": 10}
    assert head.state["layers"][0]["settings"] == {"exposure": -40}
    assert head.state["layers"][0]["mask"] == {"type": "sky"}
    # the preview showed what was recorded (same state, same render, up to JPEG encoding)
    recorded = studio.render(info.id).astype(int)
    assert np.abs(preview.astype(int) - recorded).mean() < 0.3 * np.abs(preview.astype(int) - previous).mean()
    # same values again: nothing to record, the session is unchanged
    turns = studio.session(info.id).turns
    with pytest.raises(InvalidInput, match="already"):
        studio.set_values(info.id, {"contrast": 10})
    with pytest.raises(InvalidInput, match="contrast"):
        studio.set_values(info.id, {"contrast": 101})
    assert studio.session(info.id).turns == turns


def test_set_values_during_review_modifies_that_turn(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "temperature+25 saturation+20")
    m = studio.set_values(info.id, {"saturation": -10})
    assert m.status == "awaiting_review" and m.turn == r.turn
    pending = studio.pending_review(info.id)
    assert pending.asset_id == m.asset_id
    assert {o["name"]: o["value"] for o in pending.ops} == {"temperature": 25, "saturation": -10}
    assert studio.review(info.id, "approve").head_asset_id == m.asset_id


def test_a_preview_never_waits_for_a_turn_in_progress(make_studio, photo):
    """A drag right after a release: the release's version is still being recorded (the session's lock is
    held), and the new position shows all the same."""
    import threading

    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.95]))
    info = studio.start_session(photo)
    holding, done, released = threading.Event(), threading.Event(), threading.Event()

    def busy_turn():
        with studio.leases.lock(info.id):
            holding.set()
            done.wait(20)           # the turn ends when the preview came back (or after 20 s, so nothing hangs)
        released.set()

    worker = threading.Thread(target=busy_turn)
    worker.start()
    holding.wait(30)
    try:
        path = studio.preview(info.id, {"exposure": 40})
        assert not released.is_set() and path.exists()   # shown while the turn still held the session
    finally:
        done.set()
        worker.join()
