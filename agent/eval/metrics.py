"""The evaluation metrics: pure functions from per-turn records to figures.

Definitions (the README's "Evaluation" section repeats them with formulas):

- instruction compliance = passed / checked over instruction turns (say,
  replan, modify) that carry an expectation; a turn passes when every one of its
  pixel conditions holds and, for local edits, its preservation floor holds.
  Reported for the single-turn suite and, as "after 5 turns", for turns at
  position > 5 of multi-turn and soak scenarios.
- preservation = SSIM (0..1) outside a local edit's region between the render
  before and after the turn; mean and minimum over local turns.
- drift = |Δ| of statistics a turn promises to leave alone ("within"
  conditions), averaged; and per scenario the |final - original| of the
  statistics some turn holds and no turn of the scenario asks to move (small
  per-turn moves that pass their tolerance can still add up over turns).
- rollback exactness = share of rollbacks whose render is byte-identical to
  the render of the version rolled back to.
- context = planner prompt size per turn (tokens as the agent counts them) vs
  the configured budget; overflow rate = share of turns over budget.
- latency = wall seconds per turn minus model seconds (planner/judge model
  calls, when the service reports them).
- judge agreement = share of turns where "judge score >= min_pass" equals the
  pixel verdict, with the confusion counts and Cohen's kappa.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

from agent.eval.scenarios import without_hidden_text

#: Targets from DESIGN.md "Numbers to beat" (the issue's plan targets in brackets).
TARGETS: dict[str, tuple[str, float]] = {
    "single_turn_compliance": (">=", 0.90),     # plan: 0.85
    "compliance_after_5_turns": (">=", 0.85),   # plan: 0.80
    "preservation_ssim": (">=", 0.90),          # plan: 0.80 (mean outside local masks)
    "context_overflow_rate": ("<=", 0.0),       # 0% of turns over budget at 50 turns
    "rollback_exactness": (">=", 1.0),          # 100% bit-exact
    "latency_p95_s": ("<=", 10.0),              # plan: < 10 s per turn excluding the model
}

#: Conversation targets (issue 9): held-out compliance and turn latency excluding models.
CONVERSATION_TARGETS: dict[str, tuple[str, float]] = {
    "heldout_compliance": (">=", 0.90),         # goal 0.95
    "conversation_latency_p95_s": ("<=", 1.0),  # two cores, excluding model calls
}

DRIFT_STATS = ("L_mean", "a_mean", "b_mean", "chroma_mean", "rms_contrast")
INSTRUCTION_ACTIONS = ("say", "replan", "modify")
AFTER_TURNS = 5


def ratio(passed: int, total: int) -> float | None:
    """passed / total, or None when nothing was measured (never a fake 0 or 1)."""
    return None if total == 0 else passed / total


def compliance(verdicts: Iterable[bool | None]) -> float | None:
    """Share of True among the measured verdicts (None = not measured, ignored)."""
    measured = [v for v in verdicts if v is not None]
    return ratio(sum(1 for v in measured if v), len(measured))


def summary_stats(values: Iterable[float | None]) -> dict[str, Any]:
    """n, mean, min, max, p50, p95 of the measured values (None ignored)."""
    xs = sorted(float(v) for v in values if v is not None)
    if not xs:
        return {"n": 0, "mean": None, "min": None, "max": None, "p50": None, "p95": None}
    return {"n": len(xs), "mean": sum(xs) / len(xs), "min": xs[0], "max": xs[-1],
            "p50": percentile(xs, 50), "p95": percentile(xs, 95)}


def percentile(sorted_xs: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (numpy's default) of an ascending sequence."""
    if not sorted_xs:
        raise ValueError("percentile of nothing")
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def drift(before: Mapping[str, float], after: Mapping[str, float], names: Iterable[str]) -> dict[str, float]:
    """|after - before| for each named statistic (units of the statistic)."""
    return {n: abs(after[n] - before[n]) for n in names}


def untouched_stats(targeted: Iterable[str], candidates: Sequence[str] = DRIFT_STATS) -> list[str]:
    """The candidate statistics no step of a scenario asked to move."""
    hit = set(targeted)
    return [s for s in candidates if s not in hit]


def rollback_exactness(identical: Iterable[bool]) -> float | None:
    """Share of rollbacks whose render was byte-identical to the earlier render."""
    xs = list(identical)
    return ratio(sum(1 for x in xs if x), len(xs))


def context_budget(sizes: Iterable[int | None], budget: int | None) -> dict[str, Any]:
    """Prompt sizes (tokens) per turn against ``budget``: max, mean, overflow count and rate."""
    xs = [int(s) for s in sizes if s is not None]
    out: dict[str, Any] = {"budget": budget, "n": len(xs), "max": max(xs) if xs else None,
                           "mean": (sum(xs) / len(xs)) if xs else None}
    if budget is None or not xs:
        out.update(overflow=None, overflow_rate=None)
    else:
        over = sum(1 for x in xs if x > budget)
        out.update(overflow=over, overflow_rate=over / len(xs))
    return out


def latency_excluding_model(wall_s: float, model_s: float | None) -> float:
    """Seconds of a turn spent outside model calls (never below 0)."""
    return max(0.0, wall_s - (model_s or 0.0))


def judge_agreement(pairs: Iterable[tuple[bool | None, bool | None]]) -> dict[str, Any]:
    """Confusion counts of (judge passed, pixels passed), agreement and Cohen's kappa.

    ``tp``: both pass; ``tn``: both fail; ``fp``: the judge passed what the
    pixels fail; ``fn``: the judge failed what the pixels pass. Pairs with a
    missing side are skipped.
    """
    tp = fp = fn = tn = 0
    for judge, pixels in pairs:
        if judge is None or pixels is None:
            continue
        if judge and pixels:
            tp += 1
        elif judge and not pixels:
            fp += 1
        elif not judge and pixels:
            fn += 1
        else:
            tn += 1
    n = tp + fp + fn + tn
    agreement = ratio(tp + tn, n)
    kappa = None
    if n:
        p_yes = ((tp + fp) / n) * ((tp + fn) / n)
        p_no = ((fn + tn) / n) * ((fp + tn) / n)
        expected = p_yes + p_no
        kappa = 1.0 if expected >= 1.0 else ((agreement or 0.0) - expected) / (1.0 - expected)
    return {"n": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn, "agreement": agreement, "kappa": kappa}


def target_met(name: str, value: float | None) -> bool | None:
    """Whether ``value`` meets :data:`TARGETS` (or the conversation targets) [name]; None when not measured."""
    if value is None:
        return None
    op, goal = TARGETS.get(name) or CONVERSATION_TARGETS[name]
    return value >= goal if op == ">=" else value <= goal


# -- the whole report -----------------------------------------------------------

def is_instruction(turn: Mapping[str, Any]) -> bool:
    return turn["action"] in INSTRUCTION_ACTIONS and turn.get("pixel_pass") is not None


def summarize(turns: Sequence[Mapping[str, Any]], scenarios: Sequence[Mapping[str, Any]],
              *, budget: int | None = None) -> dict[str, Any]:
    """All metrics from per-turn records and per-scenario records (see runner)."""
    instr = [t for t in turns if is_instruction(t)]
    single = [t["pixel_pass"] for t in instr if t["suite"] == "single"]
    later = [t["pixel_pass"] for t in instr if t["suite"] in ("multi", "soak") and t["step"] > AFTER_TURNS]
    by_suite = {s: compliance(t["pixel_pass"] for t in instr if t["suite"] == s)
                for s in ("single", "multi", "soak")}
    pres = summary_stats(t.get("preservation_ssim") for t in turns)
    holds = [abs(c["change"]) for t in turns for c in t.get("checks", ()) if c["direction"] == "within"]
    cumulative = [v for s in scenarios for v in (s.get("drift") or {}).values()]
    # review-panel rollbacks; undo in words is a conversation turn kind ("undo"), reported there
    rollbacks = [t["rollback_exact"] for t in turns if t.get("rollback_exact") is not None and t["action"] == "rollback"]
    soak_sizes = [t.get("prompt_tokens") for t in turns if t["suite"] == "soak"]
    ctx_all = context_budget((t.get("prompt_tokens") for t in turns), budget)
    ctx_soak = context_budget(soak_sizes, budget)
    lat = summary_stats(t.get("latency_s") for t in turns if t.get("latency_s") is not None)
    agree = judge_agreement((t.get("judge_pass"), t.get("pixel_pass")) for t in instr)
    values = {
        "single_turn_compliance": compliance(single),
        "compliance_after_5_turns": compliance(later),
        "preservation_ssim": pres["mean"],
        "context_overflow_rate": ctx_all["overflow_rate"],
        "rollback_exactness": rollback_exactness(rollbacks),
        "latency_p95_s": lat["p95"],
    }
    targets = [{"metric": k, "value": v, "target": f"{TARGETS[k][0]} {TARGETS[k][1]:g}",
                "met": target_met(k, v)} for k, v in values.items()]
    failures = [{"scenario": t["scenario"], "step": t["step"], "instruction": t["instruction"],
                 "status": t.get("status"), "sub_goals": [_goal_line(g) for g in t.get("sub_goals") or ()],
                 "failed": [c["condition"] + f" (measured {c['change']:+.2f})"
                            for c in t.get("checks", ()) if not c["passed"]]
                 + ([f"preservation SSIM {t['preservation_ssim']:.3f} < {t['preserve_min']:g}"]
                    if t.get("preservation_ssim") is not None and t.get("preserve_min") is not None
                    and t["preservation_ssim"] < t["preserve_min"] else [])
                 + ([t["error"]] if t.get("error") else [])}
                for t in instr if not t["pixel_pass"] and t["suite"] != "conversation"]
    errors = [{"scenario": t["scenario"], "step": t["step"], "error": t["error"]}
              for t in turns if t.get("error")]
    return {
        "counts": {"scenarios": len(scenarios), "turns": len(turns), "instruction_turns": len(instr),
                   "single_turn": len(single), "after_5_turns": len(later),
                   "local_turns": pres["n"], "rollbacks": len(rollbacks), "errors": len(errors)},
        "compliance": {"single_turn": values["single_turn_compliance"],
                       "after_5_turns": values["compliance_after_5_turns"], "by_suite": by_suite,
                       "all": compliance(t["pixel_pass"] for t in instr)},
        "preservation_ssim": pres,
        "drift": {"per_turn_hold": summary_stats(holds),
                  "cumulative_untouched": summary_stats(cumulative)},
        "rollback": {"exact": sum(1 for r in rollbacks if r), "n": len(rollbacks),
                     "rate": values["rollback_exactness"]},
        "context": {"all_turns": ctx_all, "soak": ctx_soak,
                    "soak_last_turn": next((s for s in reversed(soak_sizes) if s is not None), None)},
        "latency_s": lat,
        "judge_agreement": agree,
        "conversation": conversation_summary(turns),
        "wording": wording_summary(turns),
        "targets": targets,
        "failures": failures,
        "errors": errors,
    }


def conversation_summary(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Compliance of conversation turns per split and per turn kind, with turn latency.

    A conversation turn passes when every pixel expectation of the step holds
    (direction and size, per region; byte-identity for undo; no new version for
    chat and questions; no new version and an honest refusal for unsupported).
    """
    conv = [t for t in turns if t.get("suite") == "conversation"]
    out: dict[str, Any] = {}
    for split in sorted({t.get("split") or "" for t in conv}):
        ts = [t for t in conv if (t.get("split") or "") == split]
        checked = [t for t in ts if t.get("pixel_pass") is not None]
        kinds: dict[str, Any] = {}
        for kind in sorted({t.get("kind") or "" for t in checked}):
            ks = [t["pixel_pass"] for t in checked if (t.get("kind") or "") == kind]
            kinds[kind] = {"n": len(ks), "compliance": compliance(ks)}
        lat = summary_stats(t.get("latency_s") for t in ts)
        out[split] = {"dialogues": len({t["scenario"] for t in ts}), "turns": len(ts),
                      "checked": len(checked), "images": sorted({t["image"] for t in ts}),
                      "compliance": compliance(t["pixel_pass"] for t in checked),
                      "by_kind": kinds, "latency_s": lat,
                      "failures": [without_hidden_text({"scenario": t["scenario"], "step": t["step"], "kind": t.get("kind"),
                                    "split": split,
                                    "instruction": t["instruction"], "status": t.get("status"),
                                    "reply": t.get("reply"),
                                    "failed": [c["condition"] + f" (measured {c['change']:+.2f})"
                                               for c in t.get("checks", ()) if not c["passed"]]
                                    + (["no new version expected"] if t.get("unchanged") is False else [])
                                    + (["no honest refusal"] if t.get("refused") is False else [])
                                    + (["not byte-identical to the earlier version"]
                                       if t.get("rollback_exact") is False else [])
                                    + (["not stronger than the paired turn"] if t.get("stronger") is False else [])
                                    + ([t["error"]] if t.get("error") else [])})
                                   for t in checked if not t["pixel_pass"]]}
    lat_all = summary_stats(t.get("latency_s") for t in conv)
    held = out.get("heldout", {}).get("compliance")
    out["targets"] = [
        {"metric": "heldout_compliance", "value": held, "target": ">= 0.9",
         "met": target_met("heldout_compliance", held)},
        {"metric": "conversation_latency_p95_s", "value": lat_all["p95"], "target": "<= 1",
         "met": target_met("conversation_latency_p95_s", lat_all["p95"])},
    ]
    out["latency_s"] = lat_all
    return out


def wording_summary(turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Replies read for doubled words and for direction words that disagree with a value."""
    from agent.conversation.wording import contradictions, repeated_words

    problems = []
    n = 0
    for t in turns:
        for part in ("reply", "details"):
            text = t.get(part) or ""
            if isinstance(text, Mapping):       # TurnResult.details: the measurements are one of its parts
                text = str(text.get("measurements") or "")
            if not text:
                continue
            n += 1
            for kind, found in (("repeated", repeated_words(text)), ("contradiction", contradictions(text))):
                for f in found:
                    problems.append(without_hidden_text({"scenario": t.get("scenario"), "step": t.get("step"),
                                                         "part": part, "split": t.get("split") or "",
                                                         "kind": kind, "text": f}))
    return {"texts": n, "repeated": sum(1 for p in problems if p["kind"] == "repeated"),
            "contradictions": sum(1 for p in problems if p["kind"] == "contradiction"), "problems": problems}


def _goal_line(g: Mapping[str, Any]) -> str:
    where = " (local)" if g.get("target") else ""
    sign = "=" if g.get("mode") == "set" else ("+" if (g.get("value") or 0) >= 0 else "")
    return f"{g.get('op')} {sign}{g.get('value')}{where}"
