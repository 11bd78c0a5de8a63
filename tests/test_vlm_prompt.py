"""What the VLM path sends and says, read at a real OpenAI-compatible server on 127.0.0.1 (tests/fake_openai_server.py).

- The planner's system prompt carries only what the request needs: the core ops, the op groups the message
  touches, ops the photo already has; the rest by name; the mask guide only for places.
- Each family gets the request parameters it accepts: gpt-5-mini ``max_completion_tokens`` and no
  temperature, gpt-4o ``max_tokens`` and a temperature.
- A model judge's words stay in the turn's details, not in the person's reply; what the model cannot do at
  all comes back as ``model_limitations``.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agent.judging.vlm import VLMJudge
from agent.model.vlm import VLMClient, VLMSettings, profile_for_model
from agent.planning.vlm import MASK_GUIDE, VLMPlanner
from fake_openai_server import FakeOpenAIServer, Reply
from pipeline.state import EditState
from tests.conftest import small_photo
from tests.test_vlm import GOOD_PLAN, QWEN, client_for, judge_request, plan_request

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))


@pytest.fixture
def server():
    with FakeOpenAIServer(model=QWEN) as s:
        yield s


def _system(server) -> str:
    return server.requests[-1].messages[0]["content"]


def test_the_planner_prompt_carries_what_the_request_needs(server):
    planner = VLMPlanner(client_for(server))
    server.script(*[Reply.json(GOOD_PLAN)] * 4)
    planner.plan(plan_request("make it warmer"))
    warm = _system(server)
    assert "temperature            color-temperature" in warm            # its row: range and meaning
    assert "teeth_whitening" in warm and "Whitens teeth" not in warm       # named, not described
    assert MASK_GUIDE not in warm
    planner.plan(plan_request("the sky is too bright now"))
    assert MASK_GUIDE in _system(server)
    planner.plan(plan_request("clean up the blemishes on her skin"))
    assert "Finds and heals small blemishes" in _system(server)
    # a follow-up keeps the rows of what the photo already has, whatever the words
    planner.plan(plan_request("a bit more", state=EditState().with_value("grain", 30)))
    assert "grain                  finishing" in _system(server)


def test_the_scoped_prompt_costs_about_half_the_tokens_of_the_whole_table():
    from measure_prompt import measure

    report = measure(QWEN)
    assert report["now_tokens"] < 0.65 * report["before_tokens"]
    for row in report["turns"]:
        assert row["now"]["tokens"] < row["before"]["tokens"], row


@pytest.mark.parametrize("model, limit, temperature", [
    ("gpt-5-mini", "max_completion_tokens", False), ("o4-mini", "max_completion_tokens", False),
    ("gpt-4o-mini", "max_tokens", True), (QWEN, "max_tokens", True)])
def test_each_family_gets_the_request_parameters_it_accepts(server, model, limit, temperature):
    assert profile_for_model("gpt-5-mini").family == "openai-reasoning"        # never the gpt-4o profile
    server.script(Reply.json(GOOD_PLAN))
    plan = VLMPlanner(client_for(server, model=model)).plan(plan_request("make it warmer"))
    assert plan.source == f"vlm ({model})"
    body = server.requests[-1].body
    other = "max_tokens" if limit == "max_completion_tokens" else "max_completion_tokens"
    assert limit in body and other not in body
    assert ("temperature" in body) == temperature
    if not temperature:
        assert body[limit] >= 4000 and body["reasoning_effort"] == "low"


def test_a_model_judges_words_stay_in_the_details_not_the_reply(server, tmp_path):
    from agent.service import Studio

    settings = VLMSettings(base_url=server.base_url, model=QWEN, api_key="test-key", timeout_s=5, max_retries=0,
                           turn_deadline_s=20, repair_attempts=0)
    judge = VLMJudge(VLMClient(settings))
    planner = VLMPlanner(VLMClient(replace(settings)))
    server.script(Reply.json({"reply": "Warming it up a little.", "understood": True,
                              "sub_goals": [{"op": "temperature", "value": 20}]}),
                  Reply.json({"score": 0.95, "assessment": "looks good",
                              "model_limitations": ["add a sunset that is not in the photo"]}))
    with Studio(sessions_dir=tmp_path / "sessions", planner=planner, judge=judge) as studio:
        sid = studio.start_session(small_photo("coffee", 240)).id
        result = studio.send_message(sid, "make it warmer and add a sunset")
    assert result.status == "auto_approved" and "looks good" not in result.reply
    assert "Warming it up a little" in result.reply
    assert "Judge: looks good" in result.details["measurements"] and result.assessment == "looks good"
    assert result.fields["model_limitations"] == ["add a sunset that is not in the photo"]


def test_a_judge_schema_lists_model_limitations_apart_from_wrong_values(server):
    server.script(Reply.json({"score": 0.4, "assessment": "warmer, but no sunset appeared",
                              "diagnoses": ["too_warm"], "model_limitations": ["add a sunset"]}))
    result = VLMJudge(client_for(server)).assess(judge_request("warmer with a sunset"))
    assert result.diagnoses == ["too_warm"] and result.fields == {"model_limitations": ["add a sunset"]}
    assert "model_limitations" in server.requests[-1].messages[0]["content"]    # the model is asked for it
