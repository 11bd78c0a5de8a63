"""The studio's named API through ``gradio_client``, against the real app on 127.0.0.1.

Also: what the server refuses to serve (the sessions folder and the database),
and the pure functions that turn service records into what the panels show.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from gradio_client import Client, handle_file
from gradio_client.exceptions import AppError
from PIL import Image
from skimage import data as skdata

from conftest import free_port
from ui import browser, views

ENDPOINTS = {"/start_session", "/edit", "/review", "/history", "/export"}



@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    from agent.service import Studio
    from app import create_app

    sessions = tmp_path_factory.mktemp("sessions")
    studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions)
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}/", sessions
    demo.close()
    studio.close()


@pytest.fixture(scope="module")
def client(app_url):
    return Client(app_url[0], verbose=False)


@pytest.fixture(scope="module")
def coffee(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("photos") / "coffee.png"
    Image.fromarray(skdata.coffee()).save(path)
    return path


def test_only_the_named_endpoints_are_public(client):
    assert set(client.view_api(print_info=False, return_format="dict")["named_endpoints"]) == ENDPOINTS


def test_a_whole_session_through_the_api(client, coffee, tmp_path):
    s = client.predict(handle_file(str(coffee)), "", "always", api_name="/start_session")
    token = s["resume_token"]
    assert (s["width"], s["height"]) == (600, 400) and s["title"] == "coffee.png"

    turn = client.predict(token, "make it warmer and brighter", api_name="/edit")
    assert turn["status"] == "awaiting_review"
    assert {g["op"] for g in turn["sub_goals"]} >= {"temperature", "exposure"}
    assert 0.0 <= turn["score"] <= 1.0
    assert "rendered_path" not in turn and "rendered_path" not in (turn["review"] or {})

    # Out-of-range modify names the op; the session is unchanged.
    with pytest.raises(AppError, match="exposure"):
        client.predict(token, "modify", {"exposure": 500}, "", "", api_name="/review")
    modified = client.predict(token, "modify", {"exposure": 35}, "", "", api_name="/review")
    assert {o["name"]: o["value"] for o in modified["review"]["ops"]}["exposure"] == 35

    approved = client.predict(token, "approve", None, "", "", api_name="/review")
    assert approved["status"] in ("approved", "auto_approved")

    history = client.predict(token, api_name="/history")
    head = [a for a in history if a["is_head"]]
    assert len(head) == 1 and head[0]["state"]["settings"]["exposure"] == 35
    assert history[0]["status"] == "original"

    # Export the approved version at full resolution, as TIFF.
    path = client.predict(token, "", "tiff", api_name="/export")
    with Image.open(path) as im:
        assert im.format == "TIFF" and im.size == (600, 400)
        edited = im.convert("RGB")
    original = Image.open(coffee).convert("RGB")
    assert edited.getpixel((300, 200)) != original.getpixel((300, 200))

    # Roll back to the original (turn 0): the head moves, the turn stays in the history.
    rolled = client.predict(token, "rollback", None, "0", "", api_name="/review")
    assert rolled["status"] == "rolled_back"
    after = client.predict(token, api_name="/history")
    assert [a["turn"] for a in after if a["is_head"]] == [0]
    assert len(after) == len(history)
    path = client.predict(token, history[0]["id"], "png", api_name="/export")
    with Image.open(path) as im:
        assert im.convert("RGB").tobytes() == original.tobytes()   # rollback is bit-exact


def test_a_session_with_the_cinematographer_judge_schema(client, coffee):
    s = client.predict(handle_file(str(coffee)), "", "always", "cinematographer", api_name="/start_session")
    assert s["quality_schema"] == "cinematographer"
    turn = client.predict(s["resume_token"], "make it warmer and brighter", api_name="/edit")
    assert turn["status"] == "awaiting_review"
    # The schema's custom fields come back with the turn and the review: measured where the built-in
    # judge can (the colour grade), None (= not assessed) where only a vision model could say.
    assert set(turn["fields"]) == {"composition_score", "lighting_quality", "mood", "color_grade"}
    assert turn["fields"]["color_grade"] == "warm" and turn["fields"]["composition_score"] is None
    assert turn["review"]["fields"] == turn["fields"]
    assert any("composition_score" in w for w in turn["warnings"])
    with pytest.raises(AppError, match="unknown quality schema 'noir'"):
        client.predict(handle_file(str(coffee)), "", "", "noir", api_name="/start_session")


def test_the_api_describes_itself(client):
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    for name, endpoint in endpoints.items():
        assert endpoint["description"].strip(), name
        for p in endpoint["parameters"]:
            assert p["python_type"]["description"].strip(), (name, p["parameter_name"])

    def params(name):
        return {p["parameter_name"]: p for p in endpoints[name]["parameters"]}

    # every call after the first names its session by the resume token
    for name in ("/edit", "/review", "/history", "/export"):
        assert list(params(name))[0] == "resume_token", (name, list(params(name)))
        assert not params(name)["resume_token"]["parameter_has_default"]
    assert not params("/edit")["message"]["parameter_has_default"]
    # optional inputs are optional, with their defaults; menus list their allowed values
    start, review, export = params("/start_session"), params("/review"), params("/export")
    assert not start["image"]["parameter_has_default"]
    assert all(start[k]["parameter_has_default"] for k in ("style", "review_mode", "quality_schema"))
    assert "'always'" in start["review_mode"]["python_type"]["type"] and "'film'" in start["style"]["python_type"]["type"]
    assert all(review[k]["parameter_has_default"] for k in ("action", "values", "target", "feedback"))
    assert review["action"]["python_type"]["type"] == "Literal['approve', 'modify', 'rollback', 'replan']"
    assert export["fmt"]["python_type"]["type"] == "Literal['jpeg', 'png', 'tiff', 'webp']"
    assert export["fmt"]["parameter_default"] == "jpeg" and export["asset_id"]["parameter_has_default"]
    text = client.view_api(print_info=False, return_format="str")
    assert "resume_token: str (required)" in text and "fmt: Literal['jpeg', 'png', 'tiff', 'webp'] (not required" in text


def test_export_files_carry_their_formats_extension(client, coffee):
    s = client.predict(handle_file(str(coffee)), api_name="/start_session")     # every option left to its default
    client.predict(resume_token=s["resume_token"], message="warmer", api_name="/edit")
    for fmt, ext, kind in (("tiff", ".tif", "TIFF"), ("webp", ".webp", "WEBP"), ("png", ".png", "PNG"),
                           ("jpeg", ".jpg", "JPEG")):
        path = Path(client.predict(resume_token=s["resume_token"], fmt=fmt, api_name="/export"))
        assert path.name == f"coffee-v1{ext}", path.name
        with Image.open(path) as im:
            assert im.format == kind and im.size == (600, 400)
    with pytest.raises(AppError, match="fmt"):
        client.predict(resume_token=s["resume_token"], fmt="gif", api_name="/export")


def test_live_slider_previews_answer_only_their_own_session(app_url, client, coffee):
    import io

    import httpx

    from ui import browser, live

    url, sessions = app_url
    s = client.predict(handle_file(str(coffee)), api_name="/start_session")
    key = live.preview_key(browser.browser_secret(sessions), s["id"])

    def ask(**params):
        return httpx.get(url + live.PREVIEW_PATH.lstrip("/"), params={"key": key, "where": "adj-exposure",
                                                                      "value": "40", **params})

    shown = ask()
    assert shown.status_code == 200 and shown.headers["content-type"] == "image/jpeg"
    with Image.open(io.BytesIO(shown.content)) as im:
        brighter = im.convert("RGB")
    original = Image.open(coffee).convert("RGB")
    assert brighter.size == original.size and sum(brighter.getpixel((300, 200))) > sum(original.getpixel((300, 200)))
    assert ask(key=key[:-4] + ("0000" if not key.endswith("0000") else "1111")).status_code == 403   # forged
    assert ask(key="").status_code == 403
    assert "where" in ask(where="adj-exposure; drop").text and ask(where="adj-nosuch").status_code == 400
    assert ask(value="nan").status_code == 400 and ask(value="400").status_code == 400
    # a preview records nothing
    assert [a["turn"] for a in client.predict(resume_token=s["resume_token"], api_name="/history")] == [0]


def test_bad_input_gets_a_message_not_a_session(client, tmp_path):
    fake = tmp_path / "notes.jpg"
    fake.write_text("not a photo at all\n" * 50)
    with pytest.raises(AppError) as err:
        client.predict(handle_file(str(fake)), "", "", api_name="/start_session")
    assert str(err.value).strip()
    with pytest.raises(AppError, match="resume token"):
        client.predict("not-a-real-token-at-all-0000", api_name="/history")
    with pytest.raises(AppError, match="style"):
        client.predict(handle_file(str(Path(__file__).resolve().parent.parent / "assets" / "rocket.jpg")),
                       "no-such-look", "", api_name="/start_session")


def test_sessions_and_database_are_never_served(app_url, client, coffee):
    import httpx

    url, sessions = app_url
    client.predict(handle_file(str(coffee)), "", "never", api_name="/start_session")
    files = [p for p in sessions.rglob("*") if p.is_file()]
    assert any(p.name == "atelier.db" for p in files)
    assert any(p.name.startswith("original") for p in files)
    for path in files:
        r = httpx.get(f"{url}gradio_api/file={path}")
        assert r.status_code in (403, 404), (path, r.status_code)
    # The demo photos, on the other hand, are meant to be public.
    demo_photo = Path(__file__).resolve().parent.parent / "assets" / "coffee.jpg"
    assert httpx.get(f"{url}gradio_api/file={demo_photo}").status_code == 200


# -- the pure functions behind the panels ------------------------------------------------

TABLE = [{"name": "exposure", "label": "Exposure", "stage": "white-balance-tone-contrast", "min": -100, "max": 100,
          "plus": "brighter, up to +2 EV", "minus": "darker, down to -2 EV"},
         {"name": "temperature", "label": "Temperature", "stage": "color-temperature", "min": -100, "max": 100,
          "plus": "warmer (more amber)", "minus": "cooler (bluer)"}]


def _asset(id_, turn, status, parent=None, score=None, head=False, on_path=True, **settings):
    return {"id": id_, "parent_id": parent, "turn": turn, "status": status, "score": score, "is_head": head,
            "on_head_path": on_path, "state": {"settings": settings, "layers": []}}


def test_history_numbers_versions_in_order_with_variants_and_rolled_back_branches():
    history = [_asset("o", 0, "original"),
               _asset("a", 1, "approved", "o", 0.81, exposure=20, temperature=30),
               # turn 2 was refused (no version); turn 3 was replanned once, then kept
               _asset("b1", 3, "rejected", "a", 0.41, exposure=20, temperature=30, ),
               _asset("b2", 3, "approved", "a", 0.77, on_path=False, exposure=-10, temperature=30),
               # turn 4 rolled back to version 1; turn 5 is under review after a modify
               _asset("c1", 5, "pending", "a", 0.6, on_path=False, exposure=20, temperature=10),
               _asset("c2", 5, "pending", "a", 0.7, on_path=False, exposure=20, temperature=-5)]
    history[1]["is_head"] = True
    entries = views.version_entries(history, TABLE, pending_id="c2")
    assert [e["number"] for e in entries] == ["0", "1", "2", "2b", "3", "3b"]
    assert [e["asset"]["id"] for e in entries] == ["o", "a", "b2", "b1", "c2", "c1"]
    assert entries[1]["caption"] == "1 · warmer, brighter · 0.81 · current"
    assert entries[2]["caption"] == "2 · darker · 0.77 · rolled back"
    assert entries[3]["state_word"] == "variant" and entries[3]["variant"]
    assert entries[4]["caption"] == "3 · cooler · 0.70 · in review"          # one 'in review', never two
    assert entries[5]["state_word"] == "variant"
    assert entries[0]["caption"] == "0 · original"
    assert "Version 1: warmer, brighter, score 0.81, current" == entries[1]["name"]


def test_change_words_read_like_a_photographer():
    before = {"settings": {"exposure": 10}, "layers": []}
    after = {"settings": {"exposure": 10, "temperature": -40},
             "layers": [{"mask": {"type": "sky"}, "settings": {"exposure": -20}}]}
    assert views.change_words(before, after, TABLE) == "cooler, sky: darker"
    assert views.change_words(after, after, TABLE) == "no change"
    # an op's words come from the registry; one without a word for a way reads as a person says it
    assert views.change_words({}, {"settings": {"grain": 30}}, TABLE) == "heavy grain"   # the registry's words
    assert views.change_words({"settings": {"grain": 50}}, {"settings": {}}, TABLE) == "no grain"


def test_widgets_come_from_the_rows_and_unknown_kinds_never_crash():
    assert views.widget_for(TABLE[0])["type"] == "slider"
    angle = views.widget_for({"name": "straighten", "kind": "angle", "min": -45, "max": 45, "step": 0.5})
    assert angle == {"type": "slider", "minimum": -45, "maximum": 45, "step": 0.5, "default": 0}
    choice = views.widget_for({"name": "aspect", "kind": "choice", "choices": ["free", "1:1"], "default": "free"})
    assert choice["type"] == "choice" and choice["choices"] == [("free", "free"), ("1:1", "1:1")]
    aspect = views.widget_for({"name": "crop_aspect", "kind": "choice", "min": 0, "max": 2, "default": 0,
                               "choices": ["original", "1:1", "4:5"]})
    assert aspect["choices"] == [("original", 0), ("1:1", 1), ("4:5", 2)]
    assert views.widget_for({"name": "mystery", "kind": "hologram"}) is None
    assert views.widget_for({"name": "broken", "kind": "choice"}) is None
    groups = views.slider_groups(TABLE + [{"name": "mystery", "kind": "hologram", "stage": "x"}])
    assert [(stage, title) for stage, title, _ in groups] == [("white-balance-tone-contrast", "Light and contrast"),
                                                             ("color-temperature", "White balance")]


def test_sliders_send_only_what_moved():
    assert views.changed_settings(["exposure", "temperature"], [20.0, 40], {"exposure": 20, "temperature": 25}) \
        == {"temperature": 40}
    assert views.changed_settings(["exposure"], [0], {}) == {}
    slots = views.layer_slots({"layers": [{"mask": {"type": "sky"}, "settings": {"exposure": -20}}]}, TABLE, 2, 3)
    assert [s["visible"] for s in slots] == [True, False]
    assert slots[0]["title"] == "Local: the sky"
    assert [(x["name"], x["value"], x["visible"]) for x in slots[0]["sliders"]] == \
        [("exposure", -20, True), ("", 0, False), ("", 0, False)]


def test_looks_read_as_words():
    assert views.look_choices(["black_and_white", "moody_film"]) == [
        ("None", ""), ("Black and white", "black_and_white"), ("Moody film", "moody_film")]
    assert views.quick_replies({"quick_replies": ["Yes", "  ", "Yes", "The sky only"]}, 4) == ["Yes", "The sky only"]
    assert "badge-fallback" in views.model_badge({"state": "fallback", "label": "Built-in fallback"})
    assert views.model_badge(None) == ""


def test_browser_memory_survives_junk():
    assert browser.normalized("garbage") == browser.empty()
    v = browser.with_current(browser.with_current(None, "tok-a"), "tok-b")
    assert v == {"current": "tok-b", "tokens": ["tok-b", "tok-a"]}
    assert browser.without(v, "tok-b") == {"current": None, "tokens": ["tok-a"]}


def test_review_commands_read_as_words():
    log = [{"role": "user", "content": "/rollback 3f2a9c"}, {"role": "assistant", "content": "Rolled back."},
           {"role": "user", "content": "/modify exposure=30"}, {"role": "assistant", "content": ""}]
    assert views.chat_messages(log) == [{"role": "user", "content": "_Rolled back_"},
                                        {"role": "assistant", "content": "Rolled back."},
                                        {"role": "user", "content": "_Modified: Exposure +30_"}]


def test_the_progress_line_lights_the_current_step():
    line = views.progress_html({"stage": "executor", "status": "running", "fraction": 0.35,
                                "message": "Applying 2 adjustments: temperature +25, exposure +20"})
    assert 'data-step="planner">Plan' in line and 'class="tp-step tp-done" data-step="planner"' in line
    assert 'class="tp-step tp-active" data-step="executor"' in line
    assert 'class="tp-step tp-todo" data-step="quality"' in line
    assert "width:35%" in line and "Applying 2 adjustments: temperature +25, exposure +20" in line
    assert "<script>" not in views.progress_html({"stage": "quality", "message": "<script>x</script>"})
    assert views.progress_html(None) == ""


def test_custom_fields_not_assessed_read_as_a_dash():
    md = views.review_markdown({"turn": 1, "score": 0.8, "assessment": "ok", "dimensions": {},
                                "fields": {"composition_score": None, "shot": {"lens_mm": 50}, "mood": "calm"}})
    assert 'class="metric custom-field not-assessed" title="not assessed"' in md
    assert "None" not in md and "lens mm 50" in md and ">calm<" in md
