"""The agent loop: routing of every branch, the error handler, small checkpoints, the config.

Real renderer, real SQLite files under tmp_path, a real photo; the planner and
judge are scripted and injected through the builder.
"""

from __future__ import annotations

import json

import pytest

from agent.config import AgentConfigError, config_from_mapping, load_config
from agent.loop.graph import route_after_quality, route_after_review, route_start
from agent.planning.base import PlanError
from conftest import ScriptedJudge, ScriptedPlanner, plan_from_text

CONFIG = load_config()


# -- routing as pure functions ------------------------------------------------------------

def _state(score, retries=0, mode="below_auto_approve", **extra):
    return {"assessment": {"score": score}, "retries": retries, "review_mode": mode, **extra}


def test_quality_routing_follows_the_thresholds_of_the_config():
    auto, low = CONFIG.auto_approve_threshold, CONFIG.min_pass_score
    spent = CONFIG.max_retries_per_sub_goal
    assert route_after_quality(_state(auto), CONFIG) == "context_fold"
    assert route_after_quality(_state(auto - 0.01), CONFIG) == "human_review"
    assert route_after_quality(_state(low), CONFIG) == "human_review"
    assert route_after_quality(_state(low - 0.01), CONFIG) == "planner"
    assert route_after_quality(_state(low - 0.01, retries=spent), CONFIG) == "human_review"
    assert route_after_quality(_state(0.99, mode="always"), CONFIG) == "human_review"
    assert route_after_quality(_state(0.7, mode="never"), CONFIG) == "context_fold"
    assert route_after_quality(_state(0.1, mode="never"), CONFIG) == "planner"
    assert route_after_quality(_state(0.1, retries=spent, mode="never"), CONFIG) == "context_fold"
    # the person's own slider values are never replaced by an automatic replan
    assert route_after_quality(_state(0.1, person_modified=True), CONFIG) == "human_review"
    assert route_after_quality({**_state(0.9), "error": "quality failed: boom"}, CONFIG) == "error_handler"


def test_review_and_start_routing():
    assert route_after_review({"review": {"action": "approve"}}) == "context_fold"
    assert route_after_review({"review": {"action": "modify", "values": {"contrast": 5}}}) == "executor"
    assert route_after_review({"review": {"action": "rollback", "asset_id": "x"}}) == "context_fold"
    assert route_after_review({"review": {"action": "replan", "feedback": "less"}}) == "planner"
    assert route_start({"modify_values": {"contrast": 5}}) == "executor"
    assert route_start({"modify_values": None}) == "planner"


# -- branches end to end --------------------------------------------------------------------

def test_high_score_is_kept_without_asking(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "temperature+20 exposure+10")
    assert r.status == "auto_approved" and r.review is None
    assert r.head_asset_id == r.asset_id != info.head_asset_id
    assert studio.head(info.id).state["settings"] == {"exposure": 10, "temperature": 20}
    assert len(planner.requests) == 1
    assert studio.pending_review(info.id) is None


def test_middle_score_waits_for_review_and_head_stays(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "contrast+25")
    assert r.status == "awaiting_review"
    assert r.review.asset_id == r.asset_id and r.review.score == pytest.approx(0.7)
    assert r.review.ops == [{"name": "contrast", "label": "Contrast", "value": 25, "min": -100, "max": 100}]
    assert studio.head(info.id).id == info.head_asset_id  # nothing is kept until the person says so
    assert r.rendered_path and r.rendered_path.endswith(".png")


def test_low_score_replans_with_the_assessment_then_asks_when_retries_are_spent(make_studio, photo):
    calls = []

    def varied(request):
        calls.append(request)
        return plan_from_text(f"saturation+{60 - 10 * (len(calls) - 1)}")

    planner = ScriptedPlanner(varied)
    studio = make_studio(planner, ScriptedJudge([0.3]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "saturation+60")
    retries = studio.config.max_retries_per_sub_goal
    assert len(planner.requests) == 1 + retries
    assert planner.requests[0].feedback is None
    for req in planner.requests[1:]:
        assert "scored 0.30" in req.feedback and req.diagnoses == ["scripted"]
    assert r.status == "awaiting_review"  # retries spent: the person decides


def _three_attempts(make_studio, photo, scores, review_mode="below_auto_approve"):
    calls = []

    def varied(request):
        calls.append(request)
        return plan_from_text(f"saturation+{30 - 10 * (len(calls) - 1)}")

    studio = make_studio(ScriptedPlanner(varied), ScriptedJudge(scores))
    info = studio.start_session(photo, review_mode=review_mode)
    return studio, info, studio.send_message(info.id, "saturation+30")


def test_when_the_replans_are_spent_the_best_scored_attempt_goes_to_review(make_studio, photo):
    # attempts: saturation +30 (0.45), +20 (0.30), +10 (0.20): all below the bar, the first is the best
    studio, info, r = _three_attempts(make_studio, photo, [0.45, 0.3, 0.2])
    assert r.status == "awaiting_review"
    assert r.review.score == pytest.approx(0.45)
    assert studio.store.get_asset(r.review.asset_id).state["settings"] == {"saturation": 30}
    assert any("kept the earlier attempt that scored 0.45" in w for w in r.warnings)
    # approving keeps that attempt; the two later ones are settled as rejected
    done = studio.review(info.id, "approve")
    assert studio.head(info.id).state["settings"] == {"saturation": 30}
    assert sorted(a.status for a in studio.history(info.id) if a.turn == 1) == ["approved", "rejected", "rejected"]
    assert done.status == "approved"


def test_the_last_attempt_stays_when_it_scored_best(make_studio, photo):
    studio, info, r = _three_attempts(make_studio, photo, [0.2, 0.3, 0.45])
    assert r.review.score == pytest.approx(0.45)
    assert studio.store.get_asset(r.review.asset_id).state["settings"] == {"saturation": 10}
    assert not any("kept the earlier attempt" in w for w in r.warnings)


def test_review_mode_never_keeps_the_best_attempt_of_a_spent_turn(make_studio, photo):
    studio, info, r = _three_attempts(make_studio, photo, [0.2, 0.5, 0.3], review_mode="never")
    assert r.status == "auto_approved"
    assert studio.head(info.id).state["settings"] == {"saturation": 20}


def test_a_replan_that_repeats_the_plan_stops_replanning(make_studio, photo):
    # Same plan, same pixels, same verdict: one replan shows it, a second would only
    # make an identical version ("no face found" said once, not three times).
    class NoFaceJudge(ScriptedJudge):
        def assess(self, request):
            a = super().assess(request)
            a.diagnoses = ["target_not_found"]
            return a

    planner = ScriptedPlanner()
    studio = make_studio(planner, NoFaceJudge([0.3]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "saturation+60")
    assert len(planner.requests) == 2
    assert r.status == "awaiting_review"
    assert len([a for a in studio.history(info.id) if a.turn == 1]) == 1  # one version, not three
    assert any("same as the last" in w for w in r.warnings)


def test_low_score_then_a_passing_replan_is_kept(make_studio, photo):
    calls = []

    def varied(request):
        calls.append(request)
        return plan_from_text(f"vibrance+{30 - 10 * (len(calls) - 1)}")

    planner = ScriptedPlanner(varied)
    studio = make_studio(planner, ScriptedJudge([0.2, 0.9]))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "vibrance+30")
    assert r.status == "auto_approved" and len(planner.requests) == 2
    statuses = sorted(a.status for a in studio.history(info.id) if a.turn == 1)
    assert statuses == ["auto_approved", "rejected"]  # the first attempt stays in the DAG, rejected


def test_review_mode_never_keeps_a_spent_low_score_without_asking(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.3]))
    info = studio.start_session(photo, review_mode="never")
    r = studio.send_message(info.id, "clarity+20")
    assert r.status == "auto_approved" and r.review is None


def test_review_mode_always_asks_even_for_a_high_score(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.99]))
    info = studio.start_session(photo, review_mode="always")
    assert studio.send_message(info.id, "shadows+20").status == "awaiting_review"


def test_a_failing_planner_is_retried_a_bounded_number_of_times_then_the_turn_fails_cleanly(make_studio, photo):
    def broken(request):
        if "brightness" in request.message:
            raise PlanError("sub_goals[0].op: unknown op 'brightness'")
        return plan_from_text(request.message)

    planner = ScriptedPlanner(broken)
    studio = make_studio(planner)
    info = studio.start_session(photo)
    before = [a.id for a in studio.history(info.id)]
    r = studio.send_message(info.id, "brightness up")
    assert len(planner.requests) == 1 + studio.config.max_error_retries
    assert "previous attempt failed" in planner.requests[1].feedback
    assert r.status == "failed"
    assert "unknown op 'brightness'" in r.reply and "unchanged" in r.reply
    assert studio.head(info.id).id == info.head_asset_id
    assert [a.id for a in studio.history(info.id)] == before
    # the session goes on: the next turn works
    assert studio.send_message(info.id, "exposure+10").status == "auto_approved"


def test_a_failing_judge_ends_the_turn_with_the_head_unchanged(make_studio, photo):
    def broken(request):
        raise RuntimeError("the judge could not read the image")

    studio = make_studio(ScriptedPlanner(), ScriptedJudge(score_fn=broken))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "exposure+10")
    assert r.status == "failed" and "could not read the image" in r.reply
    assert studio.head(info.id).id == info.head_asset_id
    assert all(a.status == "rejected" for a in studio.history(info.id) if a.turn == 1)


def test_an_error_then_a_good_plan_recovers_within_the_turn(make_studio, photo):
    calls = []

    def flaky(request):
        calls.append(request)
        if len(calls) == 1:
            raise PlanError("sub_goals[0].value: 400 is outside its range -100..100")
        return plan_from_text("exposure+10")

    studio = make_studio(ScriptedPlanner(flaky))
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "brighter")
    assert r.status == "auto_approved" and len(calls) == 2


def test_a_request_the_planner_does_not_understand_changes_nothing(make_studio, photo):
    studio = make_studio()
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "write me a poem")
    assert r.status == "not_understood" and "don't know" in r.reply
    assert r.asset_id is None and len(studio.history(info.id)) == 1


def test_checkpoints_hold_small_records_never_pixels(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo)
    studio.send_message(info.id, "temperature+20 contrast+10@sky")
    session = studio.store.get_session(info.id)
    snapshot = studio.graph.get_state({"configurable": {"thread_id": session.active_thread}})
    text = json.dumps(snapshot.values)  # plain JSON: no arrays, no bytes
    assert len(text) < 8000
    assert snapshot.interrupts and json.dumps(snapshot.interrupts[0].value)


# -- the config -----------------------------------------------------------------------------

def test_config_has_the_numbers_of_the_issue():
    c = load_config()
    assert (c.max_sub_goals, c.max_retries_per_sub_goal, c.min_pass_score, c.auto_approve_threshold,
            c.budget_tokens, c.keep_recent_turns, c.review_mode) == (6, 2, 0.6, 0.9, 2000, 3, "below_auto_approve")
    assert c.max_upload_pixels == 50_000_000 and c.proxy_long_side == 1600


@pytest.mark.parametrize("raw, key", [
    ({"quality": {"min_pass_score": 1.5}}, "quality.min_pass_score"),
    ({"review": {"review_mode": "sometimes"}}, "review.review_mode"),
    ({"planning": {"max_sub_goals": 2.5}}, "planning.max_sub_goals"),
    ({"planning": {"max_subgoals": 3}}, "planning.max_subgoals"),
    ({"quality": {"min_pass_score": 0.9, "auto_approve_threshold": 0.8}}, "quality.min_pass_score"),
])
def test_a_bad_config_value_names_its_key(raw, key):
    with pytest.raises(AgentConfigError, match=key.replace(".", r"\.")):
        config_from_mapping(raw)
