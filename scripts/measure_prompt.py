"""Tokens per turn the VLM planner sends: the whole op table (before) against the scoped prompt (now).

    python scripts/measure_prompt.py [--model Qwen/Qwen2.5-VL-7B-Instruct]

Plays a conversation of ordinary requests through the real VLM planner and ``openai`` client against the
tests' OpenAI-compatible server on 127.0.0.1 (tests/fake_openai_server.py), twice: with the profile's
``prompt_scope`` and without it (every op described, the mask guide always). It prints, per turn, the
characters of text the server received (system + user; the images are the same both ways) and tokens
estimated as characters / 4 (the usual figure for English with OpenAI's tokenizers), then the totals and
the ratio measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[1] / "tests")]

CONVERSATION = ["make it warmer", "the sky is too bright now", "a bit more contrast",
                "clean up the blemishes on her skin", "crop it square", "give it a film look with some grain",
                "the greens look too yellow", "undo that"]
PLAN = {"reply": "Warmer light.", "understood": True, "sub_goals": [{"op": "temperature", "value": 20}]}


def measure(model: str) -> dict:
    import numpy as np
    from skimage import data as skdata

    from agent.model.vlm import VLMClient, VLMSettings
    from agent.planning.base import PlanRequest
    from agent.planning.vlm import VLMPlanner
    from fake_openai_server import FakeOpenAIServer, Reply
    from pipeline.measure import image_stats
    from pipeline.state import EditState

    img = np.ascontiguousarray(skdata.astronaut()[::2, ::2])
    rows = []
    with FakeOpenAIServer(model=model) as server:
        client = VLMClient(VLMSettings(base_url=server.base_url, model=model, api_key="local", timeout_s=10,
                                       max_retries=0, turn_deadline_s=30, repair_attempts=0))
        scoped = VLMPlanner(client)
        full = VLMPlanner(VLMClient(replace(client.settings), profile=replace(client.profile, prompt_scope={})))
        state = EditState()
        for turn, message in enumerate(CONVERSATION, 1):
            row = {"turn": turn, "message": message}
            for name, planner in (("before", full), ("now", scoped)):
                server.script(Reply.json(PLAN))
                planner.plan(PlanRequest(message=message, state=state, image=img, original=img, turn=turn,
                                         image_stats=image_stats(img)))
                chars = len(server.requests[-1].text())
                row[name] = {"chars": chars, "tokens": round(chars / 4)}
            rows.append(row)
            state = state.with_value("temperature", 20 * turn % 60)   # the photo gains settings as it goes
    before = sum(r["before"]["tokens"] for r in rows)
    now = sum(r["now"]["tokens"] for r in rows)
    return {"model": model, "turns": rows, "before_tokens": before, "now_tokens": now,
            "ratio": round(now / before, 3)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="Qwen/Qwen2.5-VL-7B-Instruct")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = measure(args.model)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"planner prompt per turn, {report['model']} (text only; tokens ~ characters / 4)")
    for r in report["turns"]:
        print(f"  turn {r['turn']}: {r['before']['tokens']:>5} -> {r['now']['tokens']:>5} tokens  {r['message']!r}")
    print(f"total {report['before_tokens']} -> {report['now_tokens']} tokens (ratio {report['ratio']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
