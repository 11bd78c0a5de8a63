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

import os
import re
import secrets
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from agent.config import REVIEW_MODES, AgentConfig, load_config
from agent.errors import AtelierError, InvalidInput, SessionNotFound
from agent.graph import build_graph
from agent.state import ActionRecord, fresh_turn_state
from agent.wording import compose_reply
from agent.store import (AssetRecord, SessionRecord, Store, new_id, open_checkpointer,
                         resolve_database_url)
from pipeline import ops
from pipeline.imageio import ImageLoadError, load_image, save_image, write_bytes_atomic
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState

SESSIONS_DIR_ENV = "ATELIER_SESSIONS_DIR"
EXPORT_FORMATS = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "tiff": "tif", "tif": "tif"}
_FORMAT_EXT = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp", "TIFF": "tif", "GIF": "gif", "MPO": "jpg"}
MAX_MESSAGE_CHARS = 2000
#: Longest example output (JSON text) the schema generator accepts.
MAX_EXAMPLE_CHARS = 20_000
#: A progress callback: receives small dicts while a turn runs (see agent/progress.py).
ProgressFn = Callable[[dict], None]
_TOKEN_RE = re.compile(r"^[A-Za-z0-9_-]{20,128}$")
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
    # The measurements behind ``reply`` (op values, L*, b*, SSIM, the score), for a details fold;
    # ``reply`` itself says what changed in plain words.
    details: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["review"] = self.review.to_dict() if self.review else None
        return d


def _iso(dt) -> str:
    return dt.isoformat() if dt is not None else ""


def _canonical_side(width: int, height: int, long_side: int | None) -> int:
    """The long side a render at ``long_side`` really has (renders never upscale)."""
    full = max(width, height)
    return full if long_side is None else min(int(long_side), full)


# -- the Studio -----------------------------------------------------------------------------

class Studio:
    """Sessions, turns and renders over one database and sessions folder (see docs/service-api.md)."""

    def __init__(self, database_url: str | None = None, sessions_dir: str | os.PathLike | None = None,
                 planner=None, judge=None, config: AgentConfig | None = None,
                 schemas_root: str | os.PathLike | None = None):
        self.config = config or load_config()
        # Output schemas (and the custom ones generate_schema writes): <root>/<agent>/[custom/]<name>.yaml
        self.schemas_root = Path(schemas_root).resolve() if schemas_root else None
        self._schema_lock = threading.Lock()
        folder = sessions_dir or os.environ.get(SESSIONS_DIR_ENV) or self.config.sessions_path()
        self.sessions_dir = Path(folder).resolve()
        url = resolve_database_url(database_url, self.sessions_dir, self.config.database_file)
        self.store = Store(url, self.sessions_dir)
        self.checkpointer, self._close_checkpointer = open_checkpointer(
            url, self.sessions_dir, self.config.checkpoints_file)
        self.renderer = Renderer(max_cache_bytes=self.config.render_cache_bytes)
        if planner is None:
            from agent.planners import default_planner
            planner = default_planner(config=self.config)
        if judge is None:
            from agent.judges import default_judge
            judge = default_judge(config=self.config)
        self.planner, self.judge = planner, judge
        self._sources: OrderedDict[str, SourceImage] = OrderedDict()
        self._sources_lock = threading.Lock()
        self._locks: dict[str, threading.RLock] = {}
        self._locks_guard = threading.Lock()
        self._recovered: set[str] = set()
        self.graph = build_graph(planner, judge, self.store, self.renderer, self.config,
                                 self.checkpointer, sources=self._source, schemas_root=self.schemas_root)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the database connections (the data stays)."""
        self._close_checkpointer()
        self.store.close()

    def __enter__(self) -> "Studio":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

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
        loaded = load_image(self.store.original_file(session), max_pixels=self.config.max_upload_pixels)
        source = SourceImage.from_array(loaded.pixels)
        with self._sources_lock:
            self._sources[session_id] = source
            while len(self._sources) > self.config.source_cache_sessions:
                self._sources.popitem(last=False)
        return source

    def _thread_config(self, thread_id: str) -> dict:
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": 200}

    def _session(self, session_id: str) -> SessionRecord:
        """The session row, after settling a turn a killed process left in flight (once per Studio)."""
        session = self.store.get_session(session_id)
        if session_id not in self._recovered:
            with self._lock(session_id):
                if session_id not in self._recovered:
                    self._recover(session)
                    self._recovered.add(session_id)
            session = self.store.get_session(session_id)
        return session

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
        config = self._thread_config(thread_id)
        try:
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
        details = values.get("details") or ""
        if review is not None:
            reply, details = compose_reply(reply, assessment,
                                           tail="Approve, modify, roll back or ask for a new plan.")
        return TurnResult(
            session_id=session.id, turn=int(values.get("turn") or 0), status=status, reply=reply,
            sub_goals=list(values.get("sub_goals") or []) if status != "not_understood" else [],
            score=assessment.get("score"), assessment=assessment.get("assessment", ""),
            dimensions=dict(assessment.get("dimensions") or {}), fields=dict(assessment.get("fields") or {}),
            asset_id=asset_id, head_asset_id=head, rendered_path=self._proxy_path(session.id, shown),
            warnings=list(values.get("warnings") or []), review=review, details=details,
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
        out: dict[str, int] = {}
        for name, value in values.items():
            try:
                op = ops.get_op(name)
                out[op.name] = op.check(value)
            except ops.OpError as exc:
                raise InvalidInput(f"modify: {exc}") from None
        return out

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
        return [{"name": o.name, "label": o.label, "stage": o.stage, "group": o.group, "min": o.min,
                 "max": o.max, "default": o.default, "description": o.description} for o in ops.OPS.values()]

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
            loaded = load_image(data, max_pixels=self.config.max_upload_pixels)
        except ImageLoadError as exc:
            raise InvalidInput(str(exc)) from None
        session_id = new_id()
        name = f"original.{_FORMAT_EXT.get(loaded.format, 'img')}"
        folder = self.store.session_dir(session_id)
        try:
            write_bytes_atomic(folder / name, data)   # the file before the row that names it
            record, _ = self.store.create_session(
                session_id=session_id, resume_token=secrets.token_urlsafe(32), title=title, style=style,
                review_mode=mode, original_path=name, width=loaded.width, height=loaded.height,
                original_state=EditState().to_dict(),
                settings={"notices": list(loaded.notices), **schema_names})
        except Exception:
            self.store.remove_session_files(session_id)
            raise
        with self._sources_lock:
            self._sources[session_id] = SourceImage.from_array(loaded.pixels)
            while len(self._sources) > self.config.source_cache_sessions:
                self._sources.popitem(last=False)
        self._recovered.add(session_id)
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

    def generate_schema(self, example: dict | str, *, agent: str, name: str, overwrite: bool = False) -> dict:
        """Infer an output schema from one example output and save it as ``<agent>/custom/<name>.yaml``.

        ``example``: a JSON object, or its text. The new schema ``extends: default``
        when the example carries the agent's default fields, and always accepts its
        own example. Returns ``{"agent", "name", "path", "extends", "fields", "yaml"}``
        (``fields``: the names the schema adds). Bad JSON, a bad or taken name
        (without ``overwrite``) or an example with nothing new raise InvalidInput.
        """
        import json

        from schemas import AGENTS, SchemaError, _NAME
        from schemas.generate import generate_schema

        if agent not in AGENTS:
            raise InvalidInput(f"agent: expected one of {', '.join(AGENTS)}, got {agent!r}")
        name = name.strip() if isinstance(name, str) else name
        if not isinstance(name, str) or not _NAME.match(name) or name == "default":
            raise InvalidInput(f"name: {name!r} is not a schema name: use 1-64 letters, digits, '-' and '_' "
                               "(starting with a letter or digit), and not 'default'")
        if isinstance(example, str):
            if len(example) > MAX_EXAMPLE_CHARS:
                raise InvalidInput(f"example: too long ({len(example)} characters; at most {MAX_EXAMPLE_CHARS})")
            if not example.strip():
                raise InvalidInput("example: paste one example output as a JSON object")
            try:
                example = json.loads(example)
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"example: not valid JSON ({exc.msg} at line {exc.lineno}, "
                                   f"column {exc.colno})") from None
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
            try:
                path, doc = generate_schema(example, agent=agent, name=name, root=self.schemas_root,
                                            overwrite=overwrite, source="an example output")
            except SchemaError as exc:
                raise InvalidInput(str(exc)) from None
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
                           quality_schema=str(s.settings.get("quality_schema") or "default"))

    def session(self, session_id: str) -> SessionInfo:
        return self._info(self._session(session_id))

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
        with self._lock(session_id):
            session = self._session(session_id)
            if session.active_thread:
                raise InvalidInput(_WAITING)
            return self._start_turn(session, text, progress=progress)

    def _start_turn(self, session: SessionRecord, message: str, modify_values: dict | None = None,
                    progress: ProgressFn | None = None) -> TurnResult:
        turn = self.store.last_turn(session.id) + 1
        thread_id = f"{session.id}:{turn}:{secrets.token_hex(4)}"
        self.store.update_session(session.id, active_thread=thread_id)
        payload = fresh_turn_state(session_id=session.id, turn=turn, message=message, style=session.style,
                                   review_mode=session.review_mode, head_asset_id=session.head_asset_id,
                                   modify_values=modify_values)
        return self._run(session, thread_id, payload, turn, message, progress)

    def review(self, session_id: str, action: str, *, values: dict | None = None, target: Any = None,
               feedback: str | None = None, progress: ProgressFn | None = None) -> TurnResult:
        """The person's decision: approve, modify (slider values), rollback (turn or version), replan.

        ``progress`` as for :meth:`send_message` (a standalone rollback runs no graph and reports nothing).
        """
        from langgraph.types import Command

        if action not in ("approve", "modify", "rollback", "replan"):
            raise InvalidInput(f"action: expected approve, modify, rollback or replan, got {action!r}")
        with self._lock(session_id):
            session = self._session(session_id)
            pending = self._pending(session)
            if action == "rollback":
                asset_id = self._resolve_target(session_id, target)
                if pending is None:
                    return self._rollback_turn(session, asset_id, target)
                decision = {"action": "rollback", "asset_id": asset_id}
            elif action == "modify":
                checked = self._check_values(values)
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
                          head_asset_id=asset_id, rendered_path=self._proxy_path(session.id, asset_id))

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

    def export(self, session_id: str, asset_id: str | None = None, *, fmt: str = "jpeg") -> Path:
        """Full-resolution render of a version as jpeg, png or tiff (same state, same pixels)."""
        ext = EXPORT_FORMATS.get(str(fmt).lower())
        if ext is None:
            raise InvalidInput(f"fmt: expected jpeg, png or tiff, got {fmt!r}")
        asset = self._asset(session_id, asset_id)
        path = self.store.session_dir(session_id) / "exports" / f"{asset.id}-full.{ext}"
        if not path.exists():
            pixels = self.renderer.render(self._source(session_id), EditState.from_dict(asset.state), None)
            save_image(pixels, path, quality=self.config.export_quality)
        return path


__all__ = ["AssetInfo", "AtelierError", "InvalidInput", "ReviewPayload", "SessionInfo", "SessionNotFound",
           "Studio", "TurnResult"]
