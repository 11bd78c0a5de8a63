"""The hand-labelled skin (pipeline.retouch_peers.LABELLED_SKIN) and the skin mask measured against it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from pipeline import retouch_peers as peers

#: Skin as a share of each photo once rasterised (measured when labelled), give or take a fifth.
SKIN_SHARE = {"astronaut": 0.030, "asset:eval/friends_shore.jpg": 0.185, "asset:eval/mountain_selfie.jpg": 0.134,
              "asset:eval/latte_cheers.jpg": 0.191, "asset:eval/luispedro.jpg": 0.430,
              "asset:eval/lunch_table.jpg": 0.079}


@pytest.mark.parametrize("name", sorted(peers.LABELLED_SKIN))
def test_each_skin_label_rasterises_on_its_photo_to_a_plausible_area(name):
    label = peers.LABELLED_SKIN[name]
    img = peers._photo_at_own_size(name)
    assert (img.shape[1], img.shape[0]) == label["size"]
    for part in ("skin", "not", "ignore"):
        for poly in label.get(part, ()):
            pts = np.array(poly)
            assert len(pts) >= 3 and (pts >= 0).all() and (pts < np.array(label["size"])).all()
    skin, counted = peers.skin_label(name)
    assert skin.shape == img.shape[:2] and skin.dtype == bool
    assert SKIN_SHARE[name] * 0.8 < skin.mean() < SKIN_SHARE[name] * 1.2
    assert counted.mean() > 0.9 and (skin & counted).sum() > 0.95 * skin.sum()   # "ignore" is small and aside
    # Labelled skin is skin-coloured on average: Cr above Cb, as in every skin tone.
    ycc = cv2.cvtColor(img, cv2.COLOR_RGB2YCrCb)[skin].astype(np.float64)
    assert ycc[:, 1].mean() > ycc[:, 2].mean() + 10


def test_skin_labels_agree_with_the_other_hand_labels():
    """Eyes and mouths of LABELLED_FACES are not skin (nor ignored, except a mouth in a beard); the
    astronaut's skin lies inside her person polygon, in her labelled face box and below it."""
    for name, faces in peers.LABELLED_FACES.items():
        skin, counted = peers.skin_label(name)
        for _, eyes, mouth in faces:
            for x, y in eyes:
                assert not skin[round(y), round(x)] and counted[round(y), round(x)], (name, x, y)
            assert not skin[round(mouth[1]), round(mouth[0])], (name, mouth)
    skin, _ = peers.skin_label("astronaut")
    person = np.zeros_like(skin, np.uint8)
    cv2.fillPoly(person, [np.array(peers.ASTRONAUT_PERSON, np.int32)], 1)
    assert (skin & (person > 0)).sum() > 0.99 * skin.sum()
    ys, xs = np.nonzero(skin)
    (bx, by, bw, bh), _, _ = peers.LABELLED_FACES["astronaut"][0]
    assert bx - 5 <= xs.min() and xs.max() <= bx + bw + 12 and by - 15 <= ys.min() and ys.max() <= by + bh + 15


def test_the_skin_mask_holds_its_measured_iou_and_the_person_model_keeps_tables_out():
    """Regression guard. Measured when the skin was labelled (``python -m pipeline.bench --peers``), IoU at
    0.5: on the astronaut, skin tones learnt from the model's face 0.389 (recall 0.963; her hair is most of
    the false skin), held to the person model (the mask as built) 0.409 (soft IoU 0.395); on latte_cheers
    (hands, no face) 0.351 -> 0.502, the wooden table no longer skin. Over six photos 0.522 -> 0.558.
    The floors sit just under those."""
    from pipeline.masks import models

    assert models.available()  # requirements-models.txt is part of the test install: nothing skipped
    rows = peers.skin_mask_peers(("astronaut", "asset:eval/latte_cheers.jpg"))
    built = rows["skin mask as built"]["photos"]
    alone = rows["model faces, skin tones alone"]["photos"]
    assert built["astronaut"]["iou"] >= 0.39 and built["astronaut"]["soft_iou"] >= 0.37
    assert built["astronaut"]["recall"] >= 0.93   # the face is found: nearly all of her skin is in the mask
    assert built["latte_cheers"]["iou"] >= 0.47 and built["latte_cheers"]["iou"] > alone["latte_cheers"]["iou"] + 0.1
    assert built["latte_cheers"]["precision"] > alone["latte_cheers"]["precision"]
    assert rows["colour only (no face found)"]["photos"]["astronaut"]["iou"] < built["astronaut"]["iou"]
    assert set(rows) == {"colour only (no face found)", "cascade faces (heuristic)", "model faces, skin tones alone",
                         "skin mask as built"}
