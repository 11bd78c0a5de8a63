"""The torch render path (pipeline/gpu.py) against the CPU renderer, on torch's CPU device:
every op within one 8-bit level, the LUT exact, the Gaussian blur bit-exact, the Studio picking it."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is a dev requirement (requirements-dev.txt)")

from pipeline import ops  # noqa: E402
from pipeline.gpu import TorchRenderer, best_renderer, fixed_gaussian_kernel  # noqa: E402
from pipeline.render import Renderer, SourceImage  # noqa: E402
from pipeline.state import EditState  # noqa: E402
from tests.conftest import small_photo  # noqa: E402


@pytest.fixture(scope="module")
def source():
    return SourceImage.from_array(small_photo("astronaut", 256))


@pytest.fixture(scope="module")
def renderers():
    cpu, dev = Renderer(0), TorchRenderer(0, device="cpu")
    dev.luts = cpu.luts = type(cpu.luts)(64 * 2**20)  # one LUT compile per state serves both paths
    return cpu, dev


def _diff(renderers, source, state):
    cpu, dev = renderers
    a, b = cpu.render(source, state), dev.render(source, state)
    assert a.shape == b.shape and b.dtype == np.uint8
    return np.abs(a.astype(np.int16) - b.astype(np.int16))


PIXEL = [o.name for o in ops.OPS.values() if o.kind == "pixel"]
SPATIAL = [o.name for o in ops.OPS.values() if o.kind == "spatial"]
# The device applies whatever LUT the registry's math compiles to, so pixel ops are checked in groups
# (every pixel op appears in one, at three quarters of its range each way); spatial ops one by one.
GROUPS = [PIXEL[i::4] for i in range(4)]


def _value(op: str, sign: int):
    """A strong value of ``op`` each way, for every kind of control (slider, hue, choice, curve points)."""
    o = ops.OPS[op]
    control = getattr(o, "control", "slider")
    if control == "points":
        return [[0, 0], [64, 40], [192, 215], [255, 255]] if sign > 0 else [[0, 20], [128, 140], [255, 235]]
    if control == "hue":
        return 200 if sign > 0 else 30
    if control == "choice":
        return o.max if sign > 0 else max(o.min, 1)
    return o.max * 3 // 4 if sign > 0 else o.min * 3 // 4


@pytest.mark.parametrize("group", range(len(GROUPS)))
@pytest.mark.parametrize("sign", [1, -1])
def test_every_pixel_op_is_within_one_level_of_the_cpu_render(renderers, source, group, sign):
    state = EditState().with_settings({op: _value(op, sign) for op in GROUPS[group]})
    d = _diff(renderers, source, state)
    assert d.max() <= 1, f"{GROUPS[group]} at {sign:+d}: max difference {d.max()} levels"


@pytest.mark.parametrize("op", SPATIAL)
@pytest.mark.parametrize("sign", [1, -1])
def test_every_spatial_op_is_within_one_level_of_the_cpu_render(renderers, source, op, sign):
    d = _diff(renderers, source, EditState().with_value(op, _value(op, sign)))
    assert d.max() <= 1, f"{op}: max difference {d.max()} levels"


def test_every_op_is_covered():
    assert sorted(sum(GROUPS, []) + SPATIAL) == sorted(o.name for o in ops.OPS.values()
                                                       if o.kind in ("pixel", "spatial"))
    assert {"clarity", "dehaze", "sharpen"} <= set(SPATIAL)


def test_the_lut_stack_is_bit_exact_and_layers_within_one_level(renderers, source):
    stack = EditState().with_settings({"exposure": 20, "contrast": 25, "highlights": -30, "shadows": 25,
                                       "temperature": 15, "saturation": 10, "vibrance": 20, "hue_orange": -10})
    assert _diff(renderers, source, stack).max() == 0
    layered = EditState.from_dict({
        "settings": {"exposure": 10, "clarity": 30, "dehaze": 20},
        "layers": [{"mask": {"type": "gradient", "start": [0.5, 0], "end": [0.5, 0.6]},
                    "settings": {"exposure": -25, "temperature": -10, "dehaze": 30}},
                   {"mask": {"type": "radial", "center": [0.5, 0.5], "radius": [0.3, 0.3]},
                    "settings": {"saturation": 30, "clarity": -40}, "opacity": 0.5, "feather": 20}]})
    d = _diff(renderers, source, layered)
    assert d.max() <= 1 and d.mean() < 0.01
    assert renderers[1].device_renders >= 2


def test_the_device_blur_is_bit_exact_with_opencv(renderers):
    img = np.random.default_rng(3).integers(0, 256, (90, 130, 3), np.uint8)
    dev = renderers[1]
    for sigma in (0.6, 1.6, 4.0):
        ours = dev.gaussian_blur(dev.upload(img), sigma).to(torch.uint8).numpy()
        assert np.array_equal(ours, cv2.GaussianBlur(img, (0, 0), sigma)), sigma
    assert fixed_gaussian_kernel(5, 0.6).sum() == 256


def test_states_the_device_path_does_not_know_render_on_the_cpu(renderers, source):
    dev = renderers[1]

    class Later(EditState):  # e.g. a field a later op family adds
        def to_dict(self):
            return {**super().to_dict(), "geometry": {"rotate": 90}}

    before = dev.cpu_fallbacks
    assert not dev.covers(Later(settings={"exposure": 10}))
    assert dev.covers(EditState(settings={"exposure": 10, "clarity": 5}))
    dev._render(source, Later(settings={"exposure": 10}), (source.height, source.width))
    assert dev.cpu_fallbacks == before + 1


def test_the_renderer_is_picked_by_device(monkeypatch):
    assert type(best_renderer(0, device="cpu")) is Renderer
    assert isinstance(best_renderer(0, device="torch-cpu"), TorchRenderer)
    monkeypatch.delenv("ATELIER_RENDER_DEVICE", raising=False)
    from pipeline.generate import runtime
    monkeypatch.setattr(runtime, "nvidia_present", lambda: False)
    assert type(best_renderer(0)) is Renderer  # no CUDA here: the CPU path, without importing anything heavy


def test_a_studio_on_the_torch_path_renders_what_the_cpu_studio_renders(tmp_path, monkeypatch, photo):
    from agent.service import Studio
    from tests.conftest import ScriptedJudge, ScriptedPlanner

    def studio(name):
        return Studio(database_url=f"sqlite:///{tmp_path / name}.db", sessions_dir=tmp_path / name,
                      planner=ScriptedPlanner(), judge=ScriptedJudge())

    monkeypatch.setenv("ATELIER_RENDER_DEVICE", "torch-cpu")
    with studio("torch") as dev:
        assert isinstance(dev.renderer, TorchRenderer)
        sid = dev.start_session(photo).id
        dev.send_message(sid, "exposure+20 clarity+30 saturation-10")
        on_device = dev.render(sid, long_side=None)
    monkeypatch.setenv("ATELIER_RENDER_DEVICE", "cpu")
    with studio("cpu") as cpu:
        assert type(cpu.renderer) is Renderer
        sid = cpu.start_session(photo).id
        cpu.send_message(sid, "exposure+20 clarity+30 saturation-10")
        assert np.abs(cpu.render(sid, long_side=None).astype(int) - on_device).max() <= 1
