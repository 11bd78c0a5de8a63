"""What the studio gives away to anyone who opens it, checked against the real app on 127.0.0.1.

- ``/config`` (read by every visitor's page) carries the browser-state key, which must be derived
  from the secret, never the secret itself (set through ``ATELIER_BROWSER_SECRET`` here); a browser
  still gets its session back after a reload with the derived key.
- Anonymous visitors making judge schemas in the page (real Chromium): a few per browser session,
  a bounded number in all, a bounded example size; each refusal says which bound was met and
  writes nothing.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from conftest import copy_shipped_schemas, free_port
from test_app_browser import TURN, open_studio, upload, wait_for_photo
from ui import browser as browser_memory

SECRET = "operator-secret-" + "s3cr3t" * 6


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from agent.config import load_config
    from agent.service import Studio
    from app import create_app

    root = copy_shipped_schemas(tmp_path_factory.mktemp("schemas"))
    sessions = tmp_path_factory.mktemp("sessions")
    config = load_config().with_overrides(max_custom=4, max_per_visitor=2)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ATELIER_BROWSER_SECRET", SECRET)
        studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions,
                        schemas_root=root, config=config)
        demo, options = create_app(studio)
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
        yield f"http://127.0.0.1:{port}/", studio, root
        demo.close()
        studio.close()


def test_config_publishes_a_derived_key_never_the_secret(server):
    url, _, _ = server
    config = httpx.get(url + "config", timeout=30)
    assert config.status_code == 200
    assert SECRET not in config.text
    assert browser_memory.public_key(SECRET) in config.text          # what the browser encrypts with
    assert browser_memory.public_key(SECRET) == browser_memory.public_key(SECRET)   # stable across restarts
    assert browser_memory.public_key(SECRET) != browser_memory.public_key(SECRET + "x")


def test_a_reload_still_finds_the_session_with_the_derived_key(server, browser, tmp_path):
    url, _, _ = server
    from PIL import Image
    from skimage import data as skdata

    photo = tmp_path / "coffee.jpg"
    Image.fromarray(skdata.coffee()).save(photo, quality=90)
    context, page = open_studio(browser, url)
    upload(page, photo)
    wait_for_photo(page, "coffee.jpg")
    page.reload()
    wait_for_photo(page, "coffee.jpg")                 # the browser state was read back: the session resumed
    context.close()


def make(page, name: str, example: str):
    page.locator("#schema-example textarea").fill(example)
    page.locator("#schema-name input").fill(name)
    page.locator("#generate-schema").click()
    return page.locator("#schema-status")


def example(field: str) -> str:
    return f'{{"score": 0.8, "assessment": "ok", "{field}": 0.5}}'


def test_visitors_make_a_bounded_number_of_bounded_schemas(server, browser):
    url, _, root = server
    custom = root / "quality" / "custom"
    before = sorted(p.name for p in custom.iterdir())
    assert len(before) == 1                                   # the shipped cinematographer

    context, page = open_studio(browser, url)
    page.locator("#schema-panel").get_by_text("Shape the judge's output").click()
    status = make(page, "huge", '{"score": 0.8, "x": "' + "a" * 20_100 + '"}')
    expect(status).to_contain_text("too long", timeout=TURN)
    status = make(page, "deep", '{"score": 0.8, "x": ' + "[" * 30 + "1" + "]" * 30 + "}")
    expect(status).to_contain_text("nested more than", timeout=TURN)
    for i in (1, 2):
        expect(make(page, f"mine{i}", example(f"field{i}"))).to_contain_text(f"Saved mine{i}", timeout=TURN)
    status = make(page, "mine3", example("field3"))
    expect(status).to_contain_text("the most one visitor may make", timeout=TURN)
    context.close()

    other, page = open_studio(browser, url)                   # a second visitor: their own allowance ...
    page.locator("#schema-panel").get_by_text("Shape the judge's output").click()
    expect(make(page, "theirs1", example("other1"))).to_contain_text("Saved theirs1", timeout=TURN)
    status = make(page, "theirs2", example("other2"))         # ... but the studio keeps 4 custom schemas at most
    expect(status).to_contain_text("keeps 4 custom schemas", timeout=TURN)
    other.close()
    assert sorted(p.name for p in custom.iterdir()) == sorted(before + ["mine1.yaml", "mine2.yaml", "theirs1.yaml"])
