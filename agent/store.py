"""Persistence: sessions, the edit DAG (assets) and turns, plus each session's files.

Three SQLAlchemy tables with portable types (SQLite by default, PostgreSQL
through ``ATELIER_DATABASE_URL``):

- ``sessions``: one uploaded photo and its conversation (resume token, title,
  style, review mode, original file, size, head asset, settings JSON).
- ``assets``: the edit DAG. One row per version: parent, turn, EditState
  JSON, summary, scores JSON, status. Pixels are never stored: a render is
  ``render(original, state)`` and files are a cache.
- ``turns``: one row per finished turn: message, plan JSON, outcome, reply and
  the one-line action record the context folder reads.

Files live under ``<sessions_dir>/<session_id>/`` and are written atomically
before the row that names them is committed. :func:`open_checkpointer` opens
LangGraph's checkpoint saver next to the database (SqliteSaver, WAL), or
PostgresSaver for a PostgreSQL URL. On PostgreSQL both the store and the
checkpointer use pools that check a connection before handing it out, so a
database restart costs the calls made while it is down, and the next call after
it is back works (a turn waiting for review included).

Text that reaches a row (replies, plans, action records, summaries, notices) is
passed through :func:`agent.redact.redact` first: no credential is ever stored,
even one a model endpoint echoed into an error.

The Store returns plain dataclass records, never live ORM objects, so callers
on other threads never touch a closed SQLAlchemy session.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from sqlalchemy import (JSON, DateTime, Float, ForeignKey, Integer, String, Text, create_engine, event,
                        func, inspect, or_, select, text, update)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, sessionmaker

from agent.errors import AtelierError, SessionNotFound
from agent.redact import redact, redact_data

DATABASE_URL_ENV = "ATELIER_DATABASE_URL"
#: PostgreSQL connections the checkpointer may hold (turns of different sessions run in parallel).
CHECKPOINT_POOL_SIZE = 8
#: Seconds a call waits for a working database connection before it fails with a clear error.
POOL_WAIT_S = 10.0
#: Seconds one connection attempt to PostgreSQL may take (a black-holed address must not hang a call).
CONNECT_TIMEOUT_S = 5


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def new_id() -> str:
    """A short random id for sessions and assets (not a secret: resume tokens are)."""
    return uuid.uuid4().hex[:16]


class Base(DeclarativeBase):
    pass


class SessionRow(Base):
    __tablename__ = "sessions"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    resume_token: Mapped[str] = mapped_column(String(128), unique=True, index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    title: Mapped[str] = mapped_column(String(255), default="Untitled")
    style: Mapped[str | None] = mapped_column(String(64), nullable=True)
    review_mode: Mapped[str] = mapped_column(String(32), default="below_auto_approve")
    original_path: Mapped[str] = mapped_column(Text)        # relative to the session's folder
    width: Mapped[int] = mapped_column(Integer)
    height: Mapped[int] = mapped_column(Integer)
    head_asset_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    active_thread: Mapped[str | None] = mapped_column(String(96), nullable=True)  # turn in flight / awaiting review
    settings: Mapped[dict] = mapped_column(JSON, default=dict)
    # The session lease: which app process (replica) may run turns, and until when (epoch seconds).
    lease_owner: Mapped[str | None] = mapped_column(String(96), nullable=True)
    lease_until: Mapped[float | None] = mapped_column(Float, nullable=True)


#: Columns added after the first release, with their SQL type: added to an older database at start.
_ADDED_COLUMNS = {"sessions": {"lease_owner": "VARCHAR(96)", "lease_until": "FLOAT"}}


class AssetRow(Base):
    __tablename__ = "assets"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    parent_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    turn: Mapped[int] = mapped_column(Integer)
    state: Mapped[dict] = mapped_column(JSON)
    summary: Mapped[str] = mapped_column(Text, default="")
    scores: Mapped[dict] = mapped_column(JSON, default=dict)
    status: Mapped[str] = mapped_column(String(32), default="pending")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    seq: Mapped[int] = mapped_column(Integer, default=0)  # creation order within a session


class TurnRow(Base):
    __tablename__ = "turns"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id", ondelete="CASCADE"), index=True)
    turn: Mapped[int] = mapped_column(Integer)
    message: Mapped[str] = mapped_column(Text)
    plan: Mapped[dict | None] = mapped_column(JSON, nullable=True)
    outcome: Mapped[str] = mapped_column(String(32))
    reply: Mapped[str] = mapped_column(Text, default="")
    action: Mapped[dict] = mapped_column(JSON, default=dict)  # ActionRecord.to_dict()
    asset_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


# -- records handed to callers ------------------------------------------------------------

@dataclass
class SessionRecord:
    id: str
    resume_token: str
    created_at: datetime
    updated_at: datetime
    title: str
    style: str | None
    review_mode: str
    original_path: str
    width: int
    height: int
    head_asset_id: str | None
    active_thread: str | None
    settings: dict = field(default_factory=dict)


@dataclass
class AssetRecord:
    id: str
    parent_id: str | None
    session_id: str
    turn: int
    state: dict
    summary: str
    scores: dict
    status: str
    created_at: datetime
    seq: int = 0

    @property
    def score(self) -> float | None:
        s = (self.scores or {}).get("score")
        return None if s is None else float(s)


@dataclass
class TurnRecord:
    session_id: str
    turn: int
    message: str
    plan: dict | None
    outcome: str
    reply: str
    action: dict
    asset_id: str | None
    created_at: datetime


def _session_record(r: SessionRow) -> SessionRecord:
    return SessionRecord(r.id, r.resume_token, r.created_at, r.updated_at, r.title, r.style,
                         r.review_mode, r.original_path, r.width, r.height, r.head_asset_id,
                         r.active_thread, dict(r.settings or {}))


def _asset_record(r: AssetRow) -> AssetRecord:
    return AssetRecord(r.id, r.parent_id, r.session_id, r.turn, dict(r.state or {}), r.summary or "",
                       dict(r.scores or {}), r.status, r.created_at, r.seq)


def _turn_record(r: TurnRow) -> TurnRecord:
    return TurnRecord(r.session_id, r.turn, r.message, r.plan, r.outcome, r.reply or "",
                      dict(r.action or {}), r.asset_id, r.created_at)


# -- database URLs -----------------------------------------------------------------------

def resolve_database_url(database_url: str | None, sessions_dir: Path, database_file: str = "atelier.db") -> str:
    """The URL to use: argument, else ``ATELIER_DATABASE_URL``, else SQLite in ``sessions_dir``."""
    url = database_url or os.environ.get(DATABASE_URL_ENV) or ""
    if not url:
        return f"sqlite:///{(Path(sessions_dir) / database_file).resolve()}"
    return url


def is_sqlite(url: str) -> bool:
    return url.startswith("sqlite")


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql", "postgres"))


def sqlalchemy_url(url: str) -> str:
    """A PostgreSQL URL with the psycopg (3) driver named, as SQLAlchemy needs it; others unchanged."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def libpq_url(url: str) -> str:
    """The same PostgreSQL URL as psycopg / libpq read it (no SQLAlchemy driver name)."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url[len(prefix):]
    return url


def sqlite_file(url: str) -> Path | None:
    """The database file a SQLite URL names (None for other databases and in-memory SQLite)."""
    if not is_sqlite(url):
        return None
    path = url.split(":///", 1)[1] if ":///" in url else ""
    path = path.split("?", 1)[0]
    return Path(path) if path and path != ":memory:" else None


class Store:
    """Sessions, assets and turns in one database, plus each session's folder of files.

    Thread-safe: every method opens its own short SQLAlchemy session.
    """

    def __init__(self, database_url: str, sessions_dir: str | os.PathLike, storage: Any = None):
        from pipeline.storage import LocalStorage

        self.sessions_dir = Path(sessions_dir)
        self.sessions_dir.mkdir(parents=True, exist_ok=True)
        #: Durable files (originals, blobs, exports); renders stay in the local sessions folder.
        self.storage = storage if storage is not None else LocalStorage(self.sessions_dir)
        self.url = database_url
        if is_sqlite(database_url):
            db_file = sqlite_file(database_url)
            if db_file is not None:
                db_file.parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(database_url, connect_args={"timeout": 30})
            event.listen(self.engine, "connect", _sqlite_pragmas)
        else:
            # pre-ping: a connection the server dropped (a restart) is replaced before use, not handed out
            self.engine = create_engine(sqlalchemy_url(database_url), pool_pre_ping=True, pool_timeout=POOL_WAIT_S,
                                        connect_args={"connect_timeout": CONNECT_TIMEOUT_S})
        Base.metadata.create_all(self.engine)
        self._add_missing_columns()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    def _add_missing_columns(self) -> None:
        """Bring a database made by an older version up to date (new nullable columns only)."""
        found = inspect(self.engine)
        for table, columns in _ADDED_COLUMNS.items():
            have = {c["name"] for c in found.get_columns(table)}
            for name, sql_type in columns.items():
                if name not in have:
                    with self.engine.begin() as conn:
                        conn.execute(text(f"ALTER TABLE {table} ADD COLUMN {name} {sql_type}"))

    def close(self) -> None:
        self.engine.dispose()

    # -- files ----------------------------------------------------------------------
    def session_dir(self, session_id: str) -> Path:
        return self.sessions_dir / session_id

    def render_path(self, session_id: str, asset_id: str, long_side: int, ext: str = "png") -> Path:
        """Cached render of an asset at a size: ``<session>/renders/<asset>-<long_side>.<ext>``."""
        return self.session_dir(session_id) / "renders" / f"{asset_id}-{long_side}.{ext}"

    def original_key(self, session: SessionRecord) -> str:
        return f"{session.id}/{session.original_path}"

    def read_original(self, session: SessionRecord) -> bytes:
        """The untouched original's bytes, from the storage (a replica on another machine reads the same)."""
        return self.storage.read_bytes(self.original_key(session))

    def original_file(self, session: SessionRecord) -> Path:
        """A local file holding the original (a local copy when the storage is shared)."""
        return self.storage.local_path(self.original_key(session))

    def delete_asset_files(self, session_id: str, asset_ids: Iterable[str]) -> None:
        folder = self.session_dir(session_id) / "renders"
        for asset_id in asset_ids:
            for p in folder.glob(f"{asset_id}-*"):
                p.unlink(missing_ok=True)

    def sweep_orphan_files(self, session_id: str) -> list[Path]:
        """Delete cached renders and exports whose asset row does not exist (a killed turn)."""
        known = {a.id for a in self.assets(session_id)}
        removed = []
        for sub in ("renders", "exports"):
            folder = self.session_dir(session_id) / sub
            if not folder.is_dir():
                continue
            for p in folder.iterdir():
                if p.name.startswith("original-"):
                    continue
                if p.name.split("-", 1)[0] not in known or p.name.startswith(".tmp") or ".tmp" in p.suffixes:
                    p.unlink(missing_ok=True)
                    removed.append(p)
        if self.storage.local_root != self.sessions_dir.resolve():   # exports in the shared storage
            for key in self.storage.list(f"{session_id}/exports"):
                if key.rsplit("/", 1)[1].split("-", 1)[0] not in known:
                    self.storage.delete(key)
                    removed.append(Path(key))
        return removed

    # -- sessions -------------------------------------------------------------------
    def create_session(self, *, session_id: str, resume_token: str, title: str, style: str | None,
                       review_mode: str, original_path: str, width: int, height: int,
                       original_state: dict, settings: dict | None = None) -> tuple[SessionRecord, AssetRecord]:
        """Create a session and its turn-0 asset (the untouched original) in one transaction."""
        asset_id = new_id()
        with self._sessions.begin() as db:
            row = SessionRow(id=session_id, resume_token=resume_token, title=redact(title), style=style,
                             review_mode=review_mode, original_path=original_path, width=width,
                             height=height, head_asset_id=asset_id, settings=redact_data(settings or {}))
            db.add(row)
            db.flush()
            asset = AssetRow(id=asset_id, parent_id=None, session_id=session_id, turn=0,
                             state=original_state, summary="the original photo", scores={},
                             status="original", seq=0)
            db.add(asset)
            db.flush()
            return _session_record(row), _asset_record(asset)

    def get_session(self, session_id: str) -> SessionRecord:
        if not isinstance(session_id, str) or not session_id:
            raise SessionNotFound("no session id given")
        with self._sessions() as db:
            row = db.get(SessionRow, session_id)
            if row is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return _session_record(row)

    def find_by_token(self, token: str) -> SessionRecord:
        with self._sessions() as db:
            row = db.scalars(select(SessionRow).where(SessionRow.resume_token == token)).first()
            if row is None:
                raise SessionNotFound("that session link is not valid (unknown resume token)")
            return _session_record(row)

    def list_sessions(self) -> list[SessionRecord]:
        with self._sessions() as db:
            rows = db.scalars(select(SessionRow).order_by(SessionRow.updated_at.desc(), SessionRow.id)).all()
            return [_session_record(r) for r in rows]

    def update_session(self, session_id: str, **values: Any) -> None:
        values = {k: (redact_data(v) if k in ("settings", "title") else v) for k, v in values.items()}
        values["updated_at"] = utcnow()
        with self._sessions.begin() as db:
            result = db.execute(update(SessionRow).where(SessionRow.id == session_id).values(**values))
            if result.rowcount == 0:
                raise SessionNotFound(f"no session {session_id!r}")

    # -- the session lease (one replica runs a session's turns at a time) ----------
    def acquire_lease(self, session_id: str, owner: str, ttl_s: float, steal_from: str | None = None) -> str | None:
        """Take or extend the lease for ``owner``; returns None when taken, else the holder's name.

        Free, already ours, or expired (its process died) leases are taken in one
        atomic UPDATE, so of two replicas racing for one session exactly one wins.
        ``steal_from`` also takes it from that holder (one known to be dead).
        """
        now = time.time()
        free = [SessionRow.lease_owner.is_(None), SessionRow.lease_owner == owner, SessionRow.lease_until < now]
        if steal_from:
            free.append(SessionRow.lease_owner == steal_from)
        with self._sessions.begin() as db:
            result = db.execute(
                update(SessionRow)
                .where(SessionRow.id == session_id, or_(*free))
                .values(lease_owner=owner, lease_until=now + ttl_s))
            if result.rowcount == 1:
                return None
            holder = db.scalar(select(SessionRow.lease_owner).where(SessionRow.id == session_id))
        if holder is None and not self._exists(session_id):
            raise SessionNotFound(f"no session {session_id!r}")
        return holder or "another process"

    def renew_lease(self, session_id: str, owner: str, ttl_s: float) -> bool:
        """Push our lease's expiry on; False when it is no longer ours."""
        with self._sessions.begin() as db:
            result = db.execute(update(SessionRow)
                                .where(SessionRow.id == session_id, SessionRow.lease_owner == owner)
                                .values(lease_until=time.time() + ttl_s))
            return result.rowcount == 1

    def release_lease(self, session_id: str, owner: str) -> None:
        with self._sessions.begin() as db:
            db.execute(update(SessionRow).where(SessionRow.id == session_id, SessionRow.lease_owner == owner)
                       .values(lease_owner=None, lease_until=None))

    def lease_of(self, session_id: str) -> tuple[str | None, float | None]:
        """(owner, expiry as epoch seconds) of a session's lease."""
        with self._sessions() as db:
            row = db.execute(select(SessionRow.lease_owner, SessionRow.lease_until)
                             .where(SessionRow.id == session_id)).first()
            if row is None:
                raise SessionNotFound(f"no session {session_id!r}")
            return row[0], row[1]

    def _exists(self, session_id: str) -> bool:
        with self._sessions() as db:
            return db.get(SessionRow, session_id) is not None

    # -- assets ---------------------------------------------------------------------
    def add_asset(self, *, session_id: str, parent_id: str | None, turn: int, state: dict,
                  summary: str, status: str = "pending", scores: dict | None = None,
                  asset_id: str | None = None) -> AssetRecord:
        with self._sessions.begin() as db:
            seq = db.scalar(select(func.coalesce(func.max(AssetRow.seq), 0)).where(AssetRow.session_id == session_id))
            row = AssetRow(id=asset_id or new_id(), parent_id=parent_id, session_id=session_id, turn=turn,
                           state=state, summary=redact(summary), scores=redact_data(scores or {}), status=status,
                           seq=int(seq) + 1)
            db.add(row)
            db.flush()
            return _asset_record(row)

    def get_asset(self, asset_id: str, session_id: str | None = None) -> AssetRecord:
        with self._sessions() as db:
            row = db.get(AssetRow, asset_id) if isinstance(asset_id, str) else None
            if row is None or (session_id is not None and row.session_id != session_id):
                raise AtelierError(f"no version {asset_id!r} in this session")
            return _asset_record(row)

    def assets(self, session_id: str) -> list[AssetRecord]:
        """Every asset of a session, oldest first."""
        with self._sessions() as db:
            rows = db.scalars(select(AssetRow).where(AssetRow.session_id == session_id)
                              .order_by(AssetRow.seq, AssetRow.created_at)).all()
            return [_asset_record(r) for r in rows]

    def ancestors(self, asset_id: str) -> list[AssetRecord]:
        """The chain from the original to ``asset_id`` inclusive, oldest first."""
        chain: list[AssetRecord] = []
        seen: set[str] = set()
        current: str | None = asset_id
        while current and current not in seen:
            seen.add(current)
            a = self.get_asset(current)
            chain.append(a)
            current = a.parent_id
        return chain[::-1]

    def set_asset_fields(self, asset_id: str, **values: Any) -> None:
        values = {k: (v if k == "state" else redact_data(v)) for k, v in values.items()}
        with self._sessions.begin() as db:
            db.execute(update(AssetRow).where(AssetRow.id == asset_id).values(**values))

    def delete_assets(self, session_id: str, asset_ids: Iterable[str]) -> None:
        """Delete rows first, then their cached files (a file without a row is only a cache miss)."""
        ids = list(asset_ids)
        if not ids:
            return
        with self._sessions.begin() as db:
            for row in db.scalars(select(AssetRow).where(AssetRow.id.in_(ids), AssetRow.session_id == session_id)):
                db.delete(row)
        self.delete_asset_files(session_id, ids)

    # -- turns ----------------------------------------------------------------------
    def finish_turn(self, *, session_id: str, turn: int, message: str, plan: dict | None, outcome: str,
                    reply: str, action: dict, asset_id: str | None, head_asset_id: str,
                    statuses: dict[str, str]) -> TurnRecord:
        """Record a finished turn, set asset statuses and move the head, in one transaction.

        Idempotent per (session, turn): a turn already recorded is not written twice.
        """
        with self._sessions.begin() as db:
            existing = db.scalars(select(TurnRow).where(TurnRow.session_id == session_id,
                                                        TurnRow.turn == turn)).first()
            if existing is not None:
                return _turn_record(existing)
            for aid, status in statuses.items():
                db.execute(update(AssetRow).where(AssetRow.id == aid).values(status=status))
            row = TurnRow(session_id=session_id, turn=turn, message=redact(message), plan=redact_data(plan),
                          outcome=outcome, reply=redact(reply), action=redact_data(action), asset_id=asset_id)
            db.add(row)
            db.execute(update(SessionRow).where(SessionRow.id == session_id)
                       .values(head_asset_id=head_asset_id, active_thread=None, updated_at=utcnow()))
            db.flush()
            return _turn_record(row)

    def turns(self, session_id: str) -> list[TurnRecord]:
        with self._sessions() as db:
            rows = db.scalars(select(TurnRow).where(TurnRow.session_id == session_id).order_by(TurnRow.turn)).all()
            return [_turn_record(r) for r in rows]

    def last_turn(self, session_id: str) -> int:
        with self._sessions() as db:
            n = db.scalar(select(func.max(TurnRow.turn)).where(TurnRow.session_id == session_id))
            return int(n or 0)

    def turn_count(self, session_id: str) -> int:
        with self._sessions() as db:
            return int(db.scalar(select(func.count()).select_from(TurnRow).where(TurnRow.session_id == session_id)) or 0)

    def remove_session_files(self, session_id: str) -> None:
        self.storage.delete_tree(session_id)
        shutil.rmtree(self.session_dir(session_id), ignore_errors=True)


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    # WAL lets readers (the UI) work while a turn writes; foreign keys cascade deletes.
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.close()


# -- LangGraph checkpoints ------------------------------------------------------------------

def open_checkpointer(database_url: str, sessions_dir: Path, checkpoints_file: str = "checkpoints.db"):
    """LangGraph's checkpoint saver for ``database_url``; returns (saver, close_function).

    SQLite (the default): a SqliteSaver on ``<sessions_dir>/<checkpoints_file>``
    with one connection shared across threads (the saver serialises access with
    its own lock) in WAL mode. PostgreSQL: a PostgresSaver on a connection pool
    that checks each connection before use (a restarted server costs no restart
    of Atelier), which needs the ``langgraph-checkpoint-postgres`` package.
    """
    if is_postgres(database_url):
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
            from psycopg.rows import dict_row
            from psycopg_pool import ConnectionPool
        except ImportError:
            raise AtelierError(
                "ATELIER_DATABASE_URL points at PostgreSQL, but langgraph-checkpoint-postgres is not "
                "installed: pip install langgraph-checkpoint-postgres psycopg[binary]"
            ) from None
        pool = ConnectionPool(
            libpq_url(database_url), min_size=1, max_size=CHECKPOINT_POOL_SIZE, open=False,
            name="atelier-checkpoints", check=ConnectionPool.check_connection,
            timeout=POOL_WAIT_S, reconnect_timeout=POOL_WAIT_S,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
                    "connect_timeout": CONNECT_TIMEOUT_S})
        try:
            pool.open(wait=True, timeout=POOL_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - PoolTimeout hides the cause in the log; say it plainly
            pool.close()
            raise AtelierError(f"cannot reach the PostgreSQL database ({redact(str(exc))})") from None
        saver = PostgresSaver(pool)
        saver.setup()
        return saver, pool.close
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = Path(sessions_dir) / checkpoints_file
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
    conn.execute("PRAGMA journal_mode=WAL")
    saver = SqliteSaver(conn)
    saver.setup()
    return saver, conn.close


__all__ = ["AssetRecord", "DATABASE_URL_ENV", "SessionRecord", "Store", "TurnRecord", "is_postgres",
           "is_sqlite", "new_id", "open_checkpointer", "resolve_database_url"]
