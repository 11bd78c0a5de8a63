"""What versions and changes are called, in one place for the studio, the chat and the API.

- **Numbers.** Versions are numbered 1, 2, 3 ... by the turns that made one (the
  original is 0; questions, refusals, undo and rollbacks make none); the other
  attempts of a turn (a replan, a modify) are its variants: 3b, 3c. The History
  strip, the status line, the chat replies, the review panel and exported file
  names all use these numbers (:func:`numbered`, :func:`version_of`).
- **Words.** A change is named with the op registry's own words ("warmer",
  "brighter", "Aspect ratio 16:9") and values in people's units (``value_text``:
  "16:9", "2.5 degrees", "10%", "+20"), never an op's internal name.

Pure functions over plain rows (mappings or records with the same attributes); no store, no graph.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Iterable, Mapping, Sequence

from pipeline import ops
from pipeline.masks import describe_mask

#: Statuses of a version a person kept (the main entry of its turn).
KEPT = ("approved", "auto_approved")
_VARIANT_MARKS = "bcdefghijklmnopqrstuvwxyz"


def _get(row: Any, key: str, default: Any = None) -> Any:
    """A field of a mapping or a record (AssetInfo, AssetRecord)."""
    if isinstance(row, Mapping):
        return row.get(key, default)
    return getattr(row, key, default)


def op_rows() -> list[dict]:
    """The op registry as plain rows (name, label, stage, range, words, widget kind, unit, choices)."""
    # "kind" is the widget: slider, angle, choice (with "choices"), toggle, hue or points.
    return [{"name": o.name, "label": o.label, "stage": o.stage, "group": o.group, "min": o.min,
             "max": o.max, "default": o.default, "description": o.description,
             "minus": getattr(o, "minus", ""), "plus": getattr(o, "plus", ""), "kind": o.control,
             "step": o.step, "unit": o.unit, **({"choices": list(o.choices)} if o.choices else {})}
            for o in ops.OPS.values()]


@functools.lru_cache(maxsize=1)
def _registry() -> dict[str, dict]:
    """The op rows by name (the registry is declared once, at import)."""
    return {r["name"]: r for r in op_rows()}


# -- numbers -----------------------------------------------------------------------------------

def numbered(assets: Iterable[Any], pending_id: str | None = None) -> list[tuple[Any, str, int]]:
    """Versions in History order with their numbers: ``[(asset, "3" | "3b", variant index), ...]``.

    One entry per version, grouped by turn (oldest first); in each turn the kept
    version (else the one under review, else the newest) is the main entry and
    the others follow as its variants (index 1, 2 ...; the main entry is 0).
    """
    turns: dict[int, list[Any]] = {}
    for a in assets:
        turns.setdefault(int(_get(a, "turn") or 0), []).append(a)
    out: list[tuple[Any, str, int]] = []
    number = 0
    for turn in sorted(turns):
        group = turns[turn]
        if turn == 0:
            main, variants = group[0], group[1:]
        else:
            main = (next((a for a in group if _get(a, "status") in KEPT), None)
                    or next((a for a in group if _get(a, "id") == pending_id), None) or group[-1])
            variants = [a for a in group if a is not main]
            number += 1
        for i, a in enumerate([main] + variants):
            mark = str(number) if turn else "0"
            if i:
                mark += _VARIANT_MARKS[min(i - 1, len(_VARIANT_MARKS) - 1)]
            out.append((a, mark, i))
    return out


def version_of(assets: Iterable[Any], asset_id: str | None, pending_id: str | None = None) -> str | None:
    """The number of version ``asset_id`` ("0" for the original, "3", "3b"), None when it is not there."""
    return next((mark for a, mark, _ in numbered(assets, pending_id) if _get(a, "id") == asset_id), None)


def version_name(mark: str | None) -> str:
    """'0' -> 'the original'; '3' -> 'version 3'; None -> 'that version'."""
    if mark is None:
        return "that version"
    return "the original" if mark == "0" else f"version {mark}"


# -- words ---------------------------------------------------------------------------------------

def value_text(row: Mapping[str, Any], value: Any, *, change: bool = False) -> str:
    """An op's value in people's units: '16:9', 'on', '2.5 degrees', '10%', '50', '+20'.

    ``change``: the value is a change (always signed), not a setting.
    """
    name = str(row.get("name") or "")
    op = ops.OPS.get(name)
    kind = str(row.get("kind") or (op.control if op else "slider"))
    if kind in ("choice", "toggle", "points") and op is not None and not change:
        try:
            return op.describe_value(value)
        except (TypeError, ValueError, IndexError):
            return str(value)
    try:
        v = float(value)
    except (TypeError, ValueError):
        return str(value)
    number = f"{v:g}" if v != int(v) else str(int(v))
    if change or (float(row.get("min", -1) or 0) < 0 and kind not in ("angle", "hue")):
        number = (f"+{number}" if v > 0 else number.replace("-", "\u2212")) if v else "0"
    unit = str(row.get("unit") or (op.unit if op else ""))
    if kind in ("angle", "hue") or unit == "degrees":
        return f"{number} degrees" if abs(v) != 1 else f"{number} degree"
    if unit == "percent":
        return f"{number}%"
    return number


def _first_phrase(text: str) -> str:
    """'warmer (more amber)' -> 'warmer'; 'brighter, up to +2 EV' -> 'brighter'."""
    return text.split("(")[0].split(",")[0].split(";")[0].strip()


def step_words(row: Mapping[str, Any], before: Any, after: Any) -> str:
    """One op's move as a person says it: 'warmer', 'less grain', 'no grain', 'aspect ratio 16:9'."""
    label = str(row.get("label") or row.get("name") or "").strip()
    kind = str(row.get("kind") or "")
    if kind in ("choice", "toggle", "points", "angle", "hue"):
        return f"{label.lower()} {value_text(row, after)}"
    try:
        delta = float(after or 0) - float(before or 0)
    except (TypeError, ValueError):
        return f"{label.lower()} {value_text(row, after)}"
    phrase = _first_phrase(str(row.get("plus" if delta > 0 else "minus") or ""))
    if phrase:
        return phrase
    if str(row.get("unit") or "") == "percent":
        return f"{label.lower()} {value_text(row, after)}"
    if delta < 0 and not after and float(row.get("min", -1) or 0) >= 0:
        return f"no {label.lower()}"
    return f"{'more' if delta > 0 else 'less'} {label.lower()}"


def layer_name(layer: Mapping[str, Any]) -> str:
    """A local layer as a person reads it: 'the sky', 'the selection' (or its own name)."""
    name = str(layer.get("name") or "").strip()
    if name:
        return name
    try:
        return describe_mask(layer.get("mask") or {})
    except (KeyError, TypeError, ValueError):
        return "a local area"


def change_words(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 ops_table: Sequence[Mapping[str, Any]] | None = None, *, limit: int = 3) -> str:
    """Two EditState dicts -> a short label of what changed: 'warmer, brighter' or 'sky: darker'.

    Words come from each op's ``plus`` / ``minus`` description in the registry
    (its first phrase), biggest moves first; an op without them reads as 'more grain',
    'no grain', 'aspect ratio 16:9' (:func:`step_words`). Nothing changed -> 'no change'.
    """
    rows = {**_registry(), **{str(r["name"]): r for r in ops_table or ()}}

    def size(name: str, a: Any, b: Any) -> float:
        try:
            move = abs(float(b or 0) - float(a or 0))
        except (TypeError, ValueError):
            return 100.0
        span = float(rows.get(name, {}).get("max", 100) or 100) - float(rows.get(name, {}).get("min", 0) or 0)
        return 100.0 * move / span if span > 0 and span < 50 else move   # choices and toggles count as big moves

    def moves(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[float, str]]:
        out = []
        for n in dict.fromkeys(list(a) + list(b)):
            old, new = a.get(n, rows.get(n, {}).get("default", 0)), b.get(n, rows.get(n, {}).get("default", 0))
            if old != new:
                out.append((size(n, old, new), step_words(rows.get(n, {"name": n, "label": n}), old, new)))
        return out

    before, after = before or {}, after or {}
    found = moves(before.get("settings") or {}, after.get("settings") or {})
    old_layers = {json.dumps(l.get("mask"), sort_keys=True): l for l in before.get("layers") or []}
    for layer in after.get("layers") or []:
        old = old_layers.get(json.dumps(layer.get("mask"), sort_keys=True), {})
        where = layer_name(layer).removeprefix("the ")
        found += [(m, f"{where}: {w}") for m, w in moves(old.get("settings") or {}, layer.get("settings") or {})]
    found.sort(key=lambda mw: -mw[0])
    words = list(dict.fromkeys(w for _, w in found))
    if not words:
        return "no change"
    extra = len(words) - limit
    return ", ".join(words[:limit]) + (f" +{extra} more" if extra > 0 else "")


def version_words(assets: Sequence[Any], asset_id: str) -> str:
    """What version ``asset_id`` changed from its parent ('warmer, brighter'); 'the original' for it."""
    by_id = {_get(a, "id"): a for a in assets}
    asset = by_id.get(asset_id)
    if asset is None:
        return ""
    parent = by_id.get(_get(asset, "parent_id"))
    if parent is None:
        return "the original"
    return change_words(_get(parent, "state"), _get(asset, "state"))


def rollback_reply(assets: Sequence[Any], asset_id: str, pending_id: str | None = None) -> str:
    """'Rolled back to version 2 (warmer, brighter). Later versions stay in the history.'"""
    mark = version_of(assets, asset_id, pending_id)
    if mark == "0":
        return "Rolled back to the original. Later versions stay in the history."
    return (f"Rolled back to {version_name(mark)} ({version_words(assets, asset_id)}). "
            "Later versions stay in the history.")
