"""Atelier as an A2A agent (official ``a2a-sdk`` 1.x), mounted on the studio: JSON-RPC at ``/a2a``.

Discovery is the card (:mod:`agent.interfaces.card`, ``/.well-known/agent-card.json``). The lifecycle:

- **send** (``SendMessage`` / ``SendStreamingMessage``): a message with an image part (raw bytes, or a
  ``data:`` URL; the studio never fetches other URLs) opens a session with that photo; its text is the
  request ("warmer and a bit brighter"), run as one turn. The task goes ``submitted`` -> ``working``
  (one status update per stage of the turn while it runs: planning, applying, judging) ->
  ``completed`` with two artifacts — ``photo`` (the rendered version, JPEG bytes) and ``plan`` (the
  turn as data: steps, score, status, reply, version ids; the MCP ``edit`` result's shape) — and the
  agent's reply as the status message. A turn that waits for review ends ``input-required``: answer
  ``/approve``, ``/modify saturation=-10``, ``/rollback 1``, ``/replan <feedback>`` or keep talking.
  A message with no photo in a context that has none also ends ``input-required``, asking for it.
- **context ids continue a session**: later messages with the same ``contextId`` edit the same photo
  (turn 2, 3 ...); a new image in the context starts over from that image.
- **get** (``GetTask``): the task with its status, history and artifacts (tasks live in memory; the
  sessions are in the studio's database like any other).
- **cancel** (``CancelTask``): the task ends ``canceled`` at once; the turn already running finishes
  in its worker and is then rolled back, so the photo stays as it was before the request.

Input is checked before anything is stored: at most one photo of at most ``ATELIER_MAX_UPLOAD``
bytes, an image format the studio reads; a bad one rejects the task with the reason.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from a2a.helpers import new_data_part, new_raw_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus
from cachetools import LRUCache

from agent.errors import AtelierError
from agent.interfaces.canonical import turn_data, unexpected
from agent.interfaces.card import A2A_PATH, base_url_for, build_card, card_routes, configured_public_url

log = logging.getLogger("atelier.a2a")

#: The contexts remembered (context id -> session id), oldest forgotten first.
MAX_CONTEXTS = 10_000
IMAGE_TYPES = ("image/jpeg", "image/png", "image/tiff", "image/webp", "image/x-adobe-dng")
_STAGE_WORDS = {"planner": "Planning", "executor": "Applying", "quality": "Judging", "review": "Review",
                "finish": "Done", "error": "Recovering"}


class PhotoMessage:
    """What one A2A message carries for Atelier: the words, and at most one photo (bytes, name)."""

    def __init__(self, text: str, photo: bytes | None, filename: str | None):
        self.text, self.photo, self.filename = text, photo, filename

    @classmethod
    def read(cls, message: Message | None, max_bytes: int) -> "PhotoMessage":
        """Raise ValueError (a line for the client) for a second photo, a URL to fetch, or a photo too large."""
        texts: list[str] = []
        photos: list[tuple[bytes, str | None]] = []
        for i, part in enumerate(message.parts if message is not None else []):
            if part.HasField("text"):
                texts.append(part.text)
            elif part.HasField("raw"):
                photos.append((bytes(part.raw), part.filename or None))
            elif part.HasField("url"):
                photos.append((_data_url_bytes(part.url, i), part.filename or None))
            elif part.HasField("data"):
                continue    # structured parts carry nothing Atelier reads
            if photos and len(photos[-1][0]) > max_bytes:
                raise ValueError(f"parts[{i}]: the photo is {len(photos[-1][0])} bytes; at most {max_bytes} "
                                 "(ATELIER_MAX_UPLOAD)")
        if len(photos) > 1:
            raise ValueError(f"one photo per message, got {len(photos)}")
        photo, name = photos[0] if photos else (None, None)
        return cls(" ".join(t.strip() for t in texts if t.strip()), photo, name)


def _data_url_bytes(url: str, index: int) -> bytes:
    if not url.startswith("data:") or ";base64," not in url:
        raise ValueError(f"parts[{index}]: send the photo's bytes (a raw part or a data: URL); "
                         "the studio does not fetch URLs")
    try:
        return base64.b64decode(url.split(";base64,", 1)[1], validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"parts[{index}]: the data: URL is not valid base64") from None


class AtelierExecutor(AgentExecutor):
    """Runs A2A tasks as studio turns: one worker thread per running turn, sessions keyed by context id."""

    def __init__(self, studio: Any, max_upload: int | None = None, workers: int = 4):
        from agent.interfaces.roots import max_photo_bytes

        self.studio = studio
        self.max_upload = max_upload if max_upload is not None else max_photo_bytes()
        self._contexts: LRUCache = LRUCache(maxsize=MAX_CONTEXTS)
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="a2a-turn")

    # -- contexts -------------------------------------------------------------------------
    def session_for(self, context_id: str) -> str | None:
        with self._lock:
            return self._contexts.get(context_id)

    def _remember(self, context_id: str, session_id: str) -> None:
        with self._lock:
            self._contexts[context_id] = session_id

    # -- the task -------------------------------------------------------------------------
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, history=history,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, context_id)

        def say(text: str) -> Message:
            return updater.new_agent_message([new_text_part(text)])

        try:
            incoming = PhotoMessage.read(context.message, self.max_upload)
        except ValueError as exc:
            await updater.reject(say(str(exc)))
            return
        session_id = self.session_for(context_id)
        if incoming.photo is not None:
            await updater.start_work(say("Opening the photo"))
            try:
                info = await self._in_worker(lambda: self.studio.start_session(
                    incoming.photo, filename=incoming.filename or "a2a-photo"))
            except AtelierError as exc:
                await updater.reject(say(f"I can't open that photo: {exc}"))
                return
            session_id = info.id
            self._remember(context_id, session_id)
        if session_id is None:
            await updater.requires_input(say("Send the photo to edit as an image part (JPEG, PNG, TIFF or WebP), "
                                             "with what to change in words."))
            return
        if not incoming.text:
            await self._artifacts(updater, session_id, None)
            await updater.complete(say("The photo is open. Say what to change, e.g. \"warmer and a bit brighter\"."))
            return
        await self._turn(updater, say, session_id, incoming.text)

    async def _turn(self, updater: TaskUpdater, say, session_id: str, text: str) -> None:
        loop = asyncio.get_running_loop()
        sent: list[asyncio.Future] = []

        def progress(event: dict) -> None:
            # called on the turn's worker thread: hand each stage to the event loop, in order
            stage = _STAGE_WORDS.get(str(event.get("stage")), str(event.get("stage") or "Working"))
            line = f"{stage}: {event.get('message')}" if event.get("message") else stage
            meta = {"stage": event.get("stage"), "status": event.get("status"), "fraction": event.get("fraction")}
            sent.append(asyncio.run_coroutine_threadsafe(
                updater.update_status(TaskState.TASK_STATE_WORKING, say(line), metadata=meta), loop))

        before = self.studio.session(session_id).head_asset_id
        await updater.start_work(say(f"Working on: {text[:120]}"))
        job = self._pool.submit(self._run_words, session_id, text, progress)
        try:
            results, notes = await asyncio.wrap_future(job)
        except asyncio.CancelledError:
            # the task was cancelled: the turn finishes in its worker, then the photo goes back to `before`
            job.add_done_callback(lambda _f: self._roll_back(session_id, before))
            raise
        except AtelierError as exc:
            await self._settle(sent)
            await updater.failed(say(str(exc)))
            return
        except Exception as exc:  # noqa: BLE001 - a full disk, a database that is down: one line, cause in the log
            await self._settle(sent)
            await updater.failed(say(unexpected("a2a", exc)["errors"][0]))
            return
        await self._settle(sent)
        last = results[-1] if results else None
        await self._artifacts(updater, session_id, last)
        reply = " ".join([*(r.reply for r in results if r.reply), *notes]).strip() or "Done."
        if last is not None and last.status == "awaiting_review":
            await updater.requires_input(say(reply + " (Answer /approve, /modify op=value, /rollback N or "
                                                     "/replan feedback, or keep talking.)"))
        elif last is not None and last.status == "failed":
            await updater.failed(say(reply))
        else:
            await updater.complete(say(reply))

    def _run_words(self, session_id: str, text: str, progress) -> tuple[list, list[str]]:
        """One line from the client: a review command (/approve ...) or a request in words (a turn)."""
        from agent.interfaces.cli import CommandError, parse_command, run_command

        notes: list[str] = []
        try:
            kind, args = parse_command(text)
        except CommandError as exc:
            raise _Refused(str(exc)) from None
        if kind != "say":
            return run_command(self.studio, session_id, text, note=notes.append), notes
        results = []
        if self.studio.pending_review(session_id) is not None:
            results.append(self.studio.review(session_id, "approve"))
        results.append(self.studio.send_message(session_id, args["text"], progress=progress))
        return results, notes

    def _roll_back(self, session_id: str, asset_id: str | None) -> None:
        try:
            if asset_id and self.studio.session(session_id).head_asset_id != asset_id:
                self.studio.review(session_id, "rollback", target=asset_id)
        except Exception:  # noqa: BLE001 - logged; the version stays in the history either way
            log.exception("could not roll back a cancelled A2A turn in session %s", session_id)

    async def _in_worker(self, fn):
        return await asyncio.wrap_future(self._pool.submit(fn))

    @staticmethod
    async def _settle(sent: list[asyncio.Future]) -> None:
        """Wait for the progress updates already handed over, so the final status comes after them."""
        for fut in list(sent):
            try:
                await asyncio.wrap_future(fut)
            except Exception:  # noqa: BLE001 - a progress line that could not be sent is not the turn's failure
                pass

    async def _artifacts(self, updater: TaskUpdater, session_id: str, result) -> None:
        """``photo``: the version shown, as JPEG bytes; ``plan``: the turn as data (when there was one)."""
        def photo() -> tuple[bytes, str]:
            path = Path(result.rendered_path) if result is not None and result.rendered_path \
                else Path(self.studio.render_path(session_id))
            from pipeline.imageio import encode_image, load_image

            return encode_image(load_image(path.read_bytes()).pixels, "jpeg", quality=90), path.stem + ".jpg"

        data, name = await self._in_worker(photo)
        await updater.add_artifact([new_raw_part(data, media_type="image/jpeg", filename=name)], name="photo",
                                   metadata={"session_id": session_id}, last_chunk=True)
        if result is not None:
            await updater.add_artifact([new_data_part(turn_data(result), media_type="application/json")],
                                       name="plan", last_chunk=True)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel(updater.new_agent_message([new_text_part(
            "Cancelled. A turn already running is rolled back when it finishes: the photo stays as it was.")]))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class _Refused(AtelierError):
    """A line from the client that is not a command Atelier reads (the message says the right form)."""


def a2a_routes(studio: Any) -> list:
    """Starlette routes: the card at both well-known paths and the JSON-RPC endpoint at ``/a2a``."""
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore

    # the handler reads capabilities from the card; the URLs in it are rebuilt per request when served
    card = build_card(configured_public_url() or "http://127.0.0.1:7860/", studio)
    handler = DefaultRequestHandler(agent_executor=AtelierExecutor(studio), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    return [*card_routes(studio), *create_jsonrpc_routes(handler, A2A_PATH, enable_v0_3_compat=True)]


def mount_a2a(options: dict, studio: Any) -> dict:
    """Add the A2A routes to the studio's launch options (``launch(**options)``); returns ``options``."""
    options.setdefault("app_kwargs", {}).setdefault("routes", []).extend(a2a_routes(studio))
    return options


__all__ = ["A2A_PATH", "AtelierExecutor", "PhotoMessage", "a2a_routes", "base_url_for", "mount_a2a"]
