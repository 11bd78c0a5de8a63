"""The service side of output schemas: list, generate from an example, use per session; live progress.

Real SQLite under tmp_path, the real graph, renderer and embedded judge; the
schemas folder is a copy of the shipped one in tmp_path (``Studio(schemas_root=...)``),
so nothing is ever written into the repository's ``schemas/``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from agent.config import load_config
from agent.judging.embedded import EmbeddedJudge
from agent.service import InvalidInput, Studio
from conftest import ScriptedJudge, ScriptedPlanner

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "schemas"

CINEMA_EXAMPLE = {
    "score": 0.82,
    "assessment": "Warmer and brighter, as asked.",
    "brightness": 0.55,
    "composition_score": 0.7,
    "shot": {"framing": "medium", "lens_mm": 50},
    "tags": ["warm", "portrait"],
}


def _yaml_files(root: Path) -> dict[str, float]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*.yaml")}


@pytest.fixture
def schemas_root(tmp_path) -> Path:
    """A private copy of the shipped schemas (YAML files only)."""
    root = tmp_path / "schemas"
    for p in SHIPPED.rglob("*.yaml"):
        dest = root / p.relative_to(SHIPPED)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, dest)
    return root


@pytest.fixture
def studio_in(tmp_path, schemas_root):
    made = []

    def make(planner=None, judge=None, **overrides):
        config = load_config().with_overrides(**overrides) if overrides else load_config()
        studio = Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
                        planner=planner or ScriptedPlanner(), judge=judge or ScriptedJudge(), config=config,
                        schemas_root=schemas_root)
        made.append(studio)
        return studio

    yield make
    for s in made:
        s.close()


@pytest.fixture(autouse=True)
def repo_schemas_untouched():
    before = _yaml_files(SHIPPED)
    yield
    assert _yaml_files(SHIPPED) == before, "a test wrote into the repository's schemas/"


# -- listing -------------------------------------------------------------------------------

def test_list_schemas_names_what_a_session_can_use(make_studio, studio_in):
    shipped = make_studio()
    assert shipped.schemas_root is None                       # the repository's schemas/
    assert shipped.list_schemas("quality") == ["default", "cinematographer"]
    assert shipped.list_schemas("planner")[0] == "default"
    with pytest.raises(InvalidInput, match="unknown agent 'painter'"):
        shipped.list_schemas("painter")
    assert studio_in().list_schemas("quality") == ["default", "cinematographer"]


# -- generating ----------------------------------------------------------------------------

def test_generate_from_json_text_writes_a_custom_schema_that_extends_default(studio_in, schemas_root):
    studio = studio_in()
    out = studio.generate_schema(json.dumps(CINEMA_EXAMPLE), agent="quality", name="noir")
    path = schemas_root / "quality" / "custom" / "noir.yaml"
    assert out["path"] == str(path) and path.is_file()
    assert out["extends"] == "default"
    assert out["fields"] == ["brightness", "composition_score", "shot", "tags"]   # score/assessment inherited
    doc = yaml.safe_load(out["yaml"])
    assert doc == yaml.safe_load(path.read_text(encoding="utf-8"))
    assert doc["fields"]["composition_score"] == {
        "type": "number", "minimum": 0, "maximum": 1, "required": True,
        "description": doc["fields"]["composition_score"]["description"]}
    assert doc["fields"]["shot"]["fields"]["lens_mm"]["type"] == "integer"
    assert doc["fields"]["tags"]["items"]["type"] == "string"
    assert studio.list_schemas("quality") == ["default", "cinematographer", "noir"]

    # A dict works as well as its text; other agents too.
    planner = studio.generate_schema({"reply": "ok", "understood": True, "sub_goals": [],
                                      "confidence": 0.4}, agent="planner", name="careful")
    assert planner["extends"] == "default" and planner["fields"] == ["confidence"]
    assert "careful" in studio.list_schemas("planner")


def test_a_session_with_the_generated_schema_gets_its_fields(studio_in):
    """The new schema is usable at once, and the judge reads it from the Studio's schemas folder."""
    studio = studio_in(ScriptedPlanner(), EmbeddedJudge())
    studio.generate_schema(CINEMA_EXAMPLE, agent="quality", name="noir")
    from conftest import small_photo

    info = studio.start_session(small_photo(), review_mode="always", quality_schema="noir")
    assert info.quality_schema == "noir"
    turn = studio.send_message(info.id, "temperature+25 exposure+20")
    assert turn.status == "awaiting_review"
    assert set(turn.fields) == {"brightness", "composition_score", "shot", "tags"}
    assert 0.0 < turn.fields["brightness"] < 1.0               # measured by the embedded judge
    assert turn.fields["composition_score"] is None              # not measurable without a model: marked
    assert any("composition_score" in w and "not assessed" in w for w in turn.warnings)
    assert not any("not loaded" in w for w in turn.warnings)
    assert studio.pending_review(info.id).fields == turn.fields


@pytest.mark.parametrize("example, message", [
    ("{not json", r"example: not valid JSON \(Expecting property name enclosed in double quotes at line 1"),
    ("", "example: paste one example output"),
    ("[1, 2]", "expected a JSON object with at least one field, got a list"),
    ("{}", "got an empty object"),
    ("42", "got a number"),
    ({"score": 0.5, "assessment": "fine"}, "every field is already in the default quality schema"),
    ("x" * 20_001, "too long"),
])
def test_bad_examples_are_refused_with_a_reason(studio_in, schemas_root, example, message):
    studio = studio_in()
    with pytest.raises(InvalidInput, match=message):
        studio.generate_schema(example, agent="quality", name="noir")
    assert not (schemas_root / "quality" / "custom" / "noir.yaml").exists()
    assert studio.list_schemas("quality") == ["default", "cinematographer"]


@pytest.mark.parametrize("name", ["", "default", "../planner/default", "a b", "-x", "x" * 65, None])
def test_bad_names_are_refused(studio_in, schemas_root, name):
    studio = studio_in()
    with pytest.raises(InvalidInput, match="name: .* is not a schema name"):
        studio.generate_schema(CINEMA_EXAMPLE, agent="quality", name=name)
    assert sorted(p.name for p in (schemas_root / "quality" / "custom").iterdir()) == ["cinematographer.yaml"]


def test_an_existing_name_needs_overwrite(studio_in, schemas_root):
    studio = studio_in()
    shipped = (schemas_root / "quality" / "custom" / "cinematographer.yaml").read_text(encoding="utf-8")
    with pytest.raises(InvalidInput, match="a quality schema named 'cinematographer' already exists"):
        studio.generate_schema(CINEMA_EXAMPLE, agent="quality", name="cinematographer")
    assert (schemas_root / "quality" / "custom" / "cinematographer.yaml").read_text(encoding="utf-8") == shipped

    studio.generate_schema(CINEMA_EXAMPLE, agent="quality", name="noir")
    with pytest.raises(InvalidInput, match="already exists"):
        studio.generate_schema({"score": 0.5, "assessment": "x", "grain": 0.2}, agent="quality", name="noir")
    again = studio.generate_schema({"score": 0.5, "assessment": "x", "grain": 0.2}, agent="quality",
                                   name="noir", overwrite=True)
    assert again["fields"] == ["grain"]
    assert "grain" in (schemas_root / "quality" / "custom" / "noir.yaml").read_text(encoding="utf-8")
    with pytest.raises(InvalidInput, match="agent: expected one of planner, executor, quality"):
        studio.generate_schema(CINEMA_EXAMPLE, agent="painter", name="noir2")


def test_a_schema_only_in_another_folder_is_unknown_here(studio_in, make_studio):
    """A Studio on the shipped schemas does not see a schema generated into a private folder."""
    private = studio_in()
    private.generate_schema(CINEMA_EXAMPLE, agent="quality", name="noir")
    shipped = make_studio()
    from conftest import small_photo

    with pytest.raises(InvalidInput, match="unknown quality schema 'noir'; available: default, cinematographer"):
        shipped.start_session(small_photo(), quality_schema="noir")


# -- live progress ---------------------------------------------------------------------------

def _stages(events):
    return [(e["stage"], e["status"]) for e in events]


def test_progress_reports_each_stage_of_a_turn_in_order(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.7]))
    info = studio.start_session(photo, review_mode="always")
    events: list[dict] = []
    result = studio.send_message(info.id, "temperature+25 exposure+20", progress=events.append)

    assert _stages(events) == [("planner", "running"), ("planner", "done"), ("executor", "running"),
                               ("executor", "done"), ("quality", "running"), ("quality", "done"),
                               ("review", "waiting")]
    by = {(e["stage"], e["status"]): e for e in events}
    assert by[("planner", "running")]["message"] == "Planning…"
    assert by[("planner", "running")]["sub_goals"] == []
    assert by[("planner", "done")]["message"] == "Planned 2 adjustments: temperature +25, exposure +20"
    assert by[("executor", "running")]["message"] == "Applying 2 adjustments: temperature +25, exposure +20"
    assert [(g["op"], g["value"], g["status"]) for g in by[("executor", "running")]["sub_goals"]] == [
        ("temperature", 25, "running"), ("exposure", 20, "running")]
    assert [g["status"] for g in by[("executor", "done")]["sub_goals"]] == ["applied", "applied"]
    assert by[("quality", "running")]["message"] == "Judging…"
    assert by[("quality", "done")]["score"] == pytest.approx(0.7)
    assert by[("quality", "done")]["sub_goals"] == by[("executor", "done")]["sub_goals"]   # carried along
    assert by[("review", "waiting")]["message"] == "Waiting for your review"
    fractions = [e["fraction"] for e in events]
    assert fractions == sorted(fractions) and 0 < fractions[0] < fractions[-1] < 1

    # The result is what the same turn gives without a listener.
    assert result.status == "awaiting_review" and result.sub_goals == by[("executor", "done")]["sub_goals"]
    review_events: list[dict] = []
    done = studio.review(info.id, "approve", progress=review_events.append)
    assert done.status == "approved"
    assert _stages(review_events) == [("review", "done"), ("finish", "running"), ("finish", "done")]
    assert review_events[0]["message"] == "Approved"


def test_progress_is_optional_and_changes_nothing(make_studio, photo):
    """The same turn (one automatic replan, then kept) with and without a listener gives the same result."""
    def comparable(result):
        d = result.to_dict()
        return {k: v for k, v in d.items() if k not in ("session_id", "asset_id", "head_asset_id", "rendered_path")}

    plain_studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.5, 0.9]))
    watched_studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.5, 0.9]))
    plain = plain_studio.send_message(plain_studio.start_session(photo).id, "contrast+30 saturation+40")
    events: list[dict] = []
    info = watched_studio.start_session(photo)
    watched = watched_studio.send_message(info.id, "contrast+30 saturation+40", progress=events.append)
    assert plain.status == "auto_approved"
    assert comparable(watched) == comparable(plain)
    assert watched_studio.head(info.id).state == plain_studio.head(plain.session_id).state
    assert [e["stage"] for e in events] == ["planner", "planner", "executor", "executor", "quality", "quality",
                                            "planner", "planner", "executor", "executor", "quality", "quality",
                                            "finish", "finish"]
    assert events[-1]["fraction"] == 1.0 and events[-1]["message"] == "Done"


def test_an_automatic_replan_shows_as_replanning(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.4, 0.9]))
    info = studio.start_session(photo)
    events: list[dict] = []
    result = studio.send_message(info.id, "saturation+60", progress=events.append)
    assert result.status == "auto_approved"
    planners = [e["message"] for e in events if e["stage"] == "planner" and e["status"] == "running"]
    assert planners == ["Planning…", "Replanning…"]
    assert [e["score"] for e in events if e["stage"] == "quality" and e["status"] == "done"] == [0.4, 0.9]


def test_a_broken_listener_never_costs_the_turn(make_studio, photo):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    calls = []

    def broken(event):
        calls.append(event)
        raise RuntimeError("the tab was closed")

    result = studio.send_message(info.id, "exposure+20", progress=broken)
    assert result.status == "auto_approved" and len(calls) == 1      # told once, then left alone
    assert studio.head(info.id).state["settings"] == {"exposure": 20}


def test_progress_of_a_failing_turn(make_studio, photo):
    def script(request):
        raise RuntimeError("model offline")

    studio = make_studio(ScriptedPlanner(script), ScriptedJudge([0.9]))
    info = studio.start_session(photo)
    events: list[dict] = []
    result = studio.send_message(info.id, "exposure+20", progress=events.append)
    assert result.status == "failed"
    assert ("error", "running") in _stages(events)
    assert events[-1]["stage"] == "finish"
    assert any("model offline" in e["message"] for e in events if e["stage"] == "planner")
