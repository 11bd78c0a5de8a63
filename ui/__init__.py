"""The studio's Gradio panels.

Each panel module (``start``, ``compare``, ``chat``, ``adjustments``,
``review``, ``gallery``, ``api``) has ``create_ui()``, which lays out its
components and returns them by name, and ``create_event_handlers()``, which
wires them to :class:`ui.session_view.SessionView` (the one place that reads
``agent.service.Studio``). ``ui.views`` holds the pure functions that turn
service records (plain dicts) into chat messages, captions and panel text.

Nothing here keeps per-person state at module level: a browser's session lives
in ``gr.BrowserState`` (its resume token) and ``gr.State`` (the validated
session id), and the Studio itself is shared and stateless per person.
"""
