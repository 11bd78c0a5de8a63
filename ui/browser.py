"""What a browser remembers between visits: resume tokens, never session ids.

``gr.BrowserState`` keeps ``{"current": token | None, "tokens": [token, ...]}``
in the browser's localStorage. The tokens are unguessable
(``secrets.token_urlsafe`` in the service) and every one is validated with
``Studio.resume`` before it is used, so a forged or stale value just means
"no session": that, not the storage's encryption, is what protects a session.

Gradio encrypts the stored value *in the browser*, so the key it is given is
published to every visitor in the page's ``/config``. It is therefore never the
secret itself: :func:`public_key` derives a key from it (HMAC-SHA256), stable
across restarts and replicas that share the secret, from which the secret
cannot be recovered.

Settings (environment):

- ``ATELIER_BROWSER_STORAGE_KEY`` — localStorage key (default ``atelier-studio``).
- ``ATELIER_BROWSER_SECRET`` — encryption secret. Default: a random secret
  created once in ``<sessions_dir>/.browser-secret`` (mode 0600), so a server
  restart can still read what browsers stored, and no secret is ever in the
  code. Set it explicitly when several replicas serve the same database.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any, Mapping

DEFAULT_STORAGE_KEY = "atelier-studio"
SECRET_FILE = ".browser-secret"
#: How many sessions one browser lists under "My sessions".
MAX_REMEMBERED = 12


def storage_key() -> str:
    return os.environ.get("ATELIER_BROWSER_STORAGE_KEY") or DEFAULT_STORAGE_KEY


def browser_secret(sessions_dir: Path) -> str:
    """The env secret, else the one persisted in the sessions folder (created on first use)."""
    env = os.environ.get("ATELIER_BROWSER_SECRET")
    if env:
        return env
    path = Path(sessions_dir) / SECRET_FILE
    try:
        text = path.read_text().strip()
        if len(text) >= 32:
            return text
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    secret = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(secret)
    return secret


def public_key(secret: str) -> str:
    """The key handed to ``gr.BrowserState`` (and so to every browser): derived from ``secret``, never it."""
    return hmac.new(secret.encode(), b"atelier: gr.BrowserState key, v1", hashlib.sha256).hexdigest()


def empty() -> dict:
    return {"current": None, "tokens": []}


def normalized(value: Any) -> dict:
    """Whatever came back from localStorage -> a well-formed dict (junk becomes empty)."""
    if not isinstance(value, Mapping):
        return empty()
    tokens = [t for t in value.get("tokens") or [] if isinstance(t, str) and 0 < len(t) <= 200]
    current = value.get("current")
    current = current if isinstance(current, str) and 0 < len(current) <= 200 else None
    return {"current": current, "tokens": list(dict.fromkeys(tokens))[:MAX_REMEMBERED]}


def with_current(value: Any, token: str) -> dict:
    """Remember ``token`` as this browser's current session (most recent first)."""
    v = normalized(value)
    tokens = [token] + [t for t in v["tokens"] if t != token]
    return {"current": token, "tokens": tokens[:MAX_REMEMBERED]}


def without(value: Any, token: str | None) -> dict:
    """Forget a token that no longer resumes (deleted session, wiped database)."""
    v = normalized(value)
    tokens = [t for t in v["tokens"] if t != token]
    return {"current": None if v["current"] == token else v["current"], "tokens": tokens}
