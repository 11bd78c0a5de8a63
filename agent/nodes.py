"""The graph's node functions, with their dependencies injected by ``build_graph``.

:class:`TurnNodes` holds the planner, judge, store, renderer, config and a
source loader (session id -> :class:`pipeline.render.SourceImage`); each
method is one node: a function from :class:`~agent.state.AgentState` to a
partial update. No module-level state: two graphs never share anything.

planner, executor and quality are *guarded*: an exception becomes
``{"error": message}`` and the routing sends the turn to the error_handler,
which replans a bounded number of times and then ends the turn with a clear
message and the head unchanged. human_review only calls ``interrupt()`` (it
re-runs from the top when resumed). context_fold finishes the turn in the
store in one transaction.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Callable

from langgraph.errors import GraphBubbleUp
from langgraph.types import interrupt

from agent.config import AgentConfig
from agent.context_folding import AssetContext, fold_context_for_prompt
from agent.judges.base import Assessment, Judge, JudgeRequest
from agent.planners.base import Plan, PlanError, Planner, PlanRequest, SubGoal
from agent.state import ActionRecord, AgentState, ToolContext
from agent.store import Store, new_id
from agent.wording import compose_reply
from pipeline import ops
from pipeline.masks import describe_mask
from pipeline.measure import image_stats
from pipeline.state import EditState

SourceLoader = Callable[[str], Any]  # session id -> pipeline.render.SourceImage


def _person_message(exc: BaseException) -> str:
    """One line a person can read: the error's own message, or its kind when it has none."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return text or type(exc).__name__


def guarded(node_name: str):
    """Turn an exception in a node into ``{"error": ...}`` for the error_handler.

    LangGraph's own control-flow exceptions (interrupts) pass through untouched.
    """
    def wrap(fn):
        @functools.wraps(fn)
        def run(self, state: AgentState) -> dict:
            try:
                return fn(self, state)
            except GraphBubbleUp:
                raise
            except Exception as exc:  # noqa: BLE001 - every failure becomes a clear message
                kind = "the plan was not valid" if isinstance(exc, PlanError) else f"{node_name} failed"
                message = f"{kind}: {_person_message(exc)}"
                return {"error": message, "errors": list(state.get("errors") or []) + [message]}
        return run
    return wrap


def goals_from_rows(rows: list[dict]) -> list[SubGoal]:
    """SubGoal rows from the state (which carry a per-step ``status``) back to SubGoals."""
    return [SubGoal.from_dict({k: v for k, v in row.items() if k != "status"}, f"sub_goals[{i}]")
            for i, row in enumerate(rows)]


def apply_sub_goals(state: EditState, goals: list[SubGoal]) -> tuple[EditState, list[ToolContext]]:
    """Apply every sub-goal in order, clamped to each op's range; one ToolContext per step."""
    steps: list[ToolContext] = []
    for i, goal in enumerate(goals):
        op = ops.get_op(goal.op)
        before = state.value(goal.op, goal.target)
        requested = before + goal.value if goal.mode == "add" else goal.value
        state = state.with_value(goal.op, goal.value, mask=goal.target, mode=goal.mode, clamp=True,
                                 layer_name=describe_mask(goal.target) if goal.target else "")
        after = state.value(goal.op, goal.target)
        clamped = not op.min <= requested <= op.max
        status = "no_change" if after == before else "clamped" if clamped else "applied"
        steps.append(ToolContext(step=i + 1, op=goal.op, mode=goal.mode, value=goal.value, before=before,
                                 after=after, requested=int(requested), clamped=clamped, status=status,
                                 target=goal.target))
    return state, steps


def review_payload(state: AgentState) -> dict:
    """What the review panel shows: the candidate, its score and the sliders this turn touched."""
    assessment = state.get("assessment") or {}
    touched: dict[str, int] = {}
    for step in state.get("tool_contexts") or []:
        if step.get("target") is None:  # the review sliders are global ops
            touched[step["op"]] = step["after"]
    return {
        "asset_id": state.get("asset_id"),
        "turn": state.get("turn"),
        "score": assessment.get("score"),
        "assessment": assessment.get("assessment", ""),
        "dimensions": dict(assessment.get("dimensions") or {}),
        "fields": dict(assessment.get("fields") or {}),
        "sub_goals": list(state.get("sub_goals") or []),
        "ops": [{"name": name, "label": ops.get_op(name).label, "value": value,
                 "min": ops.get_op(name).min, "max": ops.get_op(name).max}
                for name, value in touched.items()],
        "reply": state.get("reply", ""),
    }


class TurnNodes:
    """The six nodes of one Studio's graph, sharing injected dependencies."""

    def __init__(self, planner: Planner, judge: Judge, store: Store, renderer, config: AgentConfig,
                 sources: SourceLoader, schemas_root: str | None = None):
        self.schemas_root = str(schemas_root) if schemas_root else None
        self.planner = planner
        self.judge = judge
        self.store = store
        self.renderer = renderer
        self.config = config
        self.sources = sources

    # -- helpers ---------------------------------------------------------------------------
    def _edit_state(self, asset_id: str) -> EditState:
        return EditState.from_dict(self.store.get_asset(asset_id).state)

    def planner_context(self, state: AgentState) -> str:
        """The folded three-layer context for this turn's planner prompt."""
        chain = [AssetContext(a.turn, a.summary, a.score) for a in self.store.ancestors(state["base_asset_id"])]
        actions = [ActionRecord.from_dict(t.action) for t in self.store.turns(state["session_id"]) if t.action]
        tools = [ToolContext.from_dict(t) for t in state.get("tool_contexts") or []]
        return fold_context_for_prompt(chain, actions, tools, budget_tokens=self.config.budget_tokens,
                                       keep_recent=self.config.keep_recent_turns,
                                       chars_per_token=self.config.chars_per_token)

    def judge_history(self, source, session_id: str, base_asset_id: str, side: int):
        """The messages of the changes that still stand (oldest first) and the render before
        the last of them: the judge reads follow-ups ("bit more", "halve it") against them."""
        chain = self.store.ancestors(base_asset_id)
        messages = {t.turn: t.message for t in self.store.turns(session_id)}
        history = [messages[a.turn] for a in chain[1:] if messages.get(a.turn)]
        before_last = None
        if len(chain) >= 2:
            before_last = self.renderer.render(source, EditState.from_dict(chain[-2].state), side)
        return history, before_last

    # -- nodes -----------------------------------------------------------------------------
    @guarded("planner")
    def plan(self, state: AgentState) -> dict:
        """Message + folded context + current state + image statistics -> 1..max_sub_goals SubGoals."""
        retries = int(state.get("retries") or 0)
        review = state.get("review") or {}
        assessment = state.get("assessment")
        diagnoses: list[str] = []
        if review.get("action") == "replan":
            feedback = f"The person asked for a different plan: {review.get('feedback') or 'try again'}"
        elif state.get("feedback"):
            feedback = state["feedback"]                      # from the error_handler
        elif assessment:                                       # an automatic replan after a low score
            retries += 1
            feedback = f"The last attempt scored {assessment.get('score', 0):.2f}: {assessment.get('assessment', '')}"
            diagnoses = list(assessment.get("diagnoses") or [])
        else:
            feedback = None
        source = self.sources(state["session_id"])
        edit = self._edit_state(state["base_asset_id"])
        side = self.config.judge_long_side
        current = self.renderer.render(source, edit, side)
        original = self.renderer.render(source, EditState(), side)
        request = PlanRequest(
            message=state["message"], state=edit, context=self.planner_context(state),
            image_stats=image_stats(current), image=current, original=original, feedback=feedback,
            diagnoses=diagnoses, style=state.get("style"), turn=int(state["turn"]),
            max_sub_goals=self.config.max_sub_goals,
            schema=str(self.store.get_session(state["session_id"]).settings.get("planner_schema", "default")),
            schema_root=self.schemas_root,
        )
        plan = self.planner.plan(request)
        if not isinstance(plan, Plan):
            raise PlanError(f"the planner returned {type(plan).__name__}, expected a Plan")
        goals = [SubGoal.from_dict(g.to_dict() if isinstance(g, SubGoal) else g, f"sub_goals[{i}]")
                 for i, g in enumerate(plan.sub_goals)]
        if assessment and review.get("action") != "replan" and not state.get("feedback") \
                and [g.to_dict() for g in goals] == [g.to_dict() for g in goals_from_rows(state.get("sub_goals") or [])]:
            # An automatic replan that came back with the same plan would only make the same
            # version again: stop here and let the last attempt (and its assessment) stand.
            return {"repeat_plan": True, "retries": self.config.max_retries_per_sub_goal, "error": None,
                    "warnings": list(state.get("warnings") or []) + ["the new plan was the same as the last; "
                                                                     "kept the last attempt"]}
        warnings = list(state.get("warnings") or [])
        warnings += [n for n in plan.notes if isinstance(n, str) and n not in warnings]  # e.g. a held conflict, a fallback
        if len(goals) > self.config.max_sub_goals:
            warnings.append(f"the plan had {len(goals)} steps; kept the first {self.config.max_sub_goals}")
            goals = goals[: self.config.max_sub_goals]
        update: dict[str, Any] = {
            "plan": plan.to_dict(), "sub_goals": [g.to_dict() for g in goals], "retries": retries,
            "review": None, "feedback": None, "error": None, "diagnoses": diagnoses,
            "modify_values": None, "person_modified": False, "warnings": warnings,
            "reply": plan.reply or "", "repeat_plan": False,
        }
        if not plan.understood or not goals:
            update["status"] = "not_understood"
            update["reply"] = plan.reply or "I don't know how to do that yet."
        return update

    @guarded("executor")
    def execute(self, state: AgentState) -> dict:
        """Apply the sub-goals (or the person's slider values) to the EditState, write the asset, render."""
        review = state.get("review") or {}
        values = review.get("values") if review.get("action") == "modify" else state.get("modify_values")
        if values:
            # The person's own values start from the version under review (or the head) and never meet the planner.
            start_id = state.get("asset_id") or state["base_asset_id"]
            overridden = set(values)
            kept = [g for g in goals_from_rows(state.get("sub_goals") or []) if g.target or g.op not in overridden]
            person = [SubGoal(op=name, value=int(v), mode="set", description="your value")
                      for name, v in values.items()]
            start = self._edit_state(start_id)
            new_state, person_steps = apply_sub_goals(start, person)
            goals = kept + person
            # keep the planner's steps on record as they were, then the person's
            previous_steps = [s for s in state.get("tool_contexts") or []
                              if s.get("target") is not None or s["op"] not in overridden]
            steps = [ToolContext.from_dict(s) for s in previous_steps] + person_steps
            for i, s in enumerate(steps):
                s.step = i + 1
            person_modified = True
            reply = "Set " + ", ".join(f"{ops.get_op(n).label.lower()} to {int(v)}" for n, v in values.items()) \
                + ", as you asked."
        else:
            goals = goals_from_rows(state.get("sub_goals") or [])
            new_state, steps = apply_sub_goals(self._edit_state(state["base_asset_id"]), goals)
            person_modified = False
        source = self.sources(state["session_id"])
        asset_id = new_id()
        proxy = self.renderer.render(source, new_state, self.config.proxy_long_side)
        # The file first, then the row that makes it reachable (a crash leaves at most a stray cache file).
        from pipeline.imageio import save_image

        side = max(proxy.shape[:2])  # the name says the real long side (renders never upscale)
        save_image(proxy, self.store.render_path(state["session_id"], asset_id, side))
        summary = "; ".join(g.summary() for g in goals) or "no change"
        self.store.add_asset(session_id=state["session_id"], parent_id=state["base_asset_id"],
                             turn=int(state["turn"]), state=new_state.to_dict(), summary=summary,
                             status="pending", asset_id=asset_id)
        status_of = {s.step: s.status for s in steps}
        rows = [dict(g.to_dict(), status=status_of.get(i + 1, "applied")) for i, g in enumerate(goals)]
        return {"asset_id": asset_id, "sub_goals": rows, "tool_contexts": [s.to_dict() for s in steps],
                "review": None, "modify_values": None, "person_modified": person_modified,
                "assessment": None, "error": None, **({"reply": reply} if values else {})}

    @guarded("quality")
    def assess(self, state: AgentState) -> dict:
        """Judge the candidate against the original once: score 0..1, assessment, dimensions."""
        source = self.sources(state["session_id"])
        candidate = self._edit_state(state["asset_id"])
        previous = self._edit_state(state["base_asset_id"])
        side = self.config.judge_long_side
        original_img = self.renderer.render(source, EditState(), side)
        current_img = self.renderer.render(source, candidate, side)
        previous_img = self.renderer.render(source, previous, side)
        goals = goals_from_rows(state.get("sub_goals") or [])
        masks = {}
        for g in goals:
            if g.target:
                key = json.dumps(g.target, sort_keys=True)
                if key not in masks:
                    masks[key] = self.renderer.mask(source, g.target, original_img.shape[:2])
        session = self.store.get_session(state["session_id"])
        history, before_last = self.judge_history(source, state["session_id"], state["base_asset_id"], side)
        result = self.judge.assess(JudgeRequest(
            original=original_img, current=current_img, sub_goals=goals, state=candidate,
            previous_state=previous, previous=previous_img, masks=masks,
            # the person's own slider values are what they asked for: no request to read against
            message="" if state.get("person_modified") else state["message"],
            schema=str(session.settings.get("quality_schema", "default")), schema_root=self.schemas_root,
            history=history, before_last=before_last,
            locate=lambda spec: self.renderer.mask(source, spec, original_img.shape[:2]),
        ))
        if not isinstance(result, Assessment):
            raise TypeError(f"the judge returned {type(result).__name__}, expected an Assessment")
        result.score = min(1.0, max(0.0, float(result.score)))
        scores = result.to_dict()
        self.store.set_asset_fields(state["asset_id"], scores=scores)
        warnings = list(state.get("warnings") or []) + [w for w in result.warnings if w not in (state.get("warnings") or [])]
        return {"assessment": scores, "warnings": warnings, "error": None}

    def human_review(self, state: AgentState) -> dict:
        """Pause for the person. Re-runs from the top on resume, so it does nothing but ask."""
        decision = interrupt(review_payload(state))
        return {"review": dict(decision) if isinstance(decision, dict) else {"action": str(decision)}}

    def handle_error(self, state: AgentState) -> dict:
        """Back to the planner a bounded number of times, then end the turn with a clear message."""
        attempts = int(state.get("error_retries") or 0) + 1
        error = state.get("error") or "something went wrong"
        if attempts > self.config.max_error_retries:
            return {"error_retries": attempts, "error": None, "status": "failed",
                    "reply": f"I couldn't finish that edit ({error}). Your photo is unchanged."}
        return {"error_retries": attempts, "error": None, "review": None,
                "feedback": f"The previous attempt failed: {error}. Make a plan that avoids this."}

    def fold(self, state: AgentState) -> dict:
        """Finish the turn: move the head, settle asset statuses, record the action line, clear tool context."""
        review = state.get("review") or {}
        status = state.get("status")
        base = state["base_asset_id"]
        candidate = state.get("asset_id")
        assessment = state.get("assessment") or {}
        reply = state.get("reply") or ""
        details = ""
        if status in ("failed", "not_understood"):
            outcome, head = status, base
        elif review.get("action") == "rollback":
            outcome, head = "rolled_back", review["asset_id"]
            target = self.store.get_asset(head)
            reply = f"Rolled back to turn {target.turn}. Later versions stay in the history."
            details = f"Turn {target.turn}: {target.summary}."
        elif review.get("action") == "approve":
            outcome, head = "approved", candidate
            reply, details = compose_reply(reply, assessment, tail="Kept this version.")
        else:
            outcome, head = "auto_approved", candidate
            reply, details = compose_reply(reply, assessment)
        turn = int(state["turn"])
        statuses = {a.id: "rejected" for a in self.store.assets(state["session_id"])
                    if a.turn == turn and a.status == "pending"}
        if outcome in ("approved", "auto_approved") and head:
            statuses[head] = outcome
        if outcome == "rolled_back":
            summary = f"back to T{self.store.get_asset(head).turn}"
        elif outcome in ("approved", "auto_approved"):
            summary = self.store.get_asset(head).summary
        else:
            summary = ""
        score = assessment.get("score") if outcome in ("approved", "auto_approved") else None
        action = ActionRecord(turn=turn, message=state["message"], outcome=outcome, summary=summary, score=score)
        self.store.finish_turn(session_id=state["session_id"], turn=turn, message=state["message"],
                               plan=state.get("plan"), outcome=outcome, reply=reply, action=action.to_dict(),
                               asset_id=candidate, head_asset_id=head or base, statuses=statuses)
        return {"status": outcome, "reply": reply, "head_asset_id": head or base, "action": action.to_dict(),
                "tool_contexts": [], "review": None, "details": details}


__all__ = ["TurnNodes", "apply_sub_goals", "goals_from_rows", "guarded", "review_payload"]
