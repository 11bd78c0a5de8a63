"""The studio as a person uses it: real Chromium (Debian's) driving the real app on 127.0.0.1.

The app runs in-process on a free port with the real Studio (embedded planner
and judge) on a temporary sessions folder and SQLite file. Set
``ATELIER_SCREENSHOTS=docs/screenshots`` to also save the README screenshots.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data as skdata

from playwright.sync_api import expect

from conftest import free_port

TURN = 60_000      # ms: a turn on a busy 2-core machine, with margin
VIEWPORT = {"width": 1600, "height": 1000}
SCORED = re.compile(r"^\d+ · .+ · \d\.\d\d")



def _launch(sessions: Path, port: int):
    from agent.service import Studio
    from app import create_app

    studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions)
    demo, options = create_app(studio)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    return demo, studio


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(url, sessions folder, relaunch) — the app on a free port; relaunch() simulates a server restart."""
    sessions = tmp_path_factory.mktemp("sessions")
    port = free_port()
    running = {"demo": None, "studio": None}

    def start():
        running["demo"], running["studio"] = _launch(sessions, port)

    def stop():
        running["demo"].close()
        running["studio"].close()

    def relaunch():
        stop()
        start()

    start()
    yield f"http://127.0.0.1:{port}/", sessions, relaunch
    stop()



@pytest.fixture(scope="module")
def photo_file(tmp_path_factory) -> tuple[Path, tuple[int, int]]:
    """A real photo (skimage astronaut, 1200 px) as a JPEG file, with its size."""
    path = tmp_path_factory.mktemp("photos") / "astronaut.jpg"
    img = Image.fromarray(skdata.astronaut()).resize((1200, 1200), Image.LANCZOS)
    img.save(path, quality=90)
    return path, img.size


def shot(page, name: str) -> None:
    """Save a README screenshot when ATELIER_SCREENSHOTS names a folder (256-colour PNG, < 500 KB)."""
    folder = os.environ.get("ATELIER_SCREENSHOTS")
    if folder:
        import io

        Path(folder).mkdir(parents=True, exist_ok=True)
        img = Image.open(io.BytesIO(page.screenshot())).convert("RGB")
        img.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.FLOYDSTEINBERG).save(
            Path(folder) / f"{name}.png", optimize=True)


def open_studio(browser, url):
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    page.goto(url)
    expect(page.locator("#upload")).to_be_visible(timeout=TURN)
    expect(page.locator("#demo-photos img").first).to_be_visible(timeout=TURN)
    # review mode and judge schema live under the "Advanced" fold
    page.locator("#advanced").get_by_text("Advanced").first.click()
    expect(page.locator("#review-mode")).to_be_visible()
    return context, page


def captions(page) -> list[str]:
    return page.locator("#gallery .caption-label").all_inner_texts()


def wait_for_photo(page, title: str) -> None:
    expect(page.locator("#photo-title")).to_contain_text(title, timeout=TURN)
    expect(page.locator("#compare img").first).to_be_visible(timeout=TURN)


def upload(page, path: Path) -> None:
    page.locator("#upload input[type=file]").set_input_files(str(path))


def send(page, text: str) -> None:
    page.locator("#instruction textarea").fill(text)
    page.locator("#send").click()


def test_a_photographers_session(server, browser, photo_file, tmp_path):
    url, _, _ = server
    path, size = photo_file
    context, page = open_studio(browser, url)
    if os.environ.get("ATELIER_SCREENSHOTS"):
        page.wait_for_function("() => [...document.querySelectorAll('#demo-photos img')]"
                               ".every(i => i.complete && i.naturalWidth > 0)")
        page.wait_for_timeout(1500)   # let the page-load event settle before the picture
    shot(page, "1-start")

    # Start: always ask for review, upload a real photo.
    page.locator("#review-mode label", has_text="Always ask me").click()
    upload(page, path)
    wait_for_photo(page, "astronaut.jpg")
    expect(page.locator("#gallery .caption-label")).to_have_count(1, timeout=TURN)

    # A turn stops at the review panel with a score and per-dimension numbers.
    send(page, "make it warmer and brighter")
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    expect(panel).to_contain_text("waiting for your review")
    expect(panel.locator(".metric").first).to_be_visible()
    expect(page.locator("#chat")).to_contain_text("make it warmer and brighter")
    expect(page.locator("#send")).to_be_enabled()           # keep talking: a new message would keep this turn
    assert int(page.locator("#adj-exposure input[type=range]").input_value()) > 0   # the sliders show the turn
    shot(page, "2-review")

    # Modify: the focus goes to the turn's first slider; moving it applies the value and the turn is
    # back under review.
    page.locator("#modify").click()
    page.wait_for_function("() => !!document.activeElement.closest('.adj-slider')")
    slider = page.locator(".adj-slider", has=page.locator("input[type=range]:focus"))
    old_value = int(float(slider.locator("input[type=range]").input_value()))
    for _ in range(7):
        page.keyboard.press("ArrowRight")
    shot(page, "3-modify")
    expect(page.locator("#chat")).to_contain_text("as you asked", timeout=TURN)
    expect(slider.locator("input[type=range]")).to_have_value(str(old_value + 7), timeout=TURN)
    expect(panel).to_be_visible(timeout=TURN)

    # Approve: the panel closes and the gallery grows with a scored turn.
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    expect(page.locator("#send")).to_be_enabled()
    expect(page.locator("#gallery .caption-label", has_text=re.compile(r"^1 · .* · current$"))).to_have_count(
        1, timeout=TURN)
    assert any(SCORED.search(c) and "current" in c for c in captions(page)), captions(page)

    send(page, "more contrast")
    expect(panel).to_be_visible(timeout=TURN)
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    before_refresh = captions(page)
    assert len([c for c in before_refresh if SCORED.search(c)]) >= 2, before_refresh
    shot(page, "4-history")

    # Refresh: the same session comes back — photo, chat and history.
    page.reload()
    wait_for_photo(page, "astronaut.jpg")
    expect(page.locator("#chat")).to_contain_text("make it warmer and brighter", timeout=TURN)
    expect(page.locator("#gallery .caption-label")).to_have_count(len(before_refresh), timeout=TURN)
    assert captions(page) == before_refresh

    # Roll back from the gallery: click turn 1's kept version, then "roll back to this".
    kept_t1 = next(i for i, c in enumerate(before_refresh) if c.startswith("1 · ") and "variant" not in c)
    page.locator("#gallery button.thumbnail-item").nth(kept_t1).click()
    expect(page.locator("#score")).to_contain_text("Viewing: version 1", timeout=TURN)
    expect(page.locator("#rollback-to")).to_be_visible()
    page.locator("#rollback-to").click()
    expect(page.locator("#score")).to_contain_text("Current: version 1", timeout=TURN)
    expect(page.locator("#gallery .caption-label").nth(kept_t1)).to_contain_text("current")
    assert any(c.startswith("2 · ") and "rolled back" in c for c in captions(page)), captions(page)
    expect(page.locator("#chat")).to_contain_text("Rolled back")
    shot(page, "5-rolled-back")

    # Export: a full-resolution PNG downloads.
    page.locator("#export-format label", has_text="PNG").click()
    page.locator("#export").click()
    link = page.locator("#export-file a").first
    expect(link).to_be_visible(timeout=TURN)
    with page.expect_download() as info:
        link.click()
    saved = tmp_path / "export.png"
    info.value.save_as(saved)
    with Image.open(saved) as exported:
        assert exported.format == "PNG"
        assert exported.size == size
        # The export carries the kept edit, not the original pixels.
        assert np.abs(np.asarray(exported.convert("RGB"), dtype=int)
                      - np.asarray(Image.open(path).convert("RGB"), dtype=int)).mean() > 1.0

    # A bad upload (text renamed .jpg): a clear message; the session is untouched.
    fake = tmp_path / "holiday.jpg"
    fake.write_text("these are my holiday notes, not a photo\n" * 20)
    history = captions(page)
    chat = page.locator("#chat").inner_text()
    page.locator("#new-session").click()
    expect(page.locator("#start-panel")).to_be_visible()
    upload(page, fake)
    expect(page.locator("#notice")).to_contain_text("Could not start from holiday.jpg", timeout=TURN)
    expect(page.locator("#photo-title")).to_contain_text("astronaut.jpg")
    assert captions(page) == history
    assert page.locator("#chat").inner_text() == chat
    shot(page, "6-bad-upload")
    context.close()


def test_two_browsers_never_see_each_other(server, browser, photo_file):
    url, _, _ = server
    path, _ = photo_file
    ctx_a, a = open_studio(browser, url)
    ctx_b, b = open_studio(browser, url)

    upload(a, path)
    wait_for_photo(a, "astronaut.jpg")
    demo_names = [t.strip().lower() for t in b.locator("#demo-photos .caption-label").all_inner_texts()]
    b.locator("#demo-photos button.thumbnail-item").nth(demo_names.index("coffee")).click()
    wait_for_photo(b, "coffee.jpg")

    send(a, "make it a little warmer")
    expect(a.locator("#chat")).to_contain_text("make it a little warmer", timeout=TURN)
    expect(a.locator("#instruction textarea")).to_be_editable(timeout=TURN)

    b.reload()
    wait_for_photo(b, "coffee.jpg")
    assert "a little warmer" not in b.locator("#chat").inner_text()
    b.locator("#my-sessions input").click()
    expect(b.locator("[data-testid=dropdown-option]").first).to_be_visible()
    options_b = " ".join(b.locator("[data-testid=dropdown-option]").all_inner_texts())
    assert "coffee" in options_b and "astronaut" not in options_b, options_b
    b.keyboard.press("Escape")
    assert len(b.locator("#gallery .caption-label").all_inner_texts()) == 1

    a.reload()
    wait_for_photo(a, "astronaut.jpg")
    expect(a.locator("#chat")).to_contain_text("make it a little warmer", timeout=TURN)
    ctx_a.close()
    ctx_b.close()


def test_a_server_restart_resumes_the_session(server, browser):
    url, _, relaunch = server
    context, page = open_studio(browser, url)
    page.locator("#demo-photos button.thumbnail-item").first.click()
    wait_for_photo(page, ".jpg")
    title = page.locator("#photo-title").inner_text().split("·")[0].strip()

    relaunch()   # a new Studio and a new app on the same database, folder and port
    page.reload()
    wait_for_photo(page, title)
    context.close()
