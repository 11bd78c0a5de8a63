"""Going back and following up, said the way people write when they have never read our word lists: a pull-back
after a remark no table knows, an exclamation before a request, a quality said of the photo and asked the other
way, a "why" that asks for a reason, going back in words that name no change, a thing said where it is.

Real parts only: the engine profile, the embedded planner and judge, a real SQLite store and real skimage
photos, measured by where the head lands and in the saved state.

``tests/data/going_back_phrasings.tsv`` was written by a helper who never read the vocabulary (240 messages:
take back the last change, go back to the original, or words that look like going back and are not). It is a
tuning probe, not a held-out set: the mechanisms below were built from its misses, so the floors here guard
against losing them (measured 136/140, 36/40 and 57/60 when it was added), they do not measure generality.
``tests/data/talk_phrasings.tsv`` is the same kind of probe for questions and small talk that must not edit and
for requests said as questions or wishes (260 messages; 117/120, 71/80 and 59/60 when it was added), and
``tests/data/follow_up_phrasings.tsv`` for more or less of the last change said otherwise (200 messages; 95/100
and 85/100 when it was added, from 79 and 74).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.planning.base import PlanRequest
from agent.planning.embedded import EmbeddedPlanner
from conftest import assert_goes_back, small_photo
from test_dialogue_other_words import router, studio  # noqa: F401  (the same embedded studio and router fixtures)
from pipeline.state import EditState

PHRASINGS = Path(__file__).parent / "data" / "going_back_phrasings.tsv"
TALK = Path(__file__).parent / "data" / "talk_phrasings.tsv"
FOLLOW = Path(__file__).parent / "data" / "follow_up_phrasings.tsv"



def _session(studio, photo, *messages):
    sid = studio.start_session(photo).id
    heads = [studio.head(sid).id]
    for m in messages:
        studio.send_message(sid, m)
        heads.append(studio.head(sid).id)
    return sid, heads


def test_going_back_said_many_ways_lands_where_it_was_asked(studio):
    photo = small_photo("astronaut", long_side=128)
    tally: dict[str, list[bool]] = {"undo": [], "original": [], "not_undo": []}
    for line in PHRASINGS.read_text(encoding="utf-8").splitlines():
        label, said = line.split("\t", 1)
        sid, (original, first, second) = _session(studio, photo, "make it brighter", "warmer")
        studio.send_message(sid, said)
        head = studio.head(sid).id
        tally[label].append({"undo": head == first, "original": head == original,
                             "not_undo": head not in (first, original)}[label])
    shares = {k: sum(v) / len(v) for k, v in tally.items()}
    assert len(tally["undo"]) == 140 and len(tally["original"]) == 40 and len(tally["not_undo"]) == 60
    assert shares["undo"] >= 0.95 and shares["original"] >= 0.85 and shares["not_undo"] >= 0.93, shares


def test_a_pull_back_after_a_remark_no_table_knows_is_still_a_pull_back(studio):
    """"bit heavy-handed now. Ease off.": the first sentence says how it looks, the second what to do."""
    sid, heads = _session(studio, small_photo("camera"), "darken the sky a tad")
    darkened = studio.head(sid).state
    r = studio.send_message(sid, "bit heavy-handed now. Ease off.")
    assert r.kind == "edit" and r.asset_id, r.reply
    sky = lambda state: [l["settings"].get("exposure", 0) for l in state.get("layers") or [] if "sky" in repr(l["mask"])]
    assert sky(darkened) and sky(studio.head(sid).state)[0] > sky(darkened)[0], studio.head(sid).state


def test_a_doubt_said_without_its_verb_takes_the_last_change_back_part_way(studio):
    """"Hmm, bit heavy-handed now.": how it looks since the last change, with a doubt and no "it's"."""
    sid, heads = _session(studio, small_photo("camera"), "much darker")
    darker = studio.head(sid).state["settings"]["exposure"]
    r = studio.send_message(sid, "Hmm, bit heavy-handed now.")
    assert r.asset_id and studio.head(sid).id != heads[-1], r.reply
    assert darker < studio.head(sid).state["settings"]["exposure"] < 0, studio.head(sid).state["settings"]


def test_a_remark_then_praise_changes_nothing(studio):
    sid, heads = _session(studio, small_photo("camera"))
    r = studio.send_message(sid, "this is a scan of my grandpas photo from uni, pretty cool right")
    assert r.kind == "chat" and studio.head(sid).id == heads[-1], r.reply


def test_a_why_asked_twice_wants_a_reason_not_an_edit(studio):
    sid, heads = _session(studio, small_photo("camera"))
    r = studio.send_message(sid, "why does this look so soft? motion blur or missed focus?")
    assert r.kind == "question" and studio.head(sid).id == heads[-1], r.reply
    r = studio.send_message(sid, "why is it so dark?")      # one "why" with a degree still says it is too dark
    assert r.kind == "edit" and studio.head(sid).state["settings"]["exposure"] > 0, r.reply


def test_an_exclamation_before_a_request_is_no_question(router):
    assert router.route("wow what a thrilling launch photo. make it darker and bluer").kind == "modification"
    assert router.route("what a lovely photo").kind == "chat"


def test_a_quality_said_of_the_photo_and_asked_the_other_way_is_the_request():
    plan = EmbeddedPlanner().plan(PlanRequest(
        "The whole frame reads a little warm to me. Cool it down slightly, please.", EditState()))
    assert [(g.op, g.value < 0) for g in plan.sub_goals] == [("temperature", True)], plan.reply
    both = EmbeddedPlanner().plan(PlanRequest("make it warmer and cooler", EditState()))
    assert not both.sub_goals and "opposite directions" in both.reply      # asked both ways: still held


def test_more_definition_is_local_contrast():
    plan = EmbeddedPlanner().plan(PlanRequest("more definition please", EditState()))
    assert [g.op for g in plan.sub_goals] == ["clarity"], plan.reply


def test_scratch_the_named_one_takes_out_that_change_not_everything(studio):
    photo = small_photo("astronaut")
    assert_goes_back(studio, photo, ["make it more saturated"], ["brighten her face a touch"],
                     "meh, scratch the face one")


@pytest.mark.parametrize("said", ["no no I don't like. return like before", "noooo go back",
                                  "Kindly reverse the last modification.", "bring it back to how it was before"])
def test_going_back_in_words_that_name_no_change_is_the_last_change(studio, said):
    assert_goes_back(studio, small_photo("chelsea"), ["make the photo brighter"], ["more contrast"], said)


@pytest.mark.parametrize("said", ["don't undo anything, it's great", "no need to go back, this is good",
                                  "if I don't like it can I undo later?", "send it back to me at full resolution"])
def test_going_back_denied_supposed_or_of_a_file_changes_nothing(studio, said):
    sid, heads = _session(studio, small_photo("chelsea"), "make the photo brighter", "more contrast")
    studio.send_message(sid, said)
    assert studio.head(sid).id == heads[-1]


def test_back_to_where_only_one_change_was_made(studio):
    assert_goes_back(studio, small_photo("coffee"), ["Spoon's lost in shadow. Lift it about half a stop, nothing else."],
                     ["Add a vignette, fairly strong.", "a hair more saturation"],
                     "Roll back to where only the spoon was fixed.")


def test_what_was_still_as_it_was_is_before_it_changed(router):
    back = router.going_back.read("ok take me back to where the milky way was done and the colours were still normal")
    assert back[0].kind == "version" and "milky" in back[0].named and "colours" in back[0].before


def test_a_thing_said_where_it_is_names_no_change_there(studio):
    """"get rid of all the pens on the left" after brightening the left: the pens were never changed."""
    sid, heads = _session(studio, small_photo("astronaut"), "brighten the left")
    r = studio.send_message(sid, "oh and could you get rid of all the pens on the left? they're messy")
    assert r.status != "rolled_back", r.reply
    assert_goes_back(studio, small_photo("astronaut"), [], ["brighten the left"], "undo the left one")


def test_questions_and_small_talk_said_many_ways_leave_the_photo_and_requests_do_not(studio):
    photo = small_photo("astronaut", long_side=128)
    tally: dict[str, list[bool]] = {"ask": [], "talk": [], "edit": []}
    for line in TALK.read_text(encoding="utf-8").splitlines():
        label, said = line.split("\t", 1)
        sid, (_, edited) = _session(studio, photo, "make it brighter")
        r = studio.send_message(sid, said)
        changed = studio.head(sid).id != edited
        # a request about a thing this photo does not have is asked about, which is right too
        tally[label].append(changed or r.kind == "clarify" if label == "edit" else not changed)
    shares = {k: sum(v) / len(v) for k, v in tally.items()}
    assert [len(v) for v in tally.values()] == [120, 80, 60]
    assert shares["ask"] >= 0.95 and shares["talk"] >= 0.85 and shares["edit"] >= 0.95, shares


@pytest.mark.parametrize("said", ["Tell me, is the white balance off?", "my friend says its too dark, do u agree?",
                                  "Can you fix red eye? just asking for later",
                                  "do people usually make food photos warmer?", "i really like the contrast you went with",
                                  "so much better, the faces aren't grey anymore",
                                  "i want to know if the background is distracting"])
def test_asked_about_or_liked_is_not_asked_for(router, said):
    assert router.route(said).kind in ("evaluation", "exploration", "chat"), said


@pytest.mark.parametrize("said", ["is it possible to brighten the sky?", "do you think you could cool it down a little?",
                                  "do u mind making it a tad warmer", "tell me, brighten it",
                                  "have you ever seen such a dark photo? brighten it", "the sky isn't blue anymore"])
def test_asked_for_politely_is_asked_for(router, said):
    assert router.route(said).kind == "modification", said


def test_a_yes_with_how_much_does_what_was_offered(studio):
    sid, heads = _session(studio, small_photo("moon"), "more punch")
    studio.send_message(sid, "would it look better warmer?")
    r = studio.send_message(sid, "yeah try a little then")
    assert r.kind == "edit" and studio.head(sid).state["settings"]["temperature"] > 0, r.reply


def test_the_warmth_brought_back_around_its_object(studio):
    sid, heads = _session(studio, small_photo("hubble_deep_field"), "cooler overall")
    cooled = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, "nope that kills the orange galaxies, bring a bit of the warmth back")
    assert r.kind == "edit" and cooled < studio.head(sid).state["settings"]["temperature"] < 0, r.reply


def test_more_or_less_of_the_last_change_said_many_ways(studio):
    """After "make it warmer": more of it goes warmer still; less of it goes back part of the way, not all."""
    photo = small_photo("astronaut", long_side=128)
    tally: dict[str, list[bool]] = {"more": [], "less": []}
    for line in FOLLOW.read_text(encoding="utf-8").splitlines():
        label, said = line.split("\t", 1)
        sid, _ = _session(studio, photo, "make it warmer")
        warmed = studio.head(sid).state["settings"]["temperature"]
        studio.send_message(sid, said)
        now = studio.head(sid).state["settings"].get("temperature", 0)
        tally[label].append(now > warmed if label == "more" else 0 < now < warmed)
    shares = {k: sum(v) / len(v) for k, v in tally.items()}
    assert [len(v) for v in tally.values()] == [100, 100]
    assert shares["more"] >= 0.93 and shares["less"] >= 0.83, shares


@pytest.mark.parametrize("said, way", [("pump it up", 1), ("dial it up a notch", 1), ("up it a bit", 1),
                                       ("that's a start, keep going", 1), ("reel it in", -1),
                                       ("went a bit overboard there, reel it back", -1), ("don't undo, just less", -1)])
def test_a_verb_with_its_particle_is_more_or_less_of_the_last_change(studio, said, way):
    sid, _ = _session(studio, small_photo("chelsea"), "make it warmer")
    warmed = studio.head(sid).state["settings"]["temperature"]
    r = studio.send_message(sid, said)
    now = studio.head(sid).state["settings"].get("temperature", 0)
    assert (now > warmed if way > 0 else 0 < now < warmed), (said, r.reply)


@pytest.mark.parametrize("said, op, way", [
    ("exposure down", "exposure", -1), ("saturation -15", "saturation", -1), ("warmth -10", "temperature", -1),
    ("whites down a touch", "whites", -1), ("blacks down", "blacks", -1), ("clarity down", "clarity", -1),
    ("temperature down", "temperature", -1), ("highlights -30", "highlights", -1), ("shadows up", "shadows", 1),
    ("exposure up", "exposure", 1), ("contrast +20", "contrast", 1), ("wb down a touch", "temperature", -1)])
def test_a_setting_named_with_the_way_it_goes_goes_that_way(said, op, way):
    """"exposure down" brightened and "warmth -10" said it was warming: a setting's name alone reads as one
    way, and the way said after it was not read. The reply says the way the value goes."""
    plan = EmbeddedPlanner().plan(PlanRequest(said, EditState()))
    assert [(g.op, g.value > 0) for g in plan.sub_goals] == [(op, way > 0)], plan.reply
    assert ("down" if way < 0 else "up") in plan.reply.split("(")[0], plan.reply


@pytest.mark.parametrize("said", ["cool the temperature slightly", "Cool the WB slightly.", "reduce the temperature"])
def test_a_setting_named_as_what_a_quality_acts_on_is_no_second_request(said):
    """"cool the temperature slightly" held temperature as a conflict ("temperature" read as warmer), and "cool
    the wb" asked where "the wb" was."""
    plan = EmbeddedPlanner().plan(PlanRequest(said, EditState()))
    assert [(g.op, g.value < 0) for g in plan.sub_goals] == [("temperature", True)], plan.reply


def test_a_place_said_as_where_a_warm_tint_is_keeps_its_place():
    """"the warmth up top": "up" names where, not the way the warmth goes."""
    plan = EmbeddedPlanner().plan(PlanRequest("the warmth up top is too much", EditState()))
    assert [(g.op, g.value < 0, (g.target or {}).get("type")) for g in plan.sub_goals] == \
        [("temperature", True, "gradient")], plan.reply


@pytest.mark.parametrize("said", ["exposure down", "saturation -15", "warmth -10"])
def test_the_judge_reads_a_setting_turned_down_as_down(said):
    from agent.judging.reading import read_attempt

    reading = read_attempt(said, [], "")
    assert reading.expects and all(m.sign < 0 for e in reading.expects for alt in e.alternatives for m in alt), \
        reading.describe()


@pytest.mark.parametrize("said", ["ok do the same to that black corner top left, its ugly",
                                  "now same thing on the dark blotchy bit at the bottom",
                                  "apply the same to the background"])
def test_the_same_on_a_place_described_in_words_of_its_own(studio, said):
    """A place said with words that describe it ("that black corner", "the dark blotchy bit") was asked about
    ("What should I do with the darkest thing in the top left?"); "apply the same" was not understood."""
    sid, (_, brightened) = _session(studio, small_photo("coffee"), "brighten the left side")
    r = studio.send_message(sid, said)
    assert r.reply.startswith("Doing the same (\u201cbrighter\u201d) on"), r.reply
    assert [(g["op"], g["value"] > 0) for g in r.sub_goals] == [("exposure", True)]
    assert r.sub_goals[0]["target"] is not None and r.status in ("auto_approved", "awaiting_review"), r.status


def test_now_before_a_request_describes_no_place():
    """Only a "the same" has a place described after it: "now darken the top" is a request of its own."""
    plan = EmbeddedPlanner().plan(PlanRequest("now darken the top", EditState()))
    assert [(g.op, g.value < 0) for g in plan.sub_goals] == [("exposure", True)], plan.reply


@pytest.mark.parametrize("said", ["The contrast is pushing the bright areas to white. Reduce it.",
                                  "Banding is creeping in up top. Back off a bit."])
def test_a_pull_back_after_saying_why_takes_the_last_change_back(studio, said):
    """The sentences before say how the photo is now; read as a request, the first added contrast to the
    highlights (more of what the last sentence takes back) and the second was not understood."""
    sid, _ = _session(studio, small_photo("retina"), "more contrast")
    studio.send_message(sid, "/approve")
    raised = studio.head(sid).state["settings"]["contrast"]
    r = studio.send_message(sid, said)
    assert r.reply.startswith("Taking back") and [g["op"] for g in r.sub_goals] == ["contrast"], r.reply
    pending = r.sub_goals[0]["value"]
    assert 0 <= pending < raised, (pending, raised)


def test_a_pull_back_is_never_said_as_more_than_all_of_the_change():
    from agent.conversation.dialogue import Change, TurnMoves
    from agent.planning.followups import pull_back_moves

    base = TurnMoves(1, "more contrast", "a1", "a0", [Change("contrast", 0, 40)], ["more contrast"], ["more_contrast"])
    state = EditState.from_dict({"settings": {"contrast": 40}})
    (move,) = pull_back_moves(base, state, 1.44, 0)
    assert move.value == 0 and "taking back all of" in move.phrase and "144%" not in move.phrase, move.phrase
