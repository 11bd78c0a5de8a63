"""Which generation backend runs: chosen from the environment (``ATELIER_GEN_BACKEND``, ``ATELIER_GEN_MODEL``).

Kept apart from :mod:`pipeline.generate.base` (the interface every backend implements), so the
backends import the interface and this module imports the backends, never the other way round.
"""

from __future__ import annotations

import os
from typing import Any

from pipeline.generate.base import (BACKEND_ENV, BACKENDS, COMFYUI_URL_ENV, MODEL_ENV, GenerationBackend,
                                    NoBackend)
from pipeline.generate.comfyui import ComfyUIBackend
from pipeline.generate.runtime import needs_gpu_message, on_cpu_space


def backend_from_env(env: dict | None = None, **options: Any) -> GenerationBackend:
    """The backend ``ATELIER_GEN_BACKEND`` / ``ATELIER_GEN_MODEL`` name (never loads a model here).

    An unknown backend name or a missing model gives a :class:`NoBackend` whose
    reason says what is wrong, so every request still answers at once.
    """
    env = os.environ if env is None else env
    kind = (env.get(BACKEND_ENV) or "none").strip().lower()
    model = (env.get(MODEL_ENV) or "").strip()
    if kind not in BACKENDS:
        return NoBackend(f"{BACKEND_ENV}={kind!r} is not a generation backend; use one of {', '.join(BACKENDS)}.")
    if kind == "none":
        return NoBackend()
    if kind == "diffusers":
        if on_cpu_space(env):
            return NoBackend(needs_gpu_message())
        if not model:
            return NoBackend(f"{BACKEND_ENV}=diffusers needs {MODEL_ENV}: a model id in the local Hugging Face "
                             "cache or a model folder. Your photo is unchanged.")
        from pipeline.generate.diffusers_backend import DiffusersBackend   # imports torch lazily itself
        return DiffusersBackend(model, **{k: v for k, v in options.items() if k in ("idle_unload_s", "device")})
    return ComfyUIBackend(env.get(COMFYUI_URL_ENV) or "http://127.0.0.1:8188", model=model,
                          **{k: v for k, v in options.items() if k in ("timeout_s", "poll_s")})
