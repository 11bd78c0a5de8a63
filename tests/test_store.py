"""The store: sessions, the edit DAG and turns, and the checkpointer — on a real SQLite file and on a
fresh database of a throwaway PostgreSQL cluster on 127.0.0.1 (conftest)."""

from __future__ import annotations

import sqlite3

import pytest

from agent.errors import SessionNotFound
from agent.store import Store, open_checkpointer, resolve_database_url


@pytest.fixture
def store(any_database_url, tmp_path):
    s = Store(any_database_url, tmp_path)
    yield s
    s.close()


def _session(store, sid="s1", token="t" * 43):
    return store.create_session(session_id=sid, resume_token=token, title="photo.jpg", style=None,
                                review_mode="below_auto_approve", original_path="original.jpg",
                                width=400, height=300, original_state={"settings": {}, "layers": []})


def test_default_url_is_sqlite_in_the_sessions_folder_with_wal(tmp_path, monkeypatch):
    monkeypatch.delenv("ATELIER_DATABASE_URL", raising=False)
    store = Store(resolve_database_url(None, tmp_path), tmp_path)
    assert resolve_database_url(None, tmp_path) == f"sqlite:///{(tmp_path / 'atelier.db').resolve()}"
    monkeypatch.setenv("ATELIER_DATABASE_URL", "postgresql://db/atelier")
    assert resolve_database_url(None, tmp_path) == "postgresql://db/atelier"
    _session(store)
    mode = sqlite3.connect(tmp_path / "atelier.db").execute("PRAGMA journal_mode").fetchone()[0]
    store.close()
    assert mode == "wal"


def test_a_session_starts_with_its_original_as_turn_zero(store):
    session, original = _session(store)
    assert session.head_asset_id == original.id and original.turn == 0 and original.status == "original"
    assert store.find_by_token("t" * 43).id == "s1"
    with pytest.raises(SessionNotFound):
        store.find_by_token("u" * 43)
    with pytest.raises(SessionNotFound):
        store.get_session("s2")
    with pytest.raises(Exception):
        _session(store, sid="s2")  # resume tokens are unique


def test_the_edit_dag_keeps_branches_and_ancestry(store):
    _, original = _session(store)
    a1 = store.add_asset(session_id="s1", parent_id=original.id, turn=1, state={"settings": {"exposure": 10}},
                         summary="exposure +10", status="approved")
    a2 = store.add_asset(session_id="s1", parent_id=a1.id, turn=2, state={"settings": {"exposure": 10, "contrast": 5}},
                         summary="contrast +5", status="approved")
    b3 = store.add_asset(session_id="s1", parent_id=a1.id, turn=3, state={"settings": {"exposure": 10, "shadows": 9}},
                         summary="shadows +9", status="approved")
    assert [a.id for a in store.ancestors(a2.id)] == [original.id, a1.id, a2.id]
    assert [a.id for a in store.ancestors(b3.id)] == [original.id, a1.id, b3.id]
    assert [a.id for a in store.assets("s1")] == [original.id, a1.id, a2.id, b3.id]  # creation order


def test_finishing_a_turn_moves_the_head_once(store):
    _, original = _session(store)
    store.update_session("s1", active_thread="s1:1:abcd")
    cand = store.add_asset(session_id="s1", parent_id=original.id, turn=1, state={"settings": {"tint": 4}},
                           summary="tint +4")
    args = dict(session_id="s1", turn=1, message="more magenta", plan={"sub_goals": []}, outcome="approved",
                reply="Kept.", action={"turn": 1, "message": "more magenta", "outcome": "approved"},
                asset_id=cand.id, head_asset_id=cand.id, statuses={cand.id: "approved"})
    store.finish_turn(**args)
    store.finish_turn(**{**args, "reply": "twice"})  # a replayed fold writes nothing new
    session = store.get_session("s1")
    assert session.head_asset_id == cand.id and session.active_thread is None
    assert [(t.turn, t.reply) for t in store.turns("s1")] == [(1, "Kept.")]
    assert store.get_asset(cand.id).status == "approved" and store.last_turn("s1") == 1


def test_orphaned_render_files_are_swept(store):
    _, original = _session(store)
    renders = store.session_dir("s1") / "renders"
    renders.mkdir(parents=True)
    (renders / f"{original.id}-400.png").write_bytes(b"kept")
    (renders / "deadbeef-400.png").write_bytes(b"orphan")
    removed = store.sweep_orphan_files("s1")
    assert [p.name for p in removed] == ["deadbeef-400.png"]
    assert (renders / f"{original.id}-400.png").exists()


def test_the_checkpointer_is_sqlite_in_wal_mode(tmp_path):
    saver, close = open_checkpointer(resolve_database_url(None, tmp_path), tmp_path)
    try:
        assert type(saver).__name__ == "SqliteSaver"
        assert saver.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert (tmp_path / "checkpoints.db").exists()
    finally:
        close()


def test_the_checkpointer_on_postgresql_keeps_a_pending_turn_across_connections(postgres_url, tmp_path):
    """PostgresSaver through ATELIER_DATABASE_URL's URL: what one connection wrote, the next one reads."""
    from langgraph.checkpoint.base import empty_checkpoint

    saver, close = open_checkpointer(postgres_url, tmp_path)
    config = {"configurable": {"thread_id": "s1:1:abcd", "checkpoint_ns": ""}}
    try:
        assert type(saver).__name__ == "PostgresSaver"
        checkpoint = empty_checkpoint()
        saver.put(config, checkpoint, {"source": "input", "step": -1}, {})
    finally:
        close()
    again, close = open_checkpointer(postgres_url, tmp_path)
    try:
        found = again.get_tuple(config)
        assert found is not None and found.checkpoint["id"] == checkpoint["id"]
        again.delete_thread("s1:1:abcd")
        assert again.get_tuple(config) is None
    finally:
        close()
    assert not (tmp_path / "checkpoints.db").exists()     # nothing fell back to SQLite


def test_a_postgresql_url_without_the_driver_name_works(postgres_url, tmp_path):
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    s = Store(plain, tmp_path)
    try:
        _session(s)
        assert s.get_session("s1").title == "photo.jpg"
    finally:
        s.close()


def test_the_lease_goes_to_one_owner_until_released_or_expired(store):
    _session(store)
    assert store.acquire_lease("s1", "replica-a", ttl_s=30) is None
    assert store.acquire_lease("s1", "replica-b", ttl_s=30) == "replica-a"     # held: b is told by whom
    assert store.acquire_lease("s1", "replica-a", ttl_s=30) is None            # re-entrant for its owner
    assert store.renew_lease("s1", "replica-a", ttl_s=0.5) and not store.renew_lease("s1", "replica-b", 30)
    import time
    time.sleep(0.6)
    assert store.acquire_lease("s1", "replica-b", ttl_s=30) is None            # a's lease expired
    assert store.lease_of("s1")[0] == "replica-b"
    store.release_lease("s1", "replica-a")                                     # not a's to release
    assert store.lease_of("s1")[0] == "replica-b"
    store.release_lease("s1", "replica-b")
    assert store.lease_of("s1") == (None, None)
    with pytest.raises(SessionNotFound):
        store.acquire_lease("nope", "replica-a", ttl_s=30)


def test_an_older_database_gets_the_lease_columns(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions (id VARCHAR(32) PRIMARY KEY, resume_token VARCHAR(128), "
                 "created_at DATETIME, updated_at DATETIME, title VARCHAR(255), style VARCHAR(64), "
                 "review_mode VARCHAR(32), original_path TEXT, width INTEGER, height INTEGER, "
                 "head_asset_id VARCHAR(32), active_thread VARCHAR(96), settings JSON)")
    conn.commit()
    conn.close()
    s = Store(f"sqlite:///{db}", tmp_path)
    try:
        _session(s)
        assert s.acquire_lease("s1", "me", 5) is None and s.lease_of("s1")[0] == "me"
    finally:
        s.close()
