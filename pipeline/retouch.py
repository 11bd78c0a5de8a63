"""The retouch stage: healing and portrait ops of an EditState, run first on the original's pixels.

``render(original, state)`` stays a pure function: every heal is recomputed
from the original and the state (dust and blemish detection, region fills,
red-eye, skin smoothing, teeth, eyes), deterministically, at the render's
size; the :class:`pipeline.render.Renderer` caches the result per
(original, retouch part of the state, size). Painted regions come from the
blob store through their mask specs, so a rollback to an older state refers
to exactly the old pixels.

Order (a retoucher's): dust, blemishes, removals (each ``remove`` layer in
layer order), red eye, even skin tone, skin smoothing, teeth, eyes. Tone and
colour then run on the retouched image.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping

import cv2
import numpy as np

from pipeline import healing, ops, portrait
from pipeline.state import EditState

#: Global retouch ops in the order they run.
ORDER = ("dust_removal", "blemish_removal", "red_eye", "even_skin_tone", "skin_smoothing",
         "teeth_whitening", "eye_brightening")
#: Ops that need faces (and say so when none is found).
NEEDS_FACE = {"blemish_removal", "red_eye", "even_skin_tone", "skin_smoothing", "teeth_whitening",
              "eye_brightening"}


@dataclass
class RetouchReport:
    """What the retouch stage did, for honest replies and the judge's checks."""

    spots: int = 0          # dust spots healed
    blemishes: int = 0      # blemishes healed
    red_eyes: int = 0       # red pupils neutralised
    regions: int = 0        # removal layers filled
    notes: list[str] = field(default_factory=list)   # sentences for the person ("I couldn't find ...")

    def to_dict(self) -> dict:
        return {"spots": self.spots, "blemishes": self.blemishes, "red_eyes": self.red_eyes,
                "regions": self.regions, "notes": list(self.notes)}


def retouch_settings(state: EditState) -> dict[str, int]:
    """The global retouch ops of ``state`` that are on."""
    return {k: v for k, v in state.settings.items() if v and ops.OPS[k].kind == "retouch"}


def removal_layers(state: EditState) -> list:
    """Local layers with a ``remove`` value, in layer order."""
    return [layer for layer in state.layers if layer.settings.get("remove")]


def retouch_key(state: EditState) -> str | None:
    """A stable key of the retouch part of ``state`` (None: nothing to retouch)."""
    settings = retouch_settings(state)
    layers = [(l.mask, l.settings["remove"], l.feather, l.opacity) for l in removal_layers(state)]
    if not settings and not layers:
        return None
    return json.dumps([sorted(settings.items()), layers], sort_keys=True, separators=(",", ":"))


def apply_retouch(img: np.ndarray, state: EditState, *, features: Callable[[], portrait.Features],
                  skin: Callable[[], np.ndarray],
                  region: Callable[[Mapping, int], np.ndarray],
                  dust: Callable[[], healing.DustMap] | None = None) -> tuple[np.ndarray, RetouchReport]:
    """Run the retouch ops of ``state`` on ``img`` (uint8 RGB, the original at the render size).

    ``features()``: the faces, eyes and mouths of the original (fractions);
    ``skin()``: the skin mask at ``img``'s size; ``region(mask_spec, feather)``:
    a layer's mask at ``img``'s size; ``dust()``: :func:`pipeline.healing.dust_map`
    of ``img`` (a caller's cached copy; computed here when None). Each is called only when an op needs it.
    """
    settings = retouch_settings(state)
    report = RetouchReport()
    out = img
    h, w = img.shape[:2]
    found = features() if NEEDS_FACE & set(settings) else None
    if settings.get("dust_removal"):
        # Dust runs first, on ``img`` itself: a kept dust map of it applies.
        out, report.spots = healing.heal_dust(out, settings["dust_removal"], dust() if dust else None)
    if settings.get("blemish_removal") and found is not None and found.faces:
        spots = healing.find_blemishes(out, settings["blemish_removal"], skin(), [f.box for f in found.faces],
                                       keep_out=portrait.feature_mask((h, w), found))
        if spots.any():
            report.blemishes = int(cv2.connectedComponents((spots > 0).astype(np.uint8))[0] - 1)
            out = healing.heal_spots(out, spots)
    for layer in removal_layers(state):
        mask = region(layer.mask, layer.feather)
        if layer.opacity != 1.0:
            mask = mask * np.float32(layer.opacity)
        if cv2.minMaxLoc(mask)[1] <= 0.5:  # one fast pass over the frame (nothing more than half on: no region)
            continue
        out = healing.remove_region(out, mask, strength=layer.settings["remove"] / 100.0)
        report.regions += 1
    if settings.get("red_eye") and found is not None and found.eyes:
        eyes_px = [(cx * w, cy * h, max(2.0, 1.6 * r * w)) for cx, cy, r in found.eyes]
        out, report.red_eyes = healing.fix_red_eye(out, eyes_px, settings["red_eye"])
    face_px = portrait._face_scale(found, w) if found is not None else 0.1 * w
    if found is not None and found.faces:
        if settings.get("even_skin_tone") or settings.get("skin_smoothing"):
            # Skin only: eyes, brows and lips keep their detail and colour.
            bare = skin() * portrait.near_faces((h, w), found) * (1.0 - portrait.feature_mask((h, w), found))
        if settings.get("even_skin_tone"):
            out = portrait.even_skin_tone(out, bare, settings["even_skin_tone"], face_px)
        if settings.get("skin_smoothing"):
            out = portrait.smooth_skin(out, bare, settings["skin_smoothing"], face_px)
        if settings.get("teeth_whitening"):
            out = portrait.whiten_teeth(out, found, settings["teeth_whitening"])
        if settings.get("eye_brightening"):
            out = portrait.brighten_eyes(out, found, settings["eye_brightening"])
    if found is not None:
        report.notes += portrait.describe_findings(found, NEEDS_FACE & set(settings))
        if settings.get("red_eye") and found.eyes and not report.red_eyes:
            report.notes.append("I found the eyes but no red pupils, so there was no red eye to fix.")
        if settings.get("blemish_removal") and found.faces and not report.blemishes:
            report.notes.append("I found no blemishes that stand out from the skin, so the skin was left as it was.")
    if settings.get("dust_removal") and not report.spots:
        report.notes.append("I found no dust spots on smooth areas, so nothing was healed.")
    return out, report
