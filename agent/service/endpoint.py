"""The model endpoint as the studio sees it: one turn deadline, one circuit breaker, a status badge."""

from __future__ import annotations

from agent.config import AgentConfig
from agent.model.vlm import DEFAULT_COOLDOWN_S, ModelCircuit, VLMClient, VLMSettings, vlm_limits


class ModelEndpoint:
    """Gives the planner's and the judge's VLM clients one shared circuit and the config's turn deadline."""

    def __init__(self, config: AgentConfig, *parts):
        limits = vlm_limits(config)
        self.turn_deadline_s = float(limits.get("turn_deadline_s", VLMSettings.turn_deadline_s))
        self.circuit = ModelCircuit(float(limits.get("circuit_cooldown_s", DEFAULT_COOLDOWN_S)))
        self.clients: list[VLMClient] = []
        for part in parts:
            client = getattr(part, "client", None)
            if isinstance(client, VLMClient):
                client.circuit = self.circuit
                self.clients.append(client)

    def status(self) -> dict:
        """Which planner and judge answer now, for the studio's badge.

        ``{"state": "model" | "fallback" | "embedded", "label": str, "until": ISO time or None}``:
        "model" = the configured VLM; "fallback" = the VLM stopped answering (timeout or refused
        connection) and the built-in planner and judge stand in until ``until``; "embedded" = no
        model is configured.
        """
        if not self.clients:
            return {"state": "embedded", "label": "Built-in planner and judge", "until": None}
        where = self.clients[0].where
        until = self.circuit.until
        if until is not None:
            return {"state": "fallback", "until": until.isoformat(),
                    "label": f"Built-in fallback until {until:%H:%M:%S} UTC ({where} is not answering)"}
        return {"state": "model", "label": f"Model: {where}", "until": None}
