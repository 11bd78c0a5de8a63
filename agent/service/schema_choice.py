"""Choosing an output schema in chat: "use my cinematographer schema", "switch the judge to the composition schema".

A message is a schema choice when it names the word "schema", a verb of choosing and a schema that exists
(``Studio.list_schemas``) — so "use the film skill" or "make it cinematic" never land here. The choice holds
from the next turn on (:meth:`agent.service.Studio.use_schema`) and is answered without a turn.

The phrase table (:data:`PHRASES`) is data in the shape of ``profiles/engine/router.yaml``'s ``commands``,
ready to move there when the router reads schema choices itself.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agent.service.records import TurnResult

if TYPE_CHECKING:  # pragma: no cover
    from agent.service.studio import Studio

PHRASES = {
    "verbs": ["use", "switch to", "switch", "change to", "apply", "choose", "pick", "go with", "load", "try"],
    "agents": {"planner": ["planner", "plan", "plans", "planning"],
               "quality": ["judge", "judging", "quality", "scoring", "score", "critic"],
               "executor": ["executor", "execution", "record"]},
}
_LABEL = {"planner": "the planner", "quality": "the judge", "executor": "the executor"}


def _words(text: str) -> str:
    return " " + " ".join(re.findall(r"[a-z0-9_-]+", text.lower())) + " "


def read_schema_choice(studio: "Studio", text: str) -> tuple[str, str | None] | None:
    """(schema name, agent or None) when ``text`` chooses an existing schema, else None."""
    said = _words(text)
    if " schema " not in said and " schemas " not in said:
        return None
    if not any(f" {v} " in said for v in PHRASES["verbs"]):
        return None
    agent = next((a for a, words in PHRASES["agents"].items() if any(f" {w} " in said for w in words)), None)
    agents = [agent] if agent else ["planner", "executor", "quality"]
    names = {n for a in agents for n in studio.list_schemas(a) if n != "default"}
    named = [n for n in sorted(names, key=len, reverse=True)
             if f" {n.lower()} " in said or f" {n.lower().replace('_', ' ')} " in said]
    if not named:
        return None
    return named[0], agent


def answer_schema_choice(studio: "Studio", session_id: str, name: str, agent: str | None) -> TurnResult:
    """Make the choice and say so in a line; no turn is used."""
    info = studio.use_schema(session_id, name, agent=agent)
    chosen = [a for a in ("planner", "executor", "quality") if getattr(info, f"{a}_schema") == name]
    who = " and ".join(_LABEL[a] for a in chosen)
    reply = f"From the next change on, {who} use{'s' if len(chosen) == 1 else ''} your {name} schema."
    head = studio.store.get_session(session_id).head_asset_id
    return TurnResult(session_id=session_id, turn=studio.store.last_turn(session_id), status="answered",
                      reply=reply, head_asset_id=head, rendered_path=studio.renders.proxy_path(session_id, head),
                      kind="command", details={"schemas": {a: name for a in chosen}})


__all__ = ["PHRASES", "answer_schema_choice", "read_schema_choice"]
