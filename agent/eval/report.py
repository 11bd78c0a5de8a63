"""Print the metrics: a table for people, JSON for machines."""

from __future__ import annotations

from typing import Any, Mapping

from agent.eval.scenarios import HIDDEN_SPLITS


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def metrics_table(summary: Mapping[str, Any]) -> str:
    """The headline figures as a fixed-width table (metric, value, target, met)."""
    c = summary["counts"]
    comp = summary["compliance"]
    pres = summary["preservation_ssim"]
    ctx = summary["context"]
    lat = summary["latency_s"]
    judge = summary["judge_agreement"]
    dr = summary["drift"]
    met = {t["metric"]: t for t in summary["targets"]}

    def target(name: str) -> tuple[str, str]:
        t = met.get(name)
        if not t:
            return "", ""
        return t["target"], {True: "MET", False: "MISSED", None: "n/a"}[t["met"]]

    rows = [
        ("single-turn compliance", f"{_fmt(comp['single_turn'])} ({c['single_turn']} turns)",
         *target("single_turn_compliance")),
        ("compliance after 5 turns", f"{_fmt(comp['after_5_turns'])} ({c['after_5_turns']} turns)",
         *target("compliance_after_5_turns")),
        ("  multi-turn / soak", f"{_fmt(comp['by_suite']['multi'])} / {_fmt(comp['by_suite']['soak'])}", "", ""),
        ("preservation SSIM (mean)", f"{_fmt(pres['mean'])} (min {_fmt(pres['min'])}, {pres['n']} local turns)",
         *target("preservation_ssim")),
        ("rollback exactness", f"{_pct(summary['rollback']['rate'])} "
         f"({summary['rollback']['exact']}/{summary['rollback']['n']})", *target("rollback_exactness")),
        ("context overflow (all turns)", f"{_pct(ctx['all_turns']['overflow_rate'])} "
         f"(max {_fmt(ctx['all_turns']['max'])} / budget {_fmt(ctx['all_turns']['budget'])} tokens)",
         *target("context_overflow_rate")),
        ("context at 50-turn soak", f"last {_fmt(ctx['soak_last_turn'])}, max {_fmt(ctx['soak']['max'])} tokens",
         "", ""),
        ("latency/turn excl. model", f"mean {_fmt(lat['mean'], 2)} s, p95 {_fmt(lat['p95'], 2)} s, "
         f"max {_fmt(lat['max'], 2)} s", *target("latency_p95_s")),
        ("drift: held stats per turn", f"mean |Δ| {_fmt(dr['per_turn_hold']['mean'], 2)}, "
         f"max {_fmt(dr['per_turn_hold']['max'], 2)} ({dr['per_turn_hold']['n']} checks)", "", ""),
        ("drift: cumulative, untouched", f"mean |Δ| {_fmt(dr['cumulative_untouched']['mean'], 2)}, "
         f"max {_fmt(dr['cumulative_untouched']['max'], 2)} ({dr['cumulative_untouched']['n']} stats)", "", ""),
        ("judge agreement", f"{_fmt(judge['agreement'])} (kappa {_fmt(judge['kappa'], 2)}; "
         f"tp {judge['tp']} fp {judge['fp']} fn {judge['fn']} tn {judge['tn']})", "", ""),
    ]
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    w2 = max(len(r[2]) for r in rows)
    head = f"{'metric':<{w0}}  {'value':<{w1}}  {'target':<{w2}}  met"
    lines = [head, "-" * len(head)]
    lines += [f"{a:<{w0}}  {b:<{w1}}  {t:<{w2}}  {m}".rstrip() for a, b, t, m in rows]
    lines.append(f"{c['scenarios']} scenarios, {c['turns']} turns ({c['instruction_turns']} checked "
                 f"instructions), {c['errors']} errors")
    return "\n".join(lines)


def conversation_table(summary: Mapping[str, Any]) -> str:
    """Conversation compliance per split and per turn kind, and turn latency."""
    conv = summary.get("conversation") or {}
    splits = [k for k in ("unseen", "heldout", "tuning") if k in conv]
    if not splits:
        return "No conversation suites were run."
    kinds = sorted({k for s in splits for k in conv[s]["by_kind"]})
    lines = ["conversations (checked from pixels)"]
    head = f"{'':<14}" + "".join(f"{s:>22}" for s in splits)
    lines.append(head)
    lines.append("-" * len(head))

    def cell(d: Mapping[str, Any] | None) -> str:
        if not d:
            return f"{'-':>22}"
        return f"{_fmt(d['compliance']):>14} ({d['n']:>3})"[-22:].rjust(22)

    lines.append(f"{'all turns':<14}" + "".join(
        cell({"compliance": conv[s]["compliance"], "n": conv[s]["checked"]}) for s in splits))
    for k in kinds:
        lines.append(f"{'  ' + k:<14}" + "".join(cell(conv[s]["by_kind"].get(k)) for s in splits))
    lines.append(f"{'p95 latency s':<14}" + "".join(f"{_fmt(conv[s]['latency_s']['p95'], 2):>22}" for s in splits))
    for s in splits:
        c = conv[s]
        lines.append(f"{s}: {c['dialogues']} dialogues, {c['turns']} turns on {len(c['images'])} photos "
                     f"({', '.join(c['images'])})")
    for t in conv.get("targets", ()):
        met = {True: "MET", False: "MISSED", None: "n/a"}[t["met"]]
        lines.append(f"target {t['metric']} {t['target']}: {_fmt(t['value'])} {met}")
    return "\n".join(lines)


def discrimination_text(summary: Mapping[str, Any]) -> str:
    """Judge AUC against the pixel verdicts (conversation turns, labelled edits, both)."""
    d = summary.get("judge_discrimination")
    if not d:
        return "judge AUC: not measured"

    def one(x: Mapping[str, Any]) -> str:
        return f"{_fmt(x['auc'])} ({x['positives']} pass / {x['negatives']} fail)"

    met = d["all"]["auc"]
    verdict = "n/a" if met is None else ("MET" if met >= 0.9 else "MISSED")
    lines = [f"judge AUC vs pixel verdicts: {one(d['all'])}  target >= 0.9: {verdict}",
             f"  conversation turns {one(d['conversation_turns'])}; labelled edits {one(d['labelled'])}"]
    if d.get("by_variant"):
        lines.append("  labelled mean score by variant: " + ", ".join(
            f"{k} {_fmt(v['mean_score'], 2)} ({v['pixel_pass']}/{v['n']} pass pixels)"
            for k, v in d["by_variant"].items()))
    return "\n".join(lines)


def wording_text(summary: Mapping[str, Any], limit: int = 10) -> str:
    """Reply wording: doubled words and direction words that disagree with the values."""
    w = summary.get("wording")
    if not w:
        return "reply wording: not checked"
    lines = [f"reply wording: {w['texts']} replies and details read, {w['repeated']} doubled words, "
             f"{w['contradictions']} direction words contradicting a value"]
    # a held-out reply can quote the person's words: only its place is printed
    for p in w["problems"][:limit]:
        text = "(held-out, not shown)" if p.get("split") in HIDDEN_SPLITS else p["text"]
        lines.append(f"  {p['scenario']}#{p['step']} {p['part']} {p['kind']}: {text}")
    return "\n".join(lines)


def conversation_failures_text(summary: Mapping[str, Any], split: str = "tuning", limit: int = 60) -> str:
    """The conversation turns of one split that did not do what the person meant.

    For a held-out split (:data:`HIDDEN_SPLITS`) only the count per kind is printed:
    whoever reads the report must not see the sentences they would tune to.
    """
    fails = (summary.get("conversation") or {}).get(split, {}).get("failures") or []
    if not fails:
        return f"Every checked {split} conversation turn held."
    if split in HIDDEN_SPLITS:
        kinds: dict[str, int] = {}
        for f in fails:
            kinds[f.get("kind") or "?"] = kinds.get(f.get("kind") or "?", 0) + 1
        per_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        return f"{len(fails)} {split} conversation turn(s) did not hold ({per_kind}); sentences not shown."
    lines = [f"{len(fails)} {split} conversation turn(s) did not hold:"]
    for f in fails[:limit]:
        lines.append(f"  {f['scenario']}#{f['step']} [{f['kind']}] \"{f['instruction']}\" -> "
                     f"{'; '.join(f['failed']) or 'failed'}")
    if len(fails) > limit:
        lines.append(f"  ... and {len(fails) - limit} more (see --json)")
    return "\n".join(lines)


def failures_text(summary: Mapping[str, Any], limit: int = 40) -> str:
    """The instructions whose pixels did not show what was asked, one per line."""
    fails = summary["failures"]
    if not fails:
        return "Every checked instruction held."
    lines = [f"{len(fails)} instruction(s) did not hold:"]
    for f in fails[:limit]:
        plan = ", ".join(f["sub_goals"]) or "no sub-goals"
        lines.append(f"  {f['scenario']}#{f['step']} \"{f['instruction']}\" [{f['status']}; {plan}] "
                     f"-> {'; '.join(f['failed']) or 'failed'}")
    if len(fails) > limit:
        lines.append(f"  ... and {len(fails) - limit} more (see --json)")
    for e in summary.get("errors", [])[:10]:
        lines.append(f"  error in {e['scenario']}#{e['step']}: {e['error']}")
    return "\n".join(lines)


def markdown_table(summary: Mapping[str, Any]) -> str:
    """The results table for the README (markdown)."""
    rows = [("metric", "value", "target", "met"), ("---", "---", "---", "---")]
    names = {
        "single_turn_compliance": "Single-turn compliance",
        "compliance_after_5_turns": "Compliance after 5 turns",
        "preservation_ssim": "Preservation SSIM outside local masks (mean)",
        "context_overflow_rate": "Context overflow rate (50-turn soak and all turns)",
        "rollback_exactness": "Rollback exactness",
        "latency_p95_s": "Latency per turn excl. model, p95 (s)",
    }
    for t in summary["targets"]:
        rows.append((names[t["metric"]], _fmt(t["value"]), t["target"],
                     {True: "yes", False: "**no**", None: "n/a"}[t["met"]]))
    j = summary["judge_agreement"]
    rows.append(("Judge agreement (kappa)", f"{_fmt(j['agreement'])} ({_fmt(j['kappa'], 2)})", "-", "-"))
    d = summary["drift"]
    rows.append(("Drift, held stats per turn (mean abs)", _fmt(d["per_turn_hold"]["mean"], 2), "-", "-"))
    rows.append(("Drift, untouched stats over a scenario (mean abs)",
                 _fmt(d["cumulative_untouched"]["mean"], 2), "-", "-"))
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)
