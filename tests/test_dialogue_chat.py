"""Chat-style talk, end to end and per part: particles and slips, "same again but less",
"too" meaning "as well", "it" pointing back to a place, and places a photo does not have.

Real parts only: the engine profile, the embedded planner and judge, a real SQLite store
and real photos (skimage.data / assets), measured in the rendered pixels where it matters.
"""

from __future__ import annotations

import numpy as np
import json

import pytest

from agent.conversation.dialogue import Change, DialogueState, TurnMoves
from agent.eval import checks
from agent.eval.runner import check_step
from agent.eval.scenarios import Condition, Expectation, Step
from agent.judging.embedded import EmbeddedJudge
from agent.planning.base import PlanRequest
from agent.planning.embedded import EmbeddedPlanner
from agent.conversation.vocabulary import Vocabulary
from conftest import small_photo
from pipeline.masks import build_mask
from pipeline.measure import image_stats
from pipeline.state import EditState
from profiles import load_profile


@pytest.fixture
def studio(make_studio):
    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")


def _plan(planner, message, state=None, dialogue=None, **kw):
    return planner.plan(PlanRequest(message=message, state=state or EditState(), dialogue=dialogue, **kw))


def _moves(plan):
    return {(g.op, (g.target or {}).get("type")): g.value for g in plan.sub_goals}


# -- the router: chat particles, "back to the start" -------------------------------------

@pytest.mark.parametrize("text", ["lol nice", "lol ok thats better", "hello? you there", "k", "kk", "cool thanks",
                                  "thnaks", "tysm", "are you still there?", "tbh looks great"])
def test_chat_particles_and_slips_are_small_talk(router, text):
    assert router.route(text).kind == "chat"


@pytest.mark.parametrize("text", ["go back to the start", "back to the beginning", "from the start pls",
                                  "undo all the changes", "ok go back to the very start, i wanna try something else",
                                  "back to square one"])
def test_back_to_the_start_is_the_original(router, text):
    r = router.route(text)
    assert (r.kind, r.name) == ("command", "original")


# -- typing slips ------------------------------------------------------------------------

def test_a_slip_of_one_letter_is_put_right_and_nothing_else_is_touched():
    vocab = Vocabulary(load_profile("engine"))
    assert vocab.spell("could you maybe make it a tad brigther?") == "could you maybe make it a tad brighter?"
    assert vocab.spell("more contrst, less satuation") == "more contrast, less saturation"
    # known words, short words and words no known word is one edit from stay as typed
    for text in ("its muddy down there", "make her smile", "colder", "the rocket take off"):
        assert vocab.spell(text) == text


@pytest.mark.parametrize("text,meant", [("and warmr", "and warmer"), ("darkr pls", "darker pls"),
                                        ("bit softr", "bit softer"), ("more yllow", "more yellow")])
def test_a_short_word_with_a_vowel_dropped_is_put_right(text, meant):
    assert Vocabulary(load_profile("engine")).spell(text) == meant


@pytest.mark.parametrize("text", ["make it look older", "a touch of blush", "a rally car", "brigt", "warm",
                                  "the range", "darks"])
def test_short_real_words_and_other_short_slips_stay_as_typed(text):
    # "older" is "colder" with its first letter gone, "brigt" "bright" with a consonant gone: a short word
    # is put right only where a vowel inside a longer word was dropped
    assert Vocabulary(load_profile("engine")).spell(text) == text


def test_a_misspelt_request_is_planned_like_the_spelt_one(planner):
    assert _moves(_plan(planner, "a tad brigther")) == _moves(_plan(planner, "a tad brighter"))
    assert _moves(_plan(planner, "a tad brigther"))[("exposure", None)] > 0


# -- grammar: trailing "too", "it" after a place, one complaint said twice --------------

def test_trailing_too_means_as_well_not_too_much(planner):
    more = _moves(_plan(planner, "bit more colour too"))
    assert all(v > 0 for v in more.values()) and more == _moves(_plan(planner, "bit more colour"))
    # after a bare quality word it frames a complaint: "hazy too" fixes the haze
    assert _moves(_plan(planner, "hazy too")).get(("dehaze", None), 0) > 0
    assert _moves(_plan(planner, "and a bit cold too"))[("temperature", None)] > 0


def test_it_after_a_place_is_that_place_and_says_how_much_of_the_fix(planner):
    plan = _plan(planner, "her face is too dark, brighten it a bit")
    moves = _moves(plan)
    assert ("exposure", None) not in moves                          # never the whole photo
    assert 0 < moves[("exposure", "face")] <= _moves(_plan(planner, "brighten her face"))[("exposure", "face")]
    # with no place before it, "it" is still the whole photo
    assert _moves(_plan(planner, "brighten it a bit"))[("exposure", None)] > 0


def test_there_after_a_place_keeps_the_complaint_on_that_place(planner):
    moves = _moves(_plan(planner, "brighten the bottom a bit, its muddy down there"))
    assert moves and all(where == "gradient" for _, where in moves)


def test_one_complaint_said_twice_is_fixed_once(planner):
    assert _moves(_plan(planner, "it looks flat and dull")) == _moves(_plan(planner, "it looks flat"))


# -- follow-ups --------------------------------------------------------------------------

def _warmed(turn_value: int) -> DialogueState:
    before = EditState()
    return DialogueState(edits=[TurnMoves(turn=1, message="warmer", asset_id="a1", parent_id="a0",
                                          changes=[Change("temperature", 0, turn_value)], labels=["warmer"],
                                          intents=["warmer"], state_before=before.to_dict())])


@pytest.mark.parametrize("text,factor", [("same again but less", 0.5), ("again but a bit less", 0.6),
                                         ("do it again but not as much", 0.5), ("same again but stronger", 1.5)])
def test_same_again_but_less_repeats_the_change_scaled(planner, text, factor):
    state = EditState.from_dict({"settings": {"temperature": 10}, "layers": []})
    plan = _plan(planner, text, state=state, dialogue=_warmed(10))
    assert [(g.op, g.mode) for g in plan.sub_goals] == [("temperature", "add")]
    assert plan.sub_goals[0].value == round(10 * factor)


def test_no_less_still_pulls_the_last_change_back(planner):
    state = EditState.from_dict({"settings": {"temperature": 20}, "layers": []})
    plan = _plan(planner, "no, less", state=state, dialogue=_warmed(20))
    assert plan.sub_goals[0].mode == "set" and 0 <= plan.sub_goals[0].value < 20


def test_a_judge_replan_of_a_follow_up_keeps_the_follow_up(planner):
    state = EditState.from_dict({"settings": {"temperature": 20}, "layers": []})
    judged = _plan(planner, "more", state=state, dialogue=_warmed(20), feedback_from="judge",
                   feedback="The last attempt scored 0.20: it went the wrong way: warmer instead of cooler")
    assert judged.understood and _moves(judged)[("temperature", None)] > 0
    # the person's own feedback replaces it
    person = _plan(planner, "more", state=state, dialogue=_warmed(20), feedback_from="person",
                   feedback="The person asked for a different plan: cooler instead")
    assert _moves(person)[("temperature", None)] < 0


def test_same_again_but_less_in_a_session_adds_less_than_the_first_time(studio):
    sid = studio.start_session(small_photo("chelsea")).id
    studio.send_message(sid, "warm it up")
    first = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "same again but less")
    now = studio.head(sid).state["settings"]["temperature"]
    assert r.asset_id and first < now < 2 * first


def test_now_the_sky_moves_only_the_local_part_of_a_local_change(studio):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "brighten the bottom a bit")
    before = dict(studio.head(sid).state["settings"])
    r = studio.send_message(sid, "ok now the sky")
    state = studio.head(sid).state
    assert r.asset_id and state["settings"] == before
    sky = [l for l in state["layers"] if l["mask"]["type"] == "sky"]
    assert sky and sky[0]["settings"].get("exposure", 0) > 0


# -- places the photo does not have -------------------------------------------------------

def test_a_grey_studio_backdrop_is_not_sky():
    astronaut, rocket = small_photo("astronaut"), small_photo("rocket")
    assert build_mask({"type": "sky"}, astronaut, astronaut.shape[:2]).mean() < 0.002
    assert build_mask({"type": "sky"}, rocket, rocket.shape[:2]).mean() > 0.4


def test_no_sky_is_said_with_the_top_of_the_frame_and_a_selection_offered(studio):
    info = studio.start_session(small_photo("astronaut"))
    original = studio.render(info.id).tobytes()
    r = studio.send_message(info.id, "the sky is too bright")
    assert r.kind == "clarify" and r.asset_id is None and "can't find the sky" in r.reply
    assert studio.head(info.id).id == info.head_asset_id and studio.render(info.id).tobytes() == original
    assert r.quick_replies[:2] == ["Darker on the top of the frame", "Darker on the selection"]
    assert "top of the frame" in r.reply and "paint" in r.reply
    # said in words rather than clicked: the request is finished on the place named now
    r = studio.send_message(info.id, "use the top of the frame then")
    state = studio.head(info.id).state
    assert r.asset_id and not any(state["settings"].values())     # never a silent global edit
    assert [l["mask"]["type"] for l in state["layers"]] == ["gradient"]
    assert state["layers"][0]["settings"]["exposure"] < 0
    img = studio.render(info.id, long_side=256)
    top = build_mask({"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.3]}, img, img.shape[:2])
    base = studio.render(info.id, info.head_asset_id, long_side=256)
    assert image_stats(img, top)["L_mean"] < image_stats(base, top)["L_mean"] - 1


def test_the_quick_reply_for_the_top_of_the_frame_works_as_sent(studio):
    info = studio.start_session(small_photo("chelsea"))
    r = studio.send_message(info.id, "darken the sky")
    r = studio.send_message(info.id, r.quick_replies[0])
    layers = studio.head(info.id).state["layers"]
    assert r.asset_id and layers[0]["mask"]["type"] == "gradient" and layers[0]["settings"]["exposure"] < 0


def test_a_thing_named_by_its_colour_that_the_photo_lacks_is_said(studio):
    info = studio.start_session(small_photo("chelsea"))            # a cat: no water, no blue to speak of
    r = studio.send_message(info.id, "darken the water a bit")
    assert r.kind == "clarify" and r.asset_id is None and "can't find the water" in r.reply
    assert "Darker on the selection" in r.quick_replies
    # where the colour is there, the same words edit it
    info = studio.start_session(small_photo("rocket"))
    r = studio.send_message(info.id, "darken the water a bit")
    assert r.asset_id is not None


# -- the eval's statistics cache ------------------------------------------------------------

def test_inside_statistics_of_one_render_are_kept_apart_per_region():
    img = small_photo("rocket", 200)
    top = build_mask({"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.3]}, img, img.shape[:2]).astype(np.float32)
    bottom = build_mask({"type": "gradient", "start": [0.5, 1.0], "end": [0.5, 0.7]}, img, img.shape[:2]).astype(np.float32)
    cache = checks.StatsCache()
    step = Step(1, "say", "x", expect=Expectation(conditions=(Condition("L_mean", "within", 0.01, region="inside"),)))
    a = check_step(step, before=img, after=img, original=img, renders={0: img}, region=top, cache=cache)
    b = check_step(step, before=img, after=img, original=img, renders={0: img}, region=bottom, cache=cache)
    assert a["checks"][0]["before"] != pytest.approx(b["checks"][0]["before"], abs=0.5)
    assert b["checks"][0]["before"] == pytest.approx(image_stats(img, bottom)["L_mean"], abs=0.5)


# -- questions, undo in words, slang follow-ups ---------------------------------------------

@pytest.mark.parametrize("text,kind", [("is the sky too dark?", "evaluation"), ("too warm?", "evaluation"),
                                       ("hmm, is that too much?", "evaluation"), ("does this look ok?", "evaluation"),
                                       ("should i make it brighter?", "exploration"),
                                       ("do you think it needs more contrast?", "exploration"),
                                       ("what do you reckon", "evaluation")])
def test_a_question_about_the_photo_is_answered_not_applied(router, text, kind):
    assert router.route(text).kind == kind


@pytest.mark.parametrize("text", ["can you make it warmer?", "could you brighten the face?", "more contrast?",
                                  "can you add a moon?", "is there a way to add a moon?"])
def test_a_request_said_as_a_question_is_still_a_request(router, text):
    route = router.route(text)
    # a thing to add is answered honestly as content (router.content_wish), never as a question
    assert route.kind == "modification" or (route.kind, route.name) == ("chat", "content")


@pytest.mark.parametrize("text,name,steps", [("scrap that", "undo", 1), ("nvm", "undo", 1), ("undo the last", "undo", 1),
                                             ("the last one was better", "undo", 1), ("let's go back a step", "undo", 1),
                                             ("undo last 2", "back", 2), ("go back by two", "back", 2),
                                             ("i preferred the original", "original", 1)])
def test_undo_in_words(router, text, name, steps):
    r = router.route(text)
    assert (r.kind, r.name) == ("command", name) and (name != "back" or r.steps == steps)


def test_undo_the_warmth_resets_the_warmth_and_keeps_the_rest(studio):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "more contrast")
    r = studio.send_message(sid, "undo the warmth")
    settings = studio.head(sid).state["settings"]
    assert r.asset_id and not settings.get("temperature") and settings.get("contrast", 0) > 0


@pytest.mark.parametrize("text", ["bit more pls", "again pls", "abit more", "moar", "needs more", "not quite enough"])
def test_slang_more_repeats_the_last_change(planner, text):
    state = EditState.from_dict({"settings": {"temperature": 10}, "layers": []})
    plan = _plan(planner, text, state=state, dialogue=_warmed(10))
    assert plan.understood and _moves(plan)[("temperature", None)] > 0


@pytest.mark.parametrize("text", ["less pls", "not that much", "halfway back", "a bit too strong"])
def test_slang_less_pulls_the_last_change_back(planner, text):
    state = EditState.from_dict({"settings": {"temperature": 10}, "layers": []})
    plan = _plan(planner, text, state=state, dialogue=_warmed(10))
    assert [(g.mode, 0 <= g.value < 10) for g in plan.sub_goals] == [("set", True)]


def test_tone_down_a_place_the_last_change_did_not_touch_is_a_request_of_its_own(studio):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "more contrast")
    studio.send_message(sid, "tone down the sky")
    sky = [l for l in studio.head(sid).state["layers"] if l["mask"]["type"] == "sky"]
    assert sky and sky[0]["settings"].get("exposure", 0) < 0 and not sky[0]["settings"].get("contrast")


# -- complaints and local requests said of things ----------------------------------------------

def test_a_thing_no_mask_knows_said_in_a_complaint_is_asked_about_never_a_silent_global_edit(planner):
    for text in ("the helmet is too dark", "the coffee looks too dark", "the shuttle looks dull"):
        plan = _plan(planner, text)
        assert not plan.sub_goals and plan.kind == "clarify" and "paint over it" in plan.reply, text
        assert plan.dialogue["move"] == "not_found" and plan.dialogue["unmet"], text   # kept for "go ahead"
    # said to go ahead, it goes on the best guess, never the whole photo
    plan = _plan(planner, "the helmet is too dark, just guess")
    assert plan.sub_goals and all(g.target for g in plan.sub_goals) and "best guess" in plan.reply
    # the colour finds the thing: no place to guess (its own shade of orange, not the HSL band)
    assert _moves(_plan(planner, "the suit is too orange")) == {("saturation", "shade"): -20}


def test_make_the_thing_less_of_a_colour_moves_that_colour(planner):
    assert _moves(_plan(planner, "make the suit less orange"))[("saturation", "shade")] < 0
    # a colour asked of a thing no finder knows is asked about, as "brighten the flag" is
    assert _plan(planner, "make the flag more red").kind == "clarify"
    assert not _plan(planner, "make her eyes blue").understood        # a change of what is there


def test_more_complaint_families(planner):
    stats = image_stats(small_photo("astronaut"))
    off = _moves(_plan(planner, "the colours look a bit off", image_stats=stats))
    assert off.get(("temperature", None)) or off.get(("tint", None))        # a white-balance correction
    assert _moves(_plan(planner, "it looks too processed"))[("contrast", None)] < 0
    assert _moves(_plan(planner, "her face looks shiny"))[("highlights", "face")] < 0
    assert _moves(_plan(planner, "deepen the sky"))[("exposure", "sky")] < 0


@pytest.mark.parametrize("text", ["give it a green moustache", "add a red hat", "give her a blue scarf"])
def test_a_colour_before_a_new_thing_is_not_a_colour_move(planner, text):
    assert not _plan(planner, text).sub_goals


# -- "but only a little", "keep the sky", "everything except her face" ---------------------------

@pytest.mark.parametrize("text,plain", [("brighter, but only a little", "brighter"), ("warmer but not too much", "warmer"),
                                        ("more contrast, but not much", "more contrast")])
def test_a_clause_that_only_says_how_much_scales_the_one_before(planner, text, plain):
    said, full = _moves(_plan(planner, text)), _moves(_plan(planner, plain))
    assert said.keys() == full.keys() and all(0 < abs(said[k]) < abs(full[k]) for k in said)


def test_keep_a_place_keeps_it_out_of_the_change(studio):
    info = studio.start_session(small_photo("rocket"))
    sky_spec = {"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.3]}
    r = studio.send_message(info.id, "brighter but leave the sky alone")
    state = studio.head(info.id).state
    # the change goes on everything but the sky: one layer on the sky's complement, nothing global
    assert r.asset_id and not state["settings"].get("exposure")
    [layer] = state["layers"]
    assert layer["settings"]["exposure"] > 0 and layer["mask"]["type"] == "sky" and layer["mask"].get("invert")
    before, after = (studio.render(info.id, a, long_side=256) for a in (info.head_asset_id, None))
    top = build_mask(sky_spec, before, before.shape[:2])
    bottom = 1.0 - build_mask({"type": "gradient", "start": [0.5, 1.0], "end": [0.5, 0.7]}, before, before.shape[:2])
    lift_sky = image_stats(after, top)["L_mean"] - image_stats(before, top)["L_mean"]
    lift_ground = image_stats(after, 1.0 - bottom)["L_mean"] - image_stats(before, 1.0 - bottom)["L_mean"]
    assert lift_ground > 1.0 and abs(lift_sky) < 0.5 * lift_ground


def test_everything_except_a_place_goes_on_the_rest_of_the_frame(planner):
    plan = _plan(planner, "everything except her face darker")
    assert [(g.op, g.target) for g in plan.sub_goals] == [("exposure", {"type": "face", "feather": 25, "invert": True})]
    assert "everything but the face" in plan.reply
    assert _plan(planner, "darken everything but the sky").sub_goals[0].target["invert"] is True


# -- follow-ups that name a place -----------------------------------------------------------------

def _face_brightened() -> tuple[EditState, DialogueState]:
    face = {"type": "face", "feather": 25}
    state = EditState.from_dict({"settings": {}, "layers": [{"mask": face, "settings": {"exposure": 20}}]})
    return state, DialogueState(edits=[TurnMoves(1, "brighten her face", "a1", "a0", [Change("exposure", 0, 20, face)],
                                                 ["brighter"], ["brighter"])])


@pytest.mark.parametrize("text,value,where", [("same thing on the background but less", 10, "subject"),
                                              ("now the background but more", 30, "subject"),
                                              ("the background also needs it", 20, "subject"),
                                              ("more on the face", 20, "face"), ("a bit more on the face", 10, "face")])
def test_a_follow_up_that_names_a_place(planner, text, value, where):
    state, dialogue = _face_brightened()
    plan = planner.plan(PlanRequest(message=text, state=state, dialogue=dialogue))
    assert [(g.op, g.value, g.mode, g.target["type"]) for g in plan.sub_goals] == [("exposure", value, "add", where)]


def test_undo_a_place_resets_that_place(planner):
    state, dialogue = _face_brightened()
    plan = planner.plan(PlanRequest(message="undo the face", state=state, dialogue=dialogue))
    assert [(g.op, g.value, g.mode) for g in plan.sub_goals] == [("exposure", 0, "set")]


# -- chat said before a request, and confusion ------------------------------------------------------

@pytest.mark.parametrize("text", ["what?", "huh?", "wait what", "sorry?"])
def test_confusion_is_answered_as_chat_not_as_an_unknown_request(router, text):
    r = router.route(text)
    assert (r.kind, r.name) == ("chat", "confused") and "don't know how" not in r.reply


@pytest.mark.parametrize("text,kind,name", [("perfect, export it", "command", "export"),
                                            ("thanks! undo the last one though", "command", "undo"),
                                            ("ok so what do you think?", "evaluation", "evaluation")])
def test_chat_before_a_command_is_dropped(router, text, kind, name):
    r = router.route(text)
    assert (r.kind, r.name) == (kind, name)


def test_chat_before_a_request_is_not_read_as_part_of_it(planner):
    assert _moves(_plan(planner, "ok cool now more contrast")) == _moves(_plan(planner, "more contrast"))
    assert _moves(_plan(planner, "nice, now make it warmer")) == _moves(_plan(planner, "make it warmer"))
    # a chat word that runs straight into the request is part of it
    assert _moves(_plan(planner, "cool the highlights"))[("temperature", "luminance")] < 0


def test_less_warm_after_brighter_and_warmer_takes_back_only_the_warmth(studio):
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "brighten it and make it a bit warmer")
    before = dict(studio.head(sid).state["settings"])
    studio.send_message(sid, "less warm but keep the brightness")      # "keep" a quality: leave it as it is
    after = studio.head(sid).state["settings"]
    assert after["exposure"] == before["exposure"] and 0 <= after["temperature"] < before["temperature"]


# -- fresh2 families: "don't make it so X", a reason said with its request, "behind her" ------------------------

@pytest.mark.parametrize("text,sign", [("don't make it so yellow", -1), ("dont make it that yellow", -1),
                                       ("not so yellow", -1), ("don't make it too yellow", -1),
                                       ("don't make it so blue", 1), ("not so blue", 1), ("don't make it as blue", 1)])
def test_dont_make_it_so_a_colour_is_less_of_that_colour(planner, text, sign):
    moves = _moves(_plan(planner, text))
    assert moves[("temperature", None)] * sign > 0
    assert all(v <= 0 for (op, _), v in moves.items() if op.startswith("saturation_"))     # never more of it


def test_dont_make_it_so_is_less_of_what_is_there_and_plain_dont_leaves_it_alone(planner):
    assert _moves(_plan(planner, "dont make it that dark"))[("exposure", None)] > 0
    assert _moves(_plan(planner, "don't make it so warm"))[("temperature", None)] < 0
    plan = _plan(planner, "don't make it darker")
    assert not plan.sub_goals and "alone" in plan.reply
    # a place said between them stays: less blue in the sky, not on the whole photo
    assert _moves(_plan(planner, "don't make the sky so blue"))[("saturation_blue", "sky")] < 0
    # after a request in the same message it only cautions that request
    for text, plain in (("warmer but don't make it too orange", "warmer"),
                        ("brighten it but don't make it too bright", "brighten it")):
        assert _moves(_plan(planner, text)) == _moves(_plan(planner, plain))


def _changed(message: str, intent: str, changes: dict) -> tuple[EditState, DialogueState]:
    state = EditState.from_dict({"settings": dict(changes), "layers": []})
    return state, DialogueState(edits=[TurnMoves(1, message, "a1", "a0", [Change(op, 0, v) for op, v in changes.items()],
                                                 [intent], [intent], state_before=EditState().to_dict())])


@pytest.mark.parametrize("text,last,intent,changes,op", [
    ("don't make it so blue", "make it more blue", "bluer", {"saturation_blue": 25, "luminance_blue": -10},
     "saturation_blue"),
    ("don't make it so yellow", "warmer", "warmer", {"temperature": 25}, "temperature"),
    ("hmm now it's too yellow", "warmer", "warmer", {"temperature": 20}, "temperature"),
    ("now it's too bright", "brighter", "brighter", {"exposure": 20}, "exposure"),
])
def test_a_complaint_about_what_the_last_change_did_takes_it_back_part_way(planner, text, last, intent, changes, op):
    state, dialogue = _changed(last, intent, changes)
    plan = planner.plan(PlanRequest(message=text, state=state, dialogue=dialogue))
    assert [(g.op, g.mode) for g in plan.sub_goals] == [(op, "set")]
    assert 0 <= abs(plan.sub_goals[0].value) < abs(changes[op])       # back toward before, never past it


def test_a_complaint_about_something_else_is_still_its_fix(planner):
    state, dialogue = _changed("warmer", "warmer", {"temperature": 25})
    plan = planner.plan(PlanRequest(message="it's too dark", state=state, dialogue=dialogue))
    assert _moves(plan) == {("exposure", None): 20}


@pytest.mark.parametrize("text", ["more contrast pls its a bit flat", "its a bit flat, more contrast pls",
                                  "more contrast please it's a bit flat"])
def test_a_complaint_said_with_its_request_is_the_reason_not_a_wish(planner, text):
    # "flat" after the request is what is wrong, not "flatter"; the request says how much
    assert _moves(_plan(planner, text)) == _moves(_plan(planner, "more contrast"))
    assert _moves(_plan(planner, "make it look flat"))[("contrast", None)] < 0      # a wish for flat stays one


def test_behind_her_is_the_background_and_the_request_says_how_much(planner):
    background = ("exposure", "subject")
    moves = _moves(_plan(planner, "its a bit bright behind her, darken the background a touch"))
    plan = _plan(planner, "its a bit bright behind her, darken the background a touch")
    assert [g.target.get("invert") for g in plan.sub_goals] == [True] and moves[background] < 0
    assert moves == _moves(_plan(planner, "darken the background a touch"))
    assert "brighten" not in plan.reply.lower()
    for text in ("darken behind her", "darken around him", "darken the area behind the cat"):
        assert _plan(planner, text).sub_goals[0].target == _plan(planner, "darken the background").sub_goals[0].target
    assert "everything but the subject" in _plan(planner, "everything except her darker").reply
    assert _plan(planner, "brighten her").sub_goals[0].target.get("invert") is None


def test_a_place_said_with_only_after_the_requests_restricts_them_to_it(planner):
    # "..., only the face": what was asked for the whole photo goes on that place alone
    assert _moves(_plan(planner, "warmer and brighter, only the face")) == {("temperature", "face"): 25,
                                                                           ("exposure", "face"): 20}
    moves = _moves(_plan(planner, "make the sky a deeper, richer blue, only the sky"))
    assert moves and all(where == "sky" for _, where in moves), moves
    # without "only" a place said alone is no restriction of what came before
    assert ("temperature", None) in _moves(_plan(planner, "warmer, and the face"))


def _versions(studio, photo, messages, approve=False):
    """A session on ``photo`` after ``messages``: its id and the head after each (the original first);
    ``approve`` keeps a version that waits for review."""
    sid = studio.start_session(small_photo(photo)).id
    heads = [studio.head(sid).id]
    for message in messages:
        r = studio.send_message(sid, message)
        if approve and r.status == "awaiting_review":
            studio.review(sid, "approve")
        heads.append(studio.head(sid).id)
    return sid, heads


@pytest.mark.parametrize("text, back_to", [
    ("ditch the last two changes", 1),                    # a count is not a change's name
    ("the previous version was better", 2),               # a version said to have been better
    ("i liked it better a moment ago", 2),
    ("nah, back to how it looked after the warming", 1),  # right after the change it names
    ("get rid of everything you did", 0),                 # everything, nothing named: the original
    ("roll it all back", 0),
    ("ok scrap the last two changes pls", 1),             # "pls" names no change
    ("hmm actually can i see the version from before the brightening", 1),   # asked for, not a question
])
def test_going_back_in_other_words_lands_on_the_version_meant(studio, text, back_to):
    sid, heads = _versions(studio, "coffee", ("make it warmer", "brighten it a bit", "more contrast"))
    r = studio.send_message(sid, text)
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[back_to]


def test_a_change_named_in_the_middle_is_taken_out_and_the_later_ones_stay(studio):
    sid = studio.start_session(small_photo("coffee")).id
    for message in ("make it warmer", "brighten it a bit", "more contrast"):
        studio.send_message(sid, message)
    before = studio.head(sid).state["settings"]
    r = studio.send_message(sid, "get rid of all the colour stuff")
    after = studio.head(sid).state["settings"]
    assert r.asset_id and "Took out" in r.reply and "later changes stay" in r.reply
    assert not after.get("temperature")
    assert after.get("exposure") == before.get("exposure") and after.get("contrast") == before.get("contrast")


@pytest.mark.parametrize("text, kind", [
    ("lovely launch pic innit. is it a bit dark overall?", "evaluation"),   # a remark, then the question
    ("lol he fell asleep on my desk again", "chat"),                        # "again" in a remark
    ("go on then, have a guess — do it to the whole photo", "modification"),
])
def test_a_remark_before_a_question_and_a_remark_that_says_again(router, text, kind):
    assert router.route(text).kind == kind


def _targets(planner, text):
    return list(_moves(_plan(planner, text)))


def test_a_thing_said_to_be_in_a_part_of_the_frame_is_changed_there(planner):
    plan = _plan(planner, "the table at the bottom right is kinda bright, bring it down")
    assert plan.sub_goals and plan.kind != "clarify"
    assert {(g.target or {}).get("type") for g in plan.sub_goals} == {"radial"}
    assert "where you said it is" in plan.reply
    # a complaint said of it after the request is why it is asked, not a second change on the whole photo
    assert all(t == "gradient" for _, t in _targets(planner, "lift the tower on the left a little, its lost in the dark"))
    # a thing with no part of the frame said is still asked about
    assert _plan(planner, "the lamp is really glary, tone it down").kind == "clarify"


def test_a_place_said_with_a_part_of_the_frame_is_where_both_are(planner):
    plan = _plan(planner, "the background on the right is busy, darken it a little")
    targets = [g.target for g in plan.sub_goals]
    assert targets and all(t["type"] == "intersect" for t in targets)
    assert "the background on the right of the frame" in plan.reply
    assert {t for _, t in _targets(planner, "brighten the sky and the left")} == {"sky", "gradient"}


def test_a_colour_before_a_small_thing_still_names_the_thing_and_it_is_asked_about(planner):
    plan = _plan(planner, "the little pink nose on the left one, can you make it pinker")
    assert plan.kind == "clarify" and not plan.sub_goals and "the pink nose" in plan.reply


def test_going_back_names_a_change_after_a_tool_phrase_and_carries_its_follow_ups(studio, router):
    # "get rid of that" is the selection tool; "get rid of that warm thing" names a change
    assert router.route("get rid of that").kind != "command"
    assert router.route("get rid of that warm thing").name == "going_back"
    sid = studio.start_session(small_photo("rocket")).id
    start = studio.head(sid).id
    studio.send_message(sid, "lift the tower on the left a little")
    studio.send_message(sid, "ok same on the right hand one")
    r = studio.send_message(sid, "meh, scrap those tower changes")     # the change and its "same on the right"
    assert r.status == "rolled_back" and studio.head(sid).id == start
    studio.send_message(sid, "make the sky a bit warmer")
    r = studio.send_message(sid, "hmm the sky one looks weird, take it back")   # the version that has it is the head
    assert r.status == "rolled_back" and studio.head(sid).id == start


def test_is_before_a_verb_in_ing_keeps_the_thing_and_snow_is_found_by_its_brightness(planner):
    from agent.conversation.words import tokenize

    assert tokenize("the snow's blowing out") == ["the", "snow", "blowing", "out"]
    assert tokenize("the cat's eyes") == ["the", "eyes"]                  # whose: the place is the eyes
    plan = _plan(planner, "the snow's blowing out, tone it down")
    assert plan.sub_goals and all((g.target or {}).get("type") == "luminance" for g in plan.sub_goals if g.target)
    assert any(g.op in ("highlights", "whites", "exposure") and g.value < 0 for g in plan.sub_goals)


def test_asides_and_words_that_describe_a_thing_ask_for_nothing(planner):
    plan = _plan(planner, "and bluer while you're at it")
    assert plan.sub_goals and "skipped" not in plan.reply
    assert planner.vocab.unread_words("warmer if you can") == []
    # "grey" describes the wall, it is no complaint to fix; the place said first is where the request goes
    plan = _plan(planner, "and the grey wall behind her, bit darker pls")
    assert [(g.op, g.value < 0, (g.target or {}).get("type")) for g in plan.sub_goals] == [("exposure", True, "subject")]
    plan = _plan(planner, "the table on the left, darken it")
    assert [(g.target or {}).get("type") for g in plan.sub_goals] == ["gradient"] and "where you said it is" in plan.reply
    assert _plan(planner, "the pillar in the middle, brighten it").kind == "clarify"   # the middle is no side


@pytest.mark.parametrize("text", ["would it be better warmer?", "would more contrast help?", "wdyt, warmer?",
                                  "it's not too saturated is it?", "a bit flat, don't you think?",
                                  "think it could be brighter?"])
def test_opinion_questions_and_tag_questions_are_asked_not_requested(router, text):
    assert router.route(text).kind in ("evaluation", "exploration")


@pytest.mark.parametrize("text", ["can it be warmer?", "make it warmer, right?", "maybe a bit warmer?"])
def test_requests_said_with_a_question_mark_stay_requests(router, text):
    assert router.route(text).kind == "modification"


@pytest.mark.parametrize("messages, text, back_to", [
    # "only"/"just" right before what it names: that change alone, the earliest version that has it
    (("make it warmer", "way warmer", "hmm too much, go back halfway"),
     "erm put it back to the one where it was only a bit warm", 1),
    (("sharpen it up a bit", "darken the background on the right a little", "bit more on that"),
     "actually no, back to when she was just sharpened", 1),
    # "just" that means "recently" leaves the latest such version
    (("make it warmer", "brighten it a bit", "way warmer"), "back to the warm one i just had", 2),
])
def test_a_version_said_to_have_had_only_one_change_is_the_earliest_with_it(studio, messages, text, back_to):
    sid, heads = _versions(studio, "chelsea", messages)
    r = studio.send_message(sid, text)
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[back_to]


def test_a_drawn_place_names_its_own_part_of_the_frame_when_going_back(studio):
    # "the left side" and "the bottom" are both gradients: going back tells them apart
    sid, heads = _versions(studio, "rocket", ("lighten the left side a little", "and the bottom, same thing"))
    r = studio.send_message(sid, "go back to just the lighter left side, before the bottom")
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[1]


@pytest.mark.parametrize("text", ["warmer, but not her face", "warmer but not her face", "warmer. not the face though",
                                  "more vivid, except the face"])
def test_a_place_left_out_after_the_request_is_protected(planner, text):
    moves = _plan(planner, text).sub_goals
    assert moves and all(g.target and g.target.get("type") == "face" and g.target.get("invert") for g in moves), moves


def test_a_protected_place_in_a_part_of_the_frame_is_where_both_are(planner):
    # "that patch of sky at the top": the sky within the top, kept (it crashed the planner before)
    plan = _plan(planner, "bump the contrast a bit but leave that patch of sky at the top as it is")
    assert plan.sub_goals and plan.understood
    assert all(g.target and "intersect" in json.dumps(g.target) for g in plan.sub_goals)
    assert "sky on the top" in plan.reply


def test_what_a_thing_does_to_the_viewer_is_no_place(planner):
    plan = _plan(planner, "the table keeps pulling my eye, darken the bottom right corner")
    assert plan.kind != "clarify" and plan.sub_goals
    assert "eye" not in plan.reply


@pytest.mark.parametrize("messages, text, back_to", [
    (("warm it up a little", "a bit more", "way warmer"), "nah just give me the version after the first warm-up", 1),
    (("warm it up a little", "brighten it"), "y'know what, scrap the lot. I want the untouched pic back", 0),
    (("darken the sky", "darker still"), "hmm forget all that, put it back how the photo came", 0),
    (("brighten it a bit", "and again", "too bright now, back a bit"), "hm. honestly the first brighten was the best of them", 1),
    (("a touch cooler", "much cooler"), "mm that's overkill, go back to the slightly cool version", 1),
    (("darken the bottom right corner", "now it looks kinda muddy and flat"), "go back to just before you tried to fix the mud", 1),
])
def test_going_back_to_a_version_in_more_words(studio, messages, text, back_to):
    sid, heads = _versions(studio, "coffee", messages, approve=True)
    r = studio.send_message(sid, text)
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[back_to]


def test_right_before_a_preposition_means_exactly_not_the_right_side(planner):
    # "the sky right at the top": the sky at the top, not the sky, the right and the top
    plan = _plan(planner, "the sky right at the top is a bit washed, can it go a deeper blue up there")
    assert plan.sub_goals
    assert not any("right" in json.dumps(g.target or {}) or (g.target or {}).get("end") == [0.45, 0.5]
                   for g in plan.sub_goals)
    assert "right" not in plan.reply
    from agent.judging.reading import read_request

    assert "right" not in (read_request("the sky right at the top is a bit washed, go a deeper blue").target or "")
    assert _plan(planner, "brighten the right a little").sub_goals[0].target["type"] == "gradient"


@pytest.mark.parametrize("text", ["whoa ok too much, it's like outer space now 😂 back off a touch",
                                  "it looks like a sunset, dial it back"])
def test_a_likeness_said_with_a_pull_back_is_why_not_a_request(studio, text):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "make it warmer and darker")
    before = dict(studio.head(sid).state["settings"])
    r = studio.send_message(sid, text)
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    after = studio.head(sid).state["settings"]
    # part of the way back toward the version before, never a new look
    assert 0 < after["temperature"] < before["temperature"] and before["exposure"] < after["exposure"] < 0, after
    assert set(after) <= set(before)


def test_a_small_pull_back_is_a_step_that_shows(studio):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "make it warmer")
    warm = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "ease off a touch")
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    # a third of the change or more comes back (dialogue.pull_back_limits.min), never all of it
    assert 0 < studio.head(sid).state["settings"]["temperature"] <= warm * 0.65


def test_why_with_its_is_a_question(router):
    assert router.route("why's the sky purple btw, is that light pollution?").kind == "evaluation"


@pytest.mark.parametrize("text", ["lovely. again please, same deal", "hmm it could take another nudge"])
def test_more_in_other_words_repeats_the_last_change(studio, text):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "brighten it a bit")
    first = studio.head(sid).state["settings"]["exposure"]
    r = studio.send_message(sid, text)
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    assert studio.head(sid).state["settings"]["exposure"] > first, r.reply


@pytest.mark.parametrize("text, share", [
    ("ooh no too bright now, back a bit but not all the way", 0.5),   # "not all the way" is not all of it
    ("bit too bright now lol, somewhere in between?", 0.5),            # proposed with a "?", still asked
])
def test_part_of_the_way_back_in_other_words(studio, text, share):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "brighten it")
    before = studio.head(sid).state["settings"]["exposure"]
    studio.send_message(sid, "and again")
    after = studio.head(sid).state["settings"]["exposure"]
    r = studio.send_message(sid, text)
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    assert studio.head(sid).state["settings"]["exposure"] == pytest.approx(after - share * (after - before), abs=1)


def test_a_place_said_a_little_in_shadow_is_brightened_there(planner):
    plan = _plan(planner, "her face is a little in shadow, could u lift it just a touch")
    assert plan.sub_goals and all((g.target or {}).get("type") == "face" for g in plan.sub_goals)
    assert all(g.op == "exposure" and 0 < g.value <= 10 for g in plan.sub_goals)


def test_a_place_with_nothing_asked_is_named_in_words(planner):
    plan = _plan(planner, "the white bone on the front of the bowl, bottom middle")
    assert not plan.sub_goals and "&" not in plan.reply


def test_what_the_photo_looks_like_now_is_no_look_asked_for(planner):
    plan = _plan(planner, "wayyy less orange than that, it looks like a sunset in a cup")
    assert plan.sub_goals and not any(g.op == "temperature" and g.value > 0 for g in plan.sub_goals)
    assert "golden" not in plan.reply
    assert any(g.op == "temperature" and g.value > 0 for g in _plan(planner, "make it look like a sunset").sub_goals)
    plan = _plan(planner, "the sky looks like a painting, make it warmer")
    assert [(g.op, g.target) for g in plan.sub_goals] == [("temperature", None)]


def test_what_must_not_blow_out_or_the_thing_kept_is_protected(planner):
    plan = _plan(planner, "can you brighten it up a bit, but don't blow out the white rim of the cup")
    assert plan.sub_goals and all((g.target or {}).get("type") == "luminance" and g.target.get("invert")
                                  for g in plan.sub_goals)
    # the wall kept stands for the background; "that nice blue" says how it stays
    plan = _plan(planner, "warm it up a bit but keep the wall behind it that nice blue")
    assert "everything but the background" in plan.reply
    # one place said twice is named once
    assert "the blues and the blues" not in _plan(planner, "warmer but don't lose the blue of the water").reply


def test_a_thing_to_keep_that_no_finder_knows_is_asked_about(studio, planner):
    # a change on the whole photo would move it: ask, change nothing, offer both ways on
    plan = _plan(planner, "brighten it but not the lamp, that's bright enough already")
    assert plan.kind == "clarify" and not plan.sub_goals
    assert "the lamp" in plan.reply and "haven't changed anything" in plan.reply
    assert "Brighter everywhere" in plan.quick_replies
    sid = studio.start_session(small_photo("coffee")).id
    start = studio.head(sid).id
    r = studio.send_message(sid, "warmer but keep the lamp as it is")
    assert studio.head(sid).id == start and r.asset_id is None
    studio.send_message(sid, "Warmer everywhere")
    assert studio.head(sid).state["settings"].get("temperature", 0) > 0
    # a change on a place found leaves the thing be: no question
    assert _plan(planner, "brighten the face but not the lamp").sub_goals
    # told to go ahead, the change is made
    assert _plan(planner, "brighten it but not the lamp, go ahead").sub_goals


def test_a_pull_back_after_small_steps_still_shows(studio):
    """"pull it back slightly" after two small warm-ups: a share of a small step is a step nobody sees, so
    at least the profile's least step goes back, and never past where that step started."""
    least = EmbeddedPlanner().vocab.pull_back_least["temperature"]
    sid = studio.start_session(small_photo("astronaut")).id
    for text in ("warm it up a little", "go a bit further with that"):
        r = studio.send_message(sid, text)
        if r.status == "awaiting_review":
            studio.review(sid, "approve")
    versions = studio.history(sid)
    first = [v for v in versions if v.state.get("settings")][0].state["settings"]["temperature"]
    warmest = studio.head(sid).state["settings"]["temperature"]
    assert warmest - first >= least
    r = studio.send_message(sid, "thats overdone now. pull it back slightly")
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    now = studio.head(sid).state["settings"]["temperature"]
    assert first <= now <= warmest - least, r.reply


@pytest.mark.parametrize("first, then, op", [
    ("open up the shadows a lot", "argh thats gone foggy, dial it back", "shadows"),       # a look said as how it is
    ("warm it up a little", "hmm the suit's gone a bit toasty. can u take it down a notch", "temperature"),
    ("brighten it a lot", "too much, he looks washed out now. maybe halfway back?", "exposure"),
])
def test_a_pull_back_said_with_why_takes_the_last_change_back(studio, first, then, op):
    """A pull-back verb ("dial it back", "take it down a notch") with a complaint about how the photo is now:
    the complaint is why, and the last change goes part of the way back, never a fresh fix on top."""
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, first)
    before = studio.head(sid).state["settings"][op]
    r = studio.send_message(sid, then)
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    settings = studio.head(sid).state["settings"]
    assert 0 < settings.get(op, 0) < before, r.reply
    assert set(settings) <= set(studio.history(sid)[1].state["settings"]), settings   # nothing new on top


def test_a_pull_back_with_a_remark_is_no_remark(router):
    route = router.route("bit much, the desk mat looks toxic. ease up")
    assert route.kind == "modification", route


def test_a_pull_back_of_one_quality_of_the_last_change_takes_back_only_that(studio):
    """"ease off the warmth a bit" after "warmer and brighter": the warmth goes part of the way back, the
    brightness stays, and the reply names the warmth; "back off the sharpening" after a complaint too."""
    sid = studio.start_session(small_photo("chelsea")).id
    studio.send_message(sid, "warmer and brighter")
    before = dict(studio.head(sid).state["settings"])
    r = studio.send_message(sid, "ease off the warmth a bit")
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    after = studio.head(sid).state["settings"]
    assert 0 < after["temperature"] < before["temperature"] and after["exposure"] == before["exposure"], r.reply
    assert "“warmer”" in r.reply and "brighter" not in r.reply.split(".")[0], r.reply
    studio.send_message(sid, "sharpen it a lot")
    sharp = studio.head(sid).state["settings"]["sharpen"]
    r = studio.send_message(sid, "whoa, crunchy. back off the sharpening a little")
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    assert 0 < studio.head(sid).state["settings"]["sharpen"] < sharp, r.reply


@pytest.mark.parametrize("message", ["can the sky be a bit bluer? leave the lake as it is though",
                                     "Could the stone be warmer?", "could everything be a bit warmer?",
                                     "love it. bit more contrast overall now, without darkening the eyes again"])
def test_a_request_asked_as_could_it_be_or_after_praise_is_planned(router, message):
    """"can the sky be bluer?" asks for a change (not "is the sky blue?"), and praise before a request is
    only the preamble to it."""
    assert router.route(message).kind == "modification"


@pytest.mark.parametrize("message, kind", [("would it be better in black and white?", "exploration"),
                                           ("could it be too dark?", "evaluation"),
                                           ("is the sky blue enough?", "evaluation")])
def test_weighing_a_change_is_still_a_question(router, message, kind):
    assert router.route(message).kind == kind


def test_a_dash_between_words_ends_a_clause(planner):
    """"open up the shadows a bit — my face should stay as it is": the dash ends the request, so the face is
    kept, not the request dropped."""
    plan = planner.plan(PlanRequest("open up the shadows a bit \u2014 my face should stay exactly how it is now",
                                    EditState()))
    assert plan.sub_goals and all(g.target["type"] == "face" and g.target.get("invert") for g in plan.sub_goals), \
        plan.reply


def test_more_on_the_thing_the_last_change_was_asked_of_repeats_it_there(studio):
    """"more on the flag pls" after a change asked of the flag: that change again where it went, not a
    question about where the flag is."""
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "the flag is screaming at me, can you desaturate it a bit? her suit should stay as it is")
    layer = studio.head(sid).state["layers"][0]
    r = studio.send_message(sid, "more on the flag pls")
    if r.status == "awaiting_review":
        studio.review(sid, "approve")
    (after,) = studio.head(sid).state["layers"]
    assert after["mask"] == layer["mask"] and after["settings"]["saturation"] < layer["settings"]["saturation"], r.reply


@pytest.mark.parametrize("text, version", [
    ("revert both of the darkenings", 1),                                   # a plural of the change's word
    ("go back to the very first thing you did, the tiny brighten", 1),      # right after the first change
])
def test_going_back_to_a_change_said_another_way(studio, text, version):
    sid = studio.start_session(small_photo("coffee")).id
    for said in ("brighten it a touch", "darken the top a bit", "and darken the bottom a bit"):
        r = studio.send_message(sid, said)
        if r.status == "awaiting_review":
            studio.review(sid, "approve")
    wanted = studio.history(sid)[version].state
    r = studio.send_message(sid, text)
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).state == wanted, r.reply


def test_before_a_named_quality_is_before_that_way_of_the_op_not_every_change_of_it(studio):
    """Two brightenings, then a darkening: "before i asked for the darker ..." is before the darkening."""
    sid, heads = _versions(studio, "coffee", ("make it cooler", "a tiny bit brighter", "brighter still",
                                              "darken it a bit"), approve=True)
    r = studio.send_message(sid, "hmm no. go back to before i asked for the darker one")
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[3]


def test_a_named_change_and_its_pull_back_go_back_together(studio):
    sid, heads = _versions(studio, "coffee", ("make it cooler", "more contrast", "too much, like half that"),
                           approve=True)
    assert heads[3] != heads[2]
    r = studio.send_message(sid, "hmm undo that and the contrast stuff, keep the rest")
    assert r.status == "rolled_back", r.reply
    assert studio.head(sid).id == heads[1]


def test_a_thing_said_with_a_pull_back_is_why_not_where(planner):
    """"too much, the logo is fading. like half that": the last change, halved; "the logo" is no place to ask
    about. The "too" of "too much" is no "that too"."""
    state = EditState.from_dict({"settings": {"temperature": 30}, "layers": []})
    plan = _plan(planner, "ok thats too much, the github logo is fading. like half that", state=state,
                 dialogue=_warmed(30))
    assert plan.kind != "clarify" and [g.op for g in plan.sub_goals] == ["temperature"], plan.reply
    goal = plan.sub_goals[0]
    assert (goal.value if goal.mode == "set" else 30 + goal.value) == 15, plan.reply


@pytest.mark.parametrize("text, kind", [
    ("oh is there no one else? my bad. ok darken the grass a little then", "modification"),
    ("is it too dark? maybe brighten it a bit", "modification"),
    ("would it look better warmer? go back to the original", "command"),
    ("is it too dark? i think so", "evaluation"),              # nothing asked after it: still a question
    ("do you reckon this works as a headshot? my mum thinks it's too orange", "evaluation"),
    ("shes my neighbours cat btw, she sneaks in through the kitchen window every morning", "chat"),
    ("it's for my mum", "chat"),
    ("it's a bit dark", "modification"),
])
def test_what_follows_a_question_is_asked_and_who_it_is_is_said(router, text, kind):
    assert router.route(text).kind == kind


@pytest.mark.parametrize("text", ["a bit more, it's still busy back there", "the mountains back there are too dark",
                                  "the sky out back is too bright"])
def test_back_there_is_a_place_not_going_back(router, text):
    assert router.route(text).name != "going_back" and router.route(text).kind != "command", text


def test_a_share_said_as_a_percentage_or_split_the_difference(studio):
    """"like 50% more" is half the last change again (the judge reads it the same, so it is kept);
    "split the difference" takes half of it back."""
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "brighten it")
    first = studio.head(sid).state["settings"]["exposure"]
    r = studio.send_message(sid, "like 50% more")
    assert studio.head(sid).state["settings"]["exposure"] == first + round(first * 0.5), r.reply
    assert r.status == "auto_approved", r.reply
    now = studio.head(sid).state["settings"]["exposure"]
    r = studio.send_message(sid, "too much now, maybe split the difference")
    assert studio.head(sid).state["settings"]["exposure"] == now - round((now - first) * 0.5), r.reply


def test_some_colour_back_after_a_band_desaturation_said_with_how_it_looks(studio):
    """"ok now it looks grey and dead, bring some of the colour back" after "make the suit less orange": part
    of the orange desaturation taken back, not a new punch on top."""
    sid = studio.start_session(small_photo("astronaut")).id
    studio.send_message(sid, "make the suit less orange")

    def on_the_oranges():      # (the suit's own shade of orange: one layer)
        state = studio.head(sid).state
        assert not state["settings"], state["settings"]
        [layer] = [l for l in state["layers"] if l["mask"]["type"] == "shade"]
        return layer["settings"]
    before = on_the_oranges()
    r = studio.send_message(sid, "ok now it looks grey and dead, bring some of the colour back")
    after = on_the_oranges()
    assert before["saturation"] < after.get("saturation", 0) <= 0, r.reply
    assert set(after) == {"saturation"}, after


@pytest.mark.parametrize("first, text, op, start", [
    # the last change's own quality said of how the photo looks now, with a share: take half of it back
    ("cool it down a little", "the wood looks weirdly cold now, maybe split the difference", "temperature", -12),
    # "halfway back on that last one": the last change, named as such; the lamp is why, not where
    ("brighten the whole pic maybe 10%?", "hmm now the lamp is glaring again. go halfway back on that last one",
     "exposure", 10),
])
def test_a_share_back_said_with_why_about_a_thing_no_finder_knows(studio, first, text, op, start):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, first)
    assert studio.head(sid).state["settings"][op] == start
    r = studio.send_message(sid, text)
    assert r.status != "not_understood", r.reply
    assert studio.head(sid).state["settings"][op] == start // 2, r.reply


def test_same_deal_with_the_place_kept_keeps_it_again(studio):
    """"bit more, same deal with the sky" after "brighten it but keep the sky as it is" repeats the change
    where it went, the sky kept; "same on the sky" still does it on the sky."""
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "brighten it but keep the sky as it is")
    r = studio.send_message(sid, "bit more, same deal with the sky")
    layers = studio.head(sid).state["layers"]
    assert len(layers) == 1 and layers[0]["mask"].get("invert"), (r.reply, layers)
    assert layers[0]["settings"]["exposure"] > 20, r.reply
    studio.send_message(sid, "same on the sky")
    assert len(studio.head(sid).state["layers"]) == 2


def test_a_colour_said_of_a_thing_no_finder_knows_finds_it_where_the_photo_has_that_colour(planner):
    for text in ("brighten the green mat", "the green mat under the cat is too bright", "her nose is very pink, tone it down",
                 "make the bowl less pink", "the suit is a bit too orange"):
        plan = _plan(planner, text)
        assert plan.sub_goals and plan.kind != "clarify", (text, plan.reply)
        assert {(g.target or {}).get("type") for g in plan.sub_goals} == {"shade"}, (text, plan.sub_goals)
        assert "where its colour is" in plan.reply and "say \u201cundo\u201d if that's wrong" in plan.reply
    # a band's own op becomes the plain op there: the mat's lime is no HSL green
    assert _moves(_plan(planner, "brighten the green mat")) == {("exposure", "shade"): 20}
    assert {g.target["band"] for g in _plan(planner, "her nose is very pink, tone it down").sub_goals} == {"magenta"}
    # a colour it is to become is no colour it has; one pointed at or placed in the frame is asked about
    for text in ("make her eyes more green", "make the collar on the little one more red",
                 "that building with the wavy balconies, can it be less blue",
                 "and the pillar in the middle looks too orange"):
        assert _plan(planner, text).kind == "clarify", text
    # said with a request for the whole photo, the colour is how the thing looks, not where the change goes
    plan = _plan(planner, "the wall is a dull blue-grey, could we make the whole shot warmer and more vintage")
    assert plan.sub_goals and all(g.target is None for g in plan.sub_goals), plan.sub_goals


def test_even_less_after_asking_for_less_is_more_of_that_change(studio):
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "make the colours less saturated")
    first = studio.head(sid).state["settings"]["saturation"]
    r = studio.send_message(sid, "bit less even")
    assert "Repeating" in r.reply, r.reply
    assert studio.head(sid).state["settings"]["saturation"] < first < 0
    # after a change that asked for more, "less" still steps it back
    sid = studio.start_session(small_photo("coffee")).id
    studio.send_message(sid, "warmer")
    warm = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "bit less")
    assert 0 < studio.head(sid).state["settings"]["temperature"] < warm, r.reply



@pytest.mark.parametrize("text", ["ok, cool it down a bit", "yeah cool it down", "ok yeah cool it down, just a touch",
                                  "took this on my phone, make it brighter", "it was shot on my phone, make it brighter"])
def test_a_chat_word_that_is_the_verb_and_a_request_after_a_remark_are_requests(router, text):
    assert router.route(text).kind == "modification"


@pytest.mark.parametrize("text", ["ok cool thanks", "took this on holiday, made me so happy", "took this at the wedding"])
def test_chat_and_remarks_stay_chat(router, text):
    assert router.route(text).kind == "chat"


def test_a_remark_on_how_the_photo_was_taken_names_no_place(planner):
    plan = _plan(planner, "this was taken at night on my phone and its so dingy. brighten it up?")
    assert plan.kind != "clarify" and _moves(plan).get(("exposure", None), 0) > 0, plan.reply


def test_taking_off_a_change_just_made_goes_back_and_too_little_asks_for_more(studio, router):
    sid, heads = _versions(studio, "coffee", ("make it warmer", "brighten it a bit"))
    r = studio.send_message(sid, "ok forget it. take off the brightening you just did")
    assert r.status == "rolled_back" and studio.head(sid).id == heads[1], r.reply
    temperature = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "more, that barely did anything")
    assert "Repeating" in r.reply and studio.head(sid).state["settings"]["temperature"] > temperature, r.reply


def test_why_is_it_so_something_is_a_complaint_and_a_plain_why_is_asked(router, planner):
    from agent.conversation.words import rhetorical_rest, tokenize

    assert rhetorical_rest(tokenize("why is everything so yellow ugh")) == ["everything", "is", "so", "yellow", "ugh"]
    assert router.route("why is everything so yellow ugh").kind == "modification"
    assert _moves(_plan(planner, "why is everything so yellow ugh")).get(("temperature", None), 0) < 0
    assert _moves(_plan(planner, "how come it looks so flat?")).get(("contrast", None), 0) > 0
    # no degree said: it may ask for a reason, so nothing is changed
    assert router.route("why is it grey").kind != "modification"
    assert router.route("why did you do that").kind != "modification"


def test_a_colour_the_last_change_cast_said_with_a_pull_back_takes_that_change_back(studio):
    sid = studio.start_session(small_photo("coffee")).id
    for message in ("awww. it shouldnt look this cold and clinical tho, warm it up a bit", "more"):
        r = studio.send_message(sid, message)
        assert "skipped" not in r.reply, r.reply          # ("awww": a sound drawn out)
    warm = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "ok now they look orange lol, back off a little")
    assert 0 < studio.head(sid).state["settings"]["temperature"] < warm, r.reply
    assert "skipped" not in r.reply, r.reply


def test_more_said_with_the_thing_or_quality_of_the_last_change_repeats_it(studio):
    # the thing said a little differently ("the stone" after "the stonework") is where the last change was
    sid = studio.start_session(small_photo("coffee")).id
    r = studio.send_message(sid, "warm up the stonework a little, just guess")
    assert "best guess" in r.reply, r.reply
    r = studio.send_message(sid, "mm the stone could take another nudge")
    assert "Repeating" in r.reply, r.reply
    # "more" with the last change's own colour, said as the person sees it
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "can the sky be bluer")
    r = studio.send_message(sid, "more!! proper postcard blue")
    assert "Repeating" in r.reply, r.reply


def test_a_part_that_is_all_of_its_owner_is_the_owner_and_a_colour_can_be_made_stronger(planner):
    from agent.conversation.words import tokenize

    assert tokenize("sharpen up the cat's fur") == ["sharpen", "up", "the", "cat"]
    assert tokenize("brighten the cat's eyes") == ["brighten", "the", "eyes"]         # a part of its own
    plan = _plan(planner, "sharpen up the cat's fur a bit but don't touch the mug, the logo has to stay exactly as is")
    assert {(g.target or {}).get("type") for g in plan.sub_goals} == {"subject"}, plan.reply
    assert _moves(_plan(planner, "make the greens stronger")) == {("saturation_green", None): 20}
    for text in ("make the blue on the guitar body stronger", "make the green mat bolder"):
        plan = _plan(planner, text)
        assert {(g.op, (g.target or {}).get("type")) for g in plan.sub_goals} == {("saturation", "shade")}, text


def test_a_colour_kept_is_kept_where_the_photo_has_it_too(planner):
    from agent.eval.scenarios import load_photo

    # the desk photo's "lime green" mat is no HSL green: the photo's own shade of green keeps it as well
    desk = load_photo("desk_cat")
    plan = _plan(planner, "make it less saturated overall, its kinda garish, but dont touch the lime green mat, i like that")
    [goal] = plan.sub_goals
    assert goal.target["type"] == "union" and goal.target["invert"], goal.target
    mask = build_mask(goal.target, desk, desk.shape[:2])
    h, w = desk.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w]
    mat = ((xx / w - 0.75) / 0.25) ** 2 + ((yy / h - 0.84) / 0.16) ** 2 < 1
    assert mask[mat].mean() < 0.35 and mask[~mat].mean() > 0.8     # (the change goes where the mat is not)


def test_a_thing_said_along_the_edges_is_changed_at_the_edges(planner):
    plan = _plan(planner, "darken the wooden table along the edges, like a vignette")
    assert plan.kind != "clarify" and "where you said it is" in plan.reply, plan.reply
    assert {json.dumps(g.target, sort_keys=True) for g in plan.sub_goals} == {json.dumps(
        {"type": "radial", "softness": 0.6, "center": [0.5, 0.5], "radius": [0.5, 0.5], "invert": True}, sort_keys=True)}
