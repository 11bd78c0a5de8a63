"""The studio a photographer keeps open (issue 10), in real Chromium at desktop (1440 px) and phone (390 px) sizes.

Debian's Chromium driven by Playwright against the real app on 127.0.0.1: the
real Studio (embedded planner and judge) on a temporary SQLite file, with the
config's review mode set to "never" (the service's own default is
"below_auto_approve"), so the start page shows that the config is honoured.
Accessibility is checked with axe-core (from the npm registry; `make test`
installs it under .venv/node). ``ATELIER_SCREENSHOTS=docs/screenshots`` also
writes the README screenshots from these runs.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data as skdata

from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from conftest import free_port

REPO = Path(__file__).resolve().parents[1]
TURN = 60_000
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = {"desktop": DESKTOP, "phone": PHONE}
AXE_PATHS = [REPO / ".venv" / "node" / "node_modules" / "axe-core" / "axe.min.js",
             Path(sys.prefix) / "node" / "node_modules" / "axe-core" / "axe.min.js"]


# -- fixtures and helpers -------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from agent.config import load_config
    from agent.service import Studio
    from app import create_app

    sessions = tmp_path_factory.mktemp("sessions")
    studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions,
                    config=load_config().with_overrides(review_mode="never"))
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}/", studio
    demo.close()
    studio.close()


@pytest.fixture(scope="module")
def photo_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("photos") / "astronaut.jpg"
    Image.fromarray(skdata.astronaut()).resize((900, 900), Image.LANCZOS).save(path, quality=90)
    return path


def open_page(browser, url: str, size: str = "desktop"):
    phone = size == "phone"
    context = browser.new_context(viewport=SIZES[size], accept_downloads=True, is_mobile=phone, has_touch=phone)
    page = context.new_page()
    page.goto(url)
    expect(page.locator("#upload")).to_be_visible(timeout=TURN)
    expect(page.locator("#demo-photos img").first).to_be_visible(timeout=TURN)
    return context, page


def shot(page, name: str) -> None:
    """A README screenshot when ATELIER_SCREENSHOTS names a folder (256-colour PNG)."""
    folder = os.environ.get("ATELIER_SCREENSHOTS")
    if not folder:
        return
    page.wait_for_timeout(400)
    Path(folder).mkdir(parents=True, exist_ok=True)
    img = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
    img.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.FLOYDSTEINBERG).save(
        Path(folder) / f"{name}.png", optimize=True)


def session_of(studio, title: str) -> str:
    """The newest session of that photo (the one the page just started)."""
    return max((s for s in studio.list_sessions() if s.title == title), key=lambda s: s.created_at).id


def under_review(page, photo: str, words: str):
    """A demo photo with "Always ask me", and ``words`` sent: the review panel, once it shows."""
    choose_review_mode(page, "Always ask me")
    pick_demo(page, photo)
    send(page, words)
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    return panel


def pick_demo(page, name: str) -> None:
    names = [t.strip().lower() for t in page.locator("#demo-photos .caption-label").all_inner_texts()]
    page.locator("#demo-photos button.thumbnail-item").nth(names.index(name)).click()
    wait_for_photo(page, f"{name}.jpg")


def wait_for_photo(page, title: str) -> None:
    expect(page.locator("#photo-title")).to_contain_text(title, timeout=TURN)
    expect(page.locator("#compare img").nth(1)).to_be_visible(timeout=TURN)


def settled(page) -> None:
    """Wait until no turn runs: the progress line is gone and the message box takes text again."""
    expect(page.locator("#turn-progress")).to_be_hidden(timeout=TURN)
    expect(page.locator("#instruction textarea")).to_be_editable(timeout=TURN)


def send(page, text: str) -> None:
    """Send a message and wait for the whole turn (the person's bubble count grows, then the turn settles)."""
    said = page.locator("#chat [data-testid=user]").count()
    page.locator("#instruction textarea").fill(text)
    page.locator("#send").click()
    expect(page.locator("#chat [data-testid=user]")).to_have_count(said + 1, timeout=TURN)
    expect(page.locator("#chat [data-testid=user]").last).to_contain_text(text, timeout=TURN)
    settled(page)


def captions(page) -> list[str]:
    return page.locator("#gallery .caption-label").all_inner_texts()


def wait_captions(page, count: int) -> list[str]:
    expect(page.locator("#gallery .caption-label")).to_have_count(count, timeout=TURN)
    return captions(page)


def after_src(page) -> str:
    return page.locator("#compare img").nth(1).get_attribute("src")


def pixels(page, url: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(page.request.get(url).body())).convert("RGB"))


def no_sideways_scroll(page) -> None:
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"page is {width} px wide"


def choose_review_mode(page, label: str) -> None:
    page.locator("#advanced").get_by_text("Advanced").first.click()
    page.locator("#review-mode label", has_text=label).click()


STAGE_OF = {"exposure": "white-balance-tone-contrast", "temperature": "color-temperature"}


def slider_value(page, op: str) -> int:
    """The op's slider position (its stage's fold is opened first when it is closed)."""
    if page.locator(f"#adj-{op}").count() == 0:
        page.locator(f"#stage-{STAGE_OF[op]} .label-wrap").first.click()
    return int(float(page.locator(f"#adj-{op} input[type=range]").input_value()))


def settle(page, timeout_ms: int = 30_000) -> None:
    """Wait until no component is in Gradio's pending state (drawn at a fifth of its opacity, with the
    send box's stop button): what a person sees once the page has caught up."""
    page.wait_for_function("() => !document.querySelector('.pending, .generating')", timeout=timeout_ms)


def run_axe(page) -> list[dict]:
    """axe-core's serious and critical violations on the page as it is once it has settled."""
    settle(page)
    path = next((p for p in AXE_PATHS if p.exists()), None)
    if path is None:
        pytest.fail("axe-core is missing: `make test` installs it (npm install --prefix .venv/node axe-core)",
                    pytrace=False)
    page.add_script_tag(path=str(path))
    result = page.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "nodes": [n["target"] for n in v["nodes"]][:5]}
            for v in result["violations"] if v["impact"] in ("serious", "critical")]


# -- 5 and 9: the first screen, and the config's review mode ------------------------------

@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_first_screen_is_for_people(server, browser, size):
    url, studio = server
    context, page = open_page(browser, url, size)
    # Upload, demo photos and the looks menu come first; the agent's settings wait under "Advanced".
    expect(page.locator("#style")).to_be_visible()
    expect(page.locator("#review-mode")).to_be_hidden()
    expect(page.locator("#quality-schema")).to_be_hidden()
    expect(page.locator("#schema-panel")).to_be_hidden()
    page.locator("#style input").click()
    options = page.locator("[data-testid=dropdown-option]").all_inner_texts()
    assert "Black and white" in [o.strip() for o in options], options
    assert not [o for o in options if "_" in o], options
    page.keyboard.press("Escape")
    # The model badge says who plans the edits (no model configured here: the built-in planner).
    expect(page.locator("#model-badge")).to_contain_text(studio.model_status()["label"])
    no_sideways_scroll(page)
    if size == "desktop":
        shot(page, "start-1440")
    else:
        page.wait_for_function("() => [...document.querySelectorAll('#demo-photos img')].every(i => i.complete)")
        shot(page, "start-390")
    page.locator("#advanced").get_by_text("Advanced").first.click()
    expect(page.locator("#review-mode")).to_be_visible()
    expect(page.locator("#quality-schema")).to_be_visible()
    # The config says "never": that is the default the studio offers (the service's own is "below_auto_approve").
    expect(page.locator("#review-mode input[value=never]")).to_be_checked()
    no_sideways_scroll(page)
    context.close()


def test_make_run_installs_only_the_runtime():
    run = subprocess.run(["make", "-n", "-B", "run"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    test = subprocess.run(["make", "-n", "-B", "test"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert "-r requirements.txt" in run and "requirements-dev.txt" not in run and "axe-core" not in run
    assert "-r requirements-dev.txt" in test and "axe-core" in test and "pytest" in test
    assert "make test" in (REPO / ".ci" / "run").read_text()


# -- 1: keep talking, undo and redo ---------------------------------------------------------

def test_keep_talking_while_a_turn_waits_then_undo_and_redo_bit_exact(server, browser, photo_file):
    url, _ = server
    context, page = open_page(browser, url)
    choose_review_mode(page, "Always ask me")
    page.locator("#upload input[type=file]").set_input_files(str(photo_file))
    wait_for_photo(page, "astronaut.jpg")
    original = after_src(page)

    send(page, "make it warmer")
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    first = after_src(page)
    # The message box stays open: the next message keeps the version under review and goes on.
    expect(page.locator("#instruction textarea")).to_be_editable()
    expect(page.locator("#send")).to_be_enabled()
    send(page, "and brighter")
    expect(panel).to_be_visible()                       # the new turn waits for its own decision
    expect(panel).to_contain_text("Version 2 is waiting")
    shown = wait_captions(page, 3)
    assert shown[1].startswith("1 · ") and "current" in shown[1], shown
    assert shown[2].startswith("2 · ") and "in review" in shown[2], shown
    assert "Kept this version" in page.locator("#chat").inner_text()
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    second = after_src(page)
    assert len({original, first, second}) == 3

    # Undo and Redo are always there, and Ctrl+Z / Ctrl+Shift+Z reach them; each is bit-exact.
    expect(page.locator("#undo")).to_be_visible()
    expect(page.locator("#redo")).to_be_visible()
    page.locator("#undo").click()
    expect(page.locator("#score")).to_contain_text("version 1", timeout=TURN)
    assert np.array_equal(pixels(page, after_src(page)), pixels(page, first))
    page.locator("body").click(position={"x": 5, "y": 5})
    settle(page)
    page.keyboard.press("Control+Shift+Z")
    expect(page.locator("#score")).to_contain_text("version 2", timeout=TURN)
    assert np.array_equal(pixels(page, after_src(page)), pixels(page, second))
    settle(page)                                   # (a key pressed while the last step still renders is dropped)
    page.keyboard.press("Control+Z")
    expect(page.locator("#score")).to_contain_text("version 1", timeout=TURN)
    settle(page)
    page.keyboard.press("Control+Z")
    expect(page.locator("#score")).to_contain_text("the original", timeout=TURN)
    assert np.array_equal(pixels(page, after_src(page)), pixels(page, original))
    # Typing Ctrl+Z in the message box undoes text, not the photo.
    page.locator("#instruction textarea").fill("draft")
    page.locator("#instruction textarea").press("Control+Z")
    page.wait_for_timeout(500)
    expect(page.locator("#score")).to_contain_text("the original")
    context.close()


# -- 2: hands on the sliders ----------------------------------------------------------------

@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_sliders_preview_live_record_on_release_and_reset_on_double_click(server, browser, size):
    url, _ = server
    context, page = open_page(browser, url, size)
    pick_demo(page, "coffee")
    shown = wait_captions(page, 1)
    recorded = after_src(page)
    slider = page.locator("#adj-exposure input[type=range]")
    slider.scroll_into_view_if_needed()
    expect(slider).to_be_enabled()

    # Dragging previews live (nothing recorded yet); releasing records a version.
    box = slider.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.62, box["y"] + box["height"] / 2, steps=6)
    expect(page.locator("#compare img").nth(1)).to_have_attribute("alt", re.compile("live preview"), timeout=TURN)
    assert after_src(page) != recorded
    assert captions(page) == shown
    page.mouse.up()
    shown = wait_captions(page, 2)
    assert shown[1].startswith("1 · brighter"), shown
    value = slider_value(page, "exposure")
    assert value > 10
    expect(page.locator("#compare img").nth(1)).to_have_attribute("alt", re.compile("version 1"), timeout=TURN)

    # The keyboard moves a slider too: arrows preview, the version is recorded when the keys rest.
    slider.focus()
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
    shown = wait_captions(page, 3)
    assert shown[2].startswith("2 · darker"), shown
    assert slider_value(page, "exposure") == value - 5
    if size == "phone":
        no_sideways_scroll(page)

    # Double-click resets the slider to its default, and that is a version too.
    slider.dblclick()
    shown = wait_captions(page, 4)
    assert slider_value(page, "exposure") == 0
    assert "darker" in shown[3], shown
    context.close()


def test_local_layers_have_their_own_sliders(server, browser):
    url, studio = server
    context, page = open_page(browser, url)
    pick_demo(page, "rocket")
    send(page, "make the sky darker")
    title = page.locator("#layer-0-title")
    expect(title).to_contain_text("sky", timeout=TURN)
    layer = page.locator("#layer-0-slider-0")
    expect(layer).to_be_visible()
    name = layer.locator("label, span").first.inner_text()
    assert "sky" in name.lower(), name
    before = int(float(layer.locator("input[type=range]").input_value()))
    layer.locator("input[type=range]").focus()
    for _ in range(4):
        page.keyboard.press("ArrowRight")
    expect(layer.locator("input[type=range]")).to_have_value(str(before + 4), timeout=TURN)
    expect(page.locator("#gallery .caption-label")).to_have_count(3, timeout=TURN)
    assert "sky:" in captions(page)[2], captions(page)
    # the recorded version carries the layer's new value (read back through the service)
    sid = next(s.id for s in studio.list_sessions() if s.title == "rocket.jpg")
    layers = studio.head(sid).state["layers"]
    assert before + 4 in layers[0]["settings"].values(), layers
    context.close()


def test_modify_in_review_uses_the_same_sliders(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    choose_review_mode(page, "Always ask me")
    pick_demo(page, "chelsea")
    send(page, "warmer please")
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    expect(page.locator("#adj-temperature")).to_have_count(0)       # its fold is closed
    page.locator("#modify").click()
    page.wait_for_function("() => document.activeElement.closest('[id^=adj-]')?.id === 'adj-temperature'")
    warm = slider_value(page, "temperature")
    assert warm > 0
    under_review = after_src(page)
    for _ in range(6):
        page.keyboard.press("ArrowLeft")
    expect(page.locator("#chat")).to_contain_text("as you asked", timeout=TURN)
    settled(page)
    expect(panel).to_be_visible()                          # still under review, judged again
    assert slider_value(page, "temperature") == warm - 6
    assert after_src(page) != under_review
    shown = captions(page)
    assert sum("in review" in c for c in shown) == 1, shown  # one entry in review, the first try a variant
    assert any(c.startswith("1b · ") and "variant" in c for c in shown), shown
    shot(page, "review-1440")
    context.close()


# -- 3: a history that reads like one ---------------------------------------------------------

def test_history_numbers_versions_and_greys_rolled_back_branches(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    pick_demo(page, "astronaut")
    send(page, "make it warmer")
    send(page, "blorp the flux capacitor")           # not understood: no version, no gap in the numbers
    send(page, "more contrast")
    shown = wait_captions(page, 3)
    assert [c.split(" · ")[0] for c in shown] == ["0", "1", "2"], shown
    assert "warmer" in shown[1] and re.search(r"\d\.\d\d", shown[1]), shown
    items = page.locator("#gallery .thumbnail-item")
    expect(items.nth(1)).to_have_attribute("aria-label", re.compile(r"^Version 1: warmer.*score \d\.\d\d"))
    expect(items.nth(0)).to_have_attribute("aria-label", re.compile(r"^The original"))

    # Roll back to version 1: version 2 stays, greyed, and can still be looked at.
    items.nth(1).click()
    expect(page.locator("#rollback-to")).to_be_visible(timeout=TURN)
    page.locator("#rollback-to").click()
    expect(page.locator("#score")).to_contain_text("Current: version 1", timeout=TURN)
    expect(page.locator("#sub-goals")).not_to_contain_text("Contrast")   # "This turn" follows the head
    expect(items.nth(2)).to_have_class(re.compile("abandoned"), timeout=TURN)
    assert "rolled back" in captions(page)[2]
    shot(page, "history-1440")
    items.nth(2).click()
    expect(page.locator("#score")).to_contain_text("Viewing: version 2", timeout=TURN)
    expect(page.locator("#adjustments-summary")).to_contain_text("Viewing an earlier version")
    expect(page.locator("#adj-exposure input[type=range]")).to_be_disabled()
    context.close()


# -- 4: session hygiene -----------------------------------------------------------------------

def test_nothing_of_one_session_stays_in_another(server, browser, photo_file, tmp_path):
    url, _ = server
    context, page = open_page(browser, url)
    page.locator("#upload input[type=file]").set_input_files(str(photo_file))
    wait_for_photo(page, "astronaut.jpg")
    send(page, "make it a little warmer")
    page.locator("#export").click()
    link = page.locator("#export-file a").first
    expect(link).to_be_visible(timeout=TURN)
    first = {"export": link.get_attribute("href"), "images": page.locator("#studio img").evaluate_all(
        "els => els.map(e => e.src)")}
    slider_first = slider_value(page, "temperature")
    assert slider_first > 0

    def nothing_of_the_first() -> None:
        expect(page.locator("#export-file")).to_be_hidden(timeout=TURN)
        html = page.locator("#studio").evaluate("e => e.outerHTML")
        leaked = [u for u in [first["export"], *first["images"]] if u and u.split("/")[-1] in html]
        assert not leaked, leaked
        assert "astronaut" not in page.locator("#studio").inner_text().lower()
        assert "a little warmer" not in page.locator("#chat").inner_text()
        assert slider_value(page, "temperature") == 0
        assert page.locator("#export-file a").count() == 0

    # A new session replaces everything the first one showed.
    page.locator("#new-session").click()
    expect(page.locator("#start-panel")).to_be_visible()
    pick_demo(page, "coffee")
    nothing_of_the_first()

    # Back to the first (My sessions), then switching away again: the same.
    page.locator("#my-sessions input").click()
    page.locator("[data-testid=dropdown-option]", has_text="astronaut").click()
    wait_for_photo(page, "astronaut.jpg")
    assert slider_value(page, "temperature") == slider_first
    page.locator("#my-sessions input").click()
    page.locator("[data-testid=dropdown-option]", has_text="coffee").click()
    wait_for_photo(page, "coffee.jpg")
    nothing_of_the_first()
    context.close()


# -- 6: phones -----------------------------------------------------------------------------------

def test_a_phone_gets_one_column_in_the_right_order_and_a_touch_divider(server, browser):
    url, _ = server
    context, page = open_page(browser, url, "phone")
    no_sideways_scroll(page)
    pick_demo(page, "chelsea")
    send(page, "a bit brighter")
    settle(page)                                   # measured once the page has caught up
    no_sideways_scroll(page)

    def top(sel: str) -> float:
        return page.locator(sel).bounding_box()["y"]

    # One column in this order, Send beside the box. Polled: after the turn settles the column can
    # still reflow for a moment as its last updates land (a panel drawn above the message box).
    try:
        page.wait_for_function("""() => {
            const top = (s) => document.querySelector(s).getBoundingClientRect().top;
            return top('#compare') < top('#instruction') && top('#instruction') < top('#chat')
                && top('#chat') < top('#adjustments') && Math.abs(top('#send') - top('#instruction')) < 60;
        }""", timeout=10_000)
    except PlaywrightTimeout:
        raise AssertionError([(s, top(s)) for s in ("#compare", "#instruction", "#send", "#chat", "#adjustments")])
    for sel in ("#send", "#export", "#undo", "#instruction"):
        box = page.locator(sel).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1, (sel, box)

    # The before/after divider follows a finger.
    handle = page.locator("#compare [data-testid=slider]")
    handle.scroll_into_view_if_needed()
    start = handle.get_attribute("aria-valuenow")
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    cdp = context.new_cdp_session(page)
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for dx in (20, 40, 60, 80):
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [{"x": x + dx, "y": y}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    expect(handle).not_to_have_attribute("aria-valuenow", start, timeout=5000)
    assert int(handle.get_attribute("aria-valuenow")) > int(start)
    page.evaluate("() => window.scrollTo(0, 0)")
    shot(page, "studio-390")
    context.close()


# -- 7: keyboards and screen readers ----------------------------------------------------------

def test_alt_text_focus_order_and_the_keyboard_divider(server, browser):
    url, _ = server
    context, page = open_page(browser, url)
    choose_review_mode(page, "Always ask me")
    pick_demo(page, "rocket")
    imgs = page.locator("#compare img")
    expect(imgs.nth(0)).to_have_attribute("alt", "Before: the original photo")
    expect(imgs.nth(1)).to_have_attribute("alt", "Current: the original photo, unedited")
    for i in range(8):                                    # enough chat to have many "Copy message" buttons
        send(page, "a touch warmer" if i % 2 == 0 else "a touch cooler")   # never past a sweet spot
    expect(imgs.nth(1)).to_have_attribute("alt", re.compile(r"^Reviewing: version \d+ of the photo — \w"),
                                          timeout=TURN)

    # Tab order: message -> Send -> review actions -> sliders; no chat copy button on the way.
    settle(page)
    page.locator("#instruction textarea").focus()
    seen = []
    for _ in range(40):
        page.keyboard.press("Tab")
        where = page.evaluate("() => { const a = document.activeElement;"
                              " const box = a.closest('#send, #review-summary, #approve, #modify, #rollback, #replan, #replan-feedback,"
                              " #chat, #adjustments, #quick-replies'); return box ? (box.id === 'chat' ? 'chat:' + a.outerHTML.slice(0, 120) : box.id) : a.tagName; }")
        seen.append(where)
        if where == "adjustments":
            break
    # (the review's own "All measurements" fold sits in the panel, before its buttons)
    # (one box reached twice in a row is one stop: the send box holds its stop button while the page
    # catches up on a loaded machine)
    stops = [w for w in seen if w != "review-summary"]
    actions = [w for i, w in enumerate(stops) if i == 0 or w != stops[i - 1]]
    assert actions[:5] == ["send", "approve", "modify", "rollback", "replan"], seen
    # the conversation itself is one stop (a scrollable log, read with the arrows); none of its buttons are
    assert not [w for w in seen if w.startswith("chat") and 'role="log"' not in w] and seen[-1] == "adjustments", seen
    assert page.locator("#chat button[tabindex='-1']").count() >= 8

    # The divider is a slider a keyboard can move; focus is visible.
    handle = page.locator("#compare [data-testid=slider]")
    expect(handle).to_have_attribute("role", "slider")
    handle.focus()
    outline = page.evaluate("() => getComputedStyle(document.activeElement).outlineStyle")
    assert outline != "none"
    start = int(handle.get_attribute("aria-valuenow"))
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    expect(handle).to_have_attribute("aria-valuenow", re.compile(r"\d+"))
    page.wait_for_timeout(200)
    assert int(handle.get_attribute("aria-valuenow")) <= start - 8
    page.keyboard.press("End")
    page.wait_for_timeout(200)
    assert int(handle.get_attribute("aria-valuenow")) >= 95
    context.close()


@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_no_serious_accessibility_violations(server, browser, size):
    url, _ = server
    context, page = open_page(browser, url, size)
    assert run_axe(page) == []                                 # the start page
    choose_review_mode(page, "Always ask me")
    pick_demo(page, "coffee")
    send(page, "warmer and brighter")
    expect(page.locator("#review-panel")).to_be_visible(timeout=TURN)
    assert run_axe(page) == []                                 # the studio with a turn under review
    if size == "desktop":
        page.evaluate("() => window.scrollTo(0, 0)")
        shot(page, "studio-1440")
    context.close()


def test_a_photo_edited_start_to_finish_with_only_the_keyboard(server, browser, tmp_path):
    url, _ = server
    context, page = open_page(browser, url)

    def tab_to(selector: str, limit: int = 120) -> None:
        for _ in range(limit):
            if page.evaluate("(s) => !!document.activeElement.closest(s)", selector):
                return
            page.keyboard.press("Tab")
        raise AssertionError(f"Tab never reached {selector}")

    # Pick a demo photo.
    page.locator("body").press("Tab")
    tab_to("#demo-photos button.thumbnail-item")
    page.keyboard.press("Enter")
    wait_for_photo(page, ".jpg")
    # Say what to change, and send it with Enter.
    tab_to("#instruction")
    page.keyboard.type("make it warmer and brighter")
    page.keyboard.press("Enter")
    expect(page.locator("#chat")).to_contain_text("make it warmer and brighter", timeout=TURN)
    settled(page)
    expect(page.locator("#gallery .caption-label")).to_have_count(2, timeout=TURN)
    # Nudge a slider with the arrow keys: a new version.
    tab_to("#adjustments input[type=range]")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#gallery .caption-label")).to_have_count(3, timeout=TURN)
    # Undo it from the keyboard (Ctrl+Z outside a text box), and compare before/after with the arrows.
    page.locator("#compare [data-testid=slider]").focus()
    page.keyboard.press("Control+Z")
    expect(page.locator("#score")).to_contain_text("version 1", timeout=TURN)
    settle(page)   # a key pressed while the undo still renders can land on a control drawn pending
    page.keyboard.press("ArrowRight")
    # Export as PNG: choose the format and press the button, then open the download link.
    settle(page)   # the divider's move above may still be sending its update (it redraws the format row)
    png = page.locator("#export-format input[value=png]")
    for _ in range(3):
        # a press that lands while the row is redrawn goes to the element being replaced: as a person
        # would, press again when nothing happened (the choice itself is never reset by an update)
        tab_to("#export-format input[value=png]")
        page.keyboard.press("Space")
        try:
            expect(png).to_be_checked(timeout=3000)
            break
        except AssertionError:
            settle(page)
    expect(png).to_be_checked()
    tab_to("#export")
    page.keyboard.press("Enter")
    link = page.locator("#export-file a").first
    expect(link).to_be_visible(timeout=TURN)
    tab_to("#export-file a")
    with page.expect_download() as info:
        page.keyboard.press("Enter")
    saved = tmp_path / "keyboard.png"
    info.value.save_as(saved)
    title = page.locator("#photo-title").inner_text().split("·")[0].strip()
    with Image.open(saved) as exported, Image.open(REPO / "assets" / title) as source:
        assert exported.format == "PNG" and exported.size == source.size   # full resolution
        # version 1 (warmer and brighter), not the original
        assert np.asarray(exported.convert("RGB"), dtype=float).mean() > np.asarray(source.convert("RGB"),
                                                                                     dtype=float).mean() + 2
    context.close()


def test_two_quick_ctrl_z_presses_undo_two_versions(server, browser):
    """A second Ctrl+Z pressed while the first undo still renders is queued, not dropped."""
    url, _ = server
    context, page = open_page(browser, url)
    pick_demo(page, "coffee")
    for text in ("warmer", "brighter", "more contrast"):
        send(page, text)
        settled(page)
    wait_captions(page, 4)
    expect(page.locator("#score")).to_contain_text("version 3", timeout=TURN)
    page.locator("#compare [data-testid=slider]").focus()
    page.keyboard.press("Control+Z")
    page.keyboard.press("Control+Z")                     # at once: no wait for the first to render
    expect(page.locator("#score")).to_contain_text("version 1", timeout=TURN)
    settle(page)
    expect(page.locator("#score")).to_contain_text("version 1")
    page.keyboard.press("Control+Shift+Z")
    page.keyboard.press("Control+Shift+Z")
    expect(page.locator("#score")).to_contain_text("version 3", timeout=TURN)
    context.close()


# -- 8: quick replies ----------------------------------------------------------------------------

@pytest.mark.parametrize("size", ["desktop", "phone"])
def test_quick_replies_answer_a_question_with_one_tap(server, browser, size):
    url, _ = server
    context, page = open_page(browser, url, size)
    pick_demo(page, "coffee")
    send(page, "more")                                   # nothing to repeat yet: the studio asks
    replies = page.locator("#quick-replies button:visible")
    expect(replies.first).to_be_visible(timeout=TURN)
    texts = [t.strip() for t in replies.all_inner_texts()]
    assert "Brighter" in texts, texts
    assert len(captions(page)) == 1                      # a question makes no version
    said = page.locator("#chat [data-testid=user]").count()
    replies.filter(has_text="Brighter").click()
    expect(page.locator("#chat [data-testid=user]")).to_have_count(said + 1, timeout=TURN)
    expect(page.locator("#chat [data-testid=user]").last).to_contain_text("Brighter")
    settled(page)
    shown = wait_captions(page, 2)
    assert "brighter" in shown[1], shown
    expect(page.locator("#quick-replies")).to_be_hidden()
    if size == "phone":
        no_sideways_scroll(page)
    context.close()


# -- training data consent (issue 15): per session, off by default ----------------------------------

def test_sharing_a_session_as_training_data_is_per_session_and_off_by_default(server, browser, photo_file):
    url, studio = server
    context, page = open_page(browser, url)
    page.locator("#upload input[type=file]").set_input_files(str(photo_file))
    wait_for_photo(page, "astronaut.jpg")
    box = page.locator("#shareable input[type=checkbox]")
    expect(box).not_to_be_checked()
    sid = next(s.id for s in studio.list_sessions() if s.title == "astronaut.jpg" and not s.shareable)
    box.check()
    page.wait_for_function(
        "() => document.querySelector('#shareable input[type=checkbox]').checked", timeout=TURN)
    for _ in range(50):   # the change reaches the server through the queue
        if studio.session(sid).shareable:
            break
        page.wait_for_timeout(100)
    assert studio.session(sid).shareable is True
    # Another session starts unshared, and the box follows the session shown.
    page.locator("#new-session").click()
    pick_demo(page, "coffee")
    expect(box).not_to_be_checked()
    assert studio.session(sid).shareable is True
    context.close()


# -- issue 11 item 5: selections made in the studio, referred to in chat ------------------------------

def test_a_clicked_selection_is_what_brighten_the_selection_brightens(server, browser):
    url, studio = server
    context, page = open_page(browser, url)
    pick_demo(page, "coffee")
    sid = next(s.id for s in studio.list_sessions() if s.title == "coffee.jpg")
    page.locator("#selection-panel .label-wrap").first.click()
    picture = page.locator("#select-click img")
    expect(picture).to_be_visible(timeout=TURN)
    picture.scroll_into_view_if_needed()
    box = picture.bounding_box()
    picture.click(position={"x": box["width"] * 0.5, "y": box["height"] * 0.2})   # the cup's rim
    expect(page.locator("#select-status")).to_contain_text("of the photo", timeout=TURN)
    chosen = studio.selection(sid)
    assert chosen and 0 < chosen["coverage"] < 0.9 and chosen["source"] == "point"
    before = studio.render(sid, long_side=400).astype(float)
    send(page, "brighten the selection")
    after = studio.render(sid, long_side=400).astype(float)
    from pipeline.masks import build_mask
    inside = build_mask(chosen["mask"], studio.sources.get(sid).pixels, before.shape[:2], blobs=studio.blobs) >= 0.5
    gain = (after - before).mean(axis=2)
    assert gain[inside].mean() > 3 * max(0.5, gain[~inside].mean()), (gain[inside].mean(), gain[~inside].mean())
    context.close()


def test_painted_strokes_become_the_sessions_selection(tmp_path):
    from agent.service import InvalidInput, Studio
    from ui.selection import click_point, painted_layer

    assert painted_layer(None) is None
    assert painted_layer({"background": None, "layers": [np.zeros((40, 60, 4), np.uint8)]}) is None
    strokes = np.zeros((40, 60, 4), np.uint8)
    strokes[10:20, 5:25, 3] = 255
    mask = painted_layer({"background": None, "layers": [strokes], "composite": None})
    assert mask.shape == (40, 60) and mask[15, 10] == 255 and mask[30, 50] == 0

    class Click:
        index = [29, 9]
    assert click_point(Click(), (60, 40)) == [29.5 / 60, 9.5 / 40]   # pixel centres

    with Studio(sessions_dir=tmp_path / "s", database_url=f"sqlite:///{tmp_path / 'a.db'}") as studio:
        info = studio.start_session(skdata.coffee(), review_mode="never")
        small = np.zeros((info.height // 10, info.width // 10), np.uint8)   # the photo's aspect, any size
        small[: small.shape[0] // 2, : small.shape[1] // 2] = 255
        made = studio.select(info.id, mask=small)
        assert abs(made["coverage"] - 0.25) < 0.03
        with pytest.raises(InvalidInput, match="empty"):
            studio.select(info.id, mask=np.zeros_like(small))
        assert studio.selection(info.id)["selection_id"] == made["selection_id"]   # unchanged by the refusal
