"""Output schemas chosen in chat and over the service: "use my cinematographer schema", a planner schema with a custom
field (mood_keywords) whose values reach the turn's result, an executor schema checked against the real record.

A real Studio on SQLite with a private copy of schemas/, and the VLM planner against the tests' OpenAI-compatible
server on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from agent.interfaces.canonical import turn_data
from agent.model.vlm import VLMClient, VLMSettings
from agent.planning.vlm import VLMPlanner
from agent.service import Studio
from fake_openai_server import FakeOpenAIServer, Reply
from tests.conftest import ScriptedJudge, copy_shipped_schemas, small_photo

QWEN = "Qwen/Qwen2.5-VL-7B-Instruct"
MOOD_EXAMPLE = {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}],
                "mood_keywords": ["warm", "nostalgic"]}


@pytest.fixture
def setup(tmp_path):
    with FakeOpenAIServer(model=QWEN) as server:
        planner = VLMPlanner(VLMClient(VLMSettings(base_url=server.base_url, model=QWEN, api_key="k", timeout_s=5,
                                                   max_retries=0, turn_deadline_s=20, repair_attempts=0)))
        with Studio(sessions_dir=tmp_path / "sessions", planner=planner, judge=ScriptedJudge(),
                    schemas_root=copy_shipped_schemas(tmp_path / "schemas")) as studio:
            yield studio, server


def test_a_schema_chosen_in_chat_holds_and_its_custom_fields_reach_the_result(setup):
    studio, server = setup
    studio.generate_schema(MOOD_EXAMPLE, agent="planner", name="moodboard")
    sid = studio.start_session(small_photo("coffee", 200)).id
    chosen = studio.send_message(sid, "use my moodboard schema")
    assert chosen.status == "answered" and "moodboard" in chosen.reply and not server.requests
    assert studio.session(sid).planner_schema == "moodboard" and studio.session(sid).turns == 0
    judge = studio.send_message(sid, "use my cinematographer schema")        # the shipped quality schema
    assert "the judge" in judge.reply and studio.session(sid).quality_schema == "cinematographer"

    server.script(Reply.json({"reply": "Warming it for a nostalgic feel.", "understood": True,
                              "sub_goals": [{"op": "temperature", "value": 18}],
                              "mood_keywords": ["nostalgic", "golden hour"]}))
    result = studio.send_message(sid, "make it feel like an old summer afternoon")
    assert "mood_keywords" in server.requests[-1].messages[0]["content"]     # the model was asked for it
    assert result.details["planner_fields"] == {"mood_keywords": ["nostalgic", "golden hour"]}
    assert turn_data(result)["fields"]["planner"]["mood_keywords"] == ["nostalgic", "golden hour"]


def test_only_a_named_existing_schema_is_a_choice(setup):
    studio, server = setup
    sid = studio.start_session(small_photo("coffee", 200)).id
    skill = studio.send_message(sid, "use the film skill")                  # a skill, not a schema
    assert skill.status != "answered" and studio.session(sid).planner_schema == "default"
    unknown = studio.send_message(sid, "use my astronomer schema")          # no such schema: not a choice
    assert "schemas" not in unknown.details and not unknown.reply.startswith("From the next change on")
    assert studio.session(sid).planner_schema == "default" and studio.session(sid).quality_schema == "default"


def test_an_executor_schema_is_checked_against_the_real_record(setup):
    studio, server = setup
    studio.generate_schema({"steps": [{"step": 1, "op": "temperature"}], "operator_notes": "checked"},
                           agent="executor", name="audit")
    sid = studio.start_session(small_photo("coffee", 200), executor_schema="audit").id
    assert studio.session(sid).executor_schema == "audit"
    server.script(Reply.json({"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}))
    result = studio.send_message(sid, "warmer")
    assert result.details["executor_schema"] == "audit"
    assert any("operator_notes" in p for p in result.details["executor_problems"])   # the executor cannot fill it
    with pytest.raises(Exception, match="executor"):
        studio.start_session(small_photo("coffee", 120), executor_schema="nope")
