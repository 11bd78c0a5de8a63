"""The orchestrator's limits (``orchestrator:`` in configs/agent_config.yaml) and its model endpoint (env).

Model: ``ATELIER_ORCH_BASE_URL``, ``ATELIER_ORCH_MODEL``, ``ATELIER_ORCH_API_KEY``; each falls back to
the matching ``ATELIER_VLM_*`` variable, so one OpenAI-compatible server (Ollama, vLLM, OpenAI) can serve
both. The command line overrides both (``--base-url``, ``--model``, ``--model-timeout``...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from agent.config import OrchestratorSettings, load_section

ENV = {"base_url": ("ATELIER_ORCH_BASE_URL", "ATELIER_VLM_BASE_URL"),
       "model": ("ATELIER_ORCH_MODEL", "ATELIER_VLM_MODEL"),
       "api_key": ("ATELIER_ORCH_API_KEY", "ATELIER_VLM_API_KEY")}


def orchestrator_settings(raw: OrchestratorSettings | Mapping[str, Any] | None = None, **overrides: Any) -> dict:
    """Defaults < ``raw`` (the config section) < ``overrides`` (None = not given), checked by
    agent.config.OrchestratorSettings; ValueError names the key."""
    base = raw.model_dump(exclude_unset=True) if isinstance(raw, OrchestratorSettings) else dict(raw or {})
    given = {k: v for k, v in overrides.items() if v is not None}
    return load_section("orchestrator", {**base, **given}).model_dump()


@dataclass(frozen=True)
class ModelEndpoint:
    base_url: str
    model: str
    api_key: str

    @classmethod
    def from_env(cls, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None) -> "ModelEndpoint":
        def pick(given, names):
            return given or next((os.environ[n] for n in names if os.environ.get(n)), "")

        url, name = pick(base_url, ENV["base_url"]), pick(model, ENV["model"])
        if not url or not name:
            raise ValueError("no chat model configured: set ATELIER_ORCH_BASE_URL and ATELIER_ORCH_MODEL "
                             "(or ATELIER_VLM_BASE_URL / ATELIER_VLM_MODEL), or pass --base-url and --model")
        return cls(base_url=url, model=name, api_key=pick(api_key, ENV["api_key"]) or "not-needed")
