"""The tool-driving state loop: a chat model calls Atelier's MCP tools until it can answer in words.

One turn (``Orchestrator.turn``):

    user text -> [model -> tool calls -> validate each against its JSON schema -> run the valid ones over
                  MCP -> canonical results (or the validation errors) back into the context] -> ... -> answer

Limits per turn (``orchestrator:`` in the config): at most ``max_tool_calls`` tool calls run and at
most ``max_invalid_retries`` invalid calls are fed back; past either limit the model is asked once more
with tools switched off for a plain-text answer (or the loop answers for it). The generation defaults
are fetched once per conversation (``get_defaults``) and cached in the system prompt, refreshed when a
``set_defaults`` call changes them; the last session and version (asset id) a tool answered are kept in
the system prompt too, so "make that again" has an id to use. A synchronous model client's requests end
by a wall-clock deadline (:mod:`agent.model.deadline_http`). Every tool call is traced (:class:`Tracer`,
credentials redacted): the request, the validation result, the canonical result and its timing.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import jsonschema

from agent.redact import install_log_redaction, redact, redact_data, register_secret

SYSTEM = (
    "You are a photo-retouching assistant driving Atelier through tools. Open the photo with open_photo, "
    "then call edit with the person's request in plain words; if a turn is awaiting_review, decide with "
    "review (approve unless the person said otherwise). Use only the session_id a tool returned. Every tool "
    "answers {ok, tool, data} or {ok: false, errors}: read the errors and fix the call. When the work is "
    "done, answer the person in one or two plain sentences (no JSON)."
)


# -- tracing --------------------------------------------------------------------------------------

class Tracer:
    """JSONL trace: one line per tool call (and, at ``full``, per model request).

    ``basic``: tool, arguments, validation, ok/errors and the result's keys, milliseconds.
    ``full``: the whole canonical result, and the model requests with their messages.
    """

    def __init__(self, out: TextIO | None = None, level: str = "basic", echo: TextIO | None = None):
        if level not in ("basic", "full"):
            raise ValueError(f"trace level: expected basic or full, got {level!r}")
        self.out, self.level, self.echo = out, level, echo
        self.records: list[dict] = []

    def write(self, record: dict) -> None:
        record = redact_data(record)   # a key the endpoint echoes, a token in a tool's error: never in a trace
        self.records.append(record)
        line = json.dumps(record, default=str)
        if self.out is not None:
            self.out.write(line + "\n")
            self.out.flush()
        if self.echo is not None:
            self.echo.write("trace " + line + "\n")
            self.echo.flush()

    def tool_call(self, *, turn: int, index: int, name: str, arguments: Any, validation: dict,
                  result: dict | None, ms: float) -> None:
        rec: dict[str, Any] = {"type": "tool_call", "turn": turn, "call": index, "tool": name,
                               "request": arguments, "validation": validation, "ms": round(ms, 1)}
        if result is None:
            rec["result"] = None
        elif self.level == "full":
            rec["result"] = result
        else:
            data = result.get("data")
            rec["result"] = {"ok": result.get("ok"), "tool": result.get("tool"), "errors": result.get("errors"),
                             "data_keys": sorted(data) if isinstance(data, dict) else None,
                             "status": data.get("status") if isinstance(data, dict) else None}
        self.write(rec)

    def model_call(self, *, turn: int, messages: list, ms: float, tool_calls: int, error: str | None) -> None:
        rec: dict[str, Any] = {"type": "model_call", "turn": turn, "ms": round(ms, 1), "tool_calls": tool_calls,
                               "error": error}
        if self.level == "full":
            rec["messages"] = messages
        if self.level == "full" or error:
            self.write(rec)


# -- the MCP side ---------------------------------------------------------------------------------

class ToolBox:
    """An open MCP client session on Atelier's server, with the tools' schemas for validation."""

    def __init__(self, client):
        self.client = client
        self.schemas: dict[str, dict] = {}
        self.specs: list[dict] = []

    @classmethod
    async def connect(cls, stack: AsyncExitStack, transport: str = "stdio", url: str | None = None,
                      command: list[str] | None = None, env: dict | None = None,
                      timeout_s: float = 300, roots: list[Path] | None = None) -> "ToolBox":
        """stdio: launch ``command`` (default ``python -m agent.mcp``); streamable-http: connect to ``url``.

        ``roots``: the folders this client declares as MCP roots, where the file tools may read and write
        (default: the working folder of the person running it).
        """
        import sys

        from mcp import Client, StdioServerParameters, types

        folders = [Path(f).resolve() for f in (roots if roots is not None else [Path.cwd()])]

        async def list_roots(context) -> types.ListRootsResult:
            return types.ListRootsResult(roots=[types.Root(uri=f.as_uri(), name=f.name or "/") for f in folders])

        if transport == "stdio":
            cmd = command or [sys.executable, "-m", "agent.mcp"]
            server: Any = StdioServerParameters(command=cmd[0], args=list(cmd[1:]), env=server_environment(env),
                                                cwd=str(Path(__file__).resolve().parents[2]))
        elif transport == "streamable-http":
            if not url:
                raise ValueError("--mcp-url is needed with --mcp-transport streamable-http "
                                 "(e.g. http://127.0.0.1:8765/mcp)")
            server = url
        else:
            raise ValueError(f"mcp transport: expected stdio or streamable-http, got {transport!r}")
        client = await stack.enter_async_context(Client(server, read_timeout_seconds=timeout_s,
                                                        list_roots_callback=list_roots))
        box = cls(client)
        for tool in (await client.list_tools()).tools:
            schema = dict(tool.input_schema or {"type": "object"})
            box.schemas[tool.name] = schema
            box.specs.append({"type": "function", "function": {
                "name": tool.name, "description": (tool.description or "")[:1000], "parameters": schema}})
        return box

    def validate(self, name: str, arguments: Any) -> list[str]:
        """Reasons the call is invalid (empty: valid): unknown tool, or its arguments against the JSON schema."""
        if name not in self.schemas:
            return [f"unknown tool {name!r}; tools: {', '.join(self.schemas)}"]
        if not isinstance(arguments, dict):
            return [f"arguments: expected a JSON object, got {type(arguments).__name__}"]
        validator = jsonschema.Draft202012Validator(self.schemas[name])
        out = []
        for err in sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path))):
            where = ".".join(str(p) for p in err.absolute_path) or "arguments"
            out.append(f"{where}: {err.message}"[:300])
        return out

    async def call(self, name: str, arguments: dict) -> dict:
        result = await self.client.call_tool(name, arguments)
        data = result.structured_content
        if isinstance(data, dict) and "ok" in data:
            return data
        text = " ".join(getattr(c, "text", "") for c in result.content)
        try:
            parsed = json.loads(text)
            if isinstance(parsed, dict) and "ok" in parsed:
                return parsed
        except ValueError:
            pass
        return {"ok": not result.is_error, "tool": name, "data": {"text": text[:2000]}} if not result.is_error \
            else {"ok": False, "tool": name, "errors": [text[:500] or "the tool failed"]}


def server_environment(env: dict | None = None) -> dict:
    """The launched server's environment: the SDK's safe defaults (HOME, PATH...), every ``ATELIER_*``
    variable of this process (sessions folder, database, model, roots, schemas), then ``env``."""
    from mcp.client.stdio import get_default_environment

    return {**get_default_environment(),
            **{k: v for k, v in os.environ.items() if k.startswith("ATELIER_")}, **(env or {})}


# -- the loop -------------------------------------------------------------------------------------

@dataclass
class TurnOutcome:
    answer: str
    tool_calls: int = 0
    invalid_calls: int = 0
    model_calls: int = 0
    stopped: str = "answered"     # answered | tool_limit | invalid_limit | model_timeout | model_error
    calls: list[dict] = field(default_factory=list)   # {"tool", "ok", "valid"} per call

    def to_dict(self) -> dict:
        return {"answer": self.answer, "tool_calls": self.tool_calls, "invalid_calls": self.invalid_calls,
                "model_calls": self.model_calls, "stopped": self.stopped, "calls": self.calls}


class Orchestrator:
    """A conversation: the model, the tools, the limits, the context (messages) and the cached defaults."""

    def __init__(self, model_client, model: str, tools: ToolBox, settings: dict, tracer: Tracer | None = None):
        self.model_client, self.model, self.tools, self.settings = model_client, model, tools, settings
        self.tracer = tracer or Tracer()
        self.defaults: dict | None = None
        self.messages: list[dict] = []
        self.turns = 0
        #: The last session and version a tool answered with (for "that", "again", regenerate).
        self.last_session_id: str | None = None
        self.last_asset_id: str | None = None

    async def start(self) -> None:
        """Fetch the generation defaults once (cached for the whole conversation) and set the system prompt."""
        if self.defaults is None:
            t0 = time.perf_counter()
            result = await self.tools.call("get_defaults", {}) if "get_defaults" in self.tools.schemas \
                else {"ok": False, "tool": "get_defaults", "errors": ["no such tool"]}
            self.tracer.tool_call(turn=0, index=0, name="get_defaults", arguments={},
                                  validation={"ok": True, "errors": []}, result=result,
                                  ms=(time.perf_counter() - t0) * 1000)
            self.defaults = result
        self.messages = [{"role": "system", "content": self.system_text()}]

    def system_text(self) -> str:
        """The system prompt: the rules, the cached generation defaults, the last session and version."""
        d = self.defaults or {}
        known = (f"Image-generation defaults (cached): {json.dumps(d['data'])}" if d.get("ok")
                 else f"Image generation is not available: {'; '.join(d.get('errors') or [])}")
        lines = [SYSTEM, known]
        if self.last_session_id:
            lines.append(f"The current session_id is {self.last_session_id}"
                         + (f"; its latest version (asset_id) is {self.last_asset_id}." if self.last_asset_id else "."))
        return "\n".join(lines)

    def remember(self, name: str, result: dict) -> None:
        """Keep what a successful result says for the rest of the conversation: the defaults after
        set_defaults, the session and version ids of any answer."""
        data = result.get("data") if result.get("ok") else None
        if not isinstance(data, dict):
            return
        if name == "set_defaults" and isinstance(data.get("image"), dict):
            self.defaults = {"ok": True, "tool": "get_defaults", "data": {"image": data["image"]}}
        self.last_session_id = data.get("session_id") or self.last_session_id
        self.last_asset_id = data.get("asset_id") or data.get("head_asset_id") or self.last_asset_id
        if self.messages and self.messages[0].get("role") == "system":
            self.messages[0] = {"role": "system", "content": self.system_text()}

    async def _ask(self, *, tools_on: bool) -> Any:
        kwargs: dict[str, Any] = {"model": self.model, "messages": self.messages,
                                  "temperature": self.settings["temperature"],
                                  "max_tokens": self.settings["max_tokens"],
                                  "timeout": self.settings["model_timeout_s"]}
        if tools_on:
            kwargs["tools"] = self.tools.specs
        import openai

        create = self.model_client.chat.completions.create
        if isinstance(self.model_client, openai.AsyncOpenAI):   # the caller's own async client, as given
            return await create(**kwargs)
        return await _bounded_call(create, kwargs, float(self.settings["model_timeout_s"]))

    async def turn(self, text: str) -> TurnOutcome:
        import openai

        if not self.messages:
            await self.start()
        self.turns += 1
        turn = self.turns
        self.messages.append({"role": "user", "content": text})
        out = TurnOutcome(answer="")
        max_calls, max_invalid = self.settings["max_tool_calls"], self.settings["max_invalid_retries"]
        while True:
            limited = out.stopped in ("tool_limit", "invalid_limit")
            t0 = time.perf_counter()
            try:
                response = await self._ask(tools_on=not limited)
            except openai.APITimeoutError:
                self.tracer.model_call(turn=turn, messages=self.messages, ms=(time.perf_counter() - t0) * 1000,
                                       tool_calls=0, error="model_timeout")
                out.stopped = "model_timeout"
                out.answer = (f"The model did not answer within {self.settings['model_timeout_s']:g} s, so I "
                              "stopped this turn." + self._progress_note(out))
                break
            except openai.APIError as exc:
                self.tracer.model_call(turn=turn, messages=self.messages, ms=(time.perf_counter() - t0) * 1000,
                                       tool_calls=0, error=str(exc)[:300])
                out.stopped = "model_error"
                out.answer = redact(f"The model server failed ({str(exc)[:200]}), so I stopped this turn.") \
                    + self._progress_note(out)
                break
            out.model_calls += 1
            message = response.choices[0].message
            calls = list(message.tool_calls or [])
            self.tracer.model_call(turn=turn, messages=self.messages, ms=(time.perf_counter() - t0) * 1000,
                                   tool_calls=len(calls), error=None)
            if not calls or limited:
                answer = (message.content or "").strip()
                if limited or not answer:
                    answer = self._limit_answer(out, answer)
                out.answer = answer
                self.messages.append({"role": "assistant", "content": out.answer})
                break
            self.messages.append({"role": "assistant", "content": message.content or "",
                                  "tool_calls": [{"id": c.id, "type": "function",
                                                  "function": {"name": c.function.name,
                                                               "arguments": c.function.arguments or "{}"}}
                                                 for c in calls]})
            for call in calls:
                result = await self._run_call(turn, call, out, max_calls)
                self.messages.append({"role": "tool", "tool_call_id": call.id,
                                      "content": json.dumps(result, default=str)})
            if out.invalid_calls > max_invalid:
                out.stopped = "invalid_limit"
            elif out.tool_calls >= max_calls:
                out.stopped = "tool_limit"
        return out

    async def _run_call(self, turn: int, call: Any, out: TurnOutcome, max_calls: int) -> dict:
        name = call.function.name
        t0 = time.perf_counter()
        raw = call.function.arguments or "{}"
        try:
            arguments = json.loads(raw)
            errors = self.tools.validate(name, arguments)
        except ValueError as exc:
            arguments, errors = raw, [f"arguments: not valid JSON ({exc})"]
        index = out.tool_calls + out.invalid_calls + 1
        if errors:
            out.invalid_calls += 1
            result = {"ok": False, "tool": name, "errors": ["invalid call, not run: " + e for e in errors]}
            self.tracer.tool_call(turn=turn, index=index, name=name, arguments=arguments,
                                  validation={"ok": False, "errors": errors}, result=result,
                                  ms=(time.perf_counter() - t0) * 1000)
            out.calls.append({"tool": name, "valid": False, "ok": False})
            return result
        if out.tool_calls >= max_calls:
            result = {"ok": False, "tool": name,
                      "errors": [f"not run: the limit of {max_calls} tool calls per turn is reached; answer now"]}
            self.tracer.tool_call(turn=turn, index=index, name=name, arguments=arguments,
                                  validation={"ok": True, "errors": []}, result=result, ms=0.0)
            out.calls.append({"tool": name, "valid": True, "ok": False, "skipped": True})
            return result
        out.tool_calls += 1
        result = await self.tools.call(name, arguments)
        self.tracer.tool_call(turn=turn, index=index, name=name, arguments=arguments,
                              validation={"ok": True, "errors": []}, result=result,
                              ms=(time.perf_counter() - t0) * 1000)
        out.calls.append({"tool": name, "valid": True, "ok": bool(result.get("ok"))})
        self.remember(name, result)
        return result

    def _progress_note(self, out: TurnOutcome) -> str:
        done = [c["tool"] for c in out.calls if c.get("ok")]
        return f" Done before that: {', '.join(done)}." if done else ""

    def _limit_answer(self, out: TurnOutcome, said: str) -> str:
        if out.stopped == "tool_limit":
            why = f"I stopped after {out.tool_calls} tool calls, the limit for one turn."
        elif out.stopped == "invalid_limit":
            why = (f"I stopped after {out.invalid_calls} invalid tool calls "
                   f"(the limit is {self.settings['max_invalid_retries']} retries).")
        else:
            why = "The model gave no answer."
        return (f"{said} ({why})" if said else why + self._progress_note(out)).strip()


async def _bounded_call(create, kwargs: dict, seconds: float) -> Any:
    """A synchronous model request on a worker thread, every socket operation ending by ``seconds`` from now
    (a server that trickles bytes cannot stretch it: agent/model/deadline_http.py)."""
    import anyio

    from agent.model.deadline_http import wall_clock_deadline

    end = time.monotonic() + seconds

    def call() -> Any:
        with wall_clock_deadline(end):
            return create(**kwargs)

    return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)


def model_client(base_url: str, api_key: str, timeout_s: float):
    """The orchestrator's model client: the ``openai`` SDK over a deadline-bound HTTP client, no SDK retries."""
    from openai import OpenAI

    from agent.model.deadline_http import deadline_http_client

    register_secret(api_key if api_key != "not-needed" else None)
    install_log_redaction()
    return OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s,
                  http_client=deadline_http_client(timeout=timeout_s))
