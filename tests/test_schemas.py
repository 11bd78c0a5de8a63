"""Output schemas: loading, inheritance, validation that names the bad field, the generator."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

import schemas
from schemas import SchemaError, fill_custom_fields, list_schemas, load_schema
from schemas.generate import generate_schema, infer_schema

REPO = Path(__file__).resolve().parents[1]

GOOD_PLAN = {
    "reply": "Warming the light and calming the sky.",
    "understood": True,
    "sub_goals": [
        {"op": "temperature", "value": 20, "description": "warmer light"},
        {"op": "highlights", "value": -30, "target": {"type": "sky"}},
        {"op": "exposure", "value": 15, "mode": "set", "target": None},
    ],
}

CINEMA_EXAMPLE = {
    "score": 0.82,
    "assessment": "Warmer and calmer; the subject stands out.",
    "composition_score": 0.7,
    "mood": "warm nostalgic",
    "shots": [{"label": "wide", "confidence": 0.9}, {"label": "close", "confidence": 0.4, "lens": 85}],
    "grading": {"lut": "kodak", "strength": 0.5, "passes": 2},
    "approved": True,
}


@pytest.fixture
def schema_root(tmp_path: Path) -> Path:
    """A private copy of the shipped schemas, so tests can add and break files."""
    root = tmp_path / "schemas"
    for agent in schemas.AGENTS:
        shutil.copytree(REPO / "schemas" / agent, root / agent)
    return root


def test_every_agent_has_a_readable_default_schema():
    for agent in schemas.AGENTS:
        schema = load_schema(agent)
        assert schema.name == "default" and schema.fields
        # every top-level field tells a person (and a model) what it means
        assert all(f.description for f in schema.fields.values()), agent
    assert load_schema("planner").required == ["reply", "understood", "sub_goals"]
    assert load_schema("quality").fields["score"].maximum == 1


def test_a_good_plan_validates_and_bad_fields_are_named():
    planner = load_schema("planner")
    assert planner.validate(GOOD_PLAN) == []
    bad = json.loads(json.dumps(GOOD_PLAN))
    bad["sub_goals"][0]["op"] = "glow"
    bad["sub_goals"][1]["value"] = 400  # beyond every op's range (hues go to 359)
    bad["sub_goals"][2]["target"] = {"type": "file", "path": "/etc/passwd"}
    bad["understood"] = "yes"
    problems = planner.validate(bad)
    assert any(p.startswith("sub_goals[0].op: unknown op 'glow'") for p in problems)
    assert "sub_goals[1].value: 400 is outside -359..359" in problems
    assert any(p.startswith("sub_goals[2].target.type:") for p in problems)
    assert "understood: expected true or false, got 'yes'" in problems
    with pytest.raises(schemas.SchemaValidationError) as err:
        planner.check(bad)
    assert "sub_goals[0].op" in str(err.value) and len(err.value.problems) == 4


def test_missing_extra_and_huge_are_each_reported():
    planner = load_schema("planner")
    problems = planner.validate({"understood": True, "sub_goals": [{"op": "exposure", "value": 5}] * 9,
                                 "shell": "rm -rf /"})
    assert any(p.startswith("reply: required") for p in problems)
    assert "sub_goals: 9 items, at most 6 allowed" in problems
    assert any("unknown field(s) shell" in p for p in problems)
    assert planner.validate(["not", "an", "object"]) == ["(top level): expected an object, got ['not', 'an', 'object']"]


def test_custom_schema_extends_default_and_adds_composition_score():
    cinema = load_schema("quality", "cinematographer")
    assert list(cinema.fields)[:4] == ["score", "assessment", "dimensions", "diagnoses"]
    assert cinema.custom_field_names() == ["composition_score", "lighting_quality", "mood", "color_grade"]
    assert cinema.fields["composition_score"].required
    ok = {"score": 0.8, "assessment": "fine", "composition_score": 0.6}
    assert cinema.validate(ok) == []
    assert load_schema("quality").validate(ok) == [
        "(top level): unknown field(s) composition_score; allowed: score, assessment, dimensions, diagnoses, "
        "model_limitations"]
    assert cinema.validate({"score": 0.8, "assessment": "fine"})[0].startswith("composition_score: required")
    assert cinema.validate({**ok, "color_grade": "neon"}) == [
        "color_grade: 'neon' is not one of natural, warm, cool, teal_orange, desaturated, high_contrast, film"]
    prompt = cinema.prompt_text()
    assert "composition_score (number 0..1, required): How well the edit supports the framing" in prompt


def test_unknown_names_are_rejected_with_the_choices():
    with pytest.raises(SchemaError, match=r"unknown quality schema 'noir'; available: default, cinematographer"):
        load_schema("quality", "noir")
    with pytest.raises(SchemaError, match="letters, digits"):
        load_schema("quality", "../planner/default")
    with pytest.raises(SchemaError, match="unknown agent 'painter'"):
        load_schema("painter")
    assert schemas.check_schema_name("quality", "cinematographer") == "cinematographer"
    assert list_schemas("quality") == ["default", "cinematographer"]


def test_custom_wins_over_standard_and_chains_merge(schema_root: Path):
    (schema_root / "quality" / "film.yaml").write_text(yaml.safe_dump({
        "agent": "quality", "name": "film", "extends": "default",
        "fields": {"grain": {"type": "number", "minimum": 0, "maximum": 1, "description": "standard"}}}))
    (schema_root / "quality" / "custom" / "film.yaml").write_text(yaml.safe_dump({
        "agent": "quality", "name": "film", "extends": "cinematographer",
        "fields": {"grain": {"type": "string", "description": "custom"},
                   "score": {"minimum": 0.2}}}))   # narrows an inherited field, keeps the rest of it
    film = load_schema("quality", "film", root=schema_root)
    assert film.fields["grain"].description == "custom"
    assert "composition_score" in film.fields            # film -> cinematographer -> default
    assert film.fields["score"].minimum == 0.2 and film.fields["score"].maximum == 1
    assert film.fields["score"].required and film.fields["score"].description
    assert [Path(p).parent.name for p in film.chain] == ["custom", "custom", "quality"]


def test_a_custom_default_overrides_the_standard_default_without_a_cycle(schema_root: Path):
    (schema_root / "quality" / "custom" / "default.yaml").write_text(yaml.safe_dump({
        "agent": "quality", "name": "default", "extends": "default",
        "fields": {"sharpness": {"type": "number", "minimum": 0, "maximum": 1}}}))
    merged = load_schema("quality", "default", root=schema_root)
    assert "sharpness" in merged.fields and "score" in merged.fields


def test_malformed_schema_names_the_file_and_field(schema_root: Path):
    bad = schema_root / "quality" / "custom" / "broken.yaml"
    bad.write_text(yaml.safe_dump({"extends": "default",
                                   "fields": {"focus": {"type": "float", "minimum": 0}}}))
    with pytest.raises(SchemaError, match=r"broken\.yaml: fields\.focus\.type: expected one of string, number"):
        load_schema("quality", "broken", root=schema_root)
    bad.write_text(yaml.safe_dump({"extends": "default", "fields": {"focus": {"type": "number", "minimum": 2,
                                                                               "maximum": 1}}}))
    with pytest.raises(SchemaError, match=r"fields\.focus: minimum 2 is above maximum 1"):
        load_schema("quality", "broken", root=schema_root)
    bad.write_text(yaml.safe_dump({"extends": "cinema_verite", "fields": {"x": {"type": "string"}}}))
    with pytest.raises(SchemaError, match=r"broken\.yaml: extends: unknown quality schema 'cinema_verite'"):
        load_schema("quality", "broken", root=schema_root)
    (schema_root / "quality" / "custom" / "a.yaml").write_text("extends: b\nfields: {x: {type: string}}\n")
    (schema_root / "quality" / "custom" / "b.yaml").write_text("extends: a\nfields: {y: {type: string}}\n")
    with pytest.raises(SchemaError, match="cycle"):
        load_schema("quality", "a", root=schema_root)
    bad.write_text("fields: [unclosed\n")
    with pytest.raises(SchemaError, match="not valid YAML"):
        load_schema("quality", "broken", root=schema_root)


def test_editing_a_schema_takes_effect_on_the_next_load(schema_root: Path):
    path = schema_root / "quality" / "custom" / "cinematographer.yaml"
    assert "lens_choice" not in load_schema("quality", "cinematographer", root=schema_root).fields
    doc = yaml.safe_load(path.read_text())
    doc["fields"]["lens_choice"] = {"type": "string", "description": "which lens it feels like"}
    path.write_text(yaml.safe_dump(doc))
    import os
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10_000_000))
    assert "lens_choice" in load_schema("quality", "cinematographer", root=schema_root).fields


def test_json_schema_export_agrees_with_the_validator():
    planner = load_schema("planner")
    js = planner.json_schema()
    validator = jsonschema.Draft202012Validator(js)
    assert list(validator.iter_errors(GOOD_PLAN)) == []
    bad = {**GOOD_PLAN, "sub_goals": [{"op": "glow", "value": 5}]}
    assert list(validator.iter_errors(bad)) and planner.validate(bad)
    far = {**GOOD_PLAN, "sub_goals": [{"op": "exposure", "value": 400}]}
    assert list(validator.iter_errors(far)) and planner.validate(far)
    cinema = jsonschema.Draft202012Validator(load_schema("quality", "cinematographer").json_schema())
    assert list(cinema.iter_errors({"score": 0.5, "assessment": "ok", "composition_score": 0.4})) == []
    assert list(cinema.iter_errors({"score": 0.5, "assessment": "ok"}))   # composition_score required


def test_fill_custom_fields_marks_unmeasurable_fields_not_assessed():
    cinema = load_schema("quality", "cinematographer")
    fields, warnings = fill_custom_fields(cinema, {"color_grade": "warm", "mood": 3})
    assert fields == {"composition_score": None, "lighting_quality": None, "mood": None, "color_grade": "warm"}
    assert any(w.startswith("composition_score: the quality schema 'cinematographer' asks for it")
               and "not assessed" in w for w in warnings)
    assert any(w.startswith("mood: measured value rejected") for w in warnings)
    assert fill_custom_fields(load_schema("quality"), {"x": 1}) == ({}, [])


def test_generator_round_trip_on_a_nested_example(schema_root: Path):
    example = {"shot": {"framing": "wide", "balance": 0.4, "subjects": 2},
               "tags": ["dusk", "city"], "notes": None,
               "layers": [{"name": "sky", "opacity": 0.5}, {"name": "face", "opacity": 1.0, "soft": True}]}
    doc = infer_schema(example, agent="executor", name="log", root=schema_root)
    assert "extends" not in doc                       # nothing in common with the executor default
    fields = doc["fields"]
    assert fields["shot"]["type"] == "object" and fields["shot"]["fields"]["balance"]["maximum"] == 1
    assert fields["shot"]["fields"]["subjects"]["type"] == "integer"
    assert fields["tags"] == {"type": "array", "items": {"type": "string"}, "required": True,
                              "description": fields["tags"]["description"]}
    layer = fields["layers"]["items"]["fields"]
    assert layer["name"]["required"] and not layer["soft"]["required"]
    path, _ = generate_schema(example, agent="executor", name="log", root=schema_root)
    loaded = load_schema("executor", "log", root=schema_root)
    assert loaded.validate(example) == []
    assert loaded.validate({**example, "tags": "dusk"}) == ["tags: expected a list, got 'dusk'"]
    assert path == schema_root / "executor" / "custom" / "log.yaml"


def test_generate_cli_writes_a_schema_that_extends_default(schema_root: Path, tmp_path: Path):
    example = tmp_path / "cinematographer.json"
    example.write_text(json.dumps(CINEMA_EXAMPLE))
    (schema_root / "quality" / "custom" / "cinematographer.yaml").unlink()
    cmd = [sys.executable, "-m", "schemas.generate", str(example), "--agent", "quality",
           "--name", "cinematographer", "--root", str(schema_root)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "extends default" in done.stdout and "the example validates" in done.stdout
    written = yaml.safe_load((schema_root / "quality" / "custom" / "cinematographer.yaml").read_text())
    assert written["extends"] == "default"
    assert "score" not in written["fields"]           # inherited, not repeated
    comp = written["fields"]["composition_score"]
    assert comp["type"] == "number" and comp["minimum"] == 0 and comp["maximum"] == 1 and comp["required"]
    assert written["fields"]["grading"]["fields"]["passes"]["type"] == "integer"
    assert written["fields"]["approved"]["type"] == "boolean"
    loaded = load_schema("quality", "cinematographer", root=schema_root)
    assert loaded.validate(CINEMA_EXAMPLE) == []
    # a second run does not overwrite what the person may have edited
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "already exists" in again.stderr
    assert subprocess.run(cmd + ["--force"], cwd=REPO, capture_output=True, timeout=60).returncode == 0


def test_generator_refuses_examples_it_cannot_use(schema_root: Path):
    with pytest.raises(SchemaError, match="expected a JSON object"):
        generate_schema([1, 2], agent="quality", name="x", root=schema_root)
    with pytest.raises(SchemaError, match="nothing to add"):
        generate_schema({"score": 0.5, "assessment": "ok"}, agent="quality", name="same", root=schema_root)
    with pytest.raises(SchemaError, match="not 'default'"):
        generate_schema({"a": 1}, agent="quality", name="default", root=schema_root)
    assert not (schema_root / "quality" / "custom" / "same.yaml").exists()


def test_json_schema_and_validator_both_accept_null_where_a_field_allows_it():
    executor = load_schema("executor")
    step = {"step": 1, "op": "exposure", "mode": "add", "value": 10, "requested": 10, "before": 0, "after": 10,
            "clamped": False, "status": "applied", "target": None, "limit": None}
    assert executor.validate({"steps": [step]}) == []
    validator = jsonschema.Draft202012Validator(executor.json_schema())
    assert list(validator.iter_errors({"steps": [step]})) == []
    assert list(validator.iter_errors({"steps": [{**step, "limit": "luck"}]}))


def test_a_custom_field_may_have_any_name(schema_root: Path):
    (schema_root / "quality" / "custom" / "names.yaml").write_text(yaml.safe_dump({
        "extends": "default", "fields": {
            "copy": {"type": "string", "required": True, "description": "a caption"},
            "model_config": {"type": "number", "minimum": 0, "maximum": 1}}}))
    names = load_schema("quality", "names", root=schema_root)
    ok = {"score": 0.5, "assessment": "ok", "copy": "Summer sale", "model_config": 0.5}
    assert names.validate(ok) == []
    assert names.validate({**ok, "model_config": 2}) == ["model_config: 2 is outside 0..1"]
    assert names.json_schema()["properties"]["copy"] == {"type": "string", "description": "a caption"}
