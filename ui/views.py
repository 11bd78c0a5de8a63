"""Pure functions: service records (plain dicts from ``to_dict()``) -> what the panels show.

No Gradio and no Studio in here, so every function can be checked with a dict
literal. Scores are 0..1 and shown with two decimals; op values are integers
-100..100 and shown signed ("+20"), 0 meaning untouched.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable, Mapping, Sequence

from pipeline.masks import describe_mask, where_words

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
    """A review command from the log ('/modify exposure=30') as the person would say it."""
    word, _, rest = text.partition(" ")
    said = _COMMANDS.get(word.lower())
    if said is None:
        return text
    if word.lower() == "/rollback":
        return f"_{said}_"   # the argument is an asset id, meaningless to read
    return f"_{said}{': ' + rest.strip() if rest.strip() else ''}_"


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

_KEPT = ("approved", "auto_approved")


def _first_phrase(text: str) -> str:
    """'warmer (more amber)' -> 'warmer'; 'brighter, up to +2 EV' -> 'brighter'."""
    return text.split("(")[0].split(",")[0].split(";")[0].strip()


def change_words(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 ops_table: Sequence[Mapping[str, Any]], *, limit: int = 3) -> str:
    """Two EditState dicts -> a short label of what changed: 'warmer, brighter' or 'sky: darker'.

    Words come from each op's ``plus`` / ``minus`` description in the registry
    (its first phrase), biggest moves first; an op without them reads as
    'crop +20'. Nothing changed -> 'no change'.
    """
    rows = {str(r["name"]): r for r in ops_table}

    def word(name: str, delta: int) -> str:
        row = rows.get(name, {})
        phrase = _first_phrase(str(row.get("plus" if delta > 0 else "minus") or ""))
        return phrase or f"{str(row.get('label') or name).lower()} {signed(delta)}"

    def moves(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[tuple[int, str]]:
        names = list(dict.fromkeys(list(a) + list(b)))
        out = []
        for n in names:
            try:
                delta = int(b.get(n, 0) or 0) - int(a.get(n, 0) or 0)
            except (TypeError, ValueError):
                continue
            if delta:
                out.append((abs(delta), word(n, delta)))
        return out

    before, after = before or {}, after or {}
    found = [(m, w) for m, w in moves(before.get("settings") or {}, after.get("settings") or {})]
    old_layers = {json.dumps(l.get("mask"), sort_keys=True): l for l in before.get("layers") or []}
    for layer in after.get("layers") or []:
        old = old_layers.get(json.dumps(layer.get("mask"), sort_keys=True), {})
        where = layer_title(layer, with_prefix=False).removeprefix("the ")
        found += [(m, f"{where}: {w}") for m, w in moves(old.get("settings") or {}, layer.get("settings") or {})]
    found.sort(key=lambda mw: -mw[0])
    words = list(dict.fromkeys(w for _, w in found))
    if not words:
        return "no change"
    extra = len(words) - limit
    return ", ".join(words[:limit]) + (f" +{extra} more" if extra > 0 else "")


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
    turns: dict[int, list[Mapping[str, Any]]] = {}
    for a in history:
        turns.setdefault(int(a.get("turn") or 0), []).append(a)
    entries: list[dict] = []
    number = 0
    for turn in sorted(turns):
        group = turns[turn]
        if turn == 0:
            main, variants = group[0], group[1:]
        else:
            main = (next((a for a in group if a.get("status") in _KEPT), None)
                    or next((a for a in group if a["id"] == pending_id), None) or group[-1])
            variants = [a for a in group if a is not main]
            number += 1
        for i, a in enumerate([main] + variants):
            mark = str(number) if turn else "0"
            if i:
                mark += "bcdefghijklmnopqrstuvwxyz"[min(i - 1, 24)]
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


def asset_caption(asset: Mapping[str, Any]) -> str:
    """'T2 · 0.82 · current' — kept for scripts; the History strip uses :func:`version_entries`."""
    turn = int(asset.get("turn") or 0)
    if asset.get("status") == "original" or turn == 0:
        head = " · current" if asset.get("is_head") else ""
        return f"Original{head}"
    parts = [f"T{turn}", score_text(asset.get("score"))]
    if asset.get("status") == "pending":
        parts.append("in review")
    elif asset.get("is_head"):
        parts.append("current")
    elif not asset.get("on_head_path", True):
        parts.append("abandoned")
    return " · ".join(parts)


def gallery_order(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The kept path first (oldest to newest), the turn in review, then abandoned branches (oldest first)."""
    kept = [a for a in history if a.get("on_head_path", True)]
    pending = [a for a in history if not a.get("on_head_path", True) and a.get("status") == "pending"]
    abandoned = [a for a in history if not a.get("on_head_path", True) and a.get("status") != "pending"]
    return kept + pending + abandoned


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
        name = "the original" if turn == 0 or asset.get("status") == "original" else f"turn {turn}"
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
    name = str(layer.get("name") or "").strip()
    if not name:
        try:
            name = describe_mask(layer.get("mask") or {})
        except (KeyError, TypeError, ValueError):
            name = "a local area"
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


def _as_value(v: Any) -> Any:
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
        value = _as_value(value)
        if value != _as_value(current.get(name, defaults.get(name, 0))):
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


def sub_goal_line(goal: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> str:
    """'✓ Temperature +20 on the sky — warmer light' (one markdown list item)."""
    mark = _STEP_MARKS.get(str(goal.get("status") or "").lower(), "○")
    op = str(goal.get("op", "?"))
    label = (labels or {}).get(op, op)
    value = int(goal.get("value") or 0)
    amount = signed(value) if goal.get("mode", "add") == "add" else f"set to {value}"
    desc = str(goal.get("description") or "").strip()
    return f"- {mark} **{label}** {amount}{where_words(goal.get('target'))}" + (f" — {desc}" if desc else "")


def sub_goals_markdown(sub_goals: Sequence[Mapping[str, Any]] | None, *, turn: int | None = None,
                       labels: Mapping[str, str] | None = None) -> str:
    """The turn's plan as a checklist; empty plan -> a short hint."""
    if not sub_goals:
        return "_No turn yet. Ask for a change in the chat._"
    head = f"**Turn {turn}**\n\n" if turn else ""
    return head + "\n".join(sub_goal_line(g, labels) for g in sub_goals)


def version_note(asset: Mapping[str, Any]) -> str:
    """What the right column says about a version when no turn was just run."""
    turn = int(asset.get("turn") or 0)
    if not turn:
        return "_The original. Ask for a change in the chat._"
    return f"**Turn {turn}**  \n{html.escape(str(asset.get('summary') or ''))}"


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


def review_markdown(payload: Mapping[str, Any] | None) -> str:
    """The review panel's text: score, assessment, per-dimension numbers, custom fields.

    Top-level dimensions ("compliance") are shown as chips; dotted details
    ("compliance.temperature") go in a folded list under them.
    """
    if not payload:
        return ""
    lines = [f"### Turn {payload.get('turn', '?')} is waiting for your review",
             f"**Score {score_text(payload.get('score'))}** — {html.escape(str(payload.get('assessment') or 'no assessment'))}"]
    dims = dict(payload.get("dimensions") or {})
    main = {k: v for k, v in dims.items() if "." not in str(k)}
    detail = {k: v for k, v in dims.items() if "." in str(k)}
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
