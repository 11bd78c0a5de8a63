"""Pure functions: service records (plain dicts from ``to_dict()``) -> what the panels show.

No Gradio and no Studio in here, so every function can be checked with a dict
literal. Scores are 0..1 and shown with two decimals; op values are integers
-100..100 and shown signed ("+20"), 0 meaning untouched.
"""

from __future__ import annotations

import html
from typing import Any, Iterable, Mapping, Sequence

from pipeline.masks import describe_mask

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

def asset_caption(asset: Mapping[str, Any]) -> str:
    """'T2 · 0.82 · current' — turn, score, and where the version stands.

    Abandoned branches (not on the head's ancestor chain) say so, so the
    gallery tells the kept path from the rolled-back experiments.
    """
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


def asset_summary(asset: Mapping[str, Any] | None, *, role: str = "Current") -> str:
    """Markdown under the before/after slider: which version, its score and status, what changed."""
    if not asset:
        return "Upload a photo or pick a demo photo to start."
    turn = int(asset.get("turn") or 0)
    name = "Original" if turn == 0 or asset.get("status") == "original" else f"Turn {turn}"
    parts = [f"**{role}: {name}**"]
    if asset.get("score") is not None:
        parts.append(f"score **{score_text(asset.get('score'))}**")
    status = _STATUS_WORDS.get(str(asset.get("status")), str(asset.get("status") or ""))
    if status and status != "original":
        parts.append(status)
    if not asset.get("on_head_path", True) and asset.get("status") != "pending":
        parts.append("abandoned branch")
    summary = str(asset.get("summary") or "").strip()
    line = " · ".join(parts)
    return line + (f"  \n{html.escape(summary)}" if summary and summary.lower() != "original" else "")


# -- adjustments -----------------------------------------------------------------

def _bar(value: int, lo: int, hi: int) -> str:
    """A centred bar: 0 in the middle, filled towards the value's side."""
    span = max(abs(lo), abs(hi)) or 100
    width = min(50.0, abs(value) / span * 50.0)
    left = 50.0 if value >= 0 else 50.0 - width
    return (f'<span class="adj-bar"><span class="adj-fill" '
            f'style="left:{left:.1f}%;width:{width:.1f}%"></span></span>')


def _rows(settings: Mapping[str, int], ops: Mapping[str, Mapping[str, Any]]) -> list[str]:
    rows = []
    for name in [n for n in ops if n in settings] + [n for n in settings if n not in ops]:
        value = int(settings[name])
        if not value:
            continue
        op = ops.get(name, {})
        label = html.escape(str(op.get("label") or name))
        rows.append(
            f'<div class="adj-row" data-op="{html.escape(name)}" title="{html.escape(str(op.get("description", "")))}">'
            f'<span class="adj-label">{label}</span>{_bar(value, int(op.get("min", -100)), int(op.get("max", 100)))}'
            f'<span class="adj-value">{signed(value)}</span></div>'
        )
    return rows


def adjustments_html(state: Mapping[str, Any] | None, ops_table: Sequence[Mapping[str, Any]]) -> str:
    """An EditState dict as readable slider values, grouped like a raw developer.

    ``ops_table`` rows come from ``Studio.ops_table()`` (name, label, group,
    min, max, ...); only non-zero values are listed, local layers after the
    global ones with the area they touch.
    """
    ops = {row["name"]: row for row in ops_table}
    state = state or {}
    settings = dict(state.get("settings") or {})
    layers = list(state.get("layers") or [])
    if not any(settings.values()) and not any((l.get("settings") or {}) for l in layers):
        return '<div class="adj-empty">No adjustments yet: this is the untouched original.</div>'
    parts = []
    groups: dict[str, dict[str, int]] = {}
    for name, value in settings.items():
        groups.setdefault(str(ops.get(name, {}).get("group", "other")), {})[name] = value
    for group in dict.fromkeys([str(r.get("group", "other")) for r in ops_table] + list(groups)):
        if group in groups:
            rows = _rows(groups[group], ops)
            if rows:
                parts.append(f'<div class="adj-group"><div class="adj-group-name">{html.escape(group)}</div>{"".join(rows)}</div>')
    for layer in layers:
        rows = _rows(layer.get("settings") or {}, ops)
        if not rows:
            continue
        try:
            where = describe_mask(layer.get("mask") or {})
        except (KeyError, TypeError, ValueError):
            where = "a local area"
        title = str(layer.get("name") or "").strip() or f"Local: {where}"
        opacity = layer.get("opacity", 1.0)
        extra = f" · {float(opacity):.0%}" if opacity not in (None, 1, 1.0) else ""
        parts.append(f'<div class="adj-group adj-local"><div class="adj-group-name">{html.escape(title)}{extra}</div>{"".join(rows)}</div>')
    return "".join(parts)


# -- sub-goals and review --------------------------------------------------------

def _where(target: Mapping | None) -> str:
    if not target:
        return ""
    try:
        return f" on {describe_mask(target)}"
    except (KeyError, TypeError, ValueError):
        return " on a local area"


def sub_goal_line(goal: Mapping[str, Any], labels: Mapping[str, str] | None = None) -> str:
    """'✓ Temperature +20 on the sky — warmer light' (one markdown list item)."""
    mark = _STEP_MARKS.get(str(goal.get("status") or "").lower(), "○")
    op = str(goal.get("op", "?"))
    label = (labels or {}).get(op, op)
    value = int(goal.get("value") or 0)
    amount = signed(value) if goal.get("mode", "add") == "add" else f"set to {value}"
    desc = str(goal.get("description") or "").strip()
    return f"- {mark} **{label}** {amount}{_where(goal.get('target'))}" + (f" — {desc}" if desc else "")


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


def modify_sliders(review_ops: Sequence[Mapping[str, Any]] | None, pool: int) -> list[dict]:
    """The review's ops -> settings for a fixed pool of ``pool`` sliders.

    Each entry: ``visible``, ``name``, ``label``, ``minimum``, ``maximum``,
    ``value``; ops beyond the pool are left out (the first ``pool`` are the
    ones the turn touched, in plan order).
    """
    out = []
    for row in list(review_ops or [])[:pool]:
        out.append({
            "visible": True, "name": str(row["name"]),
            "label": f"{row.get('label') or row['name']}",
            "minimum": int(row.get("min", -100)), "maximum": int(row.get("max", 100)),
            "value": int(row.get("value", 0)),
        })
    while len(out) < pool:
        out.append({"visible": False, "name": "", "label": "", "minimum": -100, "maximum": 100, "value": 0})
    return out


def changed_values(names: Sequence[str], values: Sequence[Any],
                   review_ops: Sequence[Mapping[str, Any]] | None) -> dict[str, int]:
    """Slider positions -> ``{op: value}`` for the ops whose value the person moved."""
    before = {str(r["name"]): int(r.get("value", 0)) for r in review_ops or []}
    out = {}
    for name, value in zip(names, values):
        if name and value is not None and int(round(float(value))) != before.get(name):
            out[name] = int(round(float(value)))
    return out


# -- sessions ---------------------------------------------------------------------

def session_label(info: Mapping[str, Any]) -> str:
    """'coffee.jpg · started 2026-05-01 14:02' for the 'My sessions' list (never goes stale)."""
    when = str(info.get("created_at") or "")[:16].replace("T", " ")
    return f"{info.get('title') or 'Untitled'}" + (f" · started {when}" if when else "")


def notices_markdown(notices: Sequence[str] | None) -> str:
    """Loading notices ('rotated by EXIF', 'converted from CMYK') as a short note."""
    notices = [n for n in (notices or []) if n]
    return "" if not notices else "ℹ️ " + " · ".join(html.escape(n) for n in notices)
