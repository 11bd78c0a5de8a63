"""python -m agent.orchestrator [chat|eval] — see docs/mcp.md."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import anyio

from agent.orchestrator.loop import Orchestrator, ToolBox, Tracer, model_client as make_model_client


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m agent.orchestrator",
                                description="A chat model (OpenAI-compatible) driving Atelier's MCP tools.")
    p.add_argument("mode", nargs="?", choices=("chat", "eval"), default="chat")
    p.add_argument("--verbose", action="store_true", help="print each turn, its tool calls and the answer")
    p.add_argument("--trace", action="store_true", help="print the trace lines (JSON) to stderr")
    p.add_argument("--trace-level", choices=("basic", "full"), default="basic",
                   help="basic: per tool call; full: also whole results and every model request")
    p.add_argument("--trace-out", metavar="FILE", help="write the trace as JSONL (one line per call)")
    p.add_argument("--mcp-transport", choices=("stdio", "streamable-http"), default="stdio")
    p.add_argument("--mcp-url", help="the server's /mcp URL for streamable-http")
    p.add_argument("--mcp-cmd", help="command that starts the stdio server (default: python -m agent.mcp)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: $ATELIER_ORCH_BASE_URL, "
                                      "else $ATELIER_VLM_BASE_URL)")
    p.add_argument("--model", help="model name (default: $ATELIER_ORCH_MODEL, else $ATELIER_VLM_MODEL)")
    p.add_argument("--model-timeout", type=float, metavar="S", help="seconds one model request may take")
    p.add_argument("--max-tool-calls", type=int, metavar="N", help="tool calls per turn at most")
    p.add_argument("--max-invalid-retries", type=int, metavar="M", help="invalid tool calls fed back per turn")
    p.add_argument("--conversations", metavar="FILE", help="eval: conversations YAML (default: the shipped set)")
    p.add_argument("--json", action="store_true", help="eval: print the full report as JSON")
    return p


async def _main(args) -> int:
    from agent.config import load_config
    from agent.orchestrator.config import ModelEndpoint, orchestrator_settings
    from agent.orchestrator.eval import load_conversations, run_conversation, summary

    settings = orchestrator_settings(load_config().orchestrator, max_tool_calls=args.max_tool_calls,
                                     max_invalid_retries=args.max_invalid_retries,
                                     model_timeout_s=args.model_timeout)
    endpoint = ModelEndpoint.from_env(args.base_url, args.model)
    model_client = make_model_client(endpoint.base_url, endpoint.api_key, settings["model_timeout_s"])
    trace_file = open(args.trace_out, "w", encoding="utf-8") if args.trace_out else None
    tracer = Tracer(trace_file, args.trace_level, echo=sys.stderr if args.trace else None)
    say = (lambda line: print(line, flush=True)) if args.verbose or args.mode == "chat" else None
    command = shlex.split(args.mcp_cmd) if args.mcp_cmd else None
    conversations = load_conversations(args.conversations) if args.mode == "eval" else []
    # MCP roots: the person's working folder, and the folders of the eval's photos
    roots = [Path.cwd()] + [Path(c["photo"]).parent for c in conversations if c.get("photo")]
    try:
        async with AsyncExitStack() as stack:
            tools = await ToolBox.connect(stack, args.mcp_transport, args.mcp_url, command, roots=roots)

            async def fresh() -> Orchestrator:
                orch = Orchestrator(model_client, endpoint.model, tools, settings, tracer)
                await orch.start()
                return orch

            if args.mode == "eval":
                records = [await run_conversation(fresh, conv, verbose=say) for conv in conversations]
                report = summary(records, tracer.records)
                if args.json:
                    print(json.dumps({"summary": report, "conversations": records}, indent=2, default=str))
                else:
                    for r in records:
                        print(f"{'PASS' if r['passed'] else 'FAIL'} {r['name']}: {r['tool_calls']} tool calls, "
                              f"{r['invalid_calls']} invalid, {r['seconds']} s"
                              + ("" if r["passed"] else f" — {json.dumps(r['checks'])}"))
                    print(f"{report['passed']}/{report['conversations']} conversations passed; "
                          f"{report['tool_calls']} tool calls, {report['invalid_calls']} invalid; "
                          f"median tool call {report['tool_ms_median']} ms")
                return 0 if report["passed"] == report["conversations"] else 1
            orch = await fresh()
            print("Atelier orchestrator: say what to do with a photo (give its path); an empty line or "
                  "Ctrl-D quits.", flush=True)
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line.strip():
                    return 0
                outcome = await orch.turn(line.strip())
                print(outcome.answer, flush=True)
    finally:
        if trace_file:
            trace_file.close()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.mcp_transport == "streamable-http" and not args.mcp_url:
        print("--mcp-url is needed with --mcp-transport streamable-http", file=sys.stderr)
        return 2
    try:
        return anyio.run(_main, args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
