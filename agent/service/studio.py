"""The Studio: the one session API that the UI, the CLI, MCP tools, eval, batch and synthesis call.

A :class:`Studio` owns one store (database + sessions folder), one LangGraph
checkpointer, one compiled graph and one renderer, and hands the work to parts
with narrow interfaces (each in its own module beside this one):

- :class:`~agent.service.sessions.Sessions`: new sessions, resume tokens, session info;
- :class:`~agent.service.leases.SessionLeases`: one turn at a time per session, across replicas;
- :class:`~agent.service.sources.PhotoSources`: decoded originals, warmed in the background;
- :class:`~agent.service.turns.TurnRunner`: turns on the graph (start, resume, fail);
- :class:`~agent.service.history.History`: versions, undo, redo, rollback;
- :class:`~agent.service.sliders.Sliders`: live previews and slider versions;
- :class:`~agent.service.renders.Renders`: renders, cached files and exports;
- :class:`~agent.service.selections.Selections`: painted, clicked and boxed selections;
- :class:`~agent.service.output_schemas.OutputSchemas`: output schemas and the schema generator;
- :class:`~agent.service.generation.GenerationDesk`: generative edits and the image tools;
- :mod:`agent.service.chat`: what a routed message that is not an edit does.

Everything that matters lives in the database and on disk, so a second Studio on
the same database and folder sees every session — including a turn that waits
for review (its LangGraph checkpoint). See docs/service-api.md for the contract.

Threading: methods may be called from many threads; calls on one session are
serialised by a per-session lock, calls on different sessions run in parallel.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from agent.config import AgentConfig, load_config
from agent.conversation.dialogue import dialogue_state
from agent.conversation.router import Route, Router
from agent.conversation.words import says_yes, tokenize
from agent.conversation.vocabulary import read_pieces
from agent.errors import AtelierError, InvalidInput, SessionNotFound
from agent.judging import default_judge
from agent.loop.graph import build_graph
from agent.planning import default_planner
import agent.service.labels as labels
from agent.service.chat import handle as answer_without_planning, repeated_command, taken_out_last, withdraws_last
from agent.service.endpoint import ModelEndpoint
from agent.service.generation import GenerationDesk
from agent.service.history import History
from agent.service.leases import SessionLeases
from agent.service.output_schemas import OutputSchemas
from agent.service.records import (TURN_KINDS, AssetInfo, ProgressFn, ReviewPayload, SessionInfo,
                                   TurnResult)
from agent.service.renders import EXPORT_FORMATS, Renders
from agent.service.schema_quota import MAX_EXAMPLE_CHARS, SchemaQuota
from agent.service.selections import Selections
from agent.service.sessions import Sessions
from agent.service.sliders import Sliders, check_together, check_values
from agent.service.sources import PhotoSources
from agent.service.turns import TurnRunner
from agent.skills import SkillPlanner
from agent.store import Store, open_checkpointer, resolve_database_url, sqlite_file
from pipeline import admission
from pipeline.gpu import upgrade_renderer
from pipeline.imageio import ImageLoadError, encode_image, load_image
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState
from pipeline.storage import StoredBlobs, open_storage
from profiles import load_profile
from skills import SkillError, load_skills

SESSIONS_DIR_ENV = "ATELIER_SESSIONS_DIR"
#: Where output schemas (and the ones generate_schema writes) live, when not the shipped schemas/.
SCHEMAS_DIR_ENV = "ATELIER_SCHEMAS_DIR"
MAX_MESSAGE_CHARS = 2000


class Studio:
    """Sessions, turns and renders over one database and sessions folder (see docs/service-api.md)."""

    def __init__(self, database_url: str | None = None, sessions_dir: str | os.PathLike | None = None,
                 planner=None, judge=None, config: AgentConfig | None = None,
                 schemas_root: str | os.PathLike | None = None, generation_backend=None,
                 storage_url: str | None = None):
        self.config = config or load_config()
        # decodes and full-size renders in flight share what the memory cap leaves beside the caches;
        # past it they queue (pipeline.admission) rather than push the process over its cap
        caches = self.config.render_cache_bytes + self.config.source_cache_bytes
        admission.configure(max(256 * 2**20, self.config.memory_cap_mb * 2**20 - caches))
        # Output schemas (and the custom ones generate_schema writes): <root>/<agent>/[custom/]<name>.yaml
        schemas_root = schemas_root or os.environ.get(SCHEMAS_DIR_ENV) or None
        self.schemas_root = Path(schemas_root).resolve() if schemas_root else None
        self.schemas = OutputSchemas(self.schemas_root, SchemaQuota.from_config(self.config))
        folder = sessions_dir or os.environ.get(SESSIONS_DIR_ENV) or self.config.sessions_path()
        self.sessions_dir = Path(folder).resolve()
        url = resolve_database_url(database_url, self.sessions_dir, self.config.database_file)
        # Originals, blobs and exports: the sessions folder, or ATELIER_STORAGE_URL shared by replicas.
        try:
            self.storage = open_storage(storage_url, self.sessions_dir)
        except ValueError as exc:
            raise AtelierError(str(exc)) from None
        #: Content-addressed pixel assets (painted selections, healed patches, generated layers), shared by
        #: every session, kept in the session storage (sessions folder, or ATELIER_STORAGE_URL) above.
        self.blobs = StoredBlobs(self.storage)
        self.database_url = url
        self.store = Store(url, self.sessions_dir, storage=self.storage)
        self.checkpointer, self._close_checkpointer = open_checkpointer(
            url, self.sessions_dir, self.config.checkpoints_file)
        # the torch path when CUDA is present (ATELIER_RENDER_DEVICE=cpu keeps OpenCV): same pixels within 1 level
        self.renderer = upgrade_renderer(Renderer(max_cache_bytes=self.config.render_cache_bytes, blobs=self.blobs),
                                         self.config.render_cache_bytes)
        self.planner = planner if planner is not None else default_planner(config=self.config)
        self.judge = judge if judge is not None else default_judge(config=self.config)
        self.endpoint = ModelEndpoint(self.config, self.planner, self.judge)
        self.sources = PhotoSources(self.store, self.renderer, self.config)
        # requests for skills ("use the film skill") are planned from skills/
        self.graph = build_graph(SkillPlanner(self.planner, self.config), self.judge, self.store, self.renderer,
                                 self.config, self.checkpointer, sources=self.sources.get,
                                 schemas_root=self.schemas_root)
        self.turns = TurnRunner(self.graph, self.checkpointer, self.store,
                                shown_path=lambda sid, asset_id: self.renders.proxy_path(sid, asset_id),
                                deadline_s=self.endpoint.turn_deadline_s)
        self.leases = SessionLeases(self.store, self.config, self.turns)
        self.renders = Renders(self.store, self.sources, self.renderer, self.storage, self.config,
                               session=self.leases.session)
        self.versions = History(self.store, self.leases, self.turns, self.renders)
        self.sliders = Sliders(self.store, self.leases, self.turns, self.sources, self.renderer, self.config)
        self.selections = Selections(self.store, self.leases, self.sources, self.blobs, self.renderer, self.turns)
        self.sessions = Sessions(self.store, self.storage, self.leases, self.sources, self.schemas, self.config,
                                 styles=self.styles)
        self._router: Router | None = None
        #: Generation: backend from ATELIER_GEN_BACKEND / ATELIER_GEN_MODEL unless one is injected.
        self.generation = GenerationDesk(self, generation_backend)

    # -- lifecycle ----------------------------------------------------------------------
    def close(self) -> None:
        """Release the database connections (the data stays)."""
        self.sources.close()
        self.generation.close()
        self._close_checkpointer()
        self.store.close()

    def __enter__(self) -> "Studio":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def turn_deadline_s(self) -> float:
        """One wall-clock deadline for a turn's model calls (``vlm.turn_deadline_s``)."""
        return self.endpoint.turn_deadline_s

    def model_status(self) -> dict:
        """Which planner and judge answer now, for the studio's badge (see ModelEndpoint.status)."""
        return self.endpoint.status()

    def private_paths(self) -> list[Path]:
        """Every file and folder of this Studio that a web server must never serve.

        The sessions folder (originals, renders, previews, the browser secret, the
        local copies of shared files), the SQLite database and checkpoint files with
        their -wal/-shm/-journal companions wherever they are, and a shared storage
        folder (``file://`` storage URL).
        """
        paths = [self.sessions_dir, self.sessions_dir / ".browser-secret"]
        files = [self.sessions_dir / self.config.checkpoints_file]
        database = sqlite_file(self.database_url)
        if database is not None:
            files.append(database)
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
            return load_profile("engine").styles()
        except Exception:  # noqa: BLE001 - no engine profile, no looks
            return []

    def ops_table(self) -> list[dict]:
        """The op registry as rows for sliders (name, label, stage, range, words, widget kind, unit, choices)."""
        return labels.op_rows()

    def start_session(self, image: Any, *, style: str | None = None, review_mode: str | None = None,
                      filename: str | None = None, planner_schema: str | None = None,
                      quality_schema: str | None = None, executor_schema: str | None = None) -> SessionInfo:
        """Store ``image`` as the untouched original of a new session (nothing is created if it is bad).

        ``planner_schema`` / ``quality_schema`` name output schemas under ``schemas/`` (default "default");
        an unknown name raises InvalidInput before anything is stored.
        """
        return self.sessions.start(image, style=style, review_mode=review_mode, filename=filename,
                                   planner_schema=planner_schema, quality_schema=quality_schema,
                                   executor_schema=executor_schema)

    def session(self, session_id: str) -> SessionInfo:
        return self.sessions.get(session_id)

    def set_shareable(self, session_id: str, shareable: bool) -> SessionInfo:
        """Mark (or unmark) a session as shareable training data (`python -m agent.synthesize --from-sessions`)."""
        return self.sessions.set_shareable(session_id, shareable)

    def turn_log(self, session_id: str) -> list[dict]:
        """Every finished turn: ``turn``, ``message``, ``plan`` (the planner's output or None), ``outcome``,
        ``reply``, ``asset_id`` (the version it produced or None), oldest first."""
        return self.versions.turn_log(session_id)

    def resume(self, token: str) -> SessionInfo:
        """The session a browser's resume token names; unknown or malformed tokens raise SessionNotFound."""
        return self.sessions.resume(token)

    def list_sessions(self) -> list[SessionInfo]:
        return self.sessions.all()

    # -- output schemas -----------------------------------------------------------------
    def list_schemas(self, agent: str) -> list[str]:
        """Names of the output schemas ``agent`` ("planner", "executor", "quality") can use, "default" first."""
        return self.schemas.names(agent)

    def use_schema(self, session_id: str, name: str, *, agent: str | None = None) -> SessionInfo:
        """Use the output schema ``name`` from the next turn on, for ``agent`` ("planner", "executor",
        "quality") or every agent that has one by that name ("use my cinematographer schema")."""
        return self.sessions.use_schema(session_id, name, agent)

    def generate_schema(self, example: dict | str, *, agent: str, name: str, overwrite: bool = False,
                        visitor: str | None = None) -> dict:
        """Infer an output schema from one example output and save it as ``<agent>/custom/<name>.yaml``.

        ``example``: a JSON object, or its text. The new schema ``extends: default``
        when the example carries the agent's default fields, and always accepts its
        own example. Returns ``{"agent", "name", "path", "extends", "fields", "yaml"}``
        (``fields``: the names the schema adds). Bad JSON, a bad or taken name
        (without ``overwrite``) or an example with nothing new raise InvalidInput, and so do the
        bounds of :mod:`agent.service.schema_quota` (``visitor``: an anonymous browser session, counted).
        """
        return self.schemas.generate(example, agent=agent, name=name, overwrite=overwrite, visitor=visitor)

    # -- turns --------------------------------------------------------------------------
    def send_message(self, session_id: str, text: str, *, progress: ProgressFn | None = None) -> TurnResult:
        """One turn: plan, execute, judge; stops at review when the session's mode asks for it.

        ``progress``, when given, is called with small dicts as the turn runs
        (stage, status, message, sub_goals, fraction; see agent/loop/progress.py).
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("say what you would like to change, e.g. \"make it warmer\"")
        text = text.strip()
        if len(text) > MAX_MESSAGE_CHARS:
            raise InvalidInput(f"that message is too long ({len(text)} characters; at most {MAX_MESSAGE_CHARS})")
        said = tokenize(text)
        # ("yeah try a little then": a yes with how much)
        how = [p for p in read_pieces(self.router.vocab, said) if p.category == "magnitude"]
        at = {i for p in how for i in range(p.pos, p.pos + len(p.text.split()))}
        yes = says_yes([t for i, t in enumerate(said) if i not in at])
        offer = self.versions.open_offer(session_id) if yes else []
        asked = self.versions.open_question(session_id) if yes and not offer and not how else None
        if offer:
            # "would it look better warmer?" -> "I would try: warmer" -> "ok yeah do that": what was offered
            text = " ".join([" and ".join(o.lower() for o in offer), *(p.text for p in how)])
        elif asked:
            # "I can't find the spoon ... or should I make it sharper overall?" -> "yes": sharper overall
            text = asked
        route = self.router.route(text)
        if route.kind == "chat" and route.name == "looks_off" and self.router.looks_off_takes_back \
                and dialogue_state(self.store, session_id).edits:
            # "hmm the letters look kinda jaggy now" right after sharpening: that change went too far, so half of
            # it is taken back (the reply says how much; "undo" takes the rest)
            text, route = self.router.looks_off_takes_back, Route("modification")
        then = self.router.going_back_then(text) if route.kind in ("command", "modification") else None
        if then is not None and dialogue_state(self.store, session_id).edits:
            # "forget that, just sharpen it a touch": the going back, then the new request on the version it left
            back, request = then
            if withdraws_last(self, session_id, back):
                # "can you brighten the cup" -> "I can't find the cup" -> "forget that, just sharpen it": the request
                # that changed nothing is withdrawn; the new one is done on the photo as it is
                return self.send_message(session_id, request, progress=progress)
            undone = answer_without_planning(self, session_id, self.router.route(back), back, progress)
            if undone is not None and undone.status == "rolled_back":
                result = self.send_message(session_id, request, progress=progress)
                result.reply = f"{undone.reply.split(' Say ')[0].rstrip('.')}. Then: {result.reply}"
                return result
            if undone is not None:
                return undone
        # (the version under review is looked up only when the words decide something: not on every message)
        decision = self.router.review_decision(text, route)
        if decision is not None and self.pending_review(session_id) is None:
            decision = None
        if decision == "approve":
            # "yep, apply that", "looks good, go with it": the version under review is approved
            return self.review(session_id, "approve", progress=progress, said=text)
        if decision == "reject":
            # "nah leave the bright spot, dont apply that one": the version under review is turned down
            route = Route("command", "undo")
        if route.kind == "modification" and (also := self.router.also_named(text)) and taken_out_last(self, session_id):
            # "reset the contrast" ... "and the warmth too": that one taken out as well
            route = Route("command", "reset", words=also)
        if route.kind in ("modification", "chat") and self.router.says_again(text):
            # "ctrl+z" ... "and again": the undo (or redo) once more, not a repeat of the edit it went back to
            route = repeated_command(self, session_id) or route
        if route.kind == "generation":
            generated = self._generative_turn(session_id, route.request, progress)
            if generated is not None:
                return generated
            route = self.router.route(text, generative=False)   # a heal the retouch stage does
        if route.kind != "modification":
            # small talk, questions and chat commands: answered before any planning (agent/conversation/router.py)
            answered = answer_without_planning(self, session_id, route, text, progress)
            if answered is not None:
                return answered
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            if self.turns.pending(session) is not None:
                # Keep talking: the version under review is kept as if approved, and the new turn starts from it.
                self.turns.keep_pending(session)
                session = self.store.get_session(session_id)
            return self.turns.start(session, text, progress=progress)

    def _generative_turn(self, session_id: str, request, progress: ProgressFn | None) -> TurnResult | None:
        """Remove / fill / expand / regenerate / create asked in words: answered by generation
        (agent/service/generation.py), or by the planner when generation hands it back (a heal)."""
        with self.leases.lock(session_id):
            session = self.leases.session(session_id)
            if self.turns.pending(session) is not None:
                self.turns.keep_pending(session)
                session = self.store.get_session(session_id)
            return self.generation.chat_turn(session, request, progress=progress)

    @property
    def router(self) -> Router:
        """The message router (agent/conversation/router.py), built on first use from the engine profile."""
        if self._router is None:
            vocab = getattr(self.planner, "vocab", None)
            self._router = Router(vocab=vocab) if vocab is not None else Router()
        return self._router

    def review(self, session_id: str, action: str, *, values: dict | None = None, target: Any = None,
               feedback: str | None = None, progress: ProgressFn | None = None,
               said: str | None = None) -> TurnResult:
        """The person's decision: approve, modify (slider values), rollback (turn or version), replan.

        ``progress`` as for :meth:`send_message` (a standalone rollback runs no graph and reports nothing).
        ``said``: the words the decision was typed in ("looks good, go with it"); they stay in the
        conversation before the reply, as a replan's feedback does (a button says nothing).
        """
        if action not in ("approve", "modify", "rollback", "replan"):
            raise InvalidInput(f"action: expected approve, modify, rollback or replan, got {action!r}")
        if action == "approve" and self.pending_review(session_id) is None \
                and (asked := self.versions.open_question(session_id)):
            # approving right after "... or should I make it sharper overall?": yes, sharper overall
            return self.send_message(session_id, asked, progress=progress)
        with self.leases.leased(session_id):
            session = self.leases.session(session_id)
            pending = self.turns.pending(session)
            if action == "rollback":
                asset_id = self.versions.resolve_target(session_id, target)
                if pending is None:
                    return self.versions.rollback(session, asset_id, target)
                decision = {"action": "rollback", "asset_id": asset_id}
            elif action == "modify":
                checked = check_values(values)
                check_together(self.store, session, pending, checked)
                if pending is None:
                    words = " ".join(f"{k}={v}" for k, v in checked.items())
                    return self.turns.start(session, f"/modify {words}", modify_values=checked, progress=progress)
                decision = {"action": "modify", "values": checked}
            elif pending is None:
                raise InvalidInput(f"{action}: nothing is waiting for your review")
            elif action == "replan":
                if feedback is not None and not isinstance(feedback, str):
                    raise InvalidInput("replan: feedback must be text")
                decision = {"action": "replan", "feedback": (feedback or "").strip()[:MAX_MESSAGE_CHARS]}
                # the person's feedback stays in the conversation, before the new plan's reply
                self.versions.note(session_id, [{"role": "user", "content": "New plan: " + (
                    decision["feedback"] or "try something else")}], before_reply=True)
            else:
                decision = {"action": "approve"}
            if said and said.strip() and pending is not None:
                self.versions.note(session_id, [{"role": "user", "content": said.strip()[:MAX_MESSAGE_CHARS]}],
                                   before_reply=True)
            return self.turns.resume(session, decision, "/" + action, progress)

    def pending_review(self, session_id: str) -> ReviewPayload | None:
        with self.leases.lock(session_id):
            pending = self.turns.pending(self.leases.session(session_id))
        return ReviewPayload.from_interrupt(pending) if pending else None

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
        return self.versions.undo(session_id, steps=steps, progress=progress, said=said)

    def redo(self, session_id: str, *, progress: ProgressFn | None = None, said: str | None = None) -> TurnResult:
        """Bring back the version the last :meth:`undo` stepped away from.

        Nothing undone (or a new edit or rollback since): ``InvalidInput("nothing to
        redo")`` and the session is unchanged.
        """
        return self.versions.redo(session_id, progress=progress, said=said)

    # -- history and renders ------------------------------------------------------------
    def history(self, session_id: str) -> list[AssetInfo]:
        """Every version of the session's edit DAG, oldest first."""
        return self.versions.versions(session_id)

    def head(self, session_id: str) -> AssetInfo:
        return self.versions.head(session_id)

    def chat_log(self, session_id: str) -> list[dict]:
        """The conversation so far, to restore a chat after a refresh."""
        return self.versions.chat_log(session_id)

    def render(self, session_id: str, asset_id: str | None = None, *, long_side: int | None = 1600) -> np.ndarray:
        """uint8 RGB render of a version (default: the head); ``long_side=None`` is full resolution."""
        return self.renders.render(session_id, asset_id, long_side=long_side)

    def render_path(self, session_id: str, asset_id: str | None = None, *, long_side: int = 1600) -> Path:
        """The same render as a cached PNG under the session's folder."""
        return self.renders.render_path(session_id, asset_id, long_side=long_side)

    def original_path(self, session_id: str, *, long_side: int = 1600) -> Path:
        """The untouched original as a cached PNG at ``long_side``."""
        return self.renders.original_path(session_id, long_side=long_side)

    def view_path(self, session_id: str, asset_id: str | None = None, *, long_side: int = 1600,
                  before: bool = False) -> Path:
        """A version as the studio shows it (default: the head): a JPEG, transparency on a checkerboard.
        ``before``: the untouched original framed like that version (same crop, rotation and flip)."""
        return self.renders.view_path(session_id, asset_id, long_side=long_side, before=before)

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
        return self.renders.export(session_id, asset_id, fmt=fmt, quality=quality, long_side=long_side,
                                   keep_metadata=keep_metadata, drop_gps=drop_gps)

    # -- hands on the sliders -------------------------------------------------------------
    def preview(self, session_id: str, values: dict | None, *, layers: Any = None) -> Path:
        """A proxy render of the shown version with ``values`` set, recording nothing (live sliders).

        ``values``: ``{op: absolute value}`` for global ops; ``layers``: ``{layer index: {op: value}}``
        for the local layers of the version under review (else the head). Returns a JPEG under the
        session's ``previews/`` folder (the newest few are kept). Bad values raise InvalidInput.
        """
        return self.sliders.preview(session_id, values, layers=layers)

    def set_values(self, session_id: str, values: dict | None, *, layers: Any = None,
                   progress: ProgressFn | None = None) -> TurnResult:
        """Record the sliders' values as a version: a turn without the planner (the modify path).

        With a turn under review this modifies that turn (it is judged again and stays under review
        per the session's mode); otherwise it is a new turn from the head. ``values`` / ``layers`` as
        for :meth:`preview`. Nothing to change (no values, or the same values) raises InvalidInput.
        """
        return self.sliders.keep(session_id, values, layers=layers, progress=progress)

    # -- generation (docs/generation.md) --------------------------------------------------
    def get_defaults(self, scope: str | None = None) -> dict:
        """The generation defaults: ``{"image": {width, height, steps, cfg, sampler_name, scheduler, denoise,
        model, negative_prompt}}`` (the model's profile, overridden by set_defaults; ``scope``: a caller's own)."""
        return self.generation.get_defaults(scope)

    def set_defaults(self, image: dict, persist: bool = False, scope: str | None = None) -> dict:
        """Override generation defaults (validated: unknown or out-of-range keys raise InvalidInput naming the
        key) for ``scope`` (one caller, e.g. an MCP client session) or, without, the whole process; ``persist``
        makes them everyone's and keeps them across restarts. Returns the defaults and what was ``updated``."""
        return self.generation.set_defaults(image, persist, scope=scope)

    def generate_image(self, prompt: str, negative_prompt: str | None = None, seed: int | None = None,
                       width: int | None = None, height: int | None = None, steps: int | None = None,
                       cfg: float | None = None, sampler_name: str | None = None, scheduler: str | None = None,
                       denoise: float | None = None, model: str | None = None,
                       return_inline_preview: bool = False, scope: str | None = None) -> dict:
        """A new photo from text, which becomes the original of a new session; the asset answer
        (asset_id, asset_url, image_url, filename, subfolder, folder_type, workflow_id, prompt_id,
        mime_type, width, height, bytes_size, ...). No backend, model missing, out of memory or a server
        that is down raise GenerationFailed (an AtelierError) with the reason; nothing is created."""
        return self.generation.generate_image(prompt, negative_prompt=negative_prompt, seed=seed, width=width,
                                              height=height, steps=steps, cfg=cfg, sampler_name=sampler_name,
                                              scheduler=scheduler, denoise=denoise, model=model,
                                              return_inline_preview=return_inline_preview, scope=scope)

    def regenerate(self, asset_id: str, seed: int | None = None, param_overrides: dict | None = None,
                   return_inline_preview: bool = False) -> dict:
        """Make a generated version again (new seed, or ``seed``, -1 = the same seed; ``param_overrides`` such as
        steps or cfg): a generated original gives a new session, a version with generated layers a new branch."""
        return self.generation.regenerate(asset_id, seed=seed, param_overrides=param_overrides,
                                          return_inline_preview=return_inline_preview)

    def generation_status(self) -> dict:
        """The generation backend: ``{"backend", "model", "ready", ...}`` (``reason`` when it cannot run)."""
        return self.generation.status()

    # -- selections (brush / lasso, click, box) -------------------------------------------
    def select(self, session_id: str, *, mask: Any = None, point: Any = None, box: Any = None) -> dict:
        """Make the session's selection from a painted ``mask``, a click ``point`` [x, y] or a ``box``
        [x0, y0, x1, y1]; exactly one of them, on the picture as the studio shows it: the version under
        review, else the head, in its own frame (cropped, rotated, straightened, mirrored). Points and
        boxes are fractions 0..1 of that picture; a mask has its aspect (any size).

        The mask is mapped to the original's frame, stored as a content-addressed blob and becomes
        "the selection" chat refers to ("brighten the selection", "remove this"). Returns
        ``{"selection_id", "coverage" (0..1 of the picture shown), "preview" (PNG path: the version shown
        with the selection tinted), "mask" (the mask spec), "source" ("mask" | "point" | "box")}``. A
        selection of zero pixels, two inputs at once or a point outside the photo raise ``InvalidInput``;
        the session is unchanged.
        """
        return self.selections.select(session_id, mask=mask, point=point, box=box)

    def selection(self, session_id: str) -> dict | None:
        """The session's latest selection (as :meth:`select` returned it, without the preview), or None."""
        return self.selections.current(session_id)

    def selection_preview(self, session_id: str) -> Path | None:
        """The session's selection tinted on the version the studio shows, in that version's frame (a later
        crop or rotation moves it with the picture); None without a selection."""
        return self.selections.shown(session_id)

    # -- skills (skills/ and $ATELIER_SKILLS_DIR) -----------------------------------------
    def skills(self) -> list[dict]:
        """Every skill (looks, retouch recipes, compound skills) as small rows, in menu order."""
        try:
            return [s.summary() for s in load_skills().values()]
        except SkillError as exc:
            raise InvalidInput(str(exc)) from None

    def apply_skill(self, session_id: str, name: str, *, progress: ProgressFn | None = None) -> TurnResult:
        """Apply one skill by name as a turn (like saying "use the <name> skill"); gates are checked on the photo."""
        try:
            known = load_skills()
        except SkillError as exc:
            raise InvalidInput(str(exc)) from None
        if not isinstance(name, str) or name.strip().lower().replace(" ", "_") not in known:
            raise InvalidInput(f"skill: unknown skill {name!r}; choose one of {', '.join(known)}")
        skill = known[name.strip().lower().replace(" ", "_")]
        # the words the chat shows: the skill's own label ("use the Black and white skill")
        label = str(skill.summary().get("label") or skill.name.replace("_", " "))
        return self.send_message(session_id, f"use the {label} skill", progress=progress)


def apply_recipe(photo: Any, state: EditState, *, fmt: str = "jpeg", quality: int = 92,
                 long_side: int | None = None, max_pixels: int = 50_000_000,
                 renderer: Renderer | None = None) -> bytes:
    """Render ``state`` (a recipe) on a photo without a session: encoded bytes in ``fmt``.

    ``photo``: a path or the file's bytes. The batch path (``python -m agent.batch --state/--style``);
    same pixels as a session's export of the same state. A bad photo raises InvalidInput.
    """
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


__all__ = ["AssetInfo", "AtelierError", "InvalidInput", "MAX_EXAMPLE_CHARS", "ReviewPayload", "SessionInfo",
           "SessionNotFound", "Studio", "TURN_KINDS", "TurnResult", "apply_recipe"]
