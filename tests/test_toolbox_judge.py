"""The judge checks geometry and finishing from pixels, and chat reaches the new ops.

Each check is shown a good render and a deliberately wrong one (the state says
one thing, the pixels show another): the good one complies, the wrong one does not.
The last tests run whole turns through the Studio with the embedded planner and judge.
"""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from agent.judging.base import JudgeRequest
from agent.loop.nodes import apply_sub_goals
from agent.judging.embedded import EmbeddedJudge
from agent.planning.base import PlanRequest, SubGoal
from agent.planning.embedded import EmbeddedPlanner
from pipeline.measure import image_stats
from pipeline.render import in_frame_of, render
from pipeline.state import EditState
from test_geometry import seascape, tilted


def _state(**settings) -> EditState:
    return EditState.from_dict({"settings": settings})


def judged(original, goals, state, current=None, previous_state=None):
    """A JudgeRequest as the agent builds it (original and previous seen through the new frame)."""
    previous_state = previous_state or EditState()
    request = JudgeRequest(
        original=render(original, in_frame_of(EditState(), state)),
        current=render(original, state) if current is None else current,
        sub_goals=goals, state=state, previous_state=previous_state,
        previous=render(original, in_frame_of(previous_state, state)))
    report = EmbeddedJudge().report(request)
    return {c.op: c for c in report.checks}, report.assessment


def test_crop_aspect_is_checked_from_the_output():
    img = data.coffee()
    state = _state(crop_aspect="4:5")
    checks, a = judged(img, [SubGoal("crop_aspect", 2, "set")], state)
    assert checks["crop_aspect"].verdict == "complied" and "4:5" in a.assessment
    # a renderer that cropped to a square although the state says 4:5: every image of the request is square
    square = render(img, _state(crop_aspect="1:1"))
    request = JudgeRequest(original=square, current=square, sub_goals=[SubGoal("crop_aspect", 2, "set")],
                           state=state, previous_state=EditState(), previous=square)
    check = EmbeddedJudge().report(request).checks[0]
    assert check.verdict == "wrong_direction" and check.score == 0 and "not 4:5" in check.sentence


def test_levelness_is_checked_from_the_output():
    scene = tilted(seascape(), 4.0)
    state = _state(auto_straighten=1)
    checks, _ = judged(scene, [SubGoal("auto_straighten", 1, "set")], state)
    assert checks["auto_straighten"].verdict == "complied"
    still_tilted = render(tilted(scene, 0.01), _state())  # the tilted photo, not levelled
    frame_shape = render(scene, state).shape
    checks, _ = judged(scene, [SubGoal("auto_straighten", 1, "set")], state,
                       current=np.ascontiguousarray(still_tilted[: frame_shape[0], : frame_shape[1]]))
    assert checks["auto_straighten"].verdict == "too_weak"


def test_vignette_needs_darker_corners_and_an_unchanged_centre():
    img = data.astronaut()
    state = _state(vignette=50)
    checks, _ = judged(img, [SubGoal("vignette", 50)], state)
    assert checks["vignette"].verdict == "complied"
    darker_everywhere = render(img, _state(exposure=-40))
    checks, _ = judged(img, [SubGoal("vignette", 50)], state, current=darker_everywhere)
    assert checks["vignette"].verdict == "too_weak"  # the centre changed too
    checks, _ = judged(img, [SubGoal("vignette", 50)], state, current=img)
    assert checks["vignette"].verdict == "too_weak" and checks["vignette"].score == 0


def test_grain_must_add_fine_texture():
    img = data.chelsea()
    state = _state(grain=40)
    checks, _ = judged(img, [SubGoal("grain", 40)], state)
    assert checks["grain"].verdict == "complied"
    checks, _ = judged(img, [SubGoal("grain", 40)], state, current=img)
    assert checks["grain"].verdict == "too_weak"


def test_grading_must_move_towards_the_hue():
    img = data.astronaut()
    state = _state(grade_shadows_hue=190, grade_shadows=40)
    goals = [SubGoal("grade_shadows_hue", 190, "set"), SubGoal("grade_shadows", 40, "set")]
    checks, _ = judged(img, goals, state)
    assert checks["grade_shadows"].verdict == "complied"
    orange = render(img, _state(grade_shadows_hue=20, grade_shadows=40))
    checks, _ = judged(img, goals, state, current=orange)
    assert checks["grade_shadows"].verdict == "too_weak"


def test_noise_reduction_must_smooth():
    rng = np.random.default_rng(0)
    noisy = np.clip(data.coffee().astype(int) + rng.normal(0, 9, data.coffee().shape), 0, 255).astype(np.uint8)
    state = _state(noise_reduction=60)
    checks, _ = judged(noisy, [SubGoal("noise_reduction", 60)], state)
    assert checks["noise_reduction"].verdict == "complied"
    checks, _ = judged(noisy, [SubGoal("noise_reduction", 60)], state, current=noisy)
    assert checks["noise_reduction"].verdict == "too_weak"


# -- chat reaches the ops ---------------------------------------------------------------------

PHRASES = {
    "crop to square": {"crop_aspect": 1},
    "crop it for an Instagram post": {"crop_aspect": 2},
    "make it 16:9": {"crop_aspect": 5},
    "tighter": {"crop_zoom": 15},
    "straighten the horizon": {"auto_straighten": 1},
    "rotate left": {"rotate": 270},
    "flip it": {"flip_h": 1},
    "add a vignette": {"vignette": 30},
    "add some film grain": {"grain": 25},
    "give it an S-curve": {"tone_curve": 1},
    "faded matte look": {"tone_curve": 4},
    "teal and orange": {"grade_shadows_hue": 190, "grade_shadows": 35, "grade_highlights_hue": 35,
                        "grade_highlights": 30},
    "split tone warm highlights cool shadows": {"grade_highlights_hue": 40, "grade_highlights": 30,
                                                "grade_shadows_hue": 215, "grade_shadows": 30},
    "reduce the noise": {"noise_reduction": 30, "color_noise_reduction": 35},
}


PLANNER = EmbeddedPlanner()


@pytest.mark.parametrize("message", list(PHRASES))
def test_chat_phrases_reach_the_new_ops(message):
    img = data.astronaut()[::4, ::4].copy()
    plan = PLANNER.plan(PlanRequest(message=message, state=EditState(), context="", image_stats=image_stats(img),
                                    image=img, original=img))
    state, _ = apply_sub_goals(EditState(), plan.sub_goals)
    assert state.settings == PHRASES[message], (message, state.settings)


def test_a_chat_turn_crops_and_the_judge_checks_it(make_studio):
    from agent.planning.embedded import EmbeddedPlanner as Planner

    studio = make_studio(Planner(), EmbeddedJudge())
    info = studio.start_session(data.coffee())
    r = studio.send_message(info.id, "crop to square and add a vignette")
    shown = studio.render(info.id, r.asset_id)
    assert shown.shape[0] == shown.shape[1]
    head = next(a for a in studio.history(info.id) if a.id == r.asset_id)
    assert head.state["settings"] == {"crop_aspect": 1, "vignette": 30}
    assert "Cropped to 1:1" in r.assessment and "centre unchanged" in r.assessment
    assert r.dimensions["compliance"] == 1.0
    out = studio.export(info.id, fmt="png")
    import cv2

    full = cv2.imread(str(out))
    assert full.shape[0] == full.shape[1] == data.coffee().shape[0]  # the export is full resolution
