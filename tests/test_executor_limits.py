"""Declarations that do something: the profiles' sweet spots and ranges hold the executor, the profile's
quality floor moves the review tiers, and the executor's real records validate against its schema."""

from __future__ import annotations

import pytest

from agent.limits import hold_to_profile
from agent.planners.base import SubGoal
from agent.planners.embedded import EmbeddedPlanner
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
    held = turns[-1]
    assert any(w.startswith(f"Held saturation at +{top}") and "I insist" in w for w in held.warnings)
    assert not any("will be" in w and "past its sweet spot" in w for w in held.warnings)
    step = held.details["executor"]["steps"][0]
    assert step["limit"] == "sweet spot" and step["clamped"] and step["requested"] > top and step["after"] == top
    insisted = studio.send_message(info.id, "much more saturated, I insist")
    assert studio.head(info.id).state["settings"]["saturation"] > top
    assert not any(w.startswith("Held saturation") for w in insisted.warnings)


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
    info = studio.start_session(small_photo("astronaut", 300), review_mode="always")
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
