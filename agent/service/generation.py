"""Generation in the session API: the tool contract and generative chat turns.

:class:`GenerationDesk` is what :class:`agent.service.Studio` delegates to for

- the tool contract: ``get_defaults``, ``set_defaults``, ``generate_image``,
  ``regenerate`` (requests and answers validated against
  ``schemas/tools/generation.json``; an unknown or out-of-range value is
  refused with its key named);
- chat: generative remove / fill / expand / regenerate / create, parsed by
  :mod:`agent.conversation.generative` before the edit planner runs.

A generative edit is a new version whose EditState carries one more
:class:`~pipeline.generate.layers.GeneratedLayer` (pixels in the blob store,
recipe with it): re-rendering never runs the model, rollback is bit-exact, and
a regenerate makes a sibling of the version it varies (a new branch).
Defaults come from the model's profile (``profiles/generation/``), overridden
by ``set_defaults``: for one caller's ``scope`` (an MCP client session) when given, for the whole
process otherwise, and ``persist=True`` writes ``<sessions_dir>/generation_defaults.json`` for every
caller and later starts.

Every failure (no backend, model missing, out of memory, ComfyUI down) raises
:class:`GenerationFailed` (tool calls) or ends the chat turn as ``failed``
with the reason; nothing in the session changes.
"""

from __future__ import annotations

import base64
import json
import secrets
import threading
import time
import uuid
from cachetools import LRUCache
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import cv2
import jsonschema
import numpy as np

from agent.errors import AtelierError, InvalidInput
from agent.loop.state import ActionRecord
from agent.conversation.generative import vocabulary as generative_words
from agent.service.records import TurnResult
from pipeline import ops
from pipeline.generate import operations as gen_ops
from pipeline.generate.backends import backend_from_env
from pipeline.generate.base import GenerationBackend, GenerationError, GenerationParams, NoBackend
from pipeline.generate.layers import GeneratedLayer
from pipeline.imageio import write_bytes_atomic
from pipeline.masks import build_mask
from pipeline.state import EditState

if TYPE_CHECKING:  # pragma: no cover
    from agent.conversation.generative import GenerativeRequest
    from agent.service.studio import Studio

CONTRACT_PATH = Path(__file__).resolve().parents[2] / "schemas" / "tools" / "generation.json"
IMAGE_KEYS = ("width", "height", "steps", "cfg", "sampler_name", "scheduler", "denoise", "model", "negative_prompt")
DEFAULTS_FILE = "generation_defaults.json"
#: Session setting that records how a generated original was made (so regenerate can vary it).
_ORIGIN_KEY = "generated_from"
_SEED_MAX = 2**31 - 1
#: ``seed`` in regenerate that means "the seed the version was made with".
KEEP_SEED = -1
#: Caller scopes (MCP client sessions) whose own defaults are remembered, oldest forgotten first.
MAX_SCOPES = 256


class GenerationFailed(AtelierError):
    """A generation that could not run. ``kind``: not_configured, needs_gpu, model_missing, out_of_memory,
    server_down, bad_request or failed; the message says what to do, and that nothing changed."""

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


@lru_cache(maxsize=1)
def contract() -> dict:
    return json.loads(CONTRACT_PATH.read_text(encoding="utf-8"))


def validate(name: str, payload: dict) -> None:
    """Check ``payload`` against the contract entry ``name``; InvalidInput naming the first bad key."""
    doc = contract()
    schema = {"$schema": doc["$schema"], "$defs": doc["$defs"], **doc[name]}
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(payload),
                    key=lambda e: (len(e.path), list(map(str, e.path))))
    if not errors:
        return
    e = errors[0]
    where = ".".join(str(p) for p in e.path)
    if e.validator == "additionalProperties":
        allowed = sorted((e.schema.get("properties") or {}).keys())
        unknown = sorted(set(e.instance) - set(allowed))
        key = f"{where}.{unknown[0]}" if where else unknown[0]
        raise InvalidInput(f"{name}: unknown key {key!r}; known keys: {', '.join(allowed)}")
    if e.validator == "required":
        missing = e.message.split("'")[1] if "'" in e.message else e.message
        raise InvalidInput(f"{name}: {(where + '.') if where else ''}{missing}: required")
    raise InvalidInput(f"{name}: {where or 'request'}: {e.message}")


def _none_free(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


class GenerationDesk:
    """Generation for one Studio: a backend, the defaults, the tool calls and the chat turns."""

    def __init__(self, studio: "Studio", backend: GenerationBackend | None = None):
        self.studio = studio
        self.backend = backend if backend is not None else backend_from_env()
        self._lock = threading.RLock()
        self._defaults_path = Path(studio.sessions_dir) / DEFAULTS_FILE
        self._overrides: dict = {}
        self._scoped: LRUCache = LRUCache(maxsize=MAX_SCOPES)
        if self._defaults_path.is_file():
            try:
                stored = json.loads(self._defaults_path.read_text(encoding="utf-8"))
                validate("set_defaults", {"image": stored})
                self._overrides = stored
            except (ValueError, InvalidInput):
                self._overrides = {}  # a damaged file: profile defaults, and set_defaults can rewrite it

    # -- defaults ---------------------------------------------------------------------------
    @property
    def model(self) -> str:
        return self.model_for(None)

    def model_for(self, scope: str | None) -> str:
        return str(self.overrides(scope).get("model") or self.backend.model or "")

    def overrides(self, scope: str | None = None) -> dict:
        """set_defaults' values in force for ``scope``: the process-wide ones, then that scope's own."""
        with self._lock:
            return {**self._overrides, **(self._scoped.get(scope) or {})} if scope else dict(self._overrides)

    def profile(self, model: str | None = None):
        from profiles.generation import load_generation_profile
        return load_generation_profile(model if model is not None else self.model)

    def get_defaults(self, scope: str | None = None) -> dict:
        """``{"image": {width, height, steps, cfg, sampler_name, scheduler, denoise, model, negative_prompt}}``
        for ``scope`` (a caller's own defaults over the process-wide ones; None: the process-wide ones)."""
        model = self.model_for(scope)
        profile = self.profile(model)
        image = {k: profile.defaults[k] for k in IMAGE_KEYS if k in profile.defaults}
        image["model"] = model or profile.model_id
        image.update(self.overrides(scope))
        out = {"image": {k: image[k] for k in IMAGE_KEYS}}
        validate("get_defaults_result", out)
        return out

    def set_defaults(self, image: Any, persist: bool = False, scope: str | None = None) -> dict:
        """Override some defaults (validated). With ``scope`` they hold for that caller only (an MCP client
        session); without, for the whole process; ``persist`` makes them everyone's and writes them for the
        next start. Returns the defaults now in force for ``scope`` plus ``updated`` (each key given: its new
        value), ``previous`` (its value before) and ``applies_to`` (``session``, ``process`` or ``saved``)."""
        validate("set_defaults", {"image": image, "persist": persist})
        with self._lock:
            before = self.get_defaults(scope)["image"]
            if persist or not scope:
                self._overrides = {**self._overrides, **image}
                if scope in self._scoped:   # the saved value is this caller's too from now on
                    self._scoped[scope] = {k: v for k, v in self._scoped[scope].items() if k not in image}
                if persist:
                    write_bytes_atomic(self._defaults_path,
                                       json.dumps(self._overrides, indent=2, sort_keys=True).encode())
            else:
                self._scoped[scope] = {**self._scoped.get(scope, {}), **image}
            now = self.get_defaults(scope)
        return {**now, "updated": {k: now["image"][k] for k in image}, "previous": {k: before[k] for k in image},
                "applies_to": "saved" if persist else ("session" if scope else "process")}

    def _params(self, operation: str, values: dict, *, prompt: str, scene: str = "the photo",
                scope: str | None = None) -> GenerationParams:
        """Profile defaults <- set_defaults (``scope``'s) <- this call's values, with the profile's prompt pattern."""
        model = values.get("model") or self.model_for(scope)
        profile = self.profile(model)
        base = {**{k: v for k, v in profile.defaults.items() if k in IMAGE_KEYS}, **self.overrides(scope)}
        base.update(_none_free(values))
        negative = values.get("negative_prompt")
        if negative is None:
            negative = base.get("negative_prompt") if operation == "text_to_image" else profile.negative_for(operation)
        seed = values.get("seed")
        return GenerationParams(
            prompt=profile.prompt_for(operation, prompt, scene), negative_prompt=negative or "",
            seed=int(seed) if seed is not None else secrets.randbelow(_SEED_MAX), steps=int(base["steps"]),
            cfg=float(base["cfg"]), sampler_name=str(base["sampler_name"]), scheduler=str(base["scheduler"]),
            denoise=float(base["denoise"]), width=int(base["width"]), height=int(base["height"]),
            model=str(model or profile.model_id))

    @staticmethod
    def _buckets(profile, params: GenerationParams) -> list[tuple[int, int]]:
        """The profile's buckets scaled to the working size (``width`` x ``height`` of the defaults):
        the profile gives the shapes, set_defaults the resolution (a small size for a quick draft)."""
        native = profile.defaults["width"] * profile.defaults["height"]
        scale = (params.width * params.height / native) ** 0.5
        if abs(scale - 1.0) < 1e-6:
            return [tuple(b) for b in profile.buckets]
        return [(max(64, int(round(w * scale / 8)) * 8), max(64, int(round(h * scale / 8)) * 8))
                for w, h in profile.buckets]

    def _backend_for(self, model: str) -> GenerationBackend:
        """The backend, switched to ``model`` when it names another one (diffusers: one resident at a time)."""
        backend = self.backend
        if model and backend.name == "diffusers" and model != backend.model and not getattr(backend, "_injected", False):
            from pipeline.generate.diffusers_backend import DiffusersBackend
            backend.close()
            self.backend = backend = DiffusersBackend(model, idle_unload_s=backend.idle_unload_s)
        return backend

    def _run(self, fn):
        """Run a backend call; GenerationError -> GenerationFailed (the message is the person's)."""
        try:
            if isinstance(self.backend, NoBackend):
                self.backend.run(None)  # raises not_configured / needs_gpu at once
            with self._lock:
                return fn()
        except GenerationError as exc:
            raise GenerationFailed(exc.kind, str(exc)) from None

    # -- the tool contract ------------------------------------------------------------------
    def generate_image(self, prompt: str, negative_prompt: str | None = None, seed: int | None = None,
                       width: int | None = None, height: int | None = None, steps: int | None = None,
                       cfg: float | None = None, sampler_name: str | None = None, scheduler: str | None = None,
                       denoise: float | None = None, model: str | None = None,
                       return_inline_preview: bool = False, scope: str | None = None) -> dict:
        """A new photo from text; it becomes the original of a new session. Returns the asset answer
        (``scope``: whose set_defaults apply, see :meth:`set_defaults`)."""
        request = _none_free({"prompt": prompt, "negative_prompt": negative_prompt, "seed": seed, "width": width,
                              "height": height, "steps": steps, "cfg": cfg, "sampler_name": sampler_name,
                              "scheduler": scheduler, "denoise": denoise, "model": model,
                              "return_inline_preview": return_inline_preview})
        validate("generate_image", request)
        if isinstance(self.backend, NoBackend):
            self._run(None)
        params = self._params("text_to_image", request, prompt=prompt, scope=scope)
        return self._create(params, bool(return_inline_preview))

    def _create(self, params: GenerationParams, preview: bool, title: str | None = None) -> dict:
        pixels, info = self._run(lambda: gen_ops.text_to_image(self._backend_for(params.model), params))
        recipe = {"operation": "text_to_image", "backend": self.backend.name, **params.to_dict()}
        name = title or f"generated-{params.seed}.png"
        info_session = self.studio.start_session(pixels, filename=name)
        session = self.studio.store.get_session(info_session.id)
        settings = dict(session.settings)
        settings[_ORIGIN_KEY] = recipe
        self.studio.store.update_session(session.id, settings=settings)
        return self._answer(session.id, info_session.head_asset_id, info, recipe, preview)

    def regenerate(self, asset_id: Any, seed: int | None = None, param_overrides: dict | None = None,
                   return_inline_preview: bool = False) -> dict:
        """Generate a version again with a new seed (or ``seed``; ``-1`` keeps the seed it was made with,
        to change only ``param_overrides``).

        A generated original makes a new session; a version with generated layers makes a sibling
        version (a new branch) in its session, which becomes the head.
        """
        validate("regenerate", _none_free({"asset_id": asset_id, "seed": seed, "param_overrides": param_overrides,
                                           "return_inline_preview": return_inline_preview or None}))
        try:
            asset = self.studio.store.get_asset(asset_id)
        except AtelierError:
            raise InvalidInput(f"regenerate: asset_id: no version {asset_id!r}") from None
        session = self.studio.store.get_session(asset.session_id)
        overrides = dict(param_overrides or {})
        if asset.parent_id is None and session.settings.get(_ORIGIN_KEY):
            recipe = session.settings[_ORIGIN_KEY]
            values = {k: recipe[k] for k in IMAGE_KEYS if k in recipe}
            values.update(overrides)
            values["seed"] = _seed(seed, recipe)
            prompt = overrides.get("prompt") or recipe.get("prompt", "")
            params = GenerationParams(**{**{k: recipe[k] for k in GenerationParams.__dataclass_fields__
                                            if k in recipe}, **values, "prompt": prompt})
            return self._create(params, return_inline_preview)
        state = EditState.from_dict(asset.state)
        if not state.generated:
            raise InvalidInput(f"regenerate: asset_id: version {asset_id!r} has no generated pixels to make again")
        with self.studio.leases.leased(session.id):
            new_id, info, recipe = self._regenerate_layer(session, asset, seed, overrides, message="/regenerate")
        return self._answer(session.id, new_id, info, recipe, return_inline_preview)

    def _answer(self, session_id: str, asset_id: str, info: dict, recipe: dict, preview: bool) -> dict:
        studio = self.studio
        path = studio.export(session_id, asset_id, fmt="png")
        pixels = studio.render(session_id, asset_id, long_side=None)
        h, w = pixels.shape[:2]
        rel = path.parent.relative_to(studio.sessions_dir).as_posix()
        answer = {
            "asset_id": asset_id, "session_id": session_id,
            "asset_url": f"atelier://sessions/{session_id}/assets/{asset_id}", "image_url": path.resolve().as_uri(),
            "filename": path.name, "subfolder": rel, "folder_type": "output",
            "workflow_id": str(info.get("workflow_id") or f"{self.backend.name}-{recipe.get('operation', 'generate')}"),
            "prompt_id": str(info.get("prompt_id") or uuid.uuid4().hex), "mime_type": "image/png",
            "width": int(w), "height": int(h), "bytes_size": int(path.stat().st_size),
            "seed": int(recipe.get("seed", 0)), "recipe": recipe,
        }
        if preview:
            small = cv2.resize(pixels, (max(1, round(w * 256 / max(w, h))), max(1, round(h * 256 / max(w, h)))),
                               interpolation=cv2.INTER_AREA) if max(w, h) > 256 else pixels
            ok, buf = cv2.imencode(".jpg", cv2.cvtColor(small, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 85])
            answer["inline_preview_base64"] = base64.b64encode(buf.tobytes()).decode()
            answer["inline_preview_mime_type"] = "image/jpeg"
        validate("asset", answer)
        return answer

    # -- generated layers -------------------------------------------------------------------
    def _below(self, session_id: str, state: EditState) -> np.ndarray:
        """Full-resolution pixels of the original with ``state``'s generated layers (no adjustments)."""
        source = self.studio.sources.get(session_id)
        return np.asarray(self.studio.renderer.with_generated(source, state).pixels)

    def _judge(self, before: np.ndarray, after: np.ndarray, hard: np.ndarray, operation: str, model: str) -> dict:
        signatures = self.profile(model).quality
        judge = getattr(self.studio.judge, "assess_generated", None)
        if judge is None:
            from agent.judging.generative import assess_generated as judge
        return judge(before, after, hard, operation=operation, signatures=signatures).to_dict()

    def _apply(self, session, parent_id: str | None, base_state: EditState, outcome: gen_ops.GenerationOutcome,
               before_canvas: np.ndarray, turn: int, message: str, summary: str) -> tuple[str, dict]:
        """Store a version with the new layer (a child of ``parent_id``), judge it, move the head there."""
        store = self.studio.store
        new_state = base_state.with_generated(outcome.layer)
        after = self._below(session.id, new_state)
        report = self._judge(before_canvas, after, outcome.hard_mask, outcome.layer.recipe["operation"],
                             outcome.layer.recipe.get("model", ""))
        asset = store.add_asset(session_id=session.id, parent_id=parent_id, turn=turn, state=new_state.to_dict(),
                                summary=summary, status="auto_approved",
                                scores={"score": report["score"], "generated_region": report})
        return asset.id, report

    def _regenerate_layer(self, session, asset, seed, overrides: dict, message: str):
        """A sibling of ``asset`` with its top generated layer made again; the head moves to it."""
        store = self.studio.store
        state = EditState.from_dict(asset.state)
        # the version that added this layer: walk up while the parent still has it
        origin = asset
        top = state.generated[-1]
        while origin.parent_id:
            parent = store.get_asset(origin.parent_id, session.id)
            if top not in EditState.from_dict(parent.state).generated:
                break
            origin = parent
        origin_state = EditState.from_dict(origin.state)
        index = len(origin_state.generated) - 1
        layer = origin_state.generated[index]
        recipe = dict(layer.recipe)
        values = {k: recipe[k] for k in GenerationParams.__dataclass_fields__ if k in recipe}
        if not overrides:
            overrides = self._signal_overrides(origin, recipe.get("model", ""))
        values.update(overrides)
        values["seed"] = _seed(seed, recipe)
        params = GenerationParams(**values)
        profile = self.profile(params.model)
        source = self.studio.sources.get(session.id)
        outcome = self._run(lambda: gen_ops.regenerate(
            self._backend_for(params.model), source.pixels, origin_state.generated, index, params,
            get=self.studio.blobs.get_array, put=self.studio.blobs.put_array, buckets=self._buckets(profile, params)))
        base_state = EditState(settings=dict(origin_state.settings), layers=origin_state.layers,
                               generated=origin_state.generated[:index])
        before = self._below(session.id, base_state)
        before_canvas = _on_canvas(before, outcome.layer)
        turn = store.last_turn(session.id) + 1
        op = recipe.get("operation", "fill")
        summary = f"regenerated {op} (seed {params.seed})"
        new_id, report = self._apply(session, origin.parent_id, base_state, outcome, before_canvas, turn, message,
                                     summary)
        reply = f"Made the {op} again with seed {params.seed}. {report['assessment']}"
        store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None, outcome="auto_approved",
                          reply=reply, action=ActionRecord(turn, message, "auto_approved", summary).to_dict(),
                          asset_id=new_id, head_asset_id=new_id, statuses={})
        info = {**outcome.info, "reply": reply, "turn": turn, "report": report}
        return new_id, info, outcome.layer.recipe

    def _signal_overrides(self, asset, model: str) -> dict:
        """The profile's iteration signal for what the judge found in ``asset`` (e.g. a seam -> lower denoise)."""
        report = (asset.scores or {}).get("generated_region") or {}
        profile = self.profile(model)
        for diagnosis in report.get("diagnoses") or []:
            signal = profile.signal(diagnosis)
            if signal:
                return dict(signal.get("overrides") or {})
        return {}

    def _advice(self, report: dict, model: str) -> str:
        """One line on what the judge found and what a regenerate will change (from the profile)."""
        profile = self.profile(model)
        for diagnosis in report.get("diagnoses") or []:
            signal = profile.signal(diagnosis)
            if signal:
                return f" Say \"regenerate\" to try again: {signal['reason']}."
        return ""

    # -- chat -------------------------------------------------------------------------------
    def chat_turn(self, session, request: "GenerativeRequest", progress=None) -> TurnResult | None:
        """Answer a generative chat request as a turn of its own (None: not generative after all)."""
        store = self.studio.store
        head = store.get_asset(session.head_asset_id, session.id)
        state = EditState.from_dict(head.state)
        if self._heals_instead(request):
            return None  # no backend: the retouch stage's region fill does "remove this" (the ordinary turn)
        if request.kind == "regenerate" and not state.generated and request.text.lower().strip(" .!?") in \
                generative_words()["plain_retries"]:
            return None  # "try again" after an ordinary edit is the planner's
        started = time.perf_counter()
        try:
            if isinstance(self.backend, NoBackend):
                self._run(None)
            if request.kind == "create":
                if not request.prompt:
                    raise InvalidInput("say what the new photo should show, e.g. \"create a photo of a red fox in snow\"")
                params = self._params("text_to_image", {"seed": request.seed, **request.overrides},
                                      prompt=request.prompt)
                answer = self._create(params, False)
                reply = (f"I made a new photo of {request.prompt} (seed {params.seed}); it opened as a new session "
                         f"({answer['session_id']}). This photo is unchanged.")
                return self._record(session, request.text, "approved", reply, head.id, kind="generate",
                                    fields={"new_session_id": answer["session_id"], "asset": answer})
            if request.kind == "regenerate":
                if not state.generated:
                    raise InvalidInput("there is nothing generated in this version to make again: remove, fill or "
                                       "expand something first")
                new_id, info, recipe = self._regenerate_layer(session, head, request.seed, request.overrides,
                                                              request.text)
                report = info["report"]
                return TurnResult(session_id=session.id, turn=info["turn"], status="auto_approved",
                                  reply=info["reply"], score=report["score"], assessment=report["assessment"],
                                  dimensions=_dimensions(report), asset_id=new_id, head_asset_id=new_id,
                                  rendered_path=self.studio.renders.proxy_path(session.id, new_id),
                                  quick_replies=["regenerate", "undo"], kind="generate")
            below = self._below(session.id, state)
            if request.kind == "expand":
                if not request.aspect:
                    return self._record(session, request.text, "not_understood",
                                        "To which shape should I widen the canvas? Say e.g. \"expand to 16:9\".",
                                        head.id, kind="clarify", quick=["expand to 16:9", "expand to 3:2",
                                                                        "expand to 1:1", "expand to 4:5"])
                params = self._params("expand", {"seed": request.seed, **request.overrides}, prompt="")
                profile = self.profile(params.model)
                outcome = self._run(lambda: gen_ops.expand(self._backend_for(params.model), below, request.aspect,
                                                           params, buckets=self._buckets(profile, params),
                                                           put=self.studio.blobs.put_array))
                summary = f"expanded the canvas to {request.aspect}"
            else:
                mask, where = self._mask_for(session, request, below)
                if mask is None:
                    what = request.described or "it"
                    return self._record(
                        session, request.text, "not_understood",
                        f"I can't find {what} by myself. Paint over it (or select it), then say "
                        f"\"{request.kind} the selection\"" + (" with what to put there." if request.kind == "fill"
                                                               else "."),
                        head.id, kind="clarify", quick=[f"{request.kind} the selection"])
                operation = request.kind
                params = self._params(operation, {"seed": request.seed, **request.overrides},
                                      prompt=request.prompt)
                profile = self.profile(params.model)
                outcome = self._run(lambda: gen_ops.inpaint(
                    self._backend_for(params.model), below, mask, params, operation=operation,
                    buckets=self._buckets(profile, params), put=self.studio.blobs.put_array,
                    grow_px=max(2, round(0.006 * max(below.shape[:2]))) if operation == "remove" else 0))
                summary = (f"removed {where}" if operation == "remove" else f"filled {where} with {request.prompt}")
        except (GenerationFailed, InvalidInput) as exc:
            kind = getattr(exc, "kind", "bad_request")
            return self._record(session, request.text, "failed", str(exc), head.id, kind="generate",
                                fields={"failure": kind, "seconds": round(time.perf_counter() - started, 3)})
        turn = store.last_turn(session.id) + 1
        before_canvas = _on_canvas(below, outcome.layer)
        new_id, report = self._apply(session, head.id, state, outcome, before_canvas, turn, request.text,
                                     f"{summary} (seed {outcome.layer.recipe['seed']})")
        reply = (f"{summary[0].upper()}{summary[1:]} (seed {outcome.layer.recipe['seed']}). {report['assessment']}"
                 + self._advice(report, outcome.layer.recipe.get("model", "")))
        store.finish_turn(session_id=session.id, turn=turn, message=request.text, plan=None,
                          outcome="auto_approved", reply=reply,
                          action=ActionRecord(turn, request.text, "auto_approved", summary).to_dict(),
                          asset_id=new_id, head_asset_id=new_id, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status="auto_approved", reply=reply,
                          score=report["score"], assessment=report["assessment"], dimensions=_dimensions(report),
                          fields={"generated_region": report}, asset_id=new_id, head_asset_id=new_id,
                          rendered_path=self.studio.renders.proxy_path(session.id, new_id),
                          quick_replies=["regenerate", "undo"], kind="generate")

    def _heals_instead(self, request: "GenerativeRequest") -> bool:
        """With no generation backend, "remove this / the selection" is still done: by the retouch stage's
        classic region fill (the "remove" op on the selection), planned by the ordinary edit turn."""
        return (isinstance(self.backend, NoBackend) and request.kind == "remove" and request.target == "selection"
                and "remove" in ops.OPS and ops.OPS["remove"].kind == "region")

    def _mask_for(self, session, request: "GenerativeRequest", below: np.ndarray) -> tuple[np.ndarray | None, str]:
        """The hard mask (full size) a remove or fill means, and words for it; (None, "") when there is none."""
        size = below.shape[:2]
        if request.target == "selection":
            found = session.settings.get("selection") or {}
            spec = found.get("mask")
            if not spec:
                return None, ""
            words = "the selection"
        elif request.target in ("subject", "face", "sky"):
            spec = {"type": request.target}
            words = f"the {request.described or request.target}"
        else:
            return None, ""

        try:
            soft = build_mask(spec, below, size, blobs=self.studio.blobs)
        except TypeError:  # a masks module without painted masks (no blobs parameter)
            soft = build_mask(spec, below, size)
        except Exception:  # noqa: BLE001 - no such area found: ask for a painted one
            return None, ""
        hard = (np.asarray(soft) >= 0.5).astype(np.uint8) * 255
        return (hard, words) if hard.any() else (None, "")

    def _record(self, session, message: str, outcome: str, reply: str, head_id: str, *, kind: str,
                quick: list[str] | None = None, fields: dict | None = None) -> TurnResult:
        """A turn that made no new version (a question back, a refusal, a failure): the session is unchanged."""
        store = self.studio.store
        turn = store.last_turn(session.id) + 1
        store.finish_turn(session_id=session.id, turn=turn, message=message, plan=None, outcome=outcome,
                          reply=reply, action=ActionRecord(turn, message, outcome).to_dict(), asset_id=None,
                          head_asset_id=head_id, statuses={})
        return TurnResult(session_id=session.id, turn=turn, status=outcome, reply=reply, head_asset_id=head_id,
                          rendered_path=self.studio.renders.proxy_path(session.id, head_id), quick_replies=list(quick or []),
                          kind=kind, fields=dict(fields or {}))

    def status(self) -> dict:
        return self.backend.status()

    def close(self) -> None:
        self.backend.close()


def _seed(seed: int | None, recipe: dict) -> int:
    """The seed to use: ``seed``; KEEP_SEED: the recipe's own; None: a new random one."""
    if seed == KEEP_SEED:
        return int(recipe.get("seed", 0))
    return int(seed) if seed is not None else secrets.randbelow(_SEED_MAX)


def _on_canvas(below: np.ndarray, layer: GeneratedLayer) -> np.ndarray:
    """``below`` placed on the layer's canvas (an expand's new area stays black)."""
    cw, ch = layer.canvas
    if below.shape[:2] == (ch, cw):
        return below
    out = np.zeros((ch, cw, 3), np.uint8)
    ox, oy = layer.offset
    out[oy:oy + below.shape[0], ox:ox + below.shape[1]] = below
    return out


def _dimensions(report: dict) -> dict:
    dims = {"preservation": report["preservation"], "seam": max(0.0, 1.0 - report["seam"] / 64.0)}
    if report.get("colour_delta") is not None:
        dims["colour_match"] = max(0.0, 1.0 - report["colour_delta"] / 50.0)
    return dims


__all__ = ["GenerationDesk", "GenerationFailed", "contract", "validate"]
