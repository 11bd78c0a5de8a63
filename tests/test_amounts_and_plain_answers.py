"""Amounts said the way photographers and everyone else say them, and plain answers that are not requests.

Exposure in stops and EV, a spelled-out percentage, "to about half", a bare number as the last change's new
amount, "do it a lot"; the original named as an answer ("the very first one, as I sent it", "give me the
untouched photo", "reset the whole lot"); a share of the last change that is no count of steps; excess said by
how it comes across ("a bit heavy-handed", "the red is very aggressive"); a thing's name that holds a quality
word ("a mood board"); a statement whose verb sets nothing; questions that end "or is it ...?" or ask whether
a way exists.

Real parts only: the engine profile, the embedded planner and judge, a real SQLite store and real skimage
photos, measured in the saved state and the rendered pixels.
"""

from __future__ import annotations

import pytest

from agent.conversation.router import Router
from agent.conversation.words import amounts_said, excess_phrases
from agent.judging.embedded import EmbeddedJudge
from agent.planning.base import PlanRequest
from agent.planning.embedded import EmbeddedPlanner
from conftest import assert_goes_back, small_photo
from pipeline.state import EditState
from profiles import load_profile


@pytest.fixture
def studio(make_studio):
    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")


@pytest.fixture(scope="module")
def planner():
    return EmbeddedPlanner()


def _moves(planner, message: str) -> list[tuple[str, int, str | None]]:
    plan = planner.plan(PlanRequest(message=message, state=EditState()))
    return [(g.op, g.value, (g.target or {}).get("type") if g.target else None) for g in plan.sub_goals]


@pytest.mark.parametrize("message, value", [
    ("darken it a third of a stop", -17),
    ("brighten by half a stop", 25),
    ("+0.5 EV", 25),
    ("-1/3 ev please", -17),
    ("a stop and a half brighter", 75),
])
def test_exposure_said_in_stops_is_fifty_units_a_stop(planner, message, value):
    """The exposure op is 100 = +2 EV: a stop is 50, whichever way the amount is written."""
    assert _moves(planner, message) == [("exposure", value, None)]


def test_a_place_and_a_share_of_a_stop_with_no_verb(planner):
    """"Sky, another third of a stop down": the sky, a third of a stop darker."""
    assert _moves(planner, "Sky, another third of a stop down.") == [("exposure", -17, "sky")]
    assert _moves(planner, "Pull the sky down by about a third of a stop.") == [("exposure", -17, "sky")]


def test_stop_words_that_are_no_amount_stay_as_said():
    for text in ("there is a stop sign", "one stop shop", "stop, that's enough"):
        assert amounts_said(text) == text


def test_a_spelled_out_percentage_is_its_number(planner):
    assert amounts_said("darken by roughly ten percent") == "darken by roughly 10 percent"
    assert amounts_said("twenty-five per cent more") == "25 per cent more"
    assert _moves(planner, "darken by ten percent") == [("exposure", -10, None)]


def test_to_about_half_is_half_the_range_not_half_the_last_change(planner):
    assert _moves(planner, "ok desaturate it to about half") == [("saturation", -50, None)]
    assert amounts_said("bring it back to half") == "bring it back to half"


def test_a_setting_named_beside_a_quality_that_moves_it_is_what_it_acts_on(planner):
    """"darken the exposure" once said brightening and darkening cancel out; the setting's name only says
    which setting the quality moves."""
    assert _moves(planner, "darken the exposure a bit") == [("exposure", -10, None)]
    assert _moves(planner, "desaturate the saturation") == [("saturation", -20, None)]


def test_pull_is_down_and_pull_up_is_up(planner):
    assert _moves(planner, "pull exposure slightly") == [("exposure", -10, None)]
    assert _moves(planner, "pull the highlights") == _moves(planner, "lower the highlights")
    assert all(value < 0 for _, value, _ in _moves(planner, "pull the highlights"))
    assert [m[:2] for m in _moves(planner, "pull up the shadows")][0][1] > 0


def test_a_capitalised_separable_verb_joins_its_particle(planner):
    """"Pull the sky down" at the start of a sentence reads as "pull the sky down"."""
    assert _moves(planner, "Pull the sky down") == _moves(planner, "pull the sky down") == [("exposure", -20, "sky")]


def test_less_of_a_more_labelled_quality_reads_plainly(planner):
    plan = planner.plan(PlanRequest(message="less clarity", state=EditState()))
    assert "less more" not in plan.reply.lower() and "lowering the clarity" in plan.reply.lower()


def test_a_number_alone_is_the_last_changes_new_amount(studio):
    """"make it 10" after clarity +30 takes two thirds back; "try 45" makes it half as much again; the same
    amount again is said, and nothing changes."""
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "add some clarity")
    first = studio.head(sid).state["settings"]["clarity"]
    same = studio.send_message(sid, f"actually make it +{first}")
    assert same.kind == "clarify" and "already" in same.reply
    assert studio.head(sid).state["settings"]["clarity"] == first
    studio.send_message(sid, "make it 10")
    assert studio.head(sid).state["settings"]["clarity"] == 10
    studio.send_message(sid, "try 15 instead")
    assert studio.head(sid).state["settings"]["clarity"] == 15


def test_do_it_a_lot_is_the_last_change_again_by_a_lot(studio):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "desaturate a tiny bit")
    small = studio.head(sid).state["settings"]["saturation"]
    result = studio.send_message(sid, "now do it a LOT")
    assert result.status != "not_understood", result.reply
    assert studio.head(sid).state["settings"]["saturation"] < small * 2


@pytest.mark.parametrize("said", [
    "Actually, the very first one, as I sent it.",
    "nah just give me the untouched photo",
    "reset the whole lot",
])
def test_the_original_said_as_an_answer_goes_back_to_it(studio, said):
    assert_goes_back(studio, small_photo("astronaut"), [], ["warmer", "more contrast"], said)


def test_the_original_in_a_question_or_a_complaint_is_no_going_back(studio):
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "warmer")
    head = studio.head(sid).id
    for said in ("is this the original?", "keep the original crop"):
        result = studio.send_message(sid, said)
        assert result.status != "rolled_back", (said, result.reply)
    assert studio.head(sid).id == head


def test_a_percentage_taken_back_is_a_share_not_fifty_steps(studio):
    """"take back like 50 percent of the light" after three changes: half of the last one, never the original."""
    sid = studio.start_session(small_photo("astronaut")).id
    for message in ("warmer", "more contrast", "brighter"):
        studio.send_message(sid, message)
    bright = studio.head(sid).state["settings"]["exposure"]
    result = studio.send_message(sid, "hmm now is too much, take back like 50 percent of the light")
    assert result.status != "rolled_back", result.reply
    settings = studio.head(sid).state["settings"]
    assert 0 < settings["exposure"] < bright and settings["temperature"] > 0 and settings["contrast"] > 0


def test_excess_said_by_how_it_comes_across(studio, planner):
    assert _moves(planner, "No, now it look not natural, the red is very aggressive.") == [("saturation_red", -20, None)]
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "much more contrast")
    strong = studio.head(sid).state["settings"]["contrast"]
    result = studio.send_message(sid, "That's a bit heavy-handed.")
    assert result.status != "not_understood" and 0 < studio.head(sid).state["settings"]["contrast"] < strong


def test_excess_words_are_not_the_profiles_quality_words():
    """An excess word that is also a quality or complaint word ("garish": less saturated) would lose its own
    reading inside "way too garish"; the profile keeps them apart."""
    vocab = EmbeddedPlanner().vocab
    engine = load_profile("engine").vocabulary
    for phrase in excess_phrases(engine, only_alone=True):
        last = tuple(phrase.split()[-1:])
        assert vocab.phrases.get(last, ("",))[0] not in ("intent", "fix", "problem"), phrase


def test_a_things_name_that_holds_a_quality_word_asks_for_nothing(studio):
    sid = studio.start_session(small_photo("brick")).id
    head = studio.head(sid).id
    for said in ("Hi! Putting together a mood board for a client, this is the brick swatch.",
                 "Good afternoon. My granddaughter put this program on my computer for me. This is our new puppy."):
        result = studio.send_message(sid, said)
        assert result.kind == "chat" and result.status == "answered", (said, result.reply)
    assert studio.head(sid).id == head


@pytest.mark.parametrize("said", ["my skin is looking too much red, or is normal?",
                                  "too dark, or is it my screen?",
                                  "is there a way to fix the middle girl's flyaway hair?"])
def test_questions_that_weigh_or_ask_whether_a_way_exists_change_nothing(studio, said):
    sid = studio.start_session(small_photo("astronaut")).id
    head = studio.head(sid).id
    result = studio.send_message(sid, said)
    assert result.status == "answered" and "don't know how" not in result.reply, result.reply
    assert studio.head(sid).id == head


def test_a_polite_question_that_names_a_quality_is_still_a_request():
    router = Router()
    assert router.route("is there a way to make her face less red?").kind == "modification"


def test_what_a_request_is_for_said_with_a_modal_is_no_place(planner):
    """"brighten it up some so people can actually see whats for sale": the people are who it is for, not the
    place to brighten."""
    assert _moves(planner, "ok yeah brighten it up some so people can actually see whats for sale") == \
        [("exposure", 20, None)]


def test_a_question_said_after_a_place_named_alone_changes_nothing(studio):
    sid = studio.start_session(small_photo("astronaut")).id
    head = studio.head(sid).id
    result = studio.send_message(sid, "Helmet highlight bottom right - is that clipped?")
    assert result.status == "answered" and "don't know how" not in result.reply, result.reply
    assert studio.head(sid).id == head


def test_the_double_is_twice_the_last_change(studio):
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "a little more contrast")
    once = studio.head(sid).state["settings"]["contrast"]
    studio.send_message(sid, "More strong please, the double.")
    assert studio.head(sid).state["settings"]["contrast"] > once


def test_a_place_kept_that_the_photo_does_not_have_leaves_the_request_as_asked(studio):
    """"brighten it but dont blow out the sky" on a cat with no sky: nothing to keep, so it brightens, and says
    the sky was not there; "darken the sky" on the same photo is still asked about."""
    sid = studio.start_session(small_photo("chelsea")).id
    result = studio.send_message(sid, "and brighten it but dont blow out the sky pls")
    assert result.status == "auto_approved" and "no sky here" in result.reply, result.reply
    assert studio.head(sid).state["settings"]["exposure"] > 0
    head = studio.head(sid).id
    asked = studio.send_message(sid, "darken the sky")
    assert asked.kind == "clarify" and studio.head(sid).id == head


def test_a_doubt_about_one_quality_is_answered_about_it_and_yes_makes_the_fix(studio):
    """"is it too dark?" on the deep field: yes, it is on the dark side, and "yes" brightens; on the moon: not by
    my measure, and "yes" changes nothing. "is it too flat?" never offers to flatten it."""
    dark = studio.start_session(small_photo("hubble_deep_field")).id
    answer = studio.send_message(dark, "is it too dark?")
    assert answer.reply.startswith("Yes") and "dark side" in answer.reply, answer.reply
    studio.send_message(dark, "yes")
    assert studio.head(dark).state["settings"]["exposure"] > 0
    moon = studio.start_session(small_photo("moon")).id
    for said in ("is it too dark?", "yes", "is it too flat?", "yes"):
        result = studio.send_message(moon, said)
        assert "flatten" not in result.reply.lower(), (said, result.reply)
    # ("yes" after "not by my measure" makes nothing; after a yes about flatness it adds contrast, never less)
    settings = studio.head(moon).state["settings"]
    assert settings.get("contrast", 0) >= 0 and not settings.get("exposure")


def test_would_you_mind_asks_for_the_thing_it_names(studio):
    """"would you mind reverting that?" goes back; only an opener that asks whether a way exists is a question."""
    assert_goes_back(studio, small_photo("astronaut"), [], ["warmer"], "would you mind reverting that?")


def test_absurd_amounts_are_held_to_the_ops_range(studio):
    """Typed amounts are outside input: a thousand-digit EV or "make it 999999999999" never overflows and never
    says a value past the op's scale."""
    assert amounts_said("1" * 5000 + " ev") == "100 exposure"
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "add some clarity")
    result = studio.send_message(sid, "make it 999999999999999999999")
    assert "e+" not in result.reply and studio.head(sid).state["settings"]["clarity"] <= 100, result.reply
