"""Right column: every adjustment as a slider, grouped by the registry's stages, plus the local layers.

Editable at any time: dragging a slider re-renders the proxy live
(``Studio.preview``, nothing recorded; the newest drag position wins), and
releasing it records a version (``Studio.set_values``: a turn without the
planner; with a turn under review it modifies that turn). Double-click resets
a slider to its default (the page script in ui/theme.py). The widgets are
derived from ``Studio.ops_table()`` once, when the page is built
(:func:`ui.views.widget_for`: sliders, choices; rows it cannot edit are left
out); the local layers use a fixed pool of sliders filled from the shown state.
"""

from __future__ import annotations

import gradio as gr

from ui import views
from ui.session_view import LAYER_POOL, LAYER_SLIDERS, SessionView, as_dict, view_outputs, view_updates


def create_ui(c: dict, ops_table: list[dict]) -> None:
    c["adj_names"] = []       # op name of each global widget, in order
    c["adj_widgets"] = []     # the widgets themselves
    c["adj_defaults"] = {}
    with gr.Column(elem_id="adjustments"):
        gr.HTML('<h2 class="panel-title" id="adjustments-title">Adjustments</h2>')
        c["adj_summary"] = gr.Markdown("", elem_id="adjustments-summary")
        for i, (stage, title, rows) in enumerate(views.slider_groups(ops_table)):
            with gr.Accordion(title, open=i == 0, elem_id=f"stage-{stage}", elem_classes=["adj-stage"]):
                for row in rows:
                    spec, name = row["widget"], str(row["name"])
                    label = str(row.get("label") or name)
                    if spec["type"] == "choice":
                        widget = gr.Dropdown(choices=spec["choices"], value=spec["default"], label=label,
                                             elem_id=f"adj-{name}", elem_classes=["adj-choice"], interactive=False)
                    else:
                        widget = gr.Slider(spec["minimum"], spec["maximum"], value=spec["default"], step=spec["step"],
                                           label=label, elem_id=f"adj-{name}", interactive=False, buttons=[],
                                           elem_classes=["adj-slider", f"adj-default-{spec['default']}".replace(".", "_")])
                    c["adj_names"].append(name)
                    c["adj_widgets"].append(widget)
                    c["adj_defaults"][name] = spec["default"]
        with gr.Accordion("Local layers", open=True, elem_id="local-layers", visible=False) as c["layers_group"]:
            c["layer_titles"], c["layer_sliders"], c["layer_boxes"] = [], [], []
            for i in range(LAYER_POOL):
                with gr.Column(visible=False, elem_id=f"layer-{i}", elem_classes=["adj-layer"]) as box:
                    c["layer_titles"].append(gr.Markdown("", elem_id=f"layer-{i}-title"))
                    c["layer_sliders"].append([
                        gr.Slider(-100, 100, value=0, step=1, visible=False, interactive=False, buttons=[],
                                  elem_id=f"layer-{i}-slider-{j}", elem_classes=["adj-slider", "adj-default-0"])
                        for j in range(LAYER_SLIDERS)])
                c["layer_boxes"].append(box)
    gr.HTML('<h2 class="panel-title">This turn</h2>')
    c["sub_goals"] = gr.Markdown("", elem_id="sub-goals")


def slider_inputs(c: dict) -> list:
    return list(c["adj_widgets"]) + [s for row in c["layer_sliders"] for s in row]


def read_sliders(c: dict, base: dict | None, values: tuple) -> tuple[dict, dict]:
    """Widget positions -> (global values that differ from the base, {layer index: values that differ})."""
    base = base or {}
    n = len(c["adj_widgets"])
    settings = views.changed_settings(c["adj_names"], values[:n], base.get("settings") or {}, c["adj_defaults"])
    layers = {}
    slots = views.layer_slots(base, [], LAYER_POOL, LAYER_SLIDERS)
    rest = values[n:]
    state_layers = list(base.get("layers") or [])
    for i, slot in enumerate(slots):
        if not slot["visible"]:
            continue
        names = [s["name"] for s in slot["sliders"]]
        got = views.changed_settings(names, rest[i * LAYER_SLIDERS:(i + 1) * LAYER_SLIDERS],
                                     state_layers[i].get("settings") or {})
        if got:
            layers[i] = got
    return settings, layers


def create_event_handlers(c: dict, sv: SessionView) -> None:
    from agent.service import AtelierError

    studio = sv.studio
    inputs = [c["sid"], c["adj_base"], *slider_inputs(c)]

    def preview(sid, base, *values):
        if not sid or not base:
            return gr.skip()
        settings, layers = read_sliders(c, base, values)
        try:
            path = studio.preview(sid, settings, layers=layers or None)
            before = sv.stage(studio.original_path(sid, long_side=sv.compare_side), for_display=True)
        except AtelierError as exc:
            return {c["notice"]: str(exc)}
        alt = "After: a live preview of your slider values (not kept yet)"
        return {c["compare"]: (before, sv.stage(path)), c["compare_alt"]: views.alt_json(views.BEFORE_ALT, alt),
                c["notice"]: ""}

    def commit(sid, base, *values):
        if not sid or not base:
            return {}
        settings, layers = read_sliders(c, base, values)
        if not settings and not layers:
            out = view_updates(c, sv.build(sid), sv)   # back to the recorded version (e.g. released where it was)
            return out
        try:
            result = as_dict(studio.set_values(sid, settings, layers=layers or None))
        except AtelierError as exc:
            gr.Warning(str(exc))
            out = view_updates(c, sv.build(sid), sv)   # the sliders go back to the recorded values
            out[c["notice"]] = str(exc)
            return out
        out = view_updates(c, sv.build(sid, turn_result=result), sv)
        out[c["notice"]] = "  \n".join(f"⚠️ {w}" for w in result.get("warnings") or [])
        return out

    sliders = slider_inputs(c)
    gr.on([w.input for w in sliders if isinstance(w, gr.Slider)], preview, inputs,
          [c["compare"], c["compare_alt"], c["notice"]], trigger_mode="always_last", concurrency_id="preview",
          concurrency_limit=2, show_progress="hidden", api_visibility="private", queue=True)
    commits = [w.release for w in sliders if isinstance(w, gr.Slider)]
    commits += [w.input for w in sliders if isinstance(w, gr.Dropdown)]
    gr.on(commits, commit, inputs, view_outputs(c) + [c["notice"]], trigger_mode="always_last",
          concurrency_id="studio", show_progress="hidden", api_visibility="private")
