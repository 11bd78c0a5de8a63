"""Several app processes (replicas) on one database: the session lease, on SQLite and PostgreSQL.

Two Studio instances in one process, and two real processes, share one
database and one sessions folder. A session's turns never run in two places
at once; a replica that finds the session busy waits briefly, then answers
"busy, try again"; a turn whose process stopped is recovered once its lease
expires; nothing kept is lost.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agent.config import load_config
from agent.errors import SessionBusy
from agent.service import Studio
from conftest import BACKENDS, ScriptedJudge, ScriptedPlanner, backend_url, plan_from_text

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(params=BACKENDS)
def database_url(request, tmp_path):
    return backend_url(request.param, request, tmp_path)


class SlowPlanner(ScriptedPlanner):
    """Takes a while to plan and records how many turns were planning at the same moment."""

    def __init__(self, shared: dict, seconds: float = 0.4):
        super().__init__()
        self.shared, self.seconds = shared, seconds

    def plan(self, request):
        with self.shared["lock"]:
            self.shared["now"] += 1
            self.shared["most"] = max(self.shared["most"], self.shared["now"])
        time.sleep(self.seconds)
        with self.shared["lock"]:
            self.shared["now"] -= 1
        return plan_from_text(request.message)


def replicas(database_url, tmp_path, shared, **overrides):
    config = load_config().with_overrides(**overrides)
    return [Studio(database_url=database_url, sessions_dir=tmp_path / "sessions", planner=SlowPlanner(shared),
                   judge=ScriptedJudge([0.95]), config=config) for _ in range(2)]


def test_two_replicas_take_turns_on_one_session(database_url, tmp_path, photo):
    shared = {"lock": threading.Lock(), "now": 0, "most": 0}
    a, b = replicas(database_url, tmp_path, shared, lease_wait_s=10, review_mode="never")
    try:
        session = a.start_session(photo)
        errors, results = [], []

        def turn(studio, text):
            try:
                results.append(studio.send_message(session.id, text))
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=turn, args=(s, t)) for s, t in
                   ((a, "exposure+10"), (b, "contrast+20"), (a, "saturation+5"), (b, "tint+4"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors and shared["most"] == 1            # never two turns of one session at once
        assert sorted(r.turn for r in results) == [1, 2, 3, 4]
        assert all(r.status == "auto_approved" for r in results)
        for studio in (a, b):                                 # both replicas see the same session
            assert studio.head(session.id).state["settings"] == {"exposure": 10, "contrast": 20,
                                                                 "saturation": 5, "tint": 4}
        assert a.store.lease_of(session.id) == (None, None)   # released after the last turn
    finally:
        a.close()
        b.close()


def test_a_busy_session_answers_busy_retry_and_stays_unchanged(database_url, tmp_path, photo):
    shared = {"lock": threading.Lock(), "now": 0, "most": 0}
    a, b = replicas(database_url, tmp_path, shared, lease_wait_s=0.2, review_mode="never")
    try:
        session = a.start_session(photo)
        a_turn = threading.Thread(target=a.send_message, args=(session.id, "exposure+10"))
        a_turn.start()
        while shared["now"] == 0:
            time.sleep(0.01)
        with pytest.raises(SessionBusy, match="busy with a turn on another server; try again"):
            b.send_message(session.id, "contrast+20")
        a_turn.join()
        assert b.session(session.id).turns == 1
        assert b.head(session.id).state["settings"] == {"exposure": 10}
        retry = b.send_message(session.id, "contrast+20")   # ... and a retry goes through
        assert retry.turn == 2 and b.head(session.id).state["settings"] == {"exposure": 10, "contrast": 20}
    finally:
        a.close()
        b.close()


_REPLICA = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path[:0] = [{repo!r}, {tests!r}]
    from conftest import ScriptedPlanner
    from agent.config import load_config
    from agent.service import Studio

    class StuckJudge:
        name = "stuck"
        def assess(self, request):
            Path({marker!r}).write_text("judging")
            time.sleep(120)

    config = load_config().with_overrides(lease_ttl_s={ttl}, review_mode="never")
    studio = Studio(database_url={url!r}, sessions_dir={sessions!r}, planner=ScriptedPlanner(),
                    judge=StuckJudge(), config=config)
    studio.send_message({sid!r}, "contrast+40")
""")


def test_a_stopped_replica_loses_its_lease_and_its_turn_is_recovered(database_url, tmp_path, photo):
    config = load_config().with_overrides(lease_ttl_s=1.5, lease_wait_s=0.3, review_mode="never")
    studio = Studio(database_url=database_url, sessions_dir=tmp_path / "sessions", planner=ScriptedPlanner(),
                    judge=ScriptedJudge([0.95]), config=config)
    proc = None
    try:
        session = studio.start_session(photo)
        kept = studio.send_message(session.id, "exposure+10")
        marker = tmp_path / "judging"
        script = _REPLICA.format(repo=str(REPO), tests=str(REPO / "tests"), marker=str(marker), url=database_url,
                                 sessions=str(tmp_path / "sessions"), sid=session.id, ttl=1.5)
        proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 90
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists(), "the other replica never reached the judge"

        # The other process is alive and renewing its lease: this replica waits briefly, then says busy.
        with pytest.raises(SessionBusy):
            studio.send_message(session.id, "saturation+5")
        assert studio.store.lease_of(session.id)[0].split(":")[1] == str(proc.pid)

        os.kill(proc.pid, signal.SIGSTOP)   # frozen (a hung VM): no more heartbeats, the lease runs out
        time.sleep(1.6)
        after = studio.send_message(session.id, "saturation+5")
        assert after.status == "auto_approved" and after.turn == 2
        history = studio.history(session.id)
        assert [a.turn for a in history] == [0, 1, 2]          # the stopped turn's candidate is gone
        assert studio.head(session.id).state["settings"] == {"exposure": 10, "saturation": 5}
        assert [m["content"] for m in studio.chat_log(session.id) if m["role"] == "user"] == \
            ["exposure+10", "saturation+5"]
        assert kept.asset_id in [a.id for a in history]
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        studio.close()


def test_a_killed_replica_is_recognised_at_once_on_the_same_machine(database_url, tmp_path, photo):
    """No need to wait for the lease to run out when its owner is a dead process of this machine."""
    config = load_config().with_overrides(lease_ttl_s=600, lease_wait_s=0.3, review_mode="never")
    studio = Studio(database_url=database_url, sessions_dir=tmp_path / "sessions", planner=ScriptedPlanner(),
                    judge=ScriptedJudge([0.95]), config=config)
    try:
        session = studio.start_session(photo)
        marker = tmp_path / "judging"
        script = _REPLICA.format(repo=str(REPO), tests=str(REPO / "tests"), marker=str(marker), url=database_url,
                                 sessions=str(tmp_path / "sessions"), sid=session.id, ttl=600)
        proc = subprocess.Popen([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(REPO)})
        deadline = time.monotonic() + 90
        while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists()
        assert studio.store.lease_of(session.id)[1] > time.time() + 500   # its lease has long to run
        proc.kill()
        proc.wait()
        start = time.monotonic()
        after = studio.send_message(session.id, "saturation+5")
        assert time.monotonic() - start < 5 and after.turn == 1
        assert [a.turn for a in studio.history(session.id)] == [0, 1]
    finally:
        studio.close()
