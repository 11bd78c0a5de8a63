"""One turn at a time per session, across threads and replicas: a lock, a database lease, recovery.

Calls on one session are serialised by a per-session lock; replicas sharing one
database take the session row's lease (renewed by a heartbeat). A lease whose
process died expires after ``replicas.lease_ttl_s`` and the next holder settles
the turn it left: its pending versions go, nothing kept is lost.
"""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from contextlib import contextmanager
from typing import Iterator, Protocol

from agent.config import AgentConfig
from agent.errors import SessionBusy
from agent.store import SessionRecord, Store


class TurnKeeper(Protocol):
    """What recovery needs from the turn runner."""

    def interrupt(self, thread_id: str) -> dict | None: ...

    def abandon(self, session: SessionRecord) -> None: ...


def _dead_here(owner: str) -> bool:
    """True when a lease owner ('host:pid:token') names a process of this machine that no longer runs."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname()[:40] or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # alive, another user's
    return False


class SessionLeases:
    """Per-session locks and database leases for one Studio; settles turns a killed process left."""

    def __init__(self, store: Store, config: AgentConfig, turns: TurnKeeper):
        self.store, self.config, self.turns = store, config, turns
        self._locks: dict[str, threading.RLock] = {}
        self._guard = threading.Lock()
        self._recovered: set[str] = set()
        # Who this Studio is in session leases (several processes or Studios may share one database).
        self.owner = f"{socket.gethostname()[:40]}:{os.getpid()}:{secrets.token_hex(4)}"
        self._held: set[str] = set()

    def lock(self, session_id: str) -> threading.RLock:
        """The session's thread lock (re-entrant)."""
        with self._guard:
            return self._locks.setdefault(session_id, threading.RLock())

    def mark_settled(self, session_id: str) -> None:
        """A session this Studio just created has nothing to recover."""
        self._recovered.add(session_id)

    def session(self, session_id: str) -> SessionRecord:
        """The session row, after settling a turn a killed process left in flight (once per Studio)."""
        session = self.store.get_session(session_id)
        if session_id not in self._recovered:
            with self.lock(session_id):
                if session_id not in self._recovered and self._try_settle(session_id):
                    self._recovered.add(session_id)
            session = self.store.get_session(session_id)
        return session

    def _try_settle(self, session_id: str) -> bool:
        """Recover a killed turn if no live process holds the session's lease; True when checked."""
        if session_id in self._held:
            self._recover(self.store.get_session(session_id))
            return True
        if self._acquire(session_id) is not None:
            return False  # a turn is running in another replica: its active thread is alive
        try:
            self._recover(self.store.get_session(session_id))
        finally:
            self.store.release_lease(session_id, self.owner)
        return True

    @contextmanager
    def leased(self, session_id: str) -> Iterator[None]:
        """Hold the session's thread lock and its database lease (one replica at a time runs its turns).

        Waits up to ``replicas.lease_wait_s`` for another replica's turn to end,
        then raises SessionBusy. While held, a heartbeat renews the lease; a lease
        whose process died expires after ``replicas.lease_ttl_s`` and the next
        holder settles the turn it left (its pending versions go, nothing kept is lost).
        """
        with self.lock(session_id):
            if session_id in self._held:      # re-entered (review -> a turn of its own)
                yield
                return
            ttl, wait = self.config.lease_ttl_s, self.config.lease_wait_s
            give_up = time.monotonic() + wait
            while self._acquire(session_id) is not None:
                if time.monotonic() >= give_up:
                    raise SessionBusy("this session is busy with a turn on another server; "
                                      "try again in a moment") from None
                time.sleep(min(0.1, max(0.01, wait / 20)))
            stop = threading.Event()
            beat = threading.Thread(target=self._heartbeat, args=(session_id, ttl, stop),
                                    name=f"lease-{session_id}", daemon=True)
            beat.start()
            self._held.add(session_id)
            try:
                session = self.store.get_session(session_id)
                if session.active_thread and self.turns.interrupt(session.active_thread) is None:
                    self.turns.abandon(session)      # a turn whose process was killed
                if session_id not in self._recovered:
                    self.store.sweep_orphan_files(session_id)
                    self._recovered.add(session_id)
                yield
            finally:
                self._held.discard(session_id)
                stop.set()
                beat.join(timeout=5)
                self.store.release_lease(session_id, self.owner)

    def _acquire(self, session_id: str) -> str | None:
        """One try at the lease; a holder that is a dead process on this machine is taken over at once."""
        holder = self.store.acquire_lease(session_id, self.owner, self.config.lease_ttl_s)
        if holder is not None and _dead_here(holder):
            holder = self.store.acquire_lease(session_id, self.owner, self.config.lease_ttl_s,
                                              steal_from=holder)
        return holder

    def _heartbeat(self, session_id: str, ttl: float, stop: threading.Event) -> None:
        while not stop.wait(ttl / 3):
            try:
                self.store.renew_lease(session_id, self.owner, ttl)
            except Exception:  # noqa: BLE001 - a missed beat only shortens the lease
                pass

    def _recover(self, session: SessionRecord) -> None:
        if session.active_thread and self.turns.interrupt(session.active_thread) is None:
            self.turns.abandon(session)
        self.store.sweep_orphan_files(session.id)
