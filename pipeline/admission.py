"""Admission control for heavy pixel work: one process-wide memory budget.

Decoding a large original or rendering a full-size export briefly needs several
times the photo's own bytes (a 7000 x 7000 16-bit PNG: about 0.9 GB while it
decodes). Each such job reserves its estimated peak from one budget before it
starts and gives it back when it ends; when the budget is spent, later jobs wait
their turn (first come, first served) instead of stacking up past the process's
memory cap. A job larger than the whole budget runs alone, never refused for
its size. Small jobs (proxies, thumbnails: under :data:`SMALL_JOB_BYTES`) never
wait, so a busy export queue does not freeze the sliders.

The budget is off (no limit) until :func:`configure` sizes it, typically once at
start-up from the configured memory cap less what the caches may hold::

    from pipeline import admission
    admission.configure(1024 * 2**20)              # bytes for decodes and renders in flight
    with admission.reserve(admission.decode_bytes(7000, 7000, 16), what="opening photo.png"):
        ...                                        # load_image and Renderer do this themselves

:func:`pipeline.imageio.load_image` reserves before it decodes (the size is read
from the header first) and :meth:`pipeline.render.Renderer.render` before a
large render; callers only configure the budget and may catch
:class:`AdmissionTimeout` (the wait outlived ``timeout_s``).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Iterator

#: Jobs below this many bytes never wait (a 1600 px proxy render needs about 20 MB).
SMALL_JOB_BYTES = 64 * 2**20

#: How long a job waits for its turn before :class:`AdmissionTimeout` (seconds).
DEFAULT_TIMEOUT_S = 300.0


class AdmissionTimeout(RuntimeError):
    """A heavy job waited longer than its timeout for memory; the message is for a person."""


class MemoryBudget:
    """A byte budget that heavy jobs reserve from, first come first served.

    ``capacity``: bytes that jobs in flight may hold together (None: no limit, nothing waits).
    A thread that already holds a reservation gets nested ones at once (a render inside an
    export), so a job never waits behind itself.
    """

    def __init__(self, capacity: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S):
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._held = threading.local()
        self.capacity = capacity
        self.timeout_s = timeout_s
        #: bytes reserved now, and the most ever reserved at once
        self.in_use = 0
        self.peak_in_use = 0
        #: jobs that had to wait for their turn, since this budget was made
        self.waited = 0

    def configure(self, capacity: int | None, timeout_s: float | None = None) -> None:
        """Resize the budget (None: no limit) and restart its peak; waiting jobs are reconsidered at once."""
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be a positive number of bytes or None, got {capacity!r}")
        with self._cond:
            self.capacity = capacity
            self.peak_in_use = self.in_use
            if timeout_s is not None:
                self.timeout_s = float(timeout_s)
            self._cond.notify_all()

    @property
    def waiting(self) -> int:
        """Jobs queued for their turn right now."""
        with self._cond:
            return len(self._queue)

    @contextmanager
    def reserve(self, nbytes: int, *, what: str = "this photo", timeout_s: float | None = None) -> Iterator[None]:
        """Hold ``nbytes`` of the budget for the ``with`` block, waiting for room first when needed.

        ``what`` names the job in the timeout message. Raises :class:`AdmissionTimeout` when the
        wait outlives ``timeout_s`` (default: the budget's own).
        """
        nbytes = max(0, int(nbytes))
        nested = getattr(self._held, "depth", 0) > 0
        with self._cond:
            capacity = self.capacity
            if capacity is not None:
                nbytes = min(nbytes, capacity)  # bigger than the whole budget: it runs alone
            if capacity is not None and not nested and nbytes >= SMALL_JOB_BYTES:
                self._wait_for_room(nbytes, what, self.timeout_s if timeout_s is None else timeout_s)
            self.in_use += nbytes
            self.peak_in_use = max(self.peak_in_use, self.in_use)
        self._held.depth = getattr(self._held, "depth", 0) + 1
        try:
            yield
        finally:
            self._held.depth -= 1
            with self._cond:
                self.in_use -= nbytes
                self._cond.notify_all()

    def _wait_for_room(self, nbytes: int, what: str, timeout_s: float) -> None:
        ticket = object()
        self._queue.append(ticket)
        deadline = time.monotonic() + timeout_s
        waited = False
        try:
            while not (self._queue[0] is ticket and self._fits(nbytes)):
                waited = True
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AdmissionTimeout(
                        f"The server is busy with other large photos; {what} waited {timeout_s:.0f} s for "
                        f"memory. Try again in a moment.")
                self._cond.wait(left)
        finally:
            self._queue.remove(ticket)
            self.waited += waited
            self._cond.notify_all()  # the next in line may fit now

    def _fits(self, nbytes: int) -> bool:
        return self.capacity is None or self.in_use == 0 or self.in_use + nbytes <= self.capacity


#: The process's budget (off until configured).
BUDGET = MemoryBudget()


def configure(capacity: int | None, timeout_s: float | None = None) -> MemoryBudget:
    """Size the process's budget: bytes that decodes and renders in flight may hold together
    (None: no limit). Returns the budget (its ``in_use``, ``peak_in_use``, ``waiting`` for status pages)."""
    BUDGET.configure(capacity, timeout_s)
    return BUDGET


def reserve(nbytes: int, *, what: str = "this photo", timeout_s: float | None = None):
    """:meth:`MemoryBudget.reserve` on the process's budget."""
    return BUDGET.reserve(nbytes, what=what, timeout_s=timeout_s)


def decode_bytes(width: int, height: int, bit_depth: int = 8, *, raw: bool = False) -> int:
    """Estimated peak bytes of decoding a ``width`` x ``height`` original to what Atelier keeps
    (measured: an 8-bit JPEG about 4 bytes a pixel, a 16-bit PNG about 15, a RAW about 20)."""
    per_pixel = 20 if raw else 15 if bit_depth > 8 else 10
    return int(width) * int(height) * per_pixel


def render_bytes(height: int, width: int, *, deep: bool = False) -> int:
    """Estimated peak bytes of one render at ``height`` x ``width`` beyond its input: the result,
    its LUT coordinates when kept, masks and detail passes (and a 16-bit result for ``deep``)."""
    return int(height) * int(width) * (24 if deep else 12)
