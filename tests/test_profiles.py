"""Profiles: every shipped profile loads; fallback, validation, caching and accessors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

import profiles
from pipeline import ops
from pipeline.state import EditState
from profiles import ProfileError, list_profiles, load_profile, resolve_profile_path

PROFILES_DIR = Path(profiles.__file__).resolve().parent

MINIMAL = {
    "meta": {"model_id": "acme-vl", "family": "acme", "modality": "vision-language", "aliases": ["acme-vl-*"]},
    "prompt_engineering": {"structured_output": "none"},
    "parameter_space": {"ops": {"saturation": {"sweet_spot": [-50, 40], "why": "skin posterises"}}},
    "quality_signatures": {
        "quality_floor": 0.5,
        "iteration_signals": {"oversaturated": {"adjust": [{"op": "saturation", "direction": "decrease", "amount": 20}]}},
    },
}


def write_profile(tmp_path: Path, data: dict, name: str = "acme.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def mutated(**changes) -> dict:
    """MINIMAL with dotted-path changes applied; a value of None deletes the key."""
    data = yaml.safe_load(yaml.safe_dump(MINIMAL))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = data
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return data


@pytest.fixture(autouse=True)
def fresh_cache():
    profiles.clear_profile_cache()
    yield
    profiles.clear_profile_cache()


def test_every_shipped_profile_loads_with_its_three_sections():
    names = list_profiles()
    assert "engine" in names and "default_vlm" in names
    for name in names:
        p = load_profile(name)
        assert not p.is_fallback, name
        assert p.planner_view()["meta"]["model_id"] == p.model_id
        assert isinstance(p.executor_view()["ops"], dict)
        assert 0 <= p.judge_view()["quality_floor"] <= 1


def test_schema_file_is_not_a_profile():
    assert "_schema" not in list_profiles()


def test_unknown_model_falls_back_to_default_vlm_and_is_flagged():
    p = load_profile("totally-unknown-vlm-13b")
    assert p.is_fallback
    assert p.name == "default_vlm"
    assert "totally-unknown-vlm-13b" in p.warning
    assert p.planner_view()["is_fallback"] is True
    assert load_profile("default_vlm").is_fallback is False


def test_known_names_and_aliases_are_not_fallbacks():
    assert load_profile("engine").is_fallback is False
    assert load_profile("embedded").name == "engine"       # an alias in engine.yaml
    assert load_profile("ENGINE").name == "engine"


def test_cache_returns_the_same_object():
    a = load_profile("engine")
    assert load_profile("engine") is a
    assert load_profile(PROFILES_DIR / "engine.yaml") is a
    assert load_profile("unknown-model-x") is load_profile("unknown-model-x")


def test_cached_profile_cannot_be_mutated_through_its_views():
    p = load_profile("engine")
    view = p.executor_view()
    view["ops"]["saturation"]["sweet_spot"] = [-1, 1]
    assert p.sweet_spot("saturation").high == 40
    with pytest.raises(TypeError):
        p.data["meta"]["model_id"] = "changed"


def test_malformed_profile_names_file_and_field(tmp_path):
    path = write_profile(tmp_path, mutated(quality_signatures__quality_floor="high"))
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert err.value.file.endswith("acme.yaml")
    assert err.value.field == "quality_signatures.quality_floor"
    assert "acme.yaml" in str(err.value) and "quality_floor" in str(err.value)


def test_missing_section_is_named(tmp_path):
    path = write_profile(tmp_path, mutated(parameter_space=None))
    with pytest.raises(ProfileError, match="parameter_space") as err:
        load_profile(path)
    assert err.value.field == "parameter_space"


def test_missing_required_field_is_named(tmp_path):
    path = write_profile(tmp_path, mutated(meta__model_id=None))
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert err.value.field == "meta.model_id"


def test_sweet_spot_without_why_is_rejected(tmp_path):
    path = write_profile(tmp_path, mutated(parameter_space__ops={"contrast": {"sweet_spot": [-40, 40]}}))
    with pytest.raises(ProfileError, match="why"):
        load_profile(path)


def test_unknown_op_in_parameter_space_is_rejected(tmp_path):
    path = write_profile(tmp_path, mutated(parameter_space__ops={"glamour": {"sweet_spot": [0, 10], "why": "x"}}))
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert err.value.field == "parameter_space.ops.glamour"
    assert "glamour" in str(err.value)


def test_unknown_op_in_iteration_signal_or_intent_is_rejected(tmp_path):
    bad_signal = mutated(quality_signatures__iteration_signals={
        "too_dark": {"adjust": [{"op": "brightness", "direction": "increase", "amount": 10}]}})
    with pytest.raises(ProfileError, match=r"iteration_signals\.too_dark\.adjust\[0\]\.op"):
        load_profile(write_profile(tmp_path, bad_signal, "a.yaml"))
    bad_intent = mutated(prompt_engineering__intent_translations={"glow": {"ops": {"bloom": 20}}})
    with pytest.raises(ProfileError, match=r"intent_translations\.glow\.ops\.bloom"):
        load_profile(write_profile(tmp_path, bad_intent, "b.yaml"))


def test_bad_mask_spec_and_out_of_range_sweet_spot_are_rejected(tmp_path):
    bad_mask = mutated(prompt_engineering__targets={"sky": {"words": ["sky"], "mask": {"type": "clouds"}}})
    with pytest.raises(ProfileError, match=r"targets\.sky\.mask"):
        load_profile(write_profile(tmp_path, bad_mask, "a.yaml"))
    bad_range = mutated(parameter_space__ops={"saturation": {"sweet_spot": [40, -40], "why": "x"}})
    with pytest.raises(ProfileError, match="sweet_spot"):
        load_profile(write_profile(tmp_path, bad_range, "b.yaml"))


def test_invalid_yaml_names_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("meta: {model_id: x\nfamily: [")
    with pytest.raises(ProfileError, match="broken.yaml.*YAML"):
        load_profile(path)


def test_extends_merges_over_a_shipped_profile(tmp_path):
    path = write_profile(tmp_path, {"extends": "default_vlm",
                                    "meta": {"model_id": "acme-2", "family": "acme", "modality": "vision-language"}})
    p = load_profile(path)
    base = load_profile("default_vlm")
    assert p.model_id == "acme-2"
    assert p.quality_floor == base.quality_floor


def test_aliases_match_model_ids_with_an_org_prefix(tmp_path):
    write_profile(tmp_path, MINIMAL, "acme.yaml")
    assert resolve_profile_path("Org/ACME-VL-7B-Instruct", tmp_path) == tmp_path / "acme.yaml"
    assert resolve_profile_path("acme-vl", tmp_path) == tmp_path / "acme.yaml"
    assert resolve_profile_path("other-model", tmp_path) is None


def test_engine_accessors_per_consumer():
    p = load_profile("engine")
    spot = p.sweet_spot("saturation")
    assert (spot.low, spot.high) == (-50, 40)
    assert "skin" in spot.why
    assert p.sweet_spot("hue_purple") is None
    signal = p.iteration_signal("Highlights clipped")
    assert {(a.op, a.direction) for a in signal.adjust} >= {("highlights", "decrease")}
    assert p.iteration_signal("blown_highlights").diagnosis == "highlights_clipped"
    assert p.iteration_signal("oversaturated").adjust[0].value < 0
    assert p.iteration_signal("effect_too_weak").scale_plan > 1
    assert p.iteration_signal("no such thing") is None
    assert "intent_translations" in p.planner_view()
    assert p.judge_view()["quality_floor"] == p.quality_floor


def test_engine_sweet_spots_all_say_why():
    p = load_profile("engine")
    for op, entry in p.executor_view()["ops"].items():
        assert op in ops.OPS
        if "sweet_spot" in entry:
            assert len(entry["why"]) > 20, op


def test_engine_styles_are_valid_edit_states():
    p = load_profile("engine")
    assert {"film", "airy", "moody", "vivid", "black_and_white"} <= set(p.styles())
    for name in p.styles():
        state = EditState.from_dict({"settings": p.style(name)})
        assert not state.is_identity, name
    assert p.style("Black and white")["saturation"] == -100
    with pytest.raises(ProfileError, match="known styles"):
        p.style("psychedelic")


def test_magnitude_words_land_in_their_named_band():
    """A moderate move (the middle of 'moderate') scaled by each word lands in the word's band."""
    low, high = ops.MAGNITUDES["moderate"]
    reference = (low + high) / 2
    words = load_profile("engine").vocabulary["magnitudes"]["words"]
    assert len(words) >= 8
    for word, entry in words.items():
        lo, hi = ops.MAGNITUDES[entry["level"]]
        assert lo <= reference * entry["scale"] <= hi, word
    assert words["slightly"]["scale"] < 1 < words["much"]["scale"] < words["extremely"]["scale"]


def test_fallback_warning_text_is_for_people():
    text = textwrap.shorten(load_profile("my-new-model").warning, 200)
    assert "my-new-model" in text and "default_vlm" in text


def test_engine_colour_shifts_cover_every_band_the_right_way():
    """"X towards Y": a cast for every band, its ops real, each pointing at its colour."""
    pe = load_profile("engine").vocabulary
    shifts = pe["colour_shifts"]
    low, high = ops.MAGNITUDES["moderate"]
    assert low <= shifts["hue"] <= high
    casts = shifts["casts"]
    assert set(casts) == set(ops.BANDS)
    for band, moves in casts.items():
        assert moves, band
        for op in moves:
            assert op in ops.OPS, (band, op)
    assert casts["green"]["tint"] < 0 < casts["magenta"]["tint"]          # tint +100 = more magenta
    assert casts["blue"]["temperature"] < 0 < casts["orange"]["temperature"]
    assert pe["grammar"]["towards"] and "to" not in pe["grammar"]["towards"]   # "to" is too common


@pytest.mark.parametrize("kind,verb,sign", [("tone_down", "tone down", -1), ("raise_up", "bring up", 1)])
def test_engine_implicit_intents_darken_or_lighten(kind, verb, sign):
    pe = load_profile("engine").vocabulary
    name = pe["implicit_intents"][kind]
    assert pe["intent_translations"][name]["ops"]["exposure"] * sign > 0
    assert verb in pe["grammar"][kind]


def test_engine_contrast_intents_are_visible_on_the_sigmoid():
    """The per-channel sigmoid's midtone slope is 1 + 0.9 * c/100 (pipeline.adjust.contrast_curve); a look or
    word whose main op is contrast still asks for at least a moderate amount, so it shows on flat photos."""
    low, _ = ops.MAGNITUDES["moderate"]
    for name, intent in load_profile("engine").intent_translations().items():
        op, value = next(iter(intent["ops"].items()))
        if op == "contrast":
            assert abs(value) >= low, name
