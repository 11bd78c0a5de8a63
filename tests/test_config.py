"""configs/agent_config.yaml: every number in one validated file, each section a typed model the rooms read."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agent.config import AgentConfigError, config_from_mapping, load_config
from agent.judging.embedded import EmbeddedJudge
from agent.model.vlm import vlm_limits


def test_the_shipped_config_loads_with_its_vlm_limits():
    config = load_config()
    assert config.min_pass_score <= config.auto_approve_threshold
    assert vlm_limits(config)["timeout_s"] == 60.0  # not the openai SDK's 600 s


@pytest.mark.parametrize("raw, message", [
    ({"quality": {"min_pass_score": 1.5}}, "quality.min_pass_score: 1.5 is outside"),
    ({"quality": {"min_pass_score": 0.9, "auto_approve_threshold": 0.8}}, "must not be above"),
    ({"qualty": {}}, "unknown section 'qualty'"),
    ({"review": {"review_mode": "sometimes"}}, "review.review_mode: expected one of"),
    ({"vlm": {"timeout_s": 0}}, "vlm.timeout_s: expected a number 0.1..600"),
    ({"vlm": {"patience": 3}}, "vlm.patience: unknown key"),
    ({"quality": {"judge": {"strictness": 1}}}, "quality.judge: unknown key(s) strictness"),
    ({"images": {"warm_on_upload": "yes"}}, "images.warm_on_upload: expected true or false"),
    ({"quality": {"judge": {"weights": {"compliance": -1}}}},
     "quality.judge.weights.compliance: expected a number >= 0, got -1"),
    ({"skills": {"sky_share": 2}}, "skills.sky_share: expected a number 0..1, got 2"),
    ({"orchestrator": {"max_tool_calls": 2.5}}, "orchestrator.max_tool_calls: expected a whole number 1..100, got 2.5"),
    ({"failures": {"quality_below_bar": {"retries": 1}}}, "replans are planning.max_retries_per_sub_goal"),
    ({"paths": {"sessions_dir": " "}}, "paths.sessions_dir: expected a non-empty path"),
])
def test_a_bad_value_is_refused_naming_its_key(raw, message):
    with pytest.raises(AgentConfigError) as exc:
        config_from_mapping(raw)
    assert message in str(exc.value)


def test_judge_thresholds_from_the_config_reach_the_judge():
    config = config_from_mapping({"quality": {"judge": {"visible_fraction": 0.5}}})
    assert EmbeddedJudge(config=config).thresholds["visible_fraction"] == 0.5
    assert EmbeddedJudge(config=load_config()).thresholds["visible_fraction"] != 0.5


def test_overrides_are_checked_like_the_file():
    config = load_config()
    never = config.with_overrides(review_mode="never")
    assert never.review_mode == "never" and never.quality == config.quality and never.vlm == config.vlm
    with pytest.raises(AgentConfigError, match="unknown config key"):
        config.with_overrides(reveiw_mode="never")
    with pytest.raises(AgentConfigError, match=r"replicas\.lease_ttl_s: 0\.1 is outside 0\.5\.\.3600"):
        config.with_overrides(lease_ttl_s=0.1)


def test_a_failure_kind_given_in_part_keeps_its_own_defaults():
    failures = config_from_mapping({"failures": {"model_timeout": {"retries": 3}}}).failures
    assert (failures.model_timeout.retries, failures.model_timeout.backoff_s) == (3, 1.0)
    assert failures.render_error.retries == 1 and failures.max_backoff_s == 30


def test_loading_the_config_loads_no_room_of_the_agent():
    """The config is the bottom layer: it checks every section itself, so no room imports back into it."""
    code = "import sys; from agent.config import load_config; load_config(); " \
           "print(sorted(m for m in sys.modules if m.startswith('agent.')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "['agent.config']"
