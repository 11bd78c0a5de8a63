"""Decoded originals: a bounded cache per session, and a background thread that warms new photos.

Decoding is the slow part of a first render, so a :class:`PhotoSources` keeps the
decoded originals of recent sessions (``images.source_cache_sessions`` and
``images.source_cache_bytes``) and, as a photo arrives, finds its faces, subject
and sky on one low-priority thread (``images.warm_on_upload``).
"""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading

from cachetools import LRUCache

from agent.config import AgentConfig
from agent.store import Store
from pipeline.imageio import load_image
from pipeline.render import Renderer, SourceImage

#: OS niceness of the warming thread: it takes CPU that turns leave idle, never theirs
#: (a turn that needs a region first computes it itself; see Renderer.warm).
WARM_NICENESS = 10


def _warm_loop(jobs: queue.SimpleQueue, renderer: Renderer) -> None:
    """One Studio's warming thread: Renderer.warm for each uploaded photo, until None arrives."""
    if sys.platform.startswith("linux"):   # Linux gives each thread its own nice value
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WARM_NICENESS)
        except OSError:
            pass
    while (source := jobs.get()) is not None:
        try:
            renderer.warm(source)
        except Exception:  # noqa: BLE001 - a turn that needs the region finds it (or its error) itself
            pass


def _stop_warming(jobs: queue.SimpleQueue, thread: threading.Thread) -> None:
    """Drop the queued photos and wait (bounded) for the one being warmed."""
    try:
        while True:
            jobs.get_nowait()
    except queue.Empty:
        pass
    jobs.put(None)
    thread.join(timeout=30)


class PhotoSources:
    """The decoded original of each session, within the config's count and byte bounds."""

    def __init__(self, store: Store, renderer: Renderer, config: AgentConfig):
        self.store, self.renderer, self.config = store, renderer, config
        # least recently used first out, at most images.source_cache_sessions of them
        self._sources: LRUCache[str, SourceImage] = LRUCache(maxsize=max(1, config.source_cache_sessions))
        self._lock = threading.Lock()
        #: Photos whose content regions are found in the background; made on first use.
        self._warm_jobs: queue.SimpleQueue | None = None

    def get(self, session_id: str) -> SourceImage:
        """The decoded original of a session (a small LRU: decoding is the slow part)."""
        with self._lock:
            if session_id in self._sources:
                return self._sources[session_id]
        session = self.store.get_session(session_id)
        loaded = load_image(self.store.read_original(session), max_pixels=self.config.max_upload_pixels,
                            alpha="keep", name=session.original_path)   # the name tells a RAW file
        source = SourceImage.from_loaded(loaded)
        self.remember(session_id, source)
        return source

    def remember(self, session_id: str, source: SourceImage) -> None:
        """Keep a decoded original, within images.source_cache_sessions and images.source_cache_bytes."""
        with self._lock:
            self._sources[session_id] = source
            # a source counts its pixels and the resized copies it keeps (SourceImage.nbytes)
            held = sum(s.nbytes for s in self._sources.values())
            while len(self._sources) > 1 and held > self.config.source_cache_bytes:
                _, dropped = self._sources.popitem()          # the least recently used
                held -= dropped.nbytes

    def held(self) -> dict[str, int]:
        """What the cache holds now: ``{session id: bytes counted against the bound}``."""
        with self._lock:
            return {sid: s.nbytes for sid, s in self._sources.items()}

    @property
    def warming(self) -> bool:
        """True once a photo has been handed to the warming thread."""
        return self._warm_jobs is not None

    def warm(self, source: SourceImage) -> None:
        """Find ``source``'s faces, subject and sky on this Studio's one background thread, at low
        OS priority, while the person types (images.warm_on_upload). A turn that asks for one of
        them before it is found computes it itself, inside its own measured time; nothing is skipped."""
        if not self.config.warm_on_upload:
            return
        with self._lock:
            if self._warm_jobs is None:
                self._warm_jobs = queue.SimpleQueue()
                thread = threading.Thread(target=_warm_loop, args=(self._warm_jobs, self.renderer),
                                          name="atelier-warm", daemon=True)
                thread.start()
                # At exit, let the photo in hand finish: a daemon thread stopped inside OpenCV aborts the process.
                atexit.register(_stop_warming, self._warm_jobs, thread)
        self._warm_jobs.put(source)

    def close(self) -> None:
        if self._warm_jobs is not None:
            self._warm_jobs.put(None)   # the warming thread ends after the photo in hand
