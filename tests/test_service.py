"""The session API: review actions, rollback, restart, concurrency, tokens, uploads, a killed turn.

Every test runs twice: on a real SQLite file under tmp_path and on a fresh
database of a throwaway PostgreSQL cluster on 127.0.0.1 (conftest). The real
renderer and a real photo; the planner and judge are scripted and injected
(no patching).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from agent.service import InvalidInput, SessionNotFound
from conftest import BACKENDS, ScriptedJudge, ScriptedPlanner, backend_url, small_photo

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return backend_url(request.param, request, tmp_path)


def test_approve_keeps_the_version_under_review(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "temperature+25")
    thread = {"configurable": {"thread_id": studio.store.get_session(info.id).active_thread}}
    assert studio.graph.get_state(thread).interrupts
    done = studio.review(info.id, "approve")
    assert done.status == "approved" and done.head_asset_id == r.asset_id
    assert studio.graph.get_state(thread).values == {}  # a finished turn's checkpoints are dropped
    assert studio.head(info.id).status == "approved"
    assert studio.pending_review(info.id) is None
    assert studio.session(info.id).turns == 1


def test_modify_sets_slider_values_without_the_planner(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "contrast+30 saturation+40")
    calls = len(planner.requests)
    before = studio.render(info.id, r.asset_id)
    m = studio.review(info.id, "modify", values={"saturation": -20})
    assert len(planner.requests) == calls  # the planner was not asked
    assert m.status == "awaiting_review" and m.asset_id != r.asset_id
    candidate = next(a for a in studio.history(info.id) if a.id == m.asset_id)
    assert candidate.state["settings"] == {"contrast": 30, "saturation": -20}
    after = studio.render(info.id, m.asset_id)
    # less saturated than the planner's version: a person sees the colours drop
    assert np.std(after.astype(int), axis=2).mean() < np.std(before.astype(int), axis=2).mean()
    assert {o["name"]: o["value"] for o in m.review.ops}["saturation"] == -20
    with pytest.raises(InvalidInput, match="saturation"):
        studio.review(info.id, "modify", values={"saturation": 250})
    assert studio.pending_review(info.id).asset_id == m.asset_id  # unchanged by the bad request
    assert studio.review(info.id, "approve").head_asset_id == m.asset_id


def test_modify_without_a_pending_review_is_a_turn_of_its_own(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "contrast+20")
    r = studio.review(info.id, "modify", values={"saturation": -20})
    assert len(planner.requests) == 1
    assert r.status == "auto_approved"
    assert studio.head(info.id).state["settings"] == {"contrast": 20, "saturation": -20}


def test_rollback_is_bit_exact_and_keeps_the_branch(make_studio, photo, tmp_path):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    t1 = studio.send_message(info.id, "temperature+20 exposure+10")
    t1_pixels = studio.render(info.id, t1.asset_id).tobytes()
    t1_file = Path(t1.rendered_path).read_bytes()
    t2 = studio.send_message(info.id, "contrast+40 saturation-30")
    assert studio.render(info.id).tobytes() != t1_pixels
    r = studio.review(info.id, "rollback", target=1)
    assert r.status == "rolled_back" and r.head_asset_id == t1.asset_id
    history = {a.id: a for a in studio.history(info.id)}
    assert history[t2.asset_id].on_head_path is False and history[t2.asset_id].status == "auto_approved"
    assert history[t1.asset_id].is_head
    studio.close()
    # a fresh Studio (cold caches) re-renders the ancestor's state: the very same bytes
    again = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    assert again.render(info.id).tobytes() == t1_pixels
    assert Path(again.render_path(info.id)).read_bytes() == t1_file
    # the next turn grows from the rolled-back version
    t4 = again.send_message(info.id, "shadows+15")
    assert next(a for a in again.history(info.id) if a.id == t4.asset_id).parent_id == t1.asset_id
    with pytest.raises(InvalidInput, match="turn 3"):
        again.review(info.id, "rollback", target=3)  # the rollback turn made no version


def test_rollback_during_review_ends_the_turn(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9, 0.7]))
    info = studio.start_session(photo)
    t1 = studio.send_message(info.id, "exposure+15")
    t2 = studio.send_message(info.id, "contrast+25")
    assert t2.status == "awaiting_review"
    r = studio.review(info.id, "rollback", target=info.head_asset_id)
    assert r.status == "rolled_back" and r.head_asset_id == info.head_asset_id
    assert studio.pending_review(info.id) is None
    statuses = {a.id: a.status for a in studio.history(info.id)}
    assert statuses[t2.asset_id] == "rejected" and statuses[t1.asset_id] == "auto_approved"


def test_replan_feedback_reaches_the_planner(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.7, 0.9]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "saturation+50")
    r = studio.review(info.id, "replan", feedback="too garish, go gentler")
    assert "too garish, go gentler" in planner.requests[-1].feedback
    assert planner.requests[-1].message == "saturation+50"
    assert r.status == "auto_approved"
    with pytest.raises(InvalidInput, match="nothing is waiting"):
        studio.review(info.id, "replan", feedback="again")


def test_a_restarted_studio_resumes_a_pending_review(make_studio, photo):
    first = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = first.start_session(photo, filename="astronaut.png")
    pending = first.send_message(info.id, "temperature-30")
    first.close()
    second = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    assert [s.id for s in second.list_sessions()] == [info.id]
    review = second.pending_review(info.id)
    assert review is not None and review.asset_id == pending.asset_id
    assert any("Waiting for your review" in m["content"] for m in second.chat_log(info.id))
    done = second.review(info.id, "approve")
    assert done.status == "approved" and second.head(info.id).id == pending.asset_id
    assert second.chat_log(info.id)[0] == {"role": "user", "content": "temperature-30"}


def test_two_sessions_in_threads_never_mix(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    sessions = {"warm": studio.start_session(photo), "cool": studio.start_session(small_photo("coffee"))}
    errors = []

    def work(kind, session_id):
        try:
            for _ in range(4):
                studio.send_message(session_id, "temperature+10" if kind == "warm" else "temperature-10")
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k, s.id)) for k, s in sessions.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert studio.head(sessions["warm"].id).state["settings"] == {"temperature": 40}
    assert studio.head(sessions["cool"].id).state["settings"] == {"temperature": -40}
    for kind, info in sessions.items():
        turns = [m["content"] for m in studio.chat_log(info.id) if m["role"] == "user"]
        assert turns == ["temperature+10" if kind == "warm" else "temperature-10"] * 4
    assert studio.render(sessions["cool"].id).shape != studio.render(sessions["warm"].id).shape


def test_resume_tokens_are_validated(make_studio, photo):
    studio = make_studio()
    info = studio.start_session(photo)
    assert len(info.resume_token) >= 40 and info.resume_token != info.id
    assert studio.resume(info.resume_token).id == info.id
    for bad in ("x" * 43, info.id, "", "../../etc/passwd", None):
        with pytest.raises(SessionNotFound):
            studio.resume(bad)
    with pytest.raises(SessionNotFound):
        studio.session("no-such-session")


@pytest.mark.parametrize("upload", [b"this is not an image", b"", np.zeros((10, 10), np.uint8), "missing.jpg"])
def test_a_bad_upload_is_refused_and_creates_nothing(make_studio, upload, tmp_path):
    studio = make_studio()
    with pytest.raises(InvalidInput):
        studio.start_session(str(tmp_path / upload) if isinstance(upload, str) else upload)
    assert studio.list_sessions() == []
    assert [p for p in (tmp_path / "sessions").iterdir() if p.is_dir()] == []


def test_bad_requests_say_what_is_wrong(make_studio, photo):
    studio = make_studio()
    info = studio.start_session(photo)
    with pytest.raises(InvalidInput, match="say what"):
        studio.send_message(info.id, "   ")
    with pytest.raises(InvalidInput, match="review_mode"):
        studio.start_session(photo, review_mode="sometimes")
    with pytest.raises(InvalidInput, match="action"):
        studio.review(info.id, "undo")
    with pytest.raises(InvalidInput, match="fmt"):
        studio.export(info.id, fmt="bmp")


def test_upload_is_stored_untouched_and_export_is_full_resolution(make_studio, tmp_path):
    from pipeline.imageio import encode_image, load_image

    big = small_photo("chelsea", long_side=600)
    data = encode_image(big, "jpeg", quality=90)
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(data, filename="cat.jpg")
    assert (info.title, info.width, info.height) == ("cat.jpg", big.shape[1], big.shape[0])
    stored = studio.store.original_file(studio.store.get_session(info.id))
    assert stored.read_bytes() == data  # byte for byte
    studio.send_message(info.id, "exposure+20")
    exported = studio.export(info.id, fmt="png")
    pixels = load_image(exported).pixels
    assert pixels.shape == big.shape
    assert np.array_equal(pixels, studio.render(info.id, long_side=None))
    small = studio.render(info.id, long_side=200)
    assert max(small.shape[:2]) == 200
    assert studio.original_path(info.id, long_side=300).is_file()


def test_the_session_style_reaches_the_planner_every_turn(make_studio, photo):
    class StylePlanner(ScriptedPlanner):
        def styles(self):
            return ["film", "airy"]

    planner = StylePlanner()
    studio = make_studio(planner, ScriptedJudge([0.9]))
    assert studio.styles() == ["film", "airy"]
    with pytest.raises(InvalidInput, match="film"):
        studio.start_session(photo, style="neon")
    info = studio.start_session(photo, style="film")
    studio.send_message(info.id, "exposure+5")
    studio.send_message(info.id, "contrast+5")
    assert [r.style for r in planner.requests] == ["film", "film"]
    assert [r.turn for r in planner.requests] == [1, 2]


_KILLED_TURN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path[:0] = [{repo!r}, {tests!r}]
    from conftest import ScriptedPlanner
    from agent.service import Studio
    from agent.judging.base import Assessment

    class StuckJudge:
        name = "stuck"
        def assess(self, request):
            Path({marker!r}).write_text("judging")
            time.sleep(60)

    studio = Studio(database_url={url!r}, sessions_dir={sessions!r}, planner=ScriptedPlanner(), judge=StuckJudge())
    studio.send_message({sid!r}, "contrast+40")
""")


def test_a_killed_turn_is_lost_cleanly_and_the_session_resumes(make_studio, photo, tmp_path, database_url):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    kept = studio.send_message(info.id, "exposure+10")
    studio.close()
    marker = tmp_path / "judging"
    script = _KILLED_TURN.format(repo=str(REPO), tests=str(REPO / "tests"), marker=str(marker),
                                 url=database_url, sessions=str(tmp_path / "sessions"),
                                 sid=info.id)
    proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 60
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), "the subprocess never reached the judge"
    proc.kill()  # mid-turn: the candidate version and its file are written, the turn is not finished
    proc.wait()
    renders = tmp_path / "sessions" / info.id / "renders"
    assert len(list(renders.iterdir())) == 2  # the kept version's proxy + the killed turn's

    again = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    assert again.session(info.id).turns == 1
    assert again.pending_review(info.id) is None
    history = again.history(info.id)
    assert [a.id for a in history] == [info.head_asset_id, kept.asset_id]  # no duplicate, no stray version
    assert again.head(info.id).id == kept.asset_id
    assert sorted(p.name.split("-")[0] for p in renders.iterdir()) == [kept.asset_id]  # no orphaned file
    nxt = again.send_message(info.id, "contrast+40")
    assert nxt.status == "auto_approved" and nxt.turn == 2


def test_an_upload_finds_faces_subject_and_sky_in_the_background(make_studio, photo):
    from pipeline.render import WARM_CONTENT

    from agent.planning.embedded import EmbeddedPlanner

    from pipeline.masks import content_key

    studio = make_studio(planner=EmbeddedPlanner())
    info = studio.start_session(photo)
    digest = studio.sources.get(info.id).digest
    keys = [content_key(digest, {"type": kind}) for kind in WARM_CONTENT]
    deadline = time.monotonic() + 60
    while not all(k in studio.renderer.masks for k in keys) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(k in studio.renderer.masks for k in keys)
    result = studio.send_message(info.id, "brighten her face")   # the turn reads the faces found at upload
    assert [g["target"]["type"] for g in result.sub_goals] == ["face"]
    assert studio.renderer.masks.stats()["computed"] == 0

    quiet = make_studio(warm_on_upload=False)
    quiet.start_session(photo)
    assert not quiet.sources.warming and quiet.renderer.masks.stats()["computed"] == 0


def test_rollback_to_a_version_id_made_only_of_digits_is_that_version(make_studio, photo, monkeypatch):
    """Version ids are 16 random hex digits; about one in 2,000 has no letter. Such an id names that version,
    not a turn with that number (the eval once rolled back to "9250113213454844" and was told no such turn)."""
    import itertools
    import agent.loop.nodes
    import agent.store
    numbers = itertools.count(9250113213454844)
    for module in (agent.store, agent.loop.nodes):                   # every id digits only
        monkeypatch.setattr(module, "new_id", lambda: str(next(numbers)))
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    t1 = studio.send_message(info.id, "temperature+20 exposure+10")
    assert t1.asset_id.isdigit()
    studio.send_message(info.id, "contrast+40")
    r = studio.review(info.id, "rollback", target=t1.asset_id)
    assert r.status == "rolled_back" and r.head_asset_id == t1.asset_id
    with pytest.raises(InvalidInput, match="turn 7"):
        studio.review(info.id, "rollback", target="7")      # digits that name no version are a turn number
