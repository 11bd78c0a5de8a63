"""Skills at work: gates, selection with a confidence, compound requests as a task graph, and a trace.

The skill files and their checks live in ``skills/`` (top level); this package decides which skill a
request asks for and what running it does:

- :class:`ImageFacts` — what the hard gates look at (a face, a sky, colour), measured once per turn.
- :func:`select_skill` — the best skill for one clause, with a confidence 0..1; below
  ``skills.min_confidence`` (configs/agent_config.yaml) nothing is chosen and the ordinary planner
  answers (the fallback).
- :func:`plan_tasks` — "clean up her skin, then give it a film look" as a small task graph: one step
  per clause (compound skills expand to their own steps), each depending on the one before,
  checked for cycles (``skills.check_graph``).
- :func:`run_tasks` — runs the graph in dependency order through the executor's own step function;
  the context bridge hands each step the EditState the previous step produced, and the
  collaboration trace says which skill did what (shown in the turn's details).
- :class:`SkillPlanner` — wraps any planner: a request for skills becomes a plan of their
  adjustments (``source="skills"``); everything else goes to the wrapped planner unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from agent.config import AgentConfig, SkillSettings
from agent.conversation.words import SEPARATORS, PhraseTable, find_phrases, tokenize, word_lists
from pipeline.masks import build_mask, describe_mask, face_boxes
from skills import GATES, Skill, SkillError, SkillStep, check_graph, load_skills

__all__ = ["ImageFacts", "Selection", "SkillPlanner", "TaskPlan", "gate_failures", "plan_tasks", "run_tasks",
           "select_skill", "split_request"]

DEFAULTS = SkillSettings().model_dump()
_GATE_WORDS = {"needs_face": "a face", "needs_sky": "a sky", "colour_only": "a colour photo"}
_WORDS = word_lists()
#: "clean up her skin, then give it a film look": the words that put one task after another.
_CLAUSE_SPLIT = re.compile(r"\s*(?:;|" + "|".join(rf",?\s*\b{re.escape(w)}\b" for w in sorted(
    _WORDS["sequence_words"], key=len, reverse=True)) + r")\s*", re.IGNORECASE)
_OPENER = re.compile(r"^(?:" + "|".join(map(re.escape, sorted(_WORDS["clause_openers"]))) + r")\s+", re.IGNORECASE)
#: Words that ask for a skill by name ("use the film skill"): profiles/language/words.yaml.
_SKILL_ASK = PhraseTable((w, True) for w in _WORDS["skill_asks"])


def skills_settings(config: Any = None) -> dict:
    """``skills:`` settings of an AgentConfig (agent.config.SkillSettings, checked at load); DEFAULTS without one."""
    return config.skills.model_dump() if isinstance(config, AgentConfig) else dict(DEFAULTS)


# -- facts and gates --------------------------------------------------------------------------------

@dataclass
class ImageFacts:
    """What the gates need to know about a photo."""

    has_face: bool
    has_sky: bool
    is_colour: bool
    faces: int = 0
    sky_share: float = 0.0
    chroma: float = 0.0

    @classmethod
    def measure(cls, image: np.ndarray, settings: Mapping | None = None) -> "ImageFacts":
        """Faces (the face detector of pipeline.masks), sky share (its sky mask) and mean chroma (Lab)."""
        from pipeline.measure import image_stats

        s = dict(DEFAULTS, **(settings or {}))
        faces = len(face_boxes(image))
        sky = float(build_mask({"type": "sky"}, image, image.shape[:2]).mean())
        chroma = float(image_stats(image)["chroma_mean"])
        return cls(has_face=faces > 0, has_sky=sky >= s["sky_share"], is_colour=chroma >= s["colour_chroma"],
                   faces=faces, sky_share=round(sky, 3), chroma=round(chroma, 2))

    def to_dict(self) -> dict:
        return {"has_face": self.has_face, "has_sky": self.has_sky, "is_colour": self.is_colour,
                "faces": self.faces, "sky_share": self.sky_share, "chroma": self.chroma}


def gate_failures(skill: Skill, facts: ImageFacts | None, registry: Mapping[str, Skill] | None = None) -> list[str]:
    """Why ``skill`` cannot run on this photo (empty: it can). A compound skill needs its steps' gates."""
    if facts is None:
        return []
    gates = dict(skill.gates)
    for step in skill.steps:
        inner = (registry or {}).get(step.skill)
        if inner is not None:
            gates.update({g: True for g, on in inner.gates.items() if on})
    ok = {"needs_face": facts.has_face, "needs_sky": facts.has_sky, "colour_only": facts.is_colour}
    return [f"{skill.label} needs {_GATE_WORDS[g]}" + {"needs_face": ", and I can't find a face in this photo",
                                                        "needs_sky": ", and I can't find a sky in this photo",
                                                        "colour_only": ", and this photo is black and white"}[g]
            for g in GATES if gates.get(g) and not ok[g]]


# -- selection --------------------------------------------------------------------------------------

def _norm(text: str) -> str:
    """A skill's name, label or phrase, or a clause, as the shared tokens joined by spaces."""
    return " ".join(t for t in tokenize(text.replace("_", " ")) if t not in SEPARATORS)


def _contains(text: str, phrase: str) -> bool:
    """Whether the normalised ``phrase`` is said, as whole words, in the normalised ``text``."""
    return bool(phrase) and find_phrases(text.split(), {tuple(phrase.split()): True}) != []


def _match(text: str, skill: Skill) -> tuple[float, str]:
    """(confidence 0..1, the phrase that matched) of ``text`` asking for ``skill``."""
    t = _norm(text)
    names = [_norm(skill.name), _norm(skill.label)]
    asked = _SKILL_ASK.has(t.split()) or t in names
    best, phrase = 0.0, ""
    for n in names:
        if asked and _contains(t, n) and len(n) > len(phrase):
            best, phrase = 1.0, n
    if best == 1.0:
        return best, phrase
    words = max(1, len(t.split()))
    for candidate in (*skill.words, *names):
        p = _norm(candidate)
        if _contains(t, p):
            n = len(p.split())
            score = min(0.95, 0.45 + 0.15 * n + 0.3 * n / words)
            if score > best:
                best, phrase = score, p
    return round(best, 3), phrase


@dataclass
class Selection:
    """The skill chosen for one clause (or None: the fallback), how sure, and why."""

    clause: str
    skill: Skill | None
    confidence: float
    reason: str
    candidates: list[tuple[str, float]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)       # gate failures of the best match

    def to_dict(self) -> dict:
        return {"clause": self.clause, "skill": self.skill.name if self.skill else None,
                "confidence": self.confidence, "reason": self.reason, "candidates": self.candidates[:3],
                "refused": list(self.refused)}


def select_skill(clause: str, registry: Mapping[str, Skill], facts: ImageFacts | None = None,
                 min_confidence: float = DEFAULTS["min_confidence"]) -> Selection:
    """The best skill for ``clause`` whose gates pass, or None (fall back to the planner)."""
    matched = [(*_match(clause, s), s) for s in registry.values()]
    matched = [(c, p, s) for c, p, s in matched if c > 0]
    # "clean portrait" also contains "clean": a skill whose phrase lies inside a longer match is not asked for
    scored = sorted(((c, s) for c, p, s in matched
                     if not any(p != q and _contains(q, p) for _, q, _ in matched)),
                    key=lambda pair: (-pair[0], pair[1].order))
    candidates = [(s.name, c) for c, s in scored]
    refused: list[str] = []
    for conf, skill in scored:
        if conf < min_confidence:
            break
        failures = gate_failures(skill, facts, registry)
        if failures:
            refused += failures
            continue
        return Selection(clause, skill, conf, f"asked for {skill.label} (confidence {conf:.2f})", candidates, refused)
    if refused:
        reason = "; ".join(refused)
    elif candidates:
        reason = (f"no skill fits well enough (best: {candidates[0][0]} at {candidates[0][1]:.2f}, "
                  f"below {min_confidence:.2f})")
    else:
        reason = "no skill matches"
    return Selection(clause, None, candidates[0][1] if candidates else 0.0, reason, candidates, refused)


def split_request(text: str) -> list[str]:
    """'clean up her skin, then give it a film look' -> ['clean up her skin', 'give it a film look']."""
    parts = [p.strip(" ,.;") for p in _CLAUSE_SPLIT.split(text or "")]
    return [_OPENER.sub("", p) for p in parts if p]


# -- task graphs ------------------------------------------------------------------------------------

@dataclass
class TaskPlan:
    """Steps (``skills.SkillStep``) in dependency order, with the selection behind each clause."""

    steps: list[SkillStep]
    selections: list[Selection]
    confidence: float

    def to_dict(self) -> dict:
        return {"steps": [{"id": s.id, "skill": s.skill, "depends_on": list(s.depends_on)} for s in self.steps],
                "selections": [s.to_dict() for s in self.selections], "confidence": self.confidence}


def plan_tasks(text: str, registry: Mapping[str, Skill], facts: ImageFacts | None = None,
               min_confidence: float = DEFAULTS["min_confidence"]) -> TaskPlan:
    """One step per clause that a skill answers, each after the previous; compound skills expand in place.

    Clauses no skill answers are left out (their selections say why). Raises SkillError on a cycle.
    """
    steps: list[SkillStep] = []
    selections = []
    previous: str | None = None
    for i, clause in enumerate(split_request(text)):
        sel = select_skill(clause, registry, facts, min_confidence)
        selections.append(sel)
        if sel.skill is None:
            continue
        after = (previous,) if previous else ()
        if sel.skill.kind == "compound":
            inner = check_graph(sel.skill.steps, where=sel.skill.path or sel.skill.name)
            ids = {s.id: f"{i + 1}.{s.id}" for s in inner}
            for s in inner:
                deps = tuple(ids[d] for d in s.depends_on) or after
                steps.append(SkillStep(id=ids[s.id], skill=s.skill, depends_on=deps))
            previous = ids[inner[-1].id]
        else:
            sid = f"{i + 1}.{sel.skill.name}"
            steps.append(SkillStep(id=sid, skill=sel.skill.name, depends_on=after))
            previous = sid
    ordered = check_graph(steps, where="request")
    chosen = [s.confidence for s in selections if s.skill is not None]
    return TaskPlan(ordered, selections, round(min(chosen), 3) if chosen else 0.0)


def run_tasks(plan: TaskPlan, registry: Mapping[str, Skill], state, facts: ImageFacts | None = None):
    """Run the steps in order; returns (sub_goals, trace, final EditState).

    The context bridge: each step starts from the EditState the step it depends on produced (its
    ``mode: add`` values move that state, its ``set`` values replace it) and is told what that step
    changed; the trace records, per step, the skill, what it received and what it did.
    """
    from agent.loop.nodes import apply_sub_goals
    from agent.planning.base import SubGoal

    results: dict[str, dict] = {}
    goals: list[SubGoal] = []
    trace: list[dict] = []
    current = state
    for step in check_graph(plan.steps, where="request"):
        skill = registry[step.skill]
        bridge = [results[d] for d in step.depends_on if d in results]
        start = bridge[-1]["state"] if bridge else current
        entry = {"step": step.id, "skill": skill.name, "label": skill.label, "kind": skill.kind,
                 "depends_on": list(step.depends_on),
                 "received": [{"step": b["step"], "changed": b["changed"]} for b in bridge]}
        failures = gate_failures(skill, facts, registry)
        if failures:
            trace.append(dict(entry, status="skipped", why=failures, did=[]))
            results[step.id] = {"step": step.id, "state": start, "changed": []}
            continue
        mine = [SubGoal(op=a.op, value=a.value, mode=a.mode, target=a.target, description=skill.label)
                for a in skill.adjust]
        after, records = apply_sub_goals(start, mine)
        did = [f"{r.op} {r.before} -> {r.after}" + (f" on {describe_mask(r.target)}" if r.target else "")
               for r in records if r.status != "no_change"]
        trace.append(dict(entry, status="applied", did=did))
        results[step.id] = {"step": step.id, "state": after, "changed": did}
        goals += mine
        current = after
    return goals, trace, current


# -- the planner wrapper ----------------------------------------------------------------------------

class SkillPlanner:
    """A planner that answers requests for skills and hands everything else to ``inner``.

    It claims a message when it names a skill ("use the clean portrait skill"), when every clause of a
    compound request ("clean up her skin, then give it a film look") is answered by a skill, or when
    one clause asks for a retouch or compound skill by its words with enough confidence. Looks in
    ordinary words ("make it moodier") stay with the inner planner, which reads the same looks from
    the engine profile.
    """

    def __init__(self, inner, config: Any = None):
        self.inner = inner
        self.settings = skills_settings(config)
        self.name = getattr(inner, "name", "planner")

    def __getattr__(self, item: str):          # styles(), profile, ... of the wrapped planner
        return getattr(self.inner, item)

    def claims(self, message: str, registry: Mapping[str, Skill]) -> bool:
        clauses = split_request(message)
        threshold = self.settings["min_confidence"]
        if _SKILL_ASK.has(tokenize(message)):
            return True
        best = [select_skill(c, registry, None, threshold) for c in clauses]
        if len(clauses) > 1:
            return all(s.skill is not None for s in best)
        return bool(best) and best[0].skill is not None and best[0].skill.kind != "look"

    def plan(self, request):
        from agent.planning.base import Plan

        if request.feedback or request.diagnoses:
            return self.inner.plan(request)        # a replan is the inner planner's job
        try:
            registry = load_skills()
        except SkillError as exc:
            plan = self.inner.plan(request)
            plan.notes.append(f"skills unavailable: {exc}")
            return plan
        if not self.claims(request.message, registry):
            return self.inner.plan(request)
        image = request.original if request.original is not None else request.image
        facts = ImageFacts.measure(image, self.settings) if image is not None else None
        tasks = plan_tasks(request.message, registry, facts, self.settings["min_confidence"])
        if not tasks.steps:
            asked_unknown = _SKILL_ASK.has(tokenize(request.message)) and not any(s.candidates for s in tasks.selections)
            refused = [r for s in tasks.selections for r in s.refused]
            if refused:
                return Plan(sub_goals=[], understood=False, source="skills",
                            reply=" ".join(dict.fromkeys(refused)) + ". Your photo is unchanged.",
                            fields={"skills": {"selections": [s.to_dict() for s in tasks.selections],
                                               "facts": facts.to_dict() if facts else None, "trace": []}})
            if asked_unknown:
                names = ", ".join(registry)
                return Plan(sub_goals=[], understood=False, source="skills",
                            reply=f"I don't have a skill like that. Skills: {names}.",
                            fields={"skills": {"selections": [s.to_dict() for s in tasks.selections],
                                               "trace": []}})
            plan = self.inner.plan(request)        # the fallback: nothing fits, plan it directly
            plan.notes.append("no skill fits this request; planned it directly")
            return plan
        goals, trace, _ = run_tasks(tasks, registry, request.state, facts)
        done = [t for t in trace if t["status"] == "applied"]
        skipped = [w for t in trace if t["status"] == "skipped" for w in t["why"]]
        details = {"selections": [s.to_dict() for s in tasks.selections], "graph": tasks.to_dict()["steps"],
                   "confidence": tasks.confidence, "facts": facts.to_dict() if facts else None, "trace": trace}
        if not done:
            return Plan(sub_goals=[], understood=False, source="skills", fields={"skills": details},
                        reply=" ".join(dict.fromkeys(skipped)) + ". Your photo is unchanged.")
        words = ", then ".join(t["label"] for t in done)
        reply = f"Using {words}."
        left = [s.clause for s in tasks.selections if s.skill is None]
        notes = list(dict.fromkeys(skipped))
        if left:
            notes.append("no skill for: " + "; ".join(left))
        return Plan(sub_goals=goals, reply=reply, notes=notes, source="skills", fields={"skills": details})
