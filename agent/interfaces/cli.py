"""Talk to a photo from the terminal: scripted (``--say``) or interactive.

Usage::

    python -m agent.cli IMAGE [--say TEXT ...] [--auto-approve] [--session ID] [--json]
                              [--style NAME] [--review-mode MODE]

Each ``--say`` is one turn: a request in plain words ("make it warmer and
brighter") or a review command:

- ``/approve``                  keep the version under review
- ``/modify op=value ...``      set slider values (e.g. ``/modify saturation=-20``), no planner
- ``/rollback <turn|asset-id>`` move the head back (``/rollback 1``); later versions stay in the history
- ``/replan <feedback>``        ask for a different plan for the turn under review
- ``/undo``, ``/redo``          step back along the versions / bring an undone one back (bit-exact)
- ``/export [jpeg|png|tiff]``   write the current version at full size and print its path
- ``/quit``                     leave the interactive mode

Plain words work too: "undo", "go back two steps", "start over", "what did you
change?", "export as png", "how does it look?". When the agent asks a question
or has suggestions, they are listed as numbered quick replies; answer with the
number (``1``) to send that reply. ``--export FMT`` writes the final version
after the ``--say`` turns.

A plain request while a turn waits for review keeps (approves) that turn
first, as a photographer moving on would expect; the approval is printed as
its own result. ``/approve`` when nothing waits for review (the turn was
already kept automatically) prints a note on stderr and no result, so a
script such as ``--say "warmer" --say "/approve"`` works in every review mode.

``--session ID`` continues an existing session; IMAGE may then be omitted (it
is ignored if given). ``--auto-approve`` sets the review mode to "never" for a
new session. With ``--json`` each turn prints one JSON object on one line
(session_id, turn, status, reply, sub_goals, score, assessment, asset_id,
head_asset_id, rendered_path, warnings, review); progress and the session id
go to stderr. Without ``--say`` the CLI is interactive (same commands).

Exit codes: 0 done (a turn that failed is reported in its result), 2 bad input
(unreadable image, unknown session, malformed command) with a message on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable

from agent.config import REVIEW_MODES
from agent.errors import AtelierError


class CommandError(ValueError):
    """A review command that cannot be read: the message says the right form."""


def parse_command(text: str) -> tuple[str, dict]:
    """'/modify saturation=-20' -> ("modify", {"values": {"saturation": -20}}); plain text -> ("say", {...})."""
    text = text.strip()
    if not text.startswith("/"):
        return "say", {"text": text}
    word, _, rest = text[1:].partition(" ")
    word, rest = word.lower(), rest.strip()
    if word == "approve":
        return "approve", {}
    if word == "quit" or word == "exit":
        return "quit", {}
    if word == "rollback":
        if not rest:
            raise CommandError("/rollback needs a turn number or a version id, e.g. /rollback 1")
        return "rollback", {"target": int(rest) if rest.isdigit() else rest}
    if word == "replan":
        return "replan", {"feedback": rest}
    if word in ("undo", "redo"):
        return word, {}
    if word == "export":
        fmt = (rest or "jpeg").lower()
        if fmt not in ("jpeg", "jpg", "png", "tiff", "tif"):
            raise CommandError(f"/export takes jpeg, png or tiff; got {rest!r}")
        return "export", {"fmt": fmt}
    if word == "modify":
        values = {}
        for pair in rest.split():
            name, eq, number = pair.partition("=")
            try:
                if not eq:
                    raise ValueError
                values[name.strip()] = int(number)
            except ValueError:
                raise CommandError(f"/modify expects op=whole-number pairs, e.g. saturation=-20; got {pair!r}") from None
        if not values:
            raise CommandError("/modify needs at least one op=value, e.g. /modify saturation=-20")
        return "modify", {"values": values}
    raise CommandError(f"unknown command /{word}; use /approve, /modify, /rollback, /replan, /undo, /redo, "
                       "/export or /quit")


def pick_quick_reply(text: str, quick_replies: list[str] | None) -> str:
    """'2' -> the second quick reply offered by the last result (anything else unchanged)."""
    text = text.strip()
    if quick_replies and text.isdigit() and 1 <= int(text) <= len(quick_replies):
        return quick_replies[int(text) - 1]
    return text


def run_command(studio, session_id: str, text: str, note: Callable[[str], None] = print,
                quick_replies: list[str] | None = None) -> list:
    """Run one line against a session; returns the TurnResults it produced (an implicit approve first, if any).

    ``/approve`` with nothing under review (the turn was already kept) is not
    an error in a script: it produces no result and ``note`` says so. A number
    picks one of ``quick_replies`` (the last result's).
    """
    kind, args = parse_command(pick_quick_reply(text, quick_replies))
    results = []
    if kind == "say":
        if studio.pending_review(session_id) is not None:
            results.append(studio.review(session_id, "approve"))
        results.append(studio.send_message(session_id, args["text"]))
    elif kind == "approve":
        if studio.pending_review(session_id) is None:
            note("nothing is waiting for review: the last turn was already kept")
        else:
            results.append(studio.review(session_id, "approve"))
    elif kind == "rollback":
        results.append(studio.review(session_id, "rollback", target=args["target"]))
    elif kind == "replan":
        results.append(studio.review(session_id, "replan", feedback=args["feedback"]))
    elif kind == "modify":
        results.append(studio.review(session_id, "modify", values=args["values"]))
    elif kind == "undo":
        results.append(studio.undo(session_id))
    elif kind == "redo":
        results.append(studio.redo(session_id))
    elif kind == "export":
        note(f"exported: {studio.export(session_id, fmt=args['fmt'])}")
    return results


def turn_json(result) -> dict:
    d = result.to_dict()
    keys = ("session_id", "turn", "status", "reply", "sub_goals", "score", "assessment", "dimensions",
            "asset_id", "head_asset_id", "rendered_path", "warnings", "review", "kind", "quick_replies",
            "export_path")
    return {k: d.get(k) for k in keys}


def turn_lines(result) -> list[str]:
    """Readable progress lines: planner, executor, quality, then the reply."""
    lines = []
    if result.sub_goals:
        lines.append("planner: " + "; ".join(
            f"{g['op']} {g['value']:+d}" + (f" on {g['target'].get('type')}" if g.get("target") else "")
            for g in result.sub_goals))
        lines.append("executor: " + ", ".join(f"{g['op']} {g.get('status', '')}" for g in result.sub_goals)
                     + (f" -> {result.asset_id}" if result.asset_id else ""))
    if result.score is not None:
        lines.append(f"quality: {result.score:.2f} {result.assessment}")
    lines.append(f"[T{result.turn} {result.status}] {result.reply}")
    if result.rendered_path:
        lines.append(f"  image: {result.rendered_path}")
    for w in result.warnings:
        lines.append(f"  note: {w}")
    for i, q in enumerate(getattr(result, "quick_replies", None) or [], 1):
        lines.append(f"  {i}) {q}")
    return lines


def _emit(results, as_json: bool, out: Callable[[str], None]) -> None:
    for r in results:
        if as_json:
            out(json.dumps(turn_json(r), ensure_ascii=False))
        else:
            for line in turn_lines(r):
                out(line)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agent.cli", description="Retouch a photo by talking to it.")
    p.add_argument("image", nargs="?", help="photo to start a session from (ignored with --session)")
    p.add_argument("--say", action="append", default=[], metavar="TEXT",
                   help="one turn: a request or /approve, /modify op=value, /rollback N, /replan text")
    p.add_argument("--auto-approve", action="store_true", help="never stop for review (review mode 'never')")
    p.add_argument("--session", metavar="ID", help="continue an existing session")
    p.add_argument("--json", action="store_true", help="one JSON object per turn on stdout")
    p.add_argument("--style", metavar="NAME", help="a named look for a new session (film, airy, moody, ...)")
    p.add_argument("--review-mode", choices=REVIEW_MODES, help="when to stop for review (new sessions)")
    p.add_argument("--sessions-dir", metavar="DIR", help="where sessions live (default: ATELIER_SESSIONS_DIR or sessions/)")
    p.add_argument("--export", metavar="FMT", choices=("jpeg", "jpg", "png", "tiff", "tif"),
                   help="after the turns, write the current version at full size (jpeg, png or tiff)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    err = lambda msg: print(msg, file=sys.stderr)  # noqa: E731

    def fail(msg: str) -> int:
        err(f"error: {msg}")
        return 2

    if not args.session and not args.image:
        return fail("give an IMAGE to start a session, or --session ID to continue one")
    if not args.session and not Path(args.image).is_file():
        return fail(f"there is no file named {args.image!r}")
    try:
        for line in args.say:
            parse_command(line)  # refuse a malformed script before any turn runs
    except CommandError as exc:
        return fail(str(exc))

    from agent.service import Studio

    try:
        studio = Studio(sessions_dir=args.sessions_dir)
    except AtelierError as exc:
        return fail(str(exc))
    try:
        try:
            if args.session:
                info = studio.session(args.session)
            else:
                mode = "never" if args.auto_approve else args.review_mode
                info = studio.start_session(args.image, style=args.style, review_mode=mode)
        except AtelierError as exc:
            return fail(str(exc))
        err(f"session {info.id} ({info.title}, {info.width}x{info.height}); continue with --session {info.id}")
        for notice in info.notices:
            err(f"note: {notice}")
        if args.say:
            replies: list[str] = []
            for line in args.say:
                try:
                    results = run_command(studio, info.id, line, note=lambda m: err(f"note: {m}"),
                                          quick_replies=replies)
                except AtelierError as exc:
                    return fail(str(exc))
                _emit(results, args.json, print)
                if results:
                    replies = list(results[-1].quick_replies)
            if args.export:
                print(f"exported: {studio.export(info.id, fmt=args.export)}")
            return 0
        code = _interactive(studio, info.id, args.json)
        if args.export:
            print(f"exported: {studio.export(info.id, fmt=args.export)}")
        return code
    finally:
        studio.close()


def _interactive(studio, session_id: str, as_json: bool) -> int:
    print("Say what you would like to change; /approve, /modify op=value, /rollback N, /replan text, /undo, /redo, "
          "/export png, /quit. A number picks a quick reply.")
    replies: list[str] = []
    while True:
        try:
            line = input("you> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        if not line:
            continue
        try:
            if parse_command(line)[0] == "quit":
                return 0
            results = run_command(studio, session_id, line, note=lambda m: print(f"  {m}"), quick_replies=replies)
            _emit(results, as_json, print)
            if results:
                replies = list(results[-1].quick_replies)
        except (CommandError, AtelierError) as exc:
            print(f"  {exc}")


if __name__ == "__main__":
    sys.exit(main())
