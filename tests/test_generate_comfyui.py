"""The ComfyUI backend against a small HTTP server on 127.0.0.1 speaking ComfyUI's documented endpoints."""

from __future__ import annotations

import io
import time

import numpy as np
import pytest
from PIL import Image

from pipeline.blobs import BlobStore
from pipeline.generate import operations as gops
from pipeline.generate.base import GenerationError, GenerationParams
from pipeline.generate.comfyui import ComfyUIBackend, fill_workflow, load_workflow
from pipeline.render import render
from pipeline.state import EditState
from tests.conftest import free_port, small_photo
from tests.fake_comfyui_server import FakeComfyUI

PARAMS = GenerationParams(prompt="a lighthouse at dusk", negative_prompt="text", seed=1234, steps=20, cfg=6.5,
                          sampler_name="dpmpp_2m", scheduler="karras", denoise=1.0, width=96, height=64)


@pytest.fixture
def comfy():
    with FakeComfyUI(pending_polls=2) as server:
        yield server


def test_text_to_image_queues_the_workflow_polls_history_and_fetches_the_image(comfy):
    backend = ComfyUIBackend(comfy.base_url, model="sd_xl_base_1.0.safetensors", poll_s=0.01)
    pixels, info = gops.text_to_image(backend, PARAMS)
    expected = np.random.default_rng(1234).integers(0, 256, (64, 96, 3), dtype=np.uint8)
    assert np.array_equal(pixels, expected)
    sent = comfy.prompts[-1]["prompt"]
    sampler = next(n["inputs"] for n in sent.values() if n["class_type"] == "KSampler")
    assert sampler["seed"] == 1234 and sampler["steps"] == 20 and sampler["cfg"] == 6.5
    assert sampler["sampler_name"] == "dpmpp_2m" and sampler["scheduler"] == "karras"
    loader = next(n["inputs"] for n in sent.values() if n["class_type"] == "CheckpointLoaderSimple")
    assert loader["ckpt_name"] == "sd_xl_base_1.0.safetensors"
    texts = {n["inputs"]["text"] for n in sent.values() if n["class_type"] == "CLIPTextEncode"}
    assert texts == {"a lighthouse at dusk", "text"}
    assert comfy.polls[info["prompt_id"]] == 3  # two "still running" answers, then the result
    assert info["workflow_id"] == "txt2img" and info["folder_type"] == "output" and info["filename"].endswith(".png")


def test_inpaint_uploads_image_and_mask_and_keeps_pixels_outside_the_mask(comfy, tmp_path):
    photo = small_photo("coffee", 120)
    mask = np.zeros(photo.shape[:2], np.uint8)
    mask[20:60, 30:90] = 255
    blobs = BlobStore(tmp_path / "blobs")
    backend = ComfyUIBackend(comfy.base_url, model="inpaint.safetensors", poll_s=0.01)
    out = gops.inpaint(backend, photo, mask, PARAMS, operation="remove", buckets=[(64, 64), (96, 64)],
                       put=blobs.put_array)
    assert len(comfy.inputs) == 2  # image and mask went through /upload/image
    names = sorted(comfy.inputs)
    uploaded_mask = np.asarray(Image.open(io.BytesIO(comfy.inputs[[n for n in names if "mask" in n][0]])).convert("L"))
    assert uploaded_mask.max() == 255 and uploaded_mask.min() == 0
    pixels = render(photo, EditState().with_generated(out.layer), blobs=blobs)
    changed = np.any(pixels != photo, axis=-1)
    assert not changed[mask == 0].any() and changed[mask > 0].mean() > 0.5
    assert out.layer.recipe["backend"] == "comfyui" and out.layer.recipe["model"] == "inpaint.safetensors"
    assert out.info["prompt_id"] and out.info["workflow_id"] == "inpaint"


def test_a_server_that_is_down_answers_at_once_with_a_clear_message():
    backend = ComfyUIBackend(f"http://127.0.0.1:{free_port()}", model="x.safetensors", request_timeout_s=2)
    started = time.monotonic()
    with pytest.raises(GenerationError) as err:
        gops.text_to_image(backend, PARAMS)
    assert err.value.kind == "server_down" and "not answering" in str(err.value)
    assert time.monotonic() - started < 3
    assert backend.status()["ready"] is False


def test_an_execution_error_and_a_refused_workflow_are_reported(comfy, tmp_path):
    backend = ComfyUIBackend(comfy.base_url, model="x.safetensors", poll_s=0.01)
    comfy.fail_next = True
    with pytest.raises(GenerationError, match="CUDA out of memory"):
        gops.text_to_image(backend, PARAMS)
    bad = tmp_path / "txt2img.json"
    bad.write_text('{"1": {"class_type": "NoSuchNode", "inputs": {}}}')
    with pytest.raises(GenerationError, match="HTTP 400"):
        ComfyUIBackend(comfy.base_url, model="x", workflows=tmp_path).run(
            gops.GenerationJob("text_to_image", PARAMS))
    assert backend.status()["ready"] is True


def test_workflow_templates_fill_typed_placeholders():
    wf = fill_workflow(load_workflow("txt2img"), {**PARAMS.to_dict(), "model": "m.safetensors"})
    latent = next(n["inputs"] for n in wf.values() if n["class_type"] == "EmptyLatentImage")
    assert latent["width"] == 96 and isinstance(latent["width"], int)
    assert "{{" not in str(wf)
    with pytest.raises(GenerationError, match="'image'"):
        fill_workflow(load_workflow("inpaint"), {**PARAMS.to_dict(), "model": "m"})
