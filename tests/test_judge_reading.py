"""The embedded judge scores how the pixels moved against its reading of the message.

Real photos, real renders. A wrong-direction, empty or unasked edit lands below
min_pass_score (the agent replans or asks); a right one passes; damage outside
a named place is penalised; the words agree with the numbers.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from skimage import data as skdata

from agent.config import load_config
from agent.judging.base import JudgeRequest
from agent.judging.embedded import channel_clip_shares
from agent.planning.base import SubGoal
from pipeline.masks import build_mask, normalize_mask_spec
from pipeline.render import render
from pipeline.state import EditState

CFG = load_config()
MIN_PASS, AUTO = CFG.min_pass_score, CFG.auto_approve_threshold
SKY = normalize_mask_spec({"type": "sky"})


@pytest.fixture(scope="module")
def photos():
    return {n: np.ascontiguousarray(getattr(skdata, n)()[::2, ::2]) for n in ("astronaut", "rocket", "coffee")}


def edit(**values) -> EditState:
    s = EditState()
    for op, v in values.items():
        s = s.with_value(op, v)
    return s


def ask(judge, original, message, state, goals=None, *, previous_state=None, history=(), before_last=None,
        masks=None, before_last_state=None):
    """Judge ``state`` (rendered) for ``message``, as the agent would."""
    previous_state = previous_state or EditState()
    previous = render(original, previous_state)
    goals = goals if goals is not None else [SubGoal(op, v) for op, v in state.to_dict()["settings"].items()]
    return judge.assess(JudgeRequest(
        original=original, current=render(original, state), sub_goals=goals, state=state,
        previous_state=previous_state, previous=previous, masks=masks or {}, message=message,
        history=list(history), before_last=before_last, before_last_state=before_last_state))


def test_warm_for_warmer_passes_and_the_same_cool_edit_fails(judge, photos):
    im = photos["astronaut"]
    warm = ask(judge, im, "make it warmer", edit(temperature=25))
    cool = ask(judge, im, "make it warmer", edit(temperature=-25))
    assert warm.score >= AUTO
    assert cool.score < MIN_PASS
    assert "wrong way" in cool.assessment and "cooler instead of warmer" in cool.assessment
    assert "warmer" not in cool.assessment.replace("instead of warmer", "")


def test_no_visible_change_never_passes(judge, photos):
    im = photos["rocket"]
    noop = ask(judge, im, "brighter please", EditState(), goals=[SubGoal("exposure", 0)])
    assert noop.score < MIN_PASS
    assert "No visible change" in noop.assessment


@pytest.mark.parametrize("message, good, bad", [
    ("it looks kind of murky", {"contrast": 30}, {"contrast": -30}),
    ("it feels lifeless", {"saturation": 30}, {"saturation": -30}),
    ("not that soft", {"sharpen": 40}, {"clarity": -40}),
    ("the colours are too loud", {"saturation": -30}, {"saturation": 30}),
])
def test_complaints_and_negations_are_scored_as_their_fix(judge, photos, message, good, bad):
    im = photos["coffee"]
    assert ask(judge, im, message, edit(**good)).score >= MIN_PASS
    assert ask(judge, im, message, edit(**bad)).score < MIN_PASS


def test_slightly_and_much_are_told_apart(judge, photos):
    im = photos["astronaut"]
    slight_for_much = ask(judge, im, "much brighter", edit(exposure=3))
    much_for_much = ask(judge, im, "much brighter", edit(exposure=35))
    much_for_slight = ask(judge, im, "just a tiny bit brighter", edit(exposure=90))
    assert much_for_much.score >= AUTO
    assert slight_for_much.score < AUTO       # too little: the person decides, never auto-approved
    assert much_for_slight.score < AUTO       # far too much for "a tiny bit"


def test_damage_outside_the_sky_is_penalised(judge, photos):
    im = photos["rocket"]
    mask = np.clip(build_mask(SKY, im, im.shape[:2]), 0, 1)
    local = EditState().with_value("exposure", -30, mask=SKY)
    everywhere = edit(exposure=-30)
    masks = {__import__("json").dumps(SKY, sort_keys=True): mask}
    good = ask(judge, im, "darken the sky", local, [SubGoal("exposure", -30, target=SKY)], masks=masks)
    spilled = ask(judge, im, "darken the sky", everywhere, [SubGoal("exposure", -30)])
    assert good.score >= MIN_PASS
    assert spilled.score < good.score - 0.2
    assert "local_spill" in spilled.diagnoses
    assert "beyond the sky" in spilled.assessment


def test_a_named_object_edited_everywhere_is_not_a_pass(judge, photos):
    im = photos["coffee"]
    a = ask(judge, im, "brighten the cup", edit(exposure=25))
    assert a.score < MIN_PASS and "not just the cup" in a.assessment


def test_less_must_move_back_but_not_past_the_version_before(judge, photos):
    im = photos["astronaut"]
    base, warmer = EditState(), edit(temperature=40)
    before_last = render(im, base)
    kwargs = dict(previous_state=warmer, history=["make it warmer"], before_last=before_last)
    halved = ask(judge, im, "too much, halve it", edit(temperature=20), [SubGoal("temperature", -20)], **kwargs)
    past = ask(judge, im, "too much, halve it", edit(temperature=-40), [SubGoal("temperature", -80)], **kwargs)
    more = ask(judge, im, "too much, halve it", edit(temperature=60), [SubGoal("temperature", 20)], **kwargs)
    assert halved.score >= AUTO
    assert past.score < MIN_PASS and "further than the version before" in past.assessment
    assert more.score < MIN_PASS


def test_bit_more_follows_the_last_change(judge, photos):
    im = photos["rocket"]
    kwargs = dict(previous_state=edit(exposure=-20), history=["darker"])
    again = ask(judge, im, "bit more", edit(exposure=-30), [SubGoal("exposure", -10)], **kwargs)
    wrong = ask(judge, im, "bit more", edit(exposure=-10), [SubGoal("exposure", 10)], **kwargs)
    assert again.score >= MIN_PASS and wrong.score < MIN_PASS


def test_an_edit_for_a_greeting_or_an_impossible_request_fails(judge, photos):
    im = photos["astronaut"]
    for message in ("hi there", "make her smile", "what can you do?"):
        a = ask(judge, im, message, edit(exposure=20))
        assert a.score < MIN_PASS, message
        assert "not_asked" in a.diagnoses


def test_clipping_is_checked_per_colour_channel(judge, photos):
    im = photos["coffee"]
    hot = edit(temperature=100, saturation=80, exposure=40)
    a = ask(judge, im, "much warmer", hot)
    before, after = channel_clip_shares(im), channel_clip_shares(render(im, hot))
    assert after["red"] - before["red"] > 0.03
    assert "channel_clipped" in a.diagnoses or "highlights_clipped" in a.diagnoses
    assert "no new clipping" not in a.details.lower()


def test_words_agree_with_numbers(judge, photos):
    """A direction word in the reply never contradicts the measured change."""
    im = photos["astronaut"]
    a = ask(judge, im, "warmer and brighter", edit(temperature=-25, exposure=25))
    assert "cooler instead of warmer" in a.assessment and "Brighter" in a.assessment
    assert a.score < MIN_PASS
    # measurements live in the details, not in the reply
    assert "b*" in a.details and "b*" not in a.assessment and "L*" not in a.assessment


def test_an_unreadable_request_falls_back_to_the_plan_and_is_shown_before_it_is_kept(judge, photos):
    im = photos["astronaut"]
    a = ask(judge, im, "xyzzy", edit(temperature=25), [SubGoal("temperature", 25)])
    # the plan's own edit is judged (warmer, as planned), but a word nobody could read means the
    # plan may not be what was meant: the score stops under auto-approval and the reply says why
    assert a.reading["compliance"] is None and "unread_words" in a.diagnoses
    assert MIN_PASS < a.score < AUTO and "“xyzzy”" in a.assessment
    # a message read in full is kept as before
    b = ask(judge, im, "warmer please", edit(temperature=25), [SubGoal("temperature", 25)])
    assert b.score >= AUTO and "unread_words" not in b.diagnoses


@pytest.mark.parametrize("message", ["add a soft vignette", "add a soft grain", "add some grain"])
def test_an_effect_asked_for_is_not_read_as_a_complaint_or_a_second_quality(message):
    """"a soft vignette" is how the vignette is, not softer as well; "grain" asked for is the effect, not
    a complaint about noise (which would expect more fine detail)."""
    from agent.judging.reading import read_attempt

    reading = read_attempt(message)
    assert not any(m.prop == "detail" for e in reading.expects for alt in e.alternatives for m in alt), reading
    assert read_attempt("it's too grainy").expects        # the complaint is still read


def test_each_further_doubt_about_the_reading_lowers_the_score(judge, photos):
    """Words not read, then also a part of the message the plan left out: the more doubt about what was
    meant, the lower the edit ranks (never under the pass mark on doubt alone)."""
    im = photos["astronaut"]
    goals = [SubGoal("temperature", 25)]
    one = ask(judge, im, "warmer xyzzy", edit(temperature=25), goals)
    two = judge.assess(JudgeRequest(
        original=im, current=render(im, edit(temperature=25)), sub_goals=goals, state=edit(temperature=25),
        previous_state=EditState(), previous=im, masks={}, message="warmer xyzzy, plugh frobozz",
        skipped=["plugh frobozz"]))
    assert "unread_words" in one.diagnoses and "part_skipped" not in one.diagnoses
    assert {"unread_words", "part_skipped"} <= set(two.diagnoses)
    assert MIN_PASS < two.score < one.score < AUTO


def test_a_place_asked_before_a_kept_one_is_the_place_of_the_change():
    """"lift the shadows but keep the snow exactly as it is": the shadows are where the change goes; only
    what follows "keep" is kept ("but the backdrop has to stay white" still keeps the backdrop)."""
    from agent.judging.reading import read_request

    assert read_request("lift the shadows but keep the snow exactly as it is").target == "shadows"
    assert read_request("warmer but the backdrop has to stay white").target.startswith("everything but")


@pytest.mark.parametrize("message, asked", [
    ("give it more clarity, just keep the lake glassy like it is", ["more clarity"]),
    ("warmer but keep the sky blue", ["warmer"]),
])
def test_what_is_to_stay_asks_for_no_quality(message, asked):
    """"keep the lake glassy": glassy is how the lake is to stay, not a change asked for (nor "bluer")."""
    from agent.judging.reading import read_request

    assert [e.source for e in read_request(message).expects] == asked


@pytest.mark.parametrize("message, kind", [
    ("darken just the bottom, the snow in front is glaring", "edit"),   # the snow is in the photo
    ("brighten the stars", "edit"),
    ("add some snow", "unsupported"),                                   # snow wished in
    ("make it snow", "unsupported"),
])
def test_a_thing_said_with_the_is_in_the_photo_not_wished_in(message, kind):
    from agent.judging.reading import read_request

    assert read_request(message).kind == kind


def test_a_bare_follow_up_is_measured_against_the_last_change_as_it_landed(judge, photos):
    """The old words named the cup, but the last change went on the whole photo: "bit more" of it is
    that change again on the whole photo, not a spill beyond a cup; the wrong way still fails. The judge
    doubted that change when it was made (the whole photo for a cup), so more of it is not kept unseen."""
    im = photos["coffee"]
    kwargs = dict(previous_state=edit(exposure=-20), history=["the cup has a nasty glare, can you tame it"],
                  before_last=render(im, EditState()), before_last_state=EditState())
    again = ask(judge, im, "bit more", edit(exposure=-30), [SubGoal("exposure", -10)], **kwargs)
    wrong = ask(judge, im, "bit more", edit(exposure=-10), [SubGoal("exposure", 10)], **kwargs)
    assert MIN_PASS <= again.score < AUTO, again.assessment
    assert "not just the cup" not in again.assessment
    assert "did not look like what was asked either" in again.assessment
    assert wrong.score < MIN_PASS


def test_more_of_a_change_the_judge_believed_is_kept(judge, photos):
    """The same "bit more" after a change whose words the pixels bear out ("it's a bit bright, darken it")
    auto-approves: only a repeat of a doubted change waits for the person."""
    im = photos["coffee"]
    kwargs = dict(previous_state=edit(exposure=-20), history=["it's a bit bright, darken it"],
                  before_last=render(im, EditState()), before_last_state=EditState())
    again = ask(judge, im, "bit more", edit(exposure=-30), [SubGoal("exposure", -10)], **kwargs)
    assert again.score >= AUTO, again.assessment


def test_more_on_a_place_the_judge_cannot_find_after_a_whole_photo_change_waits(judge, photos):
    """"brighten the wall behind it" went on the whole photo (no wall was found); "a little more on the
    wall" repeats that: it passes as a repeat but waits for the person, and says why."""
    im = photos["coffee"]
    kwargs = dict(previous_state=edit(exposure=12), history=["could you brighten the wall behind it?"],
                  before_last=render(im, EditState()), before_last_state=EditState())
    more = ask(judge, im, "a little more on the wall", edit(exposure=18), [SubGoal("exposure", 6)], **kwargs)
    assert MIN_PASS <= more.score < AUTO, more.assessment
    assert "repeats_doubt" in more.diagnoses


def test_a_bare_follow_up_stays_where_the_last_change_went(judge, photos):
    """The last change brightened the sky; words the judge cannot place ("them") do not move it: more
    there passes, the same step spread over the whole photo does not."""
    im = photos["rocket"]
    on_sky = EditState().with_value("exposure", 20, mask=SKY)
    sky = build_mask(SKY, im, im.shape[:2])
    kwargs = dict(previous_state=on_sky, history=["lift them a little"], before_last=render(im, EditState()),
                  before_last_state=EditState(), masks={json.dumps(SKY, sort_keys=True): sky})
    there = ask(judge, im, "a hair more on them", on_sky.with_value("exposure", 30, mask=SKY),
                [SubGoal("exposure", 10, target=SKY)], **kwargs)
    everywhere = ask(judge, im, "a hair more on them", on_sky.with_value("exposure", 10),
                     [SubGoal("exposure", 10)], **kwargs)
    assert there.score >= MIN_PASS, there.assessment
    assert everywhere.score < there.score
    assert "local_spill" in everywhere.diagnoses


def test_a_quality_said_again_with_still_is_more_of_the_last_change():
    from agent.judging.reading import read_request

    r = read_request("warmer still", ["make the sky warmer"])
    assert (r.kind, r.follow, r.target) == ("follow_up", "more", "sky")
    assert read_request("warmer", ["make the sky warmer"]).kind == "edit"


@pytest.mark.parametrize("message, target", [
    ("go a bit darker then, but keep the sky exactly how it is", "everything but the sky"),
    ("brighten everything except her face", "everything but the face"),
    ("brighten her face but leave the sky", "face"),              # another place kept: this one is not
    ("now brighten the cat but not the keyboard", "subject"),      # "but not the keyboard" names its own thing
    ("lift the two puppies a little", "puppies"),                  # a count is not the thing
    ("its pretty murky, brighten it", None),                       # a degree word is not a thing
    ("the background on the right is busy, darken it", "background on the right"),   # where both are
    ("darken the top and the sky", "top"),                         # two places joined are not one
])
def test_the_place_of_a_request_and_the_places_kept(message, target):
    from agent.judging.reading import read_request

    assert read_request(message).target == target


def test_a_too_that_ends_a_complaint_is_as_well_not_a_complaint_about_the_next_word():
    from agent.judging.reading import read_request

    r = read_request("its pretty murky too, brighten?")
    assert ("L", 1) in {(m.prop, m.sign) for e in r.expects for alt in e.alternatives for m in alt}
    assert ("L", -1) not in {(m.prop, m.sign) for e in r.expects for alt in e.alternatives for m in alt}


def test_insisting_asks_for_a_strong_step_and_the_corners_are_a_place():
    from agent.judging.reading import read_attempt, read_request

    sizes = {m.size for e in read_attempt("more contrast. yes more, i insist").expects
             for alt in e.alternatives for m in alt}
    assert sizes == {2}
    assert read_request("darken the corners a little").target == "edges"


def test_a_quality_joined_to_a_complaint_shares_its_frame():
    # "looks kinda muddy and flat": flat is complained of (more contrast wanted), not asked for
    from agent.judging.reading import read_request

    reading = read_request("hmm now the whole thing looks kinda muddy and flat to me")
    assert reading.expects and all(e.complaint for e in reading.expects)
    assert all(m.sign > 0 for e in reading.expects for alt in e.alternatives for m in alt if m.prop == "contrast")
    # a wish joined to a wish stays a wish
    flatter = read_request("make it brighter and flatter")
    assert [e.complaint for e in flatter.expects] == [False, False]


def test_a_fault_found_with_a_colour_is_a_complaint_about_it():
    from agent.judging.reading import read_request

    reading = read_request("the lights look kinda sickly green. fix?")
    assert [e.source for e in reading.expects] == ["green"]
    assert reading.expects[0].complaint
    assert all(m.sign > 0 for alt in reading.expects[0].alternatives for m in alt)   # less green: a* up
    assert not read_request("make it greener").expects[0].complaint


def test_a_persons_place_left_out_is_kept_by_the_judge_too():
    # the planner keeps her face; the judge must not measure "warmer" on it ("less than asked on the face")
    from agent.judging.reading import read_request

    for text in ("make it a lot warmer, but not her face", "warmer but not her face"):
        assert read_request(text).target == "everything but the face", text
    assert read_request("brighter but not too much").target is None


@pytest.mark.parametrize("message, quality, place", [
    ("warmer but don't make her face orange", "warmer", "face"),          # a caution about a place keeps it
    ("brighten it without blowing out the sky", "brighter", "sky"),
    ("more contrast, without darkening her face", "more contrast", "face"),
    ("leave the sky alone. brighten it", "brighter", "sky"),              # kept first; the sentence ends there
    ("brighten it, the sky is bright enough already", "brighter", "sky"),  # enough as it is: kept
])
def test_the_judge_reads_a_place_kept_as_the_planner_does(message, quality, place):
    """The judge measures the change everywhere but the place kept, and expects no quality the caution names."""
    from agent.judging.reading import read_request

    reading = read_request(message)
    assert reading.kind == "edit"
    assert reading.describe() == f"{quality}, on everything but the {place}"
    assert reading.target_mask == {"type": place, "invert": True}


def test_the_judge_reads_a_pull_back_said_with_why_as_the_planner_does():
    from agent.judging.reading import read_request

    reading = read_request("argh thats gone foggy, dial it back", history=["open up the shadows a lot"])
    assert reading.kind == "follow_up" and reading.follow == "less", reading


@pytest.mark.parametrize("message,want", [
    # a quality between "the" and its noun picks out a place; how it should stay is no wish either
    ("could u sharpen up the fur a bit? the blurry stuff on the right should stay soft and blurry though",
     ("detail", 1)),
    # what happens when it is sharpened is why the sky is kept, not a second request
    ("sharpen up the buildings? keep the sky smooth tho, it goes all noisy when it gets sharpened", ("detail", 1)),
    # "so it looks golden" is what it should become
    ("warm up the stonework so it looks golden, but leave the sky blue", ("b", 1)),
    # "almost blurry" is what is wrong
    ("the whole thing looks a little soft to me, almost blurry", ("detail", 1)),
    # "looks like a sunset" says how it looks now
    ("wayyy less orange than that, it looks like a sunset in a cup", ("b", -1)),
])
def test_the_judge_reads_the_quality_asked_for_not_one_described(message, want):
    from agent.judging.reading import read_request

    reading = read_request(message)
    moves = {(m.prop, m.sign) for e in reading.expects for alt in e.alternatives for m in alt}
    assert want in moves and (want[0], -want[1]) not in moves, reading.describe()


@pytest.mark.parametrize("message", ["now could you sharpen it up? not my face tho", "more contrast. not the sky"])
def test_a_clause_of_not_and_a_place_keeps_that_place(message):
    from agent.judging.reading import read_request

    assert read_request(message).target.startswith("everything but"), read_request(message).describe()


@pytest.mark.parametrize("message", ["now brighten the picture overall but keep the flag as it is, its red is perfect",
                                     "warmer, but not the flag. it's red"])
def test_the_sentence_after_a_kept_thing_describes_it(message):
    """"its red is perfect" says what the kept flag is like: no request for less red (greener)."""
    from agent.judging.reading import read_request

    moves = {m.prop for e in read_request(message).expects for alt in e.alternatives for m in alt}
    assert "a" not in moves and moves, read_request(message).describe()


@pytest.mark.parametrize("message, prop", [
    ("ok boost the saturation a bit", "chroma"), ("bump the contrast up a bit", "contrast"),
])
def test_a_quality_named_as_a_noun_with_how_much_is_the_wish(message, prop):
    """"boost the saturation a bit": "a bit" after the quality is how much, not a thing it picks out (the
    judge read the request as nothing asked, and scored a right edit "not asked")."""
    from agent.judging.reading import read_request

    reading = read_request(message)
    assert reading.kind == "edit" and reading.target is None
    assert [m.prop for alt in reading.expects[0].alternatives for m in alt] == [prop]


def test_a_pull_back_said_with_a_complaint_about_a_thing_it_cannot_find_follows_the_last_change():
    """"the wood looks all washed out. pull it back some" after brightening: less of the brightening, as the
    planner reads it, not more colour on "the wood"."""
    from agent.judging.reading import read_request

    reading = read_request("its too bright, the wood looks all washed out. pull it back some", ["brighten it a bit"])
    assert reading.kind == "follow_up" and reading.follow == "less" and reading.target is None


@pytest.mark.parametrize("message, way", [
    ("hang on the bone's gone all yellow now, it should be white", "cooler"),
    ("its all yellow now", "cooler"),
    ("the snow looks all blue, its meant to be white", "warmer"),
    ("make it all blue", "cooler"),          # a wish, as before
])
def test_a_word_of_degree_after_how_it_looks_keeps_a_colour_a_complaint(message, way):
    """"gone all yellow": the "all" between the frame and the colour used to make it a wish for yellow."""
    from agent.judging.reading import read_request
    assert read_request(message, []).describe().startswith(way)


def test_stuff_that_fills_the_frame_edited_everywhere_is_no_spill(judge):
    """"brighten the stones" on gravel: the photo is one surface edge to edge (pipeline.measure.one_surface), so
    the change on the whole photo is where the words point; "brighten the cup" on the coffee is still a spill
    (test above)."""
    gravel = np.ascontiguousarray(np.stack([skdata.gravel()[::2, ::2]] * 3, axis=-1))
    a = ask(judge, gravel, "brighten the stones", edit(exposure=25))
    assert a.score >= MIN_PASS and "not just the stones" not in a.assessment, a.assessment
