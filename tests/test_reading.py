"""The judge's own reading of a request: words -> expected moves, read as people talk."""

from __future__ import annotations

import pytest

from agent.judging.reading import load_lexicon, read_attempt, read_request


def moves(reading):
    """{prop: sign} of the first alternative of every requirement."""
    return {m.prop: m.sign for e in reading.expects for m in e.alternatives[0]}


def test_a_wish_names_the_direction():
    assert moves(read_request("make it warmer")) == {"b": 1}
    assert moves(read_request("darker please")) == {"L": -1}
    assert moves(read_request("more contrast")) == {"contrast": 1}
    assert moves(read_request("make it black and white")) == {"chroma": -1}


@pytest.mark.parametrize("text, prop, sign", [
    ("it looks kind of murky", "contrast", 1),          # the problem named, the fix expected
    ("it feels kind of lifeless", "chroma", 1),
    ("it's a bit dark", "L", 1),
    ("the garage looks too yellow", "b", -1),
    ("now it's too cold", "b", 1),
    ("hmm now it looks harsh", "contrast", -1),
    ("the lights look blown out", "L", -1),
    ("it's way too colourful", "chroma", -1),
    ("can you make it look less harsh", "contrast", -1),   # a problem word is a fix, negated or not
])
def test_a_complaint_is_read_as_its_fix(text, prop, sign):
    r = read_request(text)
    assert r.kind == "edit"
    assert any(m.prop == prop and m.sign == sign for e in r.expects for alt in e.alternatives for m in alt), r


def test_a_negation_reverses_the_look():
    assert moves(read_request("give it a soft dreamy look")) == {"detail": -1}
    assert moves(read_request("not that soft")) == {"detail": 1}
    assert moves(read_request("not so warm")) == {"b": -1}
    assert moves(read_request("less saturated")) == {"chroma": -1}
    assert moves(read_request("not bright enough")) == {"L": 1}


def test_magnitude_words_set_the_size():
    slight, plain, strong = (read_request(t).expects[0].alternatives[0][0].size
                             for t in ("slightly warmer", "warmer", "much warmer"))
    assert (slight, plain, strong) == (0, 1, 2)
    assert read_request("cool it down a bit").expects[0].alternatives[0][0].size == 0


def test_follow_ups_resolve_against_the_last_change():
    more = read_request("bit more", ["make it warmer"])
    assert more.kind == "follow_up" and more.follow == "more" and moves(more) == {"b": 1}
    again = read_request("do that again", ["make the background darker"])
    assert moves(again) == {"L": -1} and again.target == "background"
    less = read_request("way too much, halve it", ["brighter"])
    assert less.follow == "less" and less.bounded and moves(less) == {"L": -1}
    # a follow-up of a follow-up still reaches the change underneath
    chain = read_request("a touch more", ["much warmer", "bit more"])
    assert moves(chain) == {"b": 1}
    elsewhere = read_request("now do the same for the sky", ["make it darker"])
    assert elsewhere.follow == "retarget" and elsewhere.target == "sky" and moves(elsewhere) == {"L": -1}
    nothing = read_request("bit more", [])
    assert nothing.kind == "follow_up" and not nothing.expects


@pytest.mark.parametrize("text, kind", [
    ("take that back", "undo"), ("go back two steps", "undo"), ("back to how it was", "undo"),
    ("start over", "undo"), ("hi there", "chat"), ("thanks!", "chat"), ("cool", "chat"),
    ("how does it look now?", "question"), ("what can you do?", "question"),
    ("is it too sharp now?", "question"),
    ("make him smile", "unsupported"), ("add a rainbow in the sky", "unsupported"),
    ("give it a green moustache", "unsupported"), ("add steam coming off the coffee", "unsupported"),
    ("add some warmth", "edit"), ("can you make it a bit warmer?", "edit"),
])
def test_messages_that_are_not_edits(text, kind):
    assert read_request(text).kind == kind


def test_places_are_read_with_their_masks():
    sky = read_request("make the sky a deeper blue")
    assert sky.target == "sky" and sky.target_mask == {"type": "sky"}
    bg = read_request("make the background darker so it stands out")
    assert bg.target == "background" and bg.target_mask == {"type": "subject", "invert": True}
    cup = read_request("brighten the cup")
    assert cup.target == "cup" and cup.target_mask is None and moves(cup) == {"L": 1}
    reds = read_request("make the reds pop")
    assert reds.target == "red" and reds.target_mask == {"type": "color", "band": "red"}
    assert read_request("warmer overall").target is None


def test_plain_words_and_rubric():
    r = read_request("warmer and a touch brighter on the sky")
    text = r.describe()
    assert "warmer" in text and "a touch brighter" in text and "the sky" in text
    assert "L*" not in text and "b*" not in text
    assert "warmer" in r.rubric() and "must score low" in r.rubric()


def test_the_vocabulary_file_is_checked():
    lex = load_lexicon()
    assert set(lex.properties) == {"L", "contrast", "chroma", "a", "b", "detail"}
    for prop, p in lex.properties.items():
        assert p["sizes"] == sorted(p["sizes"]) and p["noise"] < p["sizes"][0], prop


@pytest.mark.parametrize("text,prop,sign", [
    ("it looks a bit dingy", "L", 1),          # only in the planner profile's complaint table
    ("it has a green cast", "a", 1),           # the longer complaint phrase wins over the wish "green"
    ("too contrasty", "contrast", -1),         # the frame word inside the phrase makes it a complaint
    ("it looks overcooked", "detail", -1),
    ("the photo feels a bit clinical", "b", 1),
])
def test_complaints_of_the_planner_profile_are_read_as_their_fix(text, prop, sign):
    r = read_request(text)
    assert r.kind == "edit"
    assert any(m.prop == prop and m.sign == sign for e in r.expects for alt in e.alternatives for m in alt), r


def test_a_complaint_asks_for_a_plain_fix_and_a_negation_for_a_step_back():
    harsh = read_request("now it's harsh").expects[0].alternatives[0][0]
    less = read_request("not so warm").expects[0].alternatives[0][0]
    assert (harsh.prop, harsh.sign, harsh.size) == ("contrast", -1, 1)
    assert (less.prop, less.sign, less.size) == ("b", -1, 0)


@pytest.mark.parametrize("text,expected", [("don't make it so yellow", {"b": -1}), ("don't make it so blue", {"b": 1}),
                                           ("dont make it that dark", {"L": 1})])
def test_dont_make_it_so_is_read_as_a_negation_as_the_planner_reads_it(text, expected):
    r = read_request(text)
    assert moves(r) == expected and all(e.negated for e in r.expects)


def test_a_negation_of_the_last_change_is_a_bounded_less_follow_up():
    r = read_request("not that soft", ["give it a soft dreamy look"])
    assert (r.kind, r.follow, r.bounded) == ("follow_up", "less", True)
    assert moves(r) == {"detail": 1}
    # the same words after an unrelated change (or none) stay a plain edit
    assert read_request("not so warm", ["brighter"]).kind == "edit"
    assert read_request("not so warm").bounded is False


def test_a_colour_complaint_about_a_thing_is_measured_on_that_colour():
    # (the photo's own shade of it, where the planner puts the change)
    r = read_request("the suit is too orange")
    assert r.target == "suit" and r.target_mask == {"type": "shade", "band": "orange"}
    assert any(m.prop == "chroma" and m.sign == -1 for e in r.expects for alt in e.alternatives for m in alt)
    # about the whole photo it is a cast
    assert moves(read_request("it's too yellow")) == {"b": -1}


@pytest.mark.parametrize("text,expected", [
    ("soften the fine detail", {"detail": -1}),     # the property after a quality verb is its object
    ("soften the texture", {"detail": -1}),
    ("sharpen the details", {"detail": 1}),
    ("bring out the detail", {"detail": 1}),        # no quality verb before it: the noun is the wish
    ("softer contrast", {"contrast": -1}),
    ("add some sharpening", {"detail": 1}),         # a quality, not a thing to add
])
def test_a_property_named_as_the_object_of_a_verb_takes_the_verb_direction(text, expected):
    r = read_request(text)
    assert r.kind == "edit" and moves(r) == expected, r


def test_the_planner_profiles_non_places_are_not_places():
    r = read_request("shift the tint towards green")      # "tint" is in engine.yaml's not_places
    assert r.target is None and moves(r) == {"a": -1}


@pytest.mark.parametrize("text,follow,share", [
    ("go back halfway", "less", 0.5),               # a pull-back of the profile, not an undo
    ("that's a bit much", "less", 0.3),
    ("double it", "more", None),
    ("still not enough", "more", None),
])
def test_follow_up_words_of_the_planner_profile_are_read(text, follow, share):
    r = read_request(text, ["make it warmer"])
    assert (r.kind, r.follow, r.share) == ("follow_up", follow, share)
    assert moves(r) == {"b": 1 if follow == "more" else -1}


def test_a_reducing_verb_on_a_place_makes_it_less_prominent():
    r = read_request("tone down the sky")
    assert r.kind == "edit" and r.target == "sky"
    assert {(m.prop, m.sign) for e in r.expects for alt in e.alternatives for m in alt} == {("L", -1), ("chroma", -1)}
    assert read_request("not the sky").kind != "edit"              # a correction, not a reduction
    assert moves(read_request("tone down the contrast")) == {"contrast": -1}


@pytest.mark.parametrize("text,last,expected", [
    ("same again but less", "make it warmer", {"b": 1}),
    ("again but a bit less", "make it warmer", {"b": 1}),
    ("do it again but not as much", "make it warmer", {"b": 1}),
    ("same again but a touch softer", "make it warmer", {"b": 1}),    # softer: the repeat's amount, not detail
    ("same again, but less", "more contrast", {"contrast": 1}),
    ("same again but slightly less please", "make it warmer", {"b": 1}),   # filler the planner drops too
])
def test_same_again_but_less_repeats_the_last_change_smaller(text, last, expected):
    """The planner profile's repeat_but: the last change once more, the same way, a smaller step."""
    r = read_request(text, [last])
    assert (r.kind, r.follow, r.bounded) == ("follow_up", "more", False), r
    assert moves(r) == expected
    assert all(m.size == 0 for e in r.expects for alt in e.alternatives for m in alt)


def test_same_again_but_stronger_and_a_plain_less_stay_what_they_were():
    stronger = read_request("again but stronger", ["make it warmer"])
    assert (stronger.follow, moves(stronger)) == ("more", {"b": 1})
    assert stronger.expects[0].alternatives[0][0].size >= 1
    for text in ("no, less", "too much", "less"):                     # no repeat before a "but": a pull-back
        r = read_request(text, ["make it warmer"])
        assert (r.follow, r.bounded, moves(r)) == ("less", True, {"b": -1}), text
    local = read_request("same again but less", ["ok the sky is a bit too bright"])
    assert (local.target, moves(local)) == ("sky", {"L": -1})


@pytest.mark.parametrize("text,expected", [
    ("and a bit cold too", {"b": 1}),          # "too" as "as well": the complaint "cold" asks for warmer
    ("cold too", {"b": 1}),
    ("it's a bit cold too", {"b": 1}),
    ("a bit dark too", {"L": 1}),
    ("and a little flat as well", {"contrast": 1}),
    ("bit more colour too", {"chroma": 1}),   # a wish with "too" stays a wish
    ("brighter too", {"L": 1}),
    ("colder too", {"b": -1}),                # a comparative is a wish
    ("make it a bit soft", {"detail": -1}),    # a wish word first: the look wished for
])
def test_a_word_that_is_both_wish_and_problem_is_a_complaint_when_said_as_one(text, expected):
    assert moves(read_request(text)) == expected, read_request(text)


def test_no_comma_is_an_answer_not_a_negation():
    r = read_request("no, softer instead", ["make it dreamy"])
    assert (r.kind, moves(r)) == ("edit", {"detail": -1})
    assert moves(read_request("not that soft", ["make it dreamy"])) == {"detail": 1}


@pytest.mark.parametrize("message,feedback,expected", [
    ("more clarity", "no, softer instead: make it dreamy", {"detail": -1}),   # the feedback is the request
    ("brighter and warmer", "no, cooler instead", {"L": 1, "b": -1}),          # it replaces what it names
    ("make it warmer", "more, that was too subtle", {"b": 1}),                 # a modifier of the message
    ("make it warmer", "too strong", {"b": 1}),                                 # smaller, never the other way
    ("make it warmer", "try again", {"b": 1}),                                  # nothing to read: the message
])
def test_a_replan_is_read_with_the_persons_feedback(message, feedback, expected):
    r = read_attempt(message, (), feedback)
    assert r.kind == "edit" and not r.bounded and moves(r) == expected, r
    if feedback == "too strong":
        assert all(m.size == 0 for e in r.expects for alt in e.alternatives for m in alt)
    assert read_attempt(message, ()) == read_request(message)


def test_a_slight_complaint_still_asks_for_a_plain_fix():
    """The planner damps a magnitude on a complaint (complaints.magnitude_damping 0.5): "a bit
    murky" gets most of the fix, so the reading sizes it plain; a wish or a negation stays slight."""
    for text in ("it looks a bit dingy", "it's a bit murky", "it's a bit cold"):
        assert {m.size for e in read_request(text).expects for alt in e.alternatives for m in alt} == {1}, text
    for text in ("a bit warmer", "a bit less warm"):
        assert {m.size for e in read_request(text).expects for alt in e.alternatives for m in alt} == {0}, text


@pytest.mark.parametrize("text,expected", [
    ("could you maybe make it a tad brigther?", {"L": 1}),      # a polite request with a slip, not a question
    ("make it a bit warmer and more contrasty pls", {"b": 1, "contrast": 1}),
    ("sharpne it a little", {"detail": 1}),
    ("and warmr", {"b": 1}),                                       # a short word with a vowel dropped
])
def test_typing_slips_are_read_as_the_word_meant(text, expected):
    """The judge's reading puts typing slips right as the planner does, against its own words."""
    r = read_request(text)
    assert r.kind == "edit", r
    assert moves(r) == expected


def test_real_words_are_not_corrected():
    speller = load_lexicon().speller
    # a real word one edit from a known one stays (the planner profile's `spelling.known`), so does a short
    # word, unless a vowel inside a longer word was dropped ("warmr")
    assert speller("colder and bolder") == "colder and bolder"
    assert speller("older, with some blush") == "older, with some blush"
    assert speller("warmr") == "warmer"
    assert speller("brigther") == "brighter"


@pytest.mark.parametrize("text,history,expected", [
    ("hmm now it's too yellow", ["it feels a bit cold"], {"b": -1}),
    ("its gone too orange now", ["warmer"], {"b": -1}),
    ("less of that vintage thing maybe", ["give it a vintage film look"], None),
    ("not that soft", ["give it a soft dreamy look"], {"detail": 1}),
])
def test_a_complaint_or_negation_of_the_last_change_takes_it_back(text, history, expected):
    """What the last change caused, complained about or negated: part of it back, never past it."""
    r = read_request(text, history)
    assert (r.kind, r.follow, r.bounded, r.target) == ("follow_up", "less", True, None), r
    if expected is not None:
        assert moves(r) == expected


def test_a_complaint_the_last_change_did_not_cause_is_a_plain_fix():
    r = read_request("it's too yellow", ["make it brighter"])
    assert (r.kind, r.bounded, moves(r)) == ("edit", False, {"b": -1})
    r = read_request("hmm a bit dark now", ["make it moody"])     # a look that only touched on it
    assert (r.kind, r.bounded, moves(r)) == ("edit", False, {"L": 1})


def test_verbs_of_becoming_are_not_places():
    for text in ("it's gone too orange", "it got a bit green", "its turned too blue"):
        assert read_request(text).target is None, text
    assert read_request("the table looks too red").target == "table"


def test_a_repeat_carries_its_share_of_the_last_change():
    assert read_request("a smidge more", ["brighter"]).repeat < read_request("more", ["brighter"]).repeat
    assert read_request("double it", ["brighter"]).repeat > 1


def test_a_thing_named_with_its_colour_is_measured_on_that_colour():
    r = read_request("brighten the green mat")
    assert r.target == "mat" and r.target_mask == {"type": "shade", "band": "green"}
    assert moves(r) == {"L": 1}
    # a thing named without a colour is still a thing no finder knows; the water is a thing, not a colour
    assert read_request("brighten the cup").target_mask is None
    assert read_request("brighten the water").target_mask != {"type": "shade", "band": "blue"}


def test_even_less_after_asking_for_less_is_more_of_that_change():
    assert read_request("even less", ["make the mat less neon"]).follow == "more"
    assert read_request("bit less", ["make the mat less neon"]).follow == "less"
    assert read_request("even less", ["warmer"]).follow == "less"


def test_a_thing_that_cannot_be_seen_in_a_dark_photo_is_why_not_where():
    assert read_request("its so dark i can barely see the guitar lol").target is None
    assert read_request("ugh now its too dark, i cant see the buildings").target is None
    assert read_request("the guitar is great but the whole pic is so dark, brighten it?").target is None
    # a thing asked for is still where
    assert read_request("brighten the guitar").target == "guitar"


def test_a_complaint_frame_reaches_past_in_the_and_was():
    """"it's a bit in the dark" complains of the dark (its fix, brighter, is what "brighten his face" asks);
    "it was a flat grey day" complains of flatness (more contrast is asked, not less)."""
    r = read_request("Hey can you brighten his face a tad? it's a bit in the dark")
    assert moves(r) == {"L": 1} and r.target == "face"
    assert moves(read_request("More contrast overall, it was a flat grey day")).get("contrast") == 1


def test_a_place_kept_out_or_kept_to_after_a_change_to_the_whole_photo():
    """"not on the sky though" takes the warming off the sky (the sky goes the other way); "i meant only the sky"
    keeps it there and takes it off the rest; "the same on the sky too" is the warming again on the sky."""
    out = read_request("not on the sky though", ["make it warmer"])
    assert out.target == "sky" and moves(out) == {"b": -1}
    only = read_request("i meant only the sky", ["make it warmer"])
    assert only.target == "everything but the sky" and only.target_mask == {"type": "sky", "invert": True}
    assert moves(only) == {"b": -1}
    too = read_request("the same on the sky too", ["make it warmer"])
    assert too.follow == "retarget" and too.target == "sky"


def test_a_thing_complained_of_before_a_request_of_its_own_object_is_why():
    assert read_request("the stone looks kinda flat to me. can you bring out the texture? i want it to look "
                        "properly ancient").target is None
    assert read_request("the cup looks dull. brighten it").target == "cup"
    assert read_request("brighten the cup, the highlights are fine").target == "cup"


def test_a_wish_for_a_thing_says_what_it_should_become():
    assert moves(read_request("warm it up please, id like the stone to look more golden")) == {"b": 1}


def test_i_meant_a_place_after_a_change_to_the_whole_photo_keeps_it_there():
    r = read_request("no i meant the sky", ["make it warmer"])
    assert r.target == "everything but the sky" and moves(r) == {"b": -1}
