"""The GPU render path: the same renders as :mod:`pipeline.render`, with the per-pixel work in torch.

:class:`TorchRenderer` is a :class:`~pipeline.render.Renderer` (same caches,
same LUT compiler, same masks, same generated-layer compositing) whose
``_render`` runs on a torch device:

- the fused 3D LUT is applied on the device: every pixel's red/blue position
  in the LUT grid (exact along green) is looked up and interpolated
  bilinearly, with the same 1/32 fixed-point positions and the same 16-bit
  rounding as the CPU's ``cv2.remap`` — trilinear interpolation of the 3D
  LUT, done as a gather;
- local layers blend through their soft masks (built once on the CPU and
  cached, uploaded as float) with the CPU's rounding;
- clarity and dehaze compute their smooth large-radius maps on a small copy
  (area-downscaled on the device by two exact area-weight matrix products,
  then the very same OpenCV code on the CPU) and do every full-resolution
  step on the device; sharpen is a separable Gaussian on the device.

A state with anything else (an op kind or a state field this module does not
know, such as geometry added later) renders through the CPU path, so the GPU
path can only ever be faster, never different. Every op stays within one
8-bit level of the CPU render (tests/test_gpu_render.py checks it on torch's
CPU device; ``python -m pipeline.bench --device cuda`` measures it on a GPU).

:func:`best_renderer` picks this path when CUDA is present (and torch is
installed); ``ATELIER_RENDER_DEVICE=cpu`` keeps the CPU path.
"""

from __future__ import annotations

import os
import threading
from cachetools import LRUCache
from typing import Any, Mapping

import cv2
import numpy as np

from pipeline import ops
from pipeline.render import (COORD_TABLE, LUT_POINTS, Renderer, SourceImage, pixel_settings, spatial_settings)
from pipeline.spatial import MIDTONES, CLARITY_SIDE, DEHAZE_SIDE, transmission
from pipeline.state import EditState

RENDER_DEVICE_ENV = "ATELIER_RENDER_DEVICE"
_STATE_FIELDS = {"settings", "layers", "generated"}
_KINDS = {"pixel", "spatial"}


def cuda_available() -> bool:
    """CUDA present (and torch installed): checked without importing torch when there is no NVIDIA driver."""
    from pipeline.generate.runtime import nvidia_present

    if not nvidia_present():
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def best_renderer(max_cache_bytes: int, blobs=None, device: str | None = None) -> Renderer:
    """``TorchRenderer`` on CUDA when it is there, else the CPU ``Renderer``.

    ``device`` (default: env ATELIER_RENDER_DEVICE, else "auto"): "auto", "cpu" (the OpenCV path),
    "cuda", "mps", or "torch-cpu" (the torch path on the CPU: slow, for checking the GPU path anywhere).
    """
    wanted = (device or os.environ.get(RENDER_DEVICE_ENV) or "auto").lower()
    if wanted == "cpu" or (wanted == "auto" and not cuda_available()):
        return Renderer(max_cache_bytes=max_cache_bytes, blobs=blobs)
    target = {"auto": "cuda", "torch-cpu": "cpu"}.get(wanted, wanted)
    return TorchRenderer(max_cache_bytes=max_cache_bytes, blobs=blobs, device=target)


def upgrade_renderer(renderer: Renderer, max_cache_bytes: int, device: str | None = None) -> Renderer:
    """``renderer`` itself, or a TorchRenderer with the same blob store when the GPU path is picked."""
    picked = best_renderer(max_cache_bytes, blobs=renderer.blobs, device=device)
    return renderer if type(picked) is Renderer else picked


def fixed_gaussian_kernel(ksize: int, sigma: float) -> np.ndarray:
    """OpenCV's bit-exact 8-bit Gaussian kernel: integer taps summing to 256.

    ``cv2.GaussianBlur`` on uint8 filters in fixed point (taps x 256, rows then
    columns, one rounding at the end); the taps are read back from OpenCV itself
    by blurring a single bright column, so the device blur is bit-exact.
    """
    img = np.zeros((5, 4 * ksize), np.uint8)
    c = 2 * ksize
    img[:, c] = 255
    row = cv2.GaussianBlur(img, (ksize, ksize), sigma)[2].astype(np.int64)
    half = ksize // 2
    taps = row[c - half:c + half + 1].copy()
    taps[half] = 0
    taps[half] = 256 - taps.sum()
    return taps


def area_matrix(src: int, dst: int):
    """(dst, src) float64 weights of an area (box) resample, as OpenCV's INTER_AREA downscale."""
    scale = src / dst
    m = np.zeros((dst, src), np.float64)
    for i in range(dst):
        a, b = i * scale, (i + 1) * scale
        lo, hi = int(np.floor(a)), min(int(np.ceil(b)), src)
        for j in range(lo, hi):
            m[i, j] = min(b, j + 1) - max(a, j)
        m[i] /= m[i].sum()
    return m


class TorchRenderer(Renderer):
    """A Renderer whose pixel work runs in torch on ``device`` ("cuda", "mps" or "cpu")."""

    def __init__(self, max_cache_bytes: int = 768 * 2**20, blobs=None, device: str = "cuda"):
        super().__init__(max_cache_bytes=max_cache_bytes, blobs=blobs)
        import torch

        self.torch = torch
        self.device = torch.device(device)
        t = torch.from_numpy(COORD_TABLE.reshape(256, 3).copy()).to(self.device)
        self._rpos, self._gpos, self._bpos = t[:, 0].contiguous(), t[:, 1].contiguous(), t[:, 2].contiguous()
        self._midtones = torch.from_numpy(MIDTONES.reshape(256).copy()).to(self.device)
        self._gray = torch.tensor([4899, 9617, 1868], dtype=torch.int32, device=self.device)
        self._tensors: LRUCache = LRUCache(maxsize=12)
        self._area: dict = {}
        self._lock = threading.Lock()
        #: States the device path handled / sent to the CPU path (for the bench and tests).
        self.device_renders = 0
        self.cpu_fallbacks = 0

    # -- what the device path covers ---------------------------------------------------------
    @staticmethod
    def covers(state: EditState) -> bool:
        if set(state.to_dict()) - _STATE_FIELDS:
            return False
        names = list(state.settings) + [n for layer in state.layers for n in layer.settings]
        return all(ops.OPS[n].kind in _KINDS for n in names if n in ops.OPS) and all(n in ops.OPS for n in names)

    def _render(self, source: SourceImage, state: EditState, size: tuple[int, int], frame=None,
                draft: bool = False) -> np.ndarray:
        # (a draft is exact here: the device's LUT pass costs the same either way)
        if state.is_identity or frame is not None or not self.covers(state):
            if not state.is_identity:
                self.cpu_fallbacks += 1
            return super()._render(source, state, size, frame, draft)
        self.device_renders += 1
        out = self.render_tensor(source, state, size)
        return out.cpu().numpy()

    # -- device helpers ----------------------------------------------------------------------
    def _cached(self, key, make):
        with self._lock:
            hit = self._tensors.get(key)
            if hit is not None:
                return hit
        value = make()
        with self._lock:
            self._tensors[key] = value
        return value

    def upload(self, img: np.ndarray):
        arr = np.ascontiguousarray(img)
        if not arr.flags.writeable:
            arr = arr.copy()  # torch wants writable memory (cached renders and originals are read-only)
        return self.torch.from_numpy(arr).to(self.device, non_blocking=True)

    def _device_base(self, source: SourceImage, size):
        return self._cached(("base", source.digest, size), lambda: self.upload(source.resized(size)))

    def _lut(self, *stages: Mapping[str, int]):
        key = ("lut",) + tuple(tuple(sorted(s.items())) for s in stages)
        return self._cached(key, lambda: self.upload(self.table(*stages)).reshape(-1, 3))

    def apply_lut(self, lut_flat, img):
        """uint8 (H, W, 3) through a flattened float32 LUT image (0..255), as ``cv2.remap`` + ``convertScaleAbs``
        do it (the same four weights, summed in the same order: bit-exact on torch's CPU device)."""
        torch = self.torch
        r, g, b = img[..., 0].long(), img[..., 1].long(), img[..., 2].long()
        x = torch.round((self._rpos[r] + self._gpos[g]) * 32.0).long()   # cv2.convertMaps: 1/32 fixed point
        y = torch.round(self._bpos[b] * 32.0).long()
        xi, yi = x >> 5, y >> 5
        fx = ((x & 31).float() / 32.0).unsqueeze(-1)
        fy = ((y & 31).float() / 32.0).unsqueeze(-1)
        width = LUT_POINTS * 256
        x0, x1 = xi.clamp(0, width - 1), (xi + 1).clamp(0, width - 1)
        y0, y1 = yi.clamp(0, LUT_POINTS - 1), (yi + 1).clamp(0, LUT_POINTS - 1)
        v00, v01 = lut_flat[y0 * width + x0], lut_flat[y0 * width + x1]
        v10, v11 = lut_flat[y1 * width + x0], lut_flat[y1 * width + x1]
        v = v00 * ((1 - fx) * (1 - fy)) + v01 * (fx * (1 - fy)) + v10 * ((1 - fx) * fy) + v11 * (fx * fy)
        return torch.round(v).clamp(0, 255).to(torch.uint8)

    def blend(self, under, over, mask):
        """cv2.blendLinear(under, over, 1 - m, m) on the device."""
        m = mask.unsqueeze(-1)
        mixed = (under.float() * (1 - m) + over.float() * m) / (1.0 + 1e-5)
        return self.torch.round(mixed).clamp(0, 255).to(self.torch.uint8)

    def _mask(self, source: SourceImage, layer, size):
        key = ("mask", source.digest, repr(sorted(layer.mask.items())), size, layer.feather, layer.opacity)

        def make():
            m = self.mask(source, layer.mask, size, layer.feather)
            if layer.opacity != 1.0:
                m = m * np.float32(layer.opacity)
            return self.upload(m.astype(np.float32))
        return self._cached(key, make)

    # -- spatial ops on the device -------------------------------------------------------------
    def gray(self, img):
        """cv2.COLOR_RGB2GRAY's fixed-point luma (uint8 -> int64 0..255)."""
        return (img.int() * self._gray).sum(-1).add(8192).bitwise_right_shift(14).long()

    def downscale(self, img, side: int) -> np.ndarray:
        """INTER_AREA-like downscale to long side ``side`` on the device; uint8 numpy (small)."""
        h, w = img.shape[:2]
        scale = side / max(h, w)
        if scale >= 1:
            return img.cpu().numpy()
        dh, dw = max(1, round(h * scale)), max(1, round(w * scale))
        key = (h, w, dh, dw)
        if key not in self._area:
            self._area[key] = (self.upload(area_matrix(h, dh).astype(np.float32)),
                               self.upload(area_matrix(w, dw).astype(np.float32)))
        ah, aw = self._area[key]
        x = img.float().permute(2, 0, 1)                    # (3, H, W)
        small = ah @ x @ aw.T                              # (3, dh, dw)
        return self.torch.round(small).clamp(0, 255).to(self.torch.uint8).permute(1, 2, 0).cpu().numpy()

    def upscale(self, small: np.ndarray, size):
        """cv2.INTER_LINEAR upscale (half-pixel centres) of a small float map to ``size`` on the device."""
        t = self.upload(small.astype(np.float32))
        t = t.unsqueeze(0).unsqueeze(0) if t.ndim == 2 else t.permute(2, 0, 1).unsqueeze(0)
        up = self.torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)
        return up[0, 0] if small.ndim == 2 else up[0].permute(1, 2, 0)

    def clarity(self, img, value: float):
        small = self.downscale(img, CLARITY_SIDE)
        blur = cv2.GaussianBlur(small, (0, 0), 0.02 * max(small.shape[:2]))
        blur_up = self.torch.round(self.upscale(blur, tuple(img.shape[:2])))  # cv2 resizes uint8 to uint8
        amount = (self._midtones[self.gray(img)] * np.float32(value / 100.0 * 0.8)).unsqueeze(-1)
        pushed = (img.float() * (1.0 + amount) - blur_up * amount) / (1.0 + 1e-5)
        return self.torch.round(pushed).clamp(0, 255).to(self.torch.uint8)

    def dehaze(self, img, value: float):
        small = self.downscale(img, DEHAZE_SIDE)
        t, airlight = transmission(small)
        a = abs(value) / 100.0
        if value > 0:
            gain_small = 1.0 / np.maximum(1.0 - a * (1.0 - t), 0.3)
        else:
            gain_small = 1.0 - 0.6 * a * (1.2 - t) / 1.2
        gain = self.upscale(gain_small.astype(np.float32), tuple(img.shape[:2])).unsqueeze(-1)
        veil = self.upload(np.rint(airlight * 255.0).astype(np.float32))
        mixed = (img.float() * gain + veil * (1.0 - gain)) / (1.0 + 1e-5)
        return self.torch.round(mixed).clamp(0, 255).to(self.torch.uint8)

    def gaussian_blur(self, img, sigma: float):
        """cv2.GaussianBlur(img, (0, 0), sigma) of uint8 RGB, bit-exact (integer taps; sums stay below 2**24,
        so float32 convolutions are exact — TF32 is switched off for them)."""
        torch = self.torch
        ksize = int(round(sigma * 3 * 2 + 1)) | 1                # OpenCV's kernel size for 8-bit images
        key = (ksize, float(sigma))
        if key not in self._area:
            self._area[key] = self.upload(fixed_gaussian_kernel(ksize, sigma).astype(np.float32))
        k = self._area[key]
        x = img.float().permute(2, 0, 1).unsqueeze(1)       # (3, 1, H, W)
        pad = ksize // 2
        with torch.backends.cudnn.flags(enabled=True, allow_tf32=False):
            x = torch.nn.functional.pad(x, (pad, pad, 0, 0), mode="reflect")   # reflect = BORDER_REFLECT_101
            x = torch.nn.functional.conv2d(x, k.view(1, 1, 1, -1))
            x = torch.nn.functional.pad(x, (0, 0, pad, pad), mode="reflect")
            x = torch.nn.functional.conv2d(x, k.view(1, 1, -1, 1))
        return torch.floor((x[:, 0].permute(1, 2, 0) + 32768.0) / 65536.0)

    def sharpen(self, img, value: float):
        torch = self.torch
        sigma = max(0.6, max(img.shape[:2]) / 2400.0)
        if value > 0:
            a, s = value / 100.0 * 1.5, sigma
        else:
            a, s = -value / 100.0, sigma * 2.5
        blur = self.gaussian_blur(img, s)
        w1, w2 = (1.0 + a, -a) if value > 0 else (1.0 - a, a)
        return torch.round(img.float() * w1 + blur * w2).clamp(0, 255).to(torch.uint8)

    def spatial(self, img, settings: Mapping[str, int]):
        for name in ("dehaze", "clarity", "sharpen"):
            v = settings.get(name, 0)
            if v:
                img = getattr(self, name)(img, v)
        return img

    # -- the render ------------------------------------------------------------------------------
    def render_tensor(self, source: SourceImage, state: EditState, size: tuple[int, int]):
        """The render as a uint8 (H, W, 3) tensor on the device (no download: for batches)."""
        base = self._device_base(source, size)
        g_pixel = pixel_settings(state.settings)
        out = self.apply_lut(self._lut(g_pixel), base) if g_pixel else base
        masks: list[Any] = []
        fresh = True
        for layer in state.layers:
            if not layer.settings:
                masks.append(None)
                continue
            mask = self._mask(source, layer, size)
            masks.append(mask)
            l_pixel = pixel_settings(layer.settings)
            if not l_pixel:
                continue
            if fresh:
                lut = self._lut(g_pixel, l_pixel) if g_pixel else self._lut(l_pixel)
                layer_img = self.apply_lut(lut, base)
            else:
                layer_img = self.apply_lut(self._lut(l_pixel), out)
            out = self.blend(out, layer_img, mask)
            fresh = False
        out = self.spatial(out, spatial_settings(state.settings))
        for layer, mask in zip(state.layers, masks):
            l_spatial = spatial_settings(layer.settings)
            if l_spatial and mask is not None:
                out = self.blend(out, self.spatial(out, l_spatial), mask)
        return out

    def render_batch(self, sources, states, long_side: int | None = None) -> list:
        """Render many photos on the device, keeping results there; returns uint8 tensors."""
        outs = []
        for source, state in zip(sources, states):
            source = self.with_generated(source, state)
            if self.covers(state) and self.frame(source, state) is None:
                outs.append(self.render_tensor(source, state, source.size_for(long_side)))
            else:  # geometry, finishing, retouch: the CPU path, uploaded
                outs.append(self.upload(self.render(source, state, long_side)))
        if self.device.type == "cuda":
            self.torch.cuda.synchronize()
        return outs
