"""End to end: a Studio whose planner and judge are a VLM behind a real HTTP server on 127.0.0.1.

A multi-turn session runs through the VLM planner and judge; a custom quality
schema's ``composition_score`` shows up in the turn's output; a fault in the
middle (a hang past the timeout) ends in the built-in planner with the person
told why, and the session carries on.
"""

from __future__ import annotations


import time

import pytest

from agent.config import load_config
from agent.errors import InvalidInput
from agent.judging.vlm import VLMJudge
from agent.planning.vlm import VLMPlanner
from agent.service import Studio
from agent.model.vlm import VLMClient, VLMSettings
from fake_openai_server import FakeOpenAIServer, Reply
from conftest import small_photo as demo_photo
from test_vlm import photo as small_photo

MODEL = "Qwen/Qwen2.5-VL-7B-Instruct"


def _is_judge(received) -> bool:
    return "You are the judge of Atelier" in received.text()


@pytest.fixture
def vlm_studio(tmp_path):
    with FakeOpenAIServer(model=MODEL) as server:
        client = VLMClient(VLMSettings(base_url=server.base_url, model=MODEL, api_key="test",
                                       timeout_s=1.5, max_retries=0, turn_deadline_s=10, repair_attempts=1))
        config = load_config().with_overrides(vlm={"circuit_cooldown_s": 1.0})   # a short cool-down after a hang
        studio = Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
                        planner=VLMPlanner(client), judge=VLMJudge(client), config=config)
        try:
            yield studio, server
        finally:
            studio.close()


def test_a_multi_turn_session_runs_through_the_vlm(vlm_studio):
    studio, server = vlm_studio
    plans = {
        "warmer": [{"op": "temperature", "value": 20}],
        "sky": [{"op": "highlights", "value": -30, "target": {"type": "sky"}}],
        "punch": [{"op": "contrast", "value": 15}, {"op": "vibrance", "value": 20}],
    }

    def respond(received):
        text = received.text()
        if _is_judge(received):
            return Reply.json({"score": 0.93, "assessment": "Does what was asked, cleanly.",
                               "dimensions": {"compliance": 0.95}, "diagnoses": [],
                               "composition_score": 0.74, "mood": "warm"})
        request = text.rsplit("<<<", 1)[1]
        key = next(k for k in plans if k in request)
        return Reply.json({"reply": f"Doing '{key}'.", "understood": True, "sub_goals": plans[key]})

    server.responder = respond
    session = studio.start_session(demo_photo("rocket", 320), review_mode="never",   # a photo with a sky
                                   quality_schema="cinematographer")
    results = [studio.send_message(session.id, m) for m in
               ("make it warmer", "calm the sky down", "more punch please")]
    for r in results:
        assert r.status == "auto_approved", (r.status, r.reply, r.warnings)
        assert r.fields["composition_score"] == 0.74          # the custom schema's field, from the VLM
        assert r.score > 0.9 and r.asset_id
    assert [r.reply.split(".")[0] for r in results] == ["Doing 'warmer'", "Doing 'sky'", "Doing 'punch'"]
    assert studio.head(session.id).state["settings"] == {"temperature": 20, "contrast": 15, "vibrance": 20}
    assert studio.head(session.id).state["layers"][0]["mask"] == {"type": "sky"}
    assert len(server.requests) == 6                          # one plan and one judgement per turn
    # turn 3's planner saw the earlier turns (folded context) and the photo as it is now
    third_plan = [r for r in server.requests if not _is_judge(r)][2]
    assert '"temperature":20' in third_plan.text() and len(third_plan.image_urls()) == 2


def test_a_hanging_model_mid_session_falls_back_and_the_session_carries_on(vlm_studio):
    studio, server = vlm_studio
    good_verdict = {"score": 0.95, "assessment": "Good.", "diagnoses": []}
    server.script(
        Reply.json({"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}),
        Reply.json(good_verdict),
        Reply.hang(20),                      # turn 2: the planner call hangs past the 1.5 s timeout
        Reply.json({"reply": "Brighter.", "understood": True, "sub_goals": [{"op": "exposure", "value": 15}]}),
        Reply.json(good_verdict),            # turn 4, after the cool-down: the model again
    )
    session = studio.start_session(small_photo(), review_mode="never")
    first = studio.send_message(session.id, "make it warmer")
    second = studio.send_message(session.id, "make it a bit brighter")
    third = studio.send_message(session.id, "a little brighter again")   # cool-down: built-in, nothing sent
    assert len(server.requests) == 3
    time.sleep(1.1)
    fourth = studio.send_message(session.id, "a little brighter again")
    assert first.status == second.status == third.status == fourth.status == "auto_approved"
    told = " ".join(second.warnings)
    assert "The VLM planner" in told and "did not answer within 1.5 s" in told
    assert "built-in planner planned it instead" in told and "take over until" in told
    assert "exposure" in [g["op"] for g in second.sub_goals]     # the built-in planner's reading of "brighter"
    assert "exposure" in [g["op"] for g in third.sub_goals] and not third.warnings   # told once, not again
    assert [(g["op"], g["value"]) for g in fourth.sub_goals] == [("exposure", 15)]   # the model's plan again
    assert not any("could not plan" in w for w in fourth.warnings)
    assert len(studio.history(session.id)) == 5                # original + four turns, nothing lost


def test_an_unknown_schema_name_is_refused_before_any_turn(vlm_studio):
    studio, server = vlm_studio
    with pytest.raises(InvalidInput, match="unknown quality schema 'noir'"):
        studio.start_session(small_photo(), quality_schema="noir")
    assert server.requests == [] and studio.list_sessions() == []


def test_a_vlm_question_with_quick_replies_reaches_the_person_and_changes_nothing(vlm_studio):
    studio, server = vlm_studio

    def respond(received):
        if _is_judge(received):
            return Reply.json({"score": 0.9, "assessment": "ok", "dimensions": {}, "diagnoses": []})
        return Reply.json({"reply": "Warmer light, or more orange in the colours?", "understood": False,
                           "sub_goals": [], "quick_replies": ["warmer light", "more orange", "  "]})

    server.responder = respond
    session = studio.start_session(small_photo(), review_mode="never")
    before = studio.head(session.id)
    result = studio.send_message(session.id, "make it feel more autumn-ish")
    assert result.reply == "Warmer light, or more orange in the colours?"
    assert result.quick_replies == ["warmer light", "more orange"]   # blank answers dropped
    assert studio.head(session.id).id == before.id                    # a question makes no version
