"""The studio as an A2A agent, driven by the official SDK's own client (``a2a-sdk`` 1.x) against a launched app.

Discovery through the SDK's card resolver (``/.well-known/agent-card.json``, the old path as an alias), then
the lifecycle: a message with a photo and words -> a task that streams its working stages and completes with
the rendered photo and the plan as artifacts; ``GetTask``; a context id that continues the session; a cancel
that ends the task at once and leaves the photo as it was; bad input rejected with the reason.
"""

from __future__ import annotations

import asyncio
import threading
import uuid

import httpx
import numpy as np
import pytest

from tests.conftest import free_port, small_photo

a2a = pytest.importorskip("a2a", reason="a2a-sdk is a runtime requirement (requirements.txt)")

from a2a.client import A2ACardResolver, ClientConfig, create_client  # noqa: E402
from a2a.helpers import get_data_parts, get_message_text  # noqa: E402
from a2a.types import (CancelTaskRequest, GetTaskRequest, Message, Part, Role, SendMessageRequest,  # noqa: E402
                       TaskState)


class GatedPlanner:
    """The built-in planner; a message with "slowly" in it waits for ``gate`` first (to cancel mid-turn)."""

    def __init__(self):
        from agent.planning.embedded import EmbeddedPlanner

        self.inner = EmbeddedPlanner()
        self.gate = threading.Event()
        self.waiting = threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def plan(self, request):
        if "slowly" in request.message:
            self.waiting.set()
            self.gate.wait(60)
        return self.inner.plan(request)


@pytest.fixture(scope="module")
def studio_app(tmp_path_factory):
    from agent.service import Studio
    from app import create_app

    planner = GatedPlanner()
    studio = Studio(sessions_dir=tmp_path_factory.mktemp("sessions"), planner=planner)
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}", studio, planner
    planner.gate.set()
    demo.close()
    studio.close()


@pytest.fixture(scope="module")
def photo_png():
    from pipeline.imageio import encode_image

    pixels = small_photo("coffee", 320)
    return pixels, encode_image(pixels, "png")


def _message(*parts: Part, context_id: str | None = None, task_id: str | None = None) -> SendMessageRequest:
    return SendMessageRequest(message=Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=list(parts),
                                              context_id=context_id or "", task_id=task_id or ""))


async def _client(url: str, streaming: bool):
    async with httpx.AsyncClient(timeout=120) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
    return card, await create_client(card, client_config=ClientConfig(streaming=streaming,
                                                                      httpx_client=httpx.AsyncClient(timeout=120)))


async def _task(client, *parts: Part, context_id: str | None = None):
    """Send one message (not streamed) and return the task as it ended."""
    return [e async for e in client.send_message(_message(*parts, context_id=context_id))][-1].task


def _warmth(pixels: np.ndarray) -> float:
    """Mean red minus mean blue: a warmer photo has more."""
    return float(pixels[..., 0].astype(float).mean() - pixels[..., 2].astype(float).mean())


def test_the_sdk_discovers_the_card_and_its_endpoint(studio_app):
    url, _, _ = studio_app

    async def go():
        async with httpx.AsyncClient(timeout=30) as http:
            card = await A2ACardResolver(http, url).get_agent_card()
            old = (await http.get(f"{url}/.well-known/agent.json")).json()
            forged = await http.get(f"{url}/.well-known/agent-card.json", headers={"Host": "evil.example:666"})
            post_root = await http.post(f"{url}/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                                            "params": {"id": "no-such-task"}})
        return card, old, forged, post_root

    card, old, forged, post_root = asyncio.run(go())
    assert card.name == "Atelier" and card.capabilities.streaming
    assert [i.url for i in card.supported_interfaces][0] == f"{url}/a2a"
    assert card.supported_interfaces[0].protocol_binding == "JSONRPC"
    ids = [s.id for s in card.skills]
    assert ids[0] == "edit_photo" and {"skill.film", "skill.clean_portrait", "skill.portrait_film"} <= set(ids)
    portrait = next(s for s in card.skills if s.id == "skill.clean_portrait")
    assert "needs_face" in portrait.tags and "use the clean portrait skill" in portrait.examples
    mcp = card.capabilities.extensions[0]
    assert "open_photo" in list(mcp.params["tools"]) and mcp.params["url"].endswith("/mcp")
    assert old["name"] == "Atelier" and old["supportedInterfaces"][0]["url"] == f"{url}/a2a"   # the alias
    assert "evil.example" not in forged.text
    # the endpoint the card names answers JSON-RPC (an unknown task is a JSON-RPC error, not a 405)
    assert post_root.status_code == 200 and "error" in post_root.json()


def test_a_photo_and_words_stream_the_turn_and_return_the_render_and_the_plan(studio_app, photo_png):
    url, studio, _ = studio_app
    pixels, png = photo_png

    async def go():
        _, client = await _client(url, streaming=True)
        events = []
        async with client:
            async for event in client.send_message(_message(
                    Part(raw=png, media_type="image/png", filename="coffee.png"),
                    Part(text="make it warmer"))):
                events.append(event)
        return events

    events = asyncio.run(go())
    assert events[0].HasField("task") and events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    states = [e.status_update.status.state for e in events if e.HasField("status_update")]
    lines = [get_message_text(e.status_update.status.message) for e in events if e.HasField("status_update")]
    assert states[-1] == TaskState.TASK_STATE_COMPLETED
    # while the turn ran, the client saw its stages, before the result
    working = [line for s, line in zip(states, lines) if s == TaskState.TASK_STATE_WORKING]
    assert any(line.startswith("Planning") for line in working) and any(line.startswith("Judging") for line in working)
    artifacts = {e.artifact_update.artifact.name: e.artifact_update.artifact for e in events
                 if e.HasField("artifact_update")}
    assert set(artifacts) == {"photo", "plan"}
    first_artifact = next(i for i, e in enumerate(events) if e.HasField("artifact_update"))
    assert first_artifact > max(i for i, e in enumerate(events) if e.HasField("status_update")
                                and e.status_update.status.state == TaskState.TASK_STATE_WORKING)
    from pipeline.imageio import load_image

    photo = artifacts["photo"].parts[0]
    assert photo.media_type == "image/jpeg"
    rendered = load_image(photo.raw).pixels
    assert rendered.shape[:2] == pixels.shape[:2] and _warmth(rendered) > _warmth(pixels) + 2
    plan = get_data_parts(artifacts["plan"].parts)[0]
    assert plan["status"] in ("auto_approved", "approved") and plan["turn"] == 1
    assert any(g["op"] == "temperature" and g["value"] > 0 for g in plan["sub_goals"])
    assert studio.session(plan["session_id"]).turns == 1
    assert "warm" in lines[-1].lower()     # the reply says what changed


def test_get_task_and_a_context_id_that_continues_the_session(studio_app, photo_png):
    url, studio, _ = studio_app
    _, png = photo_png

    async def go():
        _, client = await _client(url, streaming=False)
        async with client:
            task = await _task(client, Part(raw=png, media_type="image/png"), Part(text="brighter"))
            fetched = await client.get_task(GetTaskRequest(id=task.id))
            second = await _task(client, Part(text="and a bit more contrast"), context_id=task.context_id)
            alone = await _task(client, Part(text="warmer"))
        return task, fetched, second, alone

    task, fetched, second, alone = asyncio.run(go())
    assert fetched.id == task.id and fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert [a.name for a in fetched.artifacts] == ["photo", "plan"]
    plan1 = get_data_parts(fetched.artifacts[1].parts)[0]
    plan2 = get_data_parts(second.artifacts[1].parts)[0]
    assert second.context_id == task.context_id and second.id != task.id
    assert plan2["session_id"] == plan1["session_id"] and plan2["turn"] == 2
    assert any(g["op"] == "contrast" for g in plan2["sub_goals"])
    assert studio.session(plan1["session_id"]).turns == 2
    # words with no photo in a new context: the agent asks for the photo, nothing is created
    assert alone.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert "photo" in get_message_text(alone.status.message) and not alone.artifacts


def test_cancel_ends_the_task_and_the_photo_stays_as_it_was(studio_app, photo_png):
    url, studio, planner = studio_app
    _, png = photo_png

    async def go():
        _, client = await _client(url, streaming=False)
        async with client:
            opened = await _task(client, Part(raw=png, media_type="image/png"))
            request = _message(Part(text="slowly make it much warmer"), context_id=opened.context_id)
            request.configuration.return_immediately = True
            started = [e async for e in client.send_message(request)][-1].task
            assert await asyncio.to_thread(planner.waiting.wait, 60)
            cancelled = await client.cancel_task(CancelTaskRequest(id=started.id))
            planner.gate.set()
            later = await client.get_task(GetTaskRequest(id=started.id))
        return opened, cancelled, later

    opened, cancelled, later = asyncio.run(go())
    assert opened.status.state == TaskState.TASK_STATE_COMPLETED and [a.name for a in opened.artifacts] == ["photo"]
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED and later.status.state == TaskState.TASK_STATE_CANCELED
    sid = opened.artifacts[0].metadata["session_id"]
    original = studio.history(sid)[0].id
    # the turn finished in its worker and was rolled back: the head is the untouched original again
    for _ in range(300):
        if studio.session(sid).turns >= 1 and studio.session(sid).head_asset_id == original:
            break
        threading.Event().wait(0.1)
    assert studio.session(sid).head_asset_id == original


def test_bad_input_is_rejected_with_the_reason(studio_app, photo_png):
    url, studio, _ = studio_app
    before = len(studio.list_sessions())

    async def go():
        _, client = await _client(url, streaming=False)
        async with client:
            fetch = await _task(client, Part(url="http://example.org/photo.jpg", media_type="image/jpeg"),
                                Part(text="warmer"))
            junk = await _task(client, Part(raw=b"not a photo at all", media_type="image/png"), Part(text="warmer"))
            command = await _task(client, Part(raw=photo_png[1], media_type="image/png"),
                                  Part(text="/modify saturation=lots"))
        return fetch, junk, command

    fetch, junk, command = asyncio.run(go())
    assert fetch.status.state == TaskState.TASK_STATE_REJECTED
    assert "does not fetch URLs" in get_message_text(fetch.status.message)
    assert junk.status.state == TaskState.TASK_STATE_REJECTED and "can't open" in get_message_text(junk.status.message)
    assert command.status.state == TaskState.TASK_STATE_FAILED
    assert "/modify expects op=whole-number" in get_message_text(command.status.message)
    assert len(studio.list_sessions()) == before + 1     # only the good photo opened a session
