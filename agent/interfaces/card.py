"""The studio's A2A agent card, served at ``/.well-known/agent.json`` (the Agent2Agent discovery document).

It names what Atelier can do — its skills (the looks and retouch recipes of the skill registry, plus
conversational editing) — and where to reach it: the studio in the browser, the Gradio API, and the
MCP server (``python -m agent.mcp --http``, whose URL ``ATELIER_MCP_URL`` names; default
``http://127.0.0.1:8765/mcp``).

Its URLs start from ``ATELIER_PUBLIC_URL`` (the address people reach the studio at, e.g. behind a
proxy: ``https://atelier.example.org``), else from the address the server is bound to — never from
the request's ``Host`` header, which any client can set to point the card's readers elsewhere.
"""

from __future__ import annotations

import os
from typing import Any, Mapping
from urllib.parse import urlsplit

CARD_PATH = "/.well-known/agent.json"
MCP_URL_ENV = "ATELIER_MCP_URL"
PUBLIC_URL_ENV = "ATELIER_PUBLIC_URL"
DEFAULT_MCP_URL = "http://127.0.0.1:8765/mcp"
PROTOCOL_VERSION = "0.3.0"
MCP_TOOLS = ["open_photo", "edit", "review", "history", "export", "list_skills", "apply_skill",
             "get_defaults", "set_defaults", "generate_image", "regenerate"]


def agent_card(base_url: str, studio: Any = None) -> dict:
    """The card as a dict. ``base_url``: where the studio is served (``http://host:port/``)."""
    base = base_url.rstrip("/")
    mcp_url = os.environ.get(MCP_URL_ENV) or DEFAULT_MCP_URL
    rows: list[dict] = []
    try:
        if studio is not None:
            rows = studio.skills()
        else:
            from skills import load_skills
            rows = [s.summary() for s in load_skills().values()]
    except Exception:  # noqa: BLE001 - a broken user skill must not take the card down; the studio says why
        rows = []
    skills = [{
        "id": "edit_photo", "name": "Conversational photo retouching",
        "description": "Edit a photo by talking to it: warmer, brighter, darken the sky, undo that; "
                       "non-destructive, with review, rollback and full-resolution export.",
        "tags": ["photo", "retouching", "editing"],
        "examples": ["make it warmer and a little brighter", "the sky is too bright now", "undo that"],
        "inputModes": ["text/plain", "image/jpeg", "image/png"], "outputModes": ["image/jpeg", "image/png"],
    }]
    for row in rows:
        gates = row.get("gates") or []
        skills.append({
            "id": f"skill.{row['name']}", "name": row.get("label") or row["name"],
            "description": row.get("description", "") + (f" (needs: {', '.join(gates)})" if gates else ""),
            "tags": ["skill", row.get("kind", "look")] + list(gates),
            "examples": [f"use the {row['name'].replace('_', ' ')} skill"] + list(row.get("words") or [])[:2],
        })
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "name": "Atelier",
        "description": "A conversational photo-retouching studio: a planner, a fast local pipeline and a judge, "
                       "with looks and retouch recipes as reusable skills.",
        "url": f"{base}/",
        "preferredTransport": "JSONRPC",
        "version": "1.0",
        "provider": {"organization": "Atelier", "url": f"{base}/"},
        "capabilities": {"streaming": False, "pushNotifications": False, "stateTransitionHistory": True},
        "defaultInputModes": ["text/plain", "image/jpeg", "image/png"],
        "defaultOutputModes": ["text/plain", "image/jpeg", "image/png"],
        "skills": skills,
        "endpoints": {
            "studio": f"{base}/",
            "gradio_api": f"{base}/gradio_api/info",
            "mcp": {"transport": "streamable-http", "url": mcp_url, "tools": MCP_TOOLS,
                    "stdio": "python -m agent.mcp"},
            "agent_card": f"{base}{CARD_PATH}",
        },
    }


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


def card_routes(studio: Any = None) -> list:
    """FastAPI routes serving the card (for the studio's app: ``launch(app_kwargs={"routes": ...})``).

    A malformed ``ATELIER_PUBLIC_URL`` is refused here, when the studio starts.
    """
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    configured_public_url()

    async def serve(request) -> JSONResponse:
        try:
            base = configured_public_url() or bound_url(request.scope)
        except ValueError:
            base = bound_url(request.scope)
        return JSONResponse(agent_card(base, studio))

    return [Route(CARD_PATH, serve, methods=["GET"], include_in_schema=False)]


__all__ = ["CARD_PATH", "PUBLIC_URL_ENV", "agent_card", "bound_url", "card_routes", "configured_public_url"]
