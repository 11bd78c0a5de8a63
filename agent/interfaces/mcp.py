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
from mcp_types import CallToolResult, ListRootsResult, TextContent
from pydantic import ValidationError

from agent.errors import AtelierError, InvalidInput, SessionNotFound
from agent.loop.failures import describe_failure, one_line
from agent.interfaces.roots import FileRules, check_settings, client_roots_allowed

log = logging.getLogger("atelier.mcp")

SERVER_NAME = "atelier"
NO_GENERATION = "no generation backend configured (set ATELIER_GEN_BACKEND to diffusers or comfyui)"
INSTRUCTIONS = (
    "Atelier retouches photos non-destructively. open_photo(path) starts a session; edit(session_id, message) "
    "asks for a change in plain words (\"warmer and a bit brighter\", \"use the film skill\"); a result with "
    "status awaiting_review waits for review(session_id, action) — approve, modify (values), rollback "
    "(target) or replan (feedback); history lists versions; export writes the file. Every result is "
    "{ok, tool, data} or {ok: false, tool, errors}."
)


# -- canonical results ----------------------------------------------------------------------

def ok(tool: str, data: Any) -> dict:
    return {"ok": True, "tool": tool, "data": data}


def failed(tool: str, *errors: str) -> dict:
    """The failure result: each reason on one line, credentials redacted."""
    return {"ok": False, "tool": tool, "errors": [one_line(e, 500) for e in errors if e] or ["failed"]}


def unexpected(tool: str, exc: BaseException) -> dict:
    """A failure nobody planned for: one line to the client, the cause (with its traceback) in the log."""
    reason = describe_failure(exc)
    log.error("tool %s failed: %s", tool, reason, exc_info=(type(exc), exc, exc.__traceback__))
    return failed(tool, reason)


def as_call_result(result: dict) -> CallToolResult:
    """The canonical dict as an MCP result: JSON text plus the same object as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(result, default=str))],
                          structured_content=result, is_error=not result["ok"])


def _turn(result) -> dict:
    """A TurnResult, small: what happened, the score, the version, and what is under review."""
    d = result.to_dict()
    review = d.get("review")
    return {
        "session_id": d["session_id"], "turn": d["turn"], "status": d["status"], "reply": d["reply"],
        "sub_goals": [{k: g.get(k) for k in ("op", "value", "mode", "target", "status") if k in g}
                      for g in d.get("sub_goals") or []],
        "score": d.get("score"), "assessment": d.get("assessment", ""),
        "asset_id": d.get("asset_id"), "head_asset_id": d.get("head_asset_id"),
        "rendered_path": d.get("rendered_path"), "warnings": list(d.get("warnings") or []),
        "details": _details(d.get("details") or {}),
        "review": None if not review else {"asset_id": review.get("asset_id"), "turn": review.get("turn"),
                                           "ops": review.get("ops") or []},
    }


def _details(details: dict) -> dict:
    """The turn's details, small: which skill did what, the review tier, failures (not the executor's record)."""
    out = {}
    skills = details.get("skills")
    if skills:
        out["skills"] = {"confidence": skills.get("confidence"),
                         "trace": [{k: t.get(k) for k in ("step", "skill", "status", "did", "why", "depends_on")
                                    if t.get(k) is not None} for t in skills.get("trace") or []]}
    for key in ("review_tier", "failure", "failure_counts"):
        if details.get(key):
            out[key] = details[key]
    return out


def _session(info) -> dict:
    d = info.to_dict()
    return {"session_id": d["id"], "title": d["title"], "width": d["width"], "height": d["height"],
            "style": d["style"], "review_mode": d["review_mode"], "turns": d["turns"],
            "head_asset_id": d["head_asset_id"], "notices": d["notices"]}


def _version(asset) -> dict:
    d = asset.to_dict()
    state = d.get("state") or {}
    changed = {k: v for k, v in (state.get("settings") or {}).items() if v}
    return {"asset_id": d["id"], "parent_id": d["parent_id"], "turn": d["turn"], "summary": d["summary"],
            "score": d["score"], "status": d["status"], "is_head": d["is_head"],
            "on_head_path": d["on_head_path"], "settings": changed,
            "local_layers": len(state.get("layers") or [])}


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
                   roots: Any = ()) -> dict:
        """Read ``path`` under the file rules (roots, regular file, size cap) and open it as a session."""
        def run() -> dict:
            data, name = self.file_rules(roots).read_photo(path)
            return _session(self.studio.start_session(data, filename=name, style=style, review_mode=review_mode))
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

    # generation (issue 14): answered by the Studio when a backend is there
    def _generation(self, tool: str, method: str, **kwargs) -> dict:
        fn = getattr(self.studio, method, None)
        if fn is None:
            return failed(tool, NO_GENERATION)
        return self.call(tool, lambda: fn(**kwargs))

    def get_defaults(self) -> dict:
        return self._generation("get_defaults", "get_defaults")

    def set_defaults(self, image: dict, persist: bool = False) -> dict:
        return self._generation("set_defaults", "set_defaults", image=image, persist=persist)

    def generate_image(self, **kwargs) -> dict:
        return self._generation("generate_image", "generate_image", **kwargs)

    def regenerate(self, asset_id: str, seed: int | None = None, param_overrides: dict | None = None) -> dict:
        return self._generation("regenerate", "regenerate", asset_id=asset_id, seed=seed,
                                param_overrides=param_overrides)


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


class AtelierMCP(MCPServer):
    """MCPServer whose every answer — argument errors and unknown tools included — is canonical."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context=None):
        try:
            result = await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return as_call_result(failed(name, *_validation_errors(cause)))
            if isinstance(cause, AtelierError):
                return as_call_result(failed(name, str(cause)))
            if self._tool_manager.get_tool(name) is None:
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


def _uris(roots: ListRootsResult) -> list[str]:
    return [str(r.uri) for r in roots.roots]


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

    server = AtelierMCP(name=SERVER_NAME, instructions=INSTRUCTIONS)

    @server.tool()
    async def open_photo(path: str, roots: ClientRoots, style: str | None = None,
                         review_mode: Literal["always", "below_auto_approve", "never"] | None = None
                         ) -> CallToolResult:
        """Open a photo file (JPEG, PNG, TIFF, WebP, RAW) as a new editing session; returns its session_id.

        path: a regular file inside the allowed roots (your MCP roots, ATELIER_MCP_ROOTS, else the server's
        working folder). style: an optional starting look (list_skills shows the looks); review_mode: when
        the agent stops for your review (default below_auto_approve: only when it is unsure)."""
        return await run("open_photo", path=path, style=style, review_mode=review_mode, roots=_uris(roots))

    @server.tool()
    async def edit(session_id: str, message: str) -> CallToolResult:
        """Ask for a change in plain words ("warmer and a little brighter", "darken the sky",
        "use the clean portrait skill", "undo"). Returns the turn: status (auto_approved, awaiting_review,
        not_understood, failed...), the agent's reply, the steps with their values, the score and the version."""
        return await run("edit", session_id=session_id, message=message)

    @server.tool()
    async def review(session_id: str, action: Literal["approve", "modify", "rollback", "replan"],
                     values: dict[str, int] | None = None, target: str | int | None = None,
                     feedback: str | None = None) -> CallToolResult:
        """Decide on the version under review. approve keeps it; modify sets slider values
        ({"saturation": -10}, each -100..100); rollback moves back to a turn number or version id (target,
        0 = the original; works at any time); replan asks for a different plan (feedback: one line)."""
        return await run("review", session_id=session_id, action=action, values=values, target=target,
                         feedback=feedback)

    @server.tool()
    async def history(session_id: str) -> CallToolResult:
        """Every version of the session, oldest first: turn, summary, score, status, which one is the head."""
        return await run("history", session_id=session_id)

    @server.tool()
    async def export(session_id: str, roots: ClientRoots, format: Literal["jpeg", "png", "tiff"] = "jpeg",
                     path: str | None = None, long_side: int | None = None,
                     overwrite: bool = False) -> CallToolResult:
        """Write the current version as a file at full resolution (or long_side pixels, 16..16384) and return
        its path; path: a file or folder inside the allowed roots to write it to (default: the session's
        exports folder). An existing file is never replaced unless overwrite is true."""
        return await run("export", session_id=session_id, format=format, path=path, long_side=long_side,
                         overwrite=overwrite, roots=_uris(roots))

    @server.tool()
    async def list_skills() -> CallToolResult:
        """The looks and retouch recipes (skills) Atelier knows: name, kind, description, gates."""
        return await run("list_skills")

    @server.tool()
    async def apply_skill(session_id: str, skill: str) -> CallToolResult:
        """Apply a skill by name (e.g. "film", "clean_portrait") as one turn; a skill whose gate fails
        (needs a face, needs a sky, colour photo only) is refused with the reason."""
        return await run("apply_skill", session_id=session_id, skill=skill)

    @server.tool()
    async def get_defaults() -> CallToolResult:
        """The image-generation defaults (model, size, steps, cfg, sampler...)."""
        return await run("get_defaults")

    @server.tool()
    async def set_defaults(image: dict[str, Any], persist: bool = False) -> CallToolResult:
        """Change image-generation defaults (e.g. {"steps": 20}); persist=true keeps them for later runs."""
        return await run("set_defaults", image=image, persist=persist)

    @server.tool()
    async def generate_image(prompt: str, negative_prompt: str | None = None, seed: int | None = None,
                             width: int | None = None, height: int | None = None, steps: int | None = None,
                             cfg: float | None = None, sampler_name: str | None = None,
                             scheduler: str | None = None, denoise: float | None = None,
                             model: str | None = None, return_inline_preview: bool = False) -> CallToolResult:
        """Generate an image from a prompt with the configured backend; unset parameters use the defaults.
        Returns the new asset's id and file path (inline preview bytes only if return_inline_preview)."""
        return await run("generate_image", prompt=prompt, negative_prompt=negative_prompt, seed=seed,
                         width=width, height=height, steps=steps, cfg=cfg, sampler_name=sampler_name,
                         scheduler=scheduler, denoise=denoise, model=model,
                         return_inline_preview=return_inline_preview)

    @server.tool()
    async def regenerate(asset_id: str, seed: int | None = None,
                         param_overrides: dict[str, Any] | None = None) -> CallToolResult:
        """Generate a generated asset again, with a new seed and/or changed parameters."""
        return await run("regenerate", asset_id=asset_id, seed=seed, param_overrides=param_overrides)

    return server


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
