"""configs/agent_config.yaml: every number in one validated file, sections owned by their consumers."""

from __future__ import annotations

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
])
def test_a_bad_value_is_refused_naming_its_key(raw, message):
    with pytest.raises(AgentConfigError) as exc:
        config_from_mapping(raw)
    assert message in str(exc.value)


def test_judge_thresholds_from_the_config_reach_the_judge():
    config = config_from_mapping({"quality": {"judge": {"visible_fraction": 0.5}}})
    assert EmbeddedJudge(config=config).thresholds["visible_fraction"] == 0.5
    assert EmbeddedJudge(config=load_config()).thresholds["visible_fraction"] != 0.5
