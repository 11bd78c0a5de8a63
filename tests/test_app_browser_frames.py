"""What the studio shows (issue 23): selections after a crop, looks, old versions, the compare, the sliders.

Debian's Chromium driven by Playwright against the real app on 127.0.0.1: the real
Studio (embedded planner and judge) on a temporary SQLite file, review mode "never".
``ATELIER_SCREENSHOTS=docs/screenshots`` also writes the docs' session screenshots
(a look, a question, a selection after a crop) at 1440 and 390 px.

Timings are printed, never asserted (``-s`` shows them): the median from a slider
move to its picture, and the median from Send to the new picture for a 640 px photo.
"""

from __future__ import annotations

import base64
import statistics
import time

import numpy as np
import pytest
from PIL import Image
from skimage import data as skdata

from playwright.sync_api import expect

from pipeline import selections
from pipeline.state import EditState
# the studio on a free port, review mode "never" (its fixture, one server per module)
from test_app_studio import server  # noqa: F401
from test_app_studio import (PHONE, TURN, after_src, captions, no_sideways_scroll, open_page, pick_demo, pixels,
                             send, session_of, settled, shot, slider_value, wait_captions, wait_for_photo)


def natural_size(page, selector: str, index: int = 0) -> tuple[int, int]:
    return tuple(page.locator(selector).nth(index).evaluate("i => [i.naturalWidth, i.naturalHeight]"))


def choose_look(page, name: str) -> None:
    page.locator("#style input").click()
    page.locator("[data-testid=dropdown-option]", has_text=name).first.click()
    expect(page.locator("#style input")).to_have_value(name)


# -- 2 (and the docs' screenshots): a selection after a crop, with a look and a question ---------------

@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_a_selection_after_a_crop_is_made_on_the_picture_shown(server, browser, size):
    url, studio = server
    context, page = open_page(browser, url, size)
    choose_look(page, "Golden hour")
    pick_demo(page, "rocket")
    wait_captions(page, 2)                                     # the look: version 1
    send(page, "crop it 16:9")
    wait_captions(page, 3)
    sid = session_of(studio, "rocket.jpg")

    page.locator("#selection-panel .label-wrap").first.click()
    picture = page.locator("#select-click img")
    expect(picture).to_be_visible(timeout=TURN)
    width, height = natural_size(page, "#select-click img")
    assert abs(width / height - 16 / 9) < 0.02, (width, height)   # the picture as shown: cropped
    picture.scroll_into_view_if_needed()
    box = picture.bounding_box()
    picture.click(position={"x": box["width"] * 0.5, "y": box["height"] * 0.45})   # the rocket
    expect(page.locator("#select-status")).to_contain_text("of the photo", timeout=TURN)
    chosen = studio.selection(sid)
    assert chosen and 0.003 < chosen["coverage"] < 0.3, chosen

    before = studio.render(sid, long_side=800).astype(float)
    send(page, "brighten the selection")
    assert "couldn't" not in page.locator("#chat [data-testid=bot]").last.inner_text()
    wait_captions(page, 4)
    after = studio.render(sid, long_side=800).astype(float)
    assert before.shape == after.shape and abs(before.shape[1] / before.shape[0] - 16 / 9) < 0.02
    source = studio.sources.get(sid)
    frame = studio.renderer.frame(source, EditState.from_dict(studio.head(sid).state))
    inside = selections.to_display(studio.blobs.get_array(chosen["selection_id"]), frame, before.shape[:2],
                                   (source.height, source.width)) >= 128
    gain = (after - before).mean(axis=2)
    assert inside.any() and gain[inside].mean() > 3 * max(0.5, abs(gain[~inside].mean())), \
        (gain[inside].mean(), gain[~inside].mean())
    send(page, "how does it look?")                           # a question: answered, no version
    assert len(captions(page)) == 4
    if size == "phone":
        no_sideways_scroll(page)
    page.evaluate("() => window.scrollTo(0, 0)")
    shot(page, "studio-session-1440" if size == "desktop" else "studio-session-390")
    context.close()


# -- 3: a look is applied once, as its own first version; then the person's words lead ------------------

def test_a_look_is_its_own_first_version_and_does_not_stay_chosen(server, browser):
    url, studio = server
    context, page = open_page(browser, url)
    choose_look(page, "Black and white")
    pick_demo(page, "coffee")
    shown = wait_captions(page, 2)
    assert shown[1].startswith("1 · "), shown
    sid = session_of(studio, "coffee.jpg")
    look = dict(studio.head(sid).state["settings"])
    assert look.get("saturation") == -100, look
    send(page, "just a touch warmer")
    shown = wait_captions(page, 3)
    assert shown[2].startswith("2 · ") and "warm" in shown[2], shown
    # the look is not applied again, nor undone: version 2 is version 1 and a touch warmer
    settings = dict(studio.head(sid).state["settings"])
    assert {k: v for k, v in settings.items() if k in look} == look, (settings, look)
    assert slider_value(page, "temperature") > 0 or any(
        "temperature" in l["settings"] for l in studio.head(sid).state["layers"])
    # The next session starts without a look.
    page.locator("#new-session").click()
    expect(page.locator("#start-panel")).to_be_visible()
    expect(page.locator("#style input")).to_have_value("None")
    context.close()


# -- 6: old versions, the compare after a crop, transparency, focus, the phone --------------------------

def test_an_old_version_shows_its_own_sliders(server, browser):
    url, studio = server
    context, page = open_page(browser, url)
    pick_demo(page, "astronaut")
    send(page, "brighter")
    send(page, "much darker")
    wait_captions(page, 3)
    sid = session_of(studio, "astronaut.jpg")
    first = studio.history(sid)[1].state["settings"].get("exposure", 0)
    assert first > 0 and slider_value(page, "exposure") != first
    page.locator("#gallery button.thumbnail-item").nth(1).click()
    expect(page.locator("#score")).to_contain_text("Viewing: version 1", timeout=TURN)
    page.wait_for_function(f"() => +document.querySelector('#adj-exposure input[type=range]').value === {first}",
                           timeout=TURN)
    expect(page.locator("#adj-exposure input[type=range]")).to_be_disabled()
    context.close()


def test_before_and_after_line_up_after_a_crop(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    pick_demo(page, "chelsea")
    send(page, "crop it square")
    wait_captions(page, 2)
    page.wait_for_function("() => { const i = document.querySelectorAll('#compare img');"
                           " return i.length > 1 && i[1].naturalWidth > 0 && i[1].naturalWidth === i[1].naturalHeight; }",
                           timeout=TURN)
    assert natural_size(page, "#compare img", 0) == natural_size(page, "#compare img", 1)
    context.close()


def test_transparency_shows_on_a_checkerboard(server, browser, tmp_path):
    url, _ = server
    rgb = np.asarray(Image.fromarray(skdata.astronaut()).resize((480, 480), Image.LANCZOS))
    alpha = np.full(rgb.shape[:2], 255, np.uint8)
    alpha[:, :240] = 0                                            # the left half is clear; its colours hidden
    path = tmp_path / "cutout.png"
    Image.fromarray(np.dstack([rgb, alpha])).save(path)
    context, page = open_page(browser, url)
    page.locator("#upload input[type=file]").set_input_files(str(path))
    wait_for_photo(page, "cutout.png")
    shown = pixels(page, after_src(page)).astype(int)
    clear = shown[:, :200]
    grey = np.abs(clear - clear.mean(axis=2, keepdims=True)).max() < 12        # no colour: greys only
    levels = np.unique((clear.mean(axis=2) // 16).astype(int))
    assert grey and len(levels) >= 2, levels                               # two greys: a checkerboard
    assert np.abs(clear - rgb[:, :200]).mean() > 20                        # not the hidden colours
    context.close()


def test_focus_returns_to_the_message_box_after_each_send(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    pick_demo(page, "coffee")
    for words in ("a little warmer", "hi there"):
        send(page, words)                      # clicks Send
        page.wait_for_function("() => document.activeElement === document.querySelector('#instruction textarea')",
                               timeout=TURN)
    context.close()


def test_on_a_phone_the_reply_is_scrolled_into_view(server, browser):
    url, _ = server
    context, page = open_page(browser, url, "phone")
    pick_demo(page, "chelsea")
    for words in ("what can you do?", "a bit brighter"):
        send(page, words)
        page.wait_for_function(
            "() => { const r = [...document.querySelectorAll('#chat [data-testid=bot]')].pop();"
            " if (!r) return false; const b = r.getBoundingClientRect();"
            " return b.bottom > 0 && b.top < window.innerHeight; }", timeout=TURN)
    assert page.viewport_size["width"] == PHONE["width"]
    context.close()


# -- 5: slider drags stay responsive; double-click resets --------------------------------------------

def test_slider_drags_coalesce_and_double_click_resets(server, browser):
    url, studio = server
    context, page = open_page(browser, url)
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "studio/preview" in r.url else None)
    pick_demo(page, "coffee")
    shown = wait_captions(page, 1)
    sid = session_of(studio, "coffee.jpg")
    slider = page.locator("#adj-exposure input[type=range]")
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] / 2, y)
    page.mouse.down()
    moves = 30
    page.mouse.move(box["x"] + box["width"] * 0.8, y, steps=moves)
    # Held still: the picture settles on the last position, at the proxy's size; nothing recorded yet.
    value = int(float(slider.input_value()))
    assert value > 20
    page.wait_for_function("() => { const i = document.querySelectorAll('#compare img')[1];"
                           " return i && /live preview/.test(i.alt) && i.src.startsWith('blob:'); }", timeout=TURN)
    expected = studio.preview(sid, {"exposure": value}).read_bytes()
    shown_bytes = b""
    for _ in range(int(TURN / 200)):                          # the newest preview lands last
        got = page.evaluate("async () => { const i = document.querySelectorAll('#compare img')[1];"
                            " const b = new Uint8Array(await (await fetch(i.src)).arrayBuffer());"
                            " let s = ''; for (const x of b) s += String.fromCharCode(x); return btoa(s); }")
        shown_bytes = base64.b64decode(got)
        if shown_bytes == expected:
            break
        page.wait_for_timeout(200)
    assert shown_bytes == expected                            # the last position, exactly
    assert max(natural_size(page, "#compare img", 1)) == studio.config.proxy_long_side
    assert 0 < len(asked) < moves, len(asked)                # coalesced: in-between positions never rendered
    assert captions(page) == shown
    times = page.evaluate("() => window.atelierPreviewTimes.slice()")
    print(f"\nslider move -> picture: median {statistics.median(times):.0f} ms over {len(times)} previews "
          f"(1600 px proxy; this machine's load included)")
    page.mouse.up()
    shown = wait_captions(page, 2)
    assert shown[1].startswith("1 · brighter"), shown

    # Double-clicking the track resets to the default: one version (the reset), never the clicked value.
    slider.scroll_into_view_if_needed()
    box = slider.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.dblclick(box["x"] + box["width"] * 0.2, y)
    page.wait_for_function("() => +document.querySelector('#adj-exposure input[type=range]').value === 0",
                           timeout=TURN)
    shown = wait_captions(page, 3)
    page.wait_for_timeout(1500)
    settled(page)
    assert len(captions(page)) == 3, captions(page)
    assert studio.head(sid).state["settings"].get("exposure", 0) == 0
    # Double-clicking a slider already at its default records nothing.
    page.mouse.dblclick(box["x"] + box["width"] * 0.7, y)
    page.wait_for_timeout(1500)
    assert len(captions(page)) == 3 and slider_value(page, "exposure") == 0
    context.close()


# -- the studio's send-to-image time for a 640 px photo (logged, not asserted) -----------------------------

def test_send_to_image_median_for_a_640px_photo(server, browser, tmp_path):
    url, _ = server
    path = tmp_path / "chelsea-640.jpg"
    Image.fromarray(skdata.chelsea()).resize((640, 426), Image.LANCZOS).save(path, quality=90)
    context, page = open_page(browser, url)
    page.locator("#upload input[type=file]").set_input_files(str(path))
    wait_for_photo(page, "chelsea-640.jpg")
    times = []
    for words in ("warmer", "cooler", "brighter", "darker", "more contrast", "less contrast", "warmer"):
        before = after_src(page)
        page.locator("#instruction textarea").fill(words)
        start = time.monotonic()
        page.locator("#send").click()
        page.wait_for_function("(old) => { const i = document.querySelectorAll('#compare img')[1];"
                               " return i && i.getAttribute('src') !== old && i.complete && i.naturalWidth > 0; }",
                               arg=before, timeout=TURN)
        times.append(time.monotonic() - start)
        settled(page)
    print(f"\nsend -> new picture, 640 px photo: median {statistics.median(times):.2f} s over {len(times)} sends "
          f"({', '.join(f'{t:.2f}' for t in times)}; this machine's load included)")
    assert len(captions(page)) == len(times) + 1
    context.close()
