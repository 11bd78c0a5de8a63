"""Generation below the service: a tiny randomly initialised inpainting pipeline built in code (no downloads),
driven through the real DiffusersBackend; generated layers, exact compositing, rollback, failures."""

from __future__ import annotations

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is a dev requirement (requirements-dev.txt)")

from pipeline.blobs import BlobStore  # noqa: E402
from pipeline.generate import operations as gops  # noqa: E402
from pipeline.generate.backends import backend_from_env  # noqa: E402
from pipeline.generate.base import GenerationError, GenerationParams, NoBackend  # noqa: E402
from pipeline.generate.diffusers_backend import DiffusersBackend  # noqa: E402
from pipeline.render import RenderError, render  # noqa: E402
from pipeline.state import EditState, EditStateError  # noqa: E402
from tests.conftest import small_photo  # noqa: E402

BUCKETS = [(64, 64), (96, 64), (64, 96)]
PARAMS = GenerationParams(prompt="an empty wall", seed=7, steps=2, cfg=5.0, sampler_name="euler", width=64, height=64)


pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory, tiny):
    folder = tmp_path_factory.mktemp("models") / "tiny-sd2-inpainting"
    tiny.save_pretrained(str(folder))
    return folder


@pytest.fixture
def backend(tiny):
    return DiffusersBackend("tiny-sd2-inpainting", pipeline=tiny)


@pytest.fixture
def blobs(tmp_path):
    return BlobStore(tmp_path / "blobs")


@pytest.fixture(scope="module")
def photo():
    return small_photo("astronaut", 160)


def _mask(photo, box=(40, 30, 100, 80)):
    x0, y0, x1, y1 = box
    m = np.zeros(photo.shape[:2], np.uint8)
    m[y0:y1, x0:x1] = 255
    return m


def test_inpaint_changes_only_the_masked_area_and_renders_from_stored_pixels(backend, blobs, photo):
    mask = _mask(photo)
    out = gops.inpaint(backend, photo, mask, PARAMS, operation="remove", buckets=BUCKETS, put=blobs.put_array)
    state = EditState().with_generated(out.layer)
    pixels = render(photo, state, blobs=blobs)
    changed = np.any(pixels != photo, axis=-1)
    assert not changed[mask == 0].any(), "a pixel outside the mask changed"
    assert changed[mask > 0].mean() > 0.5, "the masked area was not generated"
    recipe = out.layer.recipe
    assert recipe["seed"] == 7 and recipe["steps"] == 2 and recipe["backend"] == "diffusers"
    assert recipe["prompt"] == "an empty wall" and recipe["operation"] == "remove"
    assert blobs.exists(recipe["mask_digest"]) and blobs.exists(out.layer.pixels)


def test_same_seed_gives_the_same_pixels_and_another_seed_does_not(backend, blobs, photo):
    mask = _mask(photo)
    a = gops.inpaint(backend, photo, mask, PARAMS, operation="fill", buckets=BUCKETS, put=blobs.put_array)
    b = gops.inpaint(backend, photo, mask, PARAMS, operation="fill", buckets=BUCKETS, put=blobs.put_array)
    c = gops.inpaint(backend, photo, mask, PARAMS.replace(seed=8), operation="fill", buckets=BUCKETS,
                     put=blobs.put_array)
    assert a.layer.pixels == b.layer.pixels  # content-addressed: identical pixels, identical digest
    assert a.layer.pixels != c.layer.pixels
    assert not np.array_equal(a.patch, c.patch)


def test_a_generated_layer_round_trips_through_json_and_rerenders_bit_exact(backend, blobs, tmp_path, photo):
    out = gops.inpaint(backend, photo, _mask(photo), PARAMS, operation="fill", buckets=BUCKETS,
                       put=blobs.put_array)
    state = EditState().with_generated(out.layer).with_value("exposure", 15).with_value("saturation", -20)
    first = render(photo, state, blobs=blobs)
    again = EditState.from_json(state.to_json())
    assert again == state and again.key() == state.key()
    # a fresh store on the same folder (a restart) gives the same bytes; the model is not needed
    assert np.array_equal(render(photo, again, blobs=BlobStore(tmp_path / "blobs")), first)
    # edits keep the layer; the state without it is the plain photo
    assert state.with_value("contrast", 10).generated == state.generated
    assert np.array_equal(render(photo, EditState()), photo)
    assert "generated" not in EditState().with_value("exposure", 5).to_dict()  # old keys unchanged


def test_rendering_a_generated_layer_without_its_pixels_is_a_clear_error(backend, blobs, tmp_path, photo):
    out = gops.inpaint(backend, photo, _mask(photo), PARAMS, operation="fill", buckets=BUCKETS,
                       put=blobs.put_array)
    state = EditState().with_generated(out.layer)
    with pytest.raises(RenderError, match="blob store"):
        render(photo, state)
    with pytest.raises(RenderError, match="could not be composited"):
        render(photo, state, blobs=BlobStore(tmp_path / "empty"))
    with pytest.raises(EditStateError, match=r"generated\[0\]\.box"):
        EditState.from_dict({"generated": [{**out.layer.to_dict(), "box": [0, 0, 9999, 10]}]})


def test_expand_reaches_the_aspect_and_keeps_the_original_exactly(backend, blobs, photo):
    out = gops.expand(backend, photo, "16:9", PARAMS, buckets=BUCKETS, put=blobs.put_array)
    pixels = render(photo, EditState().with_generated(out.layer), blobs=blobs)
    h, w = pixels.shape[:2]
    assert h == photo.shape[0] and abs(w / h - 16 / 9) < 0.01
    ox, oy = out.layer.offset
    assert np.array_equal(pixels[oy:oy + photo.shape[0], ox:ox + photo.shape[1]], photo)
    assert pixels[:, :ox].std() > 0  # the new strip has content, not a flat fill


def test_regenerate_reruns_the_recipe_with_a_new_seed_on_the_same_area(backend, blobs, photo):
    first = gops.inpaint(backend, photo, _mask(photo), PARAMS, operation="remove", buckets=BUCKETS,
                         put=blobs.put_array)
    layers = EditState().with_generated(first.layer).generated
    params = GenerationParams(**{k: first.layer.recipe[k] for k in PARAMS.to_dict()}).replace(seed=99)
    again = gops.regenerate(backend, photo, layers, 0, params, get=blobs.get_array, put=blobs.put_array,
                            buckets=BUCKETS)
    assert again.layer.box == first.layer.box and again.layer.recipe["mask_digest"] == first.layer.recipe["mask_digest"]
    assert again.layer.recipe["seed"] == 99 and again.layer.pixels != first.layer.pixels


def test_text_to_image_makes_a_photo_of_the_asked_size(backend):
    pixels, info = gops.text_to_image(backend, PARAMS.replace(width=96, height=64))
    assert pixels.shape == (64, 96, 3) and pixels.dtype == np.uint8 and pixels.std() > 0
    assert info["device"] == "cpu"


def test_a_model_folder_loads_offline_and_unloads_when_idle(tiny_folder, photo):
    backend = DiffusersBackend(str(tiny_folder), idle_unload_s=0.3)
    try:
        assert not backend.loaded
        pixels, _ = gops.text_to_image(backend, PARAMS)
        assert pixels.shape == (64, 64, 3) and backend.loaded and backend.loads == 1
        deadline = time.monotonic() + 5
        while backend.loaded and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not backend.loaded, "the idle model was not unloaded"
        gops.text_to_image(backend, PARAMS)
        assert backend.loads == 2
    finally:
        backend.close()


def test_one_model_is_resident_at_a_time(tiny_folder):
    a = DiffusersBackend(str(tiny_folder), idle_unload_s=0)
    b = DiffusersBackend(str(tiny_folder), idle_unload_s=0)
    try:
        gops.text_to_image(a, PARAMS)
        assert a.loaded
        gops.text_to_image(b, PARAMS)
        assert b.loaded and not a.loaded
    finally:
        a.close()
        b.close()


def test_missing_models_fail_with_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: nothing may be downloaded
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(GenerationError) as missing_folder:
        DiffusersBackend(str(tmp_path / "no-such-model")).run(gops.GenerationJob("text_to_image", PARAMS))
    assert missing_folder.value.kind == "model_missing" and "does not exist" in str(missing_folder.value)
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(GenerationError, match="not a diffusers pipeline folder"):
        DiffusersBackend(str(tmp_path / "empty-model")).run(gops.GenerationJob("text_to_image", PARAMS))
    started = time.monotonic()
    with pytest.raises(GenerationError) as not_cached:
        DiffusersBackend("someone/not-cached-inpainting").run(gops.GenerationJob("text_to_image", PARAMS))
    assert not_cached.value.kind == "model_missing" and "never downloads" in str(not_cached.value)
    assert time.monotonic() - started < 30


def test_out_of_memory_is_reported_and_the_model_let_go(tiny, photo, blobs):
    def oom(*_):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    hook = tiny.unet.register_forward_pre_hook(oom)
    try:
        backend = DiffusersBackend("tiny", pipeline=tiny)
        with pytest.raises(GenerationError) as err:
            gops.inpaint(backend, photo, _mask(photo), PARAMS, operation="fill", buckets=BUCKETS,
                         put=blobs.put_array)
    finally:
        hook.remove()
    assert err.value.kind == "out_of_memory" and "ran out of memory" in str(err.value)
    assert "unchanged" in str(err.value)


def test_backend_selection_from_the_environment(tmp_path, monkeypatch):
    from pipeline.generate import runtime

    monkeypatch.setattr(runtime, "nvidia_present", lambda: False)
    assert isinstance(backend_from_env({}), NoBackend)
    none = backend_from_env({"ATELIER_GEN_BACKEND": "none"})
    with pytest.raises(GenerationError) as err:
        none.run(None)
    assert err.value.kind == "not_configured" and "ATELIER_GEN_BACKEND" in str(err.value)
    bad = backend_from_env({"ATELIER_GEN_BACKEND": "dall-e"})
    assert isinstance(bad, NoBackend) and "not a generation backend" in bad.status()["reason"]
    no_model = backend_from_env({"ATELIER_GEN_BACKEND": "diffusers"})
    assert isinstance(no_model, NoBackend) and "ATELIER_GEN_MODEL" in no_model.status()["reason"]
    d = backend_from_env({"ATELIER_GEN_BACKEND": "diffusers", "ATELIER_GEN_MODEL": str(tmp_path)})
    assert isinstance(d, DiffusersBackend) and not d.loaded  # nothing is loaded until a job comes
    space = backend_from_env({"ATELIER_GEN_BACKEND": "diffusers", "ATELIER_GEN_MODEL": "x", "SPACE_ID": "me/atelier"})
    assert isinstance(space, NoBackend) and "need a GPU" in space.status()["reason"]
    zero = backend_from_env({"ATELIER_GEN_BACKEND": "diffusers", "ATELIER_GEN_MODEL": "x", "SPACE_ID": "me/a",
                             "SPACES_ZERO_GPU": "true"})
    assert isinstance(zero, DiffusersBackend)  # ZeroGPU lends a GPU per call


def test_zero_gpu_wrapping_is_guarded(monkeypatch):
    from pipeline.generate import runtime

    def fn():
        return 1
    assert runtime.zero_gpu(fn) is fn  # not on a Space
    monkeypatch.setenv("SPACE_ID", "me/atelier")
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert runtime.on_zero_gpu() and runtime.zero_gpu(fn) is fn  # no `spaces` package here: run as is
    import sys
    import types

    lent = []

    def gpu(duration):  # what `spaces.GPU(duration=...)` does on a ZeroGPU Space: hold a GPU around the call
        def wrap(f):
            def held(*a, **kw):
                lent.append(duration)
                return f(*a, **kw)
            return held
        return wrap
    monkeypatch.setitem(sys.modules, "spaces", types.SimpleNamespace(GPU=gpu))
    wrapped = runtime.zero_gpu(fn)
    assert wrapped is not fn and wrapped() == 1 and lent == [runtime.ZEROGPU_DURATION_S]
