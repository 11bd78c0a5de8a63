"""Typed failure kinds with retries and backoff per kind, and the three review tiers in the turn's details."""

from __future__ import annotations

import time

import pytest

from agent.config import AgentConfigError, load_config
from agent.loop.failures import backoff_seconds, classify, failure_policy
from agent.planning.base import PlanError
from tests.conftest import ScriptedJudge, ScriptedPlanner, plan_from_text


def _failing(exc_factory, then_ok_after: int | None = None):
    def script(request):
        if then_ok_after is None or len(calls) < then_ok_after:
            calls.append(request)
            raise exc_factory()
        calls.append(request)
        return plan_from_text(request.message)
    calls: list = []
    return ScriptedPlanner(script), calls


@pytest.mark.parametrize("exc, node, kind", [
    (TimeoutError("read timed out"), "planner", "model_timeout"),
    (RuntimeError("the model refused: I can't help with that"), "planner", "model_refused"),
    (PlanError("sub_goals[0].op: unknown op 'brightness'"), "planner", "plan_invalid"),
    (MemoryError(), "executor", "render_error"),
])
def test_failures_are_typed(exc, node, kind):
    assert classify(exc, node) == kind


def test_each_kind_has_its_own_retries_and_the_turn_records_them(make_studio, photo):
    policy = {"model_timeout": {"retries": 1, "backoff_s": 0.2}, "model_refused": {"retries": 0}}
    planner, calls = _failing(lambda: TimeoutError("the model timed out"))
    studio = make_studio(planner, failures=policy)
    info = studio.start_session(photo)
    t0 = time.monotonic()
    r = studio.send_message(info.id, "exposure+10")
    assert r.status == "failed" and "unchanged" in r.reply
    assert len(calls) == 2                                      # one retry for a timeout
    assert time.monotonic() - t0 >= 0.2                         # after its backoff
    assert r.details["failure_counts"] == {"model_timeout": 2}
    assert [f["kind"] for f in r.details["failures"]] == ["model_timeout", "model_timeout"]

    refused, refused_calls = _failing(lambda: RuntimeError("the model refused: no"))
    studio2 = make_studio(refused, failures=policy)
    r2 = studio2.send_message(studio2.start_session(photo).id, "exposure+10")
    assert r2.status == "failed" and len(refused_calls) == 1    # a refusal is not retried

    flaky, flaky_calls = _failing(lambda: TimeoutError("timed out"), then_ok_after=1)
    studio3 = make_studio(flaky, failures=policy)
    r3 = studio3.send_message(studio3.start_session(photo).id, "exposure+10")
    assert r3.status == "auto_approved" and len(flaky_calls) == 2


def test_backoff_doubles_and_is_capped():
    policy = failure_policy({"model_timeout": {"retries": 3, "backoff_s": 2}, "max_backoff_s": 5})
    assert [backoff_seconds(policy, "model_timeout", n) for n in (1, 2, 3)] == [2, 4, 5]
    assert backoff_seconds(policy, "plan_invalid", 1) == 0


@pytest.mark.parametrize("failures, key", [
    ({"model_hiccup": {"retries": 1}}, "failures.model_hiccup"),
    ({"model_timeout": {"retries": -1}}, "failures.model_timeout.retries"),
    ({"model_timeout": {"wait": 1}}, "failures.model_timeout.wait"),
])
def test_bad_failure_settings_name_the_key(failures, key):
    with pytest.raises(AgentConfigError, match=key.replace(".", r"\.")):
        load_config().with_overrides(failures=failures)


def test_review_mode_never_still_replans_a_rejected_turn_and_the_trace_says_which_tier(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.3, 0.95]))
    info = studio.start_session(photo, review_mode="never")
    r = studio.send_message(info.id, "clarity+20")
    assert len(planner.requests) == 2 and "scored 0.30" in planner.requests[1].feedback
    assert [t["tier"] for t in r.details["tiers"]] == ["reject", "auto_accept"]
    assert r.details["review_tier"] == "auto_accept" and r.status == "auto_approved"


def test_the_middle_tier_asks_the_person(make_studio, photo):
    config = load_config()
    middle = (config.min_pass_score + config.auto_approve_threshold) / 2
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([middle]))
    r = studio.send_message(studio.start_session(photo).id, "clarity+20")
    assert r.status == "awaiting_review" and r.details["review_tier"] == "ask"
    tier = r.details["tiers"][0]
    assert tier["auto_accept"] == config.auto_approve_threshold and tier["reject_below"] == config.min_pass_score
