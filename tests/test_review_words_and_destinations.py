"""A version under review approved or turned down in words, a going back said as where to go ("back to just the
face"), thanks said at length, what a photo is for said as "for the cafe insta", how far said after a quality
("boost the contrast further") and the darkroom's dodge and burn.

Real parts only: the engine profile, the embedded planner and judge, a real SQLite store and real skimage
photos, checked by where the head lands and by the saved state.
"""

from __future__ import annotations

import pytest

from agent.planning.base import PlanRequest
from conftest import assert_goes_back, small_photo
from pipeline.state import EditState


def _moves(planner, message: str) -> list[tuple[str, int, str | None]]:
    plan = planner.plan(PlanRequest(message=message, state=EditState()))
    return [(g.op, g.value, (g.target or {}).get("type") if g.target else None) for g in plan.sub_goals]


# -- review in words ------------------------------------------------------------------------------

@pytest.mark.parametrize("said", ["yep, apply that", "looks good, go with it", "yes that's nicer, keep it",
                                  "looks right, apply", "perfect 👍"])
def test_approval_in_words_keeps_the_version_under_review(reviewing, said):
    """Said while a version waits for review, an approval with nothing else asked keeps that version: it becomes
    the head, and no new version is made."""
    sid = reviewing.start_session(small_photo("coffee")).id
    before = reviewing.head(sid).id
    pending = reviewing.send_message(sid, "warmer")
    assert pending.status == "awaiting_review" and reviewing.head(sid).id == before
    result = reviewing.send_message(sid, said)
    assert result.status == "approved", result.reply
    assert reviewing.head(sid).id == pending.asset_id
    assert reviewing.pending_review(sid) is None
    # the chat keeps the person's words, between the request and the reply that says the version was kept
    log = [(row["role"], row["content"]) for row in reviewing.chat_log(sid)]
    assert log[:2] == [("user", "warmer"), ("user", said)], log
    assert log[2][0] == "assistant" and "Kept this version" in log[2][1], log


@pytest.mark.parametrize("said", ["no", "nah, no thanks", "nope",
                                  # an approval said with a no before it
                                  "Oh dear, no. That's far too garish. I shan't keep that one.", "i wont keep it",
                                  "I would not use that one", "cant keep that"])
def test_a_no_turns_the_version_under_review_down(reviewing, said):
    sid = reviewing.start_session(small_photo("coffee")).id
    before = reviewing.head(sid).id
    reviewing.send_message(sid, "warmer")
    result = reviewing.send_message(sid, said)
    assert result.status == "rolled_back", result.reply
    assert reviewing.head(sid).id == before and reviewing.pending_review(sid) is None
    log = [(row["role"], row["content"]) for row in reviewing.chat_log(sid)]
    assert log[:2] == [("user", "warmer"), ("user", said)] and log[2][0] == "assistant", log


def test_the_approve_button_adds_no_words_of_its_own(reviewing):
    """A decision made with the button (or the CLI's /approve) says nothing: the chat shows the request and the
    reply, and no "/approve" row."""
    sid = reviewing.start_session(small_photo("coffee")).id
    reviewing.send_message(sid, "warmer")
    assert reviewing.review(sid, "approve").status == "approved"
    log = [(row["role"], row["content"]) for row in reviewing.chat_log(sid)]
    assert [role for role, _ in log] == ["user", "assistant"] and log[0] == ("user", "warmer"), log


def test_undo_typed_during_review_stays_in_the_chat(reviewing):
    sid = reviewing.start_session(small_photo("coffee")).id
    reviewing.send_message(sid, "warmer")
    assert reviewing.send_message(sid, "undo").status == "rolled_back"
    log = [(row["role"], row["content"]) for row in reviewing.chat_log(sid)]
    assert log[:2] == [("user", "warmer"), ("user", "undo")], log


def test_a_no_that_asks_for_something_else_is_a_new_request(reviewing):
    """"no, more saturation": the version under review is kept as the person goes on, and the new one is made."""
    sid = reviewing.start_session(small_photo("coffee")).id
    reviewing.send_message(sid, "warmer")
    result = reviewing.send_message(sid, "no, more saturation")
    assert result.status == "awaiting_review"
    assert [g["op"] if isinstance(g, dict) else g.op for g in result.sub_goals] == ["saturation"]


def test_approval_words_with_a_request_are_no_approval(router):
    assert router.says_approve("looks good, go with it") and router.says_approve("yep, apply that")
    assert not router.says_approve("keep it warmer")
    assert not router.says_approve("brighter, then apply it")
    assert not router.says_approve("no, don't keep that")


# -- going back to a version said as "just X" ---------------------------------------------------------

@pytest.mark.parametrize("kept, later, said", [
    (["darken the background"], ["warmer", "more saturated"],
     "ok undo all the warm stuff, go back to just the background fix"),
    (["brighten the face"], ["more contrast", "warmer"], "and the contrast too. back to just the face"),
    (["warmer"], ["more contrast", "brighter"], "revert to only the warm one"),
])
def test_back_to_just_a_change_is_the_version_that_had_only_it(studio, kept, later, said):
    """"Go back to just X" names where to go: the version with that change and nothing after it, even when the
    message also names a change to take out."""
    assert_goes_back(studio, small_photo("astronaut"), kept, later, said)


def test_undo_just_a_change_still_takes_out_only_that(router):
    """"undo just the contrast" takes out one change; it names no version to go to."""
    backs = router.going_back.read("undo just the contrast")
    assert [b.kind for b in backs] == ["change"] and backs[0].named == ["contrast"]


# -- thanks, what the photo is for, how far -----------------------------------------------------------

@pytest.mark.parametrize("said", ["Thank you ever so much", "thank you very much", "much obliged",
                                  "thanks a million", "thanks for your help", "thanks heaps", "merci"])
def test_thanks_said_at_length_is_thanked_back(router, said):
    route = router.route(said)
    assert (route.kind, route.name) == ("chat", "thanks")


def test_thanks_with_a_request_is_the_request(router):
    assert router.route("thanks, much brighter please").kind == "modification"


def test_what_the_photo_is_for_is_no_place(planner):
    """"for the cafe insta", "this photo for a dating app profile": what the photo is for, not where to edit."""
    moves = _moves(planner, "need this for the cafe insta, can ya make it look warmer?")
    assert any(op == "temperature" and value > 0 and target is None for op, value, target in moves), moves
    moves = _moves(planner, "I want use this photo for dating app profile. Please make it more bright.")
    assert ("exposure", 20, None) in moves and all(target is None for _, _, target in moves), moves
    # a place said with "for" that is no use of a photo stays a place
    assert _moves(planner, "more contrast for the sky") == [("contrast", 40, "sky")]


@pytest.mark.parametrize("message", ["increase the contrast further", "boost the contrast further",
                                     "Push the contrast further. Considerably further."])
def test_how_far_after_a_quality_is_no_place(planner, message):
    assert _moves(planner, message) == [("contrast", 40, None)]


def test_the_darkroom_words_dodge_and_burn(planner):
    [(op, value, target)] = _moves(planner, "burn in the top of the frame a little")
    assert op == "exposure" and value < 0 and target == "gradient"
    [(op, value, _)] = _moves(planner, "dodge the shadows a bit")
    assert op == "exposure" and value > 0


@pytest.mark.parametrize("message", ["make the colours stronger", "colours up a bit", "push the colours"])
def test_colours_said_stronger_or_up_is_more_saturation(planner, message):
    [(op, value, target)] = _moves(planner, message)
    assert op == "saturation" and value > 0 and target is None


@pytest.mark.parametrize("said", ["From which year is this model of telephone, can you see it?",
                                  "I don't suppose you can tell which part of the abbey this is, just from the picture?",
                                  "any chance you can tell what year this is?"])
def test_questions_opened_with_a_preposition_or_a_hedge_are_asked(studio, router, said):
    """Answered, nothing changed: the head stays and the reply is no "I don't know how to do that"."""
    assert router.route(said).kind == "evaluation"
    sid = studio.start_session(small_photo("camera")).id
    head = studio.head(sid).id
    result = studio.send_message(sid, said)
    assert result.status == "answered" and studio.head(sid).id == head
    assert "don't know how" not in result.reply


@pytest.mark.parametrize("said", ["any chance you could make it warmer?", "I don't suppose you could make it warmer?",
                                  "i wonder if you could warm it up a bit"])
def test_a_hedged_request_is_still_a_request(studio, said):
    sid = studio.start_session(small_photo("camera")).id
    result = studio.send_message(sid, said)
    assert [g["op"] if isinstance(g, dict) else g.op for g in result.sub_goals] == ["temperature"], result.reply


# -- going back said with an aside, or by what came after --------------------------------------------

def test_a_going_back_said_with_if_im_honest_is_no_supposition(studio, router):
    """"if I'm honest" supposes nothing ("if I don't like it can I undo later?" still does)."""
    assert router.route("I preferred it before the arches were lightened, if I'm honest.").kind == "command"
    assert router.route("if I don't like it can I undo later?").kind != "command"
    assert_goes_back(studio, small_photo("camera"), ["more contrast"], ["brighten the shadows", "warmer"],
                     "Hmm. I think I preferred it before the shadows were lightened, if I'm honest.")


def test_a_version_named_in_other_words_is_found_by_what_it_came_before(studio):
    """"back to when it was only the contrast, before the toning", where the contrast was asked as "the blacks
    properly black and the whites brighter": the version before the toning."""
    assert_goes_back(studio, small_photo("camera"), ["I'd like the blacks properly black and the whites brighter"],
                     ["Give it a subtle warm tone, like a selenium toner", "more saturated"],
                     "Actually, take me back to when it was only the contrast, before the toning.")


def test_contrast_said_too_harsh_is_less_contrast(planner):
    assert _moves(planner, "hmm contrast is too harsh now") == [("contrast", -35, None)]
    # harsh said of light or a place still softens
    assert ("clarity", -14, None) in _moves(planner, "the light is too harsh")


def test_too_much_on_a_place_pulls_back_the_change_made_there_with_a_part_kept_out(studio):
    """"too much, like cartoon sky" after the sky was made bluer with the bottom kept: that change is pulled
    back (it said "already fully taken back" and changed nothing)."""
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "make the sky more deep blue. The lights at the bottom should stay same only")
    made = studio.send_message(sid, "More. Make it double")
    assert [g["op"] if isinstance(g, dict) else g.op for g in made.sub_goals] == ["saturation_blue"]
    result = studio.send_message(sid, "Now it is looking too much artificial, like cartoon sky")
    assert "already fully taken back" not in result.reply and studio.head(sid).id != made.head_asset_id
    [goal] = result.sub_goals
    assert (goal["op"] if isinstance(goal, dict) else goal.op) == "saturation_blue"


# -- a colour stated with "X's", the white balance said short -------------------------------------------

@pytest.mark.parametrize("message", ["snow's blue. make it white", "the snow's blue, make it white"])
def test_a_colour_stated_with_an_apostrophe_s_is_what_the_thing_is(planner, message):
    """"snow's blue." is the snow is blue: less blue there (it saturated the blues)."""
    [(op, value, _)] = _moves(planner, message)
    assert op == "saturation_blue" and value < 0


def test_a_possessive_before_a_colour_and_a_noun_stays_whose(planner):
    """"the sky's blue tones" is whose: the blues asked richer, not a cast stated."""
    assert ("saturation_blue", 20, None) in _moves(planner, "the sky's blue tones are nice, make them richer")


def test_everythings_yellow_is_a_cast_stated(planner):
    assert _moves(planner, "wb is way off, everythings yellow from the lamp. fix pls") == [("temperature", -25, None)]


def test_the_white_balance_said_short_is_corrected_from_the_photo(studio):
    """"wb is way off" measures the cast and counters it (it warmed the photo by +20, "wb" read as the slider)."""
    from pipeline.measure import image_stats
    sid = studio.start_session(small_photo("coffee")).id
    before = image_stats(studio.render(sid, studio.head(sid).id))["b_mean"]
    studio.send_message(sid, "wb is way off")
    after = image_stats(studio.render(sid, studio.head(sid).id))["b_mean"]
    assert before > 10 and after < before - 2      # the coffee's yellow cast is taken down
