"""Context folding: three layers, the budget at turn 50, the recent turns kept in full."""

from __future__ import annotations

from agent.loop.context_folding import AssetContext, estimate_tokens, fold_context_for_prompt
from agent.loop.state import ActionRecord, ToolContext
from conftest import ScriptedJudge, ScriptedPlanner


def _actions(n):
    return [ActionRecord(turn=t, message=f"make it a little warmer please, turn {t}", outcome="approved",
                         summary=f"temperature +{t % 9 + 1}; exposure +2", score=0.8) for t in range(1, n + 1)]


def test_recent_turns_stay_full_and_older_ones_fold():
    text = fold_context_for_prompt([AssetContext(0, "the original photo")], _actions(6), budget_tokens=2000,
                                   keep_recent=3)
    assert "Earlier turns: T1:approved T2:approved T3:approved" in text
    for t in (4, 5, 6):
        assert f'T{t} "make it a little warmer please, turn {t}"' in text
    assert '"make it a little warmer please, turn 3"' not in text


def test_the_prompt_stays_within_budget_for_every_turn_of_a_long_session():
    budget = 300  # small, so the folding has to work hard well before turn 50
    chain = [AssetContext(0, "the original photo")]
    for turn in range(1, 51):
        actions = _actions(turn)
        chain.append(AssetContext(turn, f"temperature +{turn}; contrast +3 on the sky; a long summary " * 2, 0.8))
        tools = [ToolContext(1, "temperature", "add", 5, turn, turn + 5, turn + 5, False, "applied")]
        text = fold_context_for_prompt(chain, actions, tools, budget_tokens=budget, keep_recent=3)
        assert estimate_tokens(text) <= budget, f"turn {turn}: {estimate_tokens(text)} tokens"
        assert f"T{turn} " in text  # the latest turn is always there
        if turn >= 3:
            assert f"T{turn - 2} " in text  # and the two before it


def test_tool_context_is_listed_for_this_turn():
    tools = [ToolContext(1, "contrast", "add", 30, 90, 100, 120, True, "clamped")]
    text = fold_context_for_prompt([], [], tools)
    assert "contrast 90 -> 100 (clamped)" in text


def test_a_fifty_turn_session_keeps_the_planner_prompt_within_budget(make_studio, photo):
    planner = ScriptedPlanner()
    studio = make_studio(planner, ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    budget = studio.config.budget_tokens
    for turn in range(1, 51):
        op = ("temperature+3", "exposure+2", "contrast+2", "shadows+3", "vibrance+2")[turn % 5]
        studio.send_message(info.id, f"turn {turn}: a gentle change please, {op}")
        context = planner.requests[-1].context
        assert estimate_tokens(context, studio.config.chars_per_token) <= budget
        if turn > 1:
            assert f'T{turn - 1} "turn {turn - 1}:' in context  # the previous turn, in full
    context = planner.requests[-1].context
    for t in (47, 48, 49):
        assert f'T{t} "turn {t}:' in context
    assert "T10:auto_approved" in context  # older turns folded, not forgotten
    assert studio.session(info.id).turns == 50
