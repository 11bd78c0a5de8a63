"""The evaluation harness end to end through the real Studio (embedded planner and judge).

Runs the small smoke subset (what ``python -m agent.eval --smoke`` runs) on
real skimage photos, each worker with its own SQLite file in a temp folder.
"""

from __future__ import annotations

import json

import pytest

from agent.eval.__main__ import main
from agent.eval.runner import RunOptions, flatten, run_suite
from agent.eval.scenarios import load_scenarios, scenario_from_dict, smoke_subset

SMALL = ["--long-side", "384"]


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    """One smoke run via the command line: its JSON summary and its trace lines."""
    out = tmp_path_factory.mktemp("eval")
    trace = out / "trace.jsonl"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["--smoke", "--workers", "1", "--json", "--trace-out", str(trace), *SMALL])
    assert code == 0
    summary = json.loads(buf.getvalue())
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return summary, lines


def test_smoke_run_reports_every_metric(smoke_run):
    summary, lines = smoke_run
    scenarios = smoke_subset(load_scenarios())
    assert summary["counts"]["scenarios"] == len(scenarios)
    assert summary["counts"]["turns"] == sum(len(s.steps) for s in scenarios) == len(lines)
    assert summary["counts"]["errors"] == 0 and not summary["scenario_errors"]
    names = {t["metric"] for t in summary["targets"]}
    assert names == {"single_turn_compliance", "compliance_after_5_turns", "preservation_ssim",
                     "context_overflow_rate", "rollback_exactness", "latency_p95_s"}
    for key in ("single_turn", "after_5_turns"):
        assert 0.0 <= summary["compliance"][key] <= 1.0
    # every checked instruction the judge scored (chat, questions and refusals make no version to score)
    scored = [t for t in lines if t["action"] in ("say", "replan", "modify") and t.get("pixel_pass") is not None
              and t.get("judge_pass") is not None]
    assert summary["judge_agreement"]["n"] == len(scored) > 0


def test_rollbacks_in_the_smoke_run_are_bit_exact(smoke_run):
    summary, lines = smoke_run
    rollbacks = [t for t in lines if t["action"] == "rollback"]
    assert len(rollbacks) == summary["rollback"]["n"] >= 2
    assert all(t["rollback_exact"] is True for t in rollbacks)
    assert summary["rollback"]["rate"] == 1.0
    # one of them goes back to the untouched original (step 0)
    assert any(t["instruction"].endswith("step 0") for t in rollbacks)


def test_plain_requests_are_carried_out_and_traced(smoke_run):
    _, lines = smoke_run
    by_id = {t["scenario"]: t for t in lines if t["suite"] == "single"}
    for sid in ("brighter", "warmer"):
        turn = by_id[sid]
        assert turn["pixel_pass"] is True, turn["checks"]
        assert turn["sub_goals"], "the plan is in the trace"
        assert turn["prompt_tokens"] is not None and turn["prompt_tokens"] <= turn["budget_tokens"]
        assert turn["planner_calls"] >= 1 and turn["judge_calls"] >= 1
    # every message the planner saw (greetings and questions are answered before planning)
    says = [t for t in lines if t["action"] == "say" and t["planner_calls"]]
    assert says and all(t["prompt_tokens"] is not None for t in says)
    # the folded context grows with the conversation (turn 1 has less to fold than later turns)
    chain = [t["prompt_tokens"] for t in says if t["scenario"] == "undo-chain"]
    assert max(chain) > chain[0]


def test_a_bad_scenario_file_is_refused_with_exit_status_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("suite: single\nscenarios:\n  - {id: x, image: astronaut, say: hi, expect: {warmth: {up: 1}}}\n")
    assert main(["--scenarios", str(bad)]) == 2
    assert "warmth" in capsys.readouterr().err


def test_process_pool_gives_the_same_verdicts_as_one_process():
    scenarios = [scenario_from_dict({"id": "pool-warm", "image": "chelsea", "say": "make it warmer",
                                     "expect": {"b_mean": {"up": 1.5}}}, suite="single"),
                 scenario_from_dict({"id": "pool-dark", "image": "coffee", "say": "make it darker",
                                     "expect": {"L_mean": {"down": 2}}}, suite="single")]
    options = RunOptions(long_side=256)
    pooled, _ = flatten(run_suite(scenarios, options, workers=2))
    local, _ = flatten(run_suite(scenarios, options, workers=1))
    assert [t["scenario"] for t in pooled] == ["pool-warm", "pool-dark"]
    assert [t["pixel_pass"] for t in pooled] == [t["pixel_pass"] for t in local]
    assert [t["sub_goals"] for t in pooled] == [t["sub_goals"] for t in local]


def test_ray_local_runs_the_same_scenario():
    # Ray is an optional extra for users; requirements-dev.txt installs it, so this runs (never skips) in make test.
    scenario = scenario_from_dict({"id": "ray-warm", "image": "chelsea", "say": "make it warmer",
                                   "expect": {"b_mean": {"up": 1.5}}}, suite="single")
    options = RunOptions(long_side=256)
    on_ray, _ = flatten(run_suite([scenario], options, ray_address="local"))
    here, _ = flatten(run_suite([scenario], options, workers=1))
    assert on_ray[0]["pixel_pass"] == here[0]["pixel_pass"]
    assert on_ray[0]["sub_goals"] == here[0]["sub_goals"]
