"""A small ComfyUI server on 127.0.0.1 that speaks the documented HTTP API.

Endpoints: ``POST /upload/image`` (multipart ``image``; answers ``{"name",
"subfolder", "type"}``), ``POST /prompt`` (``{"prompt": workflow, "client_id"}``
-> ``{"prompt_id", "number", "node_errors"}``; a workflow with a node type it
does not know is refused with HTTP 400 and ``node_errors``, as ComfyUI does),
``GET /history/{prompt_id}`` (``{}`` while the run is "in progress", then
``{id: {"prompt", "outputs": {node: {"images": [...]}}, "status"}}``),
``GET /view?filename=&subfolder=&type=`` (PNG bytes) and ``GET /system_stats``.

"Running" a workflow makes a deterministic image from the KSampler's seed at
the EmptyLatentImage size (text-to-image) or the uploaded image's size
(inpaint): the uploaded image where the mask is black, seeded noise where it is
white — so tests can check masks, sizes and seeds through the real client.
``pending_polls`` makes history answer ``{}`` that many times first;
``fail_next`` makes the next run end with an execution error.
"""

from __future__ import annotations

import email.parser
import email.policy
import io
import json
import threading
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
from PIL import Image

KNOWN_NODES = {"CheckpointLoaderSimple", "EmptyLatentImage", "CLIPTextEncode", "KSampler", "VAEDecode",
               "SaveImage", "LoadImage", "LoadImageMask", "VAEEncodeForInpaint"}


def _png(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


class FakeComfyUI:
    def __init__(self, pending_polls: int = 1):
        self.inputs: dict[str, bytes] = {}
        self.outputs: dict[str, bytes] = {}
        self.history: dict[str, dict] = {}
        self.prompts: list[dict] = []
        self.polls: dict[str, int] = {}
        self.pending_polls = pending_polls
        self.fail_next = False
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeComfyUI":
        fake = self

        class Handler(_Handler):
            server_state = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> "FakeComfyUI":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- "running" a workflow ------------------------------------------------------------
    def execute(self, workflow: dict) -> dict:
        nodes = {n["class_type"]: n["inputs"] for n in workflow.values()}
        sampler = nodes["KSampler"]
        rng = np.random.default_rng(int(sampler["seed"]))
        if "EmptyLatentImage" in nodes:
            w, h = int(nodes["EmptyLatentImage"]["width"]), int(nodes["EmptyLatentImage"]["height"])
            out = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        else:
            image = np.asarray(Image.open(io.BytesIO(self.inputs[nodes["LoadImage"]["image"]])).convert("RGB"))
            mask = np.asarray(Image.open(io.BytesIO(self.inputs[nodes["LoadImageMask"]["image"]])).convert("L"))
            noise = rng.integers(0, 256, image.shape, dtype=np.uint8)
            out = np.where(mask[..., None] >= 128, noise, image).astype(np.uint8)
        name = f"atelier_{uuid.uuid4().hex[:8]}_.png"
        self.outputs[name] = _png(out)
        return {"9": {"images": [{"filename": name, "subfolder": "", "type": "output"}]}}


class _Handler(BaseHTTPRequestHandler):
    server_state: FakeComfyUI

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, payload: Any) -> None:
        self._send(status, json.dumps(payload).encode())

    def do_GET(self) -> None:
        fake = self.server_state
        url = urllib.parse.urlparse(self.path)
        if url.path == "/system_stats":
            return self._json(200, {"system": {"comfyui_version": "fake"}, "devices": [{"name": "fake-gpu"}]})
        if url.path.startswith("/history/"):
            pid = urllib.parse.unquote(url.path[len("/history/"):])
            with fake._lock:
                seen = fake.polls.get(pid, 0)
                fake.polls[pid] = seen + 1
                if pid not in fake.history or seen < fake.pending_polls:
                    return self._json(200, {})
                return self._json(200, {pid: fake.history[pid]})
        if url.path == "/view":
            q = urllib.parse.parse_qs(url.query)
            name = q.get("filename", [""])[0]
            if q.get("type", ["output"])[0] != "output" or name not in fake.outputs:
                return self._json(404, {"error": "not found"})
            return self._send(200, fake.outputs[name], "image/png")
        self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        fake = self.server_state
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path == "/upload/image":
            msg = email.parser.BytesParser(policy=email.policy.default).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + body)
            for part in msg.iter_parts():
                if part.get_param("name", header="content-disposition") == "image":
                    name = part.get_filename()
                    fake.inputs[name] = part.get_payload(decode=True)
                    return self._json(200, {"name": name, "subfolder": "", "type": "input"})
            return self._json(400, {"error": "no image"})
        if self.path == "/prompt":
            payload = json.loads(body or b"{}")
            workflow = payload.get("prompt") or {}
            unknown = {k: n.get("class_type") for k, n in workflow.items() if n.get("class_type") not in KNOWN_NODES}
            if unknown:
                return self._json(400, {"error": {"type": "invalid_prompt", "message": f"unknown nodes {unknown}"},
                                        "node_errors": unknown})
            pid = str(uuid.uuid4())
            with fake._lock:
                fake.prompts.append(payload)
                if fake.fail_next:
                    fake.fail_next = False
                    fake.history[pid] = {"prompt": [len(fake.prompts), pid, workflow], "outputs": {},
                                         "status": {"status_str": "error", "completed": False, "messages": [
                                             ["execution_error", {"exception_message": "CUDA out of memory"}]]}}
                else:
                    fake.history[pid] = {"prompt": [len(fake.prompts), pid, workflow],
                                         "outputs": fake.execute(workflow),
                                         "status": {"status_str": "success", "completed": True, "messages": []}}
            return self._json(200, {"prompt_id": pid, "number": len(fake.prompts), "node_errors": {}})
        self._json(404, {"error": "not found"})
