"""Credentials never leave the process as text: not in errors, warnings, traces, logs or database rows.

:func:`redact` replaces, in any text:

- the values of the secret settings (``ATELIER_VLM_API_KEY``, ``ATELIER_ORCH_API_KEY``,
  ``ATELIER_MCP_TOKEN``, ``ATELIER_BROWSER_SECRET``, the password in ``ATELIER_DATABASE_URL``) and any
  value given to :func:`register_secret` (the VLM client registers its key), when 8 characters or longer;
- whatever looks like a credential, wherever it came from: ``Authorization: ...``, ``Bearer ...``,
  ``api_key=...`` / ``"api-key": "..."``, ``sk-...`` keys, and ``user:password@`` in URLs.

:func:`redact_data` does the same to every string inside JSON-like data (plans, traces, rows), and
:func:`install_log_redaction` makes every log record of the process (message and traceback) pass
through :func:`redact`. A model endpoint that echoes the caller's ``Authorization`` header in an
error body (seen in the wild) is the case this exists for.

>>> redact("HTTP 400: bad request (headers: Authorization: Bearer sk-live-abcdefghijklmnop)")
'HTTP 400: bad request (headers: Authorization: Bearer [redacted])'
"""

from __future__ import annotations

import logging
import os
import re
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

MARK = "[redacted]"
#: Environment variables whose values are secrets (the password part of a database URL too).
SECRET_ENV = ("ATELIER_VLM_API_KEY", "ATELIER_ORCH_API_KEY", "ATELIER_MCP_TOKEN", "ATELIER_BROWSER_SECRET")
URL_ENV = ("ATELIER_DATABASE_URL", "ATELIER_STORAGE_URL", "ATELIER_VLM_BASE_URL", "ATELIER_ORCH_BASE_URL")
#: Shorter values are not redacted by value ("test", "none" would blank ordinary words); patterns still apply.
MIN_SECRET_CHARS = 8

_PATTERNS: tuple[tuple[re.Pattern, str], ...] = (
    # Authorization: [scheme] <credentials> (a header echoed in a body, a curl line, a repr of headers)
    (re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)((?:bearer|basic|token)\s+)?"
                r"(?!\[redacted\])[^\s\"',;})\]]+"), rf"\1\2{MARK}"),
    # "Bearer <token>" on its own (the scheme as HTTP writes it; "a bearer token" in prose stays)
    (re.compile(r"\bBearer(\s+)(?!\[redacted\])[A-Za-z0-9._~+/=-]{8,}"), rf"Bearer\1{MARK}"),
    # api_key=..., "x-api-key": "...", access_token: ..., password=..., secret: ...
    (re.compile(r"(?i)\b((?:x-)?api[_-]?key|(?:access|auth|api|bearer|mcp|refresh)[_-]?token|client[_-]?secret"
                r"|password|passwd|secret)([\"']?\s*[:=]\s*[\"']?)(?!\[redacted\])[^\s\"',;}&]{4,}"),
     rf"\1\2{MARK}"),
    # OpenAI-style keys: sk-..., sk-proj-...
    (re.compile(r"\bsk-(?!\[redacted\])[A-Za-z0-9_-]{12,}"), f"sk-{MARK}"),
    # scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/\s:@]+):(?!\[redacted\])[^/\s@]+@"), rf"\1:{MARK}@"),
)

_lock = threading.Lock()
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Redact ``value`` from now on wherever it appears (no-op for short or empty values)."""
    if isinstance(value, str) and len(value.strip()) >= MIN_SECRET_CHARS:
        with _lock:
            _registered.add(value.strip())


def _url_password(url: str) -> str | None:
    try:
        password = urlsplit(url).password
    except ValueError:
        return None
    return unquote(password) if password else None


def known_secrets() -> list[str]:
    """The secret values to redact now: registered ones and those in the environment, longest first."""
    found = set()
    for name in SECRET_ENV:
        value = (os.environ.get(name) or "").strip()
        if len(value) >= MIN_SECRET_CHARS:
            found.add(value)
    for name in URL_ENV:
        password = _url_password(os.environ.get(name) or "")
        if password and len(password) >= MIN_SECRET_CHARS:
            found.add(password)
    with _lock:
        found |= _registered
    return sorted(found, key=len, reverse=True)


def redact(text: Any) -> Any:
    """``text`` with every credential replaced by ``[redacted]``; non-strings are returned unchanged."""
    if not isinstance(text, str) or not text:
        return text
    for secret in known_secrets():
        if secret in text:
            text = text.replace(secret, MARK)
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    return text


def redact_data(value: Any, _depth: int = 0) -> Any:
    """JSON-like ``value`` (dicts, lists, strings) with every string redacted; other values unchanged."""
    if isinstance(value, str):
        return redact(value)
    if _depth > 64:   # deeper than any plan or trace: left as it is rather than recursing without end
        return value
    if isinstance(value, dict):
        return {k: redact_data(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v, _depth + 1) for v in value)
    return value


# -- logs ------------------------------------------------------------------------------------------

class _RedactedRecord(logging.LogRecord):
    """A log record whose message and traceback text are redacted when formatted."""

    def getMessage(self) -> str:  # noqa: N802 - the logging API's name
        return redact(super().getMessage())


_installed = False


def install_log_redaction() -> None:
    """Make every log record of this process redact its message and traceback (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args, **kwargs) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            record.__class__ = _RedactedRecord if type(record) is logging.LogRecord else record.__class__
            if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
                # formatted now so the traceback text (exception messages included) is redacted too
                record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            return record

        logging.setLogRecordFactory(factory)
        _installed = True


__all__ = ["MARK", "install_log_redaction", "known_secrets", "redact", "redact_data", "register_secret"]
