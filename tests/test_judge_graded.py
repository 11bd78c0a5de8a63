"""The judge ranks edits, not only passes them: graded overshoot, complaints read as their
fix (the planner profile's complaint table), "less" follow-ups and negations of the last
change bounded by the version before it, colour complaints about a thing.

Real photos (skimage.data), real renders, the embedded judge as the agent calls it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from skimage import data as skdata

from agent.config import load_config
from agent.eval import checks
from agent.eval.discrimination import REQUESTS, labelled_cases
from agent.judging.base import JudgeRequest
from agent.judging.embedded import EmbeddedJudge
from agent.planning.base import SubGoal
from pipeline.masks import build_mask, normalize_mask_spec
from pipeline.render import render
from pipeline.state import EditState

CFG = load_config()
MIN_PASS, AUTO = CFG.min_pass_score, CFG.auto_approve_threshold


@pytest.fixture(scope="module")
def photos():
    return {n: np.ascontiguousarray(getattr(skdata, n)()[::2, ::2])
            for n in ("astronaut", "rocket", "coffee", "chelsea")}


def edit(**values) -> EditState:
    s = EditState()
    for op, v in values.items():
        s = s.with_value(op, v)
    return s


def ask(judge, original, message, state, *, previous_state=None, history=()):
    """Judge ``state`` after ``previous_state`` for ``message``, with the render before the last change."""
    previous_state = previous_state or EditState()
    goals = [SubGoal(op, v - previous_state.value(op)) for op, v in state.to_dict()["settings"].items()
             if v != previous_state.value(op)]
    return judge.assess(JudgeRequest(
        original=original, current=render(original, state), sub_goals=goals, state=state,
        previous_state=previous_state, previous=render(original, previous_state), message=message,
        history=list(history), before_last=render(original, EditState()) if history else None))


def test_overshoot_is_graded_below_the_right_edit(judge, photos):
    im = photos["astronaut"]
    right = ask(judge, im, "make it warmer", edit(temperature=25)).score
    more = ask(judge, im, "make it warmer", edit(temperature=60)).score
    extreme = ask(judge, im, "make it warmer", edit(temperature=100)).score
    assert right >= AUTO
    assert right > more > extreme, (right, more, extreme)
    assert extreme < AUTO     # a fourfold edit is not approved without the person


@pytest.mark.parametrize("photo,message,right,wrong", [
    ("rocket", "it looks a bit dingy", {"exposure": 20}, {"exposure": -20}),        # engine: brighter, clearer
    ("astronaut", "it has a green cast", {"tint": 25}, {"tint": -25}),               # not a wish for green
    ("coffee", "it looks too contrasty", {"contrast": -30}, {"contrast": 30}),
    ("chelsea", "it looks overcooked", {"clarity": -30}, {"clarity": 30}),
])
def test_complaints_from_the_planner_profile_are_judged_by_their_fix(judge, photos, photo, message, right, wrong):
    im = photos[photo]
    good = ask(judge, im, message, edit(**right)).score
    bad = ask(judge, im, message, edit(**wrong)).score
    assert good >= MIN_PASS, good
    assert bad < MIN_PASS, bad


def test_halve_it_goes_back_but_never_past_nor_further(judge, photos):
    im = photos["coffee"]
    before = edit(temperature=40)
    history = ("make it warmer",)
    score = {v: ask(judge, im, "too much, halve it", edit(temperature=v), previous_state=before,
                    history=history).score for v in (20, 40, 60, -40)}
    assert score[20] >= AUTO
    assert score[40] < MIN_PASS      # no change
    assert score[60] < MIN_PASS      # more of it: the wrong way
    assert score[-40] < MIN_PASS     # past the version before the warm change


def test_a_negation_of_the_last_change_is_sized_by_that_change(judge, photos):
    im = photos["chelsea"]
    soft = edit(clarity=-60)
    history = ("give it a soft dreamy look",)
    back = ask(judge, im, "not that soft", edit(clarity=-30), previous_state=soft, history=history).score
    past = ask(judge, im, "not that soft", edit(clarity=60), previous_state=soft, history=history).score
    same = ask(judge, im, "not that soft", soft, previous_state=soft, history=history).score
    assert back >= AUTO, back
    assert past < MIN_PASS, past     # crisper than before the soft look: not what "not that soft" asked
    assert same < MIN_PASS, same


def test_a_colour_complaint_about_a_thing_is_judged_on_that_colour(judge, photos):
    im = photos["coffee"]
    fixed = ask(judge, im, "the saucer is way too red", edit(saturation_red=-40))
    worse = ask(judge, im, "the saucer is way too red", edit(saturation_red=40))
    assert fixed.score >= MIN_PASS, fixed.assessment
    assert worse.score < MIN_PASS, worse.assessment
    assert fixed.reading["target_mask"] == {"type": "shade", "band": "red"}      # the photo's own shade of red


def test_stats_cache_keeps_regions_apart(photos):
    """The render after one step is the render before the next: measured in each step's own region."""
    im = photos["astronaut"]
    h, w = im.shape[:2]
    top = np.zeros((h, w), np.float32)
    top[: h // 2] = 1.0
    bottom = 1.0 - top
    cache = checks.StatsCache()
    a = cache.stats(im, "inside", top)["L_mean"]
    b = cache.stats(im, "inside", bottom)["L_mean"]
    assert a == pytest.approx(checks.photo_stats(im, top)["L_mean"])
    assert b == pytest.approx(checks.photo_stats(im, bottom)["L_mean"])
    assert a != pytest.approx(b)


def test_labelled_less_follow_up_ranks_the_right_edit_first():
    """The labelled set's "halve it": the right edit passes its pixel checks and outscores every
    variant that fails them (the extreme one goes past the version before the last change)."""
    req = next(r for r in REQUESTS if r.message == "too much, halve it")
    cases = {c["variant"]: c for c in labelled_cases(long_side=256, requests=[req])}
    assert cases["right"]["pixel_pass"]
    failing = [c for c in cases.values() if not c["pixel_pass"]]
    assert {c["variant"] for c in failing} >= {"opposite", "tiny", "extreme"}
    assert all(cases["right"]["score"] > c["score"] for c in failing)
    assert all(c["score"] < MIN_PASS for c in failing)


def test_a_held_edit_that_moved_nothing_is_not_approved(judge, photos):
    """The executor held the step at the op's limit: a part-way move is judged by the plan,
    but no move at all is no edit of what was asked."""
    im = photos["rocket"]

    def held(previous, now):
        prev = edit(exposure=previous)
        state = edit(exposure=now)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal("exposure", 30)], state=state,
            previous_state=prev, previous=render(im, prev), message="brighter", held=True)).score

    assert held(100, 100) < MIN_PASS
    assert held(90, 100) >= MIN_PASS


def test_a_muted_warm_look_is_not_a_wrong_way_cast(judge, photos):
    """'a vintage film look' answered by desaturating and warming: b* falls with the chroma
    (the colours go toward grey), which is no cooling; the right look passes."""
    im = photos["coffee"]
    look = edit(saturation=-30, temperature=30, contrast=-38, blacks=35)
    assert ask(judge, im, "a vintage film look", look).score >= MIN_PASS


@pytest.mark.parametrize("message,right,wrong", [
    ("tone down the sky", -25, 25),
    ("could you bring the sky down a bit", -25, 25),   # the verb split around its place
    ("bring the sky up a touch", 25, -25),              # a raising verb: lighter there
])
def test_a_verb_on_a_place_with_no_quality_is_judged_by_its_way(judge, photos, message, right, wrong):
    """Lighter or darker there by the verb passes; the other way, or contrast there (what a misreading planner
    did), does not."""
    im = photos["rocket"]
    sky = normalize_mask_spec({"type": "sky"})
    masks = {json.dumps(sky, sort_keys=True): np.clip(build_mask(sky, im, im.shape[:2]), 0, 1)}

    def local(op, value):
        state = EditState().with_value(op, value, mask=sky)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal(op, value, target=sky)], state=state,
            previous_state=EditState(), previous=render(im, EditState()), masks=masks, message=message)).score

    assert local("exposure", right) >= MIN_PASS
    assert local("exposure", wrong) < MIN_PASS
    assert local("contrast", 5) < MIN_PASS


def test_same_again_but_less_is_judged_as_a_smaller_repeat(judge, photos):
    """The planner repeats the last change at a smaller scale: that passes, a pull-back does not."""
    im = photos["chelsea"]
    before = edit(temperature=25)
    history = ("warm it up",)
    again = ask(judge, im, "same again but less", edit(temperature=37), previous_state=before, history=history)
    back = ask(judge, im, "same again but less", edit(temperature=13), previous_state=before, history=history)
    assert again.score >= MIN_PASS, again.assessment
    assert back.score < MIN_PASS, back.assessment


def test_a_trailing_too_adds_a_complaint(judge, photos):
    """'and a bit cold too' after another fix: warmer is the fix, cooler the wrong way."""
    im = photos["astronaut"]
    before = edit(contrast=20)
    history = ("it looks kind of lifeless",)
    warm = ask(judge, im, "and a bit cold too", edit(contrast=20, temperature=20), previous_state=before,
               history=history).score
    cool = ask(judge, im, "and a bit cold too", edit(contrast=20, temperature=-20), previous_state=before,
               history=history).score
    assert warm >= MIN_PASS, warm
    assert cool < MIN_PASS, cool


def test_a_replan_is_judged_against_the_persons_feedback(judge, photos):
    """'/replan no, softer instead: make it dreamy' after 'more clarity': the softer attempt passes,
    more clarity (what the message alone asked) does not."""
    im = photos["chelsea"]

    def replanned(clarity):
        state = edit(clarity=clarity)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal("clarity", clarity)], state=state,
            previous_state=EditState(), previous=im, message="more clarity",
            feedback="no, softer instead: make it dreamy")).score

    assert replanned(-30) >= MIN_PASS
    assert replanned(30) < MIN_PASS


def test_a_replan_in_a_session_hands_the_feedback_to_the_judge(make_studio):
    """Through the graph: the attempt that answers '/replan' is read with the person's words."""
    from agent.planning.embedded import EmbeddedPlanner

    studio = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="always")
    sid = studio.start_session(np.ascontiguousarray(skdata.chelsea()[::2, ::2])).id
    studio.send_message(sid, "more clarity")
    r = studio.review(sid, "replan", feedback="no, softer instead: make it dreamy")
    reading = studio.store.get_asset(r.asset_id, sid).scores["reading"]
    assert reading["expects"] == ["detail down (plain)"], reading
    assert any("feedback" in n for n in reading["notes"])
    assert r.score >= MIN_PASS, r.assessment


@pytest.mark.parametrize("photo", ["astronaut", "coffee"])
def test_a_nudge_is_no_fix_of_a_slight_complaint(judge, photos, photo):
    """'it looks a bit dingy': the planner damps a magnitude on a complaint but keeps a visible
    fix, so a 1-point exposure nudge (its contrast side effect is about the slight size) fails
    and a real fix still passes."""
    im = photos[photo]
    assert ask(judge, im, "it looks a bit dingy", edit(exposure=1)).score < MIN_PASS
    assert ask(judge, im, "it looks a bit dingy", edit(exposure=15)).score >= AUTO


def test_pulling_back_a_change_too_small_to_see_is_no_failure(judge, photos):
    """'pull it back a touch' after a step the planner held to almost nothing: taking part of
    an invisible change back shows nothing, as it should; going far the other way still fails."""
    im = photos["astronaut"]
    before_last, previous = edit(tint=22), edit(tint=25)

    def back(now):
        state = edit(tint=now)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal("tint", now - 25)], state=state,
            previous_state=previous, previous=render(im, previous), message="pull it back a touch",
            history=["more magenta", "more"], before_last=render(im, before_last)))

    small = back(24)
    assert small.score >= MIN_PASS, small.assessment
    assert back(-20).score < MIN_PASS


def test_a_repeat_stopped_at_the_sweet_spot_edge_is_judged_by_its_plan(judge, photos):
    """'more' once more at the edge of tint's sweet spot: the planner stops there and says so;
    the small step it made is what the plan asked, not a weak edit."""
    im = photos["astronaut"]
    at_edge = ask(judge, im, "more", edit(tint=25), previous_state=edit(tint=22), history=("more magenta",))
    assert at_edge.score >= MIN_PASS, at_edge.assessment
    # the same small step inside the sweet spot is a weak answer to "more"
    inside = ask(judge, im, "more", edit(tint=8), previous_state=edit(tint=5), history=("more magenta",))
    assert inside.score < at_edge.score


def test_a_place_the_judge_cannot_find_is_confirmed_by_the_person(judge, photos):
    """'darken the table': the judge has no table mask and measures where the plan edited (its
    guess); a right edit there passes but does not auto-approve. A follow-up on it was seen already."""
    im = photos["coffee"]
    spec = normalize_mask_spec({"type": "subject", "invert": True, "feather": 25})
    mask = np.clip(build_mask(spec, im, im.shape[:2]), 0, 1)
    masks = {json.dumps(spec, sort_keys=True): mask}

    def local(message, previous, value, history=()):
        prev = EditState().with_value("exposure", previous, mask=spec)
        state = EditState().with_value("exposure", value, mask=spec)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal("exposure", value - previous, target=spec)],
            state=state, previous_state=prev, previous=render(im, prev), masks=masks, message=message,
            history=list(history), before_last=render(im, EditState()) if history else None))

    first = local("darken the table around the cup", 0, -20)
    assert MIN_PASS <= first.score < AUTO, first.assessment
    assert first.reading["place_unconfirmed"] is True
    again = local("do that again", -20, -40, history=("darken the table around the cup",))
    assert again.score >= AUTO, again.assessment


def test_a_small_repeat_is_sized_by_the_last_change(judge, photos):
    """'a smidge more' after a small brightening asks for a share of that step, not a plain
    'brighter': the planner's small repeat passes; nothing at all, or a huge jump, does not."""
    im = photos["chelsea"]
    before, history = edit(exposure=10), ("brighter",)
    small = ask(judge, im, "a smidge more", edit(exposure=13), previous_state=before, history=history)
    assert small.score >= AUTO, small.assessment
    none = ask(judge, im, "a smidge more", edit(exposure=10, contrast=1), previous_state=before, history=history)
    assert none.score < MIN_PASS
    huge = ask(judge, im, "a smidge more", edit(exposure=60), previous_state=before, history=history)
    assert huge.score < small.score
    # any small amount said with "more" is read the same way ("a hint more")
    hint = ask(judge, im, "a hint more", edit(exposure=13), previous_state=before, history=history)
    assert hint.score >= AUTO, hint.assessment
    assert ask(judge, im, "a hint more", edit(exposure=7), previous_state=before, history=history).score < MIN_PASS


def test_a_complaint_the_last_change_caused_must_not_go_past_where_it_started(judge, photos):
    """'too yellow now' after a warming: cooling part of the way back passes; cooling past the
    version before the warming fails."""
    im = photos["astronaut"]
    before, history = edit(temperature=20), ("it feels a bit cold",)
    back = ask(judge, im, "hmm now it's too yellow", edit(temperature=10), previous_state=before, history=history)
    past = ask(judge, im, "hmm now it's too yellow", edit(temperature=-20), previous_state=before, history=history)
    assert back.score >= MIN_PASS, back.assessment
    assert past.score < MIN_PASS, past.assessment


def test_a_look_is_a_style_not_an_amount(judge, photos):
    """'a dreamy soft look' made the planner's way passes; the same edit for 'a touch softer' is
    overdone: a look has latitude a plain amount does not."""
    im = photos["astronaut"]
    look = edit(clarity=-50, highlights=12, contrast=-21, dehaze=-10, sharpen=-15)
    dreamy = ask(judge, im, "give it a dreamy soft look", look)
    assert dreamy.score >= AUTO, dreamy.assessment
    touch = ask(judge, im, "a touch softer", look)
    assert touch.score < AUTO, touch.assessment


def test_a_complaint_about_the_edits_so_far_may_go_back_past_the_last_step_not_the_original(judge, photos):
    """'now it's harsh' after 'it looks flat' and 'bit more': the contrast added over both turns is
    the problem; taking back more than the last step passes, going flatter than the original fails."""
    im = photos["astronaut"]
    after_flat, before = edit(contrast=30), edit(contrast=45)
    history = ("it looks flat", "bit more")

    def harsh(now):
        state = edit(contrast=now)
        return judge.assess(JudgeRequest(
            original=im, current=render(im, state), sub_goals=[SubGoal("contrast", now - 45)], state=state,
            previous_state=before, previous=render(im, before), message="now it's harsh",
            history=list(history), before_last=render(im, after_flat)))

    assert harsh(21).score >= MIN_PASS          # back past the "bit more" step, not past the original
    assert harsh(-40).score < MIN_PASS          # flatter than the original


def test_a_slight_request_is_met_by_a_small_visible_step(judge, photos):
    """'brighten it just a smidge' answered by exposure +5 is what was asked; no visible change is not."""
    im = photos["rocket"]
    small = ask(judge, im, "brighten it just a smidge", edit(exposure=5))
    assert small.score >= AUTO, small.assessment
    assert ask(judge, im, "brighten it just a smidge", edit(exposure=1)).score < MIN_PASS
