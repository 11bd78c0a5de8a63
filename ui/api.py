"""Named endpoints for programmatic use through ``gradio_client``.

``/start_session``, ``/edit``, ``/review``, ``/history``, ``/export``. Every
call after the first names its session by the resume token that
``/start_session`` returned (the same capability a browser holds), never by a
raw id. Errors arrive as ``gradio_client`` ``AppError`` with the service's
message for a person.

    from gradio_client import Client, handle_file
    client = Client("http://127.0.0.1:7860/")
    s = client.predict(handle_file("photo.jpg"), api_name="/start_session")     # style, review_mode ... optional
    token = s["resume_token"]
    turn = client.predict(resume_token=token, message="make it warmer", api_name="/edit")
    client.predict(resume_token=token, action="approve", api_name="/review")
    path = client.predict(resume_token=token, fmt="webp", api_name="/export")    # ".../photo-v1.webp"

``client.view_api()`` lists every parameter with its allowed values (``Literal[...]``),
its default when it is optional, and a sentence on what it means.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gradio as gr

from agent.service import AtelierError, SessionNotFound
from ui.session_view import SessionView, as_dict
from ui.views import REVIEW_MODES, export_name

#: Server paths mean nothing to a remote caller (and should not leak); these keys are dropped.
_SERVER_ONLY = ("rendered_path",)


def public(record: Any) -> Any:
    """A record as JSON for a remote caller, without server-side file paths."""
    if isinstance(record, dict):
        return {k: public(v) for k, v in record.items() if k not in _SERVER_ONLY}
    if isinstance(record, (list, tuple)):
        return [public(v) for v in record]
    return record


#: Export formats an API caller may ask for (any of them gets its own extension: .jpg .png .tif .webp).
FORMATS = ("jpeg", "png", "tiff", "webp")
ACTIONS = ("approve", "modify", "rollback", "replan")


def described(component: Any, text: str) -> Any:
    """``component`` whose API schema carries ``text`` as its description (shown by ``view_api()``)."""
    schema = component.api_info

    def api_info() -> dict:
        return {**schema(), "additional_description": text}

    component.api_info = api_info
    return component


def create_ui(c: dict, styles: list[str] | None = None, schemas: list[str] | None = None) -> None:
    # Hidden components: they give each endpoint typed inputs (a real file upload for
    # /start_session, checked by Gradio to come from its upload folder) and outputs. A menu
    # documents its allowed values; the service still checks every value and names a bad one.
    def menu(label: str, choices, value, text: str) -> gr.Dropdown:
        return described(gr.Dropdown(choices=list(choices), value=value, label=label, allow_custom_value=True), text)

    with gr.Column(visible=False):
        c["api_image"] = described(gr.File(label="image", type="filepath"),
                                   "the photo to edit: JPEG, PNG, TIFF or WebP (handle_file(path))")
        c["api_style"] = menu("style", [""] + list(styles or []), "",
                              "a look applied once as version 1 ('' = none)")
        c["api_review_mode"] = menu("review_mode", [""] + [v for _, v in REVIEW_MODES], "",
                                    "when a turn waits for your review ('' = the studio's default)")
        c["api_quality_schema"] = menu("quality_schema", list(schemas or ["default"]), "default",
                                       "what the judge reports (an output schema name)")
        c["api_token"] = described(gr.Textbox(label="resume_token"),
                                   "the resume_token /start_session returned: names your session")
        c["api_message"] = described(gr.Textbox(label="message"),
                                     "what to change, in your words ('make it warmer', 'undo', 'what did you change?')")
        c["api_action"] = menu("action", ACTIONS, "approve", "your decision on the version under review")
        c["api_values"] = described(gr.JSON(label="values"),
                                    "for modify: {op: value}, e.g. {\"exposure\": 20} (ops as in the studio's sliders)")
        c["api_target"] = described(gr.Textbox("", label="target"),
                                    "for rollback: a version id, or a turn number ('0' = the original)")
        c["api_feedback"] = described(gr.Textbox("", label="feedback"),
                                      "for replan: in one line, what should change")
        c["api_asset"] = described(gr.Textbox("", label="asset_id"), "the version to export ('' = the current one)")
        c["api_format"] = menu("fmt", FORMATS, "jpeg", "file format of the full-resolution export")
        c["api_result"] = gr.JSON(label="result")
        c["api_file"] = gr.File(label="file")


def create_event_handlers(c: dict, sv: SessionView) -> None:
    studio = sv.studio

    def session_id(token: str) -> str:
        try:
            return as_dict(studio.resume((token or "").strip()))["id"]
        except SessionNotFound:
            raise gr.Error("Unknown or expired resume token: start a session first.") from None

    def guarded(fn):
        @functools.wraps(fn)   # keeps the signature: parameter names and optional ones stay for gradio_client
        def call(*args):
            try:
                return fn(*args)
            except AtelierError as exc:
                raise gr.Error(str(exc)) from None
        return call

    @guarded
    def start_session(image, style="", review_mode="", quality_schema="default"):
        """Start a session from a photo; returns the session (keep its resume_token for every other call).

        A style (a look) is applied once, as version 1; the session's words lead after that.
        """
        if not image:
            raise gr.Error("image: upload a photo (JPEG, PNG, TIFF or WebP).")
        style = (style or "").strip()
        if style and style not in studio.styles():
            raise gr.Error(f"style: unknown look {style!r}; choose one of {', '.join(studio.styles())}")
        info = studio.start_session(Path(image), review_mode=(review_mode or "").strip() or None,
                                    filename=Path(image).name,
                                    quality_schema=(quality_schema or "").strip() or None)
        if style:
            studio.apply_skill(info.id, style)
            info = studio.session(info.id)
        return public(as_dict(info))

    @guarded
    def edit(resume_token, message):
        """Send one message; returns the turn (status, reply, sub_goals, score, review), or the answer to a
        question (status "answered", no new version)."""
        return public(as_dict(studio.send_message(session_id(resume_token), message or "")))

    @guarded
    def review(resume_token, action="approve", values=None, target="", feedback=""):
        """Decide on the version under review: approve | modify (values) | rollback (target) | replan (feedback)."""
        kwargs: dict[str, Any] = {}
        if values:
            kwargs["values"] = values
        if target not in (None, ""):
            kwargs["target"] = target
        if feedback:
            kwargs["feedback"] = feedback
        return public(as_dict(studio.review(session_id(resume_token), (action or "").strip(), **kwargs)))

    @guarded
    def history(resume_token):
        """Every version of the session's photo, oldest first, each with its number ("version": "0", "1", "2b")."""
        return public([as_dict(a) for a in studio.history(session_id(resume_token))])

    @guarded
    def export(resume_token, asset_id="", fmt="jpeg"):
        """The full-resolution file of the current version (or of asset_id) in fmt: jpeg, png, tiff or webp;
        named like the studio's downloads ('photo-v3.webp')."""
        sid = session_id(resume_token)
        fmt = (fmt or "jpeg").strip().lower()
        asset_id = (asset_id or "").strip() or None
        path = studio.export(sid, asset_id, fmt=fmt)
        info = as_dict(studio.session(sid))
        chosen = asset_id or info.get("head_asset_id")
        version = next((as_dict(a).get("version") for a in studio.history(sid) if as_dict(a)["id"] == chosen), None)
        return sv.stage(path, export_name(str(info.get("title") or "photo"), version, path.suffix))

    def t(fn, inputs, outputs, **kwargs):
        # No trigger in the page: these exist only as named API endpoints.
        gr.on([], fn, inputs, outputs, **kwargs)

    heavy = dict(concurrency_id="studio", show_progress="hidden")
    t(start_session, [c["api_image"], c["api_style"], c["api_review_mode"], c["api_quality_schema"]], c["api_result"],
      api_name="start_session", **heavy)
    t(edit, [c["api_token"], c["api_message"]], c["api_result"], api_name="edit", **heavy)
    t(review, [c["api_token"], c["api_action"], c["api_values"], c["api_target"], c["api_feedback"]],
      c["api_result"], api_name="review", **heavy)
    t(history, [c["api_token"]], c["api_result"], api_name="history", concurrency_id="view", show_progress="hidden")
    t(export, [c["api_token"], c["api_asset"], c["api_format"]], c["api_file"], api_name="export", **heavy)
