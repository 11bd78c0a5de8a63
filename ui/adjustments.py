"""Right column: every adjustment as a slider, grouped by the registry's stages, plus the local layers.

Editable at any time: dragging a slider re-renders the proxy live (the page
script asks ``ui/live.py``'s route for ``Studio.preview``, nothing recorded,
one request at a time, only the newest position), and releasing it records a
version (``Studio.set_values``: a turn without the planner; with a turn under
review it modifies that turn). Double-click resets a slider to its default
(the page script in ui/theme.py holds a release back for a moment, so the
first click of a double-click never records a version). The widgets are
derived from ``Studio.ops_table()`` once, when the page is built
(:func:`ui.views.widget_for`: sliders, choices; rows it cannot edit are left
out); the local layers use a fixed pool of sliders filled from the shown state.
"""

from __future__ import annotations

import gradio as gr

from agent.service import AtelierError
from ui import views
from ui.session_view import LAYER_POOL, LAYER_SLIDERS, SessionView, as_dict, view_outputs, view_updates


def create_ui(c: dict, ops_table: list[dict]) -> None:
    c["adj_names"] = []       # op name of each global widget, in order
    c["adj_widgets"] = []     # the widgets themselves
    c["adj_defaults"] = {}
    with gr.Column(elem_id="adjustments"):
        gr.HTML('<h2 class="panel-title" id="adjustments-title">Adjustments</h2>')
        c["adj_summary"] = gr.Markdown("", elem_id="adjustments-summary")
        groups = views.slider_groups(ops_table)
        # light and contrast opens first (the sliders people reach for); else the first stage
        first = next((g[0] for g in groups if g[0] == "white-balance-tone-contrast"), groups[0][0] if groups else "")
        c["adj_stages"] = {}      # stage -> its fold (Modify opens the one it focuses)
        for stage, title, rows in groups:
            with gr.Accordion(title, open=stage == first, elem_id=f"stage-{stage}",
                              elem_classes=["adj-stage"]) as c["adj_stages"][stage]:
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
        # the live-preview key of the session shown (read by the page script; ui/live.py)
        c["preview_key"] = gr.Textbox("", visible="hidden", elem_id="preview-key", show_label=False,
                                      container=False)
    gr.HTML('<h2 class="panel-title">This turn</h2>')
    c["sub_goals"] = gr.Markdown("", elem_id="sub-goals")


def moved_value(c: dict, base: dict | None, where: tuple, value) -> tuple[dict, dict]:
    """One widget's position -> (global values, {layer index: values}) that differ from the base.

    ``where`` is ``("global", op name)`` or ``("layer", layer index, slot)``. Only the widget the
    person moved counts, so a slider never writes back a stale value of another one.
    """
    base = base or {}
    if where[0] == "global":
        name = where[1]
        return views.changed_settings([name], [value], base.get("settings") or {}, c["adj_defaults"]), {}
    _, i, j = where
    slots = views.layer_slots(base, [], LAYER_POOL, LAYER_SLIDERS)
    if i >= len(slots) or not slots[i]["visible"]:
        return {}, {}
    name = slots[i]["sliders"][j]["name"]
    layers = list(base.get("layers") or [])
    got = views.changed_settings([name], [value], layers[i].get("settings") or {})
    return {}, ({i: got} if got else {})


def create_event_handlers(c: dict, sv: SessionView) -> None:
    studio = sv.studio

    def commit(sid, base, value, where):
        if not sid or not base:
            return gr.skip()  # no session: nothing to update ({} would read as one value)
        settings, layers = moved_value(c, base, where, value)
        if not settings and not layers:
            # released where it was (or a number box lost the focus): only the photo goes back to the
            # recorded version; the sliders are left alone (the person may be moving another one)
            out = view_updates(c, sv.build(sid), sv)
            return {c["compare"]: out[c["compare"]], c["compare_alt"]: out[c["compare_alt"]]}
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

    widgets = [(w, ("global", name)) for name, w in zip(c["adj_names"], c["adj_widgets"])]
    widgets += [(w, ("layer", i, j)) for i, row in enumerate(c["layer_sliders"]) for j, w in enumerate(row)]
    commit_out = view_outputs(c) + [c["notice"]]
    for widget, where in widgets:
        # each widget its own listener: it knows which value moved (and sends one number, not all of them)
        def on_commit(sid, base, value, _where=where):
            return commit(sid, base, value, _where)

        inputs = [c["sid"], c["adj_base"], widget]
        if isinstance(widget, gr.Slider):
            # live previews while it moves come from the page script (ui/live.py), not the queue
            widget.release(on_commit, inputs, commit_out, trigger_mode="always_last", concurrency_id="studio",
                           show_progress="hidden", api_visibility="private")
        else:
            widget.input(on_commit, inputs, commit_out, concurrency_id="studio", show_progress="hidden",
                         api_visibility="private")
