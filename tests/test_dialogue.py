"""Follow-ups against the dialogue state, end to end: the real embedded planner and judge,
a real SQLite store and real skimage photos, measured in the rendered pixels."""

from __future__ import annotations

import numpy as np
import pytest

from agent.conversation.dialogue import dialogue_state
from agent.judging.embedded import EmbeddedJudge
from agent.planning.embedded import EmbeddedPlanner
from conftest import small_photo
from pipeline.measure import image_stats


@pytest.fixture
def studio(make_studio):
    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")


def _b(studio, sid) -> float:
    return image_stats(studio.render(sid, long_side=256))["b_mean"]


def _settings(studio, sid) -> dict:
    return studio.head(sid).state["settings"]


def test_bit_more_repeats_the_last_change_scaled(studio, photo):
    sid = studio.start_session(photo).id
    b0 = _b(studio, sid)
    studio.send_message(sid, "warmer")
    t1 = _settings(studio, sid)["temperature"]
    b1 = _b(studio, sid)
    r = studio.send_message(sid, "bit more")
    t2 = _settings(studio, sid)["temperature"]
    b2 = _b(studio, sid)
    assert r.status == "auto_approved" and r.asset_id
    assert b1 > b0 + 1 and b2 > b1 + 0.5          # warmer again, visibly
    assert t2 - t1 == pytest.approx(t1 * 0.5, abs=1)   # "bit" = half the last step
    r = studio.send_message(sid, "again")      # the last change again (+12), stopped at the sweet spot
    assert t2 < _settings(studio, sid)["temperature"] <= 45 and "I stopped" in r.reply


def test_too_much_lands_between_the_two_versions_and_never_past(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    b1 = _b(studio, sid)
    before = _settings(studio, sid)["temperature"]
    studio.send_message(sid, "much warmer")
    b2 = _b(studio, sid)
    after = _settings(studio, sid)["temperature"]
    studio.send_message(sid, "too much")
    b3 = _b(studio, sid)
    now = _settings(studio, sid)["temperature"]
    assert before < now < after and b1 < b3 < b2
    # "way too much, halve it": an explicit fraction, and again never past the earlier version
    studio.send_message(sid, "way too much, halve it")
    later = _settings(studio, sid)["temperature"]
    assert before <= later < now


def test_same_for_the_sky_moves_the_last_change_onto_the_sky(studio):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "warmer")
    r = studio.send_message(sid, "same for the sky")
    layers = studio.head(sid).state["layers"]
    assert r.asset_id and any(l["mask"]["type"] == "sky" and l["settings"].get("temperature", 0) > 0 for l in layers)


def test_not_that_soft_reduces_the_soft_look_it_just_applied(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "softer")
    soft = dict(_settings(studio, sid))
    assert soft["clarity"] < 0
    studio.send_message(sid, "not that soft")
    now = _settings(studio, sid)
    assert soft["clarity"] < now.get("clarity", 0) <= 0       # less soft, not sharpened past neutral
    assert now.get("sharpen", 0) <= 0


def test_a_complaint_fixes_the_problem_instead_of_adding_more_of_it(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "looks murky")
    s = _settings(studio, sid)
    assert s.get("contrast", 0) > 0 and s.get("dehaze", 0) > 0    # clearer, not hazier


def test_more_with_nothing_to_refer_to_asks_and_makes_no_version(studio, photo):
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "a bit more")
    assert r.kind == "clarify" and r.quick_replies and r.asset_id is None
    assert studio.head(info.id).id == info.head_asset_id


def test_a_thing_no_mask_knows_is_asked_about_and_goes_on_the_best_guess_only_when_told(studio):
    info = studio.start_session(small_photo("coffee"))
    original = studio.render(info.id).tobytes()
    # "the cup" is a thing of its own, not a word for a part of the frame: asked about, nothing changes
    asked = studio.send_message(info.id, "brighten the cup")
    assert asked.kind == "clarify" and asked.asset_id is None and "the cup" in asked.reply
    assert "paint over it" in asked.reply and "Go ahead and guess" in asked.quick_replies
    assert studio.head(info.id).id == info.head_asset_id and studio.render(info.id).tobytes() == original
    # told to go ahead, the request goes on the guess, said in the reply, and "Undo" is offered
    done = studio.send_message(info.id, "Go ahead and guess")
    assert done.asset_id and "the cup" in done.reply and "best guess" in done.reply
    state = studio.head(info.id).state
    assert not state["settings"].get("exposure")                 # never a silent global edit
    assert [l["mask"]["type"] for l in state["layers"]] == ["subject"] and state["layers"][0]["settings"]["exposure"] > 0
    studio.send_message(info.id, "undo")
    assert studio.render(info.id).tobytes() == original
    # said with the request, "i insist" goes ahead too
    insisted = studio.send_message(info.id, "brighten that little saucer, i insist")
    assert insisted.asset_id and "that little saucer" in insisted.reply and "best guess" in insisted.reply


@pytest.mark.parametrize("message,quality", [("bring the saucer up a bit", "brighter"),
                                              ("tone down the saucer", "darker")])
def test_a_raising_or_toning_verb_on_a_thing_no_mask_knows_asks_about_it(studio, message, quality):
    # "bring the saucer up" names no quality: lighter, on a thing to find; it is asked about as "brighten the
    # saucer" is, never a silent edit of the whole photo
    info = studio.start_session(small_photo("coffee"))
    original = studio.render(info.id).tobytes()
    asked = studio.send_message(info.id, message)
    assert asked.kind == "clarify" and asked.asset_id is None and "the saucer" in asked.reply
    assert f"make it {quality} overall" in asked.reply
    assert studio.head(info.id).id == info.head_asset_id and studio.render(info.id).tobytes() == original


def test_a_general_word_for_a_part_of_the_frame_goes_on_that_part(studio):
    info = studio.start_session(small_photo("coffee"))
    r = studio.send_message(info.id, "darken the table around the cup")
    layers = studio.head(info.id).state["layers"]
    assert r.asset_id and [l["mask"]["type"] for l in layers] == ["subject"] and layers[0]["mask"].get("invert")


def test_a_thing_dropped_from_the_talk_is_neither_asked_about_nor_undone(studio):
    info = studio.start_session(small_photo("coffee"))
    asked = studio.send_message(info.id, "warmer on the saucer")
    assert asked.kind == "clarify" and asked.asset_id is None
    first = studio.send_message(info.id, "warmer please")
    warmth = studio.head(info.id).state["settings"]["temperature"]
    assert first.asset_id and warmth > 0
    r = studio.send_message(info.id, "ok never mind the saucer. a bit more")
    assert r.asset_id and r.asset_id != first.asset_id and "saucer" not in r.reply
    assert studio.head(info.id).state["settings"]["temperature"] > warmth     # more of the warmth, not an undo


def test_a_place_the_photo_lacks_is_said_and_asked_about_with_no_version(studio):
    info = studio.start_session(small_photo("chelsea"))          # a cat: no human face to find
    r = studio.send_message(info.id, "brighten the face")
    assert r.kind == "clarify" and "can't find" in r.reply and r.quick_replies and r.asset_id is None
    assert studio.head(info.id).id == info.head_asset_id
    assert r.quick_replies[0] == "Brighter on the centre"           # where a face usually is, never applied unasked
    overall = next(q for q in r.quick_replies if q.endswith("overall"))
    r = studio.send_message(info.id, overall)                      # "Brighter overall"
    assert r.asset_id and _settings(studio, info.id)["exposure"] > 0


def test_repeated_more_stops_at_the_sweet_spot_unless_insisted(studio, photo):
    """Repeats stop at the edge; one said right where it stopped goes one step past (a quarter of the way to
    the op's limit), and no repeat goes further: they cannot run away. "I insist" does."""
    sid = studio.start_session(photo).id
    for text in ("more contrast", "more", "more", "more", "more", "more"):
        studio.send_message(sid, text)
    held = _settings(studio, sid)["contrast"]
    assert 45 < held <= 45 + round(0.25 * (100 - 45))
    studio.send_message(sid, "more")
    assert _settings(studio, sid)["contrast"] == held
    studio.send_message(sid, "more contrast, I insist")
    assert _settings(studio, sid)["contrast"] > held


def test_warm_tone_on_black_and_white_is_visible(studio, photo):
    sid = studio.start_session(photo).id
    colour = studio.render(sid, long_side=256).astype(int)
    studio.send_message(sid, "black and white")
    grey = studio.render(sid, long_side=256).astype(int)
    assert np.abs(grey[..., 0] - grey[..., 2]).mean() < 1
    studio.send_message(sid, "give it a warm tone like a toned print")
    toned = studio.render(sid, long_side=256).astype(int)
    assert (toned[..., 0] - toned[..., 2]).mean() > 4        # red above blue: a warm tone you can see
    # still monochrome underneath: the tone is even, not the photo's colours back
    assert np.std(toned[..., 0] - toned[..., 2]) < 0.5 * np.std(colour[..., 0] - colour[..., 2])


def test_dialogue_state_is_derived_from_the_store_after_a_restart(make_studio, photo):
    studio = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "more contrast")
    studio.close()
    again = make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")
    state = dialogue_state(again.store, sid)
    assert [e.turn for e in state.edits] == [1, 2]
    assert state.last.changes[0].op == "contrast" and "warmer" in state.edits[0].intents
    again.send_message(sid, "too much")
    assert 0 < again.head(sid).state["settings"]["contrast"] < 40


@pytest.mark.parametrize("first,complaint,op", [
    ("it feels a bit cold", "hmm now it's too yellow", "temperature"),
    ("brighter", "hmm now it's too bright", "exposure"),
])
def test_a_complaint_the_last_change_caused_takes_it_back_never_past(studio, photo, first, complaint, op):
    """'too yellow now' right after a warming: the warming went too far, so it is pulled back part
    of the way, never past where it started; no fresh fix (a cooling, a desaturation) on top."""
    sid = studio.start_session(photo).id
    studio.send_message(sid, first)
    made = _settings(studio, sid)[op]
    assert made > 0
    r = studio.send_message(sid, complaint)
    now = _settings(studio, sid)
    assert 0 <= now[op] < made, (r.reply, now)
    assert all(v >= 0 for k, v in now.items() if k in ("temperature", "exposure")), now
    assert "Taking back" in r.reply


@pytest.mark.parametrize("first,complaint,op,sign", [
    ("brighter", "it's too yellow", "temperature", -1),        # the brightening did not cause it
    ("make it moody", "hmm a bit dark now", "exposure", 1),     # a look that only touched on it
])
def test_a_complaint_about_something_else_still_gets_its_fix(studio, photo, first, complaint, op, sign):
    """The fix moves the op the way the complaint says; where the session had moved it the other way (the moody
    look darkened), it goes back at most to where the photo was: a complaint's fix never crosses the original."""
    sid = studio.start_session(photo).id
    studio.send_message(sid, first)
    was = _settings(studio, sid).get(op, 0)
    studio.send_message(sid, complaint)
    now = _settings(studio, sid).get(op, 0)
    assert (now - was) * sign > 0, _settings(studio, sid)
    assert not was or now * was > 0, (was, now)


def test_a_complaint_about_one_thing_is_fixed_there_and_takes_nothing_back(studio):
    """'the cup looks a bit grey, brighten the cup' after a desaturation: the cup is fixed on the
    guessed place; the whole photo's desaturation stays, and is never moved onto the cup."""
    from skimage import data as skdata

    sid = studio.start_session(skdata.coffee()).id
    studio.send_message(sid, "ok the colours are kinda garish")
    desaturated = studio.head(sid).state["settings"]["saturation"]
    studio.send_message(sid, "the cup itself looks a bit grey, brighten just the cup")
    state = studio.head(sid).state
    assert state["settings"].get("saturation", 0) == desaturated
    for layer in state.get("layers") or []:
        assert layer["settings"].get("saturation", 0) >= 0, layer  # never a desaturation on the cup


def test_a_quality_said_again_with_still_is_more_of_the_last_change_where_it_was(studio):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "make the sky warmer")
    first = studio.head(sid).state
    r = studio.send_message(sid, "warmer still")
    state = studio.head(sid).state
    sky = [l for l in state["layers"] if l["mask"]["type"] == "sky"]
    assert r.asset_id and "warmer" in r.reply.lower()
    assert not state["settings"].get("temperature")            # not a new warming of the whole photo
    assert sky[0]["settings"]["temperature"] > first["layers"][0]["settings"]["temperature"]
    # without a word that carries it on, the same quality is a request of its own, on the whole photo
    studio.send_message(sid, "warmer")
    assert studio.head(sid).state["settings"].get("temperature", 0) > 0


def test_not_before_a_quality_leaves_it_alone_and_the_correction_is_done(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "make it colder")
    cooled = _settings(studio, sid)["temperature"]
    r = studio.send_message(sid, "no wait, not colder. warmer!")
    assert cooled < 0 and r.asset_id
    assert "cool" not in r.reply.lower().replace("leaving cooler alone", "")
    warmed = _settings(studio, sid).get("temperature", 0)
    assert warmed > cooled                                      # warmer, never cooled again
    studio.send_message(sid, "it's not warm enough")            # "not ... enough" asks for more of it
    assert _settings(studio, sid).get("temperature", 0) > warmed


def test_a_colour_asked_less_of_is_named_as_asked_when_the_place_is_asked_about(studio):
    info = studio.start_session(small_photo("coffee"))
    r = studio.send_message(info.id, "that saucer with the stripes, can it be less blue")
    assert r.kind == "clarify" and r.asset_id is None
    assert "less blue overall" in r.reply and "Less blue overall" in r.quick_replies
    assert "saturated" not in r.reply


def test_the_same_on_a_thing_is_done_where_the_frame_part_said_is_or_asked_about(studio):
    sid = studio.start_session(small_photo("rocket")).id
    studio.send_message(sid, "brighten the sky a little")
    head = studio.head(sid).id
    asked = studio.send_message(sid, "same on the reflection in the water")     # no finder for it: asked
    assert asked.asset_id is None and studio.head(sid).id == head
    assert "the reflection" in asked.reply and "The same on the selection" in asked.quick_replies
    done = studio.send_message(sid, "same for the mountains at the top please")  # where the person says it is
    layers = studio.head(sid).state["layers"]
    assert done.asset_id and any(l["mask"]["type"] == "gradient" and l["settings"].get("exposure", 0) > 0
                                 for l in layers)
    overall = studio.send_message(sid, "the same overall")
    assert overall.asset_id and studio.head(sid).state["settings"].get("exposure", 0) > 0
