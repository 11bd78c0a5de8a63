"""HTTP for model endpoints with a wall-clock deadline on every socket operation, not only between bytes.

httpx's timeouts bound each *read*: a server that sends its headers and then one byte every two
seconds never trips a 60 s read timeout and can hold a turn for as long as it likes. Here every
connect, read and write of a request made inside :func:`wall_clock_deadline` waits at most until
that deadline (a ``time.monotonic()`` instant), however the bytes trickle; past it the operation
raises the HTTP library's own timeout (``ReadTimeout`` ...), which the ``openai`` SDK turns into
``APITimeoutError`` like any other timeout.

    client = OpenAI(base_url=..., http_client=deadline_http_client())
    with wall_clock_deadline(time.monotonic() + 60):
        client.chat.completions.create(...)      # over in 60 s, trickle or not

It works at httpcore's network-backend layer (the one place every socket operation passes), so it
bounds TLS handshakes, proxies and chunked bodies alike.
"""

from __future__ import annotations

import contextvars
import importlib
import time
import typing
from contextlib import contextmanager

#: The monotonic instant the HTTP calls made in this context must end by (None: no bound).
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("atelier_http_deadline", default=None)


@contextmanager
def wall_clock_deadline(end: float):
    """Every socket operation of a :func:`deadline_http_client` in this block ends by ``end`` (monotonic s).

    Nested blocks keep the earlier deadline.
    """
    current = _DEADLINE.get()
    token = _DEADLINE.set(end if current is None else min(end, current))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bounded(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` cut to what is left before the deadline; raises ``error`` when nothing is left."""
    end = _DEADLINE.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the wall-clock deadline of this request has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """A network stream whose every operation is cut to the deadline (httpcore's stream interface)."""

    def __init__(self, stream: typing.Any, core: typing.Any):
        self._stream, self._core = stream, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _bounded(timeout, self._core.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _bounded(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context, server_hostname: str | None = None, timeout: float | None = None):
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname,
                                                      _bounded(timeout, self._core.ConnectTimeout)), self._core)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend:
    """An httpcore network backend whose streams honour :func:`wall_clock_deadline`.

    ``core``: the httpcore module the pool comes from (``httpcore``, or ``httpcore2`` under newer
    ``openai`` releases), whose timeout exceptions the HTTP client maps to its own.
    """

    def __init__(self, inner: typing.Any, core: typing.Any):
        self._inner, self._core = inner, core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options=None):
        stream = self._inner.connect_tcp(host, port, _bounded(timeout, self._core.ConnectTimeout),
                                         local_address, socket_options)
        return _DeadlineStream(stream, self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options=None):
        stream = self._inner.connect_unix_socket(path, _bounded(timeout, self._core.ConnectTimeout), socket_options)
        return _DeadlineStream(stream, self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _bound_transport(transport: typing.Any) -> None:
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        # the HTTP library moved its internals: refuse rather than run model calls without the bound
        raise RuntimeError("cannot bound model requests by the turn deadline with this HTTP library version")
    if not isinstance(pool._network_backend, DeadlineBackend):
        core = importlib.import_module(type(pool).__module__.split(".")[0])
        pool._network_backend = DeadlineBackend(pool._network_backend, core)


def deadline_http_client(**kwargs: typing.Any):
    """The ``openai`` SDK's default HTTP client (proxies from the environment included), deadline-bound."""
    from openai import DefaultHttpxClient

    client = DefaultHttpxClient(**kwargs)
    for transport in [client._transport, *client._mounts.values()]:
        if transport is not None:
            _bound_transport(transport)
    return client


__all__ = ["DeadlineBackend", "deadline_http_client", "wall_clock_deadline"]
