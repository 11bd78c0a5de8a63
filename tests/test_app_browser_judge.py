"""Judge schemas and live turn progress, as a person meets them in the browser.

Real Chromium (Debian's) against the real app on 127.0.0.1, with the real
Studio: the embedded planner and judge (each made 1.5 seconds slower, as a
vision model would be, so the steps of a turn stay on screen long enough to
be seen), SQLite in a temporary folder, and a private copy of the shipped
schemas (``Studio(schemas_root=...)``) so a schema made in the page never
lands in the repository.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from PIL import Image
from skimage import data as skdata

from playwright.sync_api import expect

from conftest import copy_shipped_schemas, free_port
from test_app_browser import TURN, open_studio, upload, wait_for_photo

REPO = Path(__file__).resolve().parents[1]
DELAY_S = 1.5   # long enough for a loaded browser to render each stage it is sent


class Slow:
    """The real planner or judge, answering ``DELAY_S`` later (everything else passes through)."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def plan(self, request):
        time.sleep(DELAY_S)
        return self._inner.plan(request)

    def assess(self, request):
        time.sleep(DELAY_S)
        return self._inner.assess(request)



@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from agent.judging import default_judge
    from agent.planning import default_planner
    from agent.service import Studio
    from app import create_app

    root = copy_shipped_schemas(tmp_path_factory.mktemp("schemas"))
    sessions = tmp_path_factory.mktemp("sessions")
    studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions,
                    planner=Slow(default_planner()), judge=Slow(default_judge()), schemas_root=root)
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}/", studio, root
    demo.close()
    studio.close()



@pytest.fixture(scope="module")
def photo(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("photos") / "coffee.jpg"
    Image.fromarray(skdata.coffee()).save(path, quality=90)
    return path


#: Records every text the progress line and the sub-goals panel show, in order (a MutationObserver).
RECORD = """() => {
  window.__seen = {progress: [], goals: []};
  const note = (list, el) => { const t = el ? el.innerText.trim() : '';
                               if (t && list[list.length - 1] !== t) list.push(t); };
  new MutationObserver(() => {
    note(window.__seen.progress, document.querySelector('#turn-progress .tp-message'));
    note(window.__seen.goals, document.querySelector('#sub-goals'));
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def choose_schema(page, name: str) -> None:
    page.locator("#quality-schema input").click()
    page.get_by_role("option", name=name, exact=True).click()
    expect(page.locator("#quality-schema input")).to_have_value(name)


def send(page, text: str) -> None:
    page.locator("#instruction textarea").fill(text)
    page.locator("#send").click()


def test_a_turn_shows_its_steps_while_it_runs(server, browser, photo):
    url, studio, _ = server
    context, page = open_studio(browser, url)
    page.locator("#review-mode label", has_text="Always ask me").click()
    upload(page, photo)
    wait_for_photo(page, "coffee.jpg")
    page.evaluate(RECORD)

    send(page, "make it warmer and brighter")
    line = page.locator("#turn-progress .tp-message")
    expect(line).to_have_text("Judging…", timeout=TURN)            # caught live, mid-turn
    expect(page.locator("#turn-progress .tp-step.tp-active")).to_have_text("Judge")
    expect(page.locator("#turn-progress .tp-step.tp-done")).to_have_text(["Plan", "Apply"])
    expect(page.locator("#send")).to_be_disabled()
    expect(page.locator("#chat")).to_contain_text("Judging…")        # the working bubble says it too

    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    seen = page.evaluate("() => window.__seen")
    progress = seen["progress"]
    assert progress[0] == "Planning…", progress
    applying = next(i for i, t in enumerate(progress) if re.match(r"Applying \d adjustments?: .*temperature \+\d+", t))
    judging = progress.index("Judging…")
    assert 0 < applying < judging, progress
    assert progress[-1] == "Waiting for your review", progress
    # The sub-goals appeared in the right column as they ran: planned/running first, then applied.
    assert any("◐" in g and "Temperature" in g for g in seen["goals"]), seen["goals"]

    # The finished turn looks exactly as the service says: the progress line is gone.
    expect(page.locator("#turn-progress")).to_be_hidden()
    sid = studio.list_sessions()[0].id
    pending = studio.pending_review(sid)
    expect(panel).to_contain_text(f"Score {pending.score:.2f}")
    goals = page.locator("#sub-goals li")
    expect(goals).to_have_count(len(pending.sub_goals))
    assert all(t.startswith("✓") for t in goals.all_inner_texts())
    reply = studio.chat_log(sid)[-1]["content"]
    expect(page.locator("#chat .message").last).to_contain_text(reply[:40])
    expect(page.locator("#chat")).not_to_contain_text("Judging…")

    # A review action reports its steps too, and ends as the service says.
    page.locator("#approve").click()
    expect(panel).to_be_hidden(timeout=TURN)
    expect(page.locator("#gallery .caption-label")).to_have_count(2, timeout=TURN)
    assert studio.head(sid).status == "approved"
    expect(page.locator("#send")).to_be_enabled()
    context.close()


def test_the_cinematographer_schema_shows_its_fields(server, browser, photo):
    url, studio, _ = server
    context, page = open_studio(browser, url)
    choose_schema(page, "cinematographer")
    page.locator("#review-mode label", has_text="Always ask me").click()
    upload(page, photo)
    wait_for_photo(page, "coffee.jpg")
    expect(page.locator("#photo-title")).to_contain_text("judge cinematographer")
    send(page, "make it warmer and brighter")
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    chips = panel.locator(".metric.custom-field .metric-name")
    expect(chips).to_have_text(["composition score", "lighting quality", "mood", "color grade"])
    expect(panel.locator(".metric.custom-field", has_text="color grade")).to_contain_text("warm")
    expect(panel.locator(".metric.custom-field", has_text="composition score")).to_contain_text("–")
    context.close()


def test_shape_the_judges_output_then_use_it(server, browser, photo):
    url, studio, root = server
    repo_custom = sorted((REPO / "schemas" / "quality" / "custom").iterdir())
    context, page = open_studio(browser, url)
    page.locator("#schema-panel").get_by_text("Shape the judge's output").click()
    example = page.locator("#schema-example textarea")
    expect(example).to_be_visible()

    # A typo in the JSON is named, and nothing is made.
    example.fill('{"score": 0.8, "assessment": "warm", composition_score: 0.7}')
    page.locator("#schema-name input").fill("noir")
    page.locator("#generate-schema").click()
    status = page.locator("#schema-status")
    expect(status).to_contain_text("Could not make that schema", timeout=TURN)
    expect(status).to_contain_text("not valid JSON")
    expect(page.locator("#schema-yaml")).to_be_hidden()
    assert not (root / "quality" / "custom" / "noir.yaml").exists()

    # A taken name is refused too.
    example.fill('{"score": 0.8, "assessment": "warm", "composition_score": 0.7, "brightness": 0.5}')
    page.locator("#schema-name input").fill("cinematographer")
    page.locator("#generate-schema").click()
    expect(status).to_contain_text("already exists", timeout=TURN)

    page.locator("#schema-name input").fill("noir")
    page.locator("#generate-schema").click()
    expect(status).to_contain_text("Saved noir", timeout=TURN)
    expect(status).to_contain_text("composition_score")
    expect(page.locator("#schema-yaml")).to_contain_text("extends: default")
    expect(page.locator("#schema-yaml")).to_contain_text("composition_score")
    expect(page.locator("#quality-schema input")).to_have_value("noir")       # selected for the next session
    assert (root / "quality" / "custom" / "noir.yaml").is_file()
    assert sorted((REPO / "schemas" / "quality" / "custom").iterdir()) == repo_custom

    page.locator("#review-mode label", has_text="Always ask me").click()
    upload(page, photo)
    wait_for_photo(page, "coffee.jpg")
    expect(page.locator("#photo-title")).to_contain_text("judge noir")
    send(page, "make it warmer and brighter")
    panel = page.locator("#review-panel")
    expect(panel).to_be_visible(timeout=TURN)
    expect(panel.locator(".metric.custom-field .metric-name")).to_have_text(["composition score", "brightness"])

    # Another tab offers the new schema in its list.
    other = context.new_page()
    other.goto(url)
    # The tab opens on the session this browser already has; wait for that page load to finish (it hides the
    # start panel) before asking for a new session, or the late load hides the panel again under our click.
    wait_for_photo(other, "coffee.jpg")
    other.locator("#new-session").click()
    expect(other.locator("#upload")).to_be_visible(timeout=TURN)
    expect(other.locator("#demo-photos img").first).to_be_visible(timeout=TURN)
    other.locator("#advanced").get_by_text("Advanced").first.click(timeout=TURN)
    choose_schema(other, "noir")
    context.close()
