"""Render the before/after examples shown in the README: ``python scripts/render_examples.py``.

Each example is a photo from scikit-image's bundled data and an EditState;
the output is a side-by-side JPEG (original left, rendered right) in
docs/examples/.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from skimage import data

from pipeline.imageio import save_image
from pipeline.render import Renderer, SourceImage
from pipeline.state import EditState

OUT = Path(__file__).resolve().parents[1] / "docs" / "examples"

EXAMPLES = {
    "coffee-warmer-brighter": ("coffee", {"settings": {"exposure": 30, "temperature": 35, "shadows": 20}}),
    "rocket-sky-and-shadows": ("rocket", {
        "settings": {"shadows": 35, "vibrance": 20},
        "layers": [{"mask": {"type": "sky"}, "settings": {"exposure": -25, "saturation_blue": 35, "hue_blue": 10}}],
    }),
    "chelsea-moody-film": ("chelsea", {"settings": {
        "contrast": 20, "highlights": -25, "blacks": 25, "saturation": -25, "temperature": 12, "tint": 6,
        "clarity": 20, "hue_green": -20}}),
    "astronaut-face-and-vibrance": ("astronaut", {
        "settings": {"vibrance": 25, "temperature": -8},
        "layers": [{"mask": {"type": "face", "feather": 30}, "settings": {"exposure": 40, "shadows": 25}}],
    }),
}


def side_by_side(before: np.ndarray, after: np.ndarray, gap: int = 8) -> np.ndarray:
    h = before.shape[0]
    spacer = np.full((h, gap, 3), 24, np.uint8)
    return np.concatenate([before, spacer, after], axis=1)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    renderer = Renderer()
    for name, (photo, recipe) in EXAMPLES.items():
        img = getattr(data, photo)()
        source = SourceImage.from_array(img)
        state = EditState.from_dict(recipe)
        after = renderer.render(source, state, long_side=640)
        before = source.proxy(640)
        save_image(side_by_side(before, after), OUT / f"{name}.jpg", quality=88)
        print(OUT / f"{name}.jpg", state.to_json())


if __name__ == "__main__":
    main()
