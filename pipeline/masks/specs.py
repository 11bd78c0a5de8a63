"""Mask specs: validation, canonical form and the JSON schema a model is asked to follow.

A spec is a small JSON object inside an EditState layer (see :mod:`pipeline.masks` for the
types). Each type is a pydantic model (:mod:`pipeline.masks.spec_models`, built on the first spec
checked), chosen by its ``type``: strict (``"0.5"`` and ``true`` are not numbers, nor are NaN and
infinity), ranged, with its defaults; an unknown field is an error, and combinations nest at most
8 deep. :func:`normalize_mask_spec` is the one gate: it names the bad field of a malformed spec
(``mask.masks[1].low: 1.5 is outside 0..1``) and returns canonical specs (defaults filled, numbers
rounded, a colour ``band`` read as its ``hue``), which compare equal when they describe the same
mask. :func:`mask_json_schema` is derived from the same models.
"""

from __future__ import annotations

import copy
from typing import Any


class MaskSpecError(ValueError):
    """A malformed mask spec: the message names the bad field."""


CONTENT_TYPES = ("face", "skin", "sky", "subject")
#: Masks that refer to pixels a person selected (stored blobs), see Studio.select.
SELECTION_TYPES = ("painted", "selection")
#: Every mask type, in the order they are listed to a model and in messages (the models' own order).
MASK_TYPES = ("luminance", "color", "shade", "spot", "gradient", "radial") + CONTENT_TYPES + ("invert", "intersect", "union") \
    + SELECTION_TYPES


def normalize_mask_spec(spec: Any, where: str = "mask") -> dict:
    """Validate ``spec`` and return it in canonical form (defaults filled, rounded).

    Canonical specs compare equal when they describe the same mask, so a
    planner that says "the sky" twice edits one layer, not two. A malformed spec
    raises :class:`MaskSpecError` naming its bad field(s) from ``where``.
    """
    from pipeline.masks.spec_models import validate  # pydantic and the models: only once a spec is met

    mask, problems = validate(spec, where)
    if problems:
        raise MaskSpecError("; ".join(problems))
    return mask


def mask_json_schema() -> dict:
    """JSON Schema of a mask spec (recursive for combinations): one flat object whose properties are
    every type's fields, read from the models."""
    from pipeline.masks.spec_models import schema

    return copy.deepcopy(schema())
