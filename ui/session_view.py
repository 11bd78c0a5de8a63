"""The one place the UI reads ``agent.service.Studio``: a session -> everything the panels show.

:class:`SessionView` asks the Studio for a session's records and turns them
into a :class:`View` (plain data); :func:`view_updates` maps a View onto the
panel components. Handlers call ``Studio`` write methods themselves and then
rebuild the view, so every panel always shows the same version.

Files the Studio hands out live under ``sessions/``, which the app blocks from
being served. :meth:`SessionView.stage` copies the ones a browser should see
(proxy renders, thumbnails, exports) into a private folder in the system temp
dir, from where Gradio moves them into its own cache.
"""

from __future__ import annotations

import hashlib
import html
import os
import queue
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import gradio as gr
from PIL import Image

from agent.service import AtelierError, SessionNotFound
from pipeline.render import geometry_settings
from ui import live, views

#: Long side, in pixels, of the before/after images, the gallery thumbnails and the selection canvas.
COMPARE_LONG_SIDE = 1600
THUMB_LONG_SIDE = 360
SELECT_LONG_SIDE = 1024
#: Local layers, and sliders per layer, the Adjustments panel can show (a fixed pool of components).
LAYER_POOL = 4
LAYER_SLIDERS = 6
#: Quick-reply buttons under the chat.
QUICK_POOL = 4
#: JPEG quality of the images shown in the browser (exports keep their own format).
DISPLAY_QUALITY = 92


def as_dict(record: Any) -> dict:
    """A service record (dataclass with ``to_dict``) or mapping -> a plain dict."""
    if record is None:
        return {}
    if hasattr(record, "to_dict"):
        return record.to_dict()
    return dict(record)


@dataclass
class View:
    """What one browser tab shows for one session (all plain data)."""

    session: dict | None = None
    history: list[dict] = field(default_factory=list)
    head: dict | None = None
    shown: dict | None = None          # the selected gallery asset, else the head
    pending: dict | None = None        # ReviewPayload dict while a turn waits for review
    chat: list[dict] = field(default_factory=list)
    compare: tuple[str, str] | None = None
    gallery: list[tuple[str, str]] = field(default_factory=list)
    gallery_ids: list[str] = field(default_factory=list)
    sub_goals: list[dict] = field(default_factory=list)
    entries: list[dict] = field(default_factory=list)     # views.version_entries, in gallery order
    base: dict | None = None           # the state the sliders move: the version under review, else the head
    quick_replies: list[str] = field(default_factory=list)
    canvas: str | None = None          # the version selections are made on, as shown (ui/selection.py)
    selection: str | None = None       # the session's selection tinted on that version, when there is one
    export: str | None = None          # a file a chat message exported, for the download box


class SessionView:
    """Reads a session through the Studio and stages its images for the browser."""

    def __init__(self, studio: Any, staging_dir: Path, preview_secret: str = ""):
        self.studio = studio
        self.staging_dir = Path(staging_dir)
        self.ops_table = list(studio.ops_table())
        self.op_rows = {row["name"]: row for row in self.ops_table}
        self.compare_side = COMPARE_LONG_SIDE
        self.stage_of = {row["name"]: str(row.get("stage") or "other") for row in self.ops_table}
        #: Signs the key the page script sends with each live slider preview (ui/live.py).
        self.preview_secret = preview_secret

    def preview_key(self, session_id: str) -> str:
        """The live-preview key of a session (previews only: no other call takes it)."""
        return live.preview_key(self.preview_secret, session_id)

    def modify_target(self, review_ops: list[dict], base: Mapping[str, Any]) -> str:
        """'stage|element id' of the slider Modify opens: the turn's first global op, else its first local
        layer's first slider, else the first light slider."""
        editable = {str(r["name"]) for _, _, rows in views.slider_groups(self.ops_table) for r in rows}
        for op in review_ops:
            if op.get("name") in editable:
                return f"{self.stage_of.get(op['name'], '')}|adj-{op['name']}"
        if (base or {}).get("layers"):
            return "local-layers|layer-0-slider-0"
        first = views.slider_groups(self.ops_table)[0]
        return f"{first[0]}|adj-{first[2][0]['name']}"

    # -- files ---------------------------------------------------------------
    def stage(self, src: Path | str, name: str | None = None, *, for_display: bool = False) -> str:
        """Copy a Studio file into the staging folder (once per content) and return its path.

        ``for_display`` re-encodes it as a JPEG (quality 92): the Studio's PNG
        proxies are several MB, too heavy to send on every refresh. Exports
        are copied byte for byte.
        """
        src = Path(src)
        st = src.stat()
        digest = hashlib.sha256(f"{src.resolve()}|{st.st_mtime_ns}|{st.st_size}".encode()).hexdigest()[:20]
        filename = name or (src.stem + ".jpg" if for_display else src.name)
        dest = self.staging_dir / digest / filename
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            # a private temp name: a live preview and a release may stage the same file at once
            tmp = dest.with_name(f"{dest.name}.{os.getpid()}.{threading.get_ident()}.part")
            if for_display:
                with Image.open(src) as im:
                    im.convert("RGB").save(tmp, format="JPEG", quality=DISPLAY_QUALITY)
            else:
                shutil.copyfile(src, tmp)
            os.replace(tmp, dest)
        return str(dest)

    # -- reading ---------------------------------------------------------------
    def build(self, session_id: str | None, selected: str | None = None,
              turn_result: Mapping[str, Any] | None = None) -> View:
        """Everything the panels show for ``session_id`` (empty View when None)."""
        if not session_id:
            return View()
        studio = self.studio
        session = as_dict(studio.session(session_id))
        history = [as_dict(a) for a in studio.history(session_id)]
        by_id = {a["id"]: a for a in history}
        head = next((a for a in history if a.get("is_head")), None) or as_dict(studio.head(session_id))
        pending = as_dict(studio.pending_review(session_id)) or None
        shown = by_id.get(selected) if selected else None
        if shown is None and pending:
            shown = by_id.get(pending.get("asset_id"))   # the turn under review is what the person judges
        shown = shown or head
        entries = views.version_entries(history, self.ops_table, (pending or {}).get("asset_id"))
        gallery = [(self.stage(studio.view_path(session_id, e["asset"]["id"], long_side=THUMB_LONG_SIDE)),
                    e["caption"]) for e in entries]
        # before and after in the same frame (a crop or rotation shows on both), transparency on a checkerboard
        before = self.stage(studio.view_path(session_id, shown["id"], long_side=COMPARE_LONG_SIDE, before=True))
        marks = (pending or {}).get("marks") if pending and shown["id"] == pending.get("asset_id") else None
        if marks and not geometry_settings(dict(shown.get("state") or {}).get("settings") or {}):
            before = self.circled(before, marks)   # the dust spots found, to confirm (same frame: no crop)
        after = self.stage(studio.view_path(session_id, shown["id"], long_side=COMPARE_LONG_SIDE))
        result = dict(turn_result or {})
        # "This turn" follows what is shown: a turn's plan only while its version is the one shown
        if result and result.get("status") in ("approved", "auto_approved", "awaiting_review") \
                and shown["id"] in (result.get("asset_id"), result.get("head_asset_id")):
            sub_goals = list(result.get("sub_goals") or [])
        elif pending and shown["id"] == pending.get("asset_id"):
            sub_goals = list(pending.get("sub_goals") or [])
        else:
            sub_goals = []
        base = by_id.get((pending or {}).get("asset_id")) or head
        # selections are made on the version the sliders move, as it is shown (its crop, its rotation)
        selection = studio.selection_preview(session_id)
        canvas = self.stage(studio.view_path(session_id, base["id"], long_side=SELECT_LONG_SIDE))
        return View(
            session=session, history=history, head=head, shown=shown, pending=pending,
            chat=views.chat_messages(studio.chat_log(session_id)),
            compare=(before, after), gallery=gallery, gallery_ids=[e["asset"]["id"] for e in entries],
            sub_goals=sub_goals, entries=entries, base=dict(base.get("state") or {}),
            quick_replies=views.quick_replies(result, QUICK_POOL),
            canvas=canvas, selection=self.stage(selection, for_display=True) if selection else None,
            export=self.export_file(session_id, result, entries),
        )

    def circled(self, picture: str, marks: list[dict]) -> str:
        """``picture`` with a ring round each mark (centre and radius as fractions), staged beside it."""
        from PIL import ImageDraw

        key = hashlib.sha256(repr(sorted((m["x"], m["y"], m["radius"]) for m in marks)).encode()).hexdigest()[:12]
        dest = Path(picture).with_name(f"{Path(picture).stem}-circled-{key}.jpg")
        if not dest.exists():
            with Image.open(picture) as im:
                im = im.convert("RGB")
                draw = ImageDraw.Draw(im)
                w, h = im.size
                width = max(2, round(max(w, h) / 400))
                for m in marks:
                    x, y = float(m["x"]) * w, float(m["y"]) * h
                    r = max(6.0, 1.6 * float(m["radius"]) * max(w, h))
                    draw.ellipse((x - r, y - r, x + r, y + r), outline=(255, 64, 160), width=width)
                im.save(dest, quality=92)
        return str(dest)

    def export_file(self, session_id: str, result: Mapping[str, Any], entries: list[dict]) -> str | None:
        """A chat export ("export it as a PNG") staged for the download box under its studio name."""
        path = result.get("export_path")
        if not path:
            return None
        title = str(as_dict(self.studio.session(session_id)).get("title") or "photo")
        head = result.get("head_asset_id")
        mark = next((e["number"] for e in entries if e["asset"]["id"] == head), None)
        return self.stage(path, views.export_name(title, mark, Path(path).suffix))

    def parent_of(self, session_id: str, asset_id: str) -> str | None:
        for a in self.studio.history(session_id):
            a = as_dict(a)
            if a["id"] == asset_id:
                return a.get("parent_id")
        return None

    def remembered_sessions(self, tokens: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
        """This browser's tokens -> ('My sessions' choices, tokens that no longer resume)."""
        choices, stale = [], []
        for token in tokens:
            try:
                info = as_dict(self.studio.resume(token))
            except SessionNotFound:
                stale.append(token)
                continue
            choices.append((views.session_label(info), token))
        return choices, stale


def run_with_progress(call: Callable[..., Any]) -> Iterator[tuple[str, Any]]:
    """Run ``call(progress=...)`` on a worker thread; yield ("event", dict) as it reports, then
    ("result", value) or ("error", exception).

    For generator handlers: each event can become an intermediate page update.
    If the browser goes away mid-turn the worker still finishes the turn (it
    lives in the store either way); its later events are simply not shown.
    """
    inbox: queue.Queue = queue.Queue()

    def work() -> None:
        try:
            inbox.put(("result", call(progress=lambda event: inbox.put(("event", event)))))
        except BaseException as exc:  # noqa: BLE001 - handed to the handler, which decides
            inbox.put(("error", exc))

    threading.Thread(target=work, name="atelier-turn", daemon=True).start()
    while True:
        kind, item = inbox.get()
        yield kind, item
        if kind != "event":
            return


def run_action(c: Mapping[str, Any], sv: SessionView, session_id: str, call: Callable[..., Any], *,
               event: Callable[[Mapping[str, Any]], dict] | None = None,
               failed: Callable[[Exception], dict] | None = None) -> Iterator[dict]:
    """Run ``call(progress=...)`` (a Studio write that may run a turn) for a generator handler: one update
    per progress event (``event(e)``, default the progress line and the sub-goals), then the whole view
    with the turn's warnings. An ``AtelierError`` becomes ``failed(error)`` (default: its message as the
    notice, the panels as they were: nothing changed in the session)."""
    result = None
    for kind, item in run_with_progress(call):
        if kind == "event":
            yield event(item) if event else progress_updates(c, sv, item)
        elif kind == "error":
            if not isinstance(item, AtelierError):
                raise item
            gr.Warning(str(item))
            yield failed(item) if failed else {c["notice"]: str(item),
                                               c["turn_progress"]: gr.update(value="", visible=False)}
            return
        else:
            result = as_dict(item)
    out = view_updates(c, sv.build(session_id, turn_result=result), sv)
    out[c["notice"]] = "  \n".join(f"⚠️ {w}" for w in result.get("warnings") or [])
    yield out


def progress_updates(c: Mapping[str, Any], sv: SessionView, event: Mapping[str, Any]) -> dict:
    """A progress event -> the live progress line and the turn's sub-goals as they execute."""
    rows = list(event.get("sub_goals") or [])
    return {
        c["turn_progress"]: gr.update(value=views.progress_html(event), visible=True),
        c["sub_goals"]: (views.sub_goals_markdown(rows, rows=sv.op_rows) if rows
                         else f"_{event.get('message') or 'Working…'}_"),
    }


def new_staging_dir() -> Path:
    """A private folder (mode 0700) in the system temp dir for files shown to browsers."""
    return Path(tempfile.mkdtemp(prefix="atelier-view-"))


def view_updates(c: Mapping[str, Any], view: View, sv: SessionView) -> dict:
    """A View -> updates for every session-bound component in ``c`` (a new session replaces them all)."""
    has = view.session is not None
    pending = view.pending
    review_ops = list((pending or {}).get("ops") or [])
    shown = view.shown
    reviewing = bool(pending and shown and shown["id"] == pending.get("asset_id"))
    viewing_other = bool(has and shown and view.head and shown["id"] != view.head["id"] and not reviewing)
    role = "Reviewing" if reviewing else "Viewing" if viewing_other else "Current"
    entry = views.entry_for(view.entries, shown["id"]) if shown else None
    title = ""
    if has:
        s = view.session
        title = f"**{s.get('title') or 'Untitled'}** · {s.get('width')}×{s.get('height')} px"
        if s.get("quality_schema") and s["quality_schema"] != "default":
            title += f" · judge *{s['quality_schema']}*"
        note = views.notices_markdown(s.get("notices"))
        title += f"  \n{note}" if note else ""
    sliders_on = has and not viewing_other
    base = view.base or {}
    # the sliders show the version shown: an older one read-only, else the one they move
    showing = dict(shown.get("state") or {}) if viewing_other else base
    mark = (entry or {}).get("number")
    review_entry = views.entry_for(view.entries, (pending or {}).get("asset_id")) if pending else None
    out = {
        c["compare"]: view.compare,
        c["compare_alt"]: views.alt_json(views.BEFORE_ALT, views.photo_alt(entry, role=role) if has else "No photo yet"),
        c["score"]: views.asset_summary(shown if has else None, role=role, entry=entry),
        c["photo_title"]: title,
        c["chat"]: view.chat,
        c["gallery"]: view.gallery,
        c["gallery_ids"]: view.gallery_ids,
        c["selected"]: shown["id"] if viewing_other else None,
        c["rollback_to"]: gr.update(visible=viewing_other),
        c["adj_summary"]: (views.adjustments_summary(base, sv.ops_table) if sliders_on else
                           "Viewing an earlier version: roll back to it to adjust it, or pick the current one."
                           if has else ""),
        c["adj_base"]: base if has else None,
        c["sub_goals"]: (views.sub_goals_markdown(view.sub_goals, version=mark, rows=sv.op_rows)
                         if view.sub_goals or not shown else views.version_note(entry)),
        c["review_panel"]: gr.update(visible=bool(pending)),
        c["review_md"]: views.review_markdown(pending, (review_entry or {}).get("number")),
        c["review_ops"]: review_ops,
        c["modify_target"]: sv.modify_target(review_ops, base),
        c["replan_feedback"]: "",
        c["studio_area"]: gr.update(visible=has),
        c["start_panel"]: gr.update(visible=not has),
        c["instruction"]: gr.update(interactive=has, placeholder=(
            "Keep talking: a new message keeps the version under review and goes on from it" if pending
            else "Tell me what to change, e.g. “make it warmer and brighter”")),
        c["send"]: gr.update(interactive=has),
        c["turn_progress"]: gr.update(value="", visible=False),
        c["export_file"]: gr.update(value=view.export, visible=bool(view.export)),
        c["undo"]: gr.update(interactive=has),
        c["redo"]: gr.update(interactive=has),
        c["shareable"]: gr.update(value=bool(has and view.session.get("shareable")), interactive=has),
        # the selection panel (ui/selection.py): the version the sliders move, as shown, nothing painted;
        # the session's selection tinted on it, moved with any crop or rotation since
        c["select_brush"]: ({"background": view.canvas, "layers": [], "composite": view.canvas} if has else None),
        c["select_click"]: (view.selection or view.canvas) if has else None,
        c["select_status"]: "",
        c["preview_key"]: sv.preview_key(view.session["id"]) if has else "",
    }
    settings = dict(showing.get("settings") or {})
    for name, widget in zip(c["adj_names"], c["adj_widgets"]):
        out[widget] = gr.update(value=settings.get(name, c["adj_defaults"].get(name, 0)), interactive=sliders_on)
    slots = views.layer_slots(showing if has else None, sv.ops_table, LAYER_POOL, LAYER_SLIDERS)
    out[c["layers_group"]] = gr.update(visible=any(slot["visible"] for slot in slots))
    for box, title_md, row, slot in zip(c["layer_boxes"], c["layer_titles"], c["layer_sliders"], slots):
        out[box] = gr.update(visible=slot["visible"])
        out[title_md] = f"**{html.escape(slot['title'])}**" if slot["visible"] else ""
        for slider, spec in zip(row, slot["sliders"]):
            out[slider] = gr.update(visible=spec["visible"], label=spec["label"] or "unused", minimum=spec["minimum"],
                                    maximum=spec["maximum"], step=spec["step"], value=spec["value"],
                                    interactive=sliders_on and spec["visible"])
    for button, text in zip(c["quick_replies"], view.quick_replies + [""] * QUICK_POOL):
        out[button] = gr.update(value=text or "…", visible=bool(text))
    out[c["quick_row"]] = gr.update(visible=bool(view.quick_replies))
    return out


#: Component names every full refresh writes (handlers list them as outputs).
VIEW_KEYS = ("compare", "compare_alt", "score", "photo_title", "chat", "gallery", "gallery_ids", "selected",
             "rollback_to", "adj_summary", "adj_base", "sub_goals", "review_panel", "review_md", "review_ops",
             "modify_target", "replan_feedback", "studio_area", "start_panel", "instruction", "send",
             "turn_progress", "export_file", "undo", "redo", "shareable", "select_brush", "select_click", "select_status", "preview_key",
             "layers_group", "quick_row")


def view_outputs(c: Mapping[str, Any]) -> list:
    return ([c[k] for k in VIEW_KEYS] + list(c["adj_widgets"]) + list(c["layer_boxes"]) + list(c["layer_titles"])
            + [s for row in c["layer_sliders"] for s in row] + list(c["quick_replies"]))
