"""The generation backend interface, its parameters and errors, and backend selection.

A backend runs one :class:`GenerationJob` (inpaint a masked image, or make an
image from text) and returns uint8 RGB pixels. Everything above it (remove,
fill, expand, regenerate, text-to-image; cropping to the model's resolution;
exact compositing) lives in :mod:`pipeline.generate.operations` and works the
same for every backend.

Backends are chosen by ``ATELIER_GEN_BACKEND`` (``none`` by default,
``diffusers``, ``comfyui``) and ``ATELIER_GEN_MODEL`` (a Hugging Face model id
in the local cache, a folder, or a ComfyUI checkpoint name).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

BACKEND_ENV = "ATELIER_GEN_BACKEND"
MODEL_ENV = "ATELIER_GEN_MODEL"
COMFYUI_URL_ENV = "ATELIER_COMFYUI_URL"
BACKENDS = ("none", "diffusers", "comfyui")

#: Failure kinds, each with a message a person understands (GenerationError.kind).
FAILURE_KINDS = ("not_configured", "needs_gpu", "model_missing", "out_of_memory", "server_down",
                 "bad_request", "failed")


class GenerationError(RuntimeError):
    """A generation that could not run; ``kind`` is one of FAILURE_KINDS, the message is for the person."""

    def __init__(self, kind: str, message: str):
        if kind not in FAILURE_KINDS:
            kind = "failed"
        self.kind = kind
        super().__init__(message)


@dataclass(frozen=True)
class GenerationParams:
    """Everything that decides the pixels of one generation (with the input image and mask).

    ``width``/``height``: the size the model works at (a resolution bucket);
    ``denoise`` 0..1: how much of the input is replaced (1 = everything under the mask).
    """

    prompt: str
    negative_prompt: str = ""
    seed: int = 0
    steps: int = 30
    cfg: float = 7.0
    sampler_name: str = "euler"
    scheduler: str = "normal"
    denoise: float = 1.0
    width: int = 1024
    height: int = 1024
    model: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def replace(self, **changes: Any) -> "GenerationParams":
        data = self.to_dict()
        data.update(changes)
        return GenerationParams(**data)


@dataclass
class GenerationJob:
    """One call into a backend: ``task`` "inpaint" (``image`` + ``mask``) or "text_to_image".

    ``image``: uint8 RGB at (params.height, params.width); ``mask``: uint8, 255 = make new pixels.
    """

    task: str
    params: GenerationParams
    image: np.ndarray | None = None
    mask: np.ndarray | None = None


@dataclass
class BackendOutput:
    """A backend's pixels plus what it knows about the run (prompt id, workflow, device, seconds)."""

    pixels: np.ndarray
    info: dict = field(default_factory=dict)


class GenerationBackend(ABC):
    """A place pixels are generated: in process (diffusers) or a server (ComfyUI)."""

    name: str = "backend"
    model: str = ""

    @abstractmethod
    def run(self, job: GenerationJob) -> BackendOutput:
        """Run one job; raise GenerationError with a clear message on failure."""

    def status(self) -> dict[str, Any]:
        """What the backend can say about itself without generating (for Studio.model_status and docs)."""
        return {"backend": self.name, "model": self.model, "ready": True}

    def close(self) -> None:
        """Release what the backend holds (a resident model, connections)."""


class NoBackend(GenerationBackend):
    """No generation configured: every job is refused at once, with what to set."""

    name = "none"

    def __init__(self, reason: str | None = None):
        self.reason = reason

    def run(self, job: GenerationJob) -> BackendOutput:
        raise GenerationError("not_configured", self.reason or not_configured_message())

    def status(self) -> dict[str, Any]:
        return {"backend": "none", "model": "", "ready": False, "reason": self.reason or not_configured_message()}


def not_configured_message() -> str:
    from pipeline.generate.runtime import needs_gpu_message, on_cpu_space

    if on_cpu_space():
        return needs_gpu_message()
    return ("There is no generation backend configured, so generative edits (remove, fill, expand, new photos) "
            "cannot run. Set ATELIER_GEN_BACKEND=diffusers with ATELIER_GEN_MODEL (an inpainting model in the local "
            "Hugging Face cache, or a folder), or ATELIER_GEN_BACKEND=comfyui with a ComfyUI server "
            "(ATELIER_COMFYUI_URL). Your photo is unchanged.")
