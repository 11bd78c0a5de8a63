"""Every in-memory cache of a Studio stays within its configured bound under many sessions.

Renders, LUT coordinates, masks, LUTs and decoded originals are all caches:
after many sessions and many different renders (global edits and a masked
layer) each cache is at or under its limit, and evicted entries come back
bit-exact when asked for again.
"""

from __future__ import annotations

import numpy as np

from conftest import ScriptedJudge, ScriptedPlanner, small_photo

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "hubble_deep_field")


def test_caches_stay_within_their_bounds_and_evictions_rebuild_exactly(make_studio):
    studio = make_studio(ScriptedPlanner(), ScriptedJudge([0.95]), render_cache_bytes=6 * 2**20,
                         source_cache_bytes=2 * 2**20, source_cache_sessions=8, review_mode="never")
    sessions = [studio.start_session(small_photo(name, 480)) for name in PHOTOS]
    first = studio.render(sessions[0].id, long_side=480)
    for info in sessions:
        for k, text in enumerate(("exposure+10", "contrast+15@sky", "temperature-12", "saturation+20@shadows")):
            studio.send_message(info.id, text)
            studio.render(info.id, long_side=320 + 16 * k)
    r = studio.renderer
    assert 0 < r.renders.nbytes <= r.renders.max_bytes == 3 * 2**20
    assert r.coords.nbytes <= r.coords.max_bytes and r.luts.nbytes <= r.luts.max_bytes
    assert 0 < r.masks.nbytes <= 6 * 2**20 // 4
    held = studio.sources.held()
    assert sum(held.values()) <= 2 * 2**20 and 1 <= len(held) < len(PHOTOS)   # originals were dropped ...
    assert sessions[0].id not in held
    again = studio.render(sessions[0].id, asset_id=sessions[0].head_asset_id, long_side=480)
    assert np.array_equal(again, first)                                     # ... and decode again exactly
