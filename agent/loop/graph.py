"""The agent loop as a LangGraph StateGraph.

```
START -> planner -> executor -> quality --score >= auto_approve--> context_fold -> END
            ^                      |--score >= min_pass or retries spent--> human_review
            |                      '--score < min_pass, retries left--> planner (replan with the assessment)
            |                                 human_review: approve  -> context_fold
            |                                               modify   -> executor (no planner)
            |                                               rollback -> context_fold (head moves, turn ends)
            '------------- replan ----------------------------'
error_handler -> planner (bounded), else context_fold with a clear message; the head is unchanged
```

Routing lives in the ``route_*`` functions below: pure functions of the
state (and the config), tested on their own. A turn that starts with the
person's slider values (``modify_values``) goes straight to the executor.

The review mode ("always", "below_auto_approve", "never") comes from the
turn's state (the session's setting) and falls back to the config.
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from agent.config import AgentConfig
from agent.loop.nodes import SourceLoader, TurnNodes, review_tier
from agent.loop.state import AgentState
from pipeline.render import SourceImage


def route_start(state: AgentState) -> str:
    """The person's own slider values skip the planner."""
    return "executor" if state.get("modify_values") or state.get("modify_layers") else "planner"


def route_after_planner(state: AgentState) -> str:
    if state.get("error"):
        return "error_handler"
    if state.get("status") == "not_understood":
        return "context_fold"
    if state.get("repeat_plan"):
        # the automatic replan repeated the last plan: the last attempt goes to the person as it is
        return "context_fold" if (state.get("review_mode") or "") == "never" else "human_review"
    return "executor"


def route_after_executor(state: AgentState) -> str:
    return "error_handler" if state.get("error") else "quality"


def route_after_quality(state: AgentState, config: AgentConfig) -> str:
    """auto-approve, ask the person, or replan by itself (DESIGN.md, "The agent loop")."""
    if state.get("error"):
        return "error_handler"
    score = float((state.get("assessment") or {}).get("score") or 0.0)
    mode = state.get("review_mode") or config.review_mode
    # the tier the quality node recorded (the bar may be raised by the profile's quality floor)
    tier = (state.get("details") or {}).get("review_tier") or review_tier(score, config)["tier"]
    if tier == "auto_accept" and mode != "always":
        return "context_fold"
    # the person's own values, and the plan their replan asked for ("too crunchy, a bit less"), are never
    # replaced by an automatic replan that reads the first request alone: they go to the person
    retries_left = (not state.get("person_modified") and not state.get("person_replanned")
                    and int(state.get("retries") or 0) < config.max_retries_per_sub_goal)
    if tier != "reject" or not retries_left:
        return "context_fold" if mode == "never" else "human_review"
    return "planner"   # reject: replan, whatever the review mode


def route_after_review(state: AgentState) -> str:
    action = (state.get("review") or {}).get("action")
    return {"approve": "context_fold", "rollback": "context_fold", "modify": "executor",
            "replan": "planner"}.get(action, "human_review")


def route_after_error(state: AgentState) -> str:
    return "context_fold" if state.get("status") == "failed" else "planner"


def build_graph(planner, judge, store, renderer, config: AgentConfig, checkpointer=None, *,
                sources: SourceLoader | None = None, schemas_root=None):
    """Compile the agent graph with its dependencies injected (nothing global).

    ``sources`` maps a session id to its :class:`pipeline.render.SourceImage`;
    by default the original is loaded from the store's files on each call
    (a Studio passes its own cached loader). ``schemas_root`` is the schemas
    folder the planner and judge load their output schemas from (None = the
    shipped ``schemas/``).
    """
    if sources is None:
        sources = default_source_loader(store, config)
    nodes = TurnNodes(planner, judge, store, renderer, config, sources, schemas_root=schemas_root)
    g = StateGraph(AgentState)
    g.add_node("planner", nodes.plan)
    g.add_node("executor", nodes.execute)
    g.add_node("quality", nodes.assess)
    g.add_node("human_review", nodes.human_review)
    g.add_node("context_fold", nodes.fold)
    g.add_node("error_handler", nodes.handle_error)
    g.add_conditional_edges(START, route_start, ["planner", "executor"])
    g.add_conditional_edges("planner", route_after_planner,
                            ["executor", "context_fold", "error_handler", "human_review"])
    g.add_conditional_edges("executor", route_after_executor, ["quality", "error_handler"])
    g.add_conditional_edges("quality", lambda s: route_after_quality(s, config),
                            ["context_fold", "human_review", "planner", "error_handler"])
    g.add_conditional_edges("human_review", route_after_review,
                            ["context_fold", "executor", "planner", "human_review"])
    g.add_conditional_edges("error_handler", route_after_error, ["planner", "context_fold"])
    g.add_edge("context_fold", END)
    return g.compile(checkpointer=checkpointer)


def default_source_loader(store, config: AgentConfig) -> SourceLoader:
    """Load a session's original from its stored file (no cache: a Studio brings its own)."""
    from pipeline.imageio import load_image

    def load(session_id: str):
        session = store.get_session(session_id)
        loaded = load_image(store.original_file(session), max_pixels=config.max_upload_pixels)
        return SourceImage.from_array(loaded.pixels)

    return load


__all__ = ["build_graph", "default_source_loader", "route_after_error", "route_after_executor",
           "route_after_planner", "route_after_quality", "route_after_review", "route_start"]
