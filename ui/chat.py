"""Middle column: the conversation and the instruction box; runs a turn with visible progress."""

from __future__ import annotations

import gradio as gr

from ui import views
from ui.session_view import SessionView, as_dict, view_outputs, view_updates


def create_ui(c: dict) -> None:
    c["chat"] = gr.Chatbot(label="Conversation", elem_id="chat", height=330, show_label=False,
                           layout="bubble", buttons=["copy"], feedback_options=None,
                           placeholder="Ask for a change in your own words: “warmer and brighter”, "
                                       "“the sky is too bright”, “give it a moody film look”, “undo that”.")
    with gr.Row(equal_height=True):
        c["instruction"] = gr.Textbox(show_label=False, elem_id="instruction", scale=5, lines=1, max_lines=4,
                                      placeholder="Tell me what to change, e.g. “make it warmer and brighter”",
                                      autofocus=True, submit_btn=False, container=False)
        c["send"] = gr.Button("Send", elem_id="send", variant="primary", scale=1, min_width=80)


def create_event_handlers(c: dict, sv: SessionView) -> None:
    from agent.service import AtelierError

    studio = sv.studio

    def run_turn(text, sid, chat, progress=gr.Progress()):
        text = (text or "").strip()
        if not sid:
            yield {c["notice"]: "Start with a photo first."}
            return
        if not text:
            return
        # Show the message and a working bubble at once; the turn itself can take seconds.
        yield {
            c["chat"]: list(chat or []) + views.working_message(text),
            c["instruction"]: gr.update(value="", interactive=False),
            c["send"]: gr.update(interactive=False),
            c["sub_goals"]: "_Planning the edit…_",
            c["notice"]: "",
        }
        progress(0.1, desc="Planning, rendering and checking…")
        try:
            result = as_dict(studio.send_message(sid, text))
        except AtelierError as exc:
            gr.Warning(str(exc))
            out = view_updates(c, sv.build(sid), sv)
            out[c["notice"]] = str(exc)
            out[c["instruction"]] = gr.update(value=text, interactive=True)
            yield out
            return
        progress(0.9, desc="Updating the studio…")
        out = view_updates(c, sv.build(sid, turn_result=result), sv)
        out[c["notice"]] = "  \n".join(f"⚠️ {w}" for w in result.get("warnings") or [])
        yield out

    outputs = view_outputs(c) + [c["notice"]]
    for trigger in (c["send"].click, c["instruction"].submit):
        trigger(run_turn, [c["instruction"], c["sid"], c["chat"]], outputs, concurrency_id="studio",
                api_visibility="private", show_progress="minimal", show_progress_on=[c["sub_goals"]])
