"""The studio's A2A agent card (A2A 1.0), served at ``/.well-known/agent-card.json`` and, for older
readers, at ``/.well-known/agent.json`` (the same card).

It is the official SDK's ``AgentCard`` (``a2a-sdk`` 1.x), so the SDK's own card resolver and client read
it: the JSON-RPC endpoint (``/a2a`` on the studio, :mod:`agent.interfaces.a2a`) in
``supportedInterfaces`` (protocol 1.0, and 0.3 for older clients), streaming, and one skill per skill of
the registry (looks, retouch recipes, compound skills) plus free-form editing (``edit_photo``). The MCP
server (``python -m agent.mcp --http``; ``ATELIER_MCP_URL``, default ``http://127.0.0.1:8765/mcp``) is
declared as a card extension (``capabilities.extensions``), the standard place for what A2A does not
name, with its URL, transport and tools.

Its URLs start from ``ATELIER_PUBLIC_URL`` (the address people reach the studio at, e.g. behind a
proxy: ``https://atelier.example.org``), else from the address the server is bound to — never from
the request's ``Host`` header, which any client can set to point the card's readers elsewhere.
"""

from __future__ import annotations

import os
from typing import Any, Mapping
from urllib.parse import urlsplit

from agent import __version__

CARD_PATH = "/.well-known/agent-card.json"
#: The 0.3-era path, kept as an alias of the same card.
OLD_CARD_PATH = "/.well-known/agent.json"
A2A_PATH = "/a2a"
MCP_URL_ENV = "ATELIER_MCP_URL"
PUBLIC_URL_ENV = "ATELIER_PUBLIC_URL"
DEFAULT_MCP_URL = "http://127.0.0.1:8765/mcp"
#: The card extension that names the MCP server (A2A extensions are identified by a URI).
MCP_EXTENSION_URI = "https://modelcontextprotocol.io/specification"
MCP_TOOLS = ["open_photo", "edit", "review", "history", "export", "list_skills", "apply_skill",
             "get_defaults", "set_defaults", "generate_image", "regenerate", "list_schemas", "generate_schema"]
IMAGE_MODES = ["image/jpeg", "image/png", "image/tiff", "image/webp"]


def _skill_rows(studio: Any) -> list[dict]:
    try:
        if studio is not None:
            return list(studio.skills())
        from skills import load_skills
        return [s.summary() for s in load_skills().values()]
    except Exception:  # noqa: BLE001 - a broken user skill must not take the card down; the studio says why
        return []


def card_skills(studio: Any = None) -> list[dict]:
    """Free-form editing, then one A2A skill per registry skill (id ``skill.<name>``, gates as tags)."""
    out = [{
        "id": "edit_photo", "name": "Conversational photo retouching",
        "description": "Send a photo (an image part) and say what to change in words: warmer, brighter, darken "
                       "the sky, undo that. Non-destructive, judged against the original; the result comes back "
                       "as the rendered image and the plan as data. Later messages in the same context keep "
                       "editing the same photo.",
        "tags": ["photo", "retouching", "editing"],
        "examples": ["make it warmer and a little brighter", "the sky is too bright now", "undo that"],
        "input_modes": ["text/plain", *IMAGE_MODES], "output_modes": ["image/jpeg", "application/json"],
    }]
    for row in _skill_rows(studio):
        gates = row.get("gates") or []
        out.append({
            "id": f"skill.{row['name']}", "name": row.get("label") or row["name"],
            "description": (row.get("description") or row["name"]) + (f" (needs: {', '.join(gates)})" if gates else ""),
            "tags": ["skill", row.get("kind", "look"), *gates],
            "examples": [f"use the {row['name'].replace('_', ' ')} skill", *list(row.get("words") or [])[:2]],
            "input_modes": ["text/plain", *IMAGE_MODES], "output_modes": ["image/jpeg", "application/json"],
        })
    return out


def build_card(base_url: str, studio: Any = None):
    """The card as the SDK's ``AgentCard`` (protobuf). ``base_url``: where the studio is served."""
    from google.protobuf import struct_pb2
    from google.protobuf.json_format import ParseDict

    from a2a.types import (AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider,
                           AgentSkill)

    base = base_url.rstrip("/")
    mcp_url = os.environ.get(MCP_URL_ENV) or DEFAULT_MCP_URL
    mcp = AgentExtension(
        uri=MCP_EXTENSION_URI, required=False,
        description="The same studio as MCP tools (python -m agent.mcp --http, or stdio: python -m agent.mcp).",
        params=ParseDict({"url": mcp_url, "transport": "streamable-http", "stdio": "python -m agent.mcp",
                          "tools": MCP_TOOLS}, struct_pb2.Struct()))
    return AgentCard(
        name="Atelier",
        description="A conversational photo-retouching studio: a planner, a fast local pipeline and a judge, "
                    "with looks and retouch recipes as reusable skills.",
        version=__version__,
        provider=AgentProvider(organization="Atelier", url=f"{base}/"),
        documentation_url=f"{base}/",
        supported_interfaces=[
            AgentInterface(url=f"{base}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=f"{base}{A2A_PATH}", protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False, extensions=[mcp]),
        default_input_modes=["text/plain", *IMAGE_MODES],
        default_output_modes=["text/plain", "image/jpeg", "application/json"],
        skills=[AgentSkill(**s) for s in card_skills(studio)],
    )


def agent_card(base_url: str, studio: Any = None) -> dict:
    """The card as JSON (the SDK's serialisation, with the 0.3 keys older readers look for)."""
    from a2a.server.request_handlers.response_helpers import agent_card_to_dict

    return agent_card_to_dict(build_card(base_url, studio))


def configured_public_url(env: Mapping[str, str] | None = None) -> str | None:
    """``ATELIER_PUBLIC_URL`` checked (an http(s) URL with a host), or None when unset; ValueError says why not."""
    env = os.environ if env is None else env
    url = (env.get(PUBLIC_URL_ENV) or "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ValueError(f"{PUBLIC_URL_ENV}: expected the studio's address like https://atelier.example.org, "
                         f"got {url!r}")
    return url.rstrip("/") + "/"


def bound_url(scope: Mapping[str, Any]) -> str:
    """The address the server socket is bound to (the ASGI ``server`` of the connection), as a base URL."""
    host, port = scope.get("server") or ("127.0.0.1", 7860)
    host = f"[{host}]" if ":" in str(host) else host
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return f"{scheme}://{host}:{port}/"


def base_url_for(scope: Mapping[str, Any]) -> str:
    """``ATELIER_PUBLIC_URL`` when set and well-formed, else the bound address (never the Host header)."""
    try:
        return configured_public_url() or bound_url(scope)
    except ValueError:
        return bound_url(scope)


def card_routes(studio: Any = None) -> list:
    """Starlette routes serving the card at both well-known paths.

    A malformed ``ATELIER_PUBLIC_URL`` is refused here, when the studio starts.
    """
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    configured_public_url()

    async def serve(request) -> JSONResponse:
        return JSONResponse(agent_card(base_url_for(request.scope), studio))

    return [Route(path, serve, methods=["GET"], include_in_schema=False) for path in (CARD_PATH, OLD_CARD_PATH)]


__all__ = ["A2A_PATH", "CARD_PATH", "OLD_CARD_PATH", "PUBLIC_URL_ENV", "agent_card", "base_url_for", "bound_url",
           "build_card", "card_routes", "card_skills", "configured_public_url"]
