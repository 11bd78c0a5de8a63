"""The HTTP MCP server's door: a bearer token whenever it listens beyond this machine.

``python -m agent.mcp --http --host 0.0.0.0`` gives every tool to whoever can reach the port, so off
loopback the server refuses to start without ``ATELIER_MCP_TOKEN`` (at least
:data:`MIN_TOKEN_CHARS` characters) and then answers **401** to any request whose
``Authorization: Bearer <token>`` is missing or wrong. On loopback (127.0.0.1, ::1, localhost) it
keeps working without one; a token that is set is required there too.

:class:`BearerGate` is a plain ASGI wrapper (no OAuth machinery): constant-time comparison, nothing
about the expected token in any answer or log line.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
from typing import Any, Mapping

TOKEN_ENV = "ATELIER_MCP_TOKEN"
MIN_TOKEN_CHARS = 16
log = logging.getLogger("atelier.mcp")


def is_loopback(host: str) -> bool:
    """True for addresses only this machine reaches (127.0.0.0/8, ::1, ``localhost``)."""
    host = (host or "").strip().strip("[]")
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False   # a host name or wildcard: assume the network can reach it


def token_for(host: str, env: Mapping[str, str] | None = None) -> str | None:
    """The token the server at ``host`` requires (None: none needed); raises ValueError saying why it cannot start."""
    env = os.environ if env is None else env
    token = (env.get(TOKEN_ENV) or "").strip()
    if token and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"{TOKEN_ENV} is too short ({len(token)} characters; at least {MIN_TOKEN_CHARS}); "
                         "use e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'")
    if not token and not is_loopback(host):
        raise ValueError(f"refusing to serve the MCP tools on {host or 'every address'} without a token: off "
                         f"loopback every tool is reachable from the network. Set {TOKEN_ENV} (a random string "
                         f"of {MIN_TOKEN_CHARS}+ characters; clients send it as 'Authorization: Bearer <token>'), "
                         "or serve on 127.0.0.1")
    return token or None


class BearerGate:
    """ASGI middleware: HTTP requests need ``Authorization: Bearer <token>``; lifespan passes through."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope.get("headers") or []:
            if name.lower() == b"authorization":
                given = value.strip()
                break
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        client = (scope.get("client") or ("?", 0))[0]
        why = "no bearer token" if not given else "a wrong bearer token"
        log.warning("refused an MCP request from %s: %s", client, why)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4401})
            return
        body = json.dumps({"error": f"unauthorized: {why}; send 'Authorization: Bearer <{TOKEN_ENV}>'"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="atelier-mcp"')]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["BearerGate", "MIN_TOKEN_CHARS", "TOKEN_ENV", "is_loopback", "token_for"]
