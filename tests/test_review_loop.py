"""The review loop and the agent's own advice, as a person uses them: "I insist" (alone, or with "more")
goes past the sweet spot the last request was held at; replan feedback changes the plan the way it says,
read against the plan under review, and never turns the request round unless told "the other way" or
"instead". A real Studio on SQLite with the embedded planner and judge."""

from __future__ import annotations

import pytest

from agent.config import load_config
from agent.service import Studio
from conftest import small_photo


@pytest.fixture
def studio(tmp_path):
    with Studio(sessions_dir=tmp_path / "sessions") as s:
        yield s


@pytest.fixture
def reviewing(tmp_path):
    with Studio(sessions_dir=tmp_path / "review", config=load_config().with_overrides(review_mode="always")) as s:
        yield s


def _value(studio, sid, op):
    return studio.head(sid).state["settings"].get(op, 0)


def test_i_insist_goes_past_the_sweet_spot_it_was_told_about(studio):
    sid = studio.start_session(small_photo("coffee", 300)).id
    studio.send_message(sid, "much much warmer")
    held = studio.send_message(sid, "even warmer")
    assert "I insist" in held.reply                               # the agent's own advice...
    if held.status == "awaiting_review":
        studio.review(sid, "approve")
    at_edge = _value(studio, sid, "temperature")
    insisted = studio.send_message(sid, "I insist")                # ...is understood
    assert insisted.status in ("auto_approved", "approved", "awaiting_review"), insisted.reply
    if insisted.status == "awaiting_review":
        studio.review(sid, "approve")
    past = _value(studio, sid, "temperature")
    assert past > at_edge
    again = studio.send_message(sid, "more, I insist")
    if again.status == "awaiting_review":
        studio.review(sid, "approve")
    assert _value(studio, sid, "temperature") > past
    said = studio.send_message(sid, "brighter, I insist")
    assert "skipped" not in said.reply and "insist" not in said.reply.split("Brightening")[0].lower()


@pytest.mark.parametrize("request_, feedback, op, expect", [
    ("brighter", "too bright", "exposure", "smaller, same way"),
    ("brighter", "more", "exposure", "larger, same way"),
    ("make it moody", "less", "exposure", "smaller, same way"),
    ("make it moody", "too dark, only a little", "exposure", "smaller, same way"),
    ("warmer", "no, cooler instead", "temperature", "reversed"),
    ("more contrast", "the other way", "contrast", "reversed"),
    ("bring out the texture a bit more", "hmm too crunchy, a bit less", "clarity", "smaller, same way"),
])
def test_replan_feedback_changes_the_plan_the_way_it_says(reviewing, request_, feedback, op, expect):
    sid = reviewing.start_session(small_photo("coffee", 300)).id
    first = reviewing.send_message(sid, request_)
    planned = next(g["value"] for g in first.sub_goals if g["op"] == op)
    again = reviewing.review(sid, "replan", feedback=feedback)
    new = next((g["value"] for g in again.sub_goals if g["op"] == op), 0)
    if expect == "smaller, same way":
        assert 0 < new * planned and abs(new) < abs(planned), (planned, new)   # never past nothing
    elif expect == "larger, same way":
        assert new * planned > 0 and abs(new) > abs(planned), (planned, new)
    else:
        assert new * planned < 0, (planned, new)
    assert again.score is not None and again.score >= 0.6, again.reply     # the judge reads it as meant too


def test_a_complaint_about_the_plan_is_not_replanned_away_nor_taken_past_the_start(reviewing):
    """"too crunchy, a bit less" after a plan that added texture: the texture is pulled back, the complaint's
    other fix (sharpening taken below nothing) is not added, and no automatic replan that reads the first
    request alone turns it back into more texture before the person sees it."""
    sid = reviewing.start_session(small_photo("gravel", 300)).id
    first = reviewing.send_message(sid, "can you bring out the texture in the stones a bit more")
    planned = {g["op"]: g["value"] for g in first.sub_goals}
    again = reviewing.review(sid, "replan", feedback="hmm too crunchy, a bit less")
    assert again.status == "awaiting_review", again.reply
    new = {g["op"]: g["value"] for g in again.sub_goals}
    assert set(new) <= set(planned), (planned, new)                       # nothing the plan did not have
    assert all(0 < new[op] * planned[op] and abs(new[op]) < abs(planned[op]) for op in new), (planned, new)


def test_a_second_replan_is_read_against_the_plan_the_first_made(reviewing):
    """"/replan too orange" then "/replan and a bit brighter": the warming stays pulled back and the
    brightening is added (the second replan started again from the first plan, warm as ever)."""
    sid = reviewing.start_session(small_photo("coffee", 300)).id
    first = reviewing.send_message(sid, "make it warmer")
    warm = next(g["value"] for g in first.sub_goals if g["op"] == "temperature")
    less = reviewing.review(sid, "replan", feedback="too orange")
    pulled = next(g["value"] for g in less.sub_goals if g["op"] == "temperature")
    both = reviewing.review(sid, "replan", feedback="and a bit brighter")
    values = {g["op"]: g["value"] for g in both.sub_goals}
    assert 0 < pulled < warm and values.get("temperature") == pulled, (warm, pulled, values)
    assert values.get("exposure", 0) > 0, values
