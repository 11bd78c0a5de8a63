"""In-process generation with diffusers inpainting models (SDXL inpainting, FLUX.1 Fill, SD2 inpainting).

- The model comes from the local Hugging Face cache (a model id) or a folder;
  it is never downloaded (``local_files_only=True``).
- Device: ``cuda``, then ``mps``, then ``cpu``; half precision on a GPU
  (bfloat16 for FLUX), float32 on the CPU.
- One model is resident at a time in a process; it is unloaded after
  ``idle_unload_s`` seconds without a job, and on out-of-memory.
- When the GPU's free memory is short of the model's size, the pipeline runs
  with model CPU offload (needs ``accelerate``) instead of failing.
- Text-to-image with an inpainting model is an inpaint of a blank canvas
  under a full mask, so one resident model serves every operation.

torch and diffusers are imported when a model is loaded or injected, never at
import time. Tests inject a tiny pipeline built in code (``pipeline=``).
"""

from __future__ import annotations

import inspect
import threading
import time
import warnings
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.generate.base import (BackendOutput, GenerationBackend, GenerationError, GenerationJob,
                                    MODEL_ENV)
from pipeline.generate.runtime import pick_device, zero_gpu

#: Seconds without a job before the resident model is unloaded.
DEFAULT_IDLE_UNLOAD_S = 600.0
#: Free GPU memory needed, as a multiple of the model's weights, to run without CPU offload.
VRAM_HEADROOM = 1.4

#: sampler_name -> diffusers scheduler class (ComfyUI's names, so one recipe means the same on both backends).
SAMPLERS = {
    "euler": "EulerDiscreteScheduler",
    "euler_ancestral": "EulerAncestralDiscreteScheduler",
    "dpmpp_2m": "DPMSolverMultistepScheduler",
    "dpmpp_sde": "DPMSolverSDEScheduler",
    "ddim": "DDIMScheduler",
    "pndm": "PNDMScheduler",
    "lms": "LMSDiscreteScheduler",
    "heun": "HeunDiscreteScheduler",
    "uni_pc": "UniPCMultistepScheduler",
}

# The one resident model of this process (weak: a closed backend lets it go).
_resident_lock = threading.Lock()
_resident: "weakref.ReferenceType[DiffusersBackend] | None" = None


def _looks_like_path(model: str) -> bool:
    return model.startswith((".", "/", "~")) or "\\" in model or model.count("/") > 1 or Path(model).exists()


def _is_oom(exc: BaseException) -> bool:
    try:
        import torch
        if isinstance(exc, torch.cuda.OutOfMemoryError):
            return True
    except ImportError:  # pragma: no cover - torch is there whenever this backend runs
        pass
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


class DiffusersBackend(GenerationBackend):
    """Inpainting (and text-to-image) with one diffusers pipeline, loaded lazily.

    ``pipeline``: an already built pipeline to use (tests build a tiny one in
    code); it stays resident and is never unloaded. ``device``: force a device
    (default: cuda, mps, cpu).
    """

    name = "diffusers"

    def __init__(self, model: str, *, pipeline: Any = None, device: str | None = None,
                 idle_unload_s: float = DEFAULT_IDLE_UNLOAD_S):
        self.model = str(model)
        self._injected = pipeline is not None
        self._pipe = pipeline
        self._device_pref = device
        self.device: str | None = None
        self.offload = False
        self.idle_unload_s = float(idle_unload_s)
        self.loads = 0
        self._lock = threading.RLock()
        self._timer: threading.Timer | None = None
        self._last_used = 0.0
        self._default_scheduler = None
        if pipeline is not None:
            self._prepare(pipeline, device or "cpu")

    # -- loading --------------------------------------------------------------------------
    @property
    def loaded(self) -> bool:
        return self._pipe is not None

    def _source(self) -> str:
        model = self.model
        if not model:
            raise GenerationError("not_configured", f"no generation model: set {MODEL_ENV}")
        path = Path(model).expanduser()
        if path.is_dir():
            if not (path / "model_index.json").is_file():
                raise GenerationError("model_missing", f"The model folder {path.name!r} has no model_index.json: "
                                      "it is not a diffusers pipeline folder. Your photo is unchanged.")
            return str(path)
        if _looks_like_path(model):
            raise GenerationError("model_missing", f"The model folder {model!r} does not exist. Point "
                                  f"{MODEL_ENV} at a diffusers model folder or a model id in the local Hugging "
                                  "Face cache. Your photo is unchanged.")
        return model

    def _load(self) -> Any:
        source = self._source()
        try:
            import torch
            from diffusers import DiffusionPipeline
        except ImportError as exc:
            raise GenerationError("not_configured", f"the diffusers backend needs torch and diffusers "
                                  f"installed ({exc.name} is missing). Your photo is unchanged.") from None
        device = pick_device(self._device_pref)
        flux = "flux" in source.lower()
        dtype = torch.float32 if device == "cpu" else (torch.bfloat16 if flux and device == "cuda" else torch.float16)
        _claim_residency(self)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # torch_dtype is renamed dtype in newer diffusers
                pipe = DiffusionPipeline.from_pretrained(source, torch_dtype=dtype, local_files_only=True)
        except (OSError, EnvironmentError, ValueError) as exc:
            raise GenerationError("model_missing", f"The model {self.model!r} is not in the local Hugging Face "
                                  "cache (Atelier never downloads models). Download it once (huggingface-cli "
                                  f"download {self.model}) or point {MODEL_ENV} at a model folder. Your photo "
                                  f"is unchanged. ({type(exc).__name__})") from None
        if "mask_image" not in inspect.signature(pipe.__call__).parameters:
            raise GenerationError("model_missing", f"{self.model!r} is a {type(pipe).__name__}, not an "
                                  "inpainting model: use SDXL inpainting, FLUX.1 Fill or SD2 inpainting.")
        self._prepare(pipe, device)
        self.loads += 1
        return pipe

    def _prepare(self, pipe: Any, device: str) -> None:
        self.device = device
        if hasattr(pipe, "set_progress_bar_config"):
            pipe.set_progress_bar_config(disable=True)
        self.offload = False
        if device == "cuda" and self._vram_short(pipe):
            try:
                pipe.enable_model_cpu_offload()
                self.offload = True
            except Exception:  # noqa: BLE001 - no accelerate: run on the GPU and let OOM speak
                pipe.to(device)
        elif not self._injected or device != "cpu":
            pipe.to(device)
        self._default_scheduler = getattr(pipe, "scheduler", None)
        self._pipe = pipe

    @staticmethod
    def _vram_short(pipe: Any) -> bool:
        import torch
        try:
            free, _ = torch.cuda.mem_get_info()
        except Exception:  # noqa: BLE001
            return False
        size = 0
        for comp in getattr(pipe, "components", {}).values():
            for p in getattr(comp, "parameters", lambda: [])():
                size += p.numel() * p.element_size()
        return free < size * VRAM_HEADROOM

    def unload(self) -> None:
        """Let the resident model go (an injected pipeline stays)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._injected or self._pipe is None:
                return
            self._pipe = None
            self._default_scheduler = None
        _free_memory()

    def _idle_check(self) -> None:
        with self._lock:
            if time.monotonic() - self._last_used >= self.idle_unload_s - 1e-3:
                self.unload()

    def _touch(self) -> None:
        self._last_used = time.monotonic()
        if self._injected or self.idle_unload_s <= 0:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(self.idle_unload_s, self._idle_check)
        self._timer.daemon = True
        self._timer.start()

    def close(self) -> None:
        self.unload()

    def status(self) -> dict[str, Any]:
        return {"backend": self.name, "model": self.model, "ready": True, "loaded": self.loaded,
                "device": self.device, "cpu_offload": self.offload, "idle_unload_s": self.idle_unload_s}

    # -- running --------------------------------------------------------------------------
    def _set_scheduler(self, pipe: Any, sampler_name: str, scheduler: str) -> None:
        base = self._default_scheduler
        if base is None or "FlowMatch" in type(base).__name__:
            return  # flow-matching models (FLUX) keep their own sampler
        cls_name = SAMPLERS.get(sampler_name)
        if cls_name is None:
            pipe.scheduler = base
            return
        import diffusers

        cls = getattr(diffusers, cls_name, None)
        if cls is None:
            pipe.scheduler = base
            return
        extra = {"use_karras_sigmas": True} if scheduler == "karras" and cls_name != "DDIMScheduler" else {}
        try:
            pipe.scheduler = cls.from_config(base.config, **extra)
        except Exception:  # noqa: BLE001 - a scheduler that does not fit this model: keep the model's own
            pipe.scheduler = base

    def run(self, job: GenerationJob) -> BackendOutput:
        with self._lock:
            started = time.perf_counter()
            if self._pipe is None:
                self._load()
            pipe = self._pipe
            try:
                pixels = _ON_GPU(self, pipe, job)
            except GenerationError:
                raise
            except BaseException as exc:  # noqa: BLE001 - every failure becomes a clear message
                if _is_oom(exc):
                    self.unload()
                    raise GenerationError("out_of_memory", "The GPU ran out of memory while generating "
                                          f"({job.params.width}x{job.params.height}, {job.params.steps} steps). "
                                          "The model was unloaded; try a smaller area or size. Your photo is "
                                          "unchanged.") from None
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                raise GenerationError("failed", f"generation failed ({type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}). Your photo is "
                                      "unchanged.") from None
            finally:
                self._touch()
            return BackendOutput(pixels=pixels, info={
                "device": self.device, "cpu_offload": self.offload, "seconds": time.perf_counter() - started,
                "pipeline": type(pipe).__name__})

    def _call(self, pipe: Any, job: GenerationJob) -> np.ndarray:
        import torch
        from PIL import Image

        p = job.params
        w, h = int(p.width), int(p.height)
        if job.task == "text_to_image":
            image = np.full((h, w, 3), 127, np.uint8)
            mask = np.full((h, w), 255, np.uint8)
            strength = 1.0
        else:
            image, mask, strength = job.image, job.mask, float(p.denoise)
        self._set_scheduler(pipe, p.sampler_name, p.scheduler)
        accepted = inspect.signature(pipe.__call__).parameters
        kwargs = {
            "prompt": p.prompt, "negative_prompt": p.negative_prompt or None,
            "image": Image.fromarray(image), "mask_image": Image.fromarray(mask),
            "height": h, "width": w, "num_inference_steps": int(p.steps), "guidance_scale": float(p.cfg),
            "strength": strength, "generator": torch.Generator(device="cpu").manual_seed(int(p.seed)),
            "output_type": "np",
        }
        kwargs = {k: v for k, v in kwargs.items() if k in accepted and v is not None}
        with torch.inference_mode():
            out = pipe(**kwargs).images
        arr = np.asarray(out[0] if isinstance(out, (list, tuple)) or getattr(out, "ndim", 0) == 4 else out)
        if arr.dtype != np.uint8:
            arr = np.clip(np.nan_to_num(arr) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        if arr.shape[:2] != (h, w):
            import cv2
            arr = cv2.resize(arr, (w, h), interpolation=cv2.INTER_CUBIC)
        return np.ascontiguousarray(arr[..., :3])


def _call_pipeline(backend: DiffusersBackend, pipe: Any, job: GenerationJob) -> np.ndarray:
    return backend._call(pipe, job)


# Wrapped once, at import (ZeroGPU registers decorated functions when the app starts): on a ZeroGPU
# Space each generation holds a GPU for its duration; anywhere else this is the plain function.
_ON_GPU = zero_gpu(_call_pipeline)


def _claim_residency(backend: DiffusersBackend) -> None:
    """Make ``backend`` the process's one resident model, unloading the previous one."""
    global _resident
    with _resident_lock:
        previous = _resident() if _resident is not None else None
        _resident = weakref.ref(backend)
    if previous is not None and previous is not backend:
        previous.unload()


def _free_memory() -> None:
    import gc

    gc.collect()
    try:
        import torch
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:  # pragma: no cover
        pass
