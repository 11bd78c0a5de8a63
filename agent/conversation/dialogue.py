"""Dialogue state: what each turn on the head path did, derived from the store (Rasa-style tracker).

The conversation's record is the store itself: the head's ancestor chain
(every version and the state before it) and the turn rows (the person's
words, the plan with its labels). :func:`dialogue_state` derives, never
re-reads raw text, the moves of each version: which ops moved, where (the
whole image or a local layer's mask), from what to what, and which looks or
qualities were named. Follow-ups ("more", "too much", "same for the sky",
"not that soft") resolve against it, so they survive a restart: nothing is
kept in memory.

Both planners receive the same :class:`DialogueState` (``PlanRequest.dialogue``);
the VLM reads :meth:`DialogueState.prompt_text`, bounded in characters.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Iterable

from pipeline.masks import describe_mask
from pipeline.state import EditState

#: Plan.dialogue["move"] values a follow-up plan records (what it did to an earlier turn).
FOLLOWUP_MOVES = ("repeat", "pull_back", "retarget", "reduce_look", "not_found", "finish_unmet")


@dataclass
class Change:
    """One op moved by one version: ``before`` -> ``after`` on the whole image or a layer (``target``)."""

    op: str
    before: int
    after: int
    target: dict | None = None

    @property
    def delta(self) -> int:
        return self.after - self.before

    def line(self) -> str:
        where = f" on {describe_mask(self.target)}" if self.target else ""
        return f"{self.op} {self.before:+d} -> {self.after:+d}{where}"


def changes_between(before: EditState, after: EditState) -> list[Change]:
    """Every op that differs between two states, global first, then per layer (by mask)."""
    out = [Change(op, b, a) for op, (b, a) in before.diff(after).items()]
    masks = [l.mask for l in before.layers] + [l.mask for l in after.layers]
    seen: list[dict] = []
    for mask in masks:
        if mask in seen:
            continue
        seen.append(mask)
        old, new = before.find_layer(mask), after.find_layer(mask)
        old_s = dict(old.settings) if old else {}
        new_s = dict(new.settings) if new else {}
        for op in sorted(set(old_s) | set(new_s)):
            if old_s.get(op, 0) != new_s.get(op, 0):
                out.append(Change(op, int(old_s.get(op, 0)), int(new_s.get(op, 0)), dict(mask)))
    return out


@dataclass
class TurnMoves:
    """What one kept version on the head path did, and what was asked for."""

    turn: int
    message: str
    asset_id: str
    parent_id: str | None
    changes: list[Change] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)      # looks / qualities named ("warmer", "dreamy")
    intents: list[str] = field(default_factory=list)     # the profile's intent names behind the labels
    followup: dict = field(default_factory=dict)         # Plan.dialogue of a follow-up turn
    state_before: dict = field(default_factory=dict)     # EditState dict of the parent version
    outcome: str = ""                                    # the turn's outcome ("approved": kept in review)

    @property
    def is_pull_back(self) -> bool:
        return self.followup.get("move") in ("pull_back", "reduce_look")

    def touches(self, op: str, sign: int = 0) -> bool:
        return any(c.op == op and (not sign or c.delta * sign > 0) for c in self.changes)

    def line(self, max_message_chars: int = 60) -> str:
        msg = self.message if len(self.message) <= max_message_chars else self.message[: max_message_chars - 1] + "…"
        what = ", ".join(c.line() for c in self.changes[:6]) or "no change"
        named = f" [{', '.join(self.labels[:4])}]" if self.labels else ""
        return f'T{self.turn} "{msg}"{named}: {what}'

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DialogueState:
    """The edits on the head path (oldest first) and whether an undo can be redone."""

    edits: list[TurnMoves] = field(default_factory=list)
    can_redo: bool = False
    #: The steps of the last turn when it could not be done where asked (no sky in the photo):
    #: SubGoal dicts, so "use the top of the frame then" can finish it on another place.
    unmet: list[dict] = field(default_factory=list)
    unmet_labels: list[str] = field(default_factory=list)
    unmet_guess: str | None = None       # the planner's best guess for that place ("go ahead and guess")
    unmet_place: str = ""                # the place it could not find, as said ("the cup")
    #: Turns that asked back or were not understood and so made no version ("whiten the bone" where no
    #: finder knows a bone), oldest first: "go back to before i touched the bone" is the version of that time.
    unmade: list[TurnMoves] = field(default_factory=list)

    @property
    def last(self) -> TurnMoves | None:
        """The change that made the current version ("it", "that", "more")."""
        return self.edits[-1] if self.edits else None

    def by_asset(self, asset_id: str | None) -> TurnMoves | None:
        return next((e for e in self.edits if e.asset_id == asset_id), None)

    def base_edit(self) -> TurnMoves | None:
        """The edit a follow-up is about: the last one, or the one a pull-back pulled back."""
        last = self.last
        if last is not None and last.is_pull_back:
            return self.by_asset(last.followup.get("base_asset")) or last
        return last

    def find(self, intents: Iterable[str] = (), ops: Iterable[str] = (), words: Iterable[str] = (),
             run: bool = False) -> TurnMoves | None:
        """The most recent edit that named one of ``intents``, moved one of ``ops`` or said one of ``words``.

        ``run``: the first edit of the unbroken run of such edits that ends there ("warm up her face",
        then "same for the background": before "the warm stuff" is before both).
        """
        intents, ops, words = set(intents), set(ops), [w.lower() for w in words if w]

        def named(e: TurnMoves) -> bool:
            return bool(intents & set(e.intents)) or any(c.op in ops for c in e.changes) \
                or any(w in e.message.lower() for w in words)

        found = None
        for e in reversed(self.edits):
            if named(e):
                found = e
                if not run:
                    break
            elif found is not None:
                break
        return found

    def prompt_text(self, max_edits: int = 3, max_chars: int = 900) -> str:
        """The last few edits as lines for a model's prompt (bounded, newest last)."""
        if not self.edits:
            return ""
        lines = [e.line() for e in self.edits[-max_edits:]]
        head = "Dialogue state (the last changes on the current version; \"it\", \"that\", \"more\", " \
               "\"too much\" refer to the last one):"
        text = "\n".join([head] + [f"  {l}" for l in lines])
        while len(text) > max_chars and len(lines) > 1:
            lines.pop(0)
            text = "\n".join([head] + [f"  {l}" for l in lines])
        return text[:max_chars]

    def to_dict(self) -> dict[str, Any]:
        return {"edits": [e.to_dict() for e in self.edits], "can_redo": self.can_redo, "unmet": self.unmet}


def _labels(plan: dict | None) -> tuple[list[str], list[str], dict]:
    plan = plan or {}
    labels = [str(x) for x in plan.get("labels") or []]
    if not labels:   # plans from before labels were recorded: "warmer: temperature +25"
        for g in plan.get("sub_goals") or []:
            desc = str(g.get("description") or "")
            if ":" in desc:
                labels.append(desc.split(":", 1)[0].strip())
    intents = [str(x) for x in plan.get("intents") or []]
    return list(dict.fromkeys(labels)), list(dict.fromkeys(intents)), dict(plan.get("dialogue") or {})


def dialogue_state(store, session_id: str, head_asset_id: str | None = None) -> DialogueState:
    """Derive the dialogue state of a session from its store (the head path and the turn rows)."""
    if head_asset_id is None:
        head_asset_id = store.get_session(session_id).head_asset_id
    if not head_asset_id:
        return DialogueState()
    # one query for the DAG, one for the turns: the chain is walked in memory (turn 50 costs what turn 2 does)
    by_id = {a.id: a for a in store.assets(session_id)}
    chain, current, seen = [], head_asset_id, set()
    while current and current in by_id and current not in seen:
        seen.add(current)
        chain.append(by_id[current])
        current = by_id[current].parent_id
    chain.reverse()
    turns = {t.turn: t for t in store.turns(session_id)}
    edits: list[TurnMoves] = []
    for parent, asset in zip(chain, chain[1:]):
        before, after = EditState.from_dict(parent.state), EditState.from_dict(asset.state)
        row = turns.get(asset.turn)
        labels, intents, followup = _labels(row.plan if row else None)
        edits.append(TurnMoves(turn=asset.turn, message=row.message if row else "", asset_id=asset.id,
                               parent_id=parent.id, changes=changes_between(before, after), labels=labels,
                               intents=intents, followup=followup, state_before=before.to_dict(),
                               outcome=row.outcome if row else ""))
    session = store.get_session(session_id)
    stack = list(session.settings.get("redo_stack") or [])
    can_redo = bool(stack) and stack[-1] in by_id and by_id[stack[-1]].parent_id == head_asset_id
    unmet, unmet_labels, guess, place = _unmet(turns, by_id[head_asset_id].turn if head_asset_id in by_id else 0)
    unmade = []
    for row in sorted(turns.values(), key=lambda r: r.turn):
        if not row.asset_id and row.outcome == "not_understood" and row.message:
            labels, intents, followup = _labels(row.plan)
            unmade.append(TurnMoves(turn=row.turn, message=row.message, asset_id="", parent_id=None, labels=labels,
                                    intents=intents, followup=followup, outcome=row.outcome))
    return DialogueState(edits=edits, can_redo=can_redo, unmet=unmet, unmet_labels=unmet_labels, unmet_guess=guess,
                         unmet_place=place, unmade=unmade)


def _unmet(turns: dict, head_turn: int) -> tuple[list[dict], list[str], str | None, str]:
    """The steps of the last turn, when it came after the head and found no place for them, the
    planner's guess for that place and the place as said."""
    if not turns:
        return [], [], None, ""
    last = turns[max(turns)]
    plan = last.plan or {}
    move = (plan.get("dialogue") or {})
    if last.turn <= head_turn or move.get("move") != "not_found":
        return [], [], None, ""
    return ([dict(g) for g in move.get("unmet") or []], [str(x) for x in plan.get("labels") or []],
            move.get("guess"), str(move.get("place") or ""))


__all__ = ["Change", "DialogueState", "FOLLOWUP_MOVES", "TurnMoves", "changes_between", "dialogue_state"]
