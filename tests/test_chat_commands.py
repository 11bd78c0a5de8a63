"""Chat that acts: undo/redo/back N/back to before X/original in words, export, what changed,
reset one adjustment, questions and small talk. Real embedded planner and judge, a real
SQLite store, real skimage photos, bytes compared for rollbacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.judging.embedded import EmbeddedJudge
from agent.planning.embedded import EmbeddedPlanner
from agent.conversation.router import Router
from conftest import small_photo
from pipeline.imageio import load_image


@pytest.fixture
def studio(make_studio):
    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")


def test_undo_and_redo_in_words_are_bit_exact(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    t1 = studio.render(sid).tobytes()
    studio.send_message(sid, "more contrast")
    t2 = studio.render(sid).tobytes()
    r = studio.send_message(sid, "take that back")
    assert r.status == "rolled_back" and r.kind == "command" and studio.render(sid).tobytes() == t1
    r = studio.send_message(sid, "redo")
    assert r.kind == "command" and studio.render(sid).tobytes() == t2


def test_go_back_two_steps_and_back_to_before_a_named_change(studio, photo):
    info = studio.start_session(photo)
    sid = info.id
    original = studio.render(sid).tobytes()
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "more contrast")
    studio.send_message(sid, "brighter")
    r = studio.send_message(sid, "go back two steps")
    assert r.status == "rolled_back"
    assert studio.head(sid).state["settings"] == {"temperature": 25}
    studio.send_message(sid, "redo")
    studio.send_message(sid, "redo")
    assert set(studio.head(sid).state["settings"]) == {"temperature", "contrast", "exposure"}
    r = studio.send_message(sid, "back to before the warmth")
    assert r.status == "rolled_back" and studio.render(sid).tobytes() == original
    r = studio.send_message(sid, "back to before the sepia tone")
    assert r.status == "answered" and "couldn't find" in r.reply


def test_start_over_and_nothing_to_undo_are_told_in_one_line(studio, photo):
    info = studio.start_session(photo)
    r = studio.send_message(info.id, "undo")
    assert r.status == "answered" and "nothing to undo" in r.reply.lower()
    studio.send_message(info.id, "warmer")
    studio.send_message(info.id, "sharper")
    r = studio.send_message(info.id, "start over")
    assert r.head_asset_id == info.head_asset_id and r.kind == "command"
    assert studio.send_message(info.id, "start over").reply == "This is already the original photo."


def test_greetings_and_questions_change_nothing_and_use_no_turn(studio, photo):
    info = studio.start_session(photo)
    for text in ("hi!", "thanks", "how does it look?", "what would you change?", "what can you do?"):
        r = studio.send_message(info.id, text)
        assert r.status == "answered" and r.reply and r.asset_id is None
        assert r.kind in ("chat", "question")
    assert studio.session(info.id).turns == 0 and len(studio.history(info.id)) == 1
    r = studio.send_message(info.id, "what would you change?")
    assert r.quick_replies
    # a suggestion is a message the person can send as it is
    picked = studio.send_message(info.id, r.quick_replies[0])
    assert picked.kind == "edit" and picked.asset_id is not None
    assert studio.session(info.id).turns == 1


def test_what_did_you_change_names_the_recipe(studio):
    sid = studio.start_session(small_photo("rocket")).id         # a photo with a sky
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "darken the sky")
    r = studio.send_message(sid, "what did you change?")
    assert "temperature +25" in r.reply and "sky" in r.reply and r.status == "answered"


def test_export_in_chat_writes_the_full_size_file(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    r = studio.send_message(sid, "export as png")
    path = Path(r.export_path)
    assert path.suffix == ".png" and path.exists() and str(path) in r.reply
    assert load_image(path.read_bytes()).pixels.tobytes() == studio.render(sid, long_side=None).tobytes()
    assert Path(studio.send_message(sid, "save it as a tiff please").export_path).suffix == ".tif"


def test_reset_one_adjustment_keeps_the_rest(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "more saturated")
    r = studio.send_message(sid, "reset the saturation")
    assert r.kind == "command" and r.asset_id
    settings = studio.head(sid).state["settings"]
    assert settings.get("saturation", 0) == 0 and settings["temperature"] == 25
    r = studio.send_message(sid, "reset the saturation")
    assert r.status == "answered" and "already" in r.reply


@pytest.mark.parametrize("text,kind,name", [
    ("hello there!", "chat", "greeting"), ("thanks, that's perfect", "chat", "thanks"),
    ("undo", "command", "undo"), ("back to how it was", "command", "undo"), ("go back 3 steps", "command", "back"),
    ("back to before the warmth", "command", "going_back"), ("start over", "command", "original"),
    ("show me the original", "command", "show_original"), ("export as jpeg", "command", "export"),
    ("reset the saturation", "command", "reset"), ("how does it look?", "evaluation", "evaluation"),
    ("what would you change?", "exploration", "exploration"), ("what can you do?", "exploration", "capabilities"),
    ("make it warmer", "modification", ""), ("undo the warmth and add contrast", "modification", ""),
    ("remove the haze", "modification", ""), ("bit more", "modification", ""), ("can you make it warmer?", "modification", ""),
])
def test_router_kinds(text, kind, name):
    route = Router().route(text)
    assert (route.kind, route.name) == (kind, name)


# -- fresh2 families: small talk, questions and undo said in more words ------------------------------------

@pytest.mark.parametrize("text,kind,name", [
    ("thanks thats lovely", "chat", "thanks"), ("thanks, that's really lovely", "chat", "thanks"),
    ("cheers thats perfect", "chat", "thanks"), ("thank you its great", "chat", "thanks"),
    ("ok np", "chat", "ok"), ("no worries", "chat", "ok"), ("no problem!", "chat", "ok"),
    ("hi! first time using this", "chat", "greeting"), ("hello, just trying this out", "chat", "greeting"),
    ("hey im new here", "chat", "greeting"), ("first time using this", "chat", "intro"),
    ("what have you changed so far?", "command", "what_changed"), ("what did you change so far", "command", "what_changed"),
    ("what sort of things can you do?", "exploration", "capabilities"),
    ("what kind of stuff can you do", "exploration", "capabilities"),
    ("what are you capable of?", "exploration", "capabilities"),
    ("go back to how it was originally", "command", "original"), ("back to how it was at first", "command", "original"),
    ("start over from the original pls", "command", "original"),
    ("can we start over from the original", "command", "original"),
    ("hmm thats too much overall, go back to before the warm stuff", "command", "going_back"),
    ("thats worse, go back to before the contrast thing", "command", "going_back"),
    ("its too yellow now, undo that", "command", "undo"), ("that's way too much, go back", "command", "undo"),
    # a complaint with no request stays a complaint; a request before a history step is not only a reason
    ("its so dark", "modification", ""), ("that's too dark", "modification", ""),
    ("warmer, then undo", "modification", ""),
    # a remark that names nothing to change is answered as small talk, never planned
    ("like the first time", "chat", "remark"),
])
def test_more_ways_to_say_chat_questions_and_history_steps(text, kind, name):
    route = Router().route(text)
    assert (route.kind, route.name) == (kind, name)


def test_thanks_no_problem_and_a_first_hello_use_no_turn(studio, photo):
    info = studio.start_session(photo)
    studio.send_message(info.id, "warmer")
    for text in ("thanks thats lovely", "ok np", "hi! first time using this", "what sort of things can you do?"):
        r = studio.send_message(info.id, text)
        assert r.status == "answered" and r.asset_id is None and r.kind in ("chat", "question"), text
        assert r.reply and "don't know how" not in r.reply, text
    assert studio.session(info.id).turns == 1 and len(studio.history(info.id)) == 2


def test_what_have_you_changed_so_far_says_the_recipe(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "warmer")
    r = studio.send_message(sid, "what have you changed so far?")
    assert r.status == "answered" and r.kind == "command" and "temperature +25" in r.reply


@pytest.mark.parametrize("text", ["go back to how it was originally", "start over from the original pls"])
def test_back_to_how_it_was_originally_is_the_original_bit_exact(studio, photo, text):
    info = studio.start_session(photo)
    original = studio.render(info.id).tobytes()
    studio.send_message(info.id, "warmer")
    studio.send_message(info.id, "more contrast")
    r = studio.send_message(info.id, text)
    assert r.kind == "command" and r.head_asset_id == info.head_asset_id
    assert studio.render(info.id).tobytes() == original


def test_back_to_before_the_warm_stuff_after_a_complaint_undoes_every_warm_step(studio, photo):
    sid = studio.start_session(photo).id
    studio.send_message(sid, "more contrast")
    before = studio.render(sid).tobytes()
    studio.send_message(sid, "warmer")
    studio.send_message(sid, "bit more")                 # the warmth again: one run of warm steps
    r = studio.send_message(sid, "hmm thats too much overall, go back to before the warm stuff")
    assert r.status == "rolled_back" and r.kind == "command" and studio.render(sid).tobytes() == before
    assert studio.head(sid).state["settings"] == {"contrast": 40}


@pytest.mark.parametrize("named,kept", [("the contrast thing", {"temperature"}), ("the colour stuff", {"contrast"})])
def test_a_change_named_loosely_is_found(studio, photo, named, kept):
    sid = studio.start_session(photo).id
    order = ["warmer", "more contrast"] if named == "the contrast thing" else ["more contrast", "warmer"]
    for text in order:
        studio.send_message(sid, text)
    r = studio.send_message(sid, f"go back to before {named}")
    assert r.status == "rolled_back" and set(studio.head(sid).state["settings"]) == kept
