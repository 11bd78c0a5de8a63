"""Batch edits from the command line.

    python -m pipeline.apply IN OUT [--set op=value ...] [--state state.json] [--long-side N]
        [--quality Q] [--strip-metadata] [--keep-gps]
    python -m pipeline.apply --list-ops

IN may be a file or a folder (then OUT is a folder and every supported image
in IN is rendered with the same recipe). ``--set`` values are on the op
registry's scale (-100..100 for sliders; see ``--list-ops``) and override
``--state``. Beyond numbers, ``--set`` takes:

- a choice by name: ``crop_aspect=4:5``, ``tone_curve=faded-matte``, ``rotate=90``;
- ``crop=X0,Y0,X1,Y1``: a free crop as a normalised rectangle (0..1);
- ``straighten=auto``: level the horizon by line detection (``auto_straighten=1``);
- ``curve_points=IN:OUT,IN:OUT,...``: a point curve on 0..255.

RAW files (DNG, CR2, CR3, NEF, ARW, RAF, ORF) are developed on the way in (at
half size, without demosaicing, when ``--long-side`` asks for no more than that and
nothing is cropped or turned);
16-bit originals stay 16-bit in PNG / TIFF outputs, transparency is kept
(PNG, TIFF, WebP), the sRGB profile is embedded and EXIF is kept without the
GPS position (``--strip-metadata``, ``--keep-gps``).

Exit status 2 on bad input, with a message that says what was wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if __name__ == "__main__":
    # A one-shot edit does no linear algebra worth a thread pool, and OpenBLAS's idle threads, started
    # when numpy loads, spin for the whole run: a third of a 12 MP edit's CPU time (a caller's own
    # setting wins; a process that imports this module keeps its pool)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from pipeline import ops
from pipeline.geometry import GeometryError, crop_insets
from pipeline.export import export_pixels
from pipeline.imageio import ImageLoadError, export_exif, format_for_path, load_image, save_image, srgb_icc
from pipeline.render import Renderer, SourceImage, geometry_settings
from pipeline.state import EditState, EditStateError


def parse_set(items: list[str]) -> dict[str, object]:
    """``["exposure=20", "crop_aspect=4:5"]`` -> ``{"exposure": 20, "crop_aspect": "4:5"}``.

    ``crop=X0,Y0,X1,Y1`` becomes the four crop insets, ``straighten=auto`` turns
    on automatic straightening, ``curve_points=0:10,128:140,255:250`` a point curve;
    a choice op takes its label. Anything else must be a number.
    """
    values: dict[str, object] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name, raw = name.strip(), raw.strip()
        if not sep or not name:
            raise EditStateError(f"--set {item!r}: expected op=value, e.g. exposure=20")
        if name == "crop":
            try:
                values.update(crop_insets(raw))
            except GeometryError as exc:
                raise EditStateError(f"--set {item!r}: {exc}") from None
            continue
        if name == "straighten" and raw.lower() == "auto":
            values["auto_straighten"] = 1
            continue
        if name == "curve_points":
            try:
                values[name] = [[float(v) for v in p.split(":")] for p in raw.split(",") if p]
            except ValueError:
                raise EditStateError(f"--set {item!r}: expected IN:OUT pairs, e.g. 0:0,64:50,192:210,255:255") from None
            continue
        try:
            number = float(raw)
        except ValueError:
            op = ops.OPS.get(name)
            if op is not None and op.control == "choice":
                values[name] = raw
                continue
            raise EditStateError(f"--set {item!r}: {raw!r} is not a number") from None
        values[name] = int(number) if number.is_integer() else number
    return values


def build_state(state_path: str | None, sets: list[str]) -> EditState:
    state = EditState()
    if state_path:
        try:
            text = Path(state_path).read_text()
        except OSError as exc:
            raise EditStateError(f"--state {state_path}: {exc.strerror or exc}") from None
        state = EditState.from_json(text)
    overrides = parse_set(sets)
    if overrides:
        try:
            state = state.with_settings({**state.settings, **{k: ops.check_value(k, v) for k, v in overrides.items()}},
                                        clamp=False)
        except ops.OpError as exc:
            raise EditStateError(f"--set: {exc}") from None
    return state


def _jobs(src: Path, dst: Path) -> list[tuple[Path, Path]]:
    if src.is_dir():
        files = sorted(p for p in src.iterdir() if p.is_file() and not p.name.startswith("."))
        return [(p, dst / p.name) for p in files]
    return [(src, dst)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.apply", description=__doc__.split("\n\n")[0])
    parser.add_argument("input", nargs="?", help="image file or folder")
    parser.add_argument("output", nargs="?", help="output file or folder (format from the suffix)")
    parser.add_argument("--set", action="append", default=[], metavar="OP=VALUE", help="op value -100..100 (repeatable)")
    parser.add_argument("--state", help="EditState JSON file (global settings and local layers)")
    parser.add_argument("--long-side", type=int, default=None, help="render at this long side in pixels (default: full resolution)")
    parser.add_argument("--quality", type=int, default=92, help="JPEG/WebP quality 1..100 (default 92)")
    parser.add_argument("--strip-metadata", action="store_true", help="leave the original's EXIF out of the output")
    parser.add_argument("--keep-gps", action="store_true", help="keep the GPS position in the EXIF (dropped by default)")
    parser.add_argument("--list-ops", action="store_true", help="print the op table, one op per line, and exit")
    args = parser.parse_args(argv)

    if args.list_ops:
        print(ops.op_table())
        return 0
    if not args.input or not args.output:
        parser.print_usage(sys.stderr)
        print("error: IN and OUT are required (or use --list-ops)", file=sys.stderr)
        return 2
    if args.long_side is not None and args.long_side < 1:
        print(f"error: --long-side must be a positive number of pixels, got {args.long_side}", file=sys.stderr)
        return 2
    try:
        state = build_state(args.state, args.set)
    except EditStateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    src, dst = Path(args.input), Path(args.output)
    if not src.exists():
        print(f"error: {src} does not exist", file=sys.stderr)
        return 2
    jobs = _jobs(src, dst)
    try:
        for _, out in jobs:
            format_for_path(out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    # Each photo is rendered once: no render, coordinate or mask is worth keeping (the LUTs, kept
    # apart, serve the whole folder's recipe). Memory stays at the photo and its result.
    renderer = Renderer(max_cache_bytes=0)
    # a RAW wanted small is developed at half size (what --long-side 1600 previews need); not under a
    # crop or a turn, whose frame at that size may need more of the sensor than half of it
    draft = args.long_side if not geometry_settings(state.settings) else None
    failures = 0
    for inp, out in jobs:
        try:
            loaded = load_image(inp, alpha="keep", draft_long_side=draft)
        except ImageLoadError as exc:
            print(f"skipped {inp.name}: {exc}", file=sys.stderr)
            failures += 1
            continue
        source, notices = SourceImage.from_loaded(loaded), loaded.notices
        del loaded
        fmt = format_for_path(out)
        pixels = export_pixels(renderer, source, state, args.long_side, fmt)
        exif = None if args.strip_metadata else export_exif(source.exif, drop_gps=not args.keep_gps)
        del source  # encode with only the result in memory
        out.parent.mkdir(parents=True, exist_ok=True)
        save_image(pixels, out, fmt, quality=args.quality, icc=srgb_icc(), exif=exif)
        for notice in notices:
            print(f"note ({inp.name}): {notice}", file=sys.stderr)
        print(json.dumps({"input": str(inp), "output": str(out), "width": int(pixels.shape[1]),
                          "height": int(pixels.shape[0]), "state": state.to_dict()}))
    return 2 if failures and failures == len(jobs) else 0


if __name__ == "__main__":
    sys.exit(main())
