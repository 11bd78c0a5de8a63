"""Three-layer memory folded into a bounded planner prompt.

- **AssetContext**: the ancestor chain of the head, oldest first — for each
  version its turn, a summary of what it changed and its score. It says what
  the photo *is* now.
- **ToolContext**: what the executor did this turn, step by step (cleared
  when the turn is folded).
- **ActionContext**: one persistent line per finished turn. The last
  ``keep_recent`` turns stay in full; older ones fold to ``T{n}:{outcome}``.

:func:`fold_context_for_prompt` renders the three layers as text within a
token budget. Tokens are estimated as ``ceil(characters / chars_per_token)``
(4 characters per token is the usual figure for English prose and JSON with
GPT-style tokenisers; it errs on the generous side for short words). When the
text is over budget the oldest material goes first: the folded history is cut
from the oldest end, then the ancestor chain loses its oldest versions, then
the full lines are shortened — the most recent turns are the last to go.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

from agent.loop.state import ActionRecord, ToolContext


@dataclass
class AssetContext:
    """One version on the head's ancestor chain."""

    turn: int
    summary: str
    score: float | None = None

    def line(self, max_chars: int = 160) -> str:
        summary = self.summary or ("the original photo" if self.turn == 0 else "no change")
        if len(summary) > max_chars:
            summary = summary[: max_chars - 1] + "…"
        score = f" (score {self.score:.2f})" if self.score is not None else ""
        return f"T{self.turn}: {summary}{score}"


def estimate_tokens(text: str, chars_per_token: int = 4) -> int:
    """Token estimate of ``text``: ceil(len / chars_per_token)."""
    return math.ceil(len(text) / chars_per_token)


def _render(chain: Sequence[str], chain_dropped: int, folded: Sequence[str], folded_dropped: int,
            recent: Sequence[str], tools: Sequence[str], dialogue: str = "") -> str:
    parts: list[str] = [dialogue] if dialogue else []
    if chain or chain_dropped:
        head = ["Current version (oldest edit first):"]
        if chain_dropped:
            head.append(f"  ... {chain_dropped} earlier version(s)")
        parts.append("\n".join(head + [f"  {c}" for c in chain]))
    if folded or folded_dropped:
        lead = f"... {folded_dropped} earlier turn(s) " if folded_dropped else ""
        parts.append("Earlier turns: " + lead + " ".join(folded))
    if recent:
        parts.append("Recent turns:\n" + "\n".join(f"  {r}" for r in recent))
    if tools:
        parts.append("This turn so far:\n" + "\n".join(f"  {t}" for t in tools))
    return "\n".join(parts)


def fold_context_for_prompt(
    assets: Iterable[AssetContext],
    actions: Iterable[ActionRecord],
    tools: Iterable[ToolContext] = (),
    *,
    budget_tokens: int = 2000,
    keep_recent: int = 3,
    chars_per_token: int = 4,
    dialogue: str = "",
) -> str:
    """The planner's multi-turn context as text of at most ``budget_tokens`` estimated tokens.

    ``assets``: the head's ancestor chain, oldest first. ``actions``: every
    finished turn, oldest first. ``tools``: this turn's executor steps.
    ``dialogue``: the dialogue state's lines (agent.conversation.dialogue), kept to a quarter of the budget.
    """
    chain_items = list(assets)
    action_items = list(actions)
    max_chars = budget_tokens * chars_per_token
    dialogue = dialogue[: max_chars // 4] if dialogue else ""
    keep = max(0, keep_recent)
    recent_items = action_items[-keep:] if keep else []
    older = action_items[: len(action_items) - len(recent_items)]

    chain = [a.line() for a in chain_items]
    folded = [a.folded() for a in older]
    recent = [a.line() for a in recent_items]
    tool_lines = [t.line() for t in tools]
    chain_dropped = folded_dropped = 0

    def text() -> str:
        return _render(chain, chain_dropped, folded, folded_dropped, recent, tool_lines, dialogue)

    # 1. the folded history loses its oldest turns first
    while folded and len(text()) > max_chars:
        folded.pop(0)
        folded_dropped += 1
    # 2. the ancestor chain loses its oldest versions next
    while chain and len(text()) > max_chars:
        chain.pop(0)
        chain_dropped += 1
    # 3. this turn's tool steps keep the newest
    while tool_lines and len(text()) > max_chars:
        tool_lines.pop(0)
    # 4. shorten the full recent lines, oldest first, before ever dropping one
    for limit in (60, 24):
        if len(text()) <= max_chars:
            break
        recent = [a.line(max_message_chars=limit) for a in recent_items]
    while len(recent) > 1 and len(text()) > max_chars:
        recent.pop(0)
    out = text()
    if len(out) > max_chars:  # a pathological budget: cut hard, keep the newest end
        out = out[-max_chars:]
    return out


__all__ = ["AssetContext", "estimate_tokens", "fold_context_for_prompt"]
