"""``python -m agent.eval``: run the evaluation scenarios and print every metric.

    python -m agent.eval                      # the full suite, embedded planner and judge
    python -m agent.eval --smoke              # a small subset (what `make test` runs)
    python -m agent.eval --scenarios 'evals/scenarios/multi*.yaml' --json
    python -m agent.eval --trace-out trace.jsonl --trace-level full
    python -m agent.eval --ray local          # the same scenarios as Ray tasks (optional extra)

Exit status: 0 when the run completed (targets met or not: the table says),
2 for bad options or scenario files, 1 when the run itself failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from agent.eval.discrimination import REQUESTS, SMOKE_REQUESTS, discrimination, labelled_cases
from agent.eval.metrics import summarize
from agent.eval.report import (conversation_failures_text, conversation_table, discrimination_text,
                               failures_text, markdown_table, metrics_table, wording_text)
from agent.eval.runner import EvalError, RunOptions, agent_limits, flatten, run_suite
from agent.eval.scenarios import SPLITS, ScenarioError, load_scenarios, smoke_subset
from agent.eval.trace import TRACE_LEVELS, clean, write_trace


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agent.eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", metavar="PATH|GLOB",
                   help="scenario file, folder or glob (default: evals/scenarios/*.yaml and "
                   "evals/conversations/{heldout,tuning}/*.yaml)")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    p.add_argument("--trace-out", metavar="FILE", help="write one JSON line per turn")
    p.add_argument("--trace-level", choices=TRACE_LEVELS, default="basic",
                   help="basic: plan, sizes, timings, scores; full: also prompts and replies")
    p.add_argument("--workers", type=int, default=None,
                   help="processes (default: the CPU count, at most 4); 1 = in this process")
    p.add_argument("--ray", metavar="ADDRESS", help="run on Ray: 'local', 'auto' or host:port")
    p.add_argument("--vlm", action="store_true", help="use the configured VLM (ATELIER_VLM_*) instead "
                   "of the embedded planner and judge")
    p.add_argument("--smoke", action="store_true", help="run only the small smoke subset")
    p.add_argument("--long-side", type=int, default=640, help="measure renders at this long side (px)")
    p.add_argument("--markdown", action="store_true", help="also print the README results table")
    p.add_argument("--no-labelled", action="store_true",
                   help="skip the labelled set of wrong, weak, overdone and spilled edits (judge AUC)")
    return p


def _judge(vlm: bool):
    """The judge the labelled set is scored by: the run's own (embedded unless --vlm)."""
    if vlm:
        from agent.judging import default_judge

        return default_judge()
    from agent.judging.embedded import EmbeddedJudge

    return EmbeddedJudge()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        scenarios = load_scenarios(args.scenarios)
    except ScenarioError as exc:
        print(f"agent.eval: {exc}", file=sys.stderr)
        return 2
    if args.smoke:
        scenarios = smoke_subset(scenarios)
    if args.workers is not None and args.workers < 1:
        print("agent.eval: --workers must be 1 or more", file=sys.stderr)
        return 2
    workers = args.workers or min(4, os.cpu_count() or 1)
    workers = min(workers, len(scenarios))
    options = RunOptions(vlm=args.vlm, long_side=args.long_side, trace_level=args.trace_level)
    done = 0

    def progress(run) -> None:
        nonlocal done
        done += 1
        if not args.json:
            failed = sum(1 for t in run.turns if t.get("pixel_pass") is False)
            note = run.scenario.get("error") or (f"{failed} failed" if failed else "ok")
            print(f"[{done}/{len(scenarios)}] {run.scenario['scenario']}: {note}", file=sys.stderr)

    t0 = time.perf_counter()
    try:
        limits = agent_limits()
        runs = run_suite(scenarios, options, workers=workers, ray_address=args.ray, on_done=progress)
    except EvalError as exc:
        print(f"agent.eval: {exc}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - t0
    turns, records = flatten(runs)
    summary = summarize(turns, records, budget=limits["budget_tokens"])
    labelled = [] if args.no_labelled else labelled_cases(
        long_side=min(args.long_side, 512), judge=_judge(args.vlm),
        requests=SMOKE_REQUESTS if args.smoke else REQUESTS)
    summary["judge_discrimination"] = discrimination(turns, labelled)
    summary["run"] = {"seconds": round(elapsed, 1), "workers": workers, "ray": args.ray,
                      "planner": "vlm" if args.vlm else "embedded", "smoke": args.smoke,
                      "scenarios": args.scenarios or "evals/scenarios + evals/conversations", "long_side": args.long_side}
    summary["scenario_errors"] = [r for r in records if r.get("error")]
    summary["scenarios"] = records
    if args.trace_out:
        write_trace(args.trace_out, turns, args.trace_level)
    if args.json:
        print(json.dumps(clean(summary), indent=2))
    else:
        print(metrics_table(summary))
        print(failures_text(summary))
        print()
        print(conversation_table(summary))
        print(discrimination_text(summary))
        print(wording_text(summary))
        for split in SPLITS:
            if split in summary.get("conversation", {}):
                print(conversation_failures_text(summary, split))
        for r in summary["scenario_errors"]:
            print(f"scenario {r['scenario']} crashed: {r['error']}")
        where = f"Ray ({args.ray})" if args.ray else f"{workers} worker process(es)"
        print(f"ran in {elapsed:.1f} s on {where}")
        if args.markdown:
            print()
            print(markdown_table(summary))
    return 1 if summary["scenario_errors"] and len(summary["scenario_errors"]) == len(records) else 0


if __name__ == "__main__":
    sys.exit(main())
