"""The one OpenAI-compatible VLM client: timeouts, retries, images, JSON extraction, repair.

Atelier talks to any server that speaks ``POST /v1/chat/completions`` (vLLM,
Ollama, LM Studio, OpenAI, ...) through the ``openai`` package. Configuration:

- ``ATELIER_VLM_BASE_URL`` (e.g. ``http://127.0.0.1:8000/v1``), ``ATELIER_VLM_MODEL``,
  ``ATELIER_VLM_API_KEY`` (optional for local servers). Unset = embedded planner and judge.
- Limits come from the ``vlm:`` section of ``configs/agent_config.yaml`` when
  present (keys: ``timeout_s``, ``max_retries``, ``turn_deadline_s``,
  ``repair_attempts``, ``temperature``, ``max_tokens``, ``circuit_cooldown_s``),
  else the defaults of :class:`VLMSettings`.
- One deadline per turn (:func:`turn_deadline`, set by the Studio around each
  turn) bounds the planner's and the judge's calls together; a timeout or a
  refused connection trips the :class:`ModelCircuit` the Studio shares between
  them, and until its cool-down ends calls raise :class:`ModelResting` at once
  (the built-in planner and judge answer, quietly: the person was told once).
- How to talk to a model family (structured output, image size, images per
  request, prompt guidance, score calibration) comes from its profile in
  ``profiles/`` (:class:`VLMProfile`).

:meth:`VLMClient.ask_json` is the whole protocol: send the prompt and images,
get text, extract one JSON object (from JSON-schema mode, or by stripping code
fences and finding the object), validate it against an output schema plus a
caller's checks, feed the problems back to the model at most
``repair_attempts`` times, and otherwise raise :class:`VLMError` whose
``reason`` is a line a person reads. Nothing the model says is returned unless
it validated.
"""

from __future__ import annotations

import base64
import contextvars
import io
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import urlparse

import numpy as np
import yaml
from PIL import Image

from agent.redact import install_log_redaction, redact, register_secret
from agent.config import DEFAULT_CONFIG_PATH, AgentConfig, VLMLimits, load_section
from schemas import Schema

ENV_BASE_URL = "ATELIER_VLM_BASE_URL"
ENV_MODEL = "ATELIER_VLM_MODEL"
ENV_API_KEY = "ATELIER_VLM_API_KEY"

STRUCTURED_MODES = ("json_schema", "json_object", "none")


class VLMError(Exception):
    """The model could not produce a usable answer this turn. ``reason`` is a line for the person."""

    def __init__(self, reason: str):
        self.reason = redact(reason)   # an endpoint may echo the caller's Authorization header back
        super().__init__(self.reason)


class ModelResting(VLMError):
    """The circuit is open: no request was sent. The person was told when it opened, so callers stay quiet."""


# ---------------------------------------------------------------------------
# settings
# ---------------------------------------------------------------------------

#: The ``vlm:`` section's defaults (agent.config.VLMLimits, with their ranges).
_DEFAULTS = VLMLimits()


@dataclass(frozen=True)
class VLMSettings:
    """Where the model is and how long we wait for it. Times in seconds.

    ``timeout_s`` bounds one HTTP request (the SDK's own default is 600 s);
    ``max_retries`` bounds re-sends after 429/5xx/timeouts/dropped connections;
    ``turn_deadline_s`` bounds everything one turn's planner and judge calls may
    take together, repairs and retries included (a Studio sets it per turn with
    :func:`turn_deadline`; a call outside a turn gets it alone); ``repair_attempts`` is how many times a
    reply that fails validation is sent back to the model with the problems.
    """

    base_url: str
    model: str
    api_key: str = field(default="", repr=False)   # never in a repr, a log line or a trace
    timeout_s: float = _DEFAULTS.timeout_s
    max_retries: int = _DEFAULTS.max_retries
    turn_deadline_s: float = _DEFAULTS.turn_deadline_s
    repair_attempts: int = _DEFAULTS.repair_attempts
    temperature: float = _DEFAULTS.temperature
    max_tokens: int = _DEFAULTS.max_tokens

    def __post_init__(self) -> None:
        register_secret(self.api_key)   # redacted from every error text, log and row from now on

    @property
    def where(self) -> str:
        """'qwen2.5-vl-7b at 127.0.0.1:8000' — how notes name the model."""
        host = urlparse(self.base_url).netloc or self.base_url
        return f"{self.model} at {host}"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, config: Any = None) -> "VLMSettings | None":
        """Settings from ``ATELIER_VLM_*`` and the config's ``vlm:`` section; None when no VLM is set."""
        env = os.environ if env is None else env
        base_url = (env.get(ENV_BASE_URL) or "").strip()
        model = (env.get(ENV_MODEL) or "").strip()
        if not base_url or not model:
            return None
        limits = {k: v for k, v in vlm_limits(config).items() if k not in _CIRCUIT_KEYS}
        return cls(base_url=base_url, model=model, api_key=(env.get(ENV_API_KEY) or "").strip(), **limits)


#: Keys of the ``vlm:`` section that are not request settings (read by the Studio's circuit).
_CIRCUIT_KEYS = ("circuit_cooldown_s",)
DEFAULT_COOLDOWN_S = _DEFAULTS.circuit_cooldown_s


def vlm_limits(config: Any = None) -> dict:
    """The ``vlm:`` limits set in an AgentConfig, a mapping (``{"vlm": {...}}`` or the section), or the YAML file.

    Only the keys the section sets (the rest are :class:`agent.config.VLMLimits` defaults). Unknown
    keys and out-of-range values raise ValueError naming ``vlm.<key>``.
    """
    if isinstance(config, AgentConfig):
        return config.vlm.model_dump(exclude_unset=True)
    raw: Any = {}
    if isinstance(config, Mapping):
        raw = config.get("vlm", config) or {}
    elif DEFAULT_CONFIG_PATH.is_file():
        try:
            doc = yaml.safe_load(DEFAULT_CONFIG_PATH.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            doc = {}  # the config loader reports a broken file; the VLM keeps its defaults
        raw = doc.get("vlm") or {} if isinstance(doc, Mapping) else {}
    return load_section("vlm", raw).model_dump(exclude_unset=True)


# ---------------------------------------------------------------------------
# one deadline per turn, and a circuit breaker shared by planner and judge
# ---------------------------------------------------------------------------

#: (monotonic end, length in seconds) of the turn running in this context.
_TURN_DEADLINE: contextvars.ContextVar[tuple[float, float] | None] = contextvars.ContextVar(
    "atelier_turn_deadline", default=None)


@contextmanager
def turn_deadline(seconds: float):
    """Every model call inside this block (planner, judge, repairs, replans) shares one deadline.

    ``seconds`` from now (monotonic clock). Nested blocks keep the earlier deadline.
    """
    end = (time.monotonic() + float(seconds), float(seconds))
    current = _TURN_DEADLINE.get()
    token = _TURN_DEADLINE.set(end if current is None or end[0] < current[0] else current)
    try:
        yield
    finally:
        _TURN_DEADLINE.reset(token)


def current_turn_deadline() -> tuple[float, float] | None:
    """(monotonic time this turn's model calls must end by, the turn's deadline in s), or None outside a turn."""
    return _TURN_DEADLINE.get()


class ModelCircuit:
    """A circuit breaker for one model endpoint, shared by a Studio's planner and judge.

    A timeout or a refused connection *trips* it: for ``cooldown_s`` seconds every
    call goes straight to the built-in planner and judge without touching the
    network. After the cool-down the next call tries the model again; another
    failure trips it again (and the person is told again, once). Thread-safe.
    """

    def __init__(self, cooldown_s: float = DEFAULT_COOLDOWN_S):
        self.cooldown_s = float(cooldown_s)
        self._lock = threading.Lock()
        self._until_mono = 0.0
        self._until_wall: datetime | None = None
        self.reason = ""
        self.trips = 0

    def trip(self, reason: str) -> None:
        if self.cooldown_s <= 0:
            return
        with self._lock:
            self._until_mono = time.monotonic() + self.cooldown_s
            self._until_wall = datetime.now(timezone.utc) + timedelta(seconds=self.cooldown_s)
            self.reason = reason
            self.trips += 1

    def reset(self) -> None:
        with self._lock:
            self._until_mono, self._until_wall, self.reason = 0.0, None, ""

    def is_open(self) -> bool:
        with self._lock:
            return time.monotonic() < self._until_mono

    @property
    def until(self) -> datetime | None:
        """When the cool-down ends (UTC), while it is open."""
        with self._lock:
            return self._until_wall if time.monotonic() < self._until_mono else None

    def resting_line(self) -> str:
        """'the built-in planner and judge take over until 11:32:05 UTC' (for the one notice)."""
        until = self.until
        when = f" until {until:%H:%M:%S} UTC" if until else ""
        return f"the built-in planner and judge take over{when}, then the model is tried again"


class ModelBacked:
    """What the VLM planner and judge share: a client, and the embedded
    planner/judge they fall back to (built on first use unless given)."""

    name = "vlm"

    def __init__(self, client: "VLMClient", *, fallback: Any = None):
        self.client = client
        self._fallback = fallback

    @classmethod
    def from_env(cls, env=None, config=None, fallback: Any = None):
        """An instance when ATELIER_VLM_BASE_URL and ATELIER_VLM_MODEL are set, else None."""
        client = VLMClient.from_env(env, config)
        return cls(client, fallback=fallback) if client else None

    def _embedded(self):
        raise NotImplementedError

    @property
    def fallback(self):
        if self._fallback is None:
            self._fallback = self._embedded()
        return self._fallback

# ---------------------------------------------------------------------------
# profiles: how to talk to one model family
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class VLMProfile:
    """What the client, the VLM planner and the VLM judge read from a model profile.

    Built from a ``profiles.Profile`` (:func:`profile_for_model`); the request
    keys live in the profile's ``prompt_engineering`` section.
    """

    model_id: str = "default_vlm"
    family: str = "generic"
    structured_output: str = "none"          # json_schema | json_object | none
    max_image_side: int = 1024               # px, long side of each image sent
    images_per_request: int = 2              # fewer than needed: original | current go side by side
    supports_system_role: bool = True        # False: fold the system text into the user turn
    temperature: float | None = None
    #: chat.completions parameters the family accepts (``prompt_engineering.request_parameters``)
    token_parameter: str = "max_tokens"      # max_tokens | max_completion_tokens
    accepts_temperature: bool = True
    min_completion_tokens: int = 0           # a floor under the configured max_tokens (reasoning models)
    extra_request: dict = field(default_factory=dict)   # e.g. {"reasoning_effort": "low"}
    system_preamble: str = ""
    planner_guidance: tuple = ()
    judge_guidance: tuple = ()
    known_quirks: tuple = ()
    intent_translations: dict = field(default_factory=dict)   # name -> {words, ops: {op: value}, ...}
    prompt_scope: dict = field(default_factory=dict)          # core ops, op groups with their words, places
    score_calibration: dict = field(default_factory=dict)     # raw_low, raw_high
    quality_floor: float | None = None
    known_artifacts: tuple = ()
    is_fallback: bool = False
    warning: str = ""
    source: Any = field(default=None, repr=False, compare=False)  # the profiles.Profile, for iteration signals

    def calibrate(self, raw: float) -> float:
        """Map the model's raw 0..1 score onto Atelier's scale (linear: raw_low -> 0, raw_high -> 1)."""
        lo = float(self.score_calibration.get("raw_low", 0.0))
        hi = float(self.score_calibration.get("raw_high", 1.0))
        if hi <= lo:
            return float(min(1.0, max(0.0, raw)))
        return float(min(1.0, max(0.0, (raw - lo) / (hi - lo))))

    def iteration_fix(self, diagnosis: str) -> str:
        """'highlights -30, whites -15' (or 'scale the last plan by 1.6') for a diagnosis; '' if unknown.

        Diagnoses like ``too_weak:exposure`` name the op after the colon.
        """
        if self.source is None or not diagnosis:
            return ""
        name, _, op = str(diagnosis).partition(":")
        signal = self.source.iteration_signal(name)
        if signal is None:
            return ""
        steps = [f"{a.op} {a.value:+d}" + (" on the masked area" if a.target else "") for a in signal.adjust]
        if signal.scale_plan is not None:
            what = f"the {op} change" if op else "the last plan's values"
            steps.append(f"multiply {what} by {signal.scale_plan:g}")
        return ", ".join(steps)


def _texts(value: Any) -> tuple:
    if isinstance(value, str):
        return (value.strip(),)
    if isinstance(value, (list, tuple)):
        return tuple(_artifact_line(v) if isinstance(v, Mapping) else str(v) for v in value)
    return ()


def _artifact_line(item: Mapping) -> str:
    """'generous scores on oversaturated results (when saturation above +40)'."""
    name = str(item.get("name") or "")
    when = str(item.get("condition") or "")
    return f"{name} (when {when})" if when else name


def profile_from_profile(profile: Any) -> VLMProfile:
    """Read a loaded ``profiles.Profile`` (meta / prompt_engineering / quality_signatures)."""
    pe = profile.planner_view()
    qs = profile.judge_view()
    values: dict[str, Any] = {
        "model_id": str(profile.model_id),
        "family": str(profile.family),
        "system_preamble": str(pe.get("system_preamble") or "").strip(),
        "planner_guidance": _texts(pe.get("planner_guidance")),
        "judge_guidance": _texts(pe.get("judge_guidance")),
        "known_quirks": _texts(pe.get("known_quirks")),
        "intent_translations": dict(pe.get("intent_translations") or {}),
        "prompt_scope": dict(pe.get("prompt_scope") or {}),
        "score_calibration": dict(qs.get("score_calibration") or {}),
        "quality_floor": qs.get("quality_floor"),
        "known_artifacts": _texts(qs.get("known_artifacts")),
        "is_fallback": bool(profile.is_fallback),
        "warning": str(profile.warning or ""),
        "source": profile,
    }
    for key in ("structured_output", "max_image_side", "images_per_request", "supports_system_role", "temperature"):
        if pe.get(key) is not None:
            values[key] = pe[key]
    where = f"{Path(str(profile.path)).name}: prompt_engineering"
    values.update(_request_parameters(pe.get("request_parameters") or {}, where))
    if values.get("structured_output", "none") not in STRUCTURED_MODES:
        raise ValueError(f"{where}.structured_output: expected one of {', '.join(STRUCTURED_MODES)}, "
                         f"got {values['structured_output']!r}")
    for key in ("max_image_side", "images_per_request"):
        v = values.get(key, 1)
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 8192:
            raise ValueError(f"{where}.{key}: expected a whole number 1..8192, got {v!r}")
    return VLMProfile(**values)


TOKEN_PARAMETERS = ("max_tokens", "max_completion_tokens")
_EXTRA_REQUEST_KEYS = ("reasoning_effort",)


def _request_parameters(raw: Any, where: str) -> dict:
    """``request_parameters`` of a profile -> VLMProfile fields; ValueError names the bad key."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}.request_parameters: expected a mapping, got {raw!r}")
    known = ("token_limit", "temperature", "min_completion_tokens", *_EXTRA_REQUEST_KEYS)
    for key in raw:
        if key not in known:
            raise ValueError(f"{where}.request_parameters.{key}: unknown key; expected some of {', '.join(known)}")
    out: dict[str, Any] = {}
    token = raw.get("token_limit", "max_tokens")
    if token not in TOKEN_PARAMETERS:
        raise ValueError(f"{where}.request_parameters.token_limit: expected one of {', '.join(TOKEN_PARAMETERS)}, "
                         f"got {token!r}")
    out["token_parameter"] = token
    accepts = raw.get("temperature", True)
    if not isinstance(accepts, bool):
        raise ValueError(f"{where}.request_parameters.temperature: expected true or false, got {accepts!r}")
    out["accepts_temperature"] = accepts
    floor = raw.get("min_completion_tokens", 0)
    if isinstance(floor, bool) or not isinstance(floor, int) or not 0 <= floor <= 65536:
        raise ValueError(f"{where}.request_parameters.min_completion_tokens: expected 0..65536, got {floor!r}")
    out["min_completion_tokens"] = floor
    out["extra_request"] = {k: raw[k] for k in _EXTRA_REQUEST_KEYS if k in raw}
    return out


def profile_for_model(model: str) -> VLMProfile:
    """The profile for ``model`` (an ``ATELIER_VLM_MODEL`` value); unknown models get the default, flagged."""
    from profiles import load_profile

    return profile_from_profile(load_profile(model))


# ---------------------------------------------------------------------------
# images
# ---------------------------------------------------------------------------

def downscale(pixels: np.ndarray, max_side: int) -> np.ndarray:
    """uint8 RGB HxWx3 -> a copy whose long side is at most ``max_side`` px (never upscaled)."""
    h, w = pixels.shape[:2]
    scale = max_side / max(h, w)
    if scale >= 1:
        return pixels
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(pixels).resize(size, Image.Resampling.LANCZOS))


def image_data_url(pixels: np.ndarray, max_side: int = 1024, quality: int = 88) -> str:
    """A ``data:image/jpeg;base64,...`` URL of the image, long side at most ``max_side`` px."""
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] != 3:
        raise ValueError(f"image: expected uint8 RGB HxWx3, got {pixels.dtype} {pixels.shape}")
    small = downscale(pixels, max_side)
    buf = io.BytesIO()
    Image.fromarray(small).save(buf, format="JPEG", quality=quality)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def side_by_side(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Two images next to each other at the same height (for models that take one image)."""
    h = min(left.shape[0], right.shape[0])

    def fit(img: np.ndarray) -> np.ndarray:
        if img.shape[0] == h:
            return img
        w = max(1, round(img.shape[1] * h / img.shape[0]))
        return np.asarray(Image.fromarray(img).resize((w, h), Image.Resampling.LANCZOS))

    gap = np.full((h, max(4, h // 100), 3), 255, np.uint8)
    return np.concatenate([fit(left), gap, fit(right)], axis=1)


# ---------------------------------------------------------------------------
# JSON extraction
# ---------------------------------------------------------------------------

class ReplyFormatError(ValueError):
    """The reply holds no JSON object."""


def extract_json_object(text: str) -> dict:
    """The first complete JSON object in ``text``: plain, in a ```json fence, or after prose.

    Raises :class:`ReplyFormatError` saying what was found instead.
    """
    if not isinstance(text, str) or not text.strip():
        raise ReplyFormatError("the reply was empty")
    stripped = text.strip()
    try:
        data = json.loads(stripped)
        if isinstance(data, dict):
            return data
        raise ReplyFormatError(f"the reply is JSON but a {type(data).__name__}, not an object")
    except json.JSONDecodeError:
        pass
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    last_error = None
    while start != -1:
        try:
            data, _end = decoder.raw_decode(stripped, start)
            if isinstance(data, dict):
                return data
        except json.JSONDecodeError as exc:
            last_error = exc
        start = stripped.find("{", start + 1)
    if last_error is not None:
        raise ReplyFormatError(f"the JSON object in the reply is malformed ({last_error.msg})")
    raise ReplyFormatError("the reply holds no JSON object")


# ---------------------------------------------------------------------------
# the client
# ---------------------------------------------------------------------------

@dataclass
class VLMReply:
    """A validated answer: ``data`` passed the schema and the caller's checks."""

    data: dict
    tries: int
    notes: list[str] = field(default_factory=list)


Check = Callable[[dict], list[str]]


class VLMClient:
    """One OpenAI-compatible endpoint plus the profile of the model behind it. Thread-safe."""

    def __init__(self, settings: VLMSettings, profile: VLMProfile | None = None,
                 circuit: ModelCircuit | None = None):
        from openai import OpenAI

        from agent.model.deadline_http import deadline_http_client

        install_log_redaction()   # whatever the SDK or a caller logs about a failed request: no key in it
        self.settings = settings
        #: Shared with the other model-backed parts of a Studio (Studio replaces it with its own).
        self.circuit = circuit or ModelCircuit()
        self.profile = profile or profile_for_model(settings.model)
        # SDK retries are off: ours honour Retry-After only within the turn's deadline
        self._openai = OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key or "not-needed",  # local servers ignore it; the SDK requires one
            timeout=settings.timeout_s,
            max_retries=0,
            # every socket operation ends by the request's wall-clock deadline: a trickling server
            # cannot stretch a request past timeout_s or the turn past its deadline
            http_client=deadline_http_client(timeout=settings.timeout_s),
        )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, config: Any = None) -> "VLMClient | None":
        settings = VLMSettings.from_env(env, config)
        return cls(settings) if settings else None

    @property
    def where(self) -> str:
        return self.settings.where

    def profile_notes(self) -> list[str]:
        """Warnings a person should see about the profile (e.g. an unknown model on the default profile)."""
        return [self.profile.warning] if self.profile.is_fallback and self.profile.warning else []

    # -- messages ---------------------------------------------------------
    def image_parts(self, images: Sequence[tuple[str, np.ndarray]]) -> tuple[list[dict], str]:
        """Content parts for labelled images, within the profile's images-per-request limit.

        Returns ``(parts, caption)``; when two images must share one slot they go
        side by side and the caption says which is which.
        """
        images = [(label, img) for label, img in images if img is not None]
        side = int(self.profile.max_image_side)
        if len(images) > max(1, int(self.profile.images_per_request)) and len(images) >= 2:
            (l1, a), (l2, b) = images[0], images[1]
            images = [(f"left: {l1}; right: {l2}", side_by_side(a, b))] + images[2:]
            images = images[: max(1, int(self.profile.images_per_request))]
        parts: list[dict] = []
        captions = []
        for i, (label, img) in enumerate(images, 1):
            captions.append(f"Image {i}: {label}.")
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(img, side)}})
        return parts, " ".join(captions)

    def _messages(self, system: str, text: str, images: Sequence[tuple[str, np.ndarray]]) -> list[dict]:
        parts, caption = self.image_parts(images)
        body = f"{caption}\n\n{text}" if caption else text
        if not self.profile.supports_system_role:
            return [{"role": "user", "content": [{"type": "text", "text": f"{system}\n\n{body}"}, *parts]}]
        return [{"role": "system", "content": system},
                {"role": "user", "content": [{"type": "text", "text": body}, *parts]}]

    def _response_format(self, schema: Schema) -> dict | None:
        mode = self.profile.structured_output
        if mode == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": f"{schema.agent}_{schema.name}".replace("-", "_"),
                                    "schema": schema.json_schema(), "strict": False}}
        if mode == "json_object":
            return {"type": "json_object"}
        return None

    def request_parameters(self, messages: list[dict], timeout: float | None = None) -> dict[str, Any]:
        """The chat.completions keywords for this family: its token-limit name, a temperature only when
        it accepts one, and its extra keys (``request_parameters`` in the profile)."""
        s, p = self.settings, self.profile
        kwargs: dict[str, Any] = {"model": s.model, "messages": messages,
                                  p.token_parameter: max(s.max_tokens, p.min_completion_tokens), **p.extra_request}
        if p.accepts_temperature:
            kwargs["temperature"] = p.temperature if p.temperature is not None else s.temperature
        if timeout is not None:
            kwargs["timeout"] = timeout
        return kwargs

    # -- one request, with bounded transport retries -----------------------
    def _complete(self, messages: list[dict], response_format: dict | None, deadline: float,
                  deadline_s: float) -> Any:
        import openai

        from agent.model.deadline_http import wall_clock_deadline

        s = self.settings
        tries = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                self._trip(f"no answer within this turn's {deadline_s:g} s deadline")
            kwargs = self.request_parameters(messages, timeout=min(s.timeout_s, remaining))
            if response_format is not None:
                kwargs["response_format"] = response_format
            wait = None
            try:
                # wall clock, not per read: timeout_s for this request, and never past the turn's deadline
                with wall_clock_deadline(min(deadline, time.monotonic() + s.timeout_s)):
                    return self._openai.chat.completions.create(**kwargs)
            except openai.APITimeoutError:
                # a hung or trickling server: waiting again would only spend the rest of the turn
                self._trip(f"the model server did not answer within {s.timeout_s:g} s" if s.timeout_s <= remaining
                           else f"the model server did not answer within this turn's {deadline_s:g} s deadline")
            except openai.APIConnectionError as exc:
                if _refused(exc):
                    self._trip("the model server refused the connection (nothing listening at "
                               f"{urlparse(s.base_url).netloc or s.base_url})")
                reason = "the connection to the model server failed or dropped"
            except openai.RateLimitError as exc:
                wait = _retry_after(exc.response)
                reason = "the model server is rate-limiting requests (HTTP 429)"
            except openai.InternalServerError as exc:
                wait = _retry_after(exc.response)
                reason = f"the model server failed (HTTP {exc.status_code})"
            except openai.BadRequestError as exc:
                said = str(exc).lower()
                if response_format is not None and ("response_format" in said or "json_schema" in said):
                    # the profile promised JSON-schema mode but this server refuses it: instruct instead
                    response_format = None
                    continue
                raise VLMError(f"the model server rejected the request (HTTP 400: {_short(exc.message)})") from None
            except openai.AuthenticationError:
                raise VLMError(f"the model server refused the API key (HTTP 401); check {ENV_API_KEY}") from None
            except openai.NotFoundError:
                raise VLMError(f"the model server does not know model {s.model!r} or the URL "
                               f"{s.base_url!r} (HTTP 404); check {ENV_MODEL} and {ENV_BASE_URL}") from None
            except openai.APIStatusError as exc:
                raise VLMError(f"the model server answered HTTP {exc.status_code}") from None
            except openai.APIError as exc:
                raise VLMError(f"the model server's answer could not be read ({_short(str(exc))})") from None
            except ValueError as exc:  # a body that is not JSON (a proxy's error page, a broken server)
                raise VLMError("the model server's answer is not a chat completion "
                               f"({type(exc).__name__}: {_short(str(exc), 80)})") from None
            tries += 1
            if tries > s.max_retries:
                raise VLMError(f"{reason} (gave up after {tries} tries)" if tries > 1 else reason)
            if wait is None:
                wait = min(8.0, 0.5 * 2 ** (tries - 1))
            if time.monotonic() + wait > deadline:
                raise VLMError(f"{reason}; waiting {wait:g} s more would pass this turn's "
                               f"{deadline_s:g} s deadline")
            time.sleep(wait)

    # -- the protocol ------------------------------------------------------
    def ask_json(self, *, system: str, text: str, schema: Schema,
                 images: Sequence[tuple[str, np.ndarray]] = (), check: Check | None = None) -> VLMReply:
        """Ask for one JSON object that validates against ``schema`` (and ``check``).

        Invalid replies (no JSON, code fences around broken JSON, extra keys,
        out-of-range values, cut off at the token limit) are sent back with the
        problems, at most ``repair_attempts`` times. Raises :class:`VLMError`.
        """
        s = self.settings
        if self.circuit.is_open():
            raise ModelResting(f"the model is resting after a failure ({self.circuit.reason}); "
                               f"{self.circuit.resting_line()}")
        deadline, deadline_s = time.monotonic() + s.turn_deadline_s, s.turn_deadline_s
        turn = current_turn_deadline()
        if turn is not None and turn[0] < deadline:
            deadline, deadline_s = turn
        messages = self._messages(system, text, images)
        response_format = self._response_format(schema)
        notes: list[str] = []
        problems: list[str] = []
        first_problem = ""
        for attempt in range(1, s.repair_attempts + 2):
            completion = self._complete(messages, response_format, deadline, deadline_s)
            content, problems = self._read(completion, schema, check)
            if not problems:
                if attempt > 1:
                    notes.append(f"{s.where} fixed its reply on try {attempt} "
                                 f"(first problem: {first_problem})")
                return VLMReply(data=content, tries=attempt, notes=notes)
            if attempt == 1:
                first_problem = problems[0]
            raw = content if isinstance(content, str) else json.dumps(content)
            messages = messages + [
                {"role": "assistant", "content": raw[:4000] or "(empty)"},
                {"role": "user", "content": _repair_prompt(problems)},
            ]
        raise VLMError(f"its reply did not validate after {s.repair_attempts + 1} tries "
                       f"({'; '.join(problems[:3])})")

    def _trip(self, reason: str) -> None:
        """Open the circuit and end this call; the error tells the person once what happens next."""
        self.circuit.trip(reason)
        tail = f"; {self.circuit.resting_line()}" if self.circuit.is_open() else ""
        raise VLMError(reason + tail)

    def _read(self, completion: Any, schema: Schema, check: Check | None) -> tuple[Any, list[str]]:
        """(parsed object, []) or (raw text, problems)."""
        choices = getattr(completion, "choices", None) or []
        if not isinstance(choices, list) or not choices or not hasattr(choices[0], "message"):
            return "", ["the reply had no choices"]
        choice = choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise VLMError(f"the model refused: {_short(refusal)}")
        text = message.content or ""
        if choice.finish_reason == "length":
            return text, ["the reply was cut off at the token limit (finish_reason=length); "
                          "answer with a shorter JSON object"]
        try:
            data = extract_json_object(text)
        except ReplyFormatError as exc:
            return text, [f"{exc}; answer with one JSON object only"]
        problems = schema.validate(data)
        if not problems and check is not None:
            problems = check(data)
        return (text, problems) if problems else (data, [])


def _refused(exc: BaseException) -> bool:
    """True when nothing accepted the connection (as opposed to one that dropped mid-answer)."""
    import httpx

    seen = exc
    for _ in range(6):
        if isinstance(seen, (ConnectionRefusedError, httpx.ConnectError)):
            return True
        seen = seen.__cause__ or seen.__context__
        if seen is None:
            return False
    return False


def _repair_prompt(problems: list[str]) -> str:
    lines = "\n".join(f"- {p}" for p in problems[:12])
    return ("Your reply did not validate:\n" + lines +
            "\nReply again with only the corrected JSON object, nothing else.")


def _retry_after(response: Any) -> float | None:
    """Seconds from a Retry-After (or retry-after-ms) header, if any."""
    headers = getattr(response, "headers", None) or {}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) / scale)
        except ValueError:
            continue
    return None


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


__all__ = [
    "VLMClient", "VLMError", "VLMProfile", "VLMReply", "VLMSettings", "ReplyFormatError",
    "ModelBacked", "ModelCircuit", "ModelResting", "current_turn_deadline", "turn_deadline",
    "extract_json_object", "image_data_url", "profile_for_model", "profile_from_profile", "vlm_limits",
]
