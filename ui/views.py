"""Pure functions: service records (plain dicts from ``to_dict()``) -> what the panels show.

No Gradio and no Studio in here, so every function can be checked with a dict
literal. Scores are 0..1 and shown with two decimals; op values are integers
-100..100 and shown signed ("+20"), 0 meaning untouched.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any, Iterable, Mapping, Sequence

from agent.planning.base import SubGoal
from agent.service.labels import change_words, layer_name, numbered, op_rows, value_text, version_name
from pipeline.masks import where_words

#: How each review mode reads in the start panel (label, service value).
REVIEW_MODES: tuple[tuple[str, str], ...] = (
    ("Ask me when unsure", "below_auto_approve"),
    ("Always ask me", "always"),
    ("Never ask", "never"),
)

#: Sub-goal status -> the mark shown before it.
_STEP_MARKS = {
    "done": "✓", "applied": "✓", "ok": "✓", "succeeded": "✓",
    "pending": "○", "planned": "○", "running": "◐",
    "failed": "✕", "error": "✕", "skipped": "–", "clamped": "✓",
}

_STATUS_WORDS = {
    "original": "original",
    "approved": "approved",
    "auto_approved": "auto-approved",
    "pending": "awaiting review",
    "rejected": "rejected",
}


# -- numbers --------------------------------------------------------------------

def score_text(score: float | None) -> str:
    """0..1 -> '0.82'; None -> '–' (the original has no score)."""
    return "–" if score is None else f"{float(score):.2f}"


def signed(value: int | float) -> str:
    """An op value as a photographer reads it: +20, -5, 0."""
    v = int(round(value))
    return f"{v:+d}" if v else "0"


# -- chat -----------------------------------------------------------------------

_COMMANDS = {"/approve": "Approved", "/modify": "Modified", "/rollback": "Rolled back",
             "/replan": "Asked for a new plan"}


def command_text(text: str) -> str:
    """A review command from the log ('/modify exposure=30') as the person would say it ('Modified: Exposure +30')."""
    word, _, rest = text.partition(" ")
    said = _COMMANDS.get(word.lower())
    if said is None:
        return text
    if word.lower() == "/rollback":
        return f"_{said}_"   # the argument is an asset id, meaningless to read
    if word.lower() == "/modify":
        rest = ", ".join(_setting_words(part) for part in rest.split())
    return f"_{said}{': ' + rest.strip() if rest.strip() else ''}_"


def _setting_words(part: str) -> str:
    """'crop_aspect=5' -> 'Aspect ratio 16:9'; 'exposure@layer0=-20' -> 'Exposure (local layer 1) −20'."""
    name, eq, value = part.partition("=")
    op, _, layer = name.partition("@layer")
    row = next((r for r in op_rows() if r["name"] == op), None)   # the registry's own row
    if not eq or row is None:
        return part
    try:
        number: Any = float(value) if "." in value else int(value)
    except ValueError:
        return part
    where = f" (local layer {int(layer) + 1})" if layer.isdigit() else ""
    return f"{row['label']}{where} {value_text(row, number)}"


def chat_messages(log: Iterable[Mapping[str, Any]]) -> list[dict]:
    """``Studio.chat_log`` rows -> ``gr.Chatbot`` messages (role/content dicts).

    Rows without text are dropped; unknown roles read as the assistant; the
    person's review commands read as words, not slash commands.
    """
    messages = []
    for row in log:
        text = str(row.get("content") or "").strip()
        if not text:
            continue
        role = "user" if row.get("role") == "user" else "assistant"
        if role == "user" and text.startswith("/"):
            text = command_text(text)
        messages.append({"role": role, "content": text})
    return messages


def working_message(text: str, status: str = "Planning, rendering and checking the result…") -> list[dict]:
    """The two bubbles shown while a turn runs: the person's words and what the agent is doing now."""
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": status, "metadata": {"title": "Working", "status": "pending"}},
    ]


# -- live progress of a turn -------------------------------------------------------

#: The steps of a turn as the progress line names them (service stage -> label).
PROGRESS_STEPS: tuple[tuple[str, str], ...] = (
    ("planner", "Plan"), ("executor", "Apply"), ("quality", "Judge"), ("review", "Review"),
)


def progress_html(event: Mapping[str, Any] | None) -> str:
    """A progress event from ``Studio.send_message(progress=...)`` -> the line shown under the chat.

    Plan · Apply · Judge · Review with the current step lit, a bar (the event's
    ``fraction``) and the event's message ("Applying 2 adjustments: ...").
    """
    if not event:
        return ""
    stage = str(event.get("stage") or "")
    order = [s for s, _ in PROGRESS_STEPS]
    current = order.index(stage) if stage in order else (len(order) if stage == "finish" else -1)
    steps = []
    for i, (name, label) in enumerate(PROGRESS_STEPS):
        state = "done" if i < current else "active" if i == current else "todo"
        steps.append(f'<span class="tp-step tp-{state}" data-step="{name}">{label}</span>')
    try:
        fraction = min(1.0, max(0.0, float(event.get("fraction") or 0.0)))
    except (TypeError, ValueError):
        fraction = 0.0
    message = html.escape(str(event.get("message") or ""))
    return (f'<div class="tp" data-stage="{html.escape(stage)}">'
            f'<div class="tp-steps">{"<span class=tp-sep>›</span>".join(steps)}</div>'
            f'<div class="tp-bar"><div class="tp-fill" style="width:{fraction * 100:.0f}%"></div></div>'
            f'<div class="tp-message">{message}</div></div>')


# -- history and gallery ---------------------------------------------------------

def version_entries(history: Sequence[Mapping[str, Any]], ops_table: Sequence[Mapping[str, Any]],
                    pending_id: str | None = None) -> list[dict]:
    """The session's versions as the History strip lists them, oldest first.

    One entry per turn that made a version, numbered 1, 2, 3 ... in order
    (refused messages and rollbacks make none, so the numbers never skip);
    the original is 0. A turn's other attempts (automatic replans, modifies,
    replans) follow it as its variants ``3b``, ``3c``. Each entry:
    ``asset`` (the AssetInfo dict), ``number`` ("3", "3b"), ``label`` (what
    changed from its parent), ``score``, ``variant`` (bool), ``state_word``
    ("current", "in review", "rolled back", ""), ``caption`` and ``name`` (for
    screen readers).
    """
    by_id = {a["id"]: a for a in history}
    entries: list[dict] = []
    for a, mark, i in numbered(history, pending_id):
        turn = int(a.get("turn") or 0)
        parent = by_id.get(a.get("parent_id") or "")
        label = "original" if turn == 0 and not i else change_words(
            (parent or {}).get("state"), a.get("state"), ops_table)
        if a.get("is_head"):
            word = "current"
        elif a["id"] == pending_id:
            word = "in review"
        elif i or a.get("status") == "rejected" or (a.get("status") == "pending"):
            word = "variant"
        elif not a.get("on_head_path", True):
            word = "rolled back"
        else:
            word = ""
        score = a.get("score")
        caption = " · ".join(p for p in (mark, label, score_text(score) if score is not None else "", word) if p)
        name = (f"Version {mark}" if turn else "The original") + (f": {label}" if turn else "") \
            + (f", score {score_text(score)}" if score is not None else "") + (f", {word}" if word else "")
        entries.append({"asset": a, "number": mark, "label": label, "score": score, "variant": bool(i),
                        "state_word": word, "caption": caption, "name": name})
    return entries


def entry_for(entries: Sequence[Mapping[str, Any]], asset_id: str | None) -> Mapping[str, Any] | None:
    return next((e for e in entries if e["asset"]["id"] == asset_id), None)


#: Alt text of the 'before' photo.
BEFORE_ALT = "Before: the original photo"


def alt_json(before: str, after: str) -> str:
    """The two alt texts of the before/after photos, as the page script reads them."""
    return json.dumps({"before": before, "after": after})


def photo_alt(entry: Mapping[str, Any] | None, *, role: str = "Current") -> str:
    """Alt text of the 'after' photo: which version is shown ('Version 3 in review: warmer, brighter')."""
    if not entry:
        return "No photo yet"
    if entry["number"] == "0":
        return f"{role}: the original photo, unedited"
    return f"{role}: version {entry['number']} of the photo — {entry['label']}"


def asset_summary(asset: Mapping[str, Any] | None, *, role: str = "Current",
                  entry: Mapping[str, Any] | None = None) -> str:
    """Markdown under the before/after slider: which version, what changed, its score and status."""
    if not asset:
        return "Upload a photo or pick a demo photo to start."
    turn = int(asset.get("turn") or 0)
    if entry is not None:
        name = "the original" if entry["number"] == "0" else f"version {entry['number']}"
    else:
        name = "the original" if turn == 0 or asset.get("status") == "original" else "this version"
    parts = [f"**{role}: {name}**"]
    if entry is not None and entry["number"] != "0":
        parts.append(html.escape(entry["label"]))
    if asset.get("score") is not None:
        parts.append(f"score **{score_text(asset.get('score'))}**")
    status = _STATUS_WORDS.get(str(asset.get("status")), str(asset.get("status") or ""))
    if status and status != "original":
        parts.append(status)
    if not asset.get("on_head_path", True) and asset.get("status") != "pending":
        parts.append("rolled-back branch")
    return " · ".join(parts)


# -- adjustments -----------------------------------------------------------------

#: How the registry's stages read as panel titles; a stage not listed reads as its own name.
STAGE_TITLES = {
    "white-balance-tone-contrast": "Light and contrast",
    "color-temperature": "White balance",
    "hsl": "Colour",
    "local-editing": "Detail and haze",
}


def stage_title(stage: str) -> str:
    """'color-temperature' -> 'White balance'; an unknown 'geometry-crop' -> 'Geometry crop'."""
    return STAGE_TITLES.get(stage) or (str(stage).replace("-", " ").replace("_", " ").strip().capitalize() or "Other")


def widget_for(row: Mapping[str, Any]) -> dict | None:
    """An op-table row -> how to edit it: ``{"type": "slider", minimum, maximum, step, default}`` or
    ``{"type": "choice", choices, default}``; None when the row cannot be edited by hand.

    Rows carry a ``kind`` (or ``widget``): a render kind ("pixel", "spatial"),
    "angle", "choice" or anything new. A choice needs ``choices``; anything
    with a numeric min < max is a slider (``step`` if the row has one, else 1);
    the rest is left out of the panel (never an error).
    """
    kind = str(row.get("widget") or row.get("kind") or "").lower()
    default = row.get("default", 0)
    if kind == "region":  # healing's "remove": acts on a selection, never a global slider
        return None
    if kind == "choice":
        choices = row.get("choices")
        if isinstance(choices, Mapping):
            choices = list(choices.items())
        if not isinstance(choices, (list, tuple)) or not choices:
            return None
        lo = row.get("min")
        if all(isinstance(c, str) for c in choices) and isinstance(lo, int) and not isinstance(lo, bool) \
                and row.get("max") == lo + len(choices) - 1:
            pairs = [(c, lo + i) for i, c in enumerate(choices)]     # names for the op's whole-number values
        else:
            pairs = [(str(c[0]), c[1]) if isinstance(c, (list, tuple)) and len(c) == 2 else (str(c), c)
                     for c in choices]
        return {"type": "choice", "choices": pairs, "default": default}
    lo, hi = row.get("min"), row.get("max")
    if isinstance(lo, bool) or isinstance(hi, bool) or not isinstance(lo, (int, float)) \
            or not isinstance(hi, (int, float)) or not lo < hi:
        return None
    step = row.get("step")
    step = step if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0 else 1
    if not isinstance(default, (int, float)) or isinstance(default, bool):
        default = 0 if lo <= 0 <= hi else lo
    return {"type": "slider", "minimum": lo, "maximum": hi, "step": step, "default": default}


def slider_groups(ops_table: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[dict]]]:
    """The op table -> ``[(stage, title, [row + {"widget": spec}]), ...]`` in registry order."""
    groups: dict[str, list[dict]] = {}
    for row in ops_table:
        spec = widget_for(row)
        if spec is not None:
            groups.setdefault(str(row.get("stage") or "other"), []).append({**row, "widget": spec})
    return [(stage, stage_title(stage), rows) for stage, rows in groups.items()]


def layer_title(layer: Mapping[str, Any], *, with_prefix: bool = True) -> str:
    """A local layer as a person reads it: 'Local: the sky' (or its own name)."""
    name = layer_name(layer)
    return f"Local: {name}" if with_prefix else name


def layer_slots(state: Mapping[str, Any] | None, ops_table: Sequence[Mapping[str, Any]],
                layers: int, per_layer: int) -> list[dict]:
    """The local layers of a state -> a fixed pool of ``layers`` x ``per_layer`` slider settings.

    Each slot: ``visible``, ``title``, ``sliders`` (each ``visible``, ``name``,
    ``label``, ``minimum``, ``maximum``, ``step``, ``value``) listing the ops
    the layer sets, in registry order. Layers or ops beyond the pool are left out.
    """
    rows = {str(r["name"]): r for r in ops_table}
    order = {name: i for i, name in enumerate(rows)}
    slots = []
    state_layers = list((state or {}).get("layers") or [])
    for i in range(layers):
        layer = state_layers[i] if i < len(state_layers) else None
        sliders = []
        if layer:
            settings = dict(layer.get("settings") or {})
            for name in sorted(settings, key=lambda n: order.get(n, len(order))):
                spec = widget_for(rows.get(name, {"min": -100, "max": 100}))
                if spec is None or spec["type"] != "slider":
                    continue
                label = str(rows.get(name, {}).get("label") or name)
                sliders.append({"visible": True, "name": name, "label": f"{layer_title(layer, with_prefix=False)} · {label}",
                                "minimum": spec["minimum"], "maximum": spec["maximum"], "step": spec["step"],
                                "value": settings[name]})
        sliders = sliders[:per_layer]
        while len(sliders) < per_layer:
            sliders.append({"visible": False, "name": "", "label": "", "minimum": -100, "maximum": 100,
                            "step": 1, "value": 0})
        slots.append({"visible": bool(layer), "title": layer_title(layer) if layer else "", "sliders": sliders})
    return slots


def as_value(v: Any) -> Any:
    """20.0 -> 20; 2.5 stays 2.5 (a fine-step op such as straighten); anything else as it is."""
    if isinstance(v, float) and v == int(v):
        return int(v)
    if isinstance(v, float):
        return round(v, 6)
    return v


def changed_settings(names: Sequence[str], values: Sequence[Any], current: Mapping[str, Any],
                     defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Widget positions -> ``{op: value}`` for the ops whose value differs from ``current``.

    An op missing from ``current`` sits at its default (0 unless ``defaults`` says otherwise).
    """
    defaults = defaults or {}
    out = {}
    for name, value in zip(names, values):
        if not name or value is None:
            continue
        value = as_value(value)
        if value != as_value(current.get(name, defaults.get(name, 0))):
            out[name] = value
    return out


def adjustments_summary(state: Mapping[str, Any] | None, ops_table: Sequence[Mapping[str, Any]]) -> str:
    """One line over the sliders: how many adjustments this version carries, or that it is the original."""
    state = state or {}
    n = len([v for v in (state.get("settings") or {}).values() if v])
    layers = [l for l in state.get("layers") or [] if l.get("settings")]
    if not n and not layers:
        return "No adjustments yet: this is the untouched original. Move a slider to start."
    parts = [f"{n} adjustment{'s' if n != 1 else ''}"] if n else []
    if layers:
        parts.append(f"{len(layers)} local layer{'s' if len(layers) != 1 else ''}")
    return " and ".join(parts) + ". Drag to preview, release to keep; double-click resets."


# -- sub-goals and review --------------------------------------------------------


def sub_goal_line(goal: Mapping[str, Any], rows: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """'✓ Temperature +20 on the sky — warmer light' (one markdown list item); values in people's units
    ('Aspect ratio 16:9', 'Saturation to −100'); ``rows``: the op table by name."""
    mark = _STEP_MARKS.get(str(goal.get("status") or "").lower(), "○")
    op = str(goal.get("op", "?"))
    row = dict((rows or {}).get(op) or {"name": op, "label": op})
    label = str(row.get("label") or op)
    value = goal.get("value") or 0
    if goal.get("mode", "add") == "add":
        amount = value_text(row, value, change=True)
    elif str(row.get("kind")) in ("choice", "toggle", "points"):
        amount = value_text(row, value)
    else:
        amount = f"to {value_text(row, value)}"
    desc = _plain_description(goal)
    return f"- {mark} **{label}** {amount}{where_words(goal.get('target'))}" + (f" — {desc}" if desc else "")


def _plain_description(goal: Mapping[str, Any]) -> str:
    """A sub-goal's description without the step restated in op names ('16:9 crop: crop_aspect = 5' ->
    '16:9 crop'): the line already says it in people's units."""
    desc = str(goal.get("description") or "").strip()
    try:
        known = ("op", "value", "mode", "target", "description", "id", "stage")   # a row also carries its status
        said = SubGoal.from_dict({k: v for k, v in goal.items() if k in known}).summary()
    except Exception:  # noqa: BLE001 - a row the planner's schema would refuse: its text as it is
        return desc
    if desc == said:
        return ""
    return desc.removesuffix(f": {said}").strip()


def sub_goals_markdown(sub_goals: Sequence[Mapping[str, Any]] | None, *, version: str | None = None,
                       rows: Mapping[str, Mapping[str, Any]] | None = None) -> str:
    """The turn's plan as a checklist under the version it made ('Version 3'); empty plan -> a short hint."""
    if not sub_goals:
        return "_No turn yet. Ask for a change in the chat._"
    head = f"**{version_name(version).capitalize()}**\n\n" if version else ""
    return head + "\n".join(sub_goal_line(g, rows) for g in sub_goals)


def version_note(entry: Mapping[str, Any] | None) -> str:
    """What the right column says about a version when no turn was just run: its number and what changed."""
    if not entry or entry.get("number") == "0":
        return "_The original. Ask for a change in the chat._"
    return f"**Version {html.escape(str(entry['number']))}**  \n{html.escape(str(entry.get('label') or ''))}"


def _number(v: Any) -> str:
    if v is None:
        return "–"      # not assessed (a custom field the built-in judge cannot measure)
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.2f}"
    if isinstance(v, (list, tuple)):
        return ", ".join(_number(x) for x in v) or "–"
    if isinstance(v, Mapping):
        return ", ".join(f"{html.escape(str(k)).replace('_', ' ')} {_number(x)}" for k, x in v.items()) or "–"
    return html.escape(str(v))


def _chips(values: Mapping[str, Any], cls: str) -> str:
    def chip(k: Any, v: Any) -> str:
        extra, title = ("", "") if v is not None else (" not-assessed", ' title="not assessed"')
        return (f'<span class="metric {cls}{extra}"{title}><span class="metric-name">'
                f'{html.escape(str(k)).replace("_", " ")}</span><span class="metric-value">{_number(v)}</span></span>')
    return "".join(chip(k, v) for k, v in values.items())


def review_markdown(payload: Mapping[str, Any] | None, version: str | None = None) -> str:
    """The review panel's text: score, assessment, per-dimension numbers, custom fields.

    Top-level dimensions ("compliance") are shown as chips; dotted details
    ("compliance.temperature") go in a folded list under them.
    """
    if not payload:
        return ""
    lines = [f"### {version_name(version).capitalize() if version else 'This version'} is waiting for your review",
             f"**Score {score_text(payload.get('score'))}** — {html.escape(str(payload.get('assessment') or 'no assessment'))}"]
    dims = dict(payload.get("dimensions") or {})
    main = {k: v for k, v in dims.items() if "." not in str(k)}
    detail = {k: v for k, v in dims.items() if "." in str(k)}
    marks = payload.get("marks") or []
    if marks:
        lines += ["", f"**{len(marks)} dust spots found**, circled on the before picture: approve to keep the heal, "
                      "roll back to drop it, or ask for fewer."]
    fields = payload.get("fields") or {}
    if main or fields:
        lines += ["", f'<div class="metrics">{_chips(main, "dimension")}{_chips(fields, "custom-field")}</div>']
    if detail:
        lines += ["", f'<details class="metric-details"><summary>All measurements</summary>'
                      f'<div class="metrics">{_chips(detail, "detail")}</div></details>']
    return "\n".join(lines)


# -- sessions ---------------------------------------------------------------------

def session_label(info: Mapping[str, Any]) -> str:
    """'coffee.jpg · started 2026-05-01 14:02' for the 'My sessions' list (never goes stale)."""
    when = str(info.get("created_at") or "")[:16].replace("T", " ")
    return f"{info.get('title') or 'Untitled'}" + (f" · started {when}" if when else "")


def notices_markdown(notices: Sequence[str] | None) -> str:
    """Loading notices ('rotated by EXIF', 'converted from CMYK') as a short note."""
    notices = [n for n in (notices or []) if n]
    return "" if not notices else "ℹ️ " + " · ".join(html.escape(n) for n in notices)


# -- start screen, quick replies, model badge ---------------------------------------

def look_name(style: str) -> str:
    """A look's id as a person reads it: 'black_and_white' -> 'Black and white'."""
    words = str(style).replace("_", " ").replace("-", " ").split()
    return " ".join(words).capitalize() if words else str(style)


def look_choices(styles: Sequence[str]) -> list[tuple[str, str]]:
    """The looks menu: human names first, the service's ids as values; 'None' (no look) first."""
    return [("None", "")] + sorted(((look_name(s), s) for s in styles), key=lambda c: c[0].lower())


def quick_replies(result: Mapping[str, Any] | None, pool: int) -> list[str]:
    """A turn's ``quick_replies`` (suggested answers) -> at most ``pool`` short distinct texts."""
    found = (result or {}).get("quick_replies") or []
    texts = [str(t).strip() for t in found if isinstance(t, str) and str(t).strip()]
    return list(dict.fromkeys(t[:80] for t in texts))[:pool]


_BADGE_WORDS = {"model": "Vision model", "fallback": "Built-in (model unreachable)", "embedded": "Built-in planner"}


def model_badge(status: Mapping[str, Any] | None) -> str:
    """``Studio.model_status()`` -> a small badge: which brain plans the edits right now."""
    if not status:
        return ""
    state = str(status.get("state") or "").lower()
    label = str(status.get("label") or _BADGE_WORDS.get(state) or state or "unknown")
    safe = state if state in _BADGE_WORDS else "unknown"
    return (f'<span class="model-badge badge-{safe}" role="status" title="{html.escape(label)}">'
            f'<span class="badge-dot" aria-hidden="true"></span>{html.escape(label)}</span>')


# -- exports --------------------------------------------------------------------------------

#: An export format (or a file's extension) -> the extension its file gets.
EXPORT_EXTENSIONS = {"jpeg": "jpg", "jpg": "jpg", "png": "png", "tiff": "tif", "tif": "tif", "webp": "webp"}


def export_name(title: str, version: str | None, fmt: str) -> str:
    """'coffee-v3.jpg': the photo's name, the version's number (as History shows it), the format's extension.

    The original is ``-original``; an unknown format is refused (``ValueError``), never named ``.jpg``.
    """
    ext = EXPORT_EXTENSIONS.get(str(fmt).lower().lstrip("."))
    if ext is None:
        raise ValueError(f"fmt: expected jpeg, png, tiff or webp, got {fmt!r}")
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", title.rsplit(".", 1)[0]).strip("-")[:60] or "photo"
    which = "original" if version in (None, "", "0") else f"v{version}"
    return f"{stem}-{which}.{ext}"
