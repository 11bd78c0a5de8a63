"""Hostile model endpoints, played by a real HTTP server on 127.0.0.1 (tests/fake_openai_server.py).

- A trickle: headers at once, then one byte every half second. No single read ever waits long, so
  only a wall-clock bound ends the turn: it must end at the turn deadline, open the circuit, and two
  such turns at once must not stop the studio serving other people.
- An echo: a 400 whose message repeats the caller's request headers, ``Authorization: Bearer <key>``
  included. The key must appear nowhere: not in the turn's warnings, the database files, a full
  trace, the logs, or ``repr()`` of the settings.

The Studio is configured from ``ATELIER_VLM_*`` as ``python app.py`` would be; the deadline is set
small through the config so the tests stay quick (docs/security.md has the figure with the default).
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

import pytest

from agent.config import load_config
from agent.service import Studio
from agent.model.vlm import VLMSettings
from fake_openai_server import FakeOpenAIServer, Reply

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
PLAN = {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}
KEY = "sk-atelier-test-0123456789abcdefSECRET"


@pytest.fixture
def studio_for(tmp_path, monkeypatch):
    made = []

    def make(base_url: str, **vlm):
        monkeypatch.setenv("ATELIER_VLM_BASE_URL", base_url)
        monkeypatch.setenv("ATELIER_VLM_MODEL", MODEL)
        monkeypatch.setenv("ATELIER_VLM_API_KEY", KEY)
        limits = {"timeout_s": 60, "max_retries": 2, "turn_deadline_s": 2, "repair_attempts": 1,
                  "circuit_cooldown_s": 60, **vlm}
        studio = Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
                        config=load_config().with_overrides(vlm=limits))
        made.append(studio)
        return studio

    yield make
    for s in made:
        s.close()


def test_a_trickling_endpoint_ends_the_turn_at_the_deadline_and_opens_the_circuit(studio_for, photo):
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.trickle(PLAN, every_s=0.5)   # the whole answer would take minutes
        studio = studio_for(server.base_url)
        session = studio.start_session(photo, review_mode="never")
        start = time.monotonic()
        first = studio.send_message(session.id, "make it warmer")
        took = time.monotonic() - start
        assert took < 2 + 10, took             # the 2 s deadline (plus the render), not the trickle's minutes
        told = " ".join(first.warnings)
        assert "2 s deadline" in told and "built-in planner planned it instead" in told
        assert first.status == "auto_approved" and first.sub_goals   # the person still got the edit
        assert studio.model_status()["state"] == "fallback"          # the circuit is open
        sent = len(server.requests)
        later = studio.send_message(session.id, "a bit brighter")
        assert later.status == "auto_approved" and len(server.requests) == sent   # no call while it rests


def test_two_trickling_turns_leave_the_studio_serving_others(studio_for, photo):
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.trickle(PLAN, every_s=0.5)
        studio = studio_for(server.base_url, turn_deadline_s=6)
        sessions = [studio.start_session(photo, review_mode="never") for _ in range(2)]
        ended: dict[int, float] = {}
        results = {}

        def turn(i: int) -> None:
            results[i] = studio.send_message(sessions[i].id, "make it warmer")
            ended[i] = time.monotonic()

        threads = [threading.Thread(target=turn, args=(i,)) for i in range(2)]
        start = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(0.5)
        # someone else arrives while both turns wait on the trickle: their photo opens, their history reads
        other = studio.start_session(photo, review_mode="never")
        assert [a.turn for a in studio.history(other.id)] == [0]
        served_at = time.monotonic()
        for t in threads:
            t.join(timeout=30)
        assert not any(t.is_alive() for t in threads), "a trickling turn outlived its deadline"
        assert served_at < min(ended.values())              # served during the trickle, not after it
        assert max(ended.values()) - start < 6 + 10          # both ended at the deadline, not the trickle's minutes
        assert all(r.status == "auto_approved" and r.sub_goals for r in results.values())
        # and after them the studio answers from the built-in planner without calling the model (circuit open)
        sent = len(server.requests)
        after = studio.send_message(other.id, "make it warmer")
        assert after.status == "auto_approved" and after.sub_goals and len(server.requests) == sent


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_an_echoed_api_key_is_never_stored_shown_logged_or_traced(studio_for, photo, tmp_path, caplog):
    from agent.eval.trace import trace_line

    caplog.set_level(logging.DEBUG)
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.echoing(400)
        studio = studio_for(server.base_url)
        session = studio.start_session(photo, review_mode="always")
        result = studio.send_message(session.id, "make it warmer")
        assert server.requests and server.requests[0].headers.get("authorization") == f"Bearer {KEY}"  # it was sent
        told = " ".join(result.warnings)
        assert "HTTP 400" in told and "[redacted]" in told            # the person reads why, without the key
        assert KEY not in told and KEY not in str(result.to_dict())
        if result.status == "awaiting_review":
            studio.review(session.id, "approve")
        studio.send_message(session.id, "a bit brighter")
        trace = "\n".join(trace_line(t, "full") for t in studio.turn_log(session.id))
        assert trace and KEY not in trace
        assert KEY not in repr(studio.planner.client.settings) and KEY not in str(studio.planner.client.settings)
        for record in caplog.records:
            assert KEY not in record.getMessage() and KEY not in (record.exc_text or "")
    studio.close()
    files = _files_under(tmp_path / "sessions") + list(tmp_path.glob("atelier.db*"))
    assert any(f.name.startswith("checkpoints.db") for f in files)
    for f in files:                                   # database, WAL, checkpoints, every cached file
        assert KEY.encode() not in f.read_bytes(), f


def test_settings_repr_never_shows_the_key():
    settings = VLMSettings(base_url="http://127.0.0.1:1/v1", model=MODEL, api_key=KEY)
    assert KEY not in repr(settings) and "api_key" not in repr(settings)
    assert settings.api_key == KEY
