"""Named endpoints for programmatic use through ``gradio_client``.

``/start_session``, ``/edit``, ``/review``, ``/history``, ``/export``. Every
call after the first names its session by the resume token that
``/start_session`` returned (the same capability a browser holds), never by a
raw id. Errors arrive as ``gradio_client`` ``AppError`` with the service's
message for a person.

    from gradio_client import Client, handle_file
    client = Client("http://127.0.0.1:7860/")
    s = client.predict(handle_file("photo.jpg"), "", "always", api_name="/start_session")
    # or with a judge schema: client.predict(handle_file("photo.jpg"), "", "always", "cinematographer", ...)
    turn = client.predict(s["resume_token"], "make it warmer", api_name="/edit")
    client.predict(s["resume_token"], "approve", {}, "", "", api_name="/review")
    path = client.predict(s["resume_token"], "", "png", api_name="/export")
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import gradio as gr

from ui.compare import export_name
from ui.session_view import SessionView, as_dict

#: Server paths mean nothing to a remote caller (and should not leak); these keys are dropped.
_SERVER_ONLY = ("rendered_path",)


def public(record: Any) -> Any:
    """A record as JSON for a remote caller, without server-side file paths."""
    if isinstance(record, dict):
        return {k: public(v) for k, v in record.items() if k not in _SERVER_ONLY}
    if isinstance(record, (list, tuple)):
        return [public(v) for v in record]
    return record


def create_ui(c: dict) -> None:
    # Hidden components: they give each endpoint typed inputs (a real file upload for
    # /start_session, checked by Gradio to come from its upload folder) and outputs.
    with gr.Column(visible=False):
        c["api_image"] = gr.File(label="image", type="filepath")
        c["api_style"] = gr.Textbox(label="style")
        c["api_review_mode"] = gr.Textbox(label="review_mode")
        c["api_quality_schema"] = gr.Textbox(label="quality_schema")
        c["api_token"] = gr.Textbox(label="resume_token")
        c["api_message"] = gr.Textbox(label="message")
        c["api_action"] = gr.Textbox(label="action")
        c["api_values"] = gr.JSON(label="values")
        c["api_target"] = gr.Textbox(label="target")
        c["api_feedback"] = gr.Textbox(label="feedback")
        c["api_asset"] = gr.Textbox(label="asset_id")
        c["api_format"] = gr.Textbox(label="fmt")
        c["api_result"] = gr.JSON(label="result")
        c["api_file"] = gr.File(label="file")


def create_event_handlers(c: dict, sv: SessionView) -> None:
    from agent.service import AtelierError, SessionNotFound

    studio = sv.studio

    def session_id(token: str) -> str:
        try:
            return as_dict(studio.resume((token or "").strip()))["id"]
        except SessionNotFound:
            raise gr.Error("Unknown or expired resume token: start a session first.") from None

    def guarded(fn):
        @functools.wraps(fn)   # keeps the signature: an optional parameter stays optional for gradio_client
        def call(*args):
            try:
                return fn(*args)
            except AtelierError as exc:
                raise gr.Error(str(exc)) from None
        return call

    @guarded
    def start_session(image, style, review_mode, quality_schema=None):
        """Start a session from an image file; returns the session (keep its resume_token).

        quality_schema (optional): the judge's output schema, e.g. "cinematographer" (default "default").
        """
        if not image:
            raise gr.Error("image: upload a photo (JPEG, PNG, TIFF or WebP).")
        info = studio.start_session(Path(image), style=(style or "").strip() or None,
                                    review_mode=(review_mode or "").strip() or None, filename=Path(image).name,
                                    quality_schema=(quality_schema or "").strip() or None)
        return public(as_dict(info))

    @guarded
    def edit(token, message):
        """Send one instruction; returns the turn (status, reply, sub_goals, score, review)."""
        return public(as_dict(studio.send_message(session_id(token), message or "")))

    @guarded
    def review(token, action, values, target, feedback):
        """approve | modify (values: {op: value}) | rollback (target: asset id or turn) | replan (feedback)."""
        kwargs: dict[str, Any] = {}
        if values:
            kwargs["values"] = values
        if target not in (None, ""):
            kwargs["target"] = target
        if feedback:
            kwargs["feedback"] = feedback
        return public(as_dict(studio.review(session_id(token), (action or "").strip(), **kwargs)))

    @guarded
    def history(token):
        """Every version of the session's photo, oldest first."""
        return public([as_dict(a) for a in studio.history(session_id(token))])

    @guarded
    def export(token, asset_id, fmt):
        """Full-resolution file of the head (or of asset_id): jpeg, png or tiff."""
        sid = session_id(token)
        fmt = (fmt or "jpeg").strip().lower()
        asset_id = (asset_id or "").strip() or None
        path = studio.export(sid, asset_id, fmt=fmt)
        info = as_dict(studio.session(sid))
        chosen = asset_id or info.get("head_asset_id")
        turn = next((as_dict(a).get("turn") for a in studio.history(sid) if as_dict(a)["id"] == chosen), None)
        return sv.stage(path, export_name(str(info.get("title") or "photo"), turn, fmt if fmt in ("jpeg", "png", "tiff") else "jpeg"))

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
