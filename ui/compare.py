"""Left column: before/after slider, the shown version's score and summary, roll back, export."""

from __future__ import annotations

import gradio as gr

from agent.service import AtelierError
from ui.session_view import SessionView, as_dict, view_outputs, view_updates
from ui.views import export_name

#: Export formats as the person reads them -> the service's ``fmt``.
EXPORT_FORMATS = (("JPEG", "jpeg"), ("PNG", "png"), ("TIFF", "tiff"), ("WebP", "webp"))


def create_ui(c: dict) -> None:
    c["photo_title"] = gr.Markdown("", elem_id="photo-title")
    c["compare"] = gr.ImageSlider(label="Before / after", type="filepath", elem_id="compare", interactive=False,
                                  height=520, max_height=520, slider_position=50, buttons=["fullscreen"],
                                  show_label=False)
    # Alt texts of the two photos (which version is shown), applied by the page script (ui/theme.py).
    c["compare_alt"] = gr.Textbox("", visible="hidden", elem_id="compare-alt", show_label=False, container=False)
    c["score"] = gr.Markdown("", elem_id="score")
    with gr.Row(equal_height=True, elem_id="photo-tools"):
        c["undo"] = gr.Button("↶ Undo", elem_id="undo", size="sm", min_width=80, scale=0, interactive=False)
        c["redo"] = gr.Button("↷ Redo", elem_id="redo", size="sm", min_width=80, scale=0, interactive=False)
        c["rollback_to"] = gr.Button("Roll back to this version", elem_id="rollback-to", variant="primary",
                                     visible=False, size="sm", min_width=180)
        c["export_format"] = gr.Radio(choices=list(EXPORT_FORMATS), value="jpeg", show_label=False,
                                      elem_id="export-format", container=False, min_width=200, scale=2)
        c["export"] = gr.Button("Export full resolution", elem_id="export", size="sm", min_width=170, scale=1)
    c["export_file"] = gr.File(label="Download", elem_id="export-file", visible=False, interactive=False, height=60)
    # The person's consent for `python -m agent.synthesize --from-sessions` (training data); off by default.
    c["shareable"] = gr.Checkbox(label="Share this session as training data", value=False, elem_id="shareable",
                                 interactive=False, container=False)


def create_event_handlers(c: dict, sv: SessionView) -> None:
    studio = sv.studio

    def rollback_to(sid, selected):
        if not sid or not selected:
            return gr.skip()  # no session: nothing to update ({} would read as one value)
        try:
            result = as_dict(studio.review(sid, "rollback", target=selected))
        except AtelierError as exc:
            gr.Warning(str(exc))
            return {c["notice"]: str(exc)}
        out = view_updates(c, sv.build(sid, turn_result=result), sv)
        out[c["notice"]] = ""
        return out

    def export_for_download(sid, selected, fmt):
        if not sid:
            return {c["notice"]: "Start with a photo first."}
        try:
            info = as_dict(studio.session(sid))
            asset_id = selected or info.get("head_asset_id")
            version = next((as_dict(a).get("version") for a in studio.history(sid) if as_dict(a)["id"] == asset_id),
                           None)
            path = studio.export(sid, asset_id, fmt=fmt)
        except AtelierError as exc:
            gr.Warning(str(exc))
            return {c["notice"]: str(exc)}
        staged = sv.stage(path, export_name(str(info.get("title") or "photo"), version, fmt))
        return {c["export_file"]: gr.update(value=staged, visible=True), c["notice"]: ""}

    def step(sid, which):
        """Undo or redo one version (Ctrl+Z / Ctrl+Shift+Z in the page): bit-exact, the head moves."""
        if not sid:
            return {c["notice"]: "Start with a photo first."}
        call = getattr(studio, which, None)
        if call is None:
            return {c["notice"]: f"{which.title()} is not available in this version of the service."}
        try:
            pending = as_dict(studio.pending_review(sid))
            if pending and which == "undo":
                # Undo while a turn waits: drop that turn's version (the review's Roll back), bit-exact
                result = as_dict(studio.review(sid, "rollback", target=sv.parent_of(sid, pending["asset_id"])))
            else:
                result = as_dict(call(sid))
        except AtelierError as exc:
            gr.Warning(str(exc))
            return {c["notice"]: str(exc)}
        out = view_updates(c, sv.build(sid, turn_result=result), sv)
        out[c["notice"]] = ""
        return out

    def undo(sid):
        return step(sid, "undo")

    def redo(sid):
        return step(sid, "redo")

    # every press counts: a second Ctrl+Z while the first still renders is queued, not dropped
    # (Gradio's default trigger_mode, "once", drops it); the session's lease runs them one by one
    c["undo"].click(undo, [c["sid"]], view_outputs(c) + [c["notice"]], concurrency_id="studio",
                    api_visibility="private", show_progress="hidden", trigger_mode="multiple")
    c["redo"].click(redo, [c["sid"]], view_outputs(c) + [c["notice"]], concurrency_id="studio",
                    api_visibility="private", show_progress="hidden", trigger_mode="multiple")
    c["rollback_to"].click(rollback_to, [c["sid"], c["selected"]], view_outputs(c) + [c["notice"]],
                           concurrency_id="studio", api_visibility="private", show_progress="minimal")
    def share(sid, value):
        if not sid:
            return gr.skip()  # no session: nothing to update ({} would read as one value)
        try:
            info = as_dict(studio.set_shareable(sid, bool(value)))
        except AtelierError as exc:
            gr.Warning(str(exc))
            return {c["notice"]: str(exc), c["shareable"]: gr.update(value=not value)}
        return {c["shareable"]: gr.update(value=bool(info.get("shareable"))), c["notice"]: ""}

    c["shareable"].input(share, [c["sid"], c["shareable"]], [c["shareable"], c["notice"]], concurrency_id="view",
                         api_visibility="private", show_progress="hidden")
    c["export"].click(export_for_download, [c["sid"], c["selected"], c["export_format"]], [c["export_file"], c["notice"]],
                      concurrency_id="studio", api_visibility="private", show_progress="minimal")
