"""Conversation suites: written as people talk, checked from pixels, reported per split and kind.

The suites' shape is checked on every file (held-out and tuning); a smoke pair of
dialogues runs end to end through the real Studio; the pixel checks behind
"no new version", "honest refusal", "undo must act" and magnitude pairs are
exercised on real renders; the judge's AUC machinery is checked on the labelled
set; and every message of the whole eval suite goes through the real planner
and judge with its reply read for doubled words and contradicting directions.
"""

from __future__ import annotations

import numpy as np
import pytest

from agent.eval.discrimination import SMOKE_REQUESTS, auc, discrimination, labelled_cases
from agent.eval.metrics import conversation_summary, wording_summary
from agent.eval.runner import RunOptions, check_step, flatten, is_refusal, run_suite
from agent.eval.scenarios import (ASSET_PHOTOS, HIDDEN_SPLITS, TURN_KINDS, ScenarioError, load_photo, load_scenario_file,
                                  load_scenarios, scenario_from_dict, scenario_paths)
from agent.eval import checks
from pipeline.render import render
from pipeline.state import EditState


@pytest.fixture(scope="module")
def heldout():
    return load_scenarios("evals/conversations/heldout")


@pytest.fixture(scope="module")
def tuning():
    return load_scenarios("evals/conversations/tuning")


def test_the_heldout_suite_is_big_enough_and_on_untuned_photos(heldout, tuning):
    turns = sum(len(s.steps) for s in heldout)
    assert len(heldout) >= 25 and turns >= 150
    photos = {s.image for s in heldout}
    assert len(photos) >= 6 and photos <= set(ASSET_PHOTOS)
    assert not photos & {s.image for s in tuning}          # held-out photos never appear in tuning
    kinds = {st.kind for s in heldout for st in s.steps}
    for kind in ("follow_up", "complaint", "undo", "negation", "local", "magnitude", "unsupported",
                 "chat", "question"):
        assert kind in kinds, kind
    assert all(st.kind in TURN_KINDS for s in heldout + tuning for st in s.steps)
    assert all(s.split == "heldout" for s in heldout) and all(s.split == "tuning" for s in tuning)
    # every turn is checked from pixels
    assert all(not st.expect.is_empty for s in heldout + tuning for st in s.steps)


def test_the_fresh_held_out_photos_never_appear_in_tuning(tuning):
    """The fresh held-out split is on photos the project never tuned on: no tuning dialogue may use them (a blind
    tuning set once did, asked for the photos used least, and those dialogues were taken out)."""
    fresh = {s.image for s in load_scenarios("evals/conversations/unseen")}
    assert fresh and not fresh & {s.image for s in tuning}


def test_the_default_run_holds_both_splits():
    names = [p.as_posix() for p in scenario_paths()]
    assert any("/conversations/heldout/" in n for n in names)
    assert any("/conversations/tuning/" in n for n in names)


def test_a_conversation_file_must_name_its_split(tmp_path):
    bad = tmp_path / "c.yaml"
    bad.write_text("suite: conversation\nimage: quokka\nscenarios:\n  - {id: a, say: warmer}\n")
    with pytest.raises(ScenarioError, match="split"):
        load_scenario_file(bad)
    with pytest.raises(ScenarioError, match="kind"):
        scenario_from_dict({"id": "x", "image": "quokka", "steps": [{"say": "hi", "kind": "smalltalk"}]},
                           suite="conversation", split="tuning")


def test_evaluation_photos_load_from_assets():
    for name in ASSET_PHOTOS:
        img = load_photo(name)
        assert img.dtype == np.uint8 and img.ndim == 3 and min(img.shape[:2]) >= 256


@pytest.fixture(scope="module")
def renders():
    im = np.ascontiguousarray(load_photo("quokka")[::3, ::3])
    return im, render(im, EditState().with_value("temperature", 10)), \
        render(im, EditState().with_value("temperature", 40))


def _step(data, index=2):
    s = scenario_from_dict({"id": "t", "image": "quokka", "steps": [{"say": "x"}] * (index - 1) + [data]},
                           suite="conversation", split="tuning")
    return s.steps[-1]


def test_chat_must_leave_the_version_alone_and_answer(renders):
    im, slight, _ = renders
    step = _step({"say": "thanks!", "kind": "chat", "expect": {"no_new_version": True}})
    common = dict(original=im, renders={0: im, 1: im}, region=None, cache=checks.StatsCache())
    assert check_step(step, before=im, after=im, same_head=True, reply="You're welcome.", **common)["pixel_pass"]
    assert not check_step(step, before=im, after=slight, same_head=False, reply="ok", **common)["pixel_pass"]
    assert not check_step(step, before=im, after=im, same_head=True, reply="I don't know how to do that yet.",
                          **common)["pixel_pass"]


def test_an_unsupported_request_needs_an_honest_refusal(renders):
    im, slight, _ = renders
    step = _step({"say": "add a rainbow", "kind": "unsupported", "expect": {"refusal": True}})
    common = dict(original=im, renders={0: im, 1: im}, region=None, cache=checks.StatsCache())
    ok = check_step(step, before=im, after=im, same_head=True,
                    reply="I can't add things to the picture; I adjust tone and colour.", **common)
    assert ok["pixel_pass"] and ok["refused"]
    claimed = check_step(step, before=im, after=im, same_head=True, reply="Done!", **common)
    assert claimed["pixel_pass"] is False and claimed["refused"] is False
    assert is_refusal("I cannot do that") and not is_refusal("Warmer, as asked.")


def test_a_place_it_cannot_find_must_be_asked_about_not_edited(renders):
    im, slight, _ = renders
    step = _step({"say": "brighten the lamp", "kind": "clarify", "expect": {"asks": True}})
    common = dict(original=im, renders={0: im, 1: im}, region=None, cache=checks.StatsCache())
    asked = check_step(step, before=im, after=im, same_head=True,
                       reply="I couldn't find the lamp. Click it, or paint over it?", **common)
    assert asked["pixel_pass"] and asked["asked"]
    offered = check_step(step, before=im, after=im, same_head=True, reply="I couldn't find the lamp.",
                         quick_replies=("The whole photo", "Cancel"), **common)
    assert offered["pixel_pass"]
    guessed = check_step(step, before=im, after=slight, same_head=False,
                         reply="Brightening the subject. Want more?", **common)
    assert guessed["pixel_pass"] is False
    silent = check_step(step, before=im, after=im, same_head=True, reply="Done.", **common)
    assert silent["pixel_pass"] is False and silent["asked"] is False


def test_the_report_never_prints_a_held_out_sentence():
    from agent.eval.report import conversation_failures_text

    fail = {"scenario": "u-1", "step": 2, "kind": "undo", "instruction": "SECRET WORDS", "failed": ["x"]}
    for split in ("heldout", "unseen"):
        text = conversation_failures_text({"conversation": {split: {"failures": [fail]}}}, split)
        assert "SECRET" not in text and "undo 1" in text
    assert "SECRET WORDS" in conversation_failures_text({"conversation": {"tuning": {"failures": [fail]}}},
                                                        "tuning")


def test_undo_in_words_must_act_and_match_byte_for_byte(renders):
    im, slight, strong = renders
    step = _step({"say": "take that back", "kind": "undo", "expect": {"same_as_step": 1}}, index=3)
    common = dict(original=im, renders={0: im, 1: slight, 2: strong}, region=None, cache=checks.StatsCache())
    assert check_step(step, before=strong, after=slight, same_head=False, **common)["pixel_pass"]
    # nothing happened, even though the pixels match the target (the turn before made no change)
    assert not check_step(step, before=slight, after=slight, same_head=True, **common)["pixel_pass"]
    assert not check_step(step, before=strong, after=strong, same_head=False, **common)["pixel_pass"]


def test_magnitude_pairs_need_a_stronger_move(renders):
    im, slight, strong = renders
    first = _step({"say": "slightly warmer", "expect": {"b_mean": {"up": 0.2}}}, index=1)
    cache = checks.StatsCache()
    r1 = check_step(first, before=im, after=slight, original=im, renders={0: im}, region=None, cache=cache)
    much = _step({"say": "much warmer", "expect": {"b_mean": {"up": 0.5}, "stronger_than": 1}}, index=3)
    prior = {1: r1["checks"]}
    good = check_step(much, before=im, after=strong, original=im, renders={0: im, 1: slight, 2: im},
                      region=None, cache=cache, prior=prior)
    same = check_step(much, before=im, after=slight, original=im, renders={0: im, 1: slight, 2: im},
                      region=None, cache=cache, prior=prior)
    assert good["pixel_pass"] and good["stronger"]
    assert same["stronger"] is False and same["pixel_pass"] is False


def test_since_checks_against_an_earlier_step(renders):
    im, slight, strong = renders
    step = _step({"say": "too much, halve it", "expect": {"b_mean": {"down": 0.3}, "since": {"step": 0,
                  "b_mean": {"up": 0.2}}}}, index=3)
    common = dict(original=im, renders={0: im, 1: strong, 2: strong}, region=None, cache=checks.StatsCache())
    assert check_step(step, before=strong, after=slight, **common)["pixel_pass"]
    assert not check_step(step, before=strong, after=im, **common)["pixel_pass"]   # all the way back: past it


def test_auc_is_the_chance_a_pass_outscores_a_fail():
    assert auc([(0.9, True), (0.2, False)])["auc"] == 1.0
    assert auc([(0.1, True), (0.8, False)])["auc"] == 0.0
    assert auc([(0.5, True), (0.5, False)])["auc"] == 0.5
    assert auc([(0.5, True)])["auc"] is None


def test_the_judge_separates_right_edits_from_wrong_ones():
    cases = labelled_cases(long_side=256, requests=SMOKE_REQUESTS)
    right = [c for c in cases if c["variant"] == "right"]
    wrong = [c for c in cases if c["variant"] in ("opposite", "tiny")]
    assert right and wrong
    assert all(c["pixel_pass"] for c in right) and not any(c["pixel_pass"] for c in wrong)
    from agent.config import load_config

    min_pass = load_config().min_pass_score
    assert all(c["score"] >= min_pass for c in right), right
    assert all(c["score"] < min_pass for c in wrong), wrong    # wrong-way and no-op edits never pass
    d = discrimination([], cases)
    assert d["labelled"]["auc"] >= 0.9


@pytest.fixture(scope="module")
def smoke_runs(heldout, tuning):
    pair = [s for s in heldout + tuning if "smoke" in s.tags]
    assert {s.split for s in pair} == {"heldout", "tuning"}
    return flatten(run_suite(pair, RunOptions(long_side=384), workers=1))


def test_a_smoke_pair_runs_through_the_studio_and_is_reported_per_split(smoke_runs):
    turns, records = smoke_runs
    assert not [r for r in records if r.get("error")]
    summary = conversation_summary(turns)
    for split in ("heldout", "tuning"):
        s = summary[split]
        assert s["turns"] == s["checked"] > 0
        assert 0.0 <= s["compliance"] <= 1.0
        assert s["latency_s"]["p95"] is not None
        assert sum(k["n"] for k in s["by_kind"].values()) == s["checked"]
    assert {t["metric"] for t in summary["targets"]} == {"heldout_compliance", "conversation_latency_p95_s"}
    # the replies of the run: plain, no doubled words, no contradicting directions
    w = wording_summary(turns)
    assert w["texts"] > 0 and w["problems"] == [], w["problems"]
    for t in turns:
        assert "b*" not in (t["reply"] or "") and "L*" not in (t["reply"] or ""), t["reply"]


def test_every_reply_of_the_whole_eval_suite_reads_cleanly():
    """Every message of every suite through the real planner and judge: the composed reply
    and its details have no doubled words and no direction word against a value."""
    import cv2

    from agent.judging.base import JudgeRequest
    from agent.judging.embedded import EmbeddedJudge
    from agent.loop.nodes import apply_sub_goals
    from agent.planning.base import PlanRequest
    from agent.planning.embedded import EmbeddedPlanner
    from agent.planning.selection import NO_SELECTION_REPLY, resolve_selection
    from agent.conversation.wording import compose_reply, contradictions, repeated_words
    from pipeline.masks import build_mask
    from pipeline.measure import image_stats
    from pipeline.render import in_frame_of

    planner, judge = EmbeddedPlanner(), EmbeddedJudge()
    photos: dict[str, np.ndarray] = {}
    problems, n = [], 0
    for scenario in load_scenarios():
        if scenario.image not in photos:
            img = load_photo(scenario.image)
            h, w = img.shape[:2]
            s = 160 / max(h, w)
            photos[scenario.image] = np.ascontiguousarray(
                cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA))
        im = photos[scenario.image]
        for step in scenario.steps:
            if step.action != "say":
                continue
            plan = planner.plan(PlanRequest(message=step.text, state=EditState(), image_stats=image_stats(im),
                                            image=im, original=im))
            reply, details = plan.reply, ""
            goals, no_selection = resolve_selection(list(plan.sub_goals), {})   # as the planner node does
            if no_selection:
                reply = NO_SELECTION_REPLY
            elif plan.understood and plan.sub_goals:
                state, _ = apply_sub_goals(EditState(), goals)
                masks = {}
                for g in goals:
                    if g.target:
                        import json
                        masks[json.dumps(g.target, sort_keys=True)] = build_mask(g.target, im, im.shape[:2])
                framed = render(im, in_frame_of(EditState(), state))    # the original in the new frame, as the node does
                a = judge.assess(JudgeRequest(original=framed, current=render(im, state), sub_goals=goals,
                                              state=state, previous_state=EditState(), previous=framed,
                                              masks=masks, message=step.text))
                reply, details = compose_reply(plan.reply, a.to_dict())
            n += 1
            for text in (reply, details):
                for found in repeated_words(text) + contradictions(text):
                    # a held-out reply may quote the person: its place is reported, never its words
                    problems.append((scenario.id, step.index, "(held-out)" if scenario.split in HIDDEN_SPLITS
                                     else found))
    assert n > 300
    assert problems == [], problems


def test_a_version_turned_down_in_words_during_review_is_measured_as_rolled_back():
    """In review mode the harness keeps the waiting version when the person types on (an approval), except
    when the words turn it down ("dont apply that one", "undo"): the Studio rolls it back, and the step is
    measured against what the person was looking at (the version under review), so going back acts."""
    scenario = scenario_from_dict({
        "id": "review-turned-down", "image": "rocket", "review_mode": "always",
        "steps": [{"say": "warmer", "expect": {"b_mean": {"up": 1}}},
                  {"approve": True, "expect": {"against": "original", "b_mean": {"up": 1}}},
                  {"say": "brighter", "expect": {"L_mean": {"up": 1}}},
                  {"say": "nah, dont apply that one", "expect": {"same_as_step": 2}},
                  {"say": "brighter", "expect": {"L_mean": {"up": 1}}},
                  {"say": "undo", "expect": {"same_as_step": 2}},
                  {"say": "more contrast", "expect": {"rms_contrast": {"up": 0.3}}},
                  {"say": "and warmer", "expect": {"b_mean": {"up": 0.5}}}]},
        suite="conversation", split="tuning")
    turns, _ = flatten(run_suite([scenario], RunOptions(long_side=256), workers=1))
    by_step = {int(t["step"]): t for t in turns}
    assert by_step[4]["status"] == "rolled_back" and by_step[4]["pixel_pass"], by_step[4]
    assert not by_step[4]["implicit_approve"]
    assert by_step[6]["status"] == "rolled_back" and by_step[6]["pixel_pass"], by_step[6]
    assert by_step[8]["implicit_approve"]           # typing on keeps the waiting version
