"""``agent.service``: the one session API that the UI, the CLI, MCP tools, eval, batch and synthesis call.

:class:`Studio` is the facade; the parts it hands work to live beside it (see docs/architecture.md).
"""

from agent.service.studio import (MAX_EXAMPLE_CHARS, TURN_KINDS, AssetInfo, AtelierError, InvalidInput,
                                  ReviewPayload, SessionInfo, SessionNotFound, Studio, TurnResult, apply_recipe)

__all__ = ["AssetInfo", "AtelierError", "InvalidInput", "MAX_EXAMPLE_CHARS", "ReviewPayload", "SessionInfo",
           "SessionNotFound", "Studio", "TURN_KINDS", "TurnResult", "apply_recipe"]
