"""A real OpenAI-compatible chat-completions server on 127.0.0.1, scriptable per test.

It speaks ``POST /v1/chat/completions`` (and ``GET /v1/models``) over real
HTTP, so tests drive the real ``openai`` client through real sockets. Each
request takes the next scripted :class:`Reply` (or asks ``responder`` when the
script is empty) and is recorded in ``requests`` (the parsed JSON body plus
arrival time), so tests can check what a model would have seen.

Tool calls (``Reply.calls``) script an agent's tool-call turns. Faults it can play: replies in code
fences or with prose, extra keys,
truncation (``finish_reason="length"``), refusals, HTTP errors with
``Retry-After`` (429) or without (500), a hang past the client's timeout, a
slow but valid answer, a garbage body that is not JSON, a dropped connection,
a trickle (headers at once, then one byte of a valid answer every few seconds:
no single read ever times out), a 400 that echoes the caller's request headers
(``Authorization`` included) in its error, and (:func:`refusing_base_url`) an
address where nothing listens. ``python -m tests.fake_openai_server --trickle``
serves the trickle on its own (for ``scripts/measure_hostile.py`` and by hand).

    with FakeOpenAIServer() as server:
        server.script(Reply.json({"reply": "ok", ...}))
        client = OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Reply:
    """One scripted answer. ``content`` is the assistant text; the other fields play faults."""

    content: str | None = ""
    finish_reason: str = "stop"
    refusal: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)   # names in lower case
    error: str = ""           # error message for a non-200 status
    hang_s: float = 0.0       # wait this long before answering (released when the server stops)
    drop: bool = False        # close the connection without any answer
    raw: bytes | None = None  # send these bytes as the body instead of a chat completion
    tool_calls: list | None = None   # [(name, arguments dict or raw JSON text)]: an assistant tool-call turn
    trickle_s: float = 0.0    # send the body one byte every trickle_s seconds (headers at once)
    echo_headers: bool = False  # answer `status` with the request's headers in the error message

    # -- the replies tests need ---------------------------------------------
    @classmethod
    def json(cls, obj: Any) -> "Reply":
        return cls(content=json.dumps(obj))

    @classmethod
    def fenced(cls, obj: Any, prose: str = "Here is the plan:") -> "Reply":
        return cls(content=f"{prose}\n```json\n{json.dumps(obj, indent=2)}\n```\nLet me know if you want more.")

    @classmethod
    def truncated(cls, obj: Any) -> "Reply":
        text = json.dumps(obj)
        return cls(content=text[: max(1, len(text) // 2)], finish_reason="length")

    @classmethod
    def refused(cls, text: str = "I'm sorry, but I can't help with that.") -> "Reply":
        return cls(content=None, refusal=text)

    @classmethod
    def rate_limited(cls, retry_after: float) -> "Reply":
        return cls(status=429, headers={"Retry-After": f"{retry_after:g}"}, error="Rate limit reached")

    @classmethod
    def server_error(cls, status: int = 500) -> "Reply":
        return cls(status=status, error="The server had an error while processing your request")

    @classmethod
    def bad_request(cls, message: str) -> "Reply":
        return cls(status=400, error=message)

    @classmethod
    def hang(cls, seconds: float) -> "Reply":
        return cls(hang_s=seconds, content="{}")

    @classmethod
    def dropped(cls) -> "Reply":
        return cls(drop=True)

    @classmethod
    def calls(cls, *calls: tuple[str, Any], content: str | None = None) -> "Reply":
        """Tool calls: ``Reply.calls(("edit", {"session_id": "x", "message": "warmer"}))``; a str is sent raw."""
        return cls(content=content, tool_calls=list(calls), finish_reason="tool_calls")

    @classmethod
    def slow(cls, obj: Any, seconds: float) -> "Reply":
        """A valid answer that takes ``seconds`` to arrive."""
        return cls(content=json.dumps(obj), hang_s=seconds)

    @classmethod
    def trickle(cls, obj: Any, every_s: float = 2.0) -> "Reply":
        """A valid answer whose body arrives one byte every ``every_s`` seconds (padded to take minutes)."""
        return cls(content=json.dumps(obj) + " " * 400, trickle_s=every_s)

    @classmethod
    def echoing(cls, status: int = 400) -> "Reply":
        """An error whose message repeats the caller's request headers, ``Authorization`` included."""
        return cls(status=status, echo_headers=True, error="Invalid request")

    @classmethod
    def garbage(cls) -> "Reply":
        """HTTP 200 whose body is not JSON at all (a proxy's error page, a broken server)."""
        return cls(raw=b"<html><body>502 upstream \x00\xff garbled</body></html>")


def refusing_base_url() -> str:
    """A /v1 URL on 127.0.0.1 where nothing listens: connecting is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@dataclass
class Received:
    """One request as the server saw it."""

    body: dict
    at: float                 # time.monotonic() on arrival
    headers: dict = field(default_factory=dict)   # names in lower case

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages") or []

    def text(self) -> str:
        """Every text part of every message, joined (what the model reads)."""
        out = []
        for m in self.messages:
            c = m.get("content")
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, list):
                out += [p.get("text", "") for p in c if p.get("type") == "text"]
        return "\n".join(out)

    def image_urls(self) -> list[str]:
        urls = []
        for m in self.messages:
            c = m.get("content")
            if isinstance(c, list):
                urls += [p["image_url"]["url"] for p in c if p.get("type") == "image_url"]
        return urls


class FakeOpenAIServer:
    """The server. Use as a context manager, or ``start()`` / ``stop()``."""

    def __init__(self, model: str = "fake-vlm"):
        self.model = model
        self.requests: list[Received] = []
        self.responder: Callable[[Received], Reply] | None = None
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ----------------------------------------------------------
    def script(self, *replies: Reply) -> "FakeOpenAIServer":
        with self._lock:
            self._script.extend(replies)
        return self

    def next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._script:
                return self._script.popleft()
        if self.responder is not None:
            return self.responder(received)
        return Reply.server_error(500)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._script)

    # -- lifecycle ----------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> "FakeOpenAIServer":
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()  # wake any hanging handler
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeOpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out or a dropped connection is part of the script, not noise


class _Handler(BaseHTTPRequestHandler):
    owner: FakeOpenAIServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": self.owner.model, "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send(400, {"error": {"message": "body is not JSON"}})
            return
        reply = self.owner.next_reply(Received(body=body, at=time.monotonic(), headers={k.lower(): v for k, v in self.headers.items()}))
        if reply.echo_headers:
            # Authorization first, as a proxy that complains about it would
            items = sorted(self.headers.items(), key=lambda kv: kv[0].lower() != "authorization")
            said = "; ".join(f"{k}: {v}" for k, v in items)
            self._send(reply.status, {"error": {"message": f"{reply.error}. Request headers were: {said}",
                                                "type": "invalid_request_error"}})
            return
        if reply.hang_s:
            self.owner._release.wait(reply.hang_s)
        if reply.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if reply.raw is not None:
            self._send_raw(200, reply.raw)
            return
        if reply.status != 200:
            kind = "rate_limit_exceeded" if reply.status == 429 else "server_error"
            self._send(reply.status, {"error": {"message": reply.error or "error", "type": kind}},
                       reply.headers)
            return
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.refusal is not None:
            message["refusal"] = reply.refusal
        if reply.tool_calls:
            n = len(self.owner.requests)
            message["tool_calls"] = [
                {"id": f"call_{n}_{i}", "type": "function",
                 "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)}}
                for i, (name, args) in enumerate(reply.tool_calls)]
        payload = {
            "id": f"chatcmpl-{len(self.owner.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.owner.model),
            "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
        }
        if reply.trickle_s:
            self._trickle(json.dumps(payload).encode(), reply.trickle_s)
            return
        self._send(200, payload, reply.headers)

    def _trickle(self, data: bytes, every_s: float) -> None:
        """Headers now, then the body one byte at a time (until it is sent, the client leaves or we stop)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.flush()
            for i in range(len(data)):
                if self.owner._release.wait(every_s):
                    return
                self.wfile.write(data[i:i + 1])
                self.wfile.flush()
        except OSError:
            pass  # the client gave up: what a deadline is for

    def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
        self._send_raw(status, json.dumps(payload).encode(), headers)

    def _send_raw(self, status: int, data: bytes, headers: dict | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (timeout test); nothing to tell it


def main(argv: list[str] | None = None) -> int:
    """Serve one hostile behaviour until interrupted: ``--trickle [SECONDS]`` or ``--echo``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tests.fake_openai_server")
    parser.add_argument("--trickle", type=float, metavar="SECONDS", help="one byte of a valid answer every SECONDS")
    parser.add_argument("--echo", action="store_true", help="answer 400 repeating the request headers")
    args = parser.parse_args(argv)
    with FakeOpenAIServer() as server:
        answer = {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}
        server.responder = (lambda r: Reply.echoing()) if args.echo else (
            lambda r: Reply.trickle(answer, args.trickle or 2.0))
        print(server.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
