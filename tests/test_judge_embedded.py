"""The embedded judge on real photos rendered by the real renderer.

Each test is a situation a photographer would recognise: an edit that did what
was asked, one that did nothing, one that went the wrong way, one that blew
the highlights, a local edit that leaked outside its mask.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from skimage import data as skdata

from agent.judging.base import Judge, JudgeRequest
from agent.judging.embedded import DIAGNOSES, EFFECTS, EmbeddedJudge, load_thresholds
from agent.planning.base import SubGoal
from pipeline import ops
from pipeline.masks import normalize_mask_spec
from pipeline.render import Renderer, SourceImage, render
from pipeline.state import EditState

SKY = normalize_mask_spec({"type": "sky"})


@pytest.fixture(scope="module")
def photos():
    return {n: getattr(skdata, n)() for n in ("astronaut", "coffee", "chelsea", "rocket")}


def request_for(original, goals, state, *, current=None, previous_state=None, previous=None,
                masks=None, schema="default"):
    """A JudgeRequest as the agent builds it: the new state rendered from the original."""
    return JudgeRequest(
        original=original,
        current=render(original, state) if current is None else current,
        sub_goals=goals,
        state=state,
        previous_state=previous_state or EditState(),
        previous=previous,
        masks=masks or {},
        schema=schema,
    )


def edit(**values) -> EditState:
    return EditState().with_settings(values)


def assert_valid(a):
    assert 0.0 <= a.score <= 1.0
    assert a.assessment.strip()
    for d in a.diagnoses:
        assert d.split(":")[0] in DIAGNOSES
        if ":" in d:
            assert d.split(":")[1] in ops.OPS
    for k, v in a.dimensions.items():
        assert np.isfinite(v), k


# -- the interface -------------------------------------------------------------------------

def test_it_is_a_judge(judge):
    assert isinstance(judge, Judge)
    assert judge.name == "embedded"


def test_every_op_has_a_measurable_effect():
    from agent.judging.toolbox_checks import TOOLBOX_OPS

    retouch = set(ops.RETOUCH_OPS + ops.REGION_OPS)   # checked by the retouch report, not by EFFECTS
    assert set(EFFECTS) | TOOLBOX_OPS | retouch == set(ops.OPS) and not set(EFFECTS) & TOOLBOX_OPS


def test_sizes_must_match(judge, photos):
    im = photos["astronaut"]
    with pytest.raises(ValueError, match="same size"):
        judge.assess(request_for(im, [], EditState(), current=im[:100]))


# -- instruction compliance ---------------------------------------------------------------

def test_warm_edit_beats_no_change_and_the_wrong_direction(judge, photos):
    im = photos["astronaut"]
    goal = [SubGoal("temperature", 30)]
    state = edit(temperature=30)
    warm = judge.assess(request_for(im, goal, state))
    same = judge.assess(request_for(im, goal, state, current=im))
    cool = judge.assess(request_for(im, goal, state, current=render(im, edit(temperature=-30))))
    for a in (warm, same, cool):
        assert_valid(a)
    assert warm.score > 0.9 and warm.diagnoses == []
    assert warm.score > same.score + 0.3 and warm.score > cool.score + 0.3
    assert "too_weak:temperature" in same.diagnoses
    assert "wrong_direction:temperature" in cool.diagnoses
    assert "Warmer as asked (b* +" in warm.details and "b*" not in warm.assessment
    assert "Cooler instead of warmer" in cool.assessment
    assert warm.dimensions["compliance.temperature"] == 1.0
    assert warm.dimensions["change.temperature"] > 0.05
    assert cool.dimensions["change.temperature"] < -0.05


def test_a_weak_edit_for_much_warmer_is_too_weak(judge, photos):
    im = photos["chelsea"]
    goal = [SubGoal("temperature", 70, description="much warmer")]
    # the state says +70 but the picture only moved like +8
    weak = judge.assess(request_for(im, goal, edit(temperature=70), current=render(im, edit(temperature=8))))
    strong = judge.assess(request_for(im, goal, edit(temperature=70)))
    assert "too_weak:temperature" in weak.diagnoses
    assert "Barely visible: “warmer”" in weak.assessment
    assert 0 < weak.dimensions["compliance.temperature"] < 0.5
    assert strong.diagnoses == [] and strong.score > weak.score
    # the same small change is plenty for "slightly warmer"
    slight = judge.assess(request_for(im, [SubGoal("temperature", 8)], edit(temperature=8)))
    assert "too_weak:temperature" not in slight.diagnoses


@pytest.mark.parametrize("name", ["astronaut", "coffee", "chelsea", "rocket"])
@pytest.mark.parametrize("op,value", [
    ("exposure", 35), ("exposure", -35), ("contrast", 50), ("contrast", -50),
    ("highlights", -60), ("shadows", 60), ("whites", 50), ("blacks", 50),
    ("temperature", -40), ("temperature", 25), ("tint", 40), ("tint", -25), ("saturation", -50), ("vibrance", 60),
    ("clarity", 60), ("sharpen", 60), ("dehaze", 60),
    ("hue_orange", 60), ("saturation_orange", -60), ("luminance_orange", 50),
])
def test_renderer_edits_count_as_complied(judge, photos, name, op, value):
    """Whatever the photo, a rendered op at a clear value moves its measure visibly."""
    im = photos[name]
    a = judge.assess(request_for(im, [SubGoal(op, value)], edit(**{op: value})))
    assert_valid(a)
    assert not any(d.startswith(("too_weak", "wrong_direction")) for d in a.diagnoses), a.assessment
    assert a.dimensions[f"compliance.{op}"] == 1.0


@pytest.mark.parametrize("op,value", [("exposure", 40), ("saturation", 50), ("shadows", 60), ("clarity", 60)])
def test_the_opposite_render_is_the_wrong_direction(judge, photos, op, value):
    im = photos["coffee"]
    a = judge.assess(request_for(im, [SubGoal(op, value)], edit(**{op: value}),
                                 current=render(im, edit(**{op: -value}))))
    assert f"wrong_direction:{op}" in a.diagnoses
    assert a.dimensions[f"compliance.{op}"] == 0.0
    assert a.score < 0.6


def test_two_sub_goals_each_get_a_verdict(judge, photos):
    im = photos["chelsea"]
    goals = [SubGoal("temperature", 25), SubGoal("exposure", 25)]
    # only the exposure happened
    a = judge.assess(request_for(im, goals, edit(temperature=25, exposure=25), current=render(im, edit(exposure=25))))
    assert a.diagnoses == ["too_weak:temperature"]
    assert a.dimensions["compliance.exposure"] == 1.0
    assert a.dimensions["compliance"] < 0.75
    assert "Brighter as asked (L* +" in a.details and "Brighter as asked." in a.assessment
    report = judge.report(request_for(im, goals, edit(temperature=25, exposure=25)))
    assert [c.verdict for c in report.checks] == ["complied", "complied"]
    assert report.checks[1].to_dict()["op"] == "exposure"


def test_turn_two_is_measured_against_the_previous_render(judge, photos):
    im = photos["astronaut"]
    prev_state = edit(temperature=30)
    prev = render(im, prev_state)
    state = prev_state.with_value("exposure", 30)
    a = judge.assess(request_for(im, [SubGoal("exposure", 30)], state, previous_state=prev_state, previous=prev))
    assert a.diagnoses == []
    # the warmth from turn one is not this turn's change
    assert "b*" not in a.assessment


def test_a_clamped_sub_goal_that_could_not_move_counts_as_complied(judge, photos):
    im = photos["astronaut"]
    at_limit = edit(temperature=100)
    before = render(im, at_limit)
    a = judge.assess(request_for(im, [SubGoal("temperature", 20)], at_limit, previous_state=at_limit,
                                 previous=before, current=before))
    assert a.dimensions["compliance.temperature"] == 1.0
    assert not any(d.startswith("too_weak") for d in a.diagnoses)
    assert "already at +100" in a.assessment


def test_set_mode_measures_the_move_to_the_value(judge, photos):
    im = photos["rocket"]
    prev_state = edit(saturation=40)
    prev = render(im, prev_state)
    # "set saturation to 0" from +40 means less colour
    a = judge.assess(request_for(im, [SubGoal("saturation", 0, mode="set")], EditState(),
                                 previous_state=prev_state, previous=prev))
    assert a.dimensions["compliance.saturation"] == 1.0
    assert a.dimensions["change.saturation"] < 0
    wrong = judge.assess(request_for(im, [SubGoal("saturation", 0, mode="set")], EditState(),
                                     previous_state=prev_state, previous=prev, current=render(im, edit(saturation=80))))
    assert "wrong_direction:saturation" in wrong.diagnoses


def test_a_band_op_on_a_photo_without_that_colour_is_not_blamed(judge, photos):
    im = photos["rocket"]   # almost no greens
    a = judge.assess(request_for(im, [SubGoal("luminance_green", 40)], edit(luminance_green=40)))
    assert a.dimensions["compliance.luminance_green"] == 1.0
    assert "Little here for" in a.assessment


# -- technical quality ---------------------------------------------------------------------------

def test_heavy_exposure_push_clips_and_scores_below_a_moderate_one(judge, photos):
    im = photos["astronaut"]
    heavy = judge.assess(request_for(im, [SubGoal("exposure", 100)], edit(exposure=100)))
    moderate = judge.assess(request_for(im, [SubGoal("exposure", 30)], edit(exposure=30)))
    assert "highlights_clipped" in heavy.diagnoses
    assert "highlights_clipped" not in moderate.diagnoses
    assert heavy.score < moderate.score - 0.1
    assert heavy.dimensions["technical"] < moderate.dimensions["technical"]
    assert "Highlights now clip on" in heavy.details and "burn out" in heavy.assessment
    assert heavy.dimensions["technical.new_clipped_highlights"] > 0.1


def test_an_original_that_was_already_clipped_is_not_penalised(judge, photos):
    blown = render(photos["astronaut"], edit(exposure=100))   # treat the blown render as the original
    a = judge.assess(request_for(blown, [SubGoal("temperature", 30)], edit(temperature=30)))
    assert "highlights_clipped" not in a.diagnoses
    assert a.dimensions["technical"] > 0.9


def test_oversaturation_is_diagnosed(judge, photos):
    im = photos["coffee"]
    loud = judge.assess(request_for(im, [SubGoal("saturation", 100)], edit(saturation=100)))
    gentle = judge.assess(request_for(im, [SubGoal("vibrance", 30)], edit(vibrance=30)))
    assert "oversaturated" in loud.diagnoses
    assert "oversaturated" not in gentle.diagnoses
    assert loud.dimensions["technical"] < gentle.dimensions["technical"]
    assert "oversaturated" in loud.assessment


def test_crushed_shadows_are_diagnosed(judge, photos):
    im = photos["coffee"]
    a = judge.assess(request_for(im, [SubGoal("contrast", 40)], edit(contrast=40),
                                 current=render(im, edit(contrast=40, blacks=-100, exposure=-60))))
    assert "shadows_crushed" in a.diagnoses
    assert "crushed to black" in a.assessment


def test_posterised_result_is_banding(judge, photos):
    im = photos["chelsea"]
    current = render(im, edit(contrast=20)) // 24 * 24 + 12
    a = judge.assess(request_for(im, [SubGoal("contrast", 20)], edit(contrast=20), current=current.astype(np.uint8)))
    assert "banding" in a.diagnoses
    clean = judge.assess(request_for(im, [SubGoal("contrast", 20)], edit(contrast=20)))
    assert "banding" not in clean.diagnoses
    assert a.dimensions["technical"] < clean.dimensions["technical"]


# -- local edits and preservation -------------------------------------------------------------

@pytest.fixture(scope="module")
def rocket_sky(photos):
    im = photos["rocket"]
    mask = Renderer().mask(SourceImage.from_array(im), SKY, im.shape[:2])
    assert 0.1 < float(mask.mean()) < 0.9    # a real sky, not everything or nothing
    return im, {json.dumps(SKY, sort_keys=True): mask}


def test_clean_local_edit_preserves_the_rest(judge, rocket_sky):
    im, masks = rocket_sky
    goal = [SubGoal("exposure", -40, target={"type": "sky"})]
    state = EditState().with_value("exposure", -40, mask=SKY)
    a = judge.assess(request_for(im, goal, state, masks=masks))
    assert a.diagnoses == []
    assert a.dimensions["compliance.exposure@sky"] == 1.0
    assert a.dimensions["preservation"] > 0.9
    assert a.dimensions["preservation.ssim_outside"] > 0.95
    assert "on the sky as asked" in a.assessment and "The rest of the photo kept its look" in a.assessment
    assert "The rest of the photo is intact (SSIM" in a.details


def test_local_edit_that_spills_scores_lower_preservation(judge, rocket_sky):
    im, masks = rocket_sky
    goal = [SubGoal("exposure", -40, target={"type": "sky"})]
    state = EditState().with_value("exposure", -40, mask=SKY)
    clean = judge.assess(request_for(im, goal, state, masks=masks))
    # the same darkening applied to the whole frame: the sky got it, so did everything else
    spilled = judge.assess(request_for(im, goal, state, masks=masks, current=render(im, edit(exposure=-40))))
    assert "local_spill" in spilled.diagnoses
    assert spilled.dimensions["preservation"] < clean.dimensions["preservation"] - 0.3
    assert spilled.score < clean.score
    assert "spilled beyond the sky" in spilled.details and "also changed the rest of the photo" in spilled.assessment


def test_local_edit_is_measured_inside_its_mask(judge, rocket_sky):
    im, masks = rocket_sky
    goal = [SubGoal("temperature", 50, target={"type": "sky"})]
    # warming only what is NOT sky leaves the sky as it was
    inverse = {"type": "invert", "mask": SKY}
    wrong_place = render(im, EditState().with_value("temperature", 50, mask=inverse))
    a = judge.assess(request_for(im, goal, EditState().with_value("temperature", 50, mask=SKY),
                                 masks=masks, current=wrong_place))
    assert "too_weak:temperature" in a.diagnoses
    assert "local_spill" in a.diagnoses


def test_a_missing_mask_is_a_warning_not_a_crash(judge, photos):
    im = photos["rocket"]
    state = EditState().with_value("exposure", -40, mask=SKY)
    a = judge.assess(request_for(im, [SubGoal("exposure", -40, target=SKY)], state))
    assert_valid(a)
    assert any("no mask given" in w for w in a.warnings)


# -- identity, ranges, text ------------------------------------------------------------------------

def test_identity_with_no_sub_goals(judge, photos):
    im = photos["chelsea"]
    a = judge.assess(request_for(im, [], EditState(), current=im))
    assert_valid(a)
    assert a.diagnoses == []
    assert a.score == pytest.approx(1.0)
    assert "unchanged" in a.assessment
    assert a.fields == {}
    assert a.to_dict()["source"] == "embedded"


def test_scores_stay_within_0_and_1_for_wild_edits(judge, photos):
    im = photos["astronaut"]
    wild = [edit(exposure=100, contrast=100, saturation=100, whites=100),
            edit(exposure=-100, blacks=-100, saturation=-100),
            edit(dehaze=100, clarity=100, sharpen=100),
            edit(temperature=-100, tint=100, vibrance=-100)]
    for state in wild:
        goals = [SubGoal(op, -v) for op, v in state.settings.items()]   # everything asked backwards
        for a in (judge.assess(request_for(im, goals, state)),
                  judge.assess(request_for(im, [SubGoal(op, v) for op, v in state.settings.items()], state))):
            assert_valid(a)


# -- thresholds and schemas --------------------------------------------------------------------------

def test_thresholds_can_come_from_config(photos):
    lenient = EmbeddedJudge(config={"quality": {"judge": {"clip_tolerance": 0.9}}})
    assert lenient.thresholds["clip_tolerance"] == 0.9
    assert lenient.thresholds["crush_tolerance"] == load_thresholds()["crush_tolerance"]
    im = photos["astronaut"]
    a = lenient.assess(request_for(im, [SubGoal("exposure", 100)], edit(exposure=100)))
    assert "highlights_clipped" not in a.diagnoses


def test_a_custom_quality_schema_gets_measured_fields_and_honest_gaps(judge, photos):
    im = photos["chelsea"]
    a = judge.assess(request_for(im, [SubGoal("temperature", 40)], edit(temperature=40), schema="cinematographer"))
    assert a.fields["color_grade"] == "warm"
    assert a.fields["composition_score"] is None          # cannot be measured from pixels
    assert any("composition_score" in w for w in a.warnings)


def test_an_unknown_schema_is_a_warning(judge, photos):
    im = photos["chelsea"]
    a = judge.assess(request_for(im, [SubGoal("temperature", 40)], edit(temperature=40), schema="no-such-schema"))
    assert a.fields == {}
    assert any("no-such-schema" in w for w in a.warnings)
