"""Trajectory synthesis: real sessions through the service, written as LLaMA-Factory ShareGPT records."""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from agent.runs import synthesize as syn
from schemas import load_schema

ASSETS = Path(__file__).resolve().parents[1] / "assets"


@pytest.fixture(scope="module")
def photos(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("photos")
    for name in ("coffee.jpg", "rocket.jpg", "chelsea.jpg"):
        shutil.copy(ASSETS / name, folder / name)
    (folder / "notes.txt").write_text("not a photo")   # ignored: not a photo suffix
    return folder


@pytest.fixture(scope="module")
def run(photos, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    summary = syn.synthesize([photos], out, conversations=4, turns=4, seed=7, workers=1, long_side=160,
                             progress=False)
    return out, summary


def _records(out: Path, name: str = "atelier_multiturn.json") -> list[dict]:
    return json.loads((out / name).read_text())


def test_records_are_sharegpt_with_one_image_per_human_turn(run):
    out, summary = run
    records = _records(out)
    assert len(records) == summary.conversations >= 3
    for rec in records:
        msgs = rec["conversations"]
        assert [m["from"] for m in msgs] == ["human", "gpt"] * (len(msgs) // 2) and msgs
        humans = [m for m in msgs if m["from"] == "human"]
        assert all(m["value"].count("<image>") == 1 for m in humans)
        assert len(rec["images"]) == len(humans)
        for path in rec["images"] + rec["metadata"]["renders"]:
            assert (out / path).is_file() and not Path(path).is_absolute()
        assert rec["system"]


def test_every_plan_validates_against_the_planner_schema(run):
    out, _ = run
    schema = load_schema("planner")
    for rec in _records(out):
        turns = rec["metadata"]["turns"]
        plans = [json.loads(m["value"]) for m in rec["conversations"] if m["from"] == "gpt"]
        assert len(plans) == len(turns)
        for plan, turn in zip(plans, turns):
            rollback = plan.pop("rollback_to", None)
            assert schema.validate(plan) == [], plan
            assert plan["sub_goals"] and any(s["value"] != 0 for s in plan["sub_goals"])   # never a +0 turn
            assert "Score" not in plan["reply"]   # the planner's words, not the judge's
            assert (rollback is not None) == (turn["type"] == "rollback_correct")
            assert turn["type"] in syn.TURN_TYPES


def test_turn_types_start_with_a_global_edit_and_are_recorded(run):
    out, _ = run
    for rec in _records(out):
        types = rec["metadata"]["turn_types"]
        assert types[0] == "global_init"
        assert types == [t["type"] for t in rec["metadata"]["turns"]]


def test_saved_renders_reproduce_from_the_recorded_state(run, photos):
    out, _ = run
    rec = _records(out)[0]
    photo = photos / rec["metadata"]["photo"]
    assert syn.verify_renders(rec, out, photo, 160) == []
    # Tamper with one saved render: the gate must notice.
    target = out / rec["metadata"]["renders"][1]
    pixels = np.asarray(Image.open(target).convert("RGB")).copy()
    pixels[0, 0] = (pixels[0, 0].astype(int) + 1) % 256
    Image.fromarray(pixels).save(target)
    try:
        assert syn.verify_renders(rec, out, photo, 160) == [rec["metadata"]["renders"][1]]
    finally:
        pixels[0, 0] = (pixels[0, 0].astype(int) - 1) % 256
        Image.fromarray(pixels).save(target)


def test_split_is_by_photo_and_dataset_info_names_the_files(run):
    out, _ = run
    train, val = _records(out, "train.json"), _records(out, "val.json")
    assert train and val
    assert not {r["metadata"]["photo"] for r in train} & {r["metadata"]["photo"] for r in val}
    info = json.loads((out / "dataset_info.json").read_text())
    for entry in info.values():
        assert (out / entry["file_name"]).is_file()
        assert entry["formatting"] == "sharegpt"
        assert entry["columns"] == {"messages": "conversations", "images": "images", "system": "system"}
    stats = json.loads((out / "stats.json").read_text())
    assert stats["conversations"] == len(train) + len(val)
    assert sum(stats["turn_types"].values()) == stats["turns"]
    assert stats["gates"]["verified_renders"] == stats["turns"]
    assert "conversations per minute" in (out / "stats.md").read_text()


def test_same_seed_same_data_and_resume_skips_finished(run, photos, tmp_path):
    out, _ = run
    again = tmp_path / "again"
    syn.synthesize([photos], again, conversations=2, turns=4, seed=7, workers=1, long_side=160, progress=False)
    first = {r["id"]: r for r in _records(out)}
    for rec in _records(again):
        assert rec["conversations"] == first[rec["id"]]["conversations"]
        for path in rec["metadata"]["renders"]:
            assert (again / path).read_bytes() == (out / path).read_bytes()
    before = (again / "records" / "c00000.json").read_bytes()
    summary = syn.synthesize([photos], again, conversations=3, turns=4, seed=7, workers=1, long_side=160,
                             progress=False)
    assert summary.stats["resumed"] == 2
    assert (again / "records" / "c00000.json").read_bytes() == before
    assert [r["id"] for r in _records(again)] == ["c00000", "c00001", "c00002"][: summary.conversations]


def test_a_different_seed_gives_different_conversations(run, photos, tmp_path):
    out, _ = run
    other = tmp_path / "other"
    syn.synthesize([photos], other, conversations=2, turns=4, seed=8, workers=1, long_side=160, progress=False)
    words = lambda recs: [[m["value"] for m in r["conversations"] if m["from"] == "human"] for r in recs]
    assert words(_records(other)) != words(_records(out)[:2])


def test_duplicates_are_found_by_photo_and_words():
    def rec(photo, *said):
        return {"conversations": [{"from": "human", "value": f"<image>\n{s}"} for s in said],
                "metadata": {"photo": photo}}
    records = {0: rec("a.jpg", "warmer"), 1: rec("b.jpg", "warmer"), 2: rec("a.jpg", "warmer"),
               3: rec("a.jpg", "warmer", "more")}
    assert syn.find_duplicates(records) == [2]


def test_the_person_uses_every_turn_type_and_varied_words():
    phrases = syn.load_phrases()
    person = syn.Person(phrases, random.Random(3), ["film", "airy", "black_and_white"])
    types = Counter(person.next_type(k, can_roll_back=True) for k in range(2, 400))
    assert set(types) == set(syn.TURN_TYPES) - {"global_init"}
    assert person.next_type(1, can_roll_back=False) == "global_init"
    assert "rollback_correct" not in {person.next_type(3, can_roll_back=False) for _ in range(100)}
    said = {person.global_init() for _ in range(60)}
    assert len(said) > 30
    text, look = person.style_shift(None)
    assert look in {"film", "airy", "black_and_white"} and "_" not in text


def test_ray_local_mode_gives_the_same_records(run, photos, tmp_path):
    out, _ = run
    on_ray = tmp_path / "ray"
    syn.synthesize([photos], on_ray, conversations=2, turns=4, seed=7, workers=1, ray_address="local",
                   long_side=160, progress=False)
    first = {r["id"]: r for r in _records(out)}
    recs = _records(on_ray)
    assert recs and all(r["conversations"] == first[r["id"]]["conversations"] for r in recs)
    assert json.loads((on_ray / "stats.json").read_text())["engine"] == "ray:local"


def test_bad_arguments_are_refused_with_a_reason(tmp_path, capsys):
    assert syn.main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "no such file or folder" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert syn.main([str(empty), "--out", str(tmp_path / "o")]) == 2
    assert "no photos found" in capsys.readouterr().err
    assert syn.main([str(ASSETS / "coffee.jpg"), "--out", str(tmp_path / "o"), "--turns", "0"]) == 2
    assert "--turns" in capsys.readouterr().err


def test_only_sessions_marked_shareable_are_exported(tmp_path):
    from agent.service import InvalidInput, Studio

    sessions = tmp_path / "sessions"
    with Studio(sessions_dir=sessions, database_url=f"sqlite:///{sessions / 'atelier.db'}") as studio:
        shared = studio.start_session(str(ASSETS / "coffee.jpg"), review_mode="never")
        private = studio.start_session(str(ASSETS / "rocket.jpg"), review_mode="never")
        for sid in (shared.id, private.id):
            studio.send_message(sid, "warmer")
            studio.send_message(sid, "more contrast")
        assert studio.set_shareable(shared.id, True).shareable is True
        assert studio.session(private.id).shareable is False
        with pytest.raises(InvalidInput, match="shareable"):
            studio.set_shareable(private.id, "yes")
        assert studio.session(private.id).shareable is False
    out = tmp_path / "export"
    summary = syn.export_sessions(out, sessions_dir=str(sessions), database_url=f"sqlite:///{sessions / 'atelier.db'}",
                                  long_side=160)
    records = _records(out, "atelier_sessions.json")
    assert summary.conversations == 1 and len(records) == 1
    rec = records[0]
    assert rec["id"] == f"s-{shared.id}"
    humans = [m["value"] for m in rec["conversations"] if m["from"] == "human"]
    assert humans == ["<image>\nwarmer", "<image>\nmore contrast"]
    plans = [json.loads(m["value"]) for m in rec["conversations"] if m["from"] == "gpt"]
    assert all(load_schema("planner").validate(p) == [] for p in plans)
    assert all((out / p).is_file() for p in rec["images"])


def test_the_person_borrows_words_from_the_tuning_suites_only():
    suite = syn.suite_phrases()
    assert suite["global_refine"] and suite["local_edit"]
    conversations = Path(__file__).resolve().parents[1] / "evals" / "conversations"
    tuning_text = "\n".join(p.read_text() for p in (conversations / "tuning").glob("*.yaml"))
    borrowed = {s for rows in suite.values() for _img, s in rows}
    assert all(s in tuning_text for s in borrowed)   # every borrowed sentence is a tuning one
    heldout = conversations / "heldout"
    with pytest.raises(syn.SynthesisError, match="held-out"):
        syn.suite_phrases(heldout)
    person = syn.Person(syn.load_phrases(), random.Random(0), ["film"], photo="coffee", suite=suite)
    local = {person.local_edit() for _ in range(200)}
    coffee_lines = {s for img, s in suite["local_edit"] if img == "coffee"}
    templates = syn.Person(syn.load_phrases(), random.Random(1), ["film"])
    template_lines = {templates.local_edit() for _ in range(500)}
    other_lines = {s for img, s in suite["local_edit"] if img not in (None, "coffee")} - coffee_lines - template_lines
    assert other_lines
    assert local & coffee_lines and not local & other_lines


def test_the_splits_load_in_hugging_face_datasets_with_one_schema(run, tmp_path, monkeypatch):
    """``load_dataset("json", data_files={"train": ..., "validation": ...})``: the same features in both files
    (sparse per-turn settings used to infer a different struct in each and fail the cast)."""
    datasets = pytest.importorskip("datasets", reason="datasets is a dev requirement (requirements-dev.txt)")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out, _ = run
    train, val = _records(out, "train.json"), _records(out, "val.json")
    assert train and val, "the run should put at least one photo in each split"
    loaded = datasets.load_dataset("json", data_files={"train": str(out / "train.json"),
                                                       "validation": str(out / "val.json")},
                                   cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["train"].num_rows == len(train) and loaded["validation"].num_rows == len(val)
    assert loaded["train"].features == loaded["validation"].features
    turn = loaded["train"][0]["metadata"]["turns"][0]
    assert set(turn["settings"][0]) == {"op", "value"}
    from pipeline.state import EditState

    # the whole EditState survives as JSON text, and the list of settings says the same
    state = EditState.from_dict(json.loads(turn["state"]))
    assert {s["op"]: s["value"] for s in turn["settings"]} == {k: float(v) for k, v in state.settings.items()}
    assert loaded["validation"][0]["conversations"][0]["from"] == "human"
