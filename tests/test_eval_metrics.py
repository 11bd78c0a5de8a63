"""Known-answer tests for the evaluation metrics and checks, and the shipped scenario files.

Every metric function gets a case whose answer is worked out by hand (or by an
independent formula) so a wrong formula fails here, not in the README figures.
"""

from __future__ import annotations

import numpy as np
import pytest
import skimage.data
from skimage.color import rgb2lab

from agent.eval import checks, metrics
from agent.eval.runner import check_step, scenario_drift
from agent.eval.scenarios import (Condition, ScenarioError, load_scenarios, scenario_from_dict,
                                  smoke_subset)
from pipeline import ops
from pipeline.masks import build_mask, normalize_mask_spec


# -- pixel checks --------------------------------------------------------------------


def _grey(value: int, size: int = 64) -> np.ndarray:
    return np.full((size, size, 3), value, np.uint8)


def _lightness(value: int) -> float:
    return float(rgb2lab(np.array([[[value, value, value]]], np.uint8))[0, 0, 0])


def test_identical_images_have_ssim_one_and_no_change():
    img = skimage.data.astronaut()
    region = np.zeros(img.shape[:2], np.float32)
    region[100:200, 100:200] = 1
    assert checks.preservation_ssim(img, img.copy(), region) == pytest.approx(1.0)
    a, b = checks.photo_stats(img), checks.photo_stats(img.copy())
    assert all(checks.stat_change(k, a[k], b[k]) == 0 for k in checks.STAT_NAMES)


def test_known_lightness_shift_passes_and_fails_at_the_right_threshold():
    before, after = _grey(119), _grey(128)
    expected = _lightness(128) - _lightness(119)           # about +3.6 L*
    sb, sa = checks.photo_stats(before), checks.photo_stats(after)
    assert checks.stat_change("L_mean", sb["L_mean"], sa["L_mean"]) == pytest.approx(expected, abs=1e-3)

    def holds(**cond) -> bool:
        direction = next(k for k in ("up", "down", "within") if k in cond)
        c = Condition("L_mean", direction, cond[direction], cond.get("at_most"))
        return checks.check_condition(c, sb, sa).passed

    assert holds(up=expected - 0.05)
    assert not holds(up=expected + 0.05)
    assert not holds(down=0.1)                               # brighter is not darker
    assert holds(within=expected + 0.05)
    assert not holds(within=expected - 0.05)
    assert holds(up=1, at_most=expected + 0.05)
    assert not holds(up=1, at_most=expected - 0.05)          # "slightly" must not be "much"
    # the reverse pair is a darkening of the same size
    assert checks.check_condition(Condition("L_mean", "down", expected - 0.05), sa, sb).passed


def test_hue_changes_go_the_short_way_round():
    assert checks.stat_change("bands.red.hue_mean", 350.0, 10.0) == pytest.approx(20.0)
    assert checks.stat_change("bands.red.hue_mean", 10.0, 350.0) == pytest.approx(-20.0)
    assert checks.stat_change("L_mean", 10.0, 350.0) == pytest.approx(340.0)


def test_rollback_bytes_equal_is_exact_and_one_level_off_is_not():
    img = skimage.data.coffee()
    other = img.copy()
    assert checks.pixels_identical(img, other)
    other[10, 10, 0] ^= 1
    assert not checks.pixels_identical(img, other)
    assert not checks.pixels_identical(img, img[:-1])
    assert metrics.rollback_exactness([True, True, True]) == 1.0
    assert metrics.rollback_exactness([True, False]) == 0.5
    assert metrics.rollback_exactness([]) is None


def test_local_edit_is_seen_inside_and_preserved_outside():
    img = skimage.data.astronaut()
    spec = normalize_mask_spec({"type": "radial", "center": [0.5, 0.3], "radius": [0.15, 0.15], "softness": 0.2})
    region = build_mask(spec, img, img.shape[:2])
    brighter = np.clip(img.astype(np.float32) + 40 * region[..., None], 0, 255).astype(np.uint8)
    everywhere = np.clip(img.astype(np.float32) + 40, 0, 255).astype(np.uint8)
    step = scenario_from_dict({
        "id": "local", "image": "astronaut", "say": "brighten the middle", "region": spec,
        "expect": {"inside": {"L_mean": {"up": 5}}, "outside": {"L_mean": {"within": 1}}, "preserve_outside": 0.95},
    }, suite="single").steps[0]

    def verdict(after: np.ndarray) -> dict:
        return check_step(step, before=img, after=after, original=img, renders={0: img}, region=region,
                          cache=checks.StatsCache())

    good = verdict(brighter)
    assert good["pixel_pass"] is True
    assert good["preservation_ssim"] > 0.95
    spill = verdict(everywhere)
    assert spill["pixel_pass"] is False
    assert spill["preservation_ssim"] < good["preservation_ssim"]
    assert [c["passed"] for c in spill["checks"]] == [True, False]   # inside brighter, outside moved too
    unchanged = verdict(img.copy())
    assert unchanged["pixel_pass"] is False and unchanged["preservation_ssim"] == pytest.approx(1.0)


def test_rollback_step_is_judged_by_bytes():
    img = skimage.data.chelsea()
    step = scenario_from_dict({"id": "r", "image": "chelsea", "steps": [
        {"say": "warmer"}, {"say": "brighter"}, {"rollback": 1}]}, suite="multi").steps[2]
    assert step.expect.same_as_step == 1
    after_1 = np.ascontiguousarray(img[..., ::-1])
    ok = check_step(step, before=img, after=after_1.copy(), original=img, renders={0: img, 1: after_1},
                    region=None, cache=checks.StatsCache())
    assert ok["rollback_exact"] is True and ok["pixel_pass"] is True
    off = after_1.copy()
    off[0, 0, 0] ^= 1
    bad = check_step(step, before=img, after=off, original=img, renders={0: img, 1: after_1},
                     region=None, cache=checks.StatsCache())
    assert bad["rollback_exact"] is False and bad["pixel_pass"] is False


# -- metric arithmetic ---------------------------------------------------------------


def test_compliance_ratio_arithmetic():
    assert metrics.compliance([True, False, True, None]) == pytest.approx(2 / 3)
    assert metrics.compliance([None, None]) is None
    assert metrics.compliance([False]) == 0.0


def test_drift_is_the_absolute_change_of_named_statistics():
    before = {"L_mean": 50.0, "a_mean": 1.0, "b_mean": 4.0}
    after = {"L_mean": 52.5, "a_mean": -2.0, "b_mean": 9.0}
    assert metrics.drift(before, after, ["L_mean", "a_mean"]) == {"L_mean": 2.5, "a_mean": 3.0}
    assert metrics.untouched_stats(["b_mean", "L_mean"]) == ["a_mean", "chroma_mean", "rms_contrast"]


def test_scenario_drift_counts_only_held_and_never_moved_statistics():
    img = _grey(119)
    warmer = img.copy()
    warmer[..., 0] = 130                                       # redder: a* and b* move, L* a little
    scenario = scenario_from_dict({"id": "d", "image": "astronaut", "steps": [
        {"say": "warmer", "expect": {"b_mean": {"up": 1}, "L_mean": {"within": 5}}},
        {"say": "more contrast", "expect": {"rms_contrast": {"up": 0.1}, "a_mean": {"within": 1}}},
        {"say": "brighter", "expect": {"L_mean": {"up": 1}}}]}, suite="multi")
    d = scenario_drift(scenario, img, warmer, checks.StatsCache())
    assert set(d) == {"a_mean"}                                # L_mean was moved by step 3
    sb, sa = checks.photo_stats(img), checks.photo_stats(warmer)
    assert d["a_mean"] == pytest.approx(abs(sa["a_mean"] - sb["a_mean"]))


def test_judge_agreement_confusion_counts_and_kappa():
    pairs = [(True, True)] * 40 + [(True, False)] * 10 + [(False, True)] * 5 + [(False, False)] * 45
    pairs += [(None, True), (True, None)]                      # unmeasured sides are skipped
    r = metrics.judge_agreement(pairs)
    assert (r["tp"], r["fp"], r["fn"], r["tn"], r["n"]) == (40, 10, 5, 45, 100)
    assert r["agreement"] == pytest.approx(0.85)
    # expected agreement = 0.5*0.45 + 0.5*0.55 = 0.5 -> kappa = (0.85 - 0.5) / 0.5
    assert r["kappa"] == pytest.approx(0.7)
    assert metrics.judge_agreement([])["agreement"] is None


def test_context_budget_overflow_and_latency():
    r = metrics.context_budget([100, 2000, 2001, None], 2000)
    assert (r["n"], r["max"], r["overflow"]) == (3, 2001, 1)
    assert r["overflow_rate"] == pytest.approx(1 / 3)
    assert metrics.context_budget([], 2000)["overflow_rate"] is None
    assert metrics.latency_excluding_model(5.0, 3.5) == pytest.approx(1.5)
    assert metrics.latency_excluding_model(1.0, None) == 1.0
    assert metrics.latency_excluding_model(1.0, 2.0) == 0.0


def test_percentiles_match_numpy():
    xs = [3.0, 1.0, 4.0, 1.5, 9.0, 2.6]
    s = metrics.summary_stats(xs + [None])
    assert s["n"] == 6 and s["min"] == 1.0 and s["max"] == 9.0
    assert s["p50"] == pytest.approx(np.percentile(xs, 50))
    assert s["p95"] == pytest.approx(np.percentile(xs, 95))


def _turn(suite: str, step: int, passed: bool | None, **extra) -> dict:
    return {"scenario": f"{suite}-x", "suite": suite, "step": step, "action": "say",
            "instruction": "x", "pixel_pass": passed, "checks": [], **extra}


def test_summary_groups_turns_and_checks_targets():
    turns = [_turn("single", 1, True) for _ in range(9)] + [_turn("single", 1, False)]
    turns += [_turn("multi", i, i != 7) for i in range(1, 11)]          # one failure after turn 5
    turns += [_turn("soak", i, True, prompt_tokens=1500 + i, latency_s=0.5) for i in range(1, 51)]
    turns.append({**_turn("multi", 4, None), "action": "rollback", "rollback_exact": True})
    turns.append({**_turn("single", 1, True), "preservation_ssim": 0.97, "judge_pass": False})
    s = metrics.summarize(turns, [], budget=2000)
    assert s["compliance"]["single_turn"] == pytest.approx(10 / 11)
    # after 5 turns: multi steps 6..10 (one of five fails) + soak steps 6..50 (45 pass)
    assert s["counts"]["after_5_turns"] == 50
    assert s["compliance"]["after_5_turns"] == pytest.approx(49 / 50)
    assert s["rollback"]["rate"] == 1.0
    assert s["context"]["soak_last_turn"] == 1550
    assert s["context"]["all_turns"]["overflow_rate"] == 0.0
    met = {t["metric"]: t["met"] for t in s["targets"]}
    assert met["single_turn_compliance"] is True            # 0.909 >= 0.90
    assert met["compliance_after_5_turns"] is True
    assert met["preservation_ssim"] is True
    assert met["rollback_exactness"] is True
    assert s["judge_agreement"]["fn"] == 1
    assert len(s["failures"]) == 2
    turns.append(_turn("single", 1, False))                   # 10/12 = 0.83 misses 0.90
    assert {t["metric"]: t["met"] for t in metrics.summarize(turns, [])["targets"]}[
        "single_turn_compliance"] is False


# -- scenario files ------------------------------------------------------------------


def test_shipped_scenarios_load_and_cover_the_brief():
    scenarios = load_scenarios()
    single = [s for s in scenarios if s.suite == "single"]
    multi = [s for s in scenarios if s.suite == "multi"]
    soak = [s for s in scenarios if s.suite == "soak"]
    assert len(single) >= 40
    assert len(multi) >= 8 and all(5 <= len(s.steps) <= 10 for s in multi)
    assert [len(s.steps) for s in soak] == [50]
    tags = {t for s in single for t in s.tags}
    for family in ("tone", "white-balance", "color", "hsl", "detail", "artistic", "magnitude",
                   "negation", "local", "compound"):
        assert family in tags, family
    actions = {st.action for s in multi for st in s.steps}
    assert actions == {"say", "approve", "modify", "rollback", "replan"}
    for s in scenarios:
        for st in s.steps:
            assert st.action != "say" or not st.expect.is_empty, (s.id, st.index)
            for c in st.expect.conditions:
                assert c.stat in checks.STAT_NAMES
            for op in (st.values or {}):
                assert op in ops.OPS
            if st.region is not None:
                assert normalize_mask_spec(st.region) == st.region
    assert 1 <= len(smoke_subset(scenarios)) <= 6


@pytest.mark.parametrize("bad, field", [
    ({"say": "warmer", "expect": {"warmth": {"up": 1}}}, "warmth"),
    ({"say": "warmer", "expect": {"b_mean": {"up": 1, "down": 1}}}, "b_mean"),
    ({"say": "darken the sky", "region": {"type": "sky", "size": 3}}, "region"),
    ({"say": "x", "expect": {"inside": {"L_mean": {"up": 1}}}}, "inside"),
    ({"steps": [{"say": "x"}, {"rollback": 2}]}, "rollback"),
    ({"steps": [{"say": "x"}, {"modify": {"exposure": 500}}]}, "exposure"),
    ({"steps": [{"approve": True}]}, "steps[1]"),
])
def test_bad_scenarios_are_refused_naming_the_field(bad, field):
    with pytest.raises(ScenarioError) as err:
        scenario_from_dict({"id": "bad", "image": "astronaut", **bad}, suite="single")
    assert field in str(err.value)
