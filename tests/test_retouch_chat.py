"""Chat reaches the healing and portrait ops, the judge checks them from pixels, and
what cannot be done is said plainly. Whole turns run through the Studio with the
embedded planner and judge (real SQLite, real renderer)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from skimage import data

from agent.judging.base import JudgeRequest
from agent.judging.embedded import EmbeddedJudge
from agent.judging.retouch_checks import check_request
from agent.planning.base import PlanRequest, SubGoal
from agent.planning.embedded import EmbeddedPlanner
from agent.loop.nodes import apply_sub_goals
from pipeline.measure import image_stats
from pipeline.render import render
from pipeline.state import EditState
from test_retouch import _add_spots, _sky, _u8

PLANNER = EmbeddedPlanner()

PHRASES = {
    "remove the dust spots": {"dust_removal": 60},
    "clean up her skin": {"blemish_removal": 60},
    "smooth the skin a bit": {"skin_smoothing": 20},
    "smooth her skin": {"skin_smoothing": 40},
    "whiten her teeth": {"teeth_whitening": 40},
    "brighten her eyes": {"eye_brightening": 35},
    "fix the red eye": {"red_eye": 100},
    "even out her skin tone": {"even_skin_tone": 40},
}


@pytest.mark.parametrize("message", list(PHRASES))
def test_chat_phrases_reach_the_retouch_ops(message):
    img = data.astronaut()[::4, ::4].copy()
    plan = PLANNER.plan(PlanRequest(message=message, state=EditState(), context="", image_stats=image_stats(img),
                                    image=img, original=img))
    from agent.planning.selection import resolve_selection

    goals, missing = resolve_selection(plan.sub_goals, {})
    state, _ = apply_sub_goals(EditState(), goals)
    assert not missing and state.settings == PHRASES[message] and not state.layers, (message, state.to_dict())


def _judge(original, goal, state, previous_state=None):
    previous_state = previous_state or EditState()
    return check_request(JudgeRequest(original=original, current=render(original, state), sub_goals=[goal],
                                      state=state, previous_state=previous_state,
                                      previous=render(original, previous_state)))[0]


def test_the_judge_sees_dust_healed_and_dust_left():
    dirty = _u8(_add_spots(_sky(400, 600), 8)[0])
    goal = SubGoal("dust_removal", 60, "add")
    good = _judge(dirty, goal, EditState.from_dict({"settings": {"dust_removal": 60}}))
    assert good["verdict"] == "complied" and "after" in good["sentence"]
    # a "render" that did nothing although the state says dust removal: nothing changed, said plainly
    request = JudgeRequest(original=dirty, current=dirty, sub_goals=[goal],
                           state=EditState.from_dict({"settings": {"dust_removal": 60}}),
                           previous_state=EditState(), previous=dirty)
    lazy = check_request(request)[0]
    assert lazy["verdict"] == "no_change_needed" and "dust" in lazy["sentence"]
    # a render that made the photo darker everywhere is not dust removal
    darker = np.clip(dirty.astype(int) - 8, 0, 255).astype(np.uint8)
    request = JudgeRequest(original=dirty, current=darker, sub_goals=[goal],
                           state=EditState.from_dict({"settings": {"dust_removal": 60}}),
                           previous_state=EditState(), previous=dirty)
    assert check_request(request)[0]["verdict"] == "too_weak"


def test_the_judge_sees_whiter_teeth_and_yellower_teeth():
    img = data.astronaut()
    state = EditState.from_dict({"settings": {"teeth_whitening": 80}})
    goal = SubGoal("teeth_whitening", 80, "add")
    good = _judge(img, goal, state)
    assert good["verdict"] == "complied"
    whiter = render(img, state)
    yellower = img.copy()
    changed = (whiter != img).any(axis=2)
    lab = cv2.cvtColor(img, cv2.COLOR_RGB2Lab)
    lab[..., 2][changed] = np.clip(lab[..., 2][changed].astype(int) + 12, 0, 255)
    yellower = cv2.cvtColor(lab, cv2.COLOR_Lab2RGB)
    bad = check_request(JudgeRequest(original=img, current=yellower, sub_goals=[goal], state=state,
                                     previous_state=EditState(), previous=img))[0]
    assert bad["verdict"] == "wrong_direction" and bad["score"] == 0


def test_a_chat_turn_heals_dust_and_the_judge_agrees(make_studio):
    studio = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")
    dirty = _u8(_add_spots(_sky(400, 600), 8)[0])
    info = studio.start_session(dirty)
    r = studio.send_message(info.id, "remove the dust spots")
    assert r.status in ("approved", "auto_approved"), r.reply
    assert "dust" in r.reply.lower()
    assert studio.head(info.id).state["settings"] == {"dust_removal": 60}
    out = studio.render(info.id, long_side=None)
    depth = lambda img: float(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY).astype(float).std())
    assert depth(out) < depth(dirty)


def test_portrait_requests_without_a_face_get_an_honest_reply(make_studio):
    studio = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")
    info = studio.start_session(data.coffee())
    r = studio.send_message(info.id, "whiten her teeth")
    assert "couldn't find a face" in r.reply, r.reply
    assert np.array_equal(studio.render(info.id, long_side=None), studio.render(info.id, studio.history(info.id)[0].id,
                                                                                long_side=None))


def test_remove_this_needs_a_selection_then_fills_it(make_studio):
    studio = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")
    wall = _u8(_sky(300, 450, seed=9))
    photo = wall.copy()
    cv2.circle(photo, (300, 150), 30, (20, 20, 20), -1)
    info = studio.start_session(photo)
    head = studio.head(info.id).id
    r = studio.send_message(info.id, "remove this")
    assert r.status == "not_understood" and "no selection" in r.reply.lower()
    assert studio.head(info.id).id == head
    sel = studio.select(info.id, point=[300 / 450, 150 / 300])
    assert 0.015 < sel["coverage"] < 0.03
    r = studio.send_message(info.id, "remove this")
    assert r.status in ("approved", "auto_approved"), r.reply
    layer = studio.head(info.id).state["layers"][0]
    assert layer["mask"] == sel["mask"] and layer["settings"] == {"remove": 100}
    out = studio.render(info.id, long_side=None)
    disc = np.zeros(photo.shape[:2], np.uint8)
    cv2.circle(disc, (300, 150), 30, 1, -1)
    assert np.abs(out[disc > 0].astype(int) - wall[disc > 0].astype(int)).mean() < 8
