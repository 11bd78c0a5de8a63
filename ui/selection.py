"""Selection panel: paint over part of the photo, or click an object, to make "the selection".

The selection is made on the untouched original (its own frame), through
``Studio.select`` (a painted mask, or a click point as fractions 0..1 of the
photo); chat then refers to it: "brighten the selection", "remove this".
The panel shows the selection tinted on the photo and how much it covers.
"""

from __future__ import annotations

from typing import Any

import gradio as gr
import numpy as np

from agent.service import AtelierError
from ui.session_view import SessionView

HELP = ("Paint over what you want to change and press **Use what I painted**, or click an object in the "
        "second picture. Then say what to do with it: “brighten the selection”, “make the selection warmer”, "
        "“remove this”.")


def painted_layer(editor_value: Any) -> np.ndarray | None:
    """The brush strokes of an ImageEditor value (its first layer's alpha), or None when nothing is painted."""
    if not isinstance(editor_value, dict):
        return None
    layers = [np.asarray(layer) for layer in editor_value.get("layers") or [] if layer is not None]
    strokes = [layer[..., 3] if layer.ndim == 3 and layer.shape[2] == 4 else layer for layer in layers]
    strokes = [s for s in strokes if s.ndim == 2 and s.any()]
    if not strokes:
        return None
    return np.maximum.reduce(strokes) if len(strokes) > 1 else strokes[0]


def click_point(evt: Any, size: tuple[int, int]) -> list[float] | None:
    """A click's pixel position on the shown picture -> [x, y] as fractions of it (None when unknown)."""
    index = getattr(evt, "index", None)
    width, height = size
    if not isinstance(index, (list, tuple)) or len(index) != 2 or width <= 0 or height <= 0:
        return None
    x, y = index
    return [min(1.0, max(0.0, (float(x) + 0.5) / width)), min(1.0, max(0.0, (float(y) + 0.5) / height))]


def status_text(made: dict) -> str:
    share = float(made.get("coverage") or 0.0)
    how = {"mask": "painted", "point": "clicked", "box": "boxed"}.get(made.get("source"), "made")
    return (f"Selection {how}: **{share:.0%}** of the photo. Say what to do with it, "
            "e.g. “brighten the selection” or “remove this”.")


def create_ui(c: dict) -> None:
    with gr.Accordion("Select part of the photo", open=False, elem_id="selection-panel"):
        gr.Markdown(HELP, elem_id="selection-help")
        c["select_brush"] = gr.ImageEditor(
            label="Paint a selection", type="numpy", elem_id="select-brush", sources=(), transforms=(),
            layers=False, brush=gr.Brush(colors=["#ff3b30"], default_color="#ff3b30", color_mode="fixed"),
            eraser=gr.Eraser(), height=360, interactive=True)
        c["select_paint"] = gr.Button("Use what I painted", elem_id="select-paint", size="sm")
        c["select_click"] = gr.Image(label="…or click an object", type="filepath", elem_id="select-click",
                                     interactive=False, height=300, buttons=[])
        c["select_status"] = gr.Markdown("", elem_id="select-status")


def create_event_handlers(c: dict, sv: SessionView) -> None:
    studio = sv.studio
    outputs = [c["select_click"], c["select_status"]]

    def made(sid: str, **given) -> dict:
        try:
            result = studio.select(sid, **given)
        except AtelierError as exc:
            gr.Warning(str(exc))
            return {c["select_status"]: f"**No selection made.** {exc}"}
        return {c["select_click"]: sv.stage(result["preview"], for_display=True),
                c["select_status"]: status_text(result)}

    def use_painted(sid, editor_value):
        if not sid:
            return {c["select_status"]: "Start with a photo first."}
        mask = painted_layer(editor_value)
        if mask is None:
            return {c["select_status"]: "Paint over part of the photo first (nothing is painted yet)."}
        return made(sid, mask=mask)

    def clicked(sid, shown, evt: gr.SelectData):
        if not sid or not shown:
            return {c["select_status"]: "Start with a photo first."}
        from PIL import Image

        with Image.open(shown) as im:
            point = click_point(evt, im.size)
        if point is None:
            return {c["select_status"]: "Click inside the photo to select an object."}
        return made(sid, point=point)

    c["select_paint"].click(use_painted, [c["sid"], c["select_brush"]], outputs, concurrency_id="studio",
                            api_visibility="private", show_progress="minimal")
    c["select_click"].select(clicked, [c["sid"], c["select_click"]], outputs, concurrency_id="studio",
                             api_visibility="private", show_progress="minimal")
