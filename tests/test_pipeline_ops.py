"""The op registry and EditState: one declaration, everything derived from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from pipeline import ops
from pipeline.masks import mask_json_schema
from pipeline.state import EditState, EditStateError, state_json_schema

REPO = Path(__file__).resolve().parents[1]


def test_registry_declares_every_op_of_the_design():
    expected = {"exposure", "contrast", "highlights", "shadows", "whites", "blacks", "temperature", "tint",
                "saturation", "vibrance", "clarity", "dehaze", "sharpen"}
    expected |= {f"{k}_{b}" for k in ("hue", "saturation", "luminance") for b in ops.BANDS}
    # issue 11: geometry and finishing
    expected |= {"rotate", "flip_h", "flip_v", "straighten", "auto_straighten", "crop_left", "crop_top",
                 "crop_right", "crop_bottom", "crop_aspect", "crop_zoom", "tone_curve", "curve_points",
                 "noise_reduction", "color_noise_reduction", "vignette", "vignette_midpoint",
                 "vignette_feather", "grain", "grain_size"}
    expected |= {f"grade_{r}{h}" for r in ("shadows", "midtones", "highlights") for h in ("", "_hue")}
    # issue 11: healing and portrait
    expected |= {"dust_removal", "blemish_removal", "red_eye", "skin_smoothing", "even_skin_tone",
                 "teeth_whitening", "eye_brightening", "remove"}
    assert set(ops.OPS) == expected
    assert len(ops.BANDS) == 8


def test_every_op_is_declared_on_the_photographers_scale():
    for op in ops.OPS.values():
        assert op.stage in ops.STAGES and op.control in ops.CONTROLS
        assert op.description and op.label and op.default == 0, op.name
        if op.stage in ("finishing", "geometry"):
            assert op.min <= 0 <= op.max, op.name  # 0 is still the identity
            continue
        if op.kind in ("retouch", "region"):  # 0 = untouched, the strongest at 100
            assert (op.min, op.max) == (0, 100), op.name
            continue
        assert (op.min, op.max, op.default) == (-100, 100, 0), op.name
        assert op.plus and op.minus


def test_ops_are_listed_in_render_stage_order():
    order = [ops.STAGES.index(o.stage) for o in ops.OPS.values()]
    assert order == sorted(order)


def test_check_and_clamp_name_the_op():
    assert ops.check_value("exposure", 40) == 40
    with pytest.raises(ops.OpError, match="exposure: 140 is outside its range -100..100"):
        ops.check_value("exposure", 140)
    with pytest.raises(ops.OpError, match="unknown op 'exposur'.*did you mean exposure"):
        ops.check_value("exposur", 1)
    with pytest.raises(ops.OpError, match="expected a number"):
        ops.check_value("contrast", "20")
    with pytest.raises(ops.OpError, match="finite"):
        ops.check_value("contrast", float("nan"))
    assert ops.clamp_value("exposure", 140) == 100
    assert ops.clamp_value("exposure", -7.6) == -8


def test_check_settings_reports_every_problem_at_once():
    with pytest.raises(ops.OpError) as exc:
        ops.check_settings({"expsure": 3, "contrast": 300, "tint": 5})
    assert "expsure" in str(exc.value) and "contrast: 300" in str(exc.value)
    assert ops.check_settings({"tint": 5, "exposure": 0}) == {"tint": 5}


def test_op_table_has_one_line_per_op_name_first():
    lines = ops.op_table().splitlines()
    assert [l.split()[0] for l in lines] == list(ops.OPS)


def test_list_ops_cli_prints_the_table():
    out = subprocess.run([sys.executable, "-m", "pipeline.apply", "--list-ops"], cwd=REPO,
                         capture_output=True, text=True, check=True).stdout
    assert [l.split()[0] for l in out.splitlines()] == list(ops.OPS)


def test_subgoal_schema_accepts_registry_ops_and_masks_only():
    schema = ops.subgoal_json_schema(mask_json_schema())
    jsonschema.validate({"op": "temperature", "value": 20, "target": {"type": "sky"}}, schema)
    jsonschema.validate({"op": "temperature", "value": 20, "target": None}, schema)
    for bad in ({"op": "rm -rf", "value": 1}, {"op": "exposure", "value": 101},
                {"op": "exposure", "value": 5, "target": {"type": "unicorn"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_edit_state_json_round_trip_is_exact():
    state = (EditState()
             .with_value("exposure", 20)
             .with_value("temperature", -15)
             .with_value("exposure", -30, mask={"type": "sky"}, layer_name="sky")
             .with_value("saturation_blue", 25, mask={"type": "color", "band": "blue", "feather": 20}))
    again = EditState.from_json(state.to_json())
    assert again == state
    assert again.key() == state.key()
    jsonschema.validate(json.loads(state.to_json()), state_json_schema())


def test_zero_values_are_not_stored_so_equal_looks_share_a_key():
    a = EditState().with_value("exposure", 20).with_value("contrast", 10).with_value("contrast", 0)
    b = EditState().with_value("exposure", 20)
    assert a == b and a.key() == b.key()
    assert EditState().is_identity
    assert EditState.from_dict({"settings": {"exposure": 0}}).is_identity


def test_add_mode_moves_and_clamps_set_mode_sets():
    s = EditState().with_value("temperature", 60)
    assert s.with_value("temperature", 30, mode="add").value("temperature") == 90
    assert s.with_value("temperature", 80, mode="add").value("temperature") == 100
    assert s.with_value("temperature", -20).value("temperature") == -20
    with pytest.raises(ops.OpError):
        s.with_value("temperature", 80, mode="add", clamp=False)


def test_local_edits_reuse_the_layer_with_the_same_mask():
    s = EditState().with_value("exposure", -20, mask={"type": "sky"})
    s = s.with_value("saturation", 10, mask={"type": "sky"})
    s = s.with_value("exposure", 10, mask={"type": "face"})
    assert len(s.layers) == 2
    assert s.layers[0].settings == {"exposure": -20, "saturation": 10}
    assert s.value("exposure", {"type": "face"}) == 10
    assert s.value("exposure") == 0


@pytest.mark.parametrize("data, message", [
    ({"settings": {"expsure": 3}}, "state.settings: unknown op 'expsure'"),
    ({"settings": {"contrast": 300}}, "state.settings: contrast: 300 is outside"),
    ({"settings": {}, "layers": [{"settings": {"exposure": 5}}]}, "state.layers[0].mask: required"),
    ({"layers": [{"mask": {"type": "sky"}, "opacity": 2}]}, "state.layers[0].opacity"),
    ({"layers": [{"mask": {"type": "radial", "radius": [0, 0.2]}}]}, "radius"),
    ({"colour": {}}, "unknown field(s) colour"),
])
def test_bad_states_are_rejected_naming_the_field(data, message):
    with pytest.raises(EditStateError) as exc:
        EditState.from_dict(data)
    assert message in str(exc.value)


def test_clamp_mode_rounds_values_in_but_never_drops_unknown_ops():
    s = EditState.from_dict({"settings": {"contrast": 300, "tint": -7.4}}, clamp=True)
    assert s.settings == {"contrast": 100, "tint": -7}
    with pytest.raises(EditStateError, match="unknown op"):
        EditState.from_dict({"settings": {"sparkle": 10}}, clamp=True)


def test_malformed_json_is_a_clear_error():
    with pytest.raises(EditStateError, match="not valid JSON"):
        EditState.from_json("{settings: ")


def test_what_the_project_knows_about_an_op_is_on_its_registry_entry():
    """Range, stage, sweet spot, measured effect and math: one entry per op (issue 21)."""
    import importlib

    from profiles import load_profile

    for op in ops.OPS.values():
        if op.stage in ("white-balance-tone-contrast", "color-temperature", "hsl", "local-editing"):
            assert op.effect is not None and op.math, op.name
        if op.math:
            module, _, name = op.math.rpartition(".")
            assert callable(getattr(importlib.import_module(module), name)), op.name
        if op.sweet_spot is not None:
            low, high = op.sweet_spot
            assert op.min <= low < 0 < high <= op.max and op.why and op.failure_modes, op.name
    dehaze = ops.get_op("dehaze")
    assert (dehaze.stage, dehaze.min, dehaze.max) == ("local-editing", -100, 100)
    assert dehaze.effect.metric == "haze" and dehaze.effect.polarity == -1.0
    spot = load_profile("engine").sweet_spot("dehaze")       # the engine profile reads the registry's
    assert (spot.low, spot.high, spot.why) == (*dehaze.sweet_spot, dehaze.why)


def test_a_small_contrast_step_shows_in_the_midtones():
    """The midtone slope grows in step with the value (+20 -> 1.18, +100 -> 1.9), so "a bit more contrast"
    (+10) is seen; a steepness fixed per value made +20 a slope of 1.04, a change nobody saw."""
    import numpy as np
    from pipeline.adjust import contrast_curve
    x = np.array([0.49, 0.51], dtype=np.float32)
    for value, slope in ((10, 1.09), (20, 1.18), (45, 1.405), (100, 1.9)):
        y = contrast_curve(x, value)
        assert abs((y[1] - y[0]) / 0.02 - slope) < 0.01, value
    ends = contrast_curve(np.array([0.0, 1.0], dtype=np.float32), -100)
    assert ends.tolist() == [0.0, 1.0]
