"""Declarations that do something: the profiles' sweet spots and ranges hold the executor, the profile's
quality floor moves the review tiers, and the executor's real records validate against its schema."""

from __future__ import annotations

import pytest

from agent.planning.limits import hold_to_profile
from agent.planning.base import SubGoal
from agent.planning.embedded import EmbeddedPlanner
from agent.service import Studio
from pipeline.state import EditState
from profiles import load_profile
from schemas import load_schema
from tests.conftest import ScriptedJudge, ScriptedPlanner, small_photo


@pytest.fixture()
def studio(tmp_path):
    with Studio(sessions_dir=tmp_path / "sessions", planner=EmbeddedPlanner()) as s:
        yield s


def test_much_more_saturated_three_times_stops_at_the_sweet_spot_unless_the_person_insists(studio):
    top = load_profile("engine").sweet_spot("saturation").high
    info = studio.start_session(small_photo("coffee", 300), review_mode="never")
    turns = [studio.send_message(info.id, "much more saturated") for _ in range(3)]
    assert studio.head(info.id).state["settings"]["saturation"] == top
    said = " ".join([turns[-1].reply, *turns[-1].warnings, turns[-2].reply, *turns[-2].warnings])
    assert f"+{top}" in said and "insist" in said.lower()
    studio.send_message(info.id, "much more saturated, I insist")
    assert studio.head(info.id).state["settings"]["saturation"] > top


def test_the_executor_holds_a_planners_moves_at_the_sweet_spot(make_studio, photo):
    """A planner that knows no sweet spots (a VLM, here a scripted one): the executor holds it and says so."""
    top = load_profile("engine").sweet_spot("saturation").high
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.95]))
    info = studio.start_session(photo, review_mode="never")
    turns = [studio.send_message(info.id, "saturation+30") for _ in range(3)]
    assert [studio.history(info.id)[t.turn].state["settings"]["saturation"] for t in turns] == [30, top, top]
    held = turns[1]
    assert any(w.startswith(f"Held saturation at +{top}") and "I insist" in w for w in held.warnings)
    step = held.details["executor"]["steps"][0]
    assert step["limit"] == "sweet spot" and step["clamped"] and step["requested"] == 60 and step["after"] == top
    assert turns[2].details["executor"]["steps"][0]["after"] == top      # no further on the third ask
    studio.send_message(info.id, "saturation+30, I insist")
    assert studio.head(info.id).state["settings"]["saturation"] == top + 30


def test_absolute_values_and_the_persons_sliders_are_not_held(studio):
    info = studio.start_session(small_photo("coffee", 300), review_mode="never")
    studio.send_message(info.id, "black and white")
    assert studio.head(info.id).state["settings"]["saturation"] == -100      # a look is deliberate
    studio.review(info.id, "modify", values={"saturation": 80})
    assert studio.head(info.id).state["settings"]["saturation"] == 80         # so are the person's values


def test_the_planning_models_range_clamps_always():
    engine, model = load_profile("engine"), load_profile("default_vlm")
    lo, hi = model.parameter_space["ops"]["exposure"]["range"]
    goals, held = hold_to_profile(EditState(), [SubGoal(op="exposure", value=95, mode="set")], engine, model,
                                  insist=True)
    assert goals[0].value == hi and held[0]["limit"] == "range" and held[0]["requested"] == 95


def test_a_real_executor_record_validates_against_the_executor_schema(studio):
    schema = load_schema("executor")
    info = studio.start_session(small_photo("rocket", 300), review_mode="always")   # a photo with a sky
    r = studio.send_message(info.id, "warmer, much more saturated and darken the sky")
    record = r.details["executor"]
    assert len(record["steps"]) >= 3 and any(s["target"] for s in record["steps"])
    assert schema.validate(record) == []
    modified = studio.review(info.id, "modify", values={"contrast": 20})
    assert schema.validate(modified.details["executor"]) == []
    broken = dict(record, steps=[dict(record["steps"][0], status="skipped")])
    assert schema.validate(broken) and "status" in schema.validate(broken)[0]


class FloorJudge(ScriptedJudge):
    """A scripted judge speaking for a model whose profile sets a higher quality floor (gpt-4o: 0.65)."""

    profile = load_profile("gpt_4o")


def test_the_profiles_quality_floor_raises_the_reject_bar(tmp_path):
    floor = load_profile("gpt_4o").quality_floor
    planner = ScriptedPlanner()
    with Studio(sessions_dir=tmp_path / "s", planner=planner, judge=FloorJudge([0.62, 0.95])) as studio:
        assert studio.config.min_pass_score < 0.62 < floor
        info = studio.start_session(small_photo("coffee", 200))
        r = studio.send_message(info.id, "contrast+10")
    tiers = r.details["tiers"]
    assert [t["tier"] for t in tiers] == ["reject", "auto_accept"] and tiers[0]["reject_below"] == floor
    assert len(planner.requests) == 2 and r.status == "auto_approved"
