"""The graph's node functions, with their dependencies injected by ``build_graph``.

:class:`TurnNodes` holds the planner, judge, store, renderer, config and a
source loader (session id -> :class:`pipeline.render.SourceImage`); each
method is one node: a function from :class:`~agent.loop.state.AgentState` to a
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
import time
from typing import Any, Callable

from langgraph.errors import GraphBubbleUp
from langgraph.types import Overwrite, interrupt

from agent.config import AgentConfig
from agent.loop.context_folding import AssetContext, fold_context_for_prompt
from agent.conversation.dialogue import dialogue_state
from agent.loop.failures import backoff_seconds, classify as classify_failure, failure_policy
from agent.judging.base import Assessment, Judge, JudgeRequest
from agent.planning.base import REPLANS_JOINED, Plan, PlanError, Planner, PlanRequest, SubGoal
from agent.planning.selection import DUST_CONFIRM_AT, NO_SELECTION_REPLY, dust_found, resolve_selection, retouch_notes
from agent.loop.state import ActionRecord, AgentState, ToolContext, add_new
from agent.store import Store, new_id
from agent.conversation.wording import compose_reply
from pipeline import ops
from pipeline.masks import CONTENT_TYPES, describe_mask, where_words
from pipeline.measure import image_stats
from pipeline.render import in_frame_of
from pipeline.state import EditState

SourceLoader = Callable[[str], Any]  # session id -> pipeline.render.SourceImage

#: The person's replans of one turn the planner reads, the latest ones (each at most MAX_MESSAGE_CHARS).
MAX_REPLANS_READ = 8


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
                failure = {"kind": classify_failure(exc, node_name), "node": node_name, "message": message}
                return {"error": message, "errors": [message],
                        "failure": failure}
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
                                 target=goal.target, limit="op range" if clamped else None))
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
        # what the person confirms besides the picture: dust spots found (fractions of the original)
        "marks": list(((state.get("details") or {}).get("dust") or {}).get("spots") or []),
    }


def quality_floor_of(judge) -> float | None:
    """The quality floor of the judge's model profile (``quality_signatures.quality_floor``), else the engine's."""
    for holder in (getattr(judge, "client", None), judge):
        floor = getattr(getattr(holder, "profile", None), "quality_floor", None)
        if isinstance(floor, (int, float)):
            return float(floor)
    try:
        from profiles import load_profile
        return load_profile("engine").quality_floor
    except Exception:  # noqa: BLE001 - no profile, no floor: the config's bar alone
        return None


def review_tier(score: float, config: AgentConfig, floor: float | None = None) -> dict:
    """Three tiers (configs/agent_config.yaml): auto-accept at ``auto_approve_threshold``, ask the person
    from the reject bar, reject and replan below it. The bar is ``min_pass_score`` raised to the
    profile's quality floor when that is higher."""
    bar = max(config.min_pass_score, floor if floor is not None else 0.0)
    bar = min(bar, config.auto_approve_threshold)
    tier = "auto_accept" if score >= config.auto_approve_threshold else "ask" if score >= bar else "reject"
    return {"tier": tier, "score": round(float(score), 4), "auto_accept": config.auto_approve_threshold,
            "reject_below": round(bar, 4)}


#: Below this share of the frame a spot mask found nothing (one thing may be small: a star in a deep field).
SPOT_FOUND = 0.00005


def not_found_offer(what: str, specs: list[dict | None]) -> tuple[str, list[str]]:
    """What to offer when the photo has none of a place: (a sentence, up to 3 quick replies).

    The engine profile's ``targets.<name>.stand_in`` names where such a place usually is (the
    sky: the top of the frame); a painted selection always works. Quick replies are messages
    the planner reads as they are ("Darker on the top of the frame").
    """
    from profiles import load_profile

    targets = load_profile("engine").vocabulary.get("targets") or {}
    types = {(s or {}).get("type") for s in specs}
    places = []
    for entry in targets.values():
        stand_in = entry.get("stand_in")
        if (entry.get("mask") or {}).get("type") in types and not (entry.get("mask") or {}).get("invert") \
                and stand_in in targets:
            places.append(str(targets[stand_in].get("label") or stand_in))
    places = list(dict.fromkeys(places))
    label = what.capitalize() if what else "Do it"
    replies = [f"{label} on {p}" for p in places[:1]]
    if "selection" in targets:
        replies.append(f"{label} on the selection")
    replies.append(f"{label} overall")
    where = f"on {places[0]} instead" if places else "overall instead"
    paint = " or on an area you paint with the brush (then say \u201con the selection\u201d)" if "selection" in targets else ""
    doing = f"make it {what}" if what else "do that"
    return f"I can {doing} {where}{paint}.", replies[:3]


def _message_judged(state: AgentState) -> str:
    """What the judge reads this turn asked: the message, or for "the whole thing then" after a place
    could not be found, the request it finishes there ("warmer on the whole photo")."""
    dialogue = (state.get("plan") or {}).get("dialogue") or {}
    if dialogue.get("move") == "finish_unmet" and dialogue.get("asked"):
        return str(dialogue["asked"])
    return state["message"]


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

    def planner_context(self, state: AgentState, dialogue=None) -> str:
        """The folded three-layer context (and the dialogue state) for this turn's planner prompt."""
        # the head's chain walked in memory from one query (store.ancestors costs a query per version)
        by_id = {a.id: a for a in self.store.assets(state["session_id"])}
        walk, current = [], state["base_asset_id"]
        while current in by_id and len(walk) <= len(by_id):
            walk.append(by_id[current])
            current = by_id[current].parent_id
        chain = [AssetContext(a.turn, a.summary, a.score) for a in reversed(walk)]
        actions = [ActionRecord.from_dict(t.action) for t in self.store.turns(state["session_id"]) if t.action]
        tools = [ToolContext.from_dict(t) for t in state.get("tool_contexts") or []]
        return fold_context_for_prompt(chain, actions, tools, budget_tokens=self.config.budget_tokens,
                                       keep_recent=self.config.keep_recent_turns,
                                       chars_per_token=self.config.chars_per_token,
                                       dialogue=dialogue.prompt_text() if dialogue is not None else "")

    def judge_history(self, source, session_id: str, base_asset_id: str, side: int):
        """The messages of the changes that still stand (oldest first) and the render before
        the last of them: the judge reads follow-ups ("bit more", "halve it") against them."""
        chain = self.store.ancestors(base_asset_id)
        messages = {t.turn: t.message for t in self.store.turns(session_id)}
        history = [messages[a.turn] for a in chain[1:] if messages.get(a.turn)]
        before_last = last_state = None
        if len(chain) >= 2:
            last_state = EditState.from_dict(chain[-2].state)
            before_last = self.renderer.render(source, last_state, side)
        return history, before_last, last_state

    # -- nodes -----------------------------------------------------------------------------
    @guarded("planner")
    def plan(self, state: AgentState) -> dict:
        """Message + folded context + current state + image statistics -> 1..max_sub_goals SubGoals."""
        retries = int(state.get("retries") or 0)
        review = state.get("review") or {}
        assessment = state.get("assessment")
        diagnoses: list[str] = []
        earlier: list[str] = []
        feedback_from = ""
        replan_feedback = state.get("replan_feedback")
        replans = list(state.get("replans") or [])
        if review.get("action") == "replan":
            # every replan of this turn, in order: "too orange", then "and a bit brighter" keeps the first
            replans = [*replans, str(review.get("feedback") or "try again")][-MAX_REPLANS_READ:]
            feedback = f"The person asked for a different plan: {REPLANS_JOINED.join(replans)}"
            feedback_from = "person"
            replan_feedback = str(review.get("feedback") or "")   # what this attempt answers, for the judge
        elif state.get("feedback"):
            feedback = state["feedback"]                      # from the error_handler
            feedback_from = "error"
        elif assessment:                                       # an automatic replan after a low score
            retries += 1
            feedback = f"The last attempt scored {assessment.get('score', 0):.2f}: {assessment.get('assessment', '')}"
            diagnoses = list(assessment.get("diagnoses") or [])
            # (with the diagnoses this turn's earlier replans answered: a change still too weak after one
            # strengthening is strengthened again, not planned the same way twice)
            earlier = list(state.get("diagnoses_seen") or [])
            feedback_from = "judge"
        else:
            feedback = None
        source = self.sources(state["session_id"])
        edit = self._edit_state(state["base_asset_id"])
        side = self.config.judge_long_side
        current = self.renderer.render(source, edit, side)
        original = self.renderer.render(source, EditState(), side)
        dialogue = dialogue_state(self.store, state["session_id"], state["base_asset_id"])
        request = PlanRequest(
            message=state["message"], state=edit, context=self.planner_context(state, dialogue),
            image_stats=image_stats(current), image=current, original=original, feedback=feedback,
            diagnoses=diagnoses, earlier_diagnoses=earlier, feedback_from=feedback_from, style=state.get("style"), turn=int(state["turn"]),
            max_sub_goals=self.config.max_sub_goals,
            schema=str(self.store.get_session(state["session_id"]).settings.get("planner_schema", "default")),
            schema_root=self.schemas_root,
            dialogue=dialogue,
        )
        plan = self.planner.plan(request)
        if not isinstance(plan, Plan):
            raise PlanError(f"the planner returned {type(plan).__name__}, expected a Plan")
        goals = [SubGoal.from_dict(g.to_dict() if isinstance(g, SubGoal) else g, f"sub_goals[{i}]")
                 for i, g in enumerate(plan.sub_goals)]
        goals, no_selection = resolve_selection(goals, self.store.get_session(state["session_id"]).settings)
        if no_selection:
            plan.understood, plan.reply = False, NO_SELECTION_REPLY
        goals = [g for g in goals if g.mode == "set" or g.value]    # never a +0 step
        goals, missing, unmet, unkept = self._found_targets(source, goals, current.shape[:2])
        if goals and assessment and review.get("action") != "replan" and not state.get("feedback") \
                and set(assessment.get("diagnoses") or ()) & {"target_not_found", "not_asked"} \
                and plan.to_dict().get("sub_goals") == (state.get("plan") or {}).get("sub_goals"):
            # The judge found no place for the edit ("no face found") or nothing was asked, and the
            # replan came back the same: say it once, don't make the same version again.
            update = {"repeat_plan": True, "retries": self.config.max_retries_per_sub_goal, "error": None,
                      "warnings": ["the new plan was the same as the last; kept the last attempt"]}
            best = state.get("best_attempt")
            if best and best["asset_id"] != state.get("asset_id"):
                update.update(self._best_attempt_instead(state))
                update["repeat_plan"] = True
            return update
        warnings = [n for n in plan.notes if isinstance(n, str)]  # e.g. a held conflict, a fallback
        limit = self.config.max_sub_goals
        details: dict[str, Any] = {}
        if plan.source == "skills":  # a skill plan: its steps come from checked skill files (skills.max_steps)
            limit = max(limit, self.config.skills.max_steps)
            details["skills"] = plan.fields.get("skills")
        if len(goals) > limit:
            warnings.append(f"the plan had {len(goals)} steps; kept the first {limit}")
            goals = goals[:limit]
        update: dict[str, Any] = {
            "plan": plan.to_dict(), "sub_goals": [g.to_dict() for g in goals], "retries": retries,
            "review": None, "feedback": None, "error": None, "diagnoses": diagnoses,
            "diagnoses_seen": earlier + diagnoses,
            "modify_values": None, "modify_layers": None, "person_modified": False, "warnings": warnings,
            "reply": plan.reply or "", "details": details, "repeat_plan": False,
            "replan_feedback": replan_feedback, "person_replanned": feedback_from == "person", "replans": replans,
        }
        if feedback_from == "person":
            update["best_attempt"] = None    # the person asked for a different plan: earlier attempts are not it
        if unkept and goals:
            for u in unkept:
                update["reply"] = update["reply"].replace(f"everything but {u}", "the image")
            places = " or ".join(u.removeprefix("the ") for u in unkept)
            update["reply"] = f"{update['reply']} I see no {places} here, so there was nothing to keep as it is.".strip()
        if missing:
            places = " or ".join(dict.fromkeys(missing))
            said = f"I can't find {places} in this photo"
            if goals:
                update["reply"] = f"{said}, so I left that part out. " + update["reply"]
            elif plan.understood:
                # Never a silent global or another place: say so, offer where it usually is or a
                # painted selection, and keep the request so "use the top then" can finish it.
                what = (plan.labels or [""])[0]
                offer, replies = not_found_offer(what, [g.target for g in unmet])
                update["plan"] = dict(update["plan"], kind="clarify", quick_replies=replies,
                                      dialogue={"move": "not_found", "unmet": [g.to_dict() for g in unmet]})
                update["reply"] = f"{said}, so I haven't changed anything. {offer}"
        if not plan.understood or not goals:
            update["status"] = "not_understood"
            update["reply"] = update["reply"] or "I don't know how to do that yet."
        return update

    def _found_targets(self, source, goals: list[SubGoal], size) -> tuple[list[SubGoal], list[str], list[SubGoal],
                                                                          list[str]]:
        """Drop steps on a place the photo does not have (no face on a cat, nothing dark in a black corner): the
        mask is empty or everything. A step kept off such a place ("everything but the sky") goes on the whole
        photo: there is nothing to keep.

        Returns the kept steps, the missing places in words, the dropped steps and the kept places not found.
        """
        kept, missing, dropped, unkept = [], [], [], []
        for g in goals:
            spec = g.target or {}
            if spec.get("type") in CONTENT_TYPES + ("spot",):
                inner = {k: v for k, v in spec.items() if k not in ("invert", "feather")}
                share = float(self.renderer.mask(source, inner, size).mean())
                if spec.get("invert") and share < 0.002 and spec["type"] != "spot":
                    # "brighten it but don't blow out the sky" on a photo with no sky: nothing to keep, so the
                    # change goes on the whole photo, as asked
                    place = describe_mask(inner)
                    kept.append(SubGoal(op=g.op, value=g.value, mode=g.mode, target=None, id=g.id,
                                        description=g.description.replace(f"everything but {place}", "the image")))
                    unkept.append(place)
                    continue
                # (a spot is one thing, however small: nothing there stands out that way when it is empty)
                if not (SPOT_FOUND if spec["type"] == "spot" else 0.002) <= share <= 0.998:
                    missing.append(f"anything standing out as {inner['tone']} in {describe_mask(inner['within'])}"
                                   if spec["type"] == "spot" else describe_mask(inner))
                    dropped.append(g)
                    continue
            kept.append(g)
        return kept, missing, dropped, list(dict.fromkeys(unkept))

    @guarded("executor")
    def execute(self, state: AgentState) -> dict:
        """Apply the sub-goals (or the person's slider values) to the EditState, write the asset, render."""
        review = state.get("review") or {}
        modifying = review.get("action") == "modify"
        values = (review.get("values") if modifying else state.get("modify_values")) or {}
        layer_values = (review.get("layers") if modifying else state.get("modify_layers")) or []
        if values or layer_values:
            # The person's own values start from the version under review (or the head) and never meet the planner.
            start_id = state.get("asset_id") or state["base_asset_id"]
            overridden = {(None, name) for name in values}
            overridden |= {(json.dumps(l["mask"], sort_keys=True), name) for l in layer_values for name in l["values"]}

            def key(target, op):
                return (json.dumps(target, sort_keys=True) if target else None, op)

            kept = [g for g in goals_from_rows(state.get("sub_goals") or []) if key(g.target, g.op) not in overridden]
            person = [SubGoal(op=name, value=v, mode="set", description="your value")
                      for name, v in values.items()]
            person += [SubGoal(op=name, value=v, mode="set", target=l["mask"], description="your value")
                       for l in layer_values for name, v in l["values"].items()]
            start = self._edit_state(start_id)
            new_state, person_steps = apply_sub_goals(start, person)
            goals = kept + person
            # keep the planner's steps on record as they were, then the person's
            previous_steps = [s for s in state.get("tool_contexts") or []
                              if key(s.get("target"), s["op"]) not in overridden]
            steps = [ToolContext.from_dict(s) for s in previous_steps] + person_steps
            for i, s in enumerate(steps):
                s.step = i + 1
            person_modified = True
            said = [f"{ops.get_op(g.op).label.lower()}{where_words(g.target)} to {ops.get_op(g.op).describe_value(g.value).lstrip('+')}" for g in person]
            reply = "Set " + ", ".join(said) + ", as you asked."
        else:
            goals = goals_from_rows(state.get("sub_goals") or [])
            base_state = self._edit_state(state["base_asset_id"])
            # the profiles' ranges and sweet spots hold the planner's moves (agent/planning/limits.py)
            from agent.planning.limits import executor_profiles, hold_to_profile, insists
            engine, model = executor_profiles(self.planner)
            # (a repeat the planner took one step past where the last change stopped is let through)
            past = set(((state.get("plan") or {}).get("dialogue") or {}).get("past_edge") or ())
            goals, held = hold_to_profile(base_state, goals, engine, model,
                                          insist=insists(state.get("message", ""), engine), past=past)
            new_state, steps = apply_sub_goals(base_state, goals)
            for i, h in held.items():
                steps[i].requested, steps[i].clamped, steps[i].limit = h["requested"], True, h["limit"]
                steps[i].status = "clamped"
            held_ops = {goals[i].op for i in held}
            # the planner's "will be past its sweet spot" notes are superseded by what was really held
            warnings = [w for w in state.get("warnings") or []
                        if not ("past its sweet spot" in w and any(w.startswith(f"{o} ") for o in held_ops))]
            held_lines = [h["line"] for h in held.values() if h["line"] not in warnings]
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
        details = {"executor": {"steps": [s.to_dict() for s in steps]}}  # schemas/executor/default.yaml
        details.update(self._executor_schema_check(state["session_id"], details["executor"]))
        extra = {"reply": reply} if person_modified else {}
        if not person_modified and held_lines:
            extra["warnings"] = Overwrite(warnings + held_lines)   # the planner's guesses give way to what was held
        # Healing and portrait ops say honestly what they could not find (no face, no dust, no teeth).
        notes = retouch_notes(self.renderer, source, new_state, goals, self.config.proxy_long_side)
        spots = [] if person_modified else dust_found(self.renderer, source, new_state, goals,
                                                       self.config.proxy_long_side)
        if len(spots) > DUST_CONFIRM_AT:
            # many spots: the person sees them circled and keeps the heal only by approving it
            details["dust"] = {"count": len(spots), "spots": spots[:200]}
            details["confirm"] = "dust"
            notes.append(f"I found {len(spots)} dust spots, circled on the before picture: approve to keep the "
                         "heal, or say \u201cfewer\u201d to heal only the clearest.")
        if notes:
            extra["reply"] = " ".join([extra.get("reply") or state.get("reply") or ""] + notes).strip()
        return {"asset_id": asset_id, "sub_goals": rows, "tool_contexts": [s.to_dict() for s in steps],
                "review": None, "modify_values": None, "modify_layers": None, "person_modified": person_modified,
                "assessment": None, "error": None, "details": details, **extra}

    def _executor_schema_check(self, session_id: str, record: dict) -> dict:
        """The session's executor schema (chosen at start or in chat) and what the record misses of it."""
        from schemas import SchemaError, load_schema

        name = str(self.store.get_session(session_id).settings.get("executor_schema") or "default")
        if name == "default":
            return {}
        try:
            problems = load_schema("executor", name, root=self.schemas_root).validate(record)
        except SchemaError as exc:
            problems = [str(exc)]
        return {"executor_schema": name, **({"executor_problems": problems[:5]} if problems else {})}

    @guarded("quality")
    def assess(self, state: AgentState) -> dict:
        """Judge the candidate against the original once: score 0..1, assessment, dimensions."""
        source = self.sources(state["session_id"])
        candidate = self._edit_state(state["asset_id"])
        previous = self._edit_state(state["base_asset_id"])
        side = self.config.judge_long_side
        # The original and the previous version are seen through the new frame (crop,
        # rotation), so every comparison is like for like; the frame itself is checked
        # from pixels by agent.judging.geometry_checks.
        original_img = self.renderer.render(source, in_frame_of(EditState(), candidate), side)
        current_img = self.renderer.render(source, candidate, side)
        previous_img = self.renderer.render(source, in_frame_of(previous, candidate), side)
        goals = goals_from_rows(state.get("sub_goals") or [])
        masks = {}
        for g in goals:
            if g.target:
                key = json.dumps(g.target, sort_keys=True)
                if key not in masks:
                    masks[key] = (self.renderer.mask_for(source, g.target, candidate, side)
                                  if hasattr(self.renderer, "mask_for")
                                  else self.renderer.mask(source, g.target, original_img.shape[:2]))
        session = self.store.get_session(state["session_id"])
        history, before_last, last_state = self.judge_history(source, state["session_id"], state["base_asset_id"],
                                                              side)
        result = self.judge.assess(JudgeRequest(
            original=original_img, current=current_img, sub_goals=goals, state=candidate,
            previous_state=previous, previous=previous_img, masks=masks,
            # the person's own slider values are what they asked for: no request to read against
            message="" if state.get("person_modified") else _message_judged(state),
            feedback="" if state.get("person_modified") else str(state.get("replan_feedback") or ""),
            schema=str(session.settings.get("quality_schema", "default")), schema_root=self.schemas_root,
            history=history, before_last=before_last, before_last_state=last_state,
            locate=lambda spec: self.renderer.mask(source, spec, original_img.shape[:2]),
            held=any(row.get("status") == "clamped" for row in state.get("sub_goals") or []),
            skipped=[] if state.get("person_modified") else [str(s) for s in (state.get("plan") or {}).get("skipped") or ()],
            guessed=not state.get("person_modified") and bool(((state.get("plan") or {}).get("dialogue") or {})
                                                              .get("guessed_place")),
        ))
        if not isinstance(result, Assessment):
            raise TypeError(f"the judge returned {type(result).__name__}, expected an Assessment")
        result.score = min(1.0, max(0.0, float(result.score)))
        scores = result.to_dict()
        self.store.set_asset_fields(state["asset_id"], scores=scores)
        tier = review_tier(result.score, self.config, quality_floor_of(self.judge))
        if tier["tier"] == "auto_accept" and (state.get("details") or {}).get("confirm"):
            tier = dict(tier, tier="ask", why=f"{(state.get('details') or {})['confirm']} to confirm")
        update = {"assessment": scores, "warnings": list(result.warnings), "error": None,
                  "details": {"review_tier": tier["tier"], "tiers": [tier]}}
        if state.get("person_modified"):
            return update            # the person's own values are what they asked for: no attempts to weigh
        attempt = {"asset_id": state["asset_id"], "assessment": scores, "plan": state.get("plan"),
                   "sub_goals": state.get("sub_goals"), "tool_contexts": state.get("tool_contexts"),
                   "reply": state.get("reply") or "", "tier": tier["tier"],
                   "executor": (state.get("details") or {}).get("executor"),
                   "warnings": add_new(state.get("warnings"), update["warnings"])}
        best = state.get("best_attempt")
        if not best or result.score >= float(best["assessment"]["score"]):
            return dict(update, best_attempt=attempt)
        replans_left = int(state.get("retries") or 0) < self.config.max_retries_per_sub_goal
        if tier["tier"] == "reject" and replans_left:
            return update             # the automatic replans go on; the best so far is kept in mind
        return self._best_attempt_instead(state, tier)

    def _best_attempt_instead(self, state: AgentState, tier: dict | None = None) -> dict:
        """The automatic replans are spent: the best-scored attempt of the turn goes to the person (or is
        kept in review mode "never"), not the last one. Every attempt is a pending version of this turn,
        so the later ones are simply settled as rejected when the turn folds."""
        best = state["best_attempt"]
        scored = float(best["assessment"]["score"])
        note = f"the replans scored lower; kept the earlier attempt that scored {scored:.2f}"
        details: dict[str, Any] = {"review_tier": best["tier"], "kept_attempt": best["asset_id"]}
        if best.get("executor") is not None:
            details["executor"] = best["executor"]
        if tier:
            details["tiers"] = [tier]
        return {"asset_id": best["asset_id"], "assessment": best["assessment"], "plan": best["plan"],
                "sub_goals": best["sub_goals"], "tool_contexts": best["tool_contexts"], "reply": best["reply"],
                "warnings": Overwrite(add_new(best["warnings"], [note])), "error": None, "details": details}

    def human_review(self, state: AgentState) -> dict:
        """Pause for the person. Re-runs from the top on resume, so it does nothing but ask."""
        decision = interrupt(review_payload(state))
        return {"review": dict(decision) if isinstance(decision, dict) else {"action": str(decision)}}

    def handle_error(self, state: AgentState) -> dict:
        """Back to the planner a bounded number of times, then end the turn with a clear message."""
        attempts = int(state.get("error_retries") or 0) + 1
        error = state.get("error") or "something went wrong"
        failure = dict(state.get("failure") or {"kind": "render_error"})
        kind = failure.get("kind", "render_error")
        counts = dict((state.get("details") or {}).get("failure_counts") or {})
        counts[kind] = counts.get(kind, 0) + 1
        policy = failure_policy(self.config)
        details = {"failure_counts": counts, "failures": [dict(failure, attempt=counts[kind])]}
        if attempts > self.config.max_error_retries or counts[kind] > policy.budget(kind).retries:
            return {"error_retries": attempts, "error": None, "status": "failed", "details": details,
                    "reply": f"I couldn't finish that edit ({error}). Your photo is unchanged."}
        wait = backoff_seconds(policy, kind, counts[kind])
        if wait:
            time.sleep(wait)  # a timed-out or overloaded model gets a moment before the next try
        return {"error_retries": attempts, "error": None, "review": None, "details": details,
                "feedback": f"The previous attempt failed: {error}. Make a plan that avoids this."}

    def fold(self, state: AgentState) -> dict:
        """Finish the turn: move the head, settle asset statuses, record the action line, clear tool context."""
        review = state.get("review") or {}
        status = state.get("status")
        base = state["base_asset_id"]
        candidate = state.get("asset_id")
        assessment = state.get("assessment") or {}
        reply = state.get("reply") or ""
        details: dict[str, Any] = {}
        if status not in ("failed", "not_understood") and not review and candidate \
                and (state.get("details") or {}).get("review_tier") == "reject":
            # review mode "never" after the replans were spent: kept (nobody to ask), on record as below the bar
            details["failure"] = "quality_below_bar"
        if status in ("failed", "not_understood"):
            outcome, head = status, base
        elif review.get("action") == "rollback":
            outcome, head = "rolled_back", review["asset_id"]
            target = self.store.get_asset(head)
            # the studio's version number (agent/service/labels.py): the turns up to it that made a version
            number = len({a.turn for a in self.store.assets(state["session_id"]) if 0 < a.turn <= target.turn})
            reply = (f"Rolled back to version {number}." if number else "Rolled back to the original.") \
                + " Later versions stay in the history."
            details["measurements"] = f"Turn {target.turn}: {target.summary}."
        elif review.get("action") == "approve":
            outcome, head = "approved", candidate
            reply, details["measurements"] = compose_reply(reply, assessment, tail="Kept this version.")
        else:
            outcome, head = "auto_approved", candidate
            reply, details["measurements"] = compose_reply(reply, assessment)
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


__all__ = ["TurnNodes", "apply_sub_goals", "goals_from_rows", "guarded", "quality_floor_of", "review_payload",
           "review_tier"]
