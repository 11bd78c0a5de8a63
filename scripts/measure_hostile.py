"""Measure what a hostile model endpoint costs a real Studio (the figures in docs/security.md).

    python scripts/measure_hostile.py trickle [--deadline S] [--every S]
    python scripts/measure_hostile.py echo

``trickle``: an OpenAI-compatible endpoint on 127.0.0.1 (tests/fake_openai_server.py) sends its
headers at once, then one byte of a valid answer every ``--every`` seconds (default 2: the whole
answer would take about 20 minutes). Two people's turns run against it at once while a third person
opens a photo and reads its history; then one more turn runs. Prints how long each took, with the
config's turn deadline (default: configs/agent_config.yaml, 60 s).

``echo``: the endpoint answers 400 repeating the caller's request headers (``Authorization: Bearer
<key>`` included). Prints how many times the key appears in the turn's warnings, the database and
checkpoint files, a full trace and the log (all should be 0).
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

PLAN = {"reply": "Warmer.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}
KEY = "sk-measure-0123456789abcdefSECRETKEY"


def _studio(base_url: str, folder: Path, deadline: float | None):
    from agent.config import load_config
    from agent.service import Studio

    os.environ.update(ATELIER_VLM_BASE_URL=base_url, ATELIER_VLM_MODEL="Qwen/Qwen2.5-VL-7B-Instruct",
                      ATELIER_VLM_API_KEY=KEY)
    config = load_config()
    if deadline is not None:
        config = config.with_overrides(vlm={**config.vlm, "turn_deadline_s": deadline})
    return Studio(database_url=f"sqlite:///{folder / 'atelier.db'}", sessions_dir=folder / "sessions", config=config)


def trickle(deadline: float | None, every: float) -> None:
    from conftest import small_photo
    from fake_openai_server import FakeOpenAIServer, Reply

    photo = small_photo("astronaut", 640)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        reply = Reply.trickle(PLAN, every_s=every)
        server.responder = lambda r: reply
        studio = _studio(server.base_url, Path(tmp), deadline)
        body = len(reply.content) + 200
        print(f"endpoint: headers at once, then 1 byte every {every:g} s (the whole answer: ~{body * every / 60:.0f} min)")
        print(f"turn deadline: {studio.turn_deadline_s:g} s")
        sessions = [studio.start_session(photo, review_mode="never") for _ in range(2)]
        took: dict[int, float] = {}

        def turn(i: int) -> None:
            start = time.monotonic()
            studio.send_message(sessions[i].id, "make it warmer")
            took[i] = time.monotonic() - start

        threads = [threading.Thread(target=turn, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        start = time.monotonic()
        other = studio.start_session(photo, review_mode="never")
        studio.history(other.id)
        served = time.monotonic() - start
        for t in threads:
            t.join()
        print(f"two trickling turns at once: ended after {took[0]:.1f} s and {took[1]:.1f} s")
        print(f"meanwhile a third person opened a photo and read its history in {served:.2f} s")
        print(f"circuit: {studio.model_status()['state']} ({studio.model_status()['label']})")
        start = time.monotonic()
        studio.send_message(other.id, "make it warmer")
        print(f"the next turn (built-in planner while the circuit is open): {time.monotonic() - start:.2f} s")
        studio.close()


def echo() -> None:
    from agent.eval.trace import trace_line
    from agent.redact import install_log_redaction
    from conftest import small_photo
    from fake_openai_server import FakeOpenAIServer, Reply

    install_log_redaction()
    log = io.StringIO()
    logging.basicConfig(level=logging.DEBUG, stream=log)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer() as server:
        server.responder = lambda r: Reply.echoing(400)
        studio = _studio(server.base_url, Path(tmp), None)
        session = studio.start_session(small_photo("astronaut", 320), review_mode="never")
        result = studio.send_message(session.id, "make it warmer")
        trace = "\n".join(trace_line(t, "full") for t in studio.turn_log(session.id))
        sent = sum(r.headers.get("authorization", "").endswith(KEY) for r in server.requests)
        studio.close()
        files = [p for p in Path(tmp).rglob("*") if p.is_file()]
        in_files = sum(p.read_bytes().count(KEY.encode()) for p in files)
        print(f"requests that carried the key: {sent}; answers that echoed it: {len(server.requests)}")
        told = " ".join(result.warnings)
        print(f"the key in the turn's warnings: {told.count(KEY)} ('[redacted]' in its place: {told.count('[redacted]')})")
        print(f"the key in {len(files)} database, checkpoint and session files: {in_files}")
        print(f"the key in a full trace: {trace.count(KEY)}; in the log ({len(log.getvalue())} chars): "
              f"{log.getvalue().count(KEY)}; in repr(settings): {repr(studio.planner.client.settings).count(KEY)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/measure_hostile.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("trickle", "echo"))
    parser.add_argument("--deadline", type=float, help="turn deadline in seconds (default: the config's)")
    parser.add_argument("--every", type=float, default=2.0, help="seconds between trickled bytes (default 2)")
    args = parser.parse_args(argv)
    trickle(args.deadline, args.every) if args.what == "trickle" else echo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
