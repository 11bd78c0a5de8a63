"""The review panel, shown while a turn waits: approve, modify, roll back, replan.

The person may also just keep talking (the next message keeps the version
under review). Modify uses the Adjustments panel's sliders, which move the
version under review with the same live preview; the button takes the focus
there (to the first op the turn touched).
"""

from __future__ import annotations

import gradio as gr

from ui.session_view import SessionView, as_dict, progress_updates, run_with_progress, view_outputs, view_updates

#: Runs in the browser on Modify: open the stage that holds the first touched op and focus its slider.
FOCUS_SLIDER_JS = """() => {
  const [stage, name] = ((document.querySelector('#modify-target textarea, #modify-target input') || {}).value || '|').split('|');
  const focus = (tries) => {
    const box = document.getElementById('adj-' + name);
    const range = box && box.querySelector('input[type=range]');
    if (range) { range.focus(); range.scrollIntoView({block: 'center'}); return; }
    if (tries > 20) return;
    setTimeout(() => focus(tries + 1), 100);
  };
  if (!document.getElementById('adj-' + name)) {
    const acc = document.getElementById('stage-' + stage);
    const toggle = acc && acc.querySelector('button, .label-wrap');
    if (toggle) toggle.click();
  }
  focus(0);
}"""


def create_ui(c: dict) -> None:
    with gr.Column(elem_id="review-panel", visible=False) as c["review_panel"]:
        c["review_md"] = gr.Markdown("", elem_id="review-summary")
        with gr.Row():
            c["approve"] = gr.Button("Approve", elem_id="approve", variant="primary", min_width=90)
            c["modify"] = gr.Button("Modify", elem_id="modify", min_width=90)
            c["rollback"] = gr.Button("Roll back", elem_id="rollback", min_width=90)
            c["replan"] = gr.Button("Replan", elem_id="replan", min_width=90)
        c["replan_feedback"] = gr.Textbox(show_label=False, elem_id="replan-feedback", lines=1, max_lines=2,
                                          container=False,
                                          placeholder="For a replan: say in one line what should change")
        # The op the Modify button focuses (read by FOCUS_SLIDER_JS; hidden, but in the page).
        c["modify_target"] = gr.Textbox("", visible="hidden", elem_id="modify-target", show_label=False,
                                        container=False)


def create_event_handlers(c: dict, sv: SessionView) -> None:
    from agent.service import AtelierError

    studio = sv.studio

    def act(sid, action, **kwargs):
        """Run a review action with live progress (a modify or replan re-renders and re-judges)."""
        if not sid:
            yield {c["notice"]: "Start with a photo first."}
            return
        result = None
        for kind, item in run_with_progress(lambda progress: studio.review(sid, action, progress=progress, **kwargs)):
            if kind == "event":
                yield progress_updates(c, sv, item)
            elif kind == "error":
                if not isinstance(item, AtelierError):
                    raise item
                # Nothing changed in the session; say why and leave the panel as it is.
                gr.Warning(str(item))
                yield {c["notice"]: str(item), c["turn_progress"]: gr.update(value="", visible=False)}
                return
            else:
                result = as_dict(item)
        out = view_updates(c, sv.build(sid, turn_result=result), sv)
        out[c["notice"]] = "  \n".join(f"⚠️ {w}" for w in result.get("warnings") or [])
        yield out

    def approve(sid):
        yield from act(sid, "approve")

    def rollback(sid):
        pending = as_dict(studio.pending_review(sid)) if sid else {}
        parent = sv.parent_of(sid, pending["asset_id"]) if pending else None
        if not parent:
            yield {c["notice"]: "Nothing to roll back to."}
            return
        yield from act(sid, "rollback", target=parent)

    def replan(sid, feedback):
        feedback = (feedback or "").strip()
        if not feedback:
            yield {c["notice"]: "Say in one line what should change, then press Replan."}
            return
        yield from act(sid, "replan", feedback=feedback)

    def open_modify():
        return {c["notice"]: "Move the sliders under Adjustments: the photo follows live, and releasing one "
                             "applies it to this turn (it is judged again)."}

    outputs = view_outputs(c) + [c["notice"]]
    common = dict(concurrency_id="studio", api_visibility="private", show_progress="minimal",
                  show_progress_on=[c["review_md"]])
    c["approve"].click(approve, [c["sid"]], outputs, **common)
    c["rollback"].click(rollback, [c["sid"]], outputs, **common)
    c["replan"].click(replan, [c["sid"], c["replan_feedback"]], outputs, **common)
    c["modify"].click(open_modify, None, [c["notice"]], js=FOCUS_SLIDER_JS, queue=False, api_visibility="private")
