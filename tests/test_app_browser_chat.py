"""What the studio says (issue 23): answers that stay, one numbering, the registry's words, the review panel.

Debian's Chromium driven by Playwright against the real app on 127.0.0.1: the real
Studio (embedded planner and judge) on a temporary SQLite file, review mode "never"
unless a test asks for "Always ask me".
"""

from __future__ import annotations

import re

from PIL import Image

from playwright.sync_api import expect

# the studio on a free port, review mode "never" (its fixture, one server per module)
from test_app_studio import server  # noqa: F401
from test_app_studio import (TURN, captions, choose_review_mode, open_page, pick_demo, send, session_of, settled,
                             slider_value, under_review, wait_captions)


def bubbles(page, who: str) -> list[str]:
    return [t.strip() for t in page.locator(f"#chat [data-testid={who}]").all_inner_texts()]


# -- 1: questions, greetings and chat commands stay answered -----------------------------------------

def test_questions_greetings_and_chat_commands_stay_answered(server, browser, tmp_path):
    url, studio = server
    context, page = open_page(browser, url)
    pick_demo(page, "coffee")
    asked = {"what can you do?": "I can do", "hi there": "Hello", "what did you change?": "Nothing yet",
             "export it as a PNG": "full-size PNG"}
    for i, (words, answer) in enumerate(asked.items(), 1):
        send(page, words)
        page.wait_for_timeout(300)             # nothing takes the exchange back after the turn settles
        assert bubbles(page, "user")[-1] == words, bubbles(page, "user")
        assert len(bubbles(page, "bot")) == i and answer in bubbles(page, "bot")[-1], bubbles(page, "bot")
    assert len(captions(page)) == 1                          # none of them made a version
    # The export really happened: the download box holds a full-size PNG of the photo.
    link = page.locator("#export-file a").first
    expect(link).to_be_visible(timeout=TURN)
    with page.expect_download() as info:
        link.click()
    assert info.value.suggested_filename == "coffee-original.png", info.value.suggested_filename
    saved = tmp_path / "chat-export.png"
    info.value.save_as(saved)
    with Image.open(saved) as im:
        assert im.format == "PNG" and im.size == (studio.session(session_of(studio, "coffee.jpg")).width,
                                                  studio.session(session_of(studio, "coffee.jpg")).height)
    assert "/exports/" not in page.locator("#chat").inner_text()      # no server path in the chat
    # And they are still there after a reload.
    page.reload()
    expect(page.locator("#chat [data-testid=user]")).to_have_count(len(asked), timeout=TURN)
    assert bubbles(page, "user") == list(asked)
    context.close()


# -- 4: one numbering everywhere; the registry's names; nothing internal -------------------------------

def test_one_numbering_everywhere_in_the_words_people_use(server, browser, tmp_path):
    url, studio = server
    context, page = open_page(browser, url)
    choose_review_mode(page, "Always ask me")
    pick_demo(page, "astronaut")
    panel = page.locator("#review-panel")
    send(page, "make it warmer")
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    send(page, "blorp the flux capacitor")               # not understood: a turn, but no version
    send(page, "crop it 16:9")                            # turn 3 makes version 2
    expect(panel).to_be_visible(timeout=TURN)
    expect(panel).to_contain_text("Version 2 is waiting for your review")
    expect(page.locator("#score")).to_contain_text("Reviewing: version 2")
    goals = page.locator("#sub-goals")
    expect(goals).to_contain_text("Version 2")
    expect(goals).to_contain_text("Aspect ratio 16:9")
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    shown = wait_captions(page, 3)
    assert [c.split(" · ")[0] for c in shown] == ["0", "1", "2"], shown
    assert "aspect ratio 16:9" in shown[2], shown

    # The download is named by the same number.
    page.locator("#export").click()
    link = page.locator("#export-file a").first
    expect(link).to_be_visible(timeout=TURN)
    with page.expect_download() as info:
        link.click()
    assert info.value.suggested_filename == "astronaut-v2.jpg", info.value.suggested_filename

    # Roll back to version 1 from the history: the chat says "version 1", never a turn number.
    page.locator("#gallery button.thumbnail-item").nth(1).click()
    expect(page.locator("#rollback-to")).to_be_visible(timeout=TURN)
    page.locator("#rollback-to").click()
    expect(page.locator("#score")).to_contain_text("Current: version 1", timeout=TURN)
    expect(page.locator("#chat [data-testid=bot]").last).to_contain_text("version 1", timeout=TURN)
    settled(page)
    said = " ".join(page.locator(s).inner_text() for s in ("#chat", "#score", "#sub-goals", "#gallery"))
    assert not re.search(r"\bturn \d", said, re.IGNORECASE), said
    assert not re.search(r"crop_aspect|\w+_\w+ ?=|= \d|No known fix", said), said
    context.close()


# -- 7: the review panel: Modify opens the sliders on the version under review; Replan is heard ---------

def test_modify_opens_the_sliders_on_the_version_under_review(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    under_review(page, "chelsea", "warmer please")
    # Looking at the original from the history first...
    page.locator("#gallery button.thumbnail-item").nth(0).click()
    expect(page.locator("#score")).to_contain_text("Current: the original", timeout=TURN)
    # ...Modify brings back the version under review with its sliders, the turn's own in focus.
    page.locator("#modify").click()
    expect(page.locator("#score")).to_contain_text("Reviewing: version 1", timeout=TURN)
    page.wait_for_function("() => document.activeElement.closest('[id^=adj-]')?.id === 'adj-temperature'"
                           " && document.activeElement.type === 'range'", timeout=TURN)
    focused = page.locator("#adj-temperature input[type=range]")
    expect(focused).to_be_enabled()
    assert slider_value(page, "temperature") > 0
    context.close()


def test_replan_feedback_shows_in_the_chat_and_changes_the_result(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    panel = under_review(page, "rocket", "make it warmer")
    warm = slider_value(page, "temperature")
    assert warm > 0
    page.locator("#replan-feedback textarea").fill("much cooler instead")
    page.locator("#replan").click()
    expect(page.locator("#chat [data-testid=user]").last).to_contain_text("much cooler instead", timeout=TURN)
    expect(panel).to_be_visible(timeout=TURN)
    page.wait_for_function("() => +document.querySelector('#adj-temperature input[type=range]').value < 0",
                           timeout=TURN)
    # The first plan stays in the history as a variant of the same version.
    shown = captions(page)
    assert any(c.startswith("1b · ") for c in shown), shown
    context.close()
