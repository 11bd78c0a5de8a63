"""Bottom: every version of the photo, kept path first then abandoned branches; click to view one."""

from __future__ import annotations

import gradio as gr

from ui.session_view import SessionView, view_outputs, view_updates


def create_ui(c: dict) -> None:
    c["gallery"] = gr.Gallery(label="History — version · score", elem_id="gallery", columns=9, rows=1, height=185, fit_columns=False,
                              allow_preview=False, object_fit="cover", interactive=False, buttons=[])


def create_event_handlers(c: dict, sv: SessionView) -> None:
    def show_version(sid, ids, evt: gr.SelectData):
        if not sid or not ids or not 0 <= int(evt.index) < len(ids):
            return gr.skip()  # no session: nothing to update ({} would read as one value)
        out = view_updates(c, sv.build(sid, selected=ids[int(evt.index)]), sv)
        out.pop(c["gallery"])  # keep the gallery (and its highlighted thumbnail) as it is
        return out

    c["gallery"].select(show_version, [c["sid"], c["gallery_ids"]], view_outputs(c), concurrency_id="view",
                        api_visibility="private", show_progress="hidden")
