"""The orchestrator's limits (``orchestrator:`` in configs/agent_config.yaml) and its model endpoint (env).

Model: ``ATELIER_ORCH_BASE_URL``, ``ATELIER_ORCH_MODEL``, ``ATELIER_ORCH_API_KEY``; each falls back to
the matching ``ATELIER_VLM_*`` variable, so one OpenAI-compatible server (Ollama, vLLM, OpenAI) can serve
both. The command line overrides both (``--base-url``, ``--model``, ``--model-timeout``...).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

DEFAULTS: dict[str, float] = {"max_tool_calls": 8, "max_invalid_retries": 2, "model_timeout_s": 60.0,
                              "temperature": 0.0, "max_tokens": 800}
_LIMITS = {"max_tool_calls": (1, 100, int), "max_invalid_retries": (0, 20, int),
           "model_timeout_s": (0.1, 3600, float), "temperature": (0.0, 2.0, float), "max_tokens": (16, 32768, int)}
ENV = {"base_url": ("ATELIER_ORCH_BASE_URL", "ATELIER_VLM_BASE_URL"),
       "model": ("ATELIER_ORCH_MODEL", "ATELIER_VLM_MODEL"),
       "api_key": ("ATELIER_ORCH_API_KEY", "ATELIER_VLM_API_KEY")}


def orchestrator_settings(raw: Mapping[str, Any] | None = None, **overrides: Any) -> dict:
    """DEFAULTS < ``raw`` (the config section) < ``overrides`` (None = not given); ValueError names the key."""
    out = dict(DEFAULTS)
    for source in (dict(raw or {}), {k: v for k, v in overrides.items() if v is not None}):
        for key, value in source.items():
            if key not in _LIMITS:
                raise ValueError(f"orchestrator.{key}: unknown key; expected some of {', '.join(_LIMITS)}")
            lo, hi, kind = _LIMITS[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi \
                    or (kind is int and value != int(value)):
                what = "a whole number" if kind is int else "a number"
                raise ValueError(f"orchestrator.{key}: expected {what} {lo}..{hi}, got {value!r}")
            out[key] = kind(value)
    return out


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
