"""``agent.service``: the one session API that the UI, the CLI, MCP tools and eval call.

A :class:`Studio` owns one store (database + sessions folder), one LangGraph
checkpointer, one compiled graph and one renderer. Everything that matters
lives in the database and on disk, so a second Studio on the same database
and folder sees every session — including a turn that waits for review (its
LangGraph checkpoint). See docs/service-api.md for the contract.

Threading: methods may be called from many threads; calls on one session are
serialised by a per-session lock, calls on different sessions run in parallel.
Each turn runs on its own LangGraph thread (``<session id>:<turn>:<nonce>``),
recorded on the session row while it is in flight or waiting for review.
"""

from __future__ import annotations

import atexit
import os
import queue
import re
import secrets
import socket
import sys
import threading
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from agent.config import REVIEW_MODES, AgentConfig, load_config
from agent.errors import AtelierError, InvalidInput, SessionBusy, SessionNotFound
from agent.graph import build_graph
from agent.schema_quota import MAX_EXAMPLE_CHARS, SchemaQuota  # noqa: F401 - MAX_EXAMPLE_CHARS: a public name here
from agent.state import ActionRecord, fresh_turn_state
from agent.wording import compose_reply
from agent.store import (AssetRecord, SessionRecord, Store, new_id, open_checkpointer,
                         resolve_database_url)
from pipeline import ops
from pipeline.imageio import ImageLoadError, load_image, save_image, write_bytes_atomic
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState, EditStateError

SESSIONS_DIR_ENV = "ATELIER_SESSIONS_DIR"
EXPORT_FORMATS = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "tiff": "tif", "tif": "tif", "webp": "webp"}
_FORMAT_EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "TIFF": "tif", "GIF": "gif", "MPO": "jpg",
               "DNG": "dng", "CR2": "cr2", "CR3": "cr3", "NEF": "nef", "ARW": "arw", "RAF": "raf", "ORF": "orf"}
MAX_MESSAGE_CHARS = 2000
#: Live slider previews kept per session (older ones are deleted as new ones are written).
PREVIEWS_KEPT = 16
#: A progress callback: receives small dicts while a turn runs (see agent/progress.py).
ProgressFn = Callable[[dict], None]
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{20,128}$")
#: TurnResult.kind: an edit (a new version or a review), a chat command (undo, export ...), an answer
#: to a question, small talk, or a clarifying question (no version; quick_replies filled).
TURN_KINDS = ("edit", "command", "question", "chat", "clarify", "generate")
#: Session setting holding the undo trail: versions undone from, newest last (redo pops it).
_REDO_KEY = "redo_stack"
_WAITING = "a turn is waiting for your review: approve, modify, roll back or replan first"


# -- records --------------------------------------------------------------------------------

@dataclass
class SessionInfo:
    id: str
    resume_token: str
    created_at: str
    updated_at: str
    title: str
    style: str | None
    review_mode: str
    turns: int
    head_asset_id: str | None
    width: int
    height: int
    notices: list[str] = field(default_factory=list)
    planner_schema: str = "default"
    quality_schema: str = "default"
    shareable: bool = False          # the person agreed to share this session as training data

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AssetInfo:
    id: str
    parent_id: str | None
    turn: int
    summary: str
    score: float | None
    state: dict
    created_at: str
    is_head: bool
    on_head_path: bool
    status: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ReviewPayload:
    asset_id: str
    turn: int
    score: float | None
    assessment: str
    dimensions: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)
    sub_goals: list = field(default_factory=list)
    ops: list = field(default_factory=list)
    reply: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_interrupt(cls, value: dict) -> "ReviewPayload":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in dict(value).items() if k in known})


@dataclass
class TurnResult:
    session_id: str
    turn: int
    status: str
    reply: str
    sub_goals: list = field(default_factory=list)
    score: float | None = None
    assessment: str = ""
    dimensions: dict = field(default_factory=dict)
    fields: dict = field(default_factory=dict)
    asset_id: str | None = None
    head_asset_id: str | None = None
    rendered_path: str | None = None
    warnings: list = field(default_factory=list)
    review: ReviewPayload | None = None
    #: Short answers the person can pick (buttons in the studio, numbers in the CLI).
    quick_replies: list[str] = field(default_factory=list)
    #: What kind of turn this was: one of TURN_KINDS.
    kind: str = "edit"
    #: The file a chat export wrote ("export as png"), else None.
    export_path: str | None = None
    #: The turn's details: skills trace, review tier(s), failures by kind, the executor's record, and
    #: ``details["measurements"]``: the numbers behind ``reply`` (op values, L*, b*, SSIM, the score) for a
    #: details fold; ``reply`` itself says what changed in plain words.
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["review"] = self.review.to_dict() if self.review else None
        return d


def _iso(dt) -> str:
    return dt.isoformat() if dt is not None else ""


def _dead_here(owner: str) -> bool:
    """True when a lease owner ('host:pid:token') names a process of this machine that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname()[:40] or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


#: OS niceness of the warming thread: it takes CPU that turns leave idle, never theirs
#: (a turn that needs a region first computes it itself; see Renderer.warm).
WARM_NICENESS = 10


def _warm_loop(jobs: queue.SimpleQueue, renderer: Renderer) -> None:
    """One Studio's warming thread: Renderer.warm for each uploaded photo, until None arrives."""
    if sys.platform.startswith("linux"):   # Linux gives each thread its own nice value
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WARM_NICENESS)
        except OSError:
            pass
    while (source := jobs.get()) is not None:
        try:
            renderer.warm(source)
        except Exception:  # noqa: BLE001 - a turn that needs the region finds it (or its error) itself
            pass


def _stop_warming(jobs: queue.SimpleQueue, thread: threading.Thread) -> None:
    """Drop the queued photos and wait (bounded) for the one being warmed."""
    try:
        while True:
            jobs.get_nowait()
    except queue.Empty:
        pass
    jobs.put(None)
    thread.join(timeout=30)


def _checked_ops(values: dict, where: str) -> dict[str, int]:
    """``{op name or alias: value}`` -> ``{canonical op: checked int}``; the first bad one is InvalidInput."""
    out: dict[str, int] = {}
    for name, value in values.items():
        try:
            op = ops.get_op(name)
            out[op.name] = op.check(value)
        except ops.OpError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
    return out


def _canonical_side(width: int, height: int, long_side: int | None) -> int:
    """The long side a render at ``long_side`` really has (renders never upscale)."""
    full = max(width, height)
    return full if long_side is None else min(int(long_side), full)


# -- the Studio -----------------------------------------------------------------------------

class Studio:
    """Sessions, turns and renders over one database and sessions folder (see docs/service-api.md)."""

    def __init__(self, database_url: str | None = None, sessions_dir: str | os.PathLike | None = None,
                 planner=None, judge=None, config: AgentConfig | None = None,
                 schemas_root: str | os.PathLike | None = None, generation_backend=None,
                 storage_url: str | None = None):
        self.config = config or load_config()
        # Output schemas (and the custom ones generate_schema writes): <root>/<agent>/[custom/]<name>.yaml
        self.schemas_root = Path(schemas_root).resolve() if schemas_root else None
        self._schema_lock = threading.Lock()
        self.schema_quota = SchemaQuota.from_config(self.config)   # schemas.max_custom / max_per_visitor
        folder = sessions_dir or os.environ.get(SESSIONS_DIR_ENV) or self.config.sessions_path()
        self.sessions_dir = Path(folder).resolve()
        url = resolve_database_url(database_url, self.sessions_dir, self.config.database_file)
        # Originals, blobs and exports: the sessions folder, or ATELIER_STORAGE_URL shared by replicas.
        from pipeline.storage import StoredBlobs, open_storage
        try:
            self.storage = open_storage(storage_url, self.sessions_dir)
        except ValueError as exc:
            raise AtelierError(str(exc)) from None
        self.blobs = StoredBlobs(self.storage)
        self.database_url = url
        self.store = Store(url, self.sessions_dir, storage=self.storage)
        self.checkpointer, self._close_checkpointer = open_checkpointer(
            url, self.sessions_dir, self.config.checkpoints_file)
        #: Content-addressed pixel assets (painted selections, healed patches, generated layers), shared by
        #: every session, kept in the session storage (sessions folder, or ATELIER_STORAGE_URL) above.
        self.renderer = Renderer(max_cache_bytes=self.config.render_cache_bytes, blobs=self.blobs)
        from pipeline.gpu import upgrade_renderer
        # the torch path when CUDA is present (ATELIER_RENDER_DEVICE=cpu keeps OpenCV): same pixels within 1 level
        self.renderer = upgrade_renderer(self.renderer, self.config.render_cache_bytes)
        if planner is None:
            from agent.planners import default_planner
            planner = default_planner(config=self.config)
        if judge is None:
            from agent.judges import default_judge
            judge = default_judge(config=self.config)
        self.planner, self.judge = planner, judge
        self._wire_model_circuit()
        self._sources: OrderedDict[str, SourceImage] = OrderedDict()
        self._sources_lock = threading.Lock()
        #: Photos whose content regions are found in the background (images.warm_on_upload); made on first use.
        self._warm_jobs: queue.SimpleQueue | None = None
        self._locks: dict[str, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._recovered: set[str] = set()
        # Who this Studio is in session leases (several processes or Studios may share one database).
        self.lease_owner = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._leased_here: set[str] = set()
        from agent.skills import SkillPlanner  # requests for skills ("use the film skill") are planned from skills/

        self.graph = build_graph(SkillPlanner(planner, self.config), judge, self.store, self.renderer, self.config,
                                 self.checkpointer, sources=self._source, schemas_root=self.schemas_root)
        from agent.generation import GenerationDesk
        #: Generation (issue 14): backend from ATELIER_GEN_BACKEND / ATELIER_GEN_MODEL unless one is injected.
        self.generation = GenerationDesk(self, generation_backend)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the database connections (the data stays)."""
        if self._warm_jobs is not None:
            self._warm_jobs.put(None)   # the warming thread ends after the photo in hand
        self.generation.close()
        self._close_checkpointer()
        self.store.close()

    def __enter__(self) -> "Studio":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the model endpoint: one deadline per turn, a circuit breaker, a status badge ---------
    def _wire_model_circuit(self) -> None:
        """Give the planner's and the judge's VLM clients one shared circuit and this config's turn deadline."""
        from agent.vlm import DEFAULT_COOLDOWN_S, ModelCircuit, VLMClient, VLMSettings, vlm_limits

        limits = vlm_limits(self.config)
        self.turn_deadline_s = float(limits.get("turn_deadline_s", VLMSettings.turn_deadline_s))
        self.model_circuit = ModelCircuit(float(limits.get("circuit_cooldown_s", DEFAULT_COOLDOWN_S)))
        self._model_clients = []
        for part in (self.planner, self.judge):
            client = getattr(part, "client", None)
            if isinstance(client, VLMClient):
                client.circuit = self.model_circuit
                self._model_clients.append(client)

    def model_status(self) -> dict:
        """Which planner and judge answer now, for the studio's badge.

        ``{"state": "model" | "fallback" | "embedded", "label": str, "until": ISO time or None}``:
        "model" = the configured VLM; "fallback" = the VLM stopped answering (timeout or refused
        connection) and the built-in planner and judge stand in until ``until``; "embedded" = no
        model is configured.
        """
        if not self._model_clients:
            return {"state": "embedded", "label": "Built-in planner and judge", "until": None}
        where = self._model_clients[0].where
        until = self.model_circuit.until
        if until is not None:
            return {"state": "fallback", "until": until.isoformat(),
                    "label": f"Built-in fallback until {until:%H:%M:%S} UTC ({where} is not answering)"}
        return {"state": "model", "label": f"Model: {where}", "until": None}

    def private_paths(self) -> list[Path]:
        """Every file and folder of this Studio that a web server must never serve.

        The sessions folder (originals, renders, previews, the browser secret, the
        local copies of shared files), the SQLite database and checkpoint files with
        their -wal/-shm/-journal companions wherever they are, and a shared storage
        folder (``file://`` storage URL).
        """
        from agent.store import _sqlite_file, is_sqlite

        paths = [self.sessions_dir, self.sessions_dir / ".browser-secret"]
        files = [self.sessions_dir / self.config.checkpoints_file]
        if is_sqlite(self.database_url) and _sqlite_file(self.database_url) is not None:
            files.append(_sqlite_file(self.database_url))
        for f in files:
            f = f.resolve()
            paths += [f] + [f.with_name(f.name + tail) for tail in ("-wal", "-shm", "-journal")]
        if self.storage.local_root is not None:
            paths.append(self.storage.local_root)
        out: list[Path] = []
        for p in paths:
            p = Path(p).resolve()
            if p not in out:
                out.append(p)
        return out

    # -- internals ----------------------------------------------------------------------
    def _lock(self, session_id: str) -> threading.RLock:
        with self._locks_guard:
            return self._locks.setdefault(session_id, threading.RLock())

    def _source(self, session_id: str) -> SourceImage:
        """The decoded original of a session (a small LRU: decoding is the slow part)."""
        with self._sources_lock:
            if session_id in self._sources:
                self._sources.move_to_end(session_id)
                return self._sources[session_id]
        session = self.store.get_session(session_id)
        loaded = load_image(self.store.read_original(session), max_pixels=self.config.max_upload_pixels,
                            alpha="keep", name=session.original_path)   # the name tells a RAW file
        source = SourceImage.from_loaded(loaded)
        self._remember_source(session_id, source)
        return source

    def _warm(self, source: SourceImage) -> None:
        """Find ``source``'s faces, subject and sky on this Studio's one background thread, at low
        OS priority, while the person types (images.warm_on_upload). A turn that asks for one of
        them before it is found computes it itself, inside its own measured time; nothing is skipped."""
        if not self.config.warm_on_upload:
            return
        with self._sources_lock:
            if self._warm_jobs is None:
                self._warm_jobs = queue.SimpleQueue()
                thread = threading.Thread(target=_warm_loop, args=(self._warm_jobs, self.renderer),
                                          name="atelier-warm", daemon=True)
                thread.start()
                # At exit, let the photo in hand finish: a daemon thread stopped inside OpenCV aborts the process.
                atexit.register(_stop_warming, self._warm_jobs, thread)
        self._warm_jobs.put(source)

    def _remember_source(self, session_id: str, source: SourceImage) -> None:
        """Keep a decoded original, within images.source_cache_sessions and images.source_cache_bytes."""
        with self._sources_lock:
            self._sources[session_id] = source
            self._sources.move_to_end(session_id)
            # a source also keeps up to 4 resized copies: count it as 1.5x its pixels
            held = sum(int(s.pixels.nbytes * 1.5) for s in self._sources.values())
            while len(self._sources) > 1 and (len(self._sources) > self.config.source_cache_sessions
                                              or held > self.config.source_cache_bytes):
                _, dropped = self._sources.popitem(last=False)
                held -= int(dropped.pixels.nbytes * 1.5)

    def _thread_config(self, thread_id: str) -> dict:
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": 200}

    def _session(self, session_id: str) -> SessionRecord:
        """The session row, after settling a turn a killed process left in flight (once per Studio)."""
        session = self.store.get_session(session_id)
        if session_id not in self._recovered:
            with self._lock(session_id):
                if session_id not in self._recovered and self._try_settle(session_id):
                    self._recovered.add(session_id)
            session = self.store.get_session(session_id)
        return session

    def _try_settle(self, session_id: str) -> bool:
        """Recover a killed turn if no live process holds the session's lease; True when checked."""
        if session_id in self._leased_here:
            self._recover(self.store.get_session(session_id))
            return True
        if self._acquire(session_id) is not None:
            return False  # a turn is running in another replica: its active thread is alive
        try:
            self._recover(self.store.get_session(session_id))
        finally:
            self.store.release_lease(session_id, self.lease_owner)
        return True

    @contextmanager
    def _leased(self, session_id: str):
        """Hold the session's thread lock and its database lease (one replica at a time runs its turns).

        Waits up to ``replicas.lease_wait_s`` for another replica's turn to end,
        then raises SessionBusy. While held, a heartbeat renews the lease; a lease
        whose process died expires after ``replicas.lease_ttl_s`` and the next
        holder settles the turn it left (its pending versions go, nothing kept is lost).
        """
        with self._lock(session_id):
            if session_id in self._leased_here:      # re-entered (review -> a turn of its own)
                yield
                return
            ttl, wait = self.config.lease_ttl_s, self.config.lease_wait_s
            give_up = time.monotonic() + wait
            while (holder := self._acquire(session_id)) is not None:
                if time.monotonic() >= give_up:
                    raise SessionBusy("this session is busy with a turn on another server; "
                                      "try again in a moment") from None
                time.sleep(min(0.1, max(0.01, wait / 20)))
            stop = threading.Event()
            beat = threading.Thread(target=self._heartbeat, args=(session_id, ttl, stop),
                                    name=f"lease-{session_id}", daemon=True)
            beat.start()
            self._leased_here.add(session_id)
            try:
                session = self.store.get_session(session_id)
                if session.active_thread and self._interrupt(session.active_thread) is None:
                    self._abandon_turn(session)      # a turn whose process was killed
                if session_id not in self._recovered:
                    self.store.sweep_orphan_files(session_id)
                    self._recovered.add(session_id)
                yield
            finally:
                self._leased_here.discard(session_id)
                stop.set()
                beat.join(timeout=5)
                self.store.release_lease(session_id, self.lease_owner)

    def _acquire(self, session_id: str) -> str | None:
        """One try at the lease; a holder that is a dead process on this machine is taken over at once."""
        holder = self.store.acquire_lease(session_id, self.lease_owner, self.config.lease_ttl_s)
        if holder is not None and _dead_here(holder):
            holder = self.store.acquire_lease(session_id, self.lease_owner, self.config.lease_ttl_s,
                                              steal_from=holder)
        return holder

    def _heartbeat(self, session_id: str, ttl: float, stop: threading.Event) -> None:
        while not stop.wait(ttl / 3):
            try:
                self.store.renew_lease(session_id, self.lease_owner, ttl)
            except Exception:  # noqa: BLE001 - a missed beat only shortens the lease
                pass

    def _recover(self, session: SessionRecord) -> None:
        if session.active_thread and self._interrupt(session.active_thread) is None:
            self._abandon_turn(session)
        self.store.sweep_orphan_files(session.id)

    def _interrupt(self, thread_id: str) -> dict | None:
        snapshot = self.graph.get_state(self._thread_config(thread_id))
        return dict(snapshot.interrupts[0].value) if snapshot.interrupts else None

    def _abandon_turn(self, session: SessionRecord) -> None:
        """Forget the turn in flight: its pending versions go, the head and finished turns stay."""
        thread_id = self.store.get_session(session.id).active_thread
        done = self.store.last_turn(session.id)
        stale = [a.id for a in self.store.assets(session.id) if a.status == "pending" and a.turn > done]
        self.store.delete_assets(session.id, stale)
        self.store.update_session(session.id, active_thread=None)
        if thread_id:
            self._forget_thread(thread_id)

    def _pending(self, session: SessionRecord) -> dict | None:
        return self._interrupt(session.active_thread) if session.active_thread else None

    def _run(self, session: SessionRecord, thread_id: str, payload: Any, turn: int, message: str,
             progress: ProgressFn | None = None) -> TurnResult:
        from agent.vlm import turn_deadline

        config = self._thread_config(thread_id)
        try:
            with turn_deadline(self.turn_deadline_s):  # planner, judge, repairs and replans share it
                if progress is None:
                    self.graph.invoke(payload, config)
                else:
                    self._stream(payload, config, progress)
        except Exception as exc:  # noqa: BLE001 - whatever broke, the person gets a clear answer
            return self._fail_turn(session, turn, message, exc)
        snapshot = self.graph.get_state(config)
        values = dict(snapshot.values)
        review = ReviewPayload.from_interrupt(snapshot.interrupts[0].value) if snapshot.interrupts else None
        result = self._turn_result(session, values, review)
        if review is None:
            self._forget_thread(thread_id)  # the finished turn lives in the store now
        return result

    def _stream(self, payload: Any, config: dict, progress: ProgressFn) -> None:
        """Run the graph like ``invoke``, telling ``progress`` as each node starts and finishes."""
        from agent.progress import progress_event

        known: list[dict] = []
        alive = True
        for part in self.graph.stream(payload, config, stream_mode="tasks"):
            event = progress_event(part)
            if event is None or not alive:
                continue
            if "sub_goals" in event:
                known = event["sub_goals"]
            event["sub_goals"] = [dict(r) for r in known]
            try:
                progress(event)
            except Exception:  # noqa: BLE001 - a broken listener (a closed tab) never costs the turn
                alive = False

    def _forget_thread(self, thread_id: str) -> None:
        """Drop a finished turn's checkpoints so the checkpoint database stays small."""
        try:
            self.checkpointer.delete_thread(thread_id)
        except Exception:  # noqa: BLE001 - a leftover checkpoint is harmless
            pass

    def _fail_turn(self, session: SessionRecord, turn: int, message: str, exc: BaseException) -> TurnResult:
        self._abandon_turn(session)
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reply = f"I couldn't finish that edit ({text}). Your photo is unchanged."
        head = self.store.get_session(session.id).head_asset_id
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None, outcome="failed",
                               reply=reply, action=ActionRecord(turn, message, "failed").to_dict(),
                               asset_id=None, head_asset_id=head, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status="failed", reply=reply,
                          head_asset_id=head, rendered_path=self._proxy_path(session.id, head))

    def _proxy_path(self, session_id: str, asset_id: str | None) -> str | None:
        if not asset_id:
            return None
        try:
            return str(self.render_path(session_id, asset_id, long_side=self.config.proxy_long_side))
        except AtelierError:
            return None

    def _turn_result(self, session: SessionRecord, values: dict, review: ReviewPayload | None) -> TurnResult:
        assessment = values.get("assessment") or {}
        status = "awaiting_review" if review is not None else values.get("status", "failed")
        head = self.store.get_session(session.id).head_asset_id
        asset_id = values.get("asset_id")
        if status in ("failed", "not_understood", "rolled_back"):
            # no new version: show the head, and no score (it would describe a version that was not kept)
            shown, asset_id = head, (asset_id if status == "rolled_back" else None)
            assessment = {}
        else:
            shown = asset_id or head
        reply = values.get("reply") or ""
        plan = values.get("plan") or {}
        details = dict(values.get("details") or {})
        if review is not None:
            reply, details["measurements"] = compose_reply(reply, assessment,
                                           tail="Approve, modify, roll back or ask for a new plan.")
        return TurnResult(
            session_id=session.id, turn=int(values.get("turn") or 0), status=status, reply=reply,
            sub_goals=list(values.get("sub_goals") or []) if status != "not_understood" else [],
            score=assessment.get("score"), assessment=assessment.get("assessment", ""),
            dimensions=dict(assessment.get("dimensions") or {}), fields=dict(assessment.get("fields") or {}),
            asset_id=asset_id, head_asset_id=head, rendered_path=self._proxy_path(session.id, shown),
            warnings=list(values.get("warnings") or []), review=review,
            kind=str(plan.get("kind") or "edit") if status == "not_understood" else "edit",
            quick_replies=[str(q) for q in plan.get("quick_replies") or []][:3],
            details=details,
        )

    def _asset(self, session_id: str, asset_id: str | None) -> AssetRecord:
        if asset_id is None:
            asset_id = self._session(session_id).head_asset_id
        try:
            return self.store.get_asset(asset_id, session_id)
        except AtelierError:
            raise InvalidInput(f"no version {asset_id!r} in this session") from None

    def _resolve_target(self, session_id: str, target: Any) -> str:
        """A rollback target — an asset id, or a turn number (int or digits) — as an asset id."""
        if isinstance(target, bool) or target is None or (isinstance(target, str) and not target.strip()):
            raise InvalidInput("rollback: say which version, as a turn number or a version id")
        kept = ("original", "approved", "auto_approved")
        assets = self.store.assets(session_id)
        if isinstance(target, int) or (isinstance(target, str) and target.strip().lstrip("Tt").isdigit()):
            turn = int(target) if isinstance(target, int) else int(target.strip().lstrip("Tt"))
            matches = [a for a in assets if a.turn == turn and a.status in kept]
            if not matches:
                raise InvalidInput(f"rollback: turn {turn} has no version you kept")
            return matches[-1].id
        if isinstance(target, str):
            for a in assets:
                if a.id == target.strip() and a.status != "pending":
                    return a.id
            raise InvalidInput(f"rollback: no version {target!r} in this session")
        raise InvalidInput(f"rollback: expected a turn number or a version id, got {target!r}")

    @staticmethod
    def _check_values(values: Any) -> dict[str, int]:
        if not isinstance(values, dict) or not values:
            raise InvalidInput("modify: give at least one op and its new value, e.g. saturation=-20")
        return _checked_ops(values, "modify")

    def _check_together(self, session: SessionRecord, pending: dict | None, values: dict) -> None:
        """Values that are fine one by one but not together (a crop that keeps nothing): InvalidInput."""
        asset_id = (pending or {}).get("asset_id") or session.head_asset_id
        if not asset_id:
            return
        try:
            EditState.from_dict(self.store.get_asset(asset_id, session.id).state).with_settings(values, clamp=False)
        except EditStateError as exc:
            raise InvalidInput(f"modify: {exc}") from None

    # -- sessions -----------------------------------------------------------------------
    def styles(self) -> list[str]:
        """Named looks a session may start with (from the planner, else the engine profile)."""
        get = getattr(self.planner, "styles", None)
        if callable(get):
            try:
                return list(get())
            except Exception:  # noqa: BLE001 - a planner without looks has none
                return []
        try:
            from profiles import load_profile
            return load_profile("engine").styles()
        except Exception:  # noqa: BLE001 - no engine profile, no looks
            return []

    def ops_table(self) -> list[dict]:
        """The op registry as rows for sliders."""
        # "kind" is the widget: slider, angle, choice (with "choices"), toggle, hue or points.
        return [{"name": o.name, "label": o.label, "stage": o.stage, "group": o.group, "min": o.min,
                 "max": o.max, "default": o.default, "description": o.description,
                 "minus": getattr(o, "minus", ""), "plus": getattr(o, "plus", ""), "kind": o.control,
                 "step": o.step, **({"choices": list(o.choices)} if o.choices else {})} for o in ops.OPS.values()]

    def start_session(self, image: Any, *, style: str | None = None, review_mode: str | None = None,
                      filename: str | None = None, planner_schema: str | None = None,
                      quality_schema: str | None = None) -> SessionInfo:
        """Store ``image`` as the untouched original of a new session (nothing is created if it is bad).

        ``planner_schema`` / ``quality_schema`` name output schemas under ``schemas/`` (default "default");
        an unknown name raises InvalidInput before anything is stored.
        """
        schema_names = {"planner_schema": self._check_schema("planner", planner_schema),
                        "quality_schema": self._check_schema("quality", quality_schema)}
        mode = review_mode or self.config.review_mode
        if mode not in REVIEW_MODES:
            raise InvalidInput(f"review_mode: expected one of {', '.join(REVIEW_MODES)}, got {review_mode!r}")
        if style is not None:
            if not isinstance(style, str) or not style.strip():
                raise InvalidInput(f"style: expected a look name, got {style!r}")
            known = self.styles()
            if known and style not in known:
                raise InvalidInput(f"style: unknown look {style!r}; choose one of {', '.join(known)}")
        data, title = self._original_bytes(image, filename)
        try:
            loaded = load_image(data, max_pixels=self.config.max_upload_pixels, alpha="keep", name=title or None)
        except ImageLoadError as exc:
            raise InvalidInput(str(exc)) from None
        if loaded.pixels.ndim == 3 and loaded.pixels.shape[2] == 4 and (loaded.pixels[:, :, 3] < 255).any():
            loaded.notices.append("Transparency kept: PNG, TIFF and WebP exports keep it.")
        session_id = new_id()
        name = f"original.{_FORMAT_EXT.get(loaded.format, 'img')}"
        try:
            self.storage.write_bytes(f"{session_id}/{name}", data)   # the file before the row that names it
            record, _ = self.store.create_session(
                session_id=session_id, resume_token=secrets.token_urlsafe(32), title=title, style=style,
                review_mode=mode, original_path=name, width=loaded.width, height=loaded.height,
                original_state=EditState().to_dict(),
                settings={"notices": list(loaded.notices), **schema_names})
        except Exception:
            self.store.remove_session_files(session_id)
            raise
        source = SourceImage.from_loaded(loaded)
        self._remember_source(session_id, source)
        self._recovered.add(session_id)
        self._warm(source)
        return self._info(record)

    def _check_schema(self, agent: str, name: str | None) -> str:
        if name is None:
            return "default"
        from schemas import SchemaError, check_schema_name
        try:
            return check_schema_name(agent, name, root=self.schemas_root)
        except SchemaError as exc:
            raise InvalidInput(str(exc)) from None

    # -- output schemas -----------------------------------------------------------------
    def list_schemas(self, agent: str) -> list[str]:
        """Names of the output schemas ``agent`` ("planner", "executor", "quality") can use, "default" first."""
        from schemas import SchemaError, list_schemas
        try:
            return list_schemas(agent, root=self.schemas_root)
        except SchemaError as exc:
            raise InvalidInput(str(exc)) from None

    def generate_schema(self, example: dict | str, *, agent: str, name: str, overwrite: bool = False,
                        visitor: str | None = None) -> dict:
        """Infer an output schema from one example output and save it as ``<agent>/custom/<name>.yaml``.

        ``example``: a JSON object, or its text. The new schema ``extends: default``
        when the example carries the agent's default fields, and always accepts its
        own example. Returns ``{"agent", "name", "path", "extends", "fields", "yaml"}``
        (``fields``: the names the schema adds). Bad JSON, a bad or taken name
        (without ``overwrite``) or an example with nothing new raise InvalidInput, and so do the
        bounds of :mod:`agent.schema_quota` (``visitor``: an anonymous browser session, counted).
        """
        from agent.schema_quota import parse_example
        from schemas import AGENTS, SCHEMAS_DIR, SchemaError, _NAME
        from schemas.generate import generate_schema

        if agent not in AGENTS:
            raise InvalidInput(f"agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not _NAME.match(name) or name == "default":
            raise InvalidInput(f"name: {name!r} is not a schema name: use 1-64 letters, digits, '-' and '_' "
                               "(starting with a letter or digit), and not 'default'")
        example = parse_example(example)
        if not isinstance(example, dict) or not example:
            kind = ("an empty object" if isinstance(example, dict) else "a list" if isinstance(example, list)
                    else "null" if example is None else "true/false" if isinstance(example, bool)
                    else "a number" if isinstance(example, (int, float)) else "text" if isinstance(example, str)
                    else type(example).__name__)
            raise InvalidInput(f"example: expected a JSON object with at least one field, got {kind}")
        with self._schema_lock:
            if not overwrite and name in self.list_schemas(agent):
                raise InvalidInput(f"name: a {agent} schema named {name!r} already exists; "
                                   "choose another name (or overwrite it)")
            self.schema_quota.admit(visitor, (self.schemas_root or SCHEMAS_DIR) / agent / "custom", name)
            try:
                path, doc = generate_schema(example, agent=agent, name=name, root=self.schemas_root,
                                            overwrite=overwrite, source="an example output")
            except SchemaError as exc:
                raise InvalidInput(str(exc)) from None
            self.schema_quota.record(visitor)
        return {"agent": agent, "name": name, "path": str(path), "extends": doc.get("extends"),
                "fields": list(doc.get("fields") or {}), "yaml": path.read_text(encoding="utf-8")}

    def _original_bytes(self, image: Any, filename: str | None) -> tuple[bytes, str]:
        title = (Path(filename).name if filename else "") or ""
        if isinstance(image, np.ndarray):
            if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3 or min(image.shape[:2]) < 1:
                raise InvalidInput(f"image: expected a uint8 RGB array (H, W, 3), got {image.dtype} {image.shape}")
            if image.shape[0] * image.shape[1] > self.config.max_upload_pixels:
                raise InvalidInput(f"image: {image.shape[1]}x{image.shape[0]} is larger than "
                                   f"{self.config.max_upload_pixels / 1e6:.0f} MP")
            from pipeline.imageio import encode_image
            return encode_image(np.ascontiguousarray(image), "png"), title or "Untitled"
        if isinstance(image, (bytes, bytearray, memoryview)):
            return bytes(image), title or "Untitled"
        if isinstance(image, (str, os.PathLike)):
            path = Path(image)
            try:
                return path.read_bytes(), title or path.name
            except FileNotFoundError:
                raise InvalidInput(f"There is no file named {path.name!r}.") from None
            except IsADirectoryError:
                raise InvalidInput(f"{path.name!r} is a folder, not an image file.") from None
            except OSError as exc:
                raise InvalidInput(f"The file {path.name!r} could not be read ({exc.strerror}).") from None
        raise InvalidInput(f"image: expected bytes, a file path or an RGB array, got {type(image).__name__}")

    def _info(self, s: SessionRecord) -> SessionInfo:
        return SessionInfo(id=s.id, resume_token=s.resume_token, created_at=_iso(s.created_at),
                           updated_at=_iso(s.updated_at), title=s.title, style=s.style,
                           review_mode=s.review_mode, turns=self.store.turn_count(s.id),
                           head_asset_id=s.head_asset_id, width=s.width, height=s.height,
                           notices=list(s.settings.get("notices") or []),
                           planner_schema=str(s.settings.get("planner_schema") or "default"),
                           quality_schema=str(s.settings.get("quality_schema") or "default"),
                           shareable=bool(s.settings.get("shareable", False)))

    def session(self, session_id: str) -> SessionInfo:
        return self._info(self._session(session_id))

    def set_shareable(self, session_id: str, shareable: bool) -> SessionInfo:
        """Mark (or unmark) a session as shareable training data (`python -m agent.synthesize --from-sessions`)."""
        if not isinstance(shareable, bool):
            raise InvalidInput(f"shareable: expected true or false, got {shareable!r}")
        with self._leased(session_id):
            session = self._session(session_id)
            settings = dict(session.settings)
            settings["shareable"] = shareable
            self.store.update_session(session_id, settings=settings)
            return self._info(self._session(session_id))

    def turn_log(self, session_id: str) -> list[dict]:
        """Every finished turn: ``turn``, ``message``, ``plan`` (the planner's output or None), ``outcome``,
        ``reply``, ``asset_id`` (the version it produced or None), oldest first."""
        self._session(session_id)
        return [{"turn": t.turn, "message": t.message, "plan": t.plan, "outcome": t.outcome, "reply": t.reply,
                 "asset_id": t.asset_id} for t in self.store.turns(session_id)]

    def resume(self, token: str) -> SessionInfo:
        """The session a browser's resume token names; unknown or malformed tokens raise SessionNotFound."""
        if not isinstance(token, str) or not _TOKEN_RE.match(token):
            raise SessionNotFound("that session link is not valid")
        record = self.store.find_by_token(token)
        if not secrets.compare_digest(record.resume_token, token):
            raise SessionNotFound("that session link is not valid")
        return self.session(record.id)

    def list_sessions(self) -> list[SessionInfo]:
        return [self._info(s) for s in self.store.list_sessions()]

    # -- turns --------------------------------------------------------------------------
    def send_message(self, session_id: str, text: str, *, progress: ProgressFn | None = None) -> TurnResult:
        """One turn: plan, execute, judge; stops at review when the session's mode asks for it.

        ``progress``, when given, is called with small dicts as the turn runs
        (stage, status, message, sub_goals, fraction; see agent/progress.py).
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("say what you would like to change, e.g. \"make it warmer\"")
        text = text.strip()
        if len(text) > MAX_MESSAGE_CHARS:
            raise InvalidInput(f"that message is too long ({len(text)} characters; at most {MAX_MESSAGE_CHARS})")
        generative = self._generative_turn(session_id, text, progress)
        if generative is not None:
            return generative
        route = self.router.route(text)
        if route.kind != "modification":
            # small talk, questions and chat commands: answered before any planning (agent/router.py)
            from agent.dialogue_commands import handle
            return handle(self, session_id, route, text, progress)
        with self._leased(session_id):
            session = self._session(session_id)
            if self._pending(session) is not None:
                # Keep talking: the version under review is kept as if approved, and the new turn starts from it.
                self._keep_pending(session)
                session = self.store.get_session(session_id)
            return self._start_turn(session, text, progress=progress)

    def _generative_turn(self, session_id: str, text: str, progress: ProgressFn | None) -> TurnResult | None:
        """Remove / fill / expand / regenerate / create asked in words: answered by generation (agent/generation.py)
        before the router and the planner; None when the message is not a generative request."""
        from agent.planners.generative import parse_generative

        request = parse_generative(text)
        if request is None:
            return None
        with self._lock(session_id):
            session = self._session(session_id)
            if self._pending(session) is not None:
                self._keep_pending(session)
                session = self.store.get_session(session_id)
            return self.generation.chat_turn(session, request, progress=progress)

    @property
    def router(self):
        """The message router (agent/router.py), built on first use from the engine profile."""
        if getattr(self, "_router", None) is None:
            from agent.router import Router
            vocab = getattr(self.planner, "vocab", None)
            self._router = Router(vocab=vocab) if vocab is not None else Router()
        return self._router

    def _keep_pending(self, session: SessionRecord) -> TurnResult:
        """Approve the turn under review (the person went on talking instead of deciding)."""
        from langgraph.types import Command

        pending = self._pending(session) or {}
        return self._run(session, session.active_thread, Command(resume={"action": "approve"}),
                         int(pending.get("turn") or 0), "/approve")

    def _start_turn(self, session: SessionRecord, message: str, modify_values: dict | None = None,
                    progress: ProgressFn | None = None, modify_layers: list | None = None) -> TurnResult:
        turn = self.store.last_turn(session.id) + 1
        thread_id = f"{session.id}:{turn}:{secrets.token_hex(4)}"
        self.store.update_session(session.id, active_thread=thread_id)
        payload = fresh_turn_state(session_id=session.id, turn=turn, message=message, style=session.style,
                                   review_mode=session.review_mode, head_asset_id=session.head_asset_id,
                                   modify_values=modify_values, modify_layers=modify_layers)
        return self._run(session, thread_id, payload, turn, message, progress)

    def review(self, session_id: str, action: str, *, values: dict | None = None, target: Any = None,
               feedback: str | None = None, progress: ProgressFn | None = None) -> TurnResult:
        """The person's decision: approve, modify (slider values), rollback (turn or version), replan.

        ``progress`` as for :meth:`send_message` (a standalone rollback runs no graph and reports nothing).
        """
        from langgraph.types import Command

        if action not in ("approve", "modify", "rollback", "replan"):
            raise InvalidInput(f"action: expected approve, modify, rollback or replan, got {action!r}")
        with self._leased(session_id):
            session = self._session(session_id)
            pending = self._pending(session)
            if action == "rollback":
                asset_id = self._resolve_target(session_id, target)
                if pending is None:
                    return self._rollback_turn(session, asset_id, target)
                decision = {"action": "rollback", "asset_id": asset_id}
            elif action == "modify":
                checked = self._check_values(values)
                self._check_together(session, pending, checked)
                if pending is None:
                    words = " ".join(f"{k}={v}" for k, v in checked.items())
                    return self._start_turn(session, f"/modify {words}", modify_values=checked, progress=progress)
                decision = {"action": "modify", "values": checked}
            elif pending is None:
                raise InvalidInput(f"{action}: nothing is waiting for your review")
            elif action == "replan":
                if feedback is not None and not isinstance(feedback, str):
                    raise InvalidInput("replan: feedback must be text")
                decision = {"action": "replan", "feedback": (feedback or "").strip()[:MAX_MESSAGE_CHARS]}
            else:
                decision = {"action": "approve"}
            turn = int(pending.get("turn") or 0)
            return self._run(session, session.active_thread, Command(resume=decision), turn, "/" + action,
                             progress)

    def _rollback_turn(self, session: SessionRecord, asset_id: str, target: Any) -> TurnResult:
        """A rollback with nothing under review is a turn of its own: the head moves, the branch stays."""
        turn = self.store.last_turn(session.id) + 1
        asset = self.store.get_asset(asset_id, session.id)
        message = f"/rollback {target}"
        reply = f"Rolled back to turn {asset.turn} ({asset.summary}). Later versions stay in the history."
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None,
                               outcome="rolled_back", reply=reply,
                               action=ActionRecord(turn, message, "rolled_back", f"back to T{asset.turn}").to_dict(),
                               asset_id=None, head_asset_id=asset_id, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status="rolled_back", reply=reply,
                          head_asset_id=asset_id, rendered_path=self._proxy_path(session.id, asset_id),
                          kind="command")

    # -- undo / redo --------------------------------------------------------------------
    def undo(self, session_id: str, *, steps: int = 1, progress: ProgressFn | None = None,
             said: str | None = None) -> TurnResult:
        """Step the head back to its parent version (bit-exact: the parent's state is re-rendered).

        ``steps``: how many versions back along the head path (more than there are
        stops at the original). A turn of its own (status ``rolled_back``, kind
        ``command``). The versions undone from are remembered on the session, so
        :meth:`redo` (even from a new Studio after a restart) brings them back one
        at a time. At the original: ``InvalidInput("nothing to undo")`` and the
        session is unchanged.
        """
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise InvalidInput(f"steps: expected a whole number of versions >= 1, got {steps!r}")
        with self._leased(session_id):
            session = self._session(session_id)
            if session.active_thread:
                raise InvalidInput(_WAITING)
            head = self.store.get_asset(session.head_asset_id, session.id)
            if not head.parent_id:
                raise InvalidInput("nothing to undo: this is the original photo")
            chain = self.store.ancestors(head.id)           # original ... head
            target = chain[max(0, len(chain) - 1 - steps)]
            undone = chain[chain.index(target) + 1:][::-1]  # head first, down to the child of target
            stack = self._redo_stack(session)
            # keep the trail only while it is one chain (a new edit since the last undo starts a new one)
            if stack and self._parent_of(session.id, stack[-1]) != head.id:
                stack = []
            self._set_redo_stack(session, stack + [a.id for a in undone])
            what = (head.summary or f"turn {head.turn}") if len(undone) == 1 else f"the last {len(undone)} changes"
            where = "the original" if target.parent_id is None else f"turn {target.turn}"
            reply = f"Undid {what}; back to {where}. Say \"redo\" to bring it back."
            return self._move_head(session, target, said or "/undo", reply, f"undo to T{target.turn}", progress)

    def redo(self, session_id: str, *, progress: ProgressFn | None = None, said: str | None = None) -> TurnResult:
        """Bring back the version the last :meth:`undo` stepped away from.

        Nothing undone (or a new edit or rollback since): ``InvalidInput("nothing to
        redo")`` and the session is unchanged.
        """
        with self._leased(session_id):
            session = self._session(session_id)
            if session.active_thread:
                raise InvalidInput(_WAITING)
            stack = self._redo_stack(session)
            if not stack or self._parent_of(session.id, stack[-1]) != session.head_asset_id:
                raise InvalidInput("nothing to redo: there is no undone change to bring back")
            child = self.store.get_asset(stack[-1], session.id)
            self._set_redo_stack(session, stack[:-1])
            reply = f"Redid {child.summary or f'turn {child.turn}'}."
            return self._move_head(session, child, said or "/redo", reply, f"redo to T{child.turn}", progress)

    def _redo_stack(self, session: SessionRecord) -> list[str]:
        return [str(a) for a in (session.settings.get(_REDO_KEY) or [])]

    def _set_redo_stack(self, session: SessionRecord, stack: list[str]) -> None:
        settings = dict(self.store.get_session(session.id).settings)
        settings[_REDO_KEY] = list(stack)
        self.store.update_session(session.id, settings=settings)

    def _parent_of(self, session_id: str, asset_id: str) -> str | None:
        try:
            return self.store.get_asset(asset_id, session_id).parent_id
        except AtelierError:
            return None

    def _move_head(self, session: SessionRecord, asset: AssetRecord, message: str, reply: str, summary: str,
                   progress: ProgressFn | None) -> TurnResult:
        """Record a turn that only moves the head to ``asset`` (no new version)."""
        turn = self.store.last_turn(session.id) + 1
        self.store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None,
                               outcome="rolled_back", reply=reply,
                               action=ActionRecord(turn, message, "rolled_back", summary).to_dict(),
                               asset_id=None, head_asset_id=asset.id, statuses={})
        result = TurnResult(session_id=session.id, turn=turn, status="rolled_back", reply=reply,
                            head_asset_id=asset.id, rendered_path=self._proxy_path(session.id, asset.id),
                            kind="command")
        if progress is not None:
            try:
                progress({"stage": "finish", "status": "done", "message": reply, "sub_goals": [],
                          "fraction": 1.0})
            except Exception:  # noqa: BLE001 - a broken listener never costs the turn
                pass
        return result

    def pending_review(self, session_id: str) -> ReviewPayload | None:
        with self._lock(session_id):
            pending = self._pending(self._session(session_id))
        return ReviewPayload.from_interrupt(pending) if pending else None

    # -- history and renders ------------------------------------------------------------
    def history(self, session_id: str) -> list[AssetInfo]:
        """Every version of the session's edit DAG, oldest first."""
        session = self._session(session_id)
        head = session.head_asset_id
        on_path = {a.id for a in self.store.ancestors(head)} if head else set()
        return [AssetInfo(id=a.id, parent_id=a.parent_id, turn=a.turn, summary=a.summary, score=a.score,
                          state=a.state, created_at=_iso(a.created_at), is_head=a.id == head,
                          on_head_path=a.id in on_path, status=a.status)
                for a in self.store.assets(session_id)]

    def head(self, session_id: str) -> AssetInfo:
        session = self._session(session_id)
        return next(a for a in self.history(session_id) if a.id == session.head_asset_id)

    def chat_log(self, session_id: str) -> list[dict]:
        """The conversation so far, to restore a chat after a refresh."""
        session = self._session(session_id)
        log: list[dict] = []
        for t in self.store.turns(session_id):
            log += [{"role": "user", "content": t.message}, {"role": "assistant", "content": t.reply}]
        pending = self._pending(session)
        if pending:
            values = self.graph.get_state(self._thread_config(session.active_thread)).values
            log.append({"role": "user", "content": values.get("message", "")})
            score = pending.get("score")
            judged = f" Score {score:.2f}: {pending.get('assessment', '')}" if score is not None else ""
            log.append({"role": "assistant", "content": (pending.get("reply", "") + judged
                                                         + " Waiting for your review.").strip()})
        return log

    # -- hands on the sliders -------------------------------------------------------------
    def _check_layer_values(self, layers: Any, state: EditState) -> list[dict]:
        """``{layer index: {op: value}}`` (or a list aligned with the layers) -> ``[{"mask", "values"}]``."""
        if layers is None:
            return []
        if isinstance(layers, (list, tuple)):
            layers = {i: v for i, v in enumerate(layers) if v}
        if not isinstance(layers, dict):
            raise InvalidInput("layers: expected {layer index: {op: value}}")
        out = []
        for index, values in layers.items():
            try:
                i = int(index)
            except (TypeError, ValueError):
                raise InvalidInput(f"layers: {index!r} is not a layer number") from None
            if isinstance(index, bool) or not 0 <= i < len(state.layers):
                raise InvalidInput(f"layers: this version has no local layer {index!r} "
                                   f"({len(state.layers)} layer(s), numbered from 0)")
            if not isinstance(values, dict):
                raise InvalidInput(f"layers[{i}]: expected {{op: value}}, got {type(values).__name__}")
            checked = _checked_ops(values, f"layers[{i}]")
            if checked:
                out.append({"index": i, "mask": dict(state.layers[i].mask), "values": checked})
        return out

    def _slider_base(self, session: SessionRecord) -> AssetRecord:
        """What the sliders move: the version under review, else the head."""
        pending = self._pending(session)
        return self.store.get_asset(pending["asset_id"] if pending else session.head_asset_id, session.id)

    @staticmethod
    def _with_values(state: EditState, values: dict[str, int], layers: list[dict]) -> EditState:
        try:
            if values:
                state = state.with_settings(values, clamp=False)
            for layer in layers:
                for name, value in layer["values"].items():
                    state = state.with_value(name, value, mask=layer["mask"], mode="set", clamp=False)
        except EditStateError as exc:  # fine one by one, not together (a crop that keeps nothing)
            raise InvalidInput(f"values: {exc}") from None
        return state

    def preview(self, session_id: str, values: dict | None, *, layers: Any = None) -> Path:
        """A proxy render of the shown version with ``values`` set, recording nothing (live sliders).

        ``values``: ``{op: absolute value}`` for global ops; ``layers``: ``{layer index: {op: value}}``
        for the local layers of the version under review (else the head). Returns a JPEG under the
        session's ``previews/`` folder (the newest few are kept). Bad values raise InvalidInput.
        """
        with self._lock(session_id):
            session = self._session(session_id)
            base = EditState.from_dict(self._slider_base(session).state)
        checked = self._check_values(values) if values else {}
        state = self._with_values(base, checked, self._check_layer_values(layers, base))
        side = self.config.proxy_long_side
        folder = self.store.session_dir(session_id) / "previews"
        path = folder / f"{state.key()}-{_canonical_side(session.width, session.height, side)}.jpg"
        if not path.exists():
            save_image(self.renderer.render(self._source(session_id), state, side), path, quality=90)
            for old in sorted(folder.glob("*.jpg"), key=lambda p: p.stat().st_mtime)[:-PREVIEWS_KEPT]:
                old.unlink(missing_ok=True)
        return path

    def set_values(self, session_id: str, values: dict | None, *, layers: Any = None,
                   progress: ProgressFn | None = None) -> TurnResult:
        """Record the sliders' values as a version: a turn without the planner (the modify path).

        With a turn under review this modifies that turn (it is judged again and stays under review
        per the session's mode); otherwise it is a new turn from the head. ``values`` / ``layers`` as
        for :meth:`preview`. Nothing to change (no values, or the same values) raises InvalidInput.
        """
        from langgraph.types import Command

        with self._leased(session_id):
            session = self._session(session_id)
            base_asset = self._slider_base(session)
            base = EditState.from_dict(base_asset.state)
            checked = self._check_values(values) if values else {}
            layer_values = self._check_layer_values(layers, base)
            if self._with_values(base, checked, layer_values) == base:
                raise InvalidInput("set_values: those are already the values of this version")
            pending = self._pending(session)
            if pending is not None:
                decision = {"action": "modify", "values": checked, "layers": layer_values}
                return self._run(session, session.active_thread, Command(resume=decision),
                                 int(pending.get("turn") or 0), "/modify", progress)
            words = " ".join([f"{k}={v}" for k, v in checked.items()]
                             + [f"{k}@layer{l['index']}={v}" for l in layer_values for k, v in l["values"].items()])
            return self._start_turn(session, f"/modify {words}", modify_values=checked or None,
                                    modify_layers=layer_values or None, progress=progress)

    @staticmethod
    def _check_side(long_side: Any) -> int | None:
        if long_side is None:
            return None
        if isinstance(long_side, bool) or not isinstance(long_side, int) or not 16 <= long_side <= 16384:
            raise InvalidInput(f"long_side: expected a whole number of pixels 16..16384, got {long_side!r}")
        return long_side

    def render(self, session_id: str, asset_id: str | None = None, *, long_side: int | None = 1600) -> np.ndarray:
        """uint8 RGB render of a version (default: the head); ``long_side=None`` is full resolution."""
        side = self._check_side(long_side)
        asset = self._asset(session_id, asset_id)
        pixels = self.renderer.render(self._source(session_id), EditState.from_dict(asset.state), side)
        return np.array(pixels, copy=True)

    def render_path(self, session_id: str, asset_id: str | None = None, *, long_side: int = 1600) -> Path:
        """The same render as a cached PNG under the session's folder."""
        side = self._check_side(long_side)
        asset = self._asset(session_id, asset_id)
        session = self.store.get_session(session_id)
        path = self.store.render_path(session_id, asset.id, _canonical_side(session.width, session.height, side))
        if not path.exists():
            pixels = self.renderer.render(self._source(session_id), EditState.from_dict(asset.state), side)
            save_image(pixels, path)
        return path

    def original_path(self, session_id: str, *, long_side: int = 1600) -> Path:
        """The untouched original as a cached PNG at ``long_side``."""
        side = self._check_side(long_side)
        session = self._session(session_id)
        path = self.store.session_dir(session_id) / "renders" / \
            f"original-{_canonical_side(session.width, session.height, side)}.png"
        if not path.exists():
            source = self._source(session_id)
            save_image(source.proxy(side) if side else source.pixels, path)
        return path

    def export(self, session_id: str, asset_id: str | None = None, *, fmt: str = "jpeg", quality: int | None = None,
               long_side: int | None = None, keep_metadata: bool = True, drop_gps: bool = True) -> Path:
        """Render a version (default: the head) for export: jpeg, png, tiff or webp.

        ``quality`` 1..100 for JPEG / WebP (default ``images.export_quality``); ``long_side``: pixels of the
        long side (None = full resolution; never upscales). The sRGB profile is always embedded. With
        ``keep_metadata`` the original's EXIF goes along (orientation reset: the pixels are upright), its GPS
        position removed unless ``drop_gps=False``. 16-bit originals (16-bit PNG / TIFF, RAW) export at 16
        bits in PNG and TIFF; transparency is kept in PNG, TIFF and WebP (JPEG is flattened onto white).
        Files: ``<session>/exports/<asset>-full.<ext>`` with the defaults, else the options in the name.
        """
        ext = EXPORT_FORMATS.get(str(fmt).lower())
        if ext is None:
            raise InvalidInput(f"fmt: expected jpeg, png, tiff or webp, got {fmt!r}")
        if quality is not None and (isinstance(quality, bool) or not isinstance(quality, int)
                                    or not 1 <= quality <= 100):
            raise InvalidInput(f"quality: expected a whole number 1..100, got {quality!r}")
        side = self._check_side(long_side)
        asset = self._asset(session_id, asset_id)
        q = self.config.export_quality if quality is None else quality
        tag = "full" if side is None else str(side)
        if quality is not None and ext in ("jpg", "webp"):
            tag += f"-q{q}"
        if not keep_metadata:
            tag += "-nometa"
        elif not drop_gps:
            tag += "-gps"
        key = f"{session_id}/exports/{asset.id}-{tag}.{ext}"   # in the shared storage: any replica finds it
        if not self.storage.exists(key):
            from pipeline.export import export_bytes

            data = export_bytes(self.renderer, self._source(session_id), EditState.from_dict(asset.state),
                                fmt=ext, long_side=side, quality=q, keep_metadata=keep_metadata, drop_gps=drop_gps)
            self.storage.write_bytes(key, data)
        return self.storage.local_path(key)

    # -- generation (issue 14; docs/generation.md) ----------------------------------------------
    def get_defaults(self) -> dict:
        """The generation defaults: ``{"image": {width, height, steps, cfg, sampler_name, scheduler, denoise,
        model, negative_prompt}}`` (the model's profile, overridden by set_defaults)."""
        return self.generation.get_defaults()

    def set_defaults(self, image: dict, persist: bool = False) -> dict:
        """Override generation defaults (validated: unknown or out-of-range keys raise InvalidInput naming the
        key); ``persist`` keeps them across restarts. Returns the new defaults."""
        return self.generation.set_defaults(image, persist)

    def generate_image(self, prompt: str, negative_prompt: str | None = None, seed: int | None = None,
                       width: int | None = None, height: int | None = None, steps: int | None = None,
                       cfg: float | None = None, sampler_name: str | None = None, scheduler: str | None = None,
                       denoise: float | None = None, model: str | None = None,
                       return_inline_preview: bool = False) -> dict:
        """A new photo from text, which becomes the original of a new session; the asset answer
        (asset_id, asset_url, image_url, filename, subfolder, folder_type, workflow_id, prompt_id,
        mime_type, width, height, bytes_size, ...). No backend, model missing, out of memory or a server
        that is down raise GenerationFailed (an AtelierError) with the reason; nothing is created."""
        return self.generation.generate_image(prompt, negative_prompt=negative_prompt, seed=seed, width=width,
                                              height=height, steps=steps, cfg=cfg, sampler_name=sampler_name,
                                              scheduler=scheduler, denoise=denoise, model=model,
                                              return_inline_preview=return_inline_preview)

    def regenerate(self, asset_id: str, seed: int | None = None, param_overrides: dict | None = None) -> dict:
        """Make a generated version again (new seed, or ``seed``; ``param_overrides`` such as steps or cfg):
        a generated original gives a new session, a version with generated layers a new branch (the head)."""
        return self.generation.regenerate(asset_id, seed=seed, param_overrides=param_overrides)

    def generation_status(self) -> dict:
        """The generation backend: ``{"backend", "model", "ready", ...}`` (``reason`` when it cannot run)."""
        return self.generation.status()


    # -- selections (brush / lasso, click, box) -------------------------------------------
    def select(self, session_id: str, *, mask: Any = None, point: Any = None, box: Any = None) -> dict:
        """Make the session's selection from a painted ``mask``, a click ``point`` [x, y] or a ``box``
        [x0, y0, x1, y1] (fractions 0..1 of the original's frame); exactly one of them.

        The mask is stored as a content-addressed blob and becomes "the selection" chat refers to
        ("brighten the selection", "remove this"). Returns ``{"selection_id", "coverage" (0..1),
        "preview" (PNG path: the photo with the selection tinted), "mask" (the mask spec),
        "source" ("mask" | "point" | "box")}``. A selection of zero pixels, two inputs at once or a
        point outside the photo raise ``InvalidInput``; the session is unchanged.
        """
        from pipeline import selections

        given = {k: v for k, v in (("mask", mask), ("point", point), ("box", box)) if v is not None}
        if len(given) != 1:
            raise InvalidInput("select: give exactly one of mask (a painted mask), point [x, y] or box "
                               f"[x0, y0, x1, y1]; got {', '.join(given) or 'none'}")
        (kind, value), = given.items()
        with self._leased(session_id):
            session = self._session(session_id)
            source = self._source(session_id)
            try:
                if kind == "mask":
                    pixels = selections.painted_mask(value, (source.height, source.width))
                elif kind == "point":
                    pixels = selections.click_mask(source.pixels, value)
                else:
                    pixels = selections.box_mask(source.pixels, value)
            except selections.SelectionError as exc:
                raise InvalidInput(str(exc)) from None
            share = selections.coverage(pixels)
            if not np.any(pixels >= 128):
                raise InvalidInput("The selection is empty (zero pixels): brush over, click on or drag a box "
                                   "around what you want to select. Nothing was changed.")
            digest = self.blobs.put_array(pixels)
            preview = self.store.session_dir(session_id) / "selections" / f"{digest[:24]}.png"
            if not preview.exists():
                save_image(selections.preview(source.pixels, pixels), preview)
            spec = {"type": "painted", "blob": digest}
            settings = dict(session.settings)
            settings["selection"] = {"mask": spec, "coverage": round(share, 6), "source": kind}
            self.store.update_session(session_id, settings=settings)
        return {"selection_id": digest, "coverage": share, "preview": str(preview), "mask": spec, "source": kind}

    def selection(self, session_id: str) -> dict | None:
        """The session's latest selection (as :meth:`select` returned it, without the preview), or None."""
        found = self._session(session_id).settings.get("selection")
        if not found:
            return None
        return {"selection_id": found["mask"]["blob"], "coverage": found["coverage"], "mask": dict(found["mask"]),
                "source": found.get("source")}

    # -- skills (skills/ and $ATELIER_SKILLS_DIR) -----------------------------------------
    def skills(self) -> list[dict]:
        """Every skill (looks, retouch recipes, compound skills) as small rows, in menu order."""
        from skills import SkillError, load_skills
        try:
            return [s.summary() for s in load_skills().values()]
        except SkillError as exc:
            raise InvalidInput(str(exc)) from None

    def apply_skill(self, session_id: str, name: str, *, progress: ProgressFn | None = None) -> TurnResult:
        """Apply one skill by name as a turn (like saying "use the <name> skill"); gates are checked on the photo."""
        from skills import SkillError, load_skills
        try:
            known = load_skills()
        except SkillError as exc:
            raise InvalidInput(str(exc)) from None
        if not isinstance(name, str) or name.strip().lower().replace(" ", "_") not in known:
            raise InvalidInput(f"skill: unknown skill {name!r}; choose one of {', '.join(known)}")
        skill = known[name.strip().lower().replace(" ", "_")]
        return self.send_message(session_id, f"use the {skill.name} skill", progress=progress)


def apply_recipe(photo: Any, state: EditState, *, fmt: str = "jpeg", quality: int = 92,
                 long_side: int | None = None, max_pixels: int = 50_000_000,
                 renderer: Renderer | None = None) -> bytes:
    """Render ``state`` (a recipe) on a photo without a session: encoded bytes in ``fmt``.

    ``photo``: a path or the file's bytes. The batch path (``agent.batch --state/--style``);
    same pixels as a session's export of the same state. A bad photo raises InvalidInput.
    """
    from pipeline.imageio import encode_image

    ext = EXPORT_FORMATS.get(str(fmt).lower())
    if ext is None:
        raise InvalidInput(f"fmt: expected jpeg, png or tiff, got {fmt!r}")
    try:
        loaded = load_image(photo, max_pixels=max_pixels)
    except ImageLoadError as exc:
        raise InvalidInput(str(exc)) from None
    renderer = renderer or Renderer(max_cache_bytes=0)
    pixels = renderer.render(SourceImage.from_array(loaded.pixels), state, long_side)
    return encode_image(np.ascontiguousarray(pixels), {"jpg": "jpeg", "tif": "tiff"}.get(ext, ext), quality=quality)


__all__ = ["AssetInfo", "AtelierError", "InvalidInput", "ReviewPayload", "SessionInfo", "SessionNotFound",
           "Studio", "TURN_KINDS", "TurnResult", "apply_recipe"]
