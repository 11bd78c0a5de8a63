"""The errors the session API raises. Every message is written for the person."""

from __future__ import annotations


class AtelierError(Exception):
    """Base of every error the service raises; ``str(exc)`` is shown to the person."""


class InvalidInput(AtelierError, ValueError):
    """A request the service cannot act on (bad image, empty message, out-of-range value...)."""


class SessionNotFound(AtelierError, LookupError):
    """No session with that id or resume token."""


class SessionBusy(AtelierError):
    """Another app process (replica) is running a turn of this session right now; retry shortly."""


__all__ = ["AtelierError", "InvalidInput", "SessionBusy", "SessionNotFound"]
