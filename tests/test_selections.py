"""Selections: a painted mask, a click and a box become "the selection" chat can use.

Real Studio on a real SQLite file, the real renderer, the blob store on disk.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from agent.service import InvalidInput
from conftest import ScriptedJudge, ScriptedPlanner
from pipeline import selections


def _scene(h: int = 300, w: int = 450) -> np.ndarray:
    """A grey gradient wall with mild noise and a red disc (the object) centred at (0.6, 0.45)."""
    rng = np.random.default_rng(3)
    ramp = np.linspace(110, 160, w, dtype=np.float32)[None, :, None] * np.ones((h, 1, 3), np.float32)
    img = ramp + rng.normal(0, 2.0, (h, w, 3)).astype(np.float32)
    cv2.circle(img, (int(0.6 * w), int(0.45 * h)), int(0.2 * h), (200, 40, 35), -1)
    return np.clip(img, 0, 255).astype(np.uint8)


def _disc(h=300, w=450) -> np.ndarray:
    m = np.zeros((h, w), np.uint8)
    cv2.circle(m, (int(0.6 * w), int(0.45 * h)), int(0.2 * h), 1, -1)
    return m.astype(bool)


def _iou(mask: np.ndarray, truth: np.ndarray) -> float:
    m = cv2.resize(mask, truth.shape[::-1], interpolation=cv2.INTER_NEAREST) >= 128
    return float((m & truth).sum() / (m | truth).sum())


def test_click_selects_the_object_under_the_point():
    mask = selections.click_mask(_scene(), [0.6, 0.45])
    assert _iou(mask, _disc()) > 0.9
    # clicking the wall selects the wall, not the disc
    wall = selections.click_mask(_scene(), [0.05, 0.1])
    assert _iou(wall, _disc()) < 0.02 and selections.coverage(wall) > 0.3


def test_box_cuts_the_object_out_of_its_box():
    mask = selections.box_mask(_scene(), [0.4, 0.1, 0.8, 0.8])
    assert _iou(mask, _disc()) > 0.85
    assert np.all(mask[:, : int(0.38 * mask.shape[1])] == 0)  # nothing outside the box


def test_select_stores_a_blob_and_brightens_the_selection(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    painted = _disc(150, 225)  # painted on a half-size view of the photo
    sel = studio.select(info.id, mask=painted)
    assert 0.078 < sel["coverage"] < 0.09  # the disc: pi * 60^2 / (300 * 450) = 0.0838
    assert studio.blobs.exists(sel["selection_id"])
    assert sel["mask"] == {"type": "painted", "blob": sel["selection_id"]}
    assert cv2.imread(sel["preview"]) is not None
    assert studio.selection(info.id)["selection_id"] == sel["selection_id"]

    r = studio.send_message(info.id, "exposure+40@selection")
    assert r.status in ("approved", "auto_approved")
    layer = studio.head(info.id).state["layers"][0]
    assert layer["mask"] == sel["mask"]  # the state names the exact pixels
    before, after = studio.render(info.id, long_side=None), None
    original = studio.render(info.id, studio.history(info.id)[0].id, long_side=None)
    disc, outside = _disc(), ~cv2.dilate(_disc().astype(np.uint8), np.ones((9, 9), np.uint8)).astype(bool)
    diff = before.astype(int).sum(axis=2) - original.astype(int).sum(axis=2)
    assert diff[disc].mean() > 40
    assert np.abs(diff[outside]).max() <= 3

    # A new selection does not change what the earlier version shows (bit-exact rollback).
    studio.select(info.id, point=[0.05, 0.1])
    after = studio.render(info.id, r.asset_id, long_side=None)
    assert np.array_equal(before, after)


def test_an_empty_selection_is_refused_and_changes_nothing(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    first = studio.select(info.id, box=[0.4, 0.1, 0.8, 0.8])
    settings = studio.store.get_session(info.id).settings
    with pytest.raises(InvalidInput, match="empty"):
        studio.select(info.id, mask=np.zeros((300, 450), bool))
    with pytest.raises(InvalidInput, match="outside the photo"):
        studio.select(info.id, point=[1.4, 0.2])
    with pytest.raises(InvalidInput, match="exactly one"):
        studio.select(info.id, point=[0.4, 0.2], box=[0, 0, 1, 1])
    with pytest.raises(InvalidInput, match="photo's shape"):
        studio.select(info.id, mask=np.ones((100, 100), bool))
    assert studio.store.get_session(info.id).settings == settings
    assert studio.selection(info.id)["selection_id"] == first["selection_id"]


def test_the_selection_without_one_gets_an_honest_reply(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    head = studio.head(info.id).id
    r = studio.send_message(info.id, "exposure+40@selection")
    assert r.status == "not_understood" and "no selection" in r.reply.lower()
    assert studio.head(info.id).id == head
