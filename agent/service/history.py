"""The edit DAG as the person moves along it: history, undo, redo and rollback.

Rollback moves the head to an earlier version (bit-exact by construction); the
abandoned branch stays in the DAG. Undo remembers the versions it stepped away
from on the session, so redo works even after a restart.
"""

from __future__ import annotations

from typing import Any

from agent.errors import AtelierError, InvalidInput
from agent.loop.state import ActionRecord
import agent.service.labels as labels
from agent.service.leases import SessionLeases
from agent.service.records import AssetInfo, ProgressFn, TurnResult, iso, notify_done
from agent.service.renders import Renders
from agent.service.turns import TurnRunner
from agent.store import AssetRecord, SessionRecord, Store

#: Session setting holding the undo trail: versions undone from, newest last (redo pops it).
REDO_KEY = "redo_stack"
WAITING = "a turn is waiting for your review: approve, modify, roll back or replan first"
#: Versions a rollback by turn number may land on.
KEPT = ("original", "approved", "auto_approved")
#: Session setting holding what was said that made no turn (questions, small talk, chat exports, a replan's
#: feedback), each ``{"turn", "before_reply", "role", "content"}``; the newest MAX_NOTES are kept.
NOTES_KEY = "chat_notes"
MAX_NOTES = 400


class History:
    """Versions of one Studio's sessions, and the moves of the head among them."""

    def __init__(self, store: Store, leases: SessionLeases, turns: TurnRunner, renders: Renders):
        self.store, self.leases, self.turns, self.renders = store, leases, turns, renders

    # -- reading ------------------------------------------------------------------------
    def versions(self, session_id: str) -> list[AssetInfo]:
        """Every version of the session's edit DAG, oldest first, each with its number (``version``)."""
        session = self.leases.session(session_id)
        head = session.head_asset_id
        on_path = {a.id for a in self.store.ancestors(head)} if head else set()
        assets = self.store.assets(session_id)
        pending = self.turns.pending(session) if session.active_thread else None
        marks = {a.id: mark for a, mark, _ in labels.numbered(assets, (pending or {}).get("asset_id"))}
        return [AssetInfo(id=a.id, parent_id=a.parent_id, turn=a.turn, summary=a.summary, score=a.score,
                          state=a.state, created_at=iso(a.created_at), is_head=a.id == head,
                          on_head_path=a.id in on_path, status=a.status, version=marks.get(a.id, ""))
                for a in assets]

    def head(self, session_id: str) -> AssetInfo:
        session = self.leases.session(session_id)
        return next(a for a in self.versions(session_id) if a.id == session.head_asset_id)

    def chat_log(self, session_id: str) -> list[dict]:
        """The conversation so far, to restore a chat after a refresh: every turn's words and reply, and
        what was said that made no turn (questions, small talk, chat exports, a replan's feedback) where
        it was said."""
        session = self.leases.session(session_id)
        notes = list(session.settings.get(NOTES_KEY) or [])

        def said(turn: int, before_reply: bool) -> list[dict]:
            return [{"role": n["role"], "content": n["content"]} for n in notes
                    if n.get("turn") == turn and bool(n.get("before_reply")) == before_reply]

        log: list[dict] = said(0, False)
        for t in self.store.turns(session_id):
            log += [{"role": "user", "content": t.message}, *said(t.turn, True),
                    {"role": "assistant", "content": t.reply}, *said(t.turn, False)]
        pending = self.turns.pending(session)
        if pending:
            turn = int(pending.get("turn") or 0)
            log.append({"role": "user", "content": self.turns.message_under_review(session)})
            log += said(turn, True)
            score = pending.get("score")
            judged = f" Score {score:.2f}: {pending.get('assessment', '')}" if score is not None else ""
            log.append({"role": "assistant", "content": (pending.get("reply", "") + judged
                                                         + " Waiting for your review.").strip()})
            log += said(turn, False)
        return log

    def note(self, session_id: str, rows: list[dict], *, before_reply: bool = False) -> None:
        """Keep what was said without a turn of its own in the chat log (``rows``: role/content dicts).

        Attached to the turn under review (``before_reply``: before its reply, as a replan's feedback),
        else after the last finished turn.
        """
        with self.leases.lock(session_id):
            session = self.store.get_session(session_id)
            pending = self.turns.pending(session) if session.active_thread else None
            turn = int(pending.get("turn") or 0) if pending else self.store.last_turn(session_id)
            notes = list(session.settings.get(NOTES_KEY) or [])
            notes += [{"turn": turn, "before_reply": before_reply, "role": str(r["role"]),
                       "content": str(r["content"]),
                       **({"offer": [str(o)[:80] for o in r["offer"]][:3]} if r.get("offer") else {})}
                      for r in rows if str(r.get("content") or "").strip()]
            settings = dict(session.settings)
            settings[NOTES_KEY] = notes[-MAX_NOTES:]
            self.store.update_session(session_id, settings=settings)

    def open_offer(self, session_id: str) -> list[str]:
        """The edits the last answer offered ("I would try: warmer, add clarity"), when nothing was said or
        done after it; else []."""
        session = self.leases.session(session_id)
        notes = list(session.settings.get(NOTES_KEY) or [])
        if not notes or notes[-1].get("role") != "assistant" or notes[-1].get("before_reply") \
                or notes[-1].get("turn") != self.store.last_turn(session_id) or session.active_thread:
            return []
        return [str(o) for o in notes[-1].get("offer") or ()]

    def open_question(self, session_id: str) -> str | None:
        """The yes-answer to the question the last turn asked ("I can't find the spoon ... or should I make it
        sharper overall?": "Sharper overall"), when nothing was said after it; else None."""
        session = self.leases.session(session_id)
        last = self.store.last_turn(session_id)
        if not last or session.active_thread or any(
                n.get("turn") == last for n in session.settings.get(NOTES_KEY) or ()):
            return None
        plan = self.store.turns(session_id)[-1].plan or {}
        if plan.get("kind") != "clarify" or not str(plan.get("reply") or "").rstrip().endswith("?"):
            return None
        return next((str(r) for r in plan.get("quick_replies") or ()
                     if str(r).lower().endswith((" overall", " everywhere"))), None)

    def turn_log(self, session_id: str) -> list[dict]:
        """Every finished turn: ``turn``, ``message``, ``plan`` (the planner's output or None), ``outcome``,
        ``reply``, ``asset_id`` (the version it produced or None), oldest first."""
        self.leases.session(session_id)
        return [{"turn": t.turn, "message": t.message, "plan": t.plan, "outcome": t.outcome, "reply": t.reply,
                 "asset_id": t.asset_id} for t in self.store.turns(session_id)]

    def resolve_target(self, session_id: str, target: Any) -> str:
        """A rollback target — an asset id, or a turn number (int or digits) — as an asset id."""
        if isinstance(target, bool) or target is None or (isinstance(target, str) and not target.strip()):
            raise InvalidInput("rollback: say which version, as a turn number or a version id")
        assets = self.store.assets(session_id)
        if isinstance(target, str):
            # a version id first: one made only of digits ("9250113213454844") is no turn number
            found = [a.id for a in assets if a.id == target.strip() and a.status != "pending"]
            if found:
                return found[0]
        if isinstance(target, int) or (isinstance(target, str) and target.strip().lstrip("Tt").isdigit()):
            turn = int(target) if isinstance(target, int) else int(target.strip().lstrip("Tt"))
            matches = [a for a in assets if a.turn == turn and a.status in KEPT]
            if not matches:
                raise InvalidInput(f"rollback: turn {turn} has no version you kept")
            return matches[-1].id
        if isinstance(target, str):
            raise InvalidInput(f"rollback: no version {target!r} in this session")
        raise InvalidInput(f"rollback: expected a turn number or a version id, got {target!r}")

    # -- moving the head ----------------------------------------------------------------
    def rollback(self, session: SessionRecord, asset_id: str, target: Any) -> TurnResult:
        """A rollback with nothing under review is a turn of its own: the head moves, the branch stays."""
        turn = self.store.last_turn(session.id) + 1
        asset = self.store.get_asset(asset_id, session.id)
        message = f"/rollback {target}"
        reply = labels.rollback_reply(self.store.assets(session.id), asset.id)
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None,
                               outcome="rolled_back", reply=reply,
                               action=ActionRecord(turn, message, "rolled_back", f"back to T{asset.turn}").to_dict(),
                               asset_id=None, head_asset_id=asset_id, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status="rolled_back", reply=reply,
                          head_asset_id=asset_id, rendered_path=self.renders.proxy_path(session.id, asset_id),
                          kind="command")

    def undo(self, session_id: str, *, steps: int = 1, progress: ProgressFn | None = None,
             said: str | None = None) -> TurnResult:
        """Step the head back ``steps`` versions along its path (see Studio.undo)."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise InvalidInput(f"steps: expected a whole number of versions >= 1, got {steps!r}")
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            if session.active_thread:
                raise InvalidInput(WAITING)
            head = self.store.get_asset(session.head_asset_id, session.id)
            if not head.parent_id:
                raise InvalidInput("nothing to undo: this is the original photo")
            chain = self.store.ancestors(head.id)           # original ... head
            target = chain[max(0, len(chain) - 1 - steps)]
            undone = chain[chain.index(target) + 1:][::-1]  # head first, down to the child of target
            stack = self._redo_stack(session)
            # keep the trail only while it is one chain (a new edit since the last undo starts a new one)
            if stack and self._parent_of(session.id, stack[-1]) != head.id:
                stack = []
            self._set_redo_stack(session, stack + [a.id for a in undone])
            assets = self.store.assets(session.id)
            what = labels.version_words(assets, head.id) if len(undone) == 1 else f"the last {len(undone)} changes"
            where = labels.version_name(labels.version_of(assets, target.id))
            reply = f"Undid {what}; back to {where}. Say \"redo\" to bring it back."
            return self._move_head(session, target, said or "/undo", reply, f"undo to T{target.turn}", progress)

    def redo(self, session_id: str, *, progress: ProgressFn | None = None, said: str | None = None) -> TurnResult:
        """Bring back the version the last undo stepped away from (see Studio.redo)."""
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            if session.active_thread:
                raise InvalidInput(WAITING)
            stack = self._redo_stack(session)
            if not stack or self._parent_of(session.id, stack[-1]) != session.head_asset_id:
                raise InvalidInput("nothing to redo: there is no undone change to bring back")
            child = self.store.get_asset(stack[-1], session.id)
            self._set_redo_stack(session, stack[:-1])
            assets = self.store.assets(session.id)
            reply = (f"Redid {labels.version_words(assets, child.id)}; "
                     f"{labels.version_name(labels.version_of(assets, child.id))} is current again.")
            return self._move_head(session, child, said or "/redo", reply, f"redo to T{child.turn}", progress)

    def _redo_stack(self, session: SessionRecord) -> list[str]:
        return [str(a) for a in (session.settings.get(REDO_KEY) or [])]

    def _set_redo_stack(self, session: SessionRecord, stack: list[str]) -> None:
        settings = dict(self.store.get_session(session.id).settings)
        settings[REDO_KEY] = list(stack)
        self.store.update_session(session.id, settings=settings)

    def _parent_of(self, session_id: str, asset_id: str) -> str | None:
        try:
            return self.store.get_asset(asset_id, session_id).parent_id
        except AtelierError:
            return None

    def _move_head(self, session: SessionRecord, asset: AssetRecord, message: str, reply: str, summary: str,
                   progress: ProgressFn | None) -> TurnResult:
        """Record a turn that only moves the head to ``asset`` (no new version)."""
        turn = self.store.last_turn(session.id) + 1
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None,
                               outcome="rolled_back", reply=reply,
                               action=ActionRecord(turn, message, "rolled_back", summary).to_dict(),
                               asset_id=None, head_asset_id=asset.id, statuses={})
        result = TurnResult(session_id=session.id, turn=turn, status="rolled_back", reply=reply,
                            head_asset_id=asset.id, rendered_path=self.renders.proxy_path(session.id, asset.id),
                            kind="command")
        notify_done(progress, reply)
        return result
