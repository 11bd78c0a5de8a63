"""One deadline per turn and a circuit breaker, against a real OpenAI-compatible server on 127.0.0.1.

Each failure mode of a model endpoint — hanging, refusing connections, slow,
answering garbage — is played by ``tests/fake_openai_server.py`` and reached
through the real ``openai`` client by a Studio configured from the environment,
as ``python app.py`` would be. The deadlines are set small through the config
so the tests stay quick; the behaviour is the one a person sees with the
defaults (60 s deadline, 120 s cool-down).
"""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from agent.config import load_config
from agent.service import Studio
from fake_openai_server import FakeOpenAIServer, Reply, refusing_base_url

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"
PLAN = {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}
VERDICT = {"score": 0.95, "assessment": "Good.", "diagnoses": []}


def _is_judge(received) -> bool:
    return "You are the judge of Atelier" in received.text()


@pytest.fixture
def studio_for(tmp_path, monkeypatch):
    """Factory: a Studio whose planner and judge come from ATELIER_VLM_* (as in the app), small limits."""
    made = []

    def make(base_url: str | None, **vlm):
        if base_url:
            monkeypatch.setenv("ATELIER_VLM_BASE_URL", base_url)
            monkeypatch.setenv("ATELIER_VLM_MODEL", MODEL)
        else:
            monkeypatch.delenv("ATELIER_VLM_BASE_URL", raising=False)
            monkeypatch.delenv("ATELIER_VLM_MODEL", raising=False)
        limits = {"timeout_s": 30, "max_retries": 2, "turn_deadline_s": 2, "repair_attempts": 1,
                  "circuit_cooldown_s": 60, **vlm}
        config = load_config().with_overrides(vlm=limits)
        studio = Studio(database_url=f"sqlite:///{tmp_path / f'atelier{len(made)}.db'}",
                        sessions_dir=tmp_path / f"sessions{len(made)}", config=config)
        made.append(studio)
        return studio

    yield make
    for s in made:
        s.close()


def planned_by_model(result) -> bool:
    """The VLM's plan ran (temperature +20, no note that the built-in planner stood in)."""
    return (not any("could not plan" in w for w in result.warnings)
            and [(g["op"], g["value"]) for g in result.sub_goals] == [("temperature", 20)])


def timed_turn(studio, session_id, text):
    start = time.monotonic()
    result = studio.send_message(session_id, text)
    return result, time.monotonic() - start


def test_a_hung_endpoint_costs_one_deadline_then_turns_skip_it_during_cool_down(studio_for, photo):
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.hang(60)          # accepts, never answers
        studio = studio_for(server.base_url)
        assert studio.model_status()["state"] == "model"
        session = studio.start_session(photo, review_mode="never")

        first, took = timed_turn(studio, session.id, "make it warmer")
        assert took < 2 + 1.5                                 # the 2 s turn deadline, plus the render
        assert first.status == "auto_approved" and first.sub_goals  # the built-in planner did the edit
        told = " ".join(first.warnings)
        assert "did not answer within this turn's 2 s deadline" in told and "built-in planner planned it instead" in told
        assert "take over until" in told                      # the chat says what happens next ...
        assert len(server.requests) == 1                      # no retry into a hung server, judge skipped it

        status = studio.model_status()
        assert status["state"] == "fallback" and "Built-in fallback" in status["label"]
        until = datetime.fromisoformat(status["until"])
        assert 50 < (until - datetime.now(until.tzinfo)).total_seconds() <= 60

        for text in ("a bit brighter", "more contrast"):
            later, took = timed_turn(studio, session.id, text)
            assert took < 2.0 and later.status == "auto_approved"
            assert not any("could not" in w for w in later.warnings)   # ... once, not every turn
        assert len(server.requests) == 1                      # nothing was sent while the circuit is open
        assert len(studio.history(session.id)) == 4           # original + three turns, nothing lost


def test_a_refused_connection_opens_the_circuit_at_once(studio_for, photo):
    studio = studio_for(refusing_base_url(), max_retries=3)
    session = studio.start_session(photo, review_mode="never")
    first, took = timed_turn(studio, session.id, "make it warmer")
    assert took < 2.0
    assert "refused the connection" in " ".join(first.warnings)
    assert first.status == "auto_approved"
    assert studio.model_status()["state"] == "fallback"
    second, took = timed_turn(studio, session.id, "a bit brighter")
    assert took < 2.0 and not second.warnings


def test_planner_judge_and_repairs_share_one_turn_deadline(studio_for, photo):
    """Each call alone fits the deadline; together they do not, so the judge gets only what is left."""
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.slow(VERDICT if _is_judge(r) else PLAN, 2.6)
        studio = studio_for(server.base_url, turn_deadline_s=4.0)
        session = studio.start_session(photo, review_mode="never")
        result, took = timed_turn(studio, session.id, "make it warmer")
        assert took < 4 + 3
        assert planned_by_model(result)                        # the model planned (2.6 s) ...
        told = " ".join(result.warnings)
        assert "The VLM judge" in told and "built-in judge scored it instead" in told   # ... the judge ran out
        assert [_is_judge(r) for r in server.requests] == [False, True]


def test_a_slow_endpoint_within_the_deadline_keeps_the_model(studio_for, photo):
    with FakeOpenAIServer(model=MODEL) as server:
        server.responder = lambda r: Reply.slow(VERDICT if _is_judge(r) else PLAN, 0.3)
        studio = studio_for(server.base_url)
        session = studio.start_session(photo, review_mode="never")
        for text in ("make it warmer", "warmer again"):
            result, _ = timed_turn(studio, session.id, text)
            assert planned_by_model(result) and not result.warnings
        assert studio.model_status() == {"state": "model", "label": f"Model: {MODEL} at "
                                         f"{server.base_url.split('/')[2]}", "until": None}
        assert len(server.requests) == 4


def test_a_garbage_answer_falls_back_for_the_turn_but_keeps_the_model(studio_for, photo):
    """A server that answers (badly) is alive: that turn falls back, the next one asks it again."""
    with FakeOpenAIServer(model=MODEL) as server:
        server.script(Reply.garbage(), Reply.garbage(), Reply.json(PLAN), Reply.json(VERDICT))
        studio = studio_for(server.base_url, max_retries=0)
        session = studio.start_session(photo, review_mode="never")
        first, _ = timed_turn(studio, session.id, "make it warmer")
        told = " ".join(first.warnings)
        assert "not a chat completion" in told and "built-in planner planned it instead" in told
        assert first.status == "auto_approved"
        assert studio.model_status()["state"] == "model"
        second, _ = timed_turn(studio, session.id, "warmer again")
        assert planned_by_model(second) and not second.warnings
        assert server.remaining == 0


def test_after_the_cool_down_the_model_is_tried_again(studio_for, photo):
    with FakeOpenAIServer(model=MODEL) as server:
        server.script(Reply.hang(60))
        server.responder = lambda r: Reply.json(VERDICT if _is_judge(r) else PLAN)
        studio = studio_for(server.base_url, turn_deadline_s=1, circuit_cooldown_s=1.5)
        session = studio.start_session(photo, review_mode="never")
        timed_turn(studio, session.id, "make it warmer")
        assert studio.model_status()["state"] == "fallback"
        time.sleep(1.6)
        assert studio.model_status()["state"] == "model"
        again, _ = timed_turn(studio, session.id, "warmer again")
        assert planned_by_model(again) and not again.warnings
        assert len(server.requests) == 3


def test_without_a_model_the_status_says_built_in(studio_for):
    studio = studio_for(None)
    assert studio.model_status() == {"state": "embedded", "label": "Built-in planner and judge", "until": None}


def test_the_cool_down_is_a_checked_config_key():
    from agent.config import AgentConfigError

    with pytest.raises(AgentConfigError, match="vlm.circuit_cooldown_s"):
        load_config().with_overrides(vlm={"circuit_cooldown_s": -1})
