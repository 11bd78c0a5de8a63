"""Middle column: the conversation and the instruction box; runs a turn with live progress.

A turn is a generator handler: it shows the message at once, then one update
per progress event from ``Studio.send_message(..., progress=...)`` (the stage
line with a bar under the chat, the working bubble's text, and the sub-goals
in the right column as they are planned, applied and judged), then the
finished turn. Answers that make no version (questions, small talk, "what did
you change?") stay in the chat like any reply; a chat export ("export it as a
PNG") fills the download box. Afterwards the keyboard focus is back in the
message box (on a desktop), and on a phone the reply is scrolled into view.
"""

from __future__ import annotations

import gradio as gr

from ui import views
from ui.session_view import QUICK_POOL, SessionView, progress_updates, run_action, view_outputs, view_updates

#: Runs in the browser after each message: the focus back in the message box (desktop; a phone would pop
#: its keyboard over the reply), and on a phone the newest reply scrolled into view.
AFTER_SEND_JS = """() => {
  const phone = window.matchMedia('(max-width: 720px)').matches;
  const settle = (tries) => {
    const box = document.querySelector('#instruction textarea');
    if (!box || box.disabled) { if (tries < 50) setTimeout(() => settle(tries + 1), 100); return; }
    // the person may have moved on already (Modify, a slider, the history): never take the focus back
    const here = document.activeElement;
    const idle = !here || here === document.body || here.closest('#send, #instruction, #quick-replies');
    if (!idle) return;
    if (!phone) { box.focus({preventScroll: true}); return; }
    const replies = document.querySelectorAll('#chat [data-testid=bot]');
    const last = replies[replies.length - 1];
    if (last) last.scrollIntoView({block: 'nearest'});
  };
  setTimeout(() => settle(0), 50);
}"""

#: The first progress line, shown before the graph reports anything.
FIRST_EVENT = {"stage": "planner", "status": "running", "message": "Planning…", "fraction": 0.02, "sub_goals": []}


def create_ui(c: dict) -> None:
    # Page order is input -> Send -> review actions -> chat (the keyboard's order); CSS puts the chat
    # above the input on a desktop and below it on a phone (ui/theme.py).
    with gr.Row(equal_height=True, elem_id="input-row"):
        c["instruction"] = gr.Textbox(label="Message", show_label=False, elem_id="instruction", scale=5, lines=1,
                                      max_lines=4, placeholder="Tell me what to change, e.g. “make it warmer and brighter”",
                                      autofocus=True, submit_btn=False, container=False)
        c["send"] = gr.Button("Send", elem_id="send", variant="primary", scale=1, min_width=80)
    c["turn_progress"] = gr.HTML("", elem_id="turn-progress", visible=False)


def create_conversation(c: dict) -> None:
    """The chat and the quick replies under it (laid out after the review panel; see layout.py)."""
    c["chat"] = gr.Chatbot(label="Conversation", elem_id="chat", height=420, show_label=False,
                           layout="bubble", buttons=["copy"], feedback_options=None,
                           placeholder="Ask for a change in your own words: “warmer and brighter”, "
                                       "“the sky is too bright”, “give it a moody film look”, “undo that”.")
    with gr.Row(elem_id="quick-replies", visible=False) as c["quick_row"]:
        c["quick_replies"] = [gr.Button("…", visible=False, size="sm", elem_classes=["quick-reply"],
                                        elem_id=f"quick-reply-{i}", min_width=60) for i in range(QUICK_POOL)]


def create_event_handlers(c: dict, sv: SessionView) -> None:
    studio = sv.studio

    def run_turn(text, sid, chat):
        text = (text or "").strip()
        if not sid:
            yield {c["notice"]: "Start with a photo first."}
            return
        if not text:
            return
        before = list(chat or [])

        def working(event) -> dict:
            out = progress_updates(c, sv, event)
            out[c["chat"]] = before + views.working_message(text, str(event.get("message") or "Working…"))
            return out

        # Show the message and the first step at once; the turn itself can take seconds.
        yield {**working(FIRST_EVENT), c["instruction"]: gr.update(value="", interactive=False),
               c["send"]: gr.update(interactive=False), c["notice"]: "", c["quick_row"]: gr.update(visible=False)}
        def failed(exc) -> dict:
            # nothing changed: the session as it is, the message back in the box to edit and resend
            out = view_updates(c, sv.build(sid), sv)
            out[c["notice"]] = str(exc)
            out[c["instruction"]] = gr.update(value=text, interactive=True)
            return out

        yield from run_action(c, sv, sid, lambda progress: studio.send_message(sid, text, progress=progress),
                              event=working, failed=failed)

    outputs = view_outputs(c) + [c["notice"]]
    # always_last: a message sent while the last turn is still finishing runs right after it (never dropped)
    turn = dict(concurrency_id="studio", api_visibility="private", show_progress="hidden", trigger_mode="always_last")
    for trigger in (c["send"].click, c["instruction"].submit):
        trigger(run_turn, [c["instruction"], c["sid"], c["chat"]], outputs, **turn).then(None, js=AFTER_SEND_JS)
    # A quick reply sends its own words, like typing them.
    for button in c["quick_replies"]:
        button.click(run_turn, [button, c["sid"], c["chat"]], outputs, **turn).then(None, js=AFTER_SEND_JS)
