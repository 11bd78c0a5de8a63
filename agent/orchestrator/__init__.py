"""``python -m agent.orchestrator [chat|eval]``: a chat model driving Atelier's MCP tools (docs/mcp.md).

- :mod:`agent.orchestrator.loop`: the state loop (limits, schema validation, canonical results, traces).
- :mod:`agent.orchestrator.eval`: canned conversations with a summary and JSONL traces.
- :mod:`agent.orchestrator.config`: limits from ``orchestrator:`` in the config, the model from env.
"""

from agent.orchestrator.loop import Orchestrator, ToolBox, Tracer, TurnOutcome

__all__ = ["Orchestrator", "ToolBox", "Tracer", "TurnOutcome"]
