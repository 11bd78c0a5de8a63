"""Right column: the shown version's adjustments as readable slider values, and the turn's sub-goals."""

from __future__ import annotations

import gradio as gr


def create_ui(c: dict) -> None:
    gr.HTML('<div class="panel-title">Adjustments</div>')
    c["adjustments"] = gr.HTML("", elem_id="adjustments", js_on_load=None)
    gr.HTML('<div class="panel-title">This turn</div>')
    c["sub_goals"] = gr.Markdown("", elem_id="sub-goals")


def create_event_handlers(c: dict, sv) -> None:
    """Read-only panel: it is refreshed by every other panel's handlers."""
