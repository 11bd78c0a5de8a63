"""Skills: load (and refuse broken files), gate on real photos, select with a confidence, compose, trace.

Skill files are real YAML in skills/ and in a folder named by ATELIER_SKILLS_DIR; turns run through a
Studio on a real SQLite file with the embedded planner and judge; the MCP tools list and apply skills
through the SDK's client (in-process transport).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import skills
from agent.planning.embedded import EmbeddedPlanner
from agent.service import InvalidInput, Studio
from agent.skills import ImageFacts, plan_tasks, run_tasks, select_skill, split_request
from pipeline.state import EditState
from profiles import clear_profile_cache, load_profile
from tests.conftest import small_photo
from tests.test_mcp import run_async


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    monkeypatch.delenv(skills.SKILLS_DIR_ENV, raising=False)
    skills.clear_skill_cache()
    clear_profile_cache()
    yield
    skills.clear_skill_cache()
    clear_profile_cache()


def _user_dir(tmp_path: Path, monkeypatch, files: dict[str, str]) -> Path:
    folder = tmp_path / "my-skills"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    monkeypatch.setenv(skills.SKILLS_DIR_ENV, str(folder))
    skills.clear_skill_cache()
    clear_profile_cache()
    return folder


# -- loading -----------------------------------------------------------------------------------------

def test_the_shipped_skills_load_and_fill_the_engine_profiles_looks():
    registry = skills.load_skills()
    assert {"film", "moody", "airy", "clean_portrait", "landscape_punch", "product_on_white",
            "portrait_film"} <= set(registry)
    assert registry["clean_portrait"].gates == {"needs_face": True}
    engine = load_profile("engine")
    assert engine.styles()[:3] == ["film", "airy", "moody"]            # the skills' order
    assert engine.style("film") == registry["film"].settings()
    assert engine.style("vintage") == registry["film"].settings()      # a look's words find it
    assert "clean_portrait" not in engine.styles()                     # recipes are not named looks


def test_a_user_skill_folder_adds_looks_everywhere(tmp_path, monkeypatch):
    _user_dir(tmp_path, monkeypatch, {"neon.yaml": (
        "name: neon\nkind: look\ndescription: cool magenta night look\nwords: [neon look, neon]\n"
        "adjust:\n  - {op: tint, value: 30}\n  - {op: temperature, value: -25}\n")})
    assert skills.load_skills()["neon"].user is True
    assert load_profile("engine").style("neon") == {"tint": 30, "temperature": -25}
    with Studio(sessions_dir=tmp_path / "s", planner=EmbeddedPlanner()) as studio:
        assert "neon" in studio.styles()
        assert "neon" in [s["name"] for s in studio.skills()]
        info = studio.start_session(small_photo("coffee", 200), style="neon")
        assert info.style == "neon"


@pytest.mark.parametrize("text, key, problem", [
    ("name: bad\nkind: look\ndescription: x\nadjust:\n  - {op: brightness, value: 10}\n", "adjust[0].op", "brightness"),
    ("name: bad\nkind: look\ndescription: x\nadjust:\n  - {op: exposure, value: 300}\n", "adjust[0].value", "outside"),
    ("name: bad\nkind: retouch\ndescription: x\ngates: {needs_unicorn: true}\nadjust:\n  - {op: exposure, value: 1}\n",
     "gates.needs_unicorn", "unknown gate"),
    ("name: bad\nkind: look\ndescription: x\nadjust:\n  - {op: exposure, value: 5, target: {type: sky}}\n",
     "adjust[0]", "a look sets global values"),
    ("name: bad\nkind: filter\ndescription: x\n", "kind", "expected one of"),
    ("name: bad\nkind: look\ndescription: [unclosed\n", "", "not valid YAML"),
    ("name: loop\nkind: compound\ndescription: x\nsteps:\n  - {id: a, skill: film, depends_on: [b]}\n"
     "  - {id: b, skill: moody, depends_on: [a]}\n", "steps", "cycle: a -> b -> a"),
    ("name: bad\nkind: compound\ndescription: x\nsteps:\n  - {id: a, skill: sparkle}\n", "steps[0].skill", "sparkle"),
])
def test_a_broken_skill_file_is_refused_naming_the_file_and_key(tmp_path, monkeypatch, text, key, problem):
    folder = _user_dir(tmp_path, monkeypatch, {"broken.yaml": text})
    with pytest.raises(skills.SkillError) as err:
        skills.load_skills()
    assert err.value.file == str(folder / "broken.yaml") and err.value.key == key
    assert problem in str(err.value)
    # the studio says the same thing instead of starting with a half-read registry
    with pytest.raises(Exception) as again:
        load_profile("engine")
    assert "broken.yaml" in str(again.value) and key in str(again.value)


# -- gates, selection, graphs --------------------------------------------------------------------------

def test_gates_read_the_photo():
    registry = skills.load_skills()
    coffee = ImageFacts.measure(small_photo("coffee", 320))
    camera = ImageFacts.measure(small_photo("camera", 320))
    rocket = ImageFacts.measure(small_photo("rocket", 320))
    portrait = ImageFacts.measure(small_photo("astronaut", 320))
    assert select_skill("use the clean portrait skill", registry, portrait).skill.name == "clean_portrait"
    refused = select_skill("use the clean portrait skill", registry, coffee)
    assert refused.skill is None and "needs a face" in refused.reason
    assert select_skill("landscape punch", registry, rocket).skill.name == "landscape_punch"
    assert "needs a sky" in select_skill("landscape punch", registry, coffee).reason
    assert "black and white" in select_skill("use the film skill", registry, camera).reason
    # a compound skill needs its steps' gates
    assert "needs a face" in select_skill("use the portrait film skill", registry, coffee).reason


def test_selection_has_a_confidence_and_falls_back_when_nothing_fits():
    registry = skills.load_skills()
    named = select_skill("use the clean portrait skill", registry)
    worded = select_skill("give it a film look", registry)
    vague = select_skill("make it warmer", registry)
    assert named.confidence == 1.0
    assert 0.5 <= worded.confidence < 1.0 and worded.skill.name == "film"
    assert vague.skill is None and vague.confidence == 0.0 and vague.reason == "no skill matches"
    weak = select_skill("I quite like film, I think, maybe, but make the whole thing brighter and warmer please",
                        registry, min_confidence=0.7)
    assert weak.skill is None and "below 0.70" in weak.reason and 0 < weak.confidence < 0.7


def test_a_compound_request_is_a_task_graph_with_a_context_bridge():
    registry = skills.load_skills()
    text = "clean up her skin, then give it a film look"
    assert split_request(text) == ["clean up her skin", "give it a film look"]
    facts = ImageFacts.measure(small_photo("astronaut", 320))
    tasks = plan_tasks(text, registry, facts)
    assert [(s.skill, s.depends_on) for s in tasks.steps] == [("clean_portrait", ()),
                                                             ("film", ("1.clean_portrait",))]
    goals, trace, final = run_tasks(tasks, registry, EditState().with_value("exposure", 10), facts)
    assert [t["skill"] for t in trace] == ["clean_portrait", "film"]
    assert trace[1]["received"][0]["step"] == "1.clean_portrait"          # the bridge: what step 1 did
    assert any("clarity 0 -> -25 on skin" in d for d in trace[0]["did"])
    assert final.value("exposure") == 10 and final.value("blacks") == 20   # film on top of the retouch
    assert final.value("clarity", {"type": "skin"}) == -25
    # a compound skill expands to its own steps in order
    expanded = plan_tasks("use the portrait film skill", registry, facts)
    assert [s.skill for s in expanded.steps] == ["clean_portrait", "film"]


def test_a_cycle_in_a_request_graph_is_refused():
    steps = [skills.SkillStep("a", "film", ("b",)), skills.SkillStep("b", "moody", ("a",))]
    with pytest.raises(skills.SkillError, match="cycle"):
        skills.check_graph(steps)


# -- skills in turns -------------------------------------------------------------------------------------

@pytest.fixture()
def studio(tmp_path):
    with Studio(sessions_dir=tmp_path / "sessions", planner=EmbeddedPlanner()) as s:
        yield s


def test_chat_uses_skills_and_the_turn_shows_which_skill_did_what(studio):
    info = studio.start_session(small_photo("astronaut", 320))
    r = studio.send_message(info.id, "clean up her skin, then give it a film look")
    assert r.status in ("auto_approved", "awaiting_review"), r.reply
    assert r.reply.startswith("Using Clean portrait, then Film.")
    trace = r.details["skills"]["trace"]
    assert [(t["skill"], t["status"]) for t in trace] == [("clean_portrait", "applied"), ("film", "applied")]
    assert r.details["review_tier"] in ("auto_accept", "ask")
    head = studio.history(info.id)[-1].state  # the version really carries both skills
    assert head["settings"]["blacks"] == 20 and any(l["mask"] == {"type": "skin"} for l in head["layers"])


def test_a_gated_skill_is_refused_with_the_reason_and_nothing_changes(studio):
    info = studio.start_session(small_photo("coffee", 320))
    r = studio.send_message(info.id, "use the clean portrait skill")
    assert r.status == "not_understood"
    assert "needs a face" in r.reply and "unchanged" in r.reply
    assert studio.head(info.id).id == info.head_asset_id


def test_ordinary_requests_still_go_to_the_planner(studio):
    info = studio.start_session(small_photo("coffee", 320))
    r = studio.send_message(info.id, "make it warmer")
    assert r.sub_goals[0]["op"] == "temperature" and "skills" not in r.details


def test_apply_skill_and_the_mcp_tools_list_and_apply_skills(studio):
    from mcp import Client

    from agent.interfaces.mcp import build_server

    info = studio.start_session(small_photo("rocket", 320))
    with pytest.raises(InvalidInput, match="unknown skill 'sparkle'"):
        studio.apply_skill(info.id, "sparkle")
    server = build_server(lambda: studio)

    async def main():
        async with Client(server) as client:
            listed = (await client.call_tool("list_skills", {})).structured_content
            applied = (await client.call_tool("apply_skill", {"session_id": info.id,
                                                              "skill": "landscape_punch"})).structured_content
            refused = (await client.call_tool("apply_skill", {"session_id": info.id,
                                                              "skill": "clean_portrait"})).structured_content
            return listed, applied, refused

    listed, applied, refused = run_async(main)
    rows = {s["name"]: s for s in listed["data"]["skills"]}
    assert rows["landscape_punch"]["gates"] == ["needs_sky", "colour_only"]
    assert applied["ok"] and applied["data"]["details"]["skills"]["trace"][0]["skill"] == "landscape_punch"
    assert refused["ok"] and refused["data"]["status"] == "not_understood" and "needs a face" in refused["data"]["reply"]
