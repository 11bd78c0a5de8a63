"""Replies in plain words, measurements in the details; the checks that read every reply."""

from __future__ import annotations

from agent.conversation.wording import compose_reply, contradictions, repeated_words, split_reply


def test_the_checks_catch_what_people_saw():
    assert repeated_words("Muted muted colours.") == ["Muted muted"]
    assert repeated_words("Outside outside the subject the photo is intact.") == ["Outside outside"]
    assert repeated_words("Warmer and a touch brighter; the sky kept its colour.") == []
    assert contradictions("Warmer as asked (b* -2.7).")
    assert contradictions("darker: exposure +6")
    assert contradictions("more saturated: saturation_yellow -20")
    assert not contradictions("Cooler instead of warmer (b* -2.7).")
    assert not contradictions("Warmer as asked (b* +2.7). Darker (L* -3.0).")
    assert not contradictions("No visible change: not warmer (b* -0.1).")  # "not warmer" claims nothing
    assert not contradictions("cooling the image (temperature -25)")
    # a list of steps: each value is read against its own words, not its neighbour's
    assert not contradictions("steps: warming the image (temperature +12), cooling the blues (temperature -25) "
                              "and adding contrast to the blues (contrast +28).")
    assert contradictions("steps: warming the image (temperature +12), cooling the blues (temperature +25).")
    assert contradictions("warmer and brighter (temperature +10, exposure -5)")   # read against the clause so far


def test_split_reply_moves_numbers_to_details():
    plain, details = split_reply("Warming the image (temperature +25). I skipped “no”: I can't do that yet.")
    assert plain == "Warming the image. I skipped “no”: I can't do that yet."
    assert "temperature +25" in details


def test_compose_reply_says_what_changed_in_plain_words():
    assessment = {"score": 0.97, "assessment": "Warmer and brighter, as asked. The rest of the photo kept its look.",
                  "details": "warmer: b* +3.1 (expected about +3.0; met)", "reading": {"compliance": 1.0}}
    reply, details = compose_reply("Warming the image (temperature +25) and brightening it (exposure +10).",
                                   assessment)
    assert reply == ("Warming the image and brightening it. Warmer and brighter, as asked. "
                     "The rest of the photo kept its look.")
    assert "temperature +25" in details and "Score 0.97" in details and "b* +3.1" in details
    for text in (reply,):
        assert "b*" not in text and "+" not in text and "Score" not in text
    # without a reading the planner's words stay, without their numbers
    reply, details = compose_reply("Warming the image (temperature +25).",
                                   {"score": 0.9, "assessment": "Warmer as asked (b* +3.1).", "reading": {}},
                                   tail="Kept this version.")
    assert reply == "Warming the image. Warmer as asked. Kept this version."
    assert "b* +3.1" in details


def test_an_inverted_combination_of_places_is_everything_but_it():
    from pipeline.masks import describe_mask

    spec = {"type": "intersect", "invert": True, "masks": [{"type": "subject", "invert": True},
                                                          {"type": "gradient", "start": [1, 0.5], "end": [0.45, 0.5]}]}
    text = describe_mask(spec)
    assert text.startswith("everything but ") and not repeated_words(text), text
