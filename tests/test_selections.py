"""Selections: a painted mask, a click and a box become "the selection" chat can use.

Real Studio on a real SQLite file, the real renderer, the blob store on disk.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

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


# -- selections on the picture as shown: cropped, turned, mirrored, straightened (issue 23) ----------------

def _red(img: np.ndarray) -> np.ndarray:
    """Where the red disc is in a picture (any frame)."""
    img = img.astype(int)
    return (img[..., 0] > 160) & (img[..., 1] < 110)


@pytest.mark.parametrize("geometry", [{"crop_aspect": 5}, {"rotate": 90, "flip_h": 1, "crop_left": 20},
                                      {"straighten": 7, "crop_top": 10}])
def test_a_click_on_the_picture_shown_selects_what_it_shows(make_studio, geometry):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    studio.set_values(info.id, geometry)
    shown = studio.render(info.id, long_side=None)
    ys, xs = np.nonzero(_red(shown))
    point = [float(xs.mean() + 0.5) / shown.shape[1], float(ys.mean() + 0.5) / shown.shape[0]]
    sel = studio.select(info.id, point=point)
    stored = studio.blobs.get_array(sel["selection_id"])
    assert _iou(stored, _disc()) > 0.85                          # the disc, in the original's frame
    assert abs(sel["coverage"] - _red(shown).mean()) < 0.02      # share of the picture as shown
    # the preview is the picture as shown (its frame), the disc tinted
    with Image.open(sel["preview"]) as im:
        assert abs(im.width / im.height - shown.shape[1] / shown.shape[0]) < 0.02


def test_a_mask_painted_after_a_crop_brightens_those_pixels(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    studio.set_values(info.id, {"rotate": 270, "crop_aspect": 1})
    shown = studio.render(info.id, long_side=None)
    painted = _red(shown)                                         # brushed over the disc as it is shown
    sel = studio.select(info.id, mask=painted)
    assert _iou(studio.blobs.get_array(sel["selection_id"]), _disc()) > 0.85
    r = studio.send_message(info.id, "exposure+40@selection")     # a painted mask reads through the crop
    assert r.status in ("approved", "auto_approved"), r.reply
    after = studio.render(info.id, long_side=None).astype(int)
    gain = (after - shown.astype(int)).sum(axis=2)
    inside = cv2.erode(painted.astype(np.uint8), np.ones((7, 7), np.uint8)).astype(bool)
    outside = ~cv2.dilate(painted.astype(np.uint8), np.ones((9, 9), np.uint8)).astype(bool)
    assert gain[inside].mean() > 40 and np.abs(gain[outside]).max() <= 3


def test_masks_map_through_the_frame_both_ways():
    from pipeline.geometry import frame_for

    disc = _disc().astype(np.uint8) * 255
    for settings in ({"rotate": 90}, {"flip_v": 1, "crop_right": 25}, {"straighten": -9, "crop_aspect": 3},
                     {"rotate": 180, "flip_h": 1, "straighten": 4, "crop_zoom": 30}):
        frame = frame_for(settings, 450, 300)
        size = frame.size_at(None)
        there = selections.to_display(disc, frame, size, (300, 450))
        back = selections.to_original(there, frame, (300, 450))
        kept = selections.to_display(back, frame, size, (300, 450))
        assert (np.abs(kept.astype(int) - there.astype(int)) > 64).mean() < 0.01, settings
    # without a frame both ways are plain resizes
    assert selections.to_original(disc, None, (300, 450)).shape == (300, 450)


def test_the_selection_moves_with_a_later_crop(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.9]), review_mode="never")
    info = studio.start_session(_scene())
    assert studio.selection_preview(info.id) is None
    studio.select(info.id, point=[0.6, 0.45])
    studio.set_values(info.id, {"crop_aspect": 1})
    with Image.open(studio.selection_preview(info.id)) as im:
        shown = np.asarray(im.convert("RGB"))
    assert abs(shown.shape[0] - shown.shape[1]) <= 1                # the square crop
    tinted = (shown[..., 0].astype(int) - shown[..., 2].astype(int)) > 120
    assert 0.05 < tinted.mean() < 0.4                               # the disc, tinted, in the crop
