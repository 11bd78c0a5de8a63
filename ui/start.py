"""Header and start panel: my sessions, new session, upload or demo photo, style, review mode, judge schema.

The judge schema (``Studio.list_schemas("quality")``) shapes what the quality
judge returns for the session (``start_session(quality_schema=...)``); the
folded "Shape the judge's output" panel makes a new one from a pasted example
output (``Studio.generate_schema``), after which it is offered in the list.

Also owns page load: the browser's remembered resume token is validated with
``Studio.resume`` and the session comes back exactly as it was left.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import html

import gradio as gr

from agent.service import AtelierError, SessionNotFound
from ui import browser, views
from ui.session_view import SessionView, as_dict, run_action, view_outputs, view_updates


#: What the example box shows before anything is pasted.
EXAMPLE_PLACEHOLDER = ('{"score": 0.82, "assessment": "Warmer, as asked; skin stays natural.",\n'
                       ' "composition_score": 0.7, "mood": "warm nostalgic"}')


def create_ui(c: dict, *, demo_photos: list[Path], styles: list[str], default_review_mode: str,
              quality_schemas: list[str] | None = None) -> None:
    with gr.Row(elem_id="studio-header"):
        with gr.Column(scale=3, min_width=0):
            gr.HTML('<h1>Atelier</h1><div class="tagline">Talk to your photo. Every version kept, nothing re-encoded.</div>')
            c["model_badge"] = gr.HTML("", elem_id="model-badge")
        c["sessions"] = gr.Dropdown(label="My sessions", choices=[], value=None, elem_id="my-sessions",
                                    scale=3, min_width=0, interactive=True)
        c["new_session"] = gr.Button("New session", elem_id="new-session", scale=1, min_width=120, size="md")
    c["notice"] = gr.Markdown("", elem_id="notice")
    with gr.Column(elem_id="start-panel", visible=True) as c["start_panel"]:
        with gr.Row(equal_height=False, elem_id="start-row"):
            with gr.Column(scale=3, min_width=0):
                c["upload"] = gr.File(
                    label="Upload a photo (JPEG, PNG, TIFF, WebP)", file_count="single",
                    file_types=["image", ".tif", ".tiff"], type="filepath", elem_id="upload", height=260)
            with gr.Column(scale=4, min_width=0):
                c["demo_photos"] = gr.Gallery(
                    value=[(str(p), p.stem.title()) for p in demo_photos], label="…or pick a demo photo",
                    columns=4, rows=1, height=190, allow_preview=False, object_fit="cover",
                    elem_id="demo-photos", interactive=False, buttons=[])
                c["style"] = gr.Dropdown(label="Look (optional)", choices=views.look_choices(styles), value="",
                                         info="Applied once, as version 1; after that your words lead.",
                                         elem_id="style", min_width=0, interactive=True)
        # For people who tune the agent: how often to ask, and what the judge reports.
        with gr.Accordion("Advanced", open=False, elem_id="advanced"):
            with gr.Row():
                c["review_mode"] = gr.Radio(label="Review each turn", choices=list(views.REVIEW_MODES),
                                            value=default_review_mode, elem_id="review-mode", scale=2, min_width=0)
                c["quality_schema"] = gr.Dropdown(
                    label="Judge schema", choices=list(quality_schemas or ["default"]), value="default",
                    elem_id="quality-schema", scale=1, min_width=0, interactive=True)
            with gr.Accordion("Shape the judge's output", open=False, elem_id="schema-panel"):
                gr.Markdown("Paste one example of what you want the judge to report (a JSON object) and name it: "
                            "Atelier infers a schema from it, with `score` and `assessment` kept from the default, "
                            "and offers it under **Judge schema**. A vision model fills every field; the built-in "
                            "judge fills what it can measure and marks the rest as not assessed.",
                            elem_id="schema-help")
                with gr.Row(equal_height=False):
                    with gr.Column(scale=3, min_width=0):
                        c["schema_example"] = gr.Textbox(label="Example output (JSON)", lines=5, max_lines=14,
                                                         placeholder=EXAMPLE_PLACEHOLDER, elem_id="schema-example")
                        with gr.Row(equal_height=True):
                            c["schema_name"] = gr.Textbox(label="Schema name", placeholder="e.g. cinematographer",
                                                          max_lines=1, elem_id="schema-name", scale=3, min_width=0)
                            c["generate_schema"] = gr.Button("Make schema", elem_id="generate-schema", scale=1,
                                                             min_width=120)
                    with gr.Column(scale=4, min_width=0):
                        c["schema_status"] = gr.Markdown("", elem_id="schema-status")
                        c["schema_yaml"] = gr.Code("", language="yaml", label="The new schema", interactive=False,
                                                   visible=False, elem_id="schema-yaml", max_lines=18)
        c["cancel_start"] = gr.Button("Back to my photo", elem_id="cancel-start", size="sm", visible=False)


def _session_outputs(c: dict) -> list:
    return view_outputs(c) + [c["sid"], c["browser"], c["sessions"], c["notice"], c["cancel_start"]]


def show_session(c: dict, sv: SessionView, sid: str | None, browser_value: Any,
                 *, notice: str = "") -> dict:
    """Full refresh for a newly opened session, with the 'My sessions' list and browser memory."""
    mine = browser.normalized(browser_value)
    choices, stale = sv.remembered_sessions(mine["tokens"])
    for token in stale:
        mine = browser.without(mine, token)
    current = mine["current"] if any(t == mine["current"] for _, t in choices) else None
    out = view_updates(c, sv.build(sid), sv)
    out.update({
        c["sid"]: sid,
        c["browser"]: mine,
        c["sessions"]: gr.update(choices=choices, value=current),
        c["notice"]: notice,
        c["cancel_start"]: gr.update(visible=False),
    })
    return out


def create_event_handlers(c: dict, sv: SessionView, *, demo_photos: list[Path]) -> None:
    studio = sv.studio
    outputs = _session_outputs(c)

    def on_load(browser_value):
        mine = browser.normalized(browser_value)
        sid = None
        if mine["current"]:
            try:
                sid = as_dict(studio.resume(mine["current"]))["id"]
            except SessionNotFound:
                mine = browser.without(mine, mine["current"])
        return show_session(c, sv, sid, mine)

    def start(image, filename, style, review_mode, quality_schema, browser_value):
        """A new session; a look chosen up front is then applied once, as its own first version."""
        try:
            info = as_dict(studio.start_session(image, review_mode=review_mode or None, filename=filename,
                                                quality_schema=quality_schema or None))
        except AtelierError as exc:
            # The current session stays exactly as it was: only the message changes.
            gr.Warning(str(exc))
            yield {c["notice"]: f"**Could not start from {filename or 'that file'}.** {exc}", c["upload"]: None}
            return
        out = show_session(c, sv, info["id"], browser.with_current(browser_value, info["resume_token"]))
        out[c["upload"]] = None
        out[c["style"]] = ""        # the look menu never carries a choice into the next session
        yield out
        if not style:
            return
        # The look is a version of its own (version 1); the person's words after it are followed as said.
        yield from run_action(c, sv, info["id"], lambda progress: studio.apply_skill(info["id"], style,
                                                                                    progress=progress),
                              failed=lambda exc: {c["notice"]: f"The look could not be applied: {exc}",
                                                  c["turn_progress"]: gr.update(value="", visible=False)})

    def start_from_upload(path, style, review_mode, quality_schema, browser_value):
        if not path:
            return
        yield from start(Path(path), Path(path).name, style, review_mode, quality_schema, browser_value)

    def start_from_demo(style, review_mode, quality_schema, browser_value, evt: gr.SelectData):
        photo = demo_photos[int(evt.index)]  # index into the server's own list: no client path is trusted
        yield from start(photo, photo.name, style, review_mode, quality_schema, browser_value)

    def badge():
        """Which brain plans the edits (``Studio.model_status()``, where the service has it)."""
        status = getattr(studio, "model_status", None)
        try:
            return views.model_badge(status() if callable(status) else None)
        except Exception:  # noqa: BLE001 - a badge never breaks the page
            return ""

    def schema_choices(current):
        names = list(studio.list_schemas("quality"))
        return gr.update(choices=names, value=current if current in names else "default")

    def make_schema(example, name, current, request: gr.Request):
        name = (name or "").strip()
        try:
            # an anonymous visitor is one browser session: schemas.max_per_visitor bounds what it makes
            made = studio.generate_schema(example or "", agent="quality", name=name,
                                          visitor=getattr(request, "session_hash", None) or "anonymous")
        except AtelierError as exc:
            return {c["schema_status"]: f"**Could not make that schema.** {html.escape(str(exc))}",
                    c["schema_yaml"]: gr.update(value="", visible=False),
                    c["quality_schema"]: schema_choices(current)}
        added = ", ".join(f"<code>{html.escape(f)}</code>" for f in made["fields"])
        kept = "keeps the default score and assessment and adds" if made.get("extends") else "has the fields"
        return {
            c["schema_status"]: (f"Saved **{html.escape(made['name'])}** (`quality/custom/{made['name']}.yaml`): "
                                 f"it {kept} {added}. It is selected under **Judge schema** for your next session."),
            c["schema_yaml"]: gr.update(value=made["yaml"], visible=True),
            c["quality_schema"]: schema_choices(made["name"]),
        }

    def switch(token, browser_value):
        if not token:
            return gr.skip()  # no session: nothing to update ({} would read as one value)
        try:
            info = as_dict(studio.resume(token))
        except SessionNotFound:
            return show_session(c, sv, None, browser.without(browser_value, token),
                                notice="That session no longer exists.")
        return show_session(c, sv, info["id"], browser.with_current(browser_value, token))

    def open_start(sid):
        return {c["start_panel"]: gr.update(visible=True), c["cancel_start"]: gr.update(visible=bool(sid)),
                c["notice"]: ""}

    def close_start():
        return {c["start_panel"]: gr.update(visible=False), c["cancel_start"]: gr.update(visible=False)}

    heavy = dict(concurrency_id="studio", api_visibility="private", show_progress="minimal")
    c["demo"].load(on_load, [c["browser"]], outputs, concurrency_id="view", api_visibility="private",
                   show_progress="minimal")
    c["upload"].upload(start_from_upload, [c["upload"], c["style"], c["review_mode"], c["quality_schema"],
                                           c["browser"]], outputs + [c["upload"], c["style"]], **heavy)
    c["demo_photos"].select(start_from_demo, [c["style"], c["review_mode"], c["quality_schema"], c["browser"]],
                            outputs + [c["upload"], c["style"]], **heavy)
    c["demo"].load(badge, None, c["model_badge"], queue=False, api_visibility="private")
    # The list is read again on each page load (schemas made in another tab or with the CLI).
    c["demo"].load(schema_choices, [c["quality_schema"]], c["quality_schema"], queue=False,
                   api_visibility="private")
    c["generate_schema"].click(make_schema, [c["schema_example"], c["schema_name"], c["quality_schema"]],
                               [c["schema_status"], c["schema_yaml"], c["quality_schema"]],
                               concurrency_id="view", api_visibility="private", show_progress="minimal")
    c["sessions"].input(switch, [c["sessions"], c["browser"]], outputs, concurrency_id="view",
                        api_visibility="private", show_progress="minimal")
    c["new_session"].click(open_start, [c["sid"]], [c["start_panel"], c["cancel_start"], c["notice"]],
                           queue=False, api_visibility="private")
    c["cancel_start"].click(close_start, None, [c["start_panel"], c["cancel_start"]], queue=False,
                            api_visibility="private")
