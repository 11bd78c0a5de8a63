"""The storage interface: a local folder by default, any fsspec URL for replicas on several machines.

The same contract runs on the local folder, fsspec's ``memory://`` and a
``file://`` URL; then two Studios with different local sessions folders (two
"machines") share one database and one storage URL and see the same session.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from agent.errors import AtelierError
from agent.service import Studio
from conftest import ScriptedJudge, ScriptedPlanner
from pipeline.blobs import BlobError
from pipeline.storage import FsspecStorage, LocalStorage, StoredBlobs, open_storage

KINDS = ("local", "memory", "file")


def storage_url(kind: str, tmp_path) -> str | None:
    if kind == "memory":
        return f"memory://atelier-{uuid.uuid4().hex[:8]}"
    if kind == "file":
        return (tmp_path / "shared").as_uri()
    return None


@pytest.fixture(params=KINDS)
def storage(request, tmp_path):
    made = open_storage(storage_url(request.param, tmp_path), tmp_path / "sessions")
    assert isinstance(made, LocalStorage if request.param == "local" else FsspecStorage)
    return made


def test_the_storage_contract(storage):
    assert not storage.exists("s1/original.jpg")
    with pytest.raises(FileNotFoundError):
        storage.read_bytes("s1/original.jpg")
    storage.write_bytes("s1/original.jpg", b"first")
    storage.write_bytes("s1/original.jpg", b"second")       # replaced whole
    storage.write_bytes("s1/exports/a-full.png", b"png")
    storage.write_bytes("s2/original.png", b"other")
    assert storage.read_bytes("s1/original.jpg") == b"second" and storage.exists("s1/original.jpg")
    assert storage.list("s1") == ["s1/exports/a-full.png", "s1/original.jpg"]
    assert storage.local_path("s1/exports/a-full.png").read_bytes() == b"png"
    storage.delete("s1/exports/a-full.png")
    storage.delete("s1/exports/a-full.png")                  # twice is fine
    assert storage.list("s1") == ["s1/original.jpg"]
    storage.delete_tree("s1")
    assert storage.list("s1") == [] and storage.read_bytes("s2/original.png") == b"other"
    for bad in ("../etc/passwd", "/etc/passwd", "s1/../../x", "s1//x", "", "s1/a b"):
        with pytest.raises(ValueError, match="storage key"):
            storage.write_bytes(bad, b"x")


def test_blobs_live_in_the_storage(storage):
    blobs = StoredBlobs(storage)
    mask = (np.arange(64 * 48, dtype=np.uint32).reshape(48, 64) % 256).astype(np.uint8)
    digest = blobs.put_array(mask)
    assert storage.list("blobs") == [f"blobs/{digest[:2]}/{digest}.png"]
    assert np.array_equal(StoredBlobs(storage).get_array(digest), mask)   # another instance, same pixels
    storage.write_bytes(f"blobs/{digest[:2]}/{digest}.png", b"not a png")
    with pytest.raises(BlobError, match="damaged"):
        blobs.get_array(digest)
    with pytest.raises(BlobError, match="no stored pixels"):
        blobs.get_array("0" * 64)


@pytest.mark.parametrize("kind", ("memory", "file"))
def test_two_machines_share_one_session_through_the_storage_url(kind, tmp_path, photo):
    url = storage_url(kind, tmp_path)
    db = f"sqlite:///{tmp_path / 'atelier.db'}"

    def machine(name):
        return Studio(database_url=db, sessions_dir=tmp_path / name, storage_url=url,
                      planner=ScriptedPlanner(), judge=ScriptedJudge([0.95]))

    a, b = machine("machine-a"), machine("machine-b")
    try:
        info = a.start_session(photo, filename="astronaut.png", review_mode="never")
        turn = a.send_message(info.id, "exposure+20 saturation-10")
        assert not (tmp_path / "machine-a" / info.id / "original.png").exists()   # the original is shared
        assert a.storage.exists(f"{info.id}/original.png")

        # machine b has never seen this session: it reads the original from the storage
        assert b.head(info.id).id == turn.asset_id
        assert np.array_equal(b.render(info.id, long_side=None), a.render(info.id, long_side=None))
        exported = b.export(info.id, fmt="png")
        assert a.storage.exists(f"{info.id}/exports/{turn.asset_id}-full.png")   # a finds b's export
        assert a.export(info.id, fmt="png").read_bytes() == exported.read_bytes()
        nxt = b.send_message(info.id, "contrast+10")                             # and carries on the session
        assert a.head(info.id).id == nxt.asset_id
    finally:
        a.close()
        b.close()


def test_the_storage_url_comes_from_the_environment(tmp_path, monkeypatch, photo):
    url = f"memory://atelier-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("ATELIER_STORAGE_URL", url)
    studio = Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
                    planner=ScriptedPlanner(), judge=ScriptedJudge())
    try:
        info = studio.start_session(photo)
        assert studio.storage.url == url and studio.storage.list(info.id) == [f"{info.id}/original.png"]
    finally:
        studio.close()


def test_an_unknown_storage_scheme_is_a_clear_error(tmp_path):
    with pytest.raises(AtelierError, match="ATELIER_STORAGE_URL='nosuch://bucket'"):
        Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
               storage_url="nosuch://bucket", planner=ScriptedPlanner(), judge=ScriptedJudge())
