"""The studio page: lays out the panels and wires them; the serving settings that keep it safe.

``build_studio(studio)`` returns the ``gr.Blocks``; ``serving_options(studio)``
returns the ``launch()`` keywords (upload cap, minimal ``allowed_paths``, the
sessions folder and database blocked, no share link, no run history) and
``configure_queue`` bounds the queue so overload answers "busy" at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import gradio as gr

from ui import adjustments, api, browser, chat, compare, gallery, live, review, selection, start, theme
from ui.session_view import LAYER_POOL, LAYER_SLIDERS, SessionView, new_staging_dir

REPO = Path(__file__).resolve().parent.parent
ASSETS_DIR = REPO / "assets"

#: Largest upload accepted by the server (env ATELIER_MAX_UPLOAD, Gradio size syntax).
MAX_UPLOAD = "60mb"
#: Turns, reviews and exports running at once (2 suits a 2-core CPU Space; env ATELIER_CONCURRENCY).
STUDIO_CONCURRENCY = 2
#: Events waiting in the queue before new ones are refused with "busy" (env ATELIER_QUEUE_SIZE).
QUEUE_SIZE = 24


def demo_photos() -> list[Path]:
    """The demo photos shipped in assets/ (JPEGs), sorted by name."""
    return sorted(ASSETS_DIR.glob("*.jpg"))


def sessions_dir_of(studio: Any) -> Path:
    """Where the Studio keeps originals and renders (never served to browsers)."""
    found = getattr(studio, "sessions_dir", None)
    return Path(found or os.environ.get("ATELIER_SESSIONS_DIR") or REPO / "sessions").resolve()


def database_file_of(studio: Any) -> Path | None:
    """The SQLite file behind the Studio, if it uses one (to block it explicitly)."""
    url = str(getattr(studio, "database_url", "") or os.environ.get("ATELIER_DATABASE_URL") or "")
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///"):]).resolve()
    return None


def build_studio(studio: Any) -> gr.Blocks:
    """The whole page for one shared Studio; all per-person state lives in the browser and gr.State."""
    sv = SessionView(studio, new_staging_dir(), preview_secret=browser.browser_secret(sessions_dir_of(studio)))
    photos = demo_photos()
    # the config's review.review_mode is the studio's default (a Studio without a config: the service default)
    review_default = getattr(getattr(studio, "config", None), "review_mode", None) or "below_auto_approve"
    with gr.Blocks(title="Atelier — photo studio", fill_width=True, delete_cache=(3600, 24 * 3600)) as demo:
        c: dict = {"demo": demo}
        # /config publishes this key to every visitor: a key derived from the secret, never the secret
        c["browser"] = gr.BrowserState(browser.empty(), storage_key=browser.storage_key(),
                                       secret=browser.public_key(browser.browser_secret(sessions_dir_of(studio))))
        c["sid"] = gr.State(None)            # validated session id (server side only)
        c["selected"] = gr.State(None)       # gallery asset shown instead of the head
        c["gallery_ids"] = gr.State([])      # asset ids in gallery order
        c["review_ops"] = gr.State([])       # the pending turn's ops (the ones Modify points at)
        c["adj_base"] = gr.State(None)       # the EditState the sliders move (under review, else the head)
        start.create_ui(c, demo_photos=photos, styles=list(studio.styles()), default_review_mode=review_default,
                        quality_schemas=list(studio.list_schemas("quality")))
        with gr.Column(visible=False, elem_id="studio") as c["studio_area"]:
            with gr.Row(equal_height=False, elem_id="studio-row"):
                with gr.Column(scale=7, min_width=0, elem_id="photo-column"):
                    compare.create_ui(c)
                    selection.create_ui(c)
                with gr.Column(scale=4, min_width=0, elem_id="talk-column"):
                    chat.create_ui(c)
                    review.create_ui(c)
                    chat.create_conversation(c)
                with gr.Column(scale=3, min_width=0, elem_id="right-column"):
                    adjustments.create_ui(c, sv.ops_table)
            gallery.create_ui(c)
        api.create_ui(c, styles=list(studio.styles()), schemas=list(studio.list_schemas("quality")))

        start.create_event_handlers(c, sv, demo_photos=photos)
        compare.create_event_handlers(c, sv)
        selection.create_event_handlers(c, sv)
        chat.create_event_handlers(c, sv)
        review.create_event_handlers(c, sv)
        adjustments.create_event_handlers(c, sv)
        gallery.create_event_handlers(c, sv)
        api.create_event_handlers(c, sv)
    demo.studio_components = c  # for tests and scripting: components by name
    return configure_queue(demo)


def configure_queue(demo: gr.Blocks) -> gr.Blocks:
    """Bound the queue: a full queue answers 'busy, try again' at once instead of hanging."""
    limit = int(os.environ.get("ATELIER_CONCURRENCY") or STUDIO_CONCURRENCY)
    size = int(os.environ.get("ATELIER_QUEUE_SIZE") or QUEUE_SIZE)
    return demo.queue(max_size=size, default_concurrency_limit=limit)


def serving_options(studio: Any) -> dict:
    """``launch()`` keywords that keep the server safe to expose."""
    blocked = [str(sessions_dir_of(studio))]
    db = database_file_of(studio)
    if db is not None:
        blocked.append(str(db))
    private = getattr(studio, "private_paths", None)   # every file the service uses (agent.service)
    if callable(private):
        blocked += [str(p) for p in private() if str(p) not in blocked]
    # live slider previews (ui/live.py), signed with the same secret as the browser's memory
    routes = live.preview_routes(studio, browser.browser_secret(sessions_dir_of(studio)), (LAYER_POOL, LAYER_SLIDERS))
    return dict(
        app_kwargs={"routes": routes},
        max_file_size=os.environ.get("ATELIER_MAX_UPLOAD") or MAX_UPLOAD,
        allowed_paths=[str(ASSETS_DIR)],     # the demo photos; nothing else outside Gradio's cache
        blocked_paths=blocked,               # originals, renders, the database: never downloadable
        share=False,
        run_history=False,
        ssr_mode=False,
        show_error=False,
        footer_links=["api"],
        theme=theme.studio_theme(),
        css=theme.CSS,
        js=theme.JS,
    )
