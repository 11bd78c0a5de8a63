"""Where generation runs: torch device choice and Hugging Face Spaces (ZeroGPU, CPU Basic).

Nothing here imports torch at module import time; :func:`pick_device` does, when asked.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

#: Seconds a ZeroGPU allocation may last for one generation call.
ZEROGPU_DURATION_S = 120


def on_space(env: dict | None = None) -> bool:
    """Running on a Hugging Face Space (the platform sets SPACE_ID)."""
    env = os.environ if env is None else env
    return bool(env.get("SPACE_ID"))


def on_zero_gpu(env: dict | None = None) -> bool:
    """Running on a ZeroGPU Space (GPU lent per call through ``spaces.GPU``)."""
    env = os.environ if env is None else env
    return on_space(env) and "SPACES_ZERO_GPU" in env and str(env["SPACES_ZERO_GPU"]).lower() not in ("0", "false")


def nvidia_present() -> bool:
    """A cheap check for an NVIDIA driver (no torch import)."""
    return Path("/proc/driver/nvidia/version").exists()


def on_cpu_space(env: dict | None = None) -> bool:
    """A Space with no GPU at all (CPU Basic): generation cannot run there."""
    return on_space(env) and not on_zero_gpu(env) and not nvidia_present()


def needs_gpu_message() -> str:
    return ("Generative edits need a GPU, and this Space runs on CPU only (CPU Basic). Run Atelier on a machine "
            "with a GPU, or on a ZeroGPU Space, to remove, fill, expand or create images. Your photo is unchanged.")


def pick_device(preferred: str | None = None) -> str:
    """``preferred`` if given, else "cuda", then "mps", then "cpu" (slow, allowed)."""
    import torch

    if preferred:
        return preferred
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def zero_gpu(fn: Callable[..., Any], duration: int = ZEROGPU_DURATION_S) -> Callable[..., Any]:
    """``fn`` wrapped in ``spaces.GPU`` on a ZeroGPU Space; ``fn`` itself anywhere else.

    The ``spaces`` package exists only on Spaces, so its import is guarded.
    """
    if not on_zero_gpu():
        return fn
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return fn
    return spaces.GPU(duration=duration)(fn)
