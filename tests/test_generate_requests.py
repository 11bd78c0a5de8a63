"""Generative chat requests, the generation profiles and the generated-region check."""

from __future__ import annotations


import numpy as np
import pytest
import yaml

from agent.judging.embedded import EmbeddedJudge
from agent.judging.generative import assess_generated
from agent.conversation.generative import parse_generative
from profiles import ProfileError
from profiles.generation import (GENERATION_DIR, _load, check_all_generation_profiles, load_generation_profile)
from tests.conftest import small_photo


@pytest.mark.parametrize("text, kind, extra", [
    ("remove the selection", "remove", {"target": "selection"}),
    ("Please erase the person on the left", "remove", {"target": "subject"}),
    ("get rid of the tourists in the background", "remove", {"target": "subject"}),
    ("delete the sign", "remove", {"target": "", "described": "sign"}),
    ("fill the selection with a wooden bench", "fill", {"prompt": "a wooden bench", "target": "selection"}),
    ("add a sailing boat to the selection", "fill", {"prompt": "a sailing boat"}),
    ("expand to 16:9", "expand", {"aspect": "16:9"}),
    ("extend the canvas to a square", "expand", {"aspect": "1:1"}),
    ("outpaint to 4x5", "expand", {"aspect": "4:5"}),
    ("widen it", "expand", {"aspect": None}),
    ("regenerate", "regenerate", {}),
    ("try again with seed 42 and 40 steps", "regenerate", {"seed": 42, "overrides": {"steps": 40}}),
    ("another take, cfg 5.5", "regenerate", {"overrides": {"cfg": 5.5}}),
    ("create a photo of a red fox in snow", "create", {"prompt": "a red fox in snow"}),
    ("generate an image of a lighthouse at dusk", "create", {"prompt": "a lighthouse at dusk"}),
])
def test_generative_requests_are_recognised(text, kind, extra):
    request = parse_generative(text)
    assert request is not None and request.kind == kind
    for key, value in extra.items():
        assert getattr(request, key) == value, key


@pytest.mark.parametrize("text", ["remove the haze", "get rid of the colour cast", "remove the vignette",
                                  "make it warmer", "undo", "remove everything", "brighten the selection",
                                  "take out the yellow", "/approve", "more contrast please",
                                  "add more contrast to the selection", "add warmth to the selection",
                                  "add some vibrance to the selection", "remove the grain from the selection"])
def test_edits_stay_with_the_edit_planner(text):
    assert parse_generative(text) is None


def test_every_generation_profile_loads_and_models_find_theirs():
    assert set(check_all_generation_profiles()) >= {"sdxl_inpainting", "flux_fill", "sd2_inpainting", "default"}
    assert load_generation_profile("diffusers/stable-diffusion-xl-1.0-inpainting-0.1").name == "sdxl_inpainting"
    assert load_generation_profile("/models/FLUX.1-Fill-dev").architecture == "dit"
    sd2 = load_generation_profile("stabilityai/stable-diffusion-2-inpainting")
    assert sd2.buckets[0] == (512, 512) and sd2.signal("seam")["new_seed"] is True
    assert "{" not in sd2.prompt_for("remove", scene="a beach")
    unknown = load_generation_profile("someone/odd-model")
    assert unknown.is_fallback and "odd-model" in unknown.warning


def test_a_broken_generation_profile_is_refused_with_the_field_named(tmp_path):
    data = yaml.safe_load((GENERATION_DIR / "sd2_inpainting.yaml").read_text())
    data["generation"]["defaults"]["steps"] = 500
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError, match=r"generation\.defaults\.steps"):
        _load(bad)
    data["generation"]["defaults"]["steps"] = 20
    data["generation"]["resolution_buckets"].append([500, 500])
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError, match="multiple of 8"):
        _load(bad)
    del data["generation"]["quirks"]
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(ProfileError, match="quirks"):
        _load(bad)


def _scene():
    photo = small_photo("coffee", 200)
    mask = np.zeros(photo.shape[:2], np.uint8)
    mask[50:110, 60:140] = 255
    return photo, mask


def test_a_blended_fill_passes_the_generated_region_check():
    import cv2
    photo, mask = _scene()
    after = photo.copy()
    # a plausible fill: the surroundings blurred into the hole
    after[mask > 0] = cv2.GaussianBlur(photo, (0, 0), 6)[mask > 0]
    report = assess_generated(photo, after, mask, operation="remove")
    assert report.preservation == 1.0 and "changed_outside_mask" not in report.diagnoses
    assert report.score > 0.75


def test_the_check_catches_changes_outside_seams_and_colour_mismatch():
    photo, mask = _scene()
    after = photo.copy()
    after[mask > 0] = (250, 20, 200)  # a flat magenta block: a hard seam and the wrong colour
    after[0:5, 0:5] = 0               # and pixels outside the mask touched
    report = EmbeddedJudge().assess_generated(photo, after, mask, operation="remove")
    assert {"changed_outside_mask", "seam", "colour_mismatch"} <= set(report.diagnoses)
    assert report.preservation < 1.0 and report.score < 0.5
    assert "outside" in report.assessment
