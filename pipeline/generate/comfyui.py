"""Generation on a ComfyUI server, through its HTTP API.

The documented endpoints: ``POST /upload/image`` (multipart: the input image
and mask), ``POST /prompt`` (``{"prompt": <workflow in API format>,
"client_id"}`` -> ``{"prompt_id"}``), ``GET /history/{prompt_id}`` (empty until
the run finishes; then its ``outputs`` name the saved images and ``status``
says success or error) and ``GET /view?filename=&subfolder=&type=`` (the image
bytes). Workflows are JSON templates in ``configs/comfyui/`` (``txt2img.json``,
``inpaint.json``) whose ``{{name}}`` placeholders are filled from the
generation parameters.

Only the standard library is used (urllib), with a timeout on every request.
"""

from __future__ import annotations

import io
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.generate.base import BackendOutput, GenerationBackend, GenerationError, GenerationJob

WORKFLOWS_DIR = Path(__file__).resolve().parents[2] / "configs" / "comfyui"
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def load_workflow(name: str, folder: Path | None = None) -> dict:
    """A workflow template (``configs/comfyui/<name>.json``) without its ``_comment``."""
    path = (folder or WORKFLOWS_DIR) / f"{name}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise GenerationError("bad_request", f"no ComfyUI workflow template {path.name}") from None
    except json.JSONDecodeError as exc:
        raise GenerationError("bad_request", f"{path.name}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    return {k: v for k, v in data.items() if not k.startswith("_")}


def fill_workflow(template: Any, values: dict[str, Any]) -> Any:
    """Replace ``{{name}}`` placeholders; a string that is exactly one placeholder takes the value's type."""
    if isinstance(template, dict):
        return {k: fill_workflow(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_workflow(v, values) for v in template]
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template)
        if whole:
            if whole.group(1) not in values:
                raise GenerationError("bad_request", f"the workflow needs {whole.group(1)!r}, which was not given")
            return values[whole.group(1)]
        return _PLACEHOLDER.sub(lambda m: str(values.get(m.group(1), m.group(0))), template)
    return template


def _png(arr: np.ndarray) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


class ComfyUIBackend(GenerationBackend):
    """A ComfyUI server at ``base_url`` running the workflow templates of ``configs/comfyui``."""

    name = "comfyui"

    def __init__(self, base_url: str, *, model: str = "", timeout_s: float = 300.0, poll_s: float = 0.5,
                 request_timeout_s: float = 10.0, workflows: Path | None = None):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout_s, self.poll_s, self.request_timeout_s = float(timeout_s), float(poll_s), float(request_timeout_s)
        self.workflows = workflows
        self.client_id = uuid.uuid4().hex

    # -- HTTP -------------------------------------------------------------------------------
    def _request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> bytes:
        req = urllib.request.Request(self.base_url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=self.request_timeout_s) as resp:
                return resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:2000].decode("utf-8", "replace")
            try:
                err = json.loads(detail).get("error")
                detail = err.get("message", detail) if isinstance(err, dict) else (err or detail)
            except (ValueError, AttributeError):
                pass
            raise GenerationError("failed", f"ComfyUI refused {path.split('?')[0]} (HTTP {exc.code}: {detail}). "
                                  "Your photo is unchanged.") from None
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise GenerationError("server_down", f"The ComfyUI server at {self.base_url} is not answering "
                                  f"({reason}). Start ComfyUI or set ATELIER_COMFYUI_URL. Your photo is "
                                  "unchanged.") from None

    def _json(self, method: str, path: str, payload: Any = None) -> Any:
        body = None if payload is None else json.dumps(payload).encode()
        raw = self._request(method, path, body, {"Content-Type": "application/json"} if body else None)
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise GenerationError("failed", f"ComfyUI answered {path} with something that is not JSON") from None

    def upload(self, arr: np.ndarray, name: str) -> str:
        """``POST /upload/image``: put a PNG into ComfyUI's input folder; returns the name to load it by."""
        boundary = uuid.uuid4().hex
        parts = [
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"{name}\"\r\n"
            "Content-Type: image/png\r\n\r\n".encode() + _png(arr) + b"\r\n",
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"overwrite\"\r\n\r\ntrue\r\n".encode(),
            f"--{boundary}\r\nContent-Disposition: form-data; name=\"type\"\r\n\r\ninput\r\n".encode(),
            f"--{boundary}--\r\n".encode(),
        ]
        raw = self._request("POST", "/upload/image", b"".join(parts),
                            {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        info = json.loads(raw or b"{}")
        sub = info.get("subfolder") or ""
        return f"{sub}/{info['name']}" if sub else info["name"]

    def status(self) -> dict[str, Any]:
        try:
            stats = self._json("GET", "/system_stats")
            return {"backend": self.name, "model": self.model, "ready": True, "url": self.base_url,
                    "devices": [d.get("name") for d in stats.get("devices", [])]}
        except GenerationError as exc:
            return {"backend": self.name, "model": self.model, "ready": False, "url": self.base_url,
                    "reason": str(exc)}

    # -- running ----------------------------------------------------------------------------
    def run(self, job: GenerationJob) -> BackendOutput:
        started = time.perf_counter()
        p = job.params
        values = {**p.to_dict(), "model": p.model or self.model}
        if not values["model"]:
            raise GenerationError("not_configured", "no ComfyUI checkpoint named: set ATELIER_GEN_MODEL "
                                  "(a checkpoint file name on the server)")
        if job.task == "text_to_image":
            workflow_id = "txt2img"
        else:
            workflow_id = "inpaint"
            tag = uuid.uuid4().hex[:12]
            values["image"] = self.upload(job.image, f"atelier-{tag}-image.png")
            values["mask"] = self.upload(np.stack([job.mask] * 3, axis=-1), f"atelier-{tag}-mask.png")
        workflow = fill_workflow(load_workflow(workflow_id, self.workflows), values)
        queued = self._json("POST", "/prompt", {"prompt": workflow, "client_id": self.client_id})
        prompt_id = queued.get("prompt_id")
        if not prompt_id:
            raise GenerationError("failed", f"ComfyUI did not queue the workflow ({queued.get('node_errors') or queued})")
        entry = self._wait(prompt_id)
        image = self._first_image(entry, prompt_id)
        query = urllib.parse.urlencode({"filename": image["filename"], "subfolder": image.get("subfolder", ""),
                                        "type": image.get("type", "output")})
        data = self._request("GET", f"/view?{query}")
        from PIL import Image

        try:
            pixels = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
        except Exception:  # noqa: BLE001 - whatever the bytes were, they were not an image
            raise GenerationError("failed", "ComfyUI's /view did not return an image") from None
        return BackendOutput(pixels=np.ascontiguousarray(pixels), info={
            "prompt_id": prompt_id, "workflow_id": workflow_id, "filename": image["filename"],
            "subfolder": image.get("subfolder", ""), "folder_type": image.get("type", "output"),
            "seconds": time.perf_counter() - started, "device": "comfyui"})

    def _wait(self, prompt_id: str) -> dict:
        deadline = time.monotonic() + self.timeout_s
        while True:
            history = self._json("GET", f"/history/{urllib.parse.quote(prompt_id)}")
            entry = history.get(prompt_id) if isinstance(history, dict) else None
            if entry:
                status = entry.get("status") or {}
                if status.get("status_str") == "error":
                    messages = [m for m in status.get("messages", []) if m and m[0] == "execution_error"]
                    why = messages[0][1].get("exception_message", "") if messages else ""
                    raise GenerationError("failed", f"ComfyUI could not run the workflow ({why.strip() or 'error'})."
                                          " Your photo is unchanged.")
                if status.get("completed", True):
                    return entry
            if time.monotonic() >= deadline:
                raise GenerationError("failed", f"ComfyUI did not finish within {self.timeout_s:.0f} s. "
                                      "Your photo is unchanged.")
            time.sleep(self.poll_s)

    @staticmethod
    def _first_image(entry: dict, prompt_id: str) -> dict:
        for output in (entry.get("outputs") or {}).values():
            for image in output.get("images") or []:
                if image.get("filename"):
                    return image
        raise GenerationError("failed", f"ComfyUI finished {prompt_id} without saving an image")
