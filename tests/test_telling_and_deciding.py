"""What people tell before they ask, questions said as statements, and review decisions in their own words.

Real parts: the embedded planner and judge, a Studio on a real SQLite store, skimage photos, and the eval
runner playing a review-mode scenario end to end.
"""

from __future__ import annotations

import pytest

from agent.eval.runner import RunOptions, flatten, run_suite
from agent.eval.scenarios import scenario_from_dict
from agent.planning.base import PlanRequest
from conftest import small_photo
from pipeline.state import EditState


def _ops(planner, message: str) -> list[tuple[str, str | None]]:
    plan = planner.plan(PlanRequest(message=message, state=EditState()))
    return [(g.op, (g.target or {}).get("type") if g.target else None) for g in plan.sub_goals]


# -- letters held down ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("typed, meant", [("pleeease", "please"), ("nooo", "no"), ("cooool", "cool"),
                                          ("yesss", "yes"), ("brighterrr", "brighter"), ("warmerrr", "warmer")])
def test_a_letter_held_down_is_the_word_meant(planner, typed, meant):
    assert planner.vocab.spell(typed) == meant


def test_a_held_letter_never_shrinks_a_word_to_one_letter(planner):
    assert planner.vocab.spell("zzz") == "zzz"


def test_a_held_down_request_is_the_request(planner):
    assert _ops(planner, "make it warmerrr pleeease") == [("temperature", None)]


# -- telling before asking --------------------------------------------------------------------------------------

@pytest.mark.parametrize("said", ["hi this is my cat mochi", "hello we took this in wales last year",
                                  "hi there this is my dog", "Good morning. I am preparing a poster for my pupils "
                                  "about women who went to space.", "we're making a flyer for the shop"])
def test_telling_what_the_photo_is_or_what_i_do_changes_nothing(studio, router, said):
    sid = studio.start_session(small_photo("astronaut")).id
    before = studio.head(sid).id
    assert router.route(said).kind == "chat"
    result = studio.send_message(sid, said)
    assert studio.head(sid).id == before and result.status == "answered", result.reply
    assert "don't know how" not in result.reply


@pytest.mark.parametrize("said", ["I'm preparing a poster, make it brighter", "i am trying to make her brighter",
                                  "hey its too dark", "hello i want it warmer"])
def test_a_request_told_with_what_i_do_is_still_a_request(router, said):
    assert router.route(said).kind == "modification"


def test_a_photo_presented_as_a_close_up_of_a_thing_is_the_photo(planner):
    """"this is a close up of the rough": what the photo shows, so "brighten it" is the whole photo; "black and
    white shot" says what kind of photo it is, and asks for no conversion."""
    said = ("Howya. This is a close up of the rough on the 7th hole, black and white shot. Could you brighten it "
            "up a good bit, it's awful gloomy.")
    assert _ops(planner, said) == [("exposure", None)]
    assert _ops(planner, "this is a photo of my nan, make it warmer") == [("temperature", None)]


def test_a_look_said_alone_with_a_word_for_the_photo_is_still_asked(planner):
    assert _ops(planner, "black and white shot") == [("saturation", None)]
    assert _ops(planner, "this is my nan, black and white shot please") == [("saturation", None)]


def test_a_thing_that_says_why_a_whole_photo_request_was_made_is_no_place(planner):
    """"more colourful please, the mountain looks so grey": grey is why; the colour is asked of the whole photo,
    and the other fix for grey (contrast) is not added."""
    assert _ops(planner, "Make the whole picture more colourful please, the mountain look so grey") \
        == [("saturation", None)]
    # a thing whose fix is nothing that was asked is still asked about
    plan = planner.plan(PlanRequest(message="warm it up, the lamp is too bright", state=EditState()))
    assert plan.kind == "clarify" and not plan.sub_goals


def test_too_white_is_too_bright(planner):
    ops = {op for op, _ in _ops(planner, "it is too white")}
    assert ops and ops <= {"highlights", "whites", "exposure"}
    plan = planner.plan(PlanRequest(message="it is too white", state=EditState()))
    assert all(g.value < 0 for g in plan.sub_goals)


# -- a colour said of a thing that has none ------------------------------------------------------------------

@pytest.mark.parametrize("said, warmer", [("the page looks blue. fix", True), ("the paper has gone a bit yellow", False),
                                          ("the white wall looks yellow", False), ("her white shirt is too blue", True)])
def test_a_colour_said_of_a_neutral_thing_is_a_cast_on_the_whole_photo(planner, said, warmer):
    plan = planner.plan(PlanRequest(message=said, state=EditState()))
    assert [(g.op, g.target) for g in plan.sub_goals] == [("temperature", None)], plan.reply
    assert (plan.sub_goals[0].value > 0) == warmer
    assert "skipped" not in plan.reply


def test_a_colour_asked_of_a_neutral_thing_is_still_asked_there(planner):
    """Asked, not said of how it is; and snow, which a place finds (the brightest tones), keeps its cast there
    (tests/test_dialogue_other_words.py)."""
    assert _ops(planner, "make the snow blue") == [("saturation_blue", "luminance")]
    assert _ops(planner, "the snow looks blue") == [("saturation_blue", "luminance")]


@pytest.mark.parametrize("said", ["the snow looks grey and kinda blue", "the sky is white and blue",
                                  "make the paper blue"])
def test_words_that_only_look_like_a_neutral_thing_with_a_cast_are_left_as_said(said):
    from agent.conversation.words import cast_said_of_a_neutral_thing, tokenize

    assert cast_said_of_a_neutral_thing(tokenize(said)) == tokenize(said)


@pytest.mark.parametrize("said", ["too dark. fix", "too dark. sort it out", "too dark, fix that pls", "too dark, help"])
def test_fix_said_after_a_complaint_asks_for_its_fix(planner, said):
    plan = planner.plan(PlanRequest(message=said, state=EditState()))
    assert [g.op for g in plan.sub_goals] == ["exposure"] and "skipped" not in plan.reply, plan.reply


# -- questions said as statements -------------------------------------------------------------------------------

@pytest.mark.parametrize("said", ["Is good for Instagram like this, you think?", "too dark, ya reckon?",
                                  "drone sharp enough?", "bright enough now?", "is it sharp enough?",
                                  "Would you say the detail on them is clear enough for a printed catalogue?",
                                  "would you say it's too dark?"])
def test_asked_with_a_tag_or_enough_is_answered_and_changes_nothing(studio, router, said):
    assert router.route(said).kind in ("evaluation", "exploration")
    sid = studio.start_session(small_photo("coffee")).id
    before = studio.head(sid).id
    result = studio.send_message(sid, said)
    assert studio.head(sid).id == before and not result.asset_id, result.reply
    assert result.reply.strip()


@pytest.mark.parametrize("said", ["make it bright enough?", "can you make it sharp enough to print?",
                                  "would you make it brighter?"])
def test_asked_for_with_enough_is_a_request(router, said):
    assert router.route(said).kind == "modification"


# -- review decisions in the person's words ---------------------------------------------------------------------

@pytest.mark.parametrize("said", ["Splendid, I'll keep that.", "Yes, that's an improvement. Please keep it.",
                                  "That's better, I'll take it.", "lets go with it"])
def test_approval_said_as_my_own_decision(reviewing, said):
    sid = reviewing.start_session(small_photo("coffee")).id
    pending = reviewing.send_message(sid, "warmer")
    result = reviewing.send_message(sid, said)
    assert result.status == "approved", result.reply
    assert reviewing.head(sid).id == pending.asset_id
    assert [r["content"] for r in reviewing.chat_log(sid) if r["role"] == "user"] == ["warmer", said]


@pytest.mark.parametrize("said", ["dont keep the sky blue", "no, keep it warmer", "I'll keep that but warmer",
                                  "i will keep the sky as it is"])
def test_keep_said_of_a_change_or_a_place_decides_nothing(router, said):
    assert router.review_decision(said) is None


def _review_scenario(decision: str) -> list[dict]:
    scenario = scenario_from_dict({"id": "review-in-words", "image": "coffee", "review_mode": "always", "steps": [
        {"say": "make it warmer", "kind": "edit", "expect": {"b_mean": {"up": 1}}},
        {"say": decision, "kind": "review", "expect": {"same_as_step": 1}},
    ]}, suite="conversation")
    turns, _ = flatten(run_suite([scenario], RunOptions(long_side=256)))
    return turns


def test_the_eval_measures_an_approval_in_words_by_what_the_studio_did():
    """The runner leaves a version under review to the Studio when the words decide about it: an approval the
    Studio understands moves the head to it and passes; words it cannot read as one are a move on (the runner
    keeps the version, as the studio does) and fail, since nothing was done for them."""
    understood = _review_scenario("Splendid, I'll keep that.")
    assert understood[1]["status"] == "approved" and understood[1]["pixel_pass"] is True
    not_read = _review_scenario("mmkay whatever")
    assert not_read[1]["implicit_approve"] is True and not_read[1]["pixel_pass"] is False
