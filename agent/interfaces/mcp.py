"""Atelier as an MCP server: thin typed tools over :mod:`agent.service`.

    python -m agent.mcp                                   # stdio (a client launches it)
    python -m agent.mcp --http [--host 127.0.0.1] [--port 8765]   # streamable HTTP at /mcp

Every tool answers one canonical, small result (docs/mcp.md):

    {"ok": true,  "tool": "edit", "data": {...}}
    {"ok": false, "tool": "edit", "errors": ["session_id: no session with that id"]}

The tools hold no logic of their own: each one calls one ``Studio`` method
(the same API the studio UI and the CLI call, on the same database), so a
session opened here shows up in the studio. Bad calls (unknown session,
missing argument, wrong type, unknown tool) answer ``ok: false`` with the
reason; nothing is changed. Failures nobody expected (a full disk, the
database down, a broken skill file, memory running out) answer one line too
(:func:`agent.loop.failures.describe_failure`), and the cause goes to the server's
log (stderr). No image bytes travel unless a tool is asked for an inline
preview (``return_inline_preview``).

Safe to expose (docs/security.md): the file tools (``open_photo``, ``export``)
work only inside the allowed roots of :mod:`agent.interfaces.roots` (the client's MCP
roots plus ``ATELIER_MCP_ROOTS``; default the working directory), never on
Atelier's own files; off loopback the HTTP server requires
``ATELIER_MCP_TOKEN`` as a bearer token (:mod:`agent.interfaces.bearer`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

import anyio
from mcp.server.mcpserver import Context, ListRoots, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ListRootsResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from agent import __version__
from agent.errors import AtelierError, InvalidInput, SessionNotFound
from agent.interfaces import canonical
from agent.interfaces.canonical import failed, ok, unexpected
from agent.interfaces.roots import FileRules, check_settings, client_roots_allowed

log = logging.getLogger("atelier.mcp")

SERVER_NAME = "atelier"
NO_GENERATION = "no generation backend configured (set ATELIER_GEN_BACKEND to diffusers or comfyui)"
INSTRUCTIONS = (
    "Atelier retouches photos non-destructively. open_photo(path) starts a session; edit(session_id, message) "
    "asks for a change in plain words (\"warmer and a bit brighter\", \"use the film skill\"); a result with "
    "status awaiting_review waits for review(session_id, action) — approve, modify (values), rollback "
    "(target) or replan (feedback); history lists versions; export writes the file. Every result is "
    "{ok, tool, data} or {ok: false, tool, errors}. Resources: atelier://sessions/{session_id}/history and "
    "atelier://sessions/{session_id}/assets/{asset_id} (one version; /preview.jpg for its picture)."
)


def as_call_result(result: dict) -> CallToolResult:
    """The canonical dict as an MCP result: JSON text plus the same object as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(result, default=str))],
                          structured_content=result, is_error=not result["ok"])


# the canonical shapes, under the names this module always had
_turn, _session, _version = canonical.turn_data, canonical.session_data, canonical.version_data


# -- the tools (plain methods: the MCP server, the orchestrator's tests and docs share them) --

class AtelierTools:
    """One canonical wrapper per tool over a :class:`agent.service.Studio`."""

    def __init__(self, studio):
        self.studio = studio

    def call(self, tool: str, fn: Callable[[], Any]) -> dict:
        try:
            return ok(tool, fn())
        except SessionNotFound as exc:
            result = failed(tool, f"session_id: {exc}")
        except (AtelierError, TypeError, ValueError) as exc:
            from skills import SkillError

            if isinstance(exc, SkillError):
                return unexpected(tool, exc)
            result = failed(tool, str(exc))
        except Exception as exc:  # noqa: BLE001 - a full disk, a database that is down, MemoryError
            return unexpected(tool, exc)
        log.info("tool %s refused: %s", tool, "; ".join(result["errors"]))
        return result

    def file_rules(self, roots: Any = ()) -> FileRules:
        """Where this call's paths may point: the client's ``roots`` (URIs), ``ATELIER_MCP_ROOTS``, Atelier's own files."""
        private = getattr(self.studio, "private_paths", lambda: [])()
        if not isinstance(roots, (list, tuple)) or not all(isinstance(r, str) for r in roots):
            raise InvalidInput(f"roots: expected a list of file:// URIs, got {roots!r}")
        return FileRules.build(client_uris=roots, private=private)

    # sessions and turns
    def open_photo(self, path: str, style: str | None = None, review_mode: str | None = None,
                   roots: Any = (), planner_schema: str | None = None, quality_schema: str | None = None,
                   executor_schema: str | None = None) -> dict:
        """Read ``path`` under the file rules (roots, regular file, size cap) and open it as a session."""
        def run() -> dict:
            data, name = self.file_rules(roots).read_photo(path)
            return _session(self.studio.start_session(
                data, filename=name, style=style, review_mode=review_mode, planner_schema=planner_schema,
                quality_schema=quality_schema, executor_schema=executor_schema))
        return self.call("open_photo", run)

    def edit(self, session_id: str, message: str) -> dict:
        return self.call("edit", lambda: _turn(self.studio.send_message(session_id, message)))

    def review(self, session_id: str, action: str, values: dict | None = None, target: Any = None,
               feedback: str | None = None) -> dict:
        return self.call("review", lambda: _turn(self.studio.review(
            session_id, action, values=values, target=target, feedback=feedback)))

    def history(self, session_id: str) -> dict:
        return self.call("history", lambda: {"session_id": session_id,
                                             "versions": [_version(a) for a in self.studio.history(session_id)]})

    def export(self, session_id: str, format: str = "jpeg", path: str | None = None,
               long_side: int | None = None, overwrite: bool = False, roots: Any = ()) -> dict:
        return self.call("export", lambda: self._export(session_id, format, path, long_side, overwrite, roots))

    def _export(self, session_id: str, fmt: str, path: str | None, long_side: int | None, overwrite: bool,
                roots: Any) -> dict:
        if not isinstance(overwrite, bool):
            raise InvalidInput(f"overwrite: expected true or false, got {overwrite!r}")
        rules = None
        if path is not None:
            rules = self.file_rules(roots)
            rules.allowed(path)           # a refused destination costs no render
        written = Path(self.studio.export(session_id, fmt=fmt))
        if long_side is not None:
            # a smaller copy: the same state rendered at long_side (renders never upscale)
            from agent.service.renders import EXPORT_FORMATS
            from pipeline.imageio import save_image

            pixels = self.studio.render(session_id, long_side=long_side)
            small = written.with_name(f"{written.stem.rsplit('-', 1)[0]}-{max(pixels.shape[:2])}"
                                      f".{EXPORT_FORMATS[fmt.lower()]}")
            save_image(pixels, small, quality=self.studio.config.export_quality)
            written = small
        data = written.read_bytes()
        if rules is not None:
            target = rules.export_target(path, written.name, overwrite)
            written = rules.write_file(data, target, overwrite)
        from pipeline.imageio import load_image

        image = load_image(data)
        return {"session_id": session_id, "path": str(written.resolve()), "format": fmt,
                "width": image.width, "height": image.height, "bytes": len(data)}

    # skills
    def list_skills(self) -> dict:
        return self.call("list_skills", lambda: {"skills": self.studio.skills()})

    def apply_skill(self, session_id: str, skill: str) -> dict:
        return self.call("apply_skill", lambda: _turn(self.studio.apply_skill(session_id, skill)))

    # generation (issue 14): answered by the Studio when a backend is there; ``scope``: the client session
    def _generation(self, tool: str, method: str, **kwargs) -> dict:
        fn = getattr(self.studio, method, None)
        if fn is None:
            return failed(tool, NO_GENERATION)
        return self.call(tool, lambda: fn(**kwargs))

    def get_defaults(self, scope: str | None = None) -> dict:
        return self._generation("get_defaults", "get_defaults", scope=scope)

    def set_defaults(self, image: dict, persist: bool = False, scope: str | None = None) -> dict:
        return self._generation("set_defaults", "set_defaults", image=image, persist=persist, scope=scope)

    def generate_image(self, **kwargs) -> dict:
        return self._generation("generate_image", "generate_image", **kwargs)

    def regenerate(self, asset_id: str, seed: int | None = None, param_overrides: dict | None = None,
                   return_inline_preview: bool = False) -> dict:
        return self._generation("regenerate", "regenerate", asset_id=asset_id, seed=seed,
                                param_overrides=param_overrides, return_inline_preview=return_inline_preview)

    # output schemas
    def list_schemas(self, agent: str | None = None) -> dict:
        agents = [agent] if agent else ["planner", "executor", "quality"]
        return self.call("list_schemas", lambda: {"schemas": {a: self.studio.list_schemas(a) for a in agents}})

    def generate_schema(self, example: Any, agent: str, name: str, overwrite: bool = False,
                        scope: str | None = None) -> dict:
        """Infer and save a schema; the security work's quotas count each client session as one visitor."""
        return self.call("generate_schema", lambda: self.studio.generate_schema(
            example, agent=agent, name=name, overwrite=overwrite, visitor=f"mcp:{scope}" if scope else None))

    def use_schema(self, session_id: str, name: str, agent: str | None = None) -> dict:
        return self.call("use_schema", lambda: canonical.session_data(
            self.studio.use_schema(session_id, name, agent=agent)))

    # resources: a session's history and its versions
    def history_resource(self, session_id: str) -> dict:
        def run() -> dict:
            return {"session_id": session_id, "versions": [_version(a) for a in self.studio.history(session_id)],
                    "turns": [{k: t.get(k) for k in ("turn", "message", "outcome", "reply", "asset_id")}
                              for t in self.studio.turn_log(session_id)]}
        return self.call("history", run)

    def version_resource(self, session_id: str, asset_id: str) -> dict:
        def run() -> dict:
            match = [a for a in self.studio.history(session_id) if a.id == asset_id]
            if not match:
                raise InvalidInput(f"asset_id: no version {asset_id!r} in session {session_id!r}")
            return {**_version(match[0]), "state": match[0].state}
        return self.call("version", run)

    def version_preview(self, session_id: str, asset_id: str) -> bytes:
        from pipeline.imageio import encode_image

        return encode_image(self.studio.render(session_id, asset_id, long_side=1024), "jpeg", quality=88)


# -- the MCP server ---------------------------------------------------------------------------

def _validation_errors(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        if err.get("type") == "missing":
            out.append(f"{where}: required")
        else:
            given = err.get("input")
            out.append(f"{where}: {err.get('msg', 'invalid').lower()} (got {given!r})"[:300])
    return out


def unknown_arguments(schema: dict, arguments: dict) -> list[str]:
    """One line per argument the tool does not take (a misspelt name must not be silently ignored)."""
    known = list((schema.get("properties") or {}).keys())
    return [f"{name}: unknown argument; {', '.join(known) or 'this tool takes none'}"
            + (" are the arguments" if len(known) > 1 else (" is the argument" if known else ""))
            for name in arguments if name not in known]


class AtelierMCP(MCPServer):
    """MCPServer whose every answer — argument errors and unknown tools included — is canonical."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        tool = self._tool_manager.get_tool(name)
        if tool is not None and isinstance(arguments, dict):
            unknown = unknown_arguments(tool.parameters, arguments)
            if unknown:
                return as_call_result(failed(name, *unknown))
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return as_call_result(failed(name, *_validation_errors(cause)))
            if isinstance(cause, AtelierError):
                return as_call_result(failed(name, str(cause)))
            if tool is None:
                tools = ", ".join(t.name for t in self._tool_manager.list_tools())
                return as_call_result(failed(name, f"unknown tool {name!r}; tools: {tools}"))
            return as_call_result(unexpected(name, cause or exc))
        except Exception as exc:  # noqa: BLE001 - e.g. the client's roots could not be read
            return as_call_result(unexpected(name, exc))
        return result


def _client_roots(ctx: Context) -> ListRootsResult | ListRoots:
    """The roots the client declares (asked once per call), or none when it has no roots capability."""
    caps = ctx.client_capabilities
    if caps is not None and caps.roots is not None and client_roots_allowed():
        return ListRoots()
    return ListRootsResult(roots=[])


#: A tool parameter filled with the client's roots (not part of the tool's input schema).
ClientRoots = Annotated[ListRootsResult, Resolve(_client_roots)]

def client_scope(ctx: Context | None) -> str | None:
    """A stable key for the client session behind ``ctx``, or None when the request belongs to none.

    stdio: the process (one client launches one server). HTTP with sessions (the initialize handshake):
    the ``Mcp-Session-Id`` the server assigned. Stateless HTTP (protocol 2026-07-28: every request stands
    alone) has no session to scope to: None, and the caller's answer says the change is process-wide.
    """
    if ctx is None:
        return None
    headers = getattr(ctx, "headers", None)
    if headers is None:
        return "stdio"
    sid = headers.get("mcp-session-id")
    return f"http:{sid}" if sid else None


def _uris(roots: ListRootsResult) -> list[str]:
    return [str(r.uri) for r in roots.roots]


# -- what a model reads: every parameter described, with its range and an example -------------------

def _arg(description: str, *examples: Any, **constraints: Any) -> Any:
    return Field(description=description, examples=list(examples) or None, **constraints)


SessionId = Annotated[str, _arg("The session_id open_photo returned (or generate_image's session_id).",
                                "3f2a9c1e4b7d4e0f9a1b2c3d4e5f6a7b", min_length=1, max_length=64)]
AssetId = Annotated[str, _arg("A version id (asset_id / head_asset_id from a result, or history's versions).",
                              "a1b2c3d4e5f6", min_length=1, max_length=64)]
_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_ADDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_SETS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
#: Outputs of each tool (the canonical envelope around the tool's data).
_GENERATED = {"type": "object", "description": "The asset answer (schemas/tools/generation.json: asset)."}
OUTPUT_SCHEMAS: dict[str, dict] = {
    "open_photo": canonical.SESSION_SCHEMA, "edit": canonical.TURN_SCHEMA, "review": canonical.TURN_SCHEMA,
    "apply_skill": canonical.TURN_SCHEMA, "history": canonical.HISTORY_SCHEMA, "export": canonical.EXPORT_SCHEMA,
    "list_skills": {"type": "object", "properties": {"skills": {"type": "array", "items": {"type": "object"}}}},
    "get_defaults": {"type": "object", "properties": {"image": {"type": "object"}}},
    "set_defaults": {"type": "object", "properties": {
        "image": {"type": "object", "description": "The defaults now in force for this client session."},
        "updated": {"type": "object", "description": "Each key given, with its new value."},
        "previous": {"type": "object", "description": "Each key given, with its value before."},
        "applies_to": {"enum": ["session", "process", "saved"], "description": (
            "session: this MCP client session only; process: every client until the server restarts (a "
            "stateless HTTP request has no session); saved: every client, kept across restarts.")}}},
    "generate_image": _GENERATED, "regenerate": _GENERATED,
    "list_schemas": {"type": "object", "properties": {"schemas": {"type": "object"}}},
    "generate_schema": {"type": "object", "properties": {
        "agent": {"type": "string"}, "name": {"type": "string"}, "path": {"type": "string"},
        "extends": {"type": ["string", "null"]}, "fields": {"type": "array", "items": {"type": "string"}},
        "yaml": {"type": "string"}}},
    "use_schema": canonical.SESSION_SCHEMA,
}


def build_server(studio_factory: Callable[[], Any] | None = None) -> AtelierMCP:
    """The MCP server; the Studio is opened on first use (same database as the studio UI)."""
    holder: dict[str, Any] = {}

    def tools() -> AtelierTools:
        if "tools" not in holder:
            if studio_factory is not None:
                studio = studio_factory()
            else:
                from agent.service import Studio
                studio = Studio()
            holder["tools"] = AtelierTools(studio)
        return holder["tools"]

    async def run(method: str, **kwargs) -> CallToolResult:
        def call() -> dict:
            try:
                box = tools()
            except Exception as exc:  # noqa: BLE001 - the database or storage cannot be opened: say so, retry next call
                return unexpected(method, exc)
            return getattr(box, method)(**kwargs)
        return as_call_result(await anyio.to_thread.run_sync(call))

    server = AtelierMCP(name=SERVER_NAME, title="Atelier", version=__version__, instructions=INSTRUCTIONS)

    @server.tool(annotations=_ADDS)
    async def open_photo(
            path: Annotated[str, _arg("A photo file (JPEG, PNG, TIFF, WebP or RAW) inside the allowed roots: your "
                                      "MCP roots, ATELIER_MCP_ROOTS, else the server's working folder.",
                                      "/home/me/Pictures/coffee.jpg", max_length=4096)],
            roots: ClientRoots,
            style: Annotated[str | None, _arg("A starting look by name (list_skills shows the looks); null: none.",
                                              "film", "moody")] = None,
            review_mode: Annotated[Literal["always", "below_auto_approve", "never"] | None, _arg(
                "When a turn stops for your review: always; below_auto_approve (default: only when the judge "
                "is unsure); never.", "below_auto_approve")] = None,
            planner_schema: Annotated[str | None, _arg("The planner's output schema (list_schemas); null: default.",
                                                       "cinematographer")] = None,
            quality_schema: Annotated[str | None, _arg("The judge's output schema (list_schemas); null: default.",
                                                       "composition")] = None,
            executor_schema: Annotated[str | None, _arg("The executor's record schema (list_schemas); null: "
                                                        "default.", "default")] = None,
    ) -> CallToolResult:
        """Open a photo file as a new editing session; returns its session_id (pass it to every other tool)."""
        return await run("open_photo", path=path, style=style, review_mode=review_mode, roots=_uris(roots),
                         planner_schema=planner_schema, quality_schema=quality_schema,
                         executor_schema=executor_schema)

    @server.tool(annotations=_ADDS)
    async def edit(session_id: SessionId,
                   message: Annotated[str, _arg(
                       "What to change, in plain words (1..2000 characters): a look, a fix, a place, a follow-up "
                       "or undo.", "warmer and a little brighter", "darken the sky", "use the clean portrait skill",
                       "undo that", min_length=1, max_length=2000)]) -> CallToolResult:
        """Ask for a change in plain words. Returns the turn: status (auto_approved, awaiting_review,
        not_understood, failed...), the agent's reply, the steps with their values (-100..100), the score
        (0..1) and the new version's asset_id. awaiting_review waits for review()."""
        return await run("edit", session_id=session_id, message=message)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                                             open_world_hint=False))
    async def review(session_id: SessionId,
                     action: Annotated[Literal["approve", "modify", "rollback", "replan"], _arg(
                         "approve: keep the version under review; modify: set slider values; rollback: move "
                         "back to an earlier version (works any time; later versions stay in history); replan: "
                         "ask for a different plan.", "approve")],
                     values: Annotated[dict[str, int] | None, _arg(
                         "For modify: {op: value}, each a whole number -100..100 (0 = unchanged).",
                         {"saturation": -10, "exposure": 5})] = None,
                     target: Annotated[str | int | None, _arg(
                         "For rollback: a turn number (0 = the original) or a version's asset_id.", 1, 0)] = None,
                     feedback: Annotated[str | None, _arg("For replan: one line on what to do differently.",
                                                          "keep the skin tones natural",
                                                          max_length=500)] = None) -> CallToolResult:
        """Decide on the version under review (approve / modify / rollback / replan); rollback and modify
        also work with nothing under review. Returns the turn."""
        return await run("review", session_id=session_id, action=action, values=values, target=target,
                         feedback=feedback)

    @server.tool(annotations=_READ)
    async def history(session_id: SessionId) -> CallToolResult:
        """Every version of the session, oldest first: turn, summary, score, status, which one is the head, its
        changed settings. Also readable as the resource atelier://sessions/{session_id}/history."""
        return await run("history", session_id=session_id)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                             open_world_hint=False))
    async def export(session_id: SessionId, roots: ClientRoots,
                     format: Annotated[Literal["jpeg", "png", "tiff"], _arg(
                         "File format: jpeg (default), png or tiff (16-bit when the original was).", "png")] = "jpeg",
                     path: Annotated[str | None, _arg(
                         "A file or folder inside the allowed roots; null: the session's exports folder.",
                         "/home/me/Pictures/coffee-edited.jpg", max_length=4096)] = None,
                     long_side: Annotated[int | None, _arg("Pixels on the long side, 16..16384; null: full "
                                                           "resolution (never upscaled).", 2048, ge=16,
                                                           le=16384)] = None,
                     overwrite: Annotated[bool, _arg("Replace an existing file at path (default false: refused).",
                                                     False)] = False) -> CallToolResult:
        """Write the current version as a file and return its path, size and pixel dimensions. An existing file
        is never replaced unless overwrite is true."""
        return await run("export", session_id=session_id, format=format, path=path, long_side=long_side,
                         overwrite=overwrite, roots=_uris(roots))

    @server.tool(annotations=_READ)
    async def list_skills() -> CallToolResult:
        """The looks and retouch recipes (skills) Atelier knows: name, kind, description, gates."""
        return await run("list_skills")

    @server.tool(annotations=_ADDS)
    async def apply_skill(session_id: SessionId,
                          skill: Annotated[str, _arg("A skill's name from list_skills.", "film", "clean_portrait",
                                                     min_length=1, max_length=48)]) -> CallToolResult:
        """Apply a skill as one turn; a skill whose gate fails (needs a face, needs a sky, colour photo only)
        is refused with the reason and nothing changes."""
        return await run("apply_skill", session_id=session_id, skill=skill)

    @server.tool(annotations=_READ)
    async def get_defaults(ctx: Context) -> CallToolResult:
        """The image-generation defaults in force for this client session: width, height, steps, cfg,
        sampler_name, scheduler, denoise, model, negative_prompt."""
        return await run("get_defaults", scope=client_scope(ctx))

    @server.tool(annotations=_SETS)
    async def set_defaults(
            ctx: Context,
            image: Annotated[dict[str, Any], _arg(
                "Some of: width, height (64..4096, multiples of 8), steps (1..150), cfg (0..50), sampler_name "
                "(euler, euler_ancestral, heun, dpmpp_2m, dpmpp_sde, ddim, pndm, lms, uni_pc), scheduler (normal, "
                "karras, exponential, sgm_uniform, simple, ddim_uniform, beta), denoise (0.05..1), model, "
                "negative_prompt.", {"steps": 20, "cfg": 5.5})],
            persist: Annotated[bool, _arg("false (default): for this client session only (a stateless HTTP "
                                          "request has none: then for this server until it restarts); true: for "
                                          "every client, saved for later starts.", False)] = False) -> CallToolResult:
        """Change image-generation defaults. Answers the defaults now in force, what was updated (and its
        previous value) and whether it applies to this session or was saved for everyone."""
        return await run("set_defaults", image=image, persist=persist, scope=client_scope(ctx))

    @server.tool(annotations=_ADDS)
    async def generate_image(
            ctx: Context,
            prompt: Annotated[str, _arg("What to make, in words (1..2000 characters).",
                                        "a red fox in fresh snow, morning light", min_length=1, max_length=2000)],
            negative_prompt: Annotated[str | None, _arg("What to keep out of the image.", "blurry, text",
                                                        max_length=2000)] = None,
            seed: Annotated[int | None, _arg("0..2^53-1; the same seed and settings give the same pixels; "
                                             "null: random.", 42, ge=0, le=9007199254740991)] = None,
            width: Annotated[int | None, _arg("Pixels, 64..4096, a multiple of 8; null: the default.", 768,
                                              ge=64, le=4096, multiple_of=8)] = None,
            height: Annotated[int | None, _arg("Pixels, 64..4096, a multiple of 8; null: the default.", 512,
                                               ge=64, le=4096, multiple_of=8)] = None,
            steps: Annotated[int | None, _arg("Denoising steps 1..150; null: the default.", 25, ge=1,
                                              le=150)] = None,
            cfg: Annotated[float | None, _arg("Guidance scale 0..50; null: the default.", 6.5, ge=0, le=50)] = None,
            sampler_name: Annotated[Literal["euler", "euler_ancestral", "heun", "dpmpp_2m", "dpmpp_sde", "ddim",
                                            "pndm", "lms", "uni_pc"] | None, _arg("Sampler; null: the default.",
                                                                                  "euler")] = None,
            scheduler: Annotated[Literal["normal", "karras", "exponential", "sgm_uniform", "simple", "ddim_uniform",
                                         "beta"] | None, _arg("Noise schedule; null: the default.",
                                                              "karras")] = None,
            denoise: Annotated[float | None, _arg("0.05..1, share of the input replaced; null: the default.", 1.0,
                                                  ge=0.05, le=1)] = None,
            model: Annotated[str | None, _arg("A model id in the local cache or a ComfyUI checkpoint; null: the "
                                              "default.", "stabilityai/stable-diffusion-2-inpainting",
                                              max_length=300)] = None,
            return_inline_preview: Annotated[bool, _arg("true: also return a small JPEG thumbnail as "
                                                        "inline_preview_base64 (+ inline_preview_mime_type).",
                                                        False)] = False) -> CallToolResult:
        """Generate a new photo from a prompt with the configured backend (it opens as a new session); unset
        parameters use this client session's defaults. Returns the asset: asset_id, session_id, file URL,
        size, seed."""
        return await run("generate_image", prompt=prompt, negative_prompt=negative_prompt, seed=seed,
                         width=width, height=height, steps=steps, cfg=cfg, sampler_name=sampler_name,
                         scheduler=scheduler, denoise=denoise, model=model,
                         return_inline_preview=return_inline_preview, scope=client_scope(ctx))

    @server.tool(annotations=_ADDS)
    async def regenerate(
            asset_id: AssetId,
            seed: Annotated[int | None, _arg("A new seed 0..2^53-1; -1 keeps the seed it was made with (change "
                                             "only param_overrides); null: a new random seed.", -1, 7,
                                             ge=-1, le=9007199254740991)] = None,
            param_overrides: Annotated[dict[str, Any] | None, _arg(
                "Some of: prompt, negative_prompt, width, height, steps, cfg, sampler_name, scheduler, denoise "
                "(ranges as in generate_image).", {"steps": 30})] = None,
            return_inline_preview: Annotated[bool, _arg("true: also return a small JPEG thumbnail as "
                                                        "inline_preview_base64.", False)] = False) -> CallToolResult:
        """Generate a generated version again: a generated photo gives a new session, an edit with generated
        pixels a new branch (the head)."""
        return await run("regenerate", asset_id=asset_id, seed=seed, param_overrides=param_overrides,
                         return_inline_preview=return_inline_preview)

    @server.tool(annotations=_READ)
    async def list_schemas(agent: Annotated[Literal["planner", "executor", "quality"] | None, _arg(
            "Whose schemas; null: all three.", "planner")] = None) -> CallToolResult:
        """Output schemas a session can use, per agent ("default" first), including generated ones."""
        return await run("list_schemas", agent=agent)

    @server.tool(annotations=_ADDS)
    async def generate_schema(
            ctx: Context,
            example: Annotated[dict[str, Any], _arg(
                "One example output of that agent, as a JSON object (at most 20,000 characters, 8 levels).",
                {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}],
                 "mood_keywords": ["warm", "nostalgic"]})],
            agent: Annotated[Literal["planner", "executor", "quality"], _arg("Whose output it is.", "planner")],
            name: Annotated[str, _arg("1-64 letters, digits, '-' and '_'; not 'default'.", "cinematographer",
                                      min_length=1, max_length=64)],
            overwrite: Annotated[bool, _arg("Replace a generated schema with that name.", False)] = False,
    ) -> CallToolResult:
        """Infer an output schema from one example and save it (schemas/<agent>/custom/<name>.yaml); a session
        uses it via open_photo's *_schema or use_schema. Bounded per client session and in all."""
        return await run("generate_schema", example=example, agent=agent, name=name, overwrite=overwrite,
                         scope=client_scope(ctx))

    @server.tool(annotations=_SETS)
    async def use_schema(session_id: SessionId,
                         name: Annotated[str, _arg("A schema name from list_schemas.", "cinematographer",
                                                   min_length=1, max_length=64)],
                         agent: Annotated[Literal["planner", "executor", "quality"] | None, _arg(
                             "Whose schema; null: every agent that has one by that name.", None)] = None
                         ) -> CallToolResult:
        """Use an output schema from the next turn on (its custom fields come back in the turn's fields)."""
        return await run("use_schema", session_id=session_id, name=name, agent=agent)

    # resources: the session's history and its versions
    async def resource(method: str, **kwargs) -> str:
        result = await anyio.to_thread.run_sync(lambda: getattr(tools(), method)(**kwargs))
        return json.dumps(result, default=str)

    @server.resource("atelier://sessions/{session_id}/history", name="session history",
                     mime_type="application/json")
    async def history_resource(session_id: str) -> str:
        """Every version of a session (as the history tool) and every turn: message, outcome, reply."""
        return await resource("history_resource", session_id=session_id)

    @server.resource("atelier://sessions/{session_id}/assets/{asset_id}", name="version",
                     mime_type="application/json")
    async def version_resource(session_id: str, asset_id: str) -> str:
        """One version of a session: summary, score, status and its whole EditState (settings and layers)."""
        return await resource("version_resource", session_id=session_id, asset_id=asset_id)

    @server.resource("atelier://sessions/{session_id}/assets/{asset_id}/preview.jpg", name="version preview",
                     mime_type="image/jpeg")
    async def version_preview(session_id: str, asset_id: str) -> bytes:
        """A version rendered as a JPEG, long side 1024 px."""
        return await anyio.to_thread.run_sync(lambda: tools().version_preview(session_id, asset_id))

    _declare_outputs(server)
    return server


def _declare_outputs(server: AtelierMCP) -> None:
    """Every tool: no unknown arguments in its input schema, and its canonical result as the output schema."""
    for tool in server._tool_manager.list_tools():
        tool.parameters["additionalProperties"] = False
        tool.fn_metadata.output_schema = canonical.canonical_schema(OUTPUT_SCHEMAS.get(tool.name))
        tool.__dict__.pop("output_schema", None)   # a cached_property: read afresh


def _log_to_stderr() -> None:
    """Causes of failures go to stderr (stdout is the stdio transport), credentials redacted."""
    from agent.redact import install_log_redaction

    install_log_redaction()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("mcp", "httpx", "httpx2", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def serve_http(server: AtelierMCP, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at ``/mcp``; behind :class:`agent.interfaces.bearer.BearerGate` when a token is given."""
    import uvicorn

    from agent.interfaces.bearer import BearerGate
    from agent.redact import register_secret

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host)
    if token:
        register_secret(token)
        app = BearerGate(app, token)
    log.info("MCP tools at http://%s:%d/mcp (%s)", host, port,
             "bearer token required" if token else "loopback only, no token")
    uvicorn.run(app, host=host, port=port, log_level="warning")


def main(argv: list[str] | None = None) -> int:
    from agent.interfaces.bearer import TOKEN_ENV, token_for

    parser = argparse.ArgumentParser(prog="python -m agent.mcp", description="Atelier's MCP server.")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP at /mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1",
                        help=f"address to listen on; off loopback {TOKEN_ENV} is required (a bearer token)")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    _log_to_stderr()
    try:
        check_settings()   # a malformed ATELIER_MCP_CLIENT_ROOTS / ATELIER_MAX_UPLOAD stops the start, named
        token = token_for(args.host) if args.http else None
    except ValueError as exc:
        print(f"python -m agent.mcp: {exc}", file=sys.stderr)
        return 2
    if args.http:
        serve_http(build_server(), args.host, args.port, token)
    else:
        build_server().run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
