"""Live slider previews: a small HTTP route the page script calls while a slider moves.

A drag fires dozens of positions a second. Sending each through the event
queue (and a file through Gradio's cache) made the photo trail the hand, so
the page script (ui/theme.py) coalesces them itself: at most one preview is
in flight per tab, and when it lands only the newest position is asked for
next (every position in between is skipped, never rendered). Each answer is
the proxy (``Studio.preview``: the shown version with that one value changed,
nothing recorded) as JPEG bytes, drawn over the "after" photo at once.

The route is ``GET /studio/preview?key=K&where=W&value=V``:

- ``key``: ``<session id>.<signature>`` from the page (``#preview-key``), an
  HMAC-SHA256 of the session id under the studio's browser secret. It lets a
  page preview its own session and nothing else (every other call needs the
  resume token);
- ``where``: the slider's element id, ``adj-<op>`` or ``layer-<i>-slider-<j>``;
- ``value``: its position, a number.

Answers: 200 ``image/jpeg``; 400 with a sentence for a bad ``where`` or value;
403 for a key that does not verify; 404 for a session that is gone.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import re
from typing import Any, Mapping

from agent.service import AtelierError, SessionNotFound
from ui import views

#: The route's path (relative to the app's root).
PREVIEW_PATH = "/studio/preview"
_WHERE = re.compile(r"^(?:adj-(?P<op>[a-z0-9_]+)|layer-(?P<layer>\d+)-slider-(?P<slot>\d+))$")


def preview_key(secret: str, session_id: str) -> str:
    """``<session id>.<signature>``: what the page sends with a live preview of ``session_id``."""
    mac = hmac.new(secret.encode(), b"preview:" + session_id.encode(), hashlib.sha256).hexdigest()[:32]
    return f"{session_id}.{mac}"


def session_of(secret: str, key: str) -> str | None:
    """The session a preview key names, or None when it does not verify."""
    session_id, _, mac = (key or "").partition(".")
    if not session_id or not mac or not secret:
        return None
    return session_id if hmac.compare_digest(preview_key(secret, session_id), key) else None


def slider_values(where: str, value: float, base: Mapping[str, Any] | None, pool: tuple[int, int]) -> tuple[dict, dict]:
    """A slider's element id and position -> ``(values, layers)`` for ``Studio.preview``.

    ``adj-<op>`` sets one global op; ``layer-<i>-slider-<j>`` sets the op that slot shows
    for the local layer ``i`` of ``base`` (the slots as ``views.layer_slots`` lays them out).
    Raises ValueError naming what is wrong.
    """
    found = _WHERE.match(where or "")
    if found is None:
        raise ValueError(f"where: expected adj-<op> or layer-<i>-slider-<j>, got {where!r}")
    value = views.as_value(float(value))
    if found["op"]:
        return {found["op"]: value}, {}
    i, j = int(found["layer"]), int(found["slot"])
    slots = views.layer_slots(base, [], *pool)
    if i >= len(slots) or not slots[i]["visible"] or not slots[i]["sliders"][j]["visible"]:
        raise ValueError(f"where: this version has no {where}")
    return {}, {i: {slots[i]["sliders"][j]["name"]: value}}


def preview_routes(studio: Any, secret: str, pool: tuple[int, int]) -> list:
    """The Starlette route of live previews (for ``launch(app_kwargs={"routes": ...})``)."""
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    def serve(request) -> Response:   # sync: Starlette runs it on its thread pool
        params = request.query_params
        session_id = session_of(secret, params.get("key", ""))
        if session_id is None:
            return PlainTextResponse("that preview key is not valid", status_code=403)
        try:
            value = float(params.get("value", ""))
            if not math.isfinite(value):
                raise ValueError
        except ValueError:
            return PlainTextResponse("value: expected a number", status_code=400)
        where = params.get("where", "")
        try:
            base = None
            if where.startswith("layer-"):
                pending = studio.pending_review(session_id)
                chosen = pending.asset_id if pending else None
                base = next((a.state for a in studio.history(session_id)
                             if (a.id == chosen if chosen else a.is_head)), None)
            values, layers = slider_values(where, value, base, pool)
            path = studio.preview(session_id, values or None, layers=layers or None)
        except SessionNotFound:
            return PlainTextResponse("that session no longer exists", status_code=404)
        except (AtelierError, ValueError) as exc:
            return PlainTextResponse(str(exc), status_code=400)
        return Response(path.read_bytes(), media_type="image/jpeg", headers={"Cache-Control": "no-store"})

    return [Route(PREVIEW_PATH, serve, methods=["GET"], include_in_schema=False)]
