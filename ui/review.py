"""The review panel, shown while a turn waits: approve, modify, roll back, replan.

The person may also just keep talking (the next message keeps the version
under review). Modify opens the Adjustments panel's sliders on the version
under review (shown again if another version was being looked at), unfolds the
stage of the first op the turn touched and puts the focus on its slider; they
move that version with the same live preview. A replan's feedback shows in the
chat before the new plan's reply.
"""

from __future__ import annotations

import gradio as gr

from ui.session_view import SessionView, as_dict, run_action, view_outputs, view_updates

#: Runs in the browser on Modify: open the stage that holds the first touched op and focus its slider.
FOCUS_SLIDER_JS = """() => {
  const [stage, id] = ((document.querySelector('#modify-target textarea, #modify-target input') || {}).value || '|').split('|');
  const focus = (tries) => {
    const box = document.getElementById(id);
    const range = box && (box.querySelector('input[type=range]:not([disabled])') || box.querySelector('input:not([disabled])'));
    if (range) { range.focus(); range.scrollIntoView({block: 'center'}); return; }
    if (tries > 40) return;
    if (tries === 10 && !box) {   // the fold is still closed: open it
      const acc = document.getElementById(stage === 'local-layers' ? 'local-layers' : 'stage-' + stage);
      const toggle = acc && acc.querySelector('button, .label-wrap');
      if (toggle) toggle.click();
    }
    setTimeout(() => focus(tries + 1), 100);
  };
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
    studio = sv.studio

    def act(sid, action, **kwargs):
        """Run a review action with live progress (a modify or replan re-renders and re-judges)."""
        if not sid:
            yield {c["notice"]: "Start with a photo first."}
            return
        # a failed action changed nothing in the session: its message, and the panel as it is
        yield from run_action(c, sv, sid, lambda progress: studio.review(sid, action, progress=progress, **kwargs))

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

    def open_modify(sid):
        """The sliders on the version under review: shown again, its stage unfolded (the page script focuses)."""
        if not sid:
            return {c["notice"]: "Start with a photo first."}
        view = sv.build(sid)           # nothing selected: the version under review is the one shown
        if not view.pending:
            return {c["notice"]: "Nothing is waiting for your review; move any slider to change the photo."}
        out = view_updates(c, view, sv)
        stage = str(out[c["modify_target"]]).split("|")[0]
        if stage in c["adj_stages"]:
            out[c["adj_stages"][stage]] = gr.update(open=True)
        out[c["notice"]] = ("Move a slider: the photo follows live, and letting go applies it to this version "
                            "(it is judged again).")
        return out

    outputs = view_outputs(c) + [c["notice"]]
    common = dict(concurrency_id="studio", api_visibility="private", show_progress="minimal",
                  show_progress_on=[c["review_md"]])
    c["approve"].click(approve, [c["sid"]], outputs, **common)
    c["rollback"].click(rollback, [c["sid"]], outputs, **common)
    c["replan"].click(replan, [c["sid"], c["replan_feedback"]], outputs, **common)
    c["modify"].click(open_modify, [c["sid"]], outputs + list(c["adj_stages"].values()), concurrency_id="view",
                      api_visibility="private", show_progress="hidden").then(None, js=FOCUS_SLIDER_JS)
