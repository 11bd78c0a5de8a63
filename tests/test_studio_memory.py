"""The Studio sizes the process's memory budget for decodes and renders (pipeline.admission) from its
config, and a photo that cannot get memory in time is refused with a clear message, storing nothing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from agent.config import load_config
from agent.errors import SessionBusy
from agent.service import Studio
from pipeline import admission
from pipeline.imageio import encode_image


@pytest.fixture
def budget():
    yield admission.BUDGET
    admission.configure(None, timeout_s=admission.DEFAULT_TIMEOUT_S)   # other tests run unlimited


def test_the_budget_is_the_memory_cap_less_the_caches(tmp_path, budget):
    config = load_config().with_overrides(memory_cap_mb=2048, render_cache_bytes=256 * 2**20,
                                          source_cache_bytes=512 * 2**20)
    with Studio(sessions_dir=tmp_path / "s", config=config):
        assert budget.capacity == (2048 - 256 - 512) * 2**20
    small = load_config().with_overrides(memory_cap_mb=512)
    with Studio(sessions_dir=tmp_path / "s2", config=small):
        assert budget.capacity == 256 * 2**20        # never below room for one large decode


def test_an_upload_that_waits_too_long_for_memory_is_refused_and_nothing_is_stored(tmp_path, budget):
    photo = encode_image(np.full((3000, 4000, 3), 128, np.uint8), "png")     # ~120 MB to decode
    with Studio(sessions_dir=tmp_path / "s") as studio:
        admission.configure(256 * 2**20, timeout_s=0.3)
        held, release = threading.Event(), threading.Event()

        def heavy():
            with admission.reserve(256 * 2**20, what="an export"):
                held.set()
                release.wait(10)

        worker = threading.Thread(target=heavy)
        worker.start()
        try:
            held.wait(5)
            with pytest.raises(SessionBusy, match="memory"):
                studio.start_session(photo)
            assert studio.list_sessions() == []
        finally:
            release.set()
            worker.join()
        assert studio.start_session(photo).id                                # room again: it opens
