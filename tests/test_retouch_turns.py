"""Retouching through a turn, as a person meets it: many dust spots are shown circled and kept only when
the person approves; a few are healed as an ordinary turn; an aspect crop that cannot keep every face
says so. A real Studio (SQLite file, embedded planner and judge), photos painted here."""

from __future__ import annotations

import numpy as np
import pytest

from agent.service import Studio
from pipeline.retouch_peers import paint_dust, scene


@pytest.fixture
def studio(tmp_path):
    with Studio(sessions_dir=tmp_path / "sessions") as s:
        yield s


def _sky_with_dust(spots: int, seed: int) -> tuple[np.ndarray, list]:
    clean = scene("asset:eval/tower.jpg", 1600)
    return paint_dust(clean, spots, seed=seed)


def test_many_dust_spots_wait_for_the_person_and_are_circled(studio):
    dirty, truth = _sky_with_dust(24, seed=21)
    sid = studio.start_session(dirty).id
    result = studio.send_message(sid, "remove the dust spots")
    assert result.status == "awaiting_review", result.reply
    found = result.details["dust"]
    assert found["count"] > 12 and "dust spots" in result.reply and "approve" in result.reply
    pending = studio.pending_review(sid)
    assert len(pending.marks) == found["count"]
    h, w = dirty.shape[:2]
    # each mark sits on a painted spot (most of them: a real tower photo may have a speck of its own)
    on_truth = [any(np.hypot(m["x"] * w - cx, m["y"] * h - cy) <= max(3 * sg, 4) for cx, cy, sg in truth)
                for m in pending.marks]
    assert sum(on_truth) >= 0.9 * len(on_truth)
    head_before = studio.head(sid).id
    assert head_before != pending.asset_id                  # nothing kept yet
    kept = studio.review(sid, "approve")
    assert kept.status == "approved" and studio.head(sid).state["settings"].get("dust_removal")


def test_a_few_dust_spots_are_an_ordinary_turn(studio):
    dirty, _ = _sky_with_dust(5, seed=22)
    sid = studio.start_session(dirty).id
    result = studio.send_message(sid, "remove the dust spots")
    assert "dust" not in result.details and "confirm" not in result.details
    assert studio.head(sid).state["settings"].get("dust_removal") or result.status == "awaiting_review"


def test_a_square_crop_that_cannot_keep_every_face_says_so(studio):
    friends = scene("asset:eval/friends_shore.jpg", 1000)
    three = np.ascontiguousarray(friends[180:480, 250:1000])      # faces spread across a wide strip
    sid = studio.start_session(three).id
    result = studio.send_message(sid, "crop it square")
    assert "can't keep every face" in result.reply
    two = np.ascontiguousarray(friends[250:650, 470:1000])        # two faces a square can hold
    sid2 = studio.start_session(two).id
    assert "can't keep" not in studio.send_message(sid2, "crop it square").reply
