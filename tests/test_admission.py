"""Admission control: large decodes and renders queue for memory instead of stacking past the cap.

The budget is exercised with real threads and, end to end, with real 16-bit PNGs
decoded by four threads at once (what four people uploading at the same moment do).
"""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from pipeline import admission
from pipeline.admission import AdmissionTimeout, MemoryBudget
from pipeline.imageio import load_image

MB = 2**20


def _run_all(targets):
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
        time.sleep(0.01)  # a known arrival order
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)


def test_jobs_wait_their_turn_and_never_hold_more_than_the_budget():
    budget = MemoryBudget(1000 * MB)
    inside, most, order = [0], [0], []
    lock = threading.Lock()

    def job(name):
        def run():
            with budget.reserve(400 * MB, what=name):
                with lock:
                    inside[0] += 1
                    most[0] = max(most[0], inside[0])
                    order.append(name)
                time.sleep(0.1)
                with lock:
                    inside[0] -= 1
        return run

    _run_all([job(f"photo {i}") for i in range(5)])
    assert most[0] == 2                                   # two fit in 1000 MB, the others queued
    assert order == [f"photo {i}" for i in range(5)]      # first come, first served
    assert budget.peak_in_use <= budget.capacity and budget.in_use == 0
    assert budget.waited == 3


def test_a_job_bigger_than_the_budget_runs_alone_and_small_ones_never_wait():
    budget = MemoryBudget(100 * MB)
    events = []

    def big():
        with budget.reserve(500 * MB, what="a huge photo"):
            events.append("big in")
            time.sleep(0.2)
            events.append("big out")

    def small():
        with budget.reserve(admission.SMALL_JOB_BYTES // 2, what="a proxy"):
            events.append("small")

    _run_all([big, small])
    assert events == ["big in", "small", "big out"]       # the proxy did not wait for the export
    assert budget.peak_in_use <= 100 * MB + admission.SMALL_JOB_BYTES


def test_a_job_reserving_inside_its_own_reservation_does_not_deadlock():
    budget = MemoryBudget(100 * MB)
    with budget.reserve(90 * MB):
        with budget.reserve(90 * MB):                     # a render inside an export, same thread
            assert budget.in_use == 180 * MB
    assert budget.in_use == 0


def test_a_wait_past_the_timeout_is_a_clear_error_and_releases_nothing_it_did_not_hold():
    budget = MemoryBudget(100 * MB, timeout_s=0.2)
    held = threading.Event()
    release = threading.Event()

    def holder():
        with budget.reserve(100 * MB):
            held.set()
            release.wait(5)

    t = threading.Thread(target=holder)
    t.start()
    held.wait(5)
    with pytest.raises(AdmissionTimeout, match="busy with other large photos; opening big.png waited"):
        with budget.reserve(100 * MB, what="opening big.png"):
            pass
    assert budget.in_use == 100 * MB and budget.waiting == 0
    release.set()
    t.join(5)
    assert budget.in_use == 0


def test_a_bad_capacity_is_refused():
    with pytest.raises(ValueError, match="capacity must be a positive number of bytes"):
        MemoryBudget().configure(0)


def _png16(path, side: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    img = cv2.resize(rng.integers(0, 65535, (64, 64, 3), dtype=np.uint16), (side, side),
                     interpolation=cv2.INTER_LINEAR)
    cv2.imwrite(str(path), img)


def test_concurrent_large_decodes_queue_within_the_configured_budget(tmp_path):
    side = 2400
    paths = [tmp_path / f"deep{i}.png" for i in range(4)]
    for i, p in enumerate(paths):
        _png16(p, side, i)
    one = admission.decode_bytes(side, side, 16)
    assert one > admission.SMALL_JOB_BYTES
    budget = admission.configure(int(1.5 * one))          # room for one decode at a time
    before = budget.waited
    results = {}
    try:
        _run_all([lambda p=p: results.setdefault(p.name, load_image(p)) for p in paths])
    finally:
        admission.configure(None)
    assert len(results) == 4 and all(r.deep is not None and r.pixels.shape == (side, side, 3)
                                     for r in results.values())
    assert budget.waited - before >= 3                     # the other three queued
    assert budget.peak_in_use <= int(1.5 * one) and budget.in_use == 0
