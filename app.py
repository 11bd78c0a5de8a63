"""Atelier's studio in the browser: ``python app.py [--host 127.0.0.1] [--port 7860]``.

Layout and wiring only (panels in ``ui/``); every read and write goes through
``agent.service.Studio``. With no ``ATELIER_VLM_*`` variables it runs on the
embedded planner and judge, so it starts in seconds on a laptop or a CPU Space.

Environment (all optional): ``ATELIER_SESSIONS_DIR``, ``ATELIER_DATABASE_URL``,
``ATELIER_VLM_BASE_URL`` / ``_MODEL`` / ``_API_KEY`` (see DESIGN.md);
``ATELIER_BROWSER_STORAGE_KEY`` / ``ATELIER_BROWSER_SECRET`` (ui/browser.py);
``ATELIER_MAX_UPLOAD`` (default 60mb), ``ATELIER_CONCURRENCY`` (default 2),
``ATELIER_QUEUE_SIZE`` (default 24).
"""

from __future__ import annotations

import argparse
import os

from agent.service import Studio
from ui.layout import build_studio, serving_options


def create_app(studio=None):
    """The studio's ``gr.Blocks`` and its launch keywords, for one shared Studio."""
    studio = studio or Studio()
    options = serving_options(studio)
    from agent.interfaces.a2a import mount_a2a  # the A2A card (/.well-known/agent-card.json) and endpoint (/a2a)
    mount_a2a(options, studio)
    return build_studio(studio), options


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Atelier: a conversational photo-retouching studio.")
    # A Hugging Face Space sets GRADIO_SERVER_NAME=0.0.0.0; locally the default stays private.
    parser.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT") or 7860))
    args = parser.parse_args(argv)
    demo, options = create_app()
    demo.launch(server_name=args.host, server_port=args.port, **options)


if __name__ == "__main__":
    main()
