"""Running turns on the LangGraph loop: start, resume after review, stream progress, fail cleanly.

Each turn runs on its own LangGraph thread (``<session id>:<turn>:<nonce>``),
recorded on the session row while it is in flight or waiting for review. A
finished turn lives in the store; its checkpoints are dropped.
"""

from __future__ import annotations

import secrets
from typing import Any, Callable

from langgraph.types import Command

from agent.loop.progress import progress_event
from agent.loop.state import ActionRecord, fresh_turn_state
from agent.conversation.wording import compose_reply
from agent.model.vlm import turn_deadline
from agent.service.records import ProgressFn, ReviewPayload, TurnResult
from agent.store import SessionRecord, Store


class TurnRunner:
    """The graph, its checkpointer and the store, seen as turns of one session at a time.

    ``shown_path(session_id, asset_id)``: the proxy file a result shows (or None).
    ``deadline_s``: one wall-clock deadline for a turn's model calls (planner, judge, repairs, replans).
    """

    def __init__(self, graph, checkpointer, store: Store, shown_path: Callable[[str, str | None], str | None],
                 deadline_s: float):
        self.graph, self.checkpointer, self.store = graph, checkpointer, store
        self.shown_path = shown_path
        self.deadline_s = deadline_s

    @staticmethod
    def thread_config(thread_id: str) -> dict:
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": 200}

    def interrupt(self, thread_id: str) -> dict | None:
        """The review payload a thread waits on, or None when it waits on nothing."""
        snapshot = self.graph.get_state(self.thread_config(thread_id))
        return dict(snapshot.interrupts[0].value) if snapshot.interrupts else None

    def pending(self, session: SessionRecord) -> dict | None:
        """The review payload of the session's turn under review, or None."""
        return self.interrupt(session.active_thread) if session.active_thread else None

    def message_under_review(self, session: SessionRecord) -> str:
        """What the person said for the turn under review ("" when none)."""
        if not session.active_thread:
            return ""
        return self.graph.get_state(self.thread_config(session.active_thread)).values.get("message", "")

    def abandon(self, session: SessionRecord) -> None:
        """Forget the turn in flight: its pending versions go, the head and finished turns stay."""
        thread_id = self.store.get_session(session.id).active_thread
        done = self.store.last_turn(session.id)
        stale = [a.id for a in self.store.assets(session.id) if a.status == "pending" and a.turn > done]
        self.store.delete_assets(session.id, stale)
        self.store.update_session(session.id, active_thread=None)
        if thread_id:
            self.forget(thread_id)

    def start(self, session: SessionRecord, message: str, modify_values: dict | None = None,
              progress: ProgressFn | None = None, modify_layers: list | None = None) -> TurnResult:
        """A new turn from the head: plan (or the given values), execute, judge."""
        turn = self.store.last_turn(session.id) + 1
        thread_id = f"{session.id}:{turn}:{secrets.token_hex(4)}"
        self.store.update_session(session.id, active_thread=thread_id)
        payload = fresh_turn_state(session_id=session.id, turn=turn, message=message, style=session.style,
                                   review_mode=session.review_mode, head_asset_id=session.head_asset_id,
                                   modify_values=modify_values, modify_layers=modify_layers)
        return self.run(session, thread_id, payload, turn, message, progress)

    def resume(self, session: SessionRecord, decision: dict, message: str,
               progress: ProgressFn | None = None) -> TurnResult:
        """The person's decision on the turn under review (approve, modify, rollback, replan)."""
        pending = self.pending(session) or {}
        return self.run(session, session.active_thread, Command(resume=decision),
                        int(pending.get("turn") or 0), message, progress)

    def keep_pending(self, session: SessionRecord) -> TurnResult:
        """Approve the turn under review (the person went on talking instead of deciding)."""
        return self.resume(session, {"action": "approve"}, "/approve")

    def run(self, session: SessionRecord, thread_id: str, payload: Any, turn: int, message: str,
            progress: ProgressFn | None = None) -> TurnResult:
        config = self.thread_config(thread_id)
        try:
            with turn_deadline(self.deadline_s):  # planner, judge, repairs and replans share it
                if progress is None:
                    self.graph.invoke(payload, config)
                else:
                    self._stream(payload, config, progress)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the person gets a clear answer
            return self.fail(session, turn, message, exc)
        snapshot = self.graph.get_state(config)
        values = dict(snapshot.values)
        review = ReviewPayload.from_interrupt(snapshot.interrupts[0].value) if snapshot.interrupts else None
        result = self.result(session, values, review)
        if review is None:
            self.forget(thread_id)  # the finished turn lives in the store now
        return result

    def _stream(self, payload: Any, config: dict, progress: ProgressFn) -> None:
        """Run the graph like ``invoke``, telling ``progress`` as each node starts and finishes."""
        known: list[dict] = []
        alive = True
        for part in self.graph.stream(payload, config, stream_mode="tasks"):
            event = progress_event(part)
            if event is None or not alive:
                continue
            if "sub_goals" in event:
                known = event["sub_goals"]
            event["sub_goals"] = [dict(r) for r in known]
            try:
                progress(event)
            except Exception:  # noqa: BLE001 - a broken listener (a closed tab) never costs the turn
                alive = False

    def forget(self, thread_id: str) -> None:
        """Drop a finished turn's checkpoints so the checkpoint database stays small."""
        try:
            self.checkpointer.delete_thread(thread_id)
        except Exception:  # noqa: BLE001 - a leftover checkpoint is harmless
            pass

    def fail(self, session: SessionRecord, turn: int, message: str, exc: BaseException) -> TurnResult:
        self.abandon(session)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reply = f"I couldn't finish that edit ({text}). Your photo is unchanged."
        head = self.store.get_session(session.id).head_asset_id
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None, outcome="failed",
                               reply=reply, action=ActionRecord(turn, message, "failed").to_dict(),
                               asset_id=None, head_asset_id=head, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status="failed", reply=reply,
                          head_asset_id=head, rendered_path=self.shown_path(session.id, head))

    def result(self, session: SessionRecord, values: dict, review: ReviewPayload | None) -> TurnResult:
        """The graph's final values (or its review payload) as the person's answer."""
        assessment = values.get("assessment") or {}
        status = "awaiting_review" if review is not None else values.get("status", "failed")
        head = self.store.get_session(session.id).head_asset_id
        asset_id = values.get("asset_id")
        if status in ("failed", "not_understood", "rolled_back"):
            # no new version: show the head, and no score (it would describe a version that was not kept)
            shown, asset_id = head, (asset_id if status == "rolled_back" else None)
            assessment = {}
        else:
            shown = asset_id or head
        reply = values.get("reply") or ""
        plan = values.get("plan") or {}
        details = dict(values.get("details") or {})
        # the planner schema's custom fields (e.g. mood_keywords); "skills" is the skill planner's trace
        planner_fields = {k: v for k, v in (plan.get("fields") or {}).items() if k != "skills"}
        if planner_fields and status != "not_understood":
            details["planner_fields"] = planner_fields
        if review is not None:
            reply, details["measurements"] = compose_reply(reply, assessment,
                                           tail="Approve, modify, roll back or ask for a new plan.")
        return TurnResult(
            session_id=session.id, turn=int(values.get("turn") or 0), status=status, reply=reply,
            sub_goals=list(values.get("sub_goals") or []) if status != "not_understood" else [],
            score=assessment.get("score"), assessment=assessment.get("assessment", ""),
            dimensions=dict(assessment.get("dimensions") or {}), fields=dict(assessment.get("fields") or {}),
            asset_id=asset_id, head_asset_id=head, rendered_path=self.shown_path(session.id, shown),
            warnings=list(values.get("warnings") or []), review=review,
            kind=str(plan.get("kind") or "edit") if status == "not_understood" else "edit",
            quick_replies=[str(q) for q in plan.get("quick_replies") or []][:3],
            details=details,
        )
