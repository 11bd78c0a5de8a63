"""The embedded judge: scores a turn from image measurements alone (no model).

Three dimensions, each 0..1:

- **compliance**: for every sub-goal, did the measurable effect of its op move
  the right way by a visible amount between the render before this turn
  (``request.previous``, or the original) and the new render? Local sub-goals
  are measured inside their mask. The amount expected scales with how far the
  op's value moved, so "much warmer" needs a bigger change than "slightly".
- **preservation** (turns whose sub-goals are all local): outside the masks the
  photo should not change: SSIM (structure and lightness) and mean ΔE (colour).
- **technical**: damage relative to the original, so a photo that was already
  clipped is not penalised: new blown highlights, new crushed shadows, new
  pure-colour (gamut-clipped) areas, banding (tone levels pulled apart).

The score is the weighted mean of the dimensions that apply (weights in
``DEFAULTS["weights"]``: compliance 0.5, preservation 0.2, technical 0.3; a
dimension that does not apply drops out and the rest are renormalised).

Thresholds come from, later overriding earlier: :data:`DEFAULTS`, the engine
profile's ``quality_signatures.judge`` (when :mod:`profiles` is there), the
``quality.judge`` section of ``configs/agent_config.yaml``, and the ``config``
given to :class:`EmbeddedJudge`.

Diagnoses use a fixed vocabulary (:data:`DIAGNOSES`) that the replan reads:
``too_weak:<op>``, ``wrong_direction:<op>``, ``highlights_clipped``,
``shadows_crushed``, ``oversaturated``, ``banding``, ``local_spill``.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from agent.config import DEFAULT_CONFIG_PATH, JudgeSettings
from agent.judging.base import Assessment, JudgeRequest
from agent.judging.scoring import MIN_TARGET_SHARE, LastChange, score_reading
from agent.planning.base import SubGoal
from agent.conversation.clauses import NAMING_DETERMINERS
from agent.judging.reading import Reading, keeps_out_of_last, load_lexicon, read_attempt
from pipeline import measure, ops
from pipeline.ops import Effect
from pipeline.masks import MaskSpecError, build_mask, describe_mask, normalize_mask_spec


#: The problems a judge may name (``too_weak`` and ``wrong_direction`` carry ``:<op>``).
DIAGNOSES = ("too_weak", "wrong_direction", "highlights_clipped", "shadows_crushed",
             "oversaturated", "banding", "local_spill", "channel_clipped", "target_not_found", "not_asked")

#: Documented defaults, with their ranges: agent.config.JudgeSettings (``quality.judge:`` in the config).
DEFAULTS: dict[str, Any] = JudgeSettings().model_dump()


# -- what each op moves ---------------------------------------------------------------

#: op name -> Effect (declared with each op in the registry, pipeline/ops.py).
EFFECTS: dict[str, Effect] = {o.name: o.effect for o in ops.OPS.values() if o.effect is not None}


@dataclass
class _Views:
    """Analysis copies of before / after / original, converted once per request."""

    before: measure.LabImage
    after: measure.LabImage
    original: measure.LabImage
    before_px: np.ndarray
    after_px: np.ndarray


def _tone_region(L: np.ndarray, where: np.ndarray | None, lo_q: float, hi_q: float,
                 sign: int) -> np.ndarray:
    """Weights of the pixels whose lightness *before* lies between two percentiles,
    leaving out pixels that cannot move the asked way (pure black cannot get
    darker, pure white cannot get brighter)."""
    movable = (L > 2.0) if sign < 0 else (L < 98.0)
    inside = movable if where is None else movable & (where > 0.5)
    sel = L[inside]
    if sel.size == 0:
        return np.zeros_like(L)
    lo, hi = np.percentile(sel, [lo_q, hi_q])
    region = ((L >= lo) & (L <= hi) & movable).astype(np.float32)
    return region if where is None else region * where


def _band_region(v: measure.LabImage, band: str, where: np.ndarray | None) -> np.ndarray:
    """Membership in ``band``, weighted by how colourful each pixel is (greys have no band)."""
    w = measure.band_weights(v.hue, band) * np.minimum(2.0 * v.sat, 1.0) * (v.chroma > 4)
    return w if where is None else w * where


def _delta(before: np.ndarray, after: np.ndarray, w: np.ndarray | None) -> float:
    return measure.weighted_mean(after, w) - measure.weighted_mean(before, w)


def _std(x: np.ndarray, w: np.ndarray | None) -> float:
    m = measure.weighted_mean(x, w)
    return math.sqrt(max(measure.weighted_mean((x - m) ** 2, w), 0.0))


def _change(metric: str, views: _Views, where: np.ndarray | None, where_full: np.ndarray | None,
            band: str | None, sign: int = 1) -> float:
    """Signed change of ``metric`` from before to after, inside ``where``."""
    b, a = views.before, views.after
    if metric == "lightness":
        return _delta(b.L, a.L, where)
    if metric == "contrast":
        return _std(a.L, where) - _std(b.L, where)
    if metric in ("upper_tones", "lower_tones"):
        # the zones where the highlights / shadows curves act (L* of the photo before)
        lo, hi = (55.0, 95.0) if metric == "upper_tones" else (8.0, 45.0)
        zone = ((b.L >= lo) & (b.L <= hi)).astype(np.float32)
        zone = zone if where is None else zone * where
        if float(zone.sum()) < 0.01 * b.L.size:  # a photo with no such tones: use its own range
            q = (75, 100) if metric == "upper_tones" else (0, 25)
            zone = _tone_region(b.L, where, *q, sign)
        return _delta(b.L, a.L, zone)
    if metric in ("top_tones", "bottom_tones"):
        q = (95, 100) if metric == "top_tones" else (0, 5)
        return _delta(b.L, a.L, _tone_region(b.L, where, *q, sign))
    if metric == "warm_balance":
        return measure.colour_balance(a.masked(where))["warm"] - measure.colour_balance(b.masked(where))["warm"]
    if metric == "magenta_balance":
        return (measure.colour_balance(a.masked(where))["magenta"]
                - measure.colour_balance(b.masked(where))["magenta"])
    if metric == "warmth":
        return _delta(b.b, a.b, where)
    if metric == "tint":
        return _delta(b.a, a.a, where)
    if metric == "chroma":
        return _delta(b.chroma, a.chroma, where)
    if metric == "band_hue":
        return measure.hue_shift(b.masked(where), a, band=band)
    if metric == "band_chroma":
        return _delta(b.chroma, a.chroma, _band_region(b, band, where))
    if metric == "band_lightness":
        return _delta(b.L, a.L, _band_region(b, band, where))
    if metric == "texture":
        return measure.local_contrast(a.masked(where)) - measure.local_contrast(b.masked(where))
    if metric == "haze":
        return 100.0 * (measure.dark_channel(a.masked(where)) - measure.dark_channel(b.masked(where)))
    if metric == "detail":
        before = measure.fine_detail(views.before_px, where_full)
        after = measure.fine_detail(views.after_px, where_full)
        return 100.0 * math.log(max(after, 1e-6) / max(before, 1e-6))
    raise KeyError(metric)


def band_share(v: measure.LabImage, band: str, where: np.ndarray | None) -> float:
    """Share (0..1) of the area (inside ``where``) that holds colours of ``band``."""
    area = float(v.L.size if where is None else where.sum())
    return float(_band_region(v, band, where).sum()) / max(area, 1e-6)


def _base(relative: str, views: _Views, where: np.ndarray | None, band: str | None, sign: int) -> float:
    """The 'before' measurement a relative effect scales with."""
    b = views.before
    if relative == "band_headroom":
        # lighter colours have less room to brighten, darker ones less to darken (0..1)
        lightness = measure.weighted_mean(b.L, _band_region(b, band, where)) / 100.0
        return 1.0 - lightness if sign > 0 else lightness
    if relative == "contrast":
        return _std(b.L, where)
    if relative == "chroma":
        return measure.weighted_mean(b.chroma, where)
    if relative == "muted_chroma":
        # vibrance acts on muted colours: chroma weighted by (1 - saturation)^2
        return measure.weighted_mean(b.chroma * (1.0 - b.sat) ** 2, where)
    if relative == "band_chroma":
        return measure.weighted_mean(b.chroma, _band_region(b, band, where))
    if relative == "texture":
        return measure.local_contrast(b.masked(where))
    raise KeyError(relative)


# -- one sub-goal ----------------------------------------------------------------------

@dataclass
class SubGoalCheck:
    """The judge's finding on one sub-goal (kept for the UI and the trace).

    ``change`` is the signed change of the op's metric (in ``unit``) from
    before to after; ``expected`` the change expected for ``moved`` (how far
    the op's value moved, -100..100); ``score`` 0..1; ``verdict`` one of
    complied, no_change_needed, too_weak, wrong_direction, not_measured.
    """

    op: str
    key: str
    verdict: str
    score: float
    change: float = 0.0
    expected: float = 0.0
    moved: int = 0
    unit: str = ""
    where: str = ""
    sentence: str = ""

    def to_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _mask_key(spec: Mapping) -> str:
    return json.dumps(spec, sort_keys=True)


def _find_mask(request: JudgeRequest, spec: Mapping | None) -> np.ndarray | None:
    if spec is None:
        return None
    for candidate in (spec, _normalized(spec)):
        if candidate is not None and _mask_key(candidate) in request.masks:
            return np.asarray(request.masks[_mask_key(candidate)], np.float32)
    return None


def _normalized(spec: Mapping) -> dict | None:
    try:
        return normalize_mask_spec(spec)
    except MaskSpecError:
        return None


def _needed_move(goal: SubGoal, request: JudgeRequest) -> int:
    """How far the op's value had to move for this sub-goal, within the op's range.

    0 when the state was already where the sub-goal asked (or clamped there).
    """
    op = ops.get_op(goal.op)
    try:
        before = request.previous_state.value(goal.op, goal.target)
    except (MaskSpecError, ops.OpError):
        before = 0
    target = before + goal.value if goal.mode == "add" else goal.value
    return op.clamp(target) - before


def _direction_words(op_name: str, sign: int) -> str:
    """'warmer' / 'cooler' from the registry's descriptions of -100 / +100."""
    op = ops.get_op(op_name)
    text = op.plus if sign > 0 else op.minus
    return text.split(" (")[0].split(",")[0].strip()


def _fmt(x: float) -> str:
    return f"{x:+.1f}" if abs(x) < 100 else f"{x:+.0f}"


_SHOWN_UNITS = {"warmth": "b*", "tint": "a*"}


def _shown(effect: Effect, change: float, shown_change: float | None = None) -> str:
    """'b* +6.1', or 'fine detail x1.8' for the log-scaled detail metric."""
    if effect.shown_as and shown_change is not None:
        return f"{_SHOWN_UNITS[effect.shown_as]} {_fmt(shown_change)}"
    if effect.metric == "detail":
        return f"{effect.unit} x{math.exp(change / 100.0):.2f}"
    if effect.metric.endswith("_balance"):
        return f"{effect.unit} {change:+.2f}"
    return f"{effect.unit} {_fmt(change)}"


def check_sub_goal(goal: SubGoal, request: JudgeRequest, views: _Views, t: Mapping[str, Any],
                   key: str) -> SubGoalCheck:
    """Score one sub-goal: did its metric move the right way by a visible amount?"""
    effect = EFFECTS.get(goal.op)
    where_text = f" on {describe_mask(goal.target)}" if goal.target else ""
    if effect is None:
        # geometry and finishing ops: their own pixel checks (aspect, levelness, vignette, grain, ...)
        from agent.judging.toolbox_checks import check_toolbox_goal

        found = check_toolbox_goal(goal, request, key)
        if found is None:  # healing and portrait ops: agent/judging/retouch_checks.py
            from agent.judging.retouch_checks import check_retouch_goal

            found = check_retouch_goal(goal, request, key)
        if found is not None:
            return SubGoalCheck(**found)
        return SubGoalCheck(goal.op, key, "not_measured", 1.0, where=where_text,
                            sentence=f"{goal.op}{where_text}: not measured.")
    moved = _needed_move(goal, request)
    words = _direction_words(goal.op, 1 if moved >= 0 else -1)
    if moved == 0:
        # clamped at the op's limit, or already at the asked value: the state did not need to move
        now = request.previous_state.value(goal.op, goal.target)
        return SubGoalCheck(goal.op, key, "no_change_needed", 1.0, where=where_text, unit=effect.unit,
                            sentence=f"{ops.get_op(goal.op).label}{where_text} was already at {now:+d}; "
                                     f"nothing to change.")
    full_mask = _find_mask(request, goal.target)
    where = None
    if full_mask is not None:
        where = views.before.masked(full_mask).weight
    sign = 1 if moved > 0 else -1
    change = _change(effect.metric, views, where, full_mask, effect.band, sign)
    gain = float(t.get("gains", {}).get(goal.op, effect.full))
    scale = gain * (_base(effect.relative, views, where, effect.band, sign) if effect.relative else 1.0)
    expected = scale * abs(moved) / 100.0
    if effect.band and band_share(views.before, effect.band, where) < float(t["min_band_share"]):
        expected = 0.0  # (almost) no colours of this band: nothing for the op to act on
    signed = sign * effect.polarity * change
    shown_change = _change(effect.shown_as, views, where, full_mask, None) if effect.shown_as else None
    if shown_change is not None and shown_change * change < 0:
        shown_change = None   # the friendlier number disagrees with the one judged: show the judged one
    shown = _shown(effect, change, shown_change)
    if expected < effect.noise:
        # Nothing there for the op to act on (saturation of a grey photo): not the edit's fault.
        return SubGoalCheck(goal.op, key, "no_change_needed", 1.0, change, expected, moved, effect.unit,
                            where_text, f"Little here for “{words}”{where_text} to change ({shown}).")
    visible = float(t["visible_fraction"]) * expected
    if signed <= -max(effect.noise, float(t["wrong_fraction"]) * expected):
        opposite = _direction_words(goal.op, -sign)
        return SubGoalCheck(goal.op, key, "wrong_direction", 0.0, change, expected, moved, effect.unit,
                            where_text, f"{opposite.capitalize()}{where_text} instead of {words} ({shown}).")
    if signed < visible:
        score = 0.5 * max(signed, 0.0) / visible
        if signed < effect.noise:
            return SubGoalCheck(goal.op, key, "too_weak", score, change, expected, moved, effect.unit,
                                where_text, f"No visible change{where_text} for “{words}” ({shown}).")
        return SubGoalCheck(goal.op, key, "too_weak", score, change, expected, moved, effect.unit,
                            where_text, f"Barely visible{where_text}: “{words}” ({shown}, about "
                                        f"{max(signed, 0.0) / expected:.0%} of the change asked for).")
    return SubGoalCheck(goal.op, key, "complied", 1.0, change, expected, moved, effect.unit,
                        where_text, f"{words.capitalize()}{where_text} as asked ({shown}).")


# -- technical quality and preservation -------------------------------------------------

@dataclass
class _Technical:
    score: float
    numbers: dict[str, float]
    diagnoses: list[str]
    sentences: list[str]                                  # with the measurements (details)
    plain: list[str] = field(default_factory=list)        # the same in plain words

#: Plain words for each technical diagnosis (the measured sentence goes to the details).
_PLAIN_TECHNICAL = {
    "highlights_clipped": "Some highlights now burn out to white.",
    "shadows_crushed": "Some shadows are now crushed to black.",
    "oversaturated": "Some colours are now oversaturated.",
    "banding": "Smooth tones now show banding.",
}


def _severity(excess: float, bad: float) -> float:
    return float(min(1.0, max(0.0, excess) / max(bad, 1e-6)))


def channel_clip_shares(img: np.ndarray) -> dict[str, float]:
    """Share (0..1) of pixels at 254-255 in each colour channel ("red", "green", "blue").

    Two channels at the ceiling is a blown highlight (:func:`measure.clipped_shares`);
    one is a colour that lost its texture, which people see on reds and skies.
    """
    step = max(1, int(max(img.shape[:2]) // 800))
    px = img[::step, ::step]
    return {name: float(np.mean(px[..., i] >= 254)) for i, name in enumerate(("red", "green", "blue"))}


def check_technical(original: np.ndarray, current: np.ndarray, sub_goals: list[SubGoal],
                    t: Mapping[str, Any], views: _Views | None = None) -> _Technical:
    """New damage relative to the original: blown highlights, crushed shadows,
    pure-colour areas, banding. Returns a 0..1 score, numbers, diagnoses and sentences."""
    asked = {g.op: g.value for g in sub_goals if g.target is None}
    clip_o, clip_c = measure.clipped_shares(original), measure.clipped_shares(current)
    new_blown = max(0.0, clip_c["highlights"] - clip_o["highlights"])
    new_crushed = max(0.0, clip_c["shadows"] - clip_o["shadows"])
    orig_view = views.original if views else original
    cur_view = views.after if views else current
    # pure-colour share on the analysis copies (colour areas survive downscaling)
    new_pure = max(0.0, measure.pure_colour_share(cur_view) - measure.pure_colour_share(orig_view))
    step_o, step_c = measure.level_step(original), measure.level_step(current)
    step_ratio = step_c / max(step_o, 1e-6)
    chan_o, chan_c = channel_clip_shares(original), channel_clip_shares(current)
    new_channel = {c: max(0.0, chan_c[c] - chan_o[c]) for c in chan_c}
    worst_channel = max(new_channel, key=new_channel.get)

    clip_tol = float(t["clip_tolerance"]) * (2 if asked.get("whites", 0) > 0 else 1)
    crush_tol = float(t["crush_tolerance"]) * (2 if asked.get("blacks", 0) < 0 else 1)
    w = t["technical_weights"]
    problems = {
        "highlights": _severity(new_blown, float(t["clip_bad"])),
        "shadows": _severity(new_crushed, float(t["crush_bad"])),
        "oversaturation": _severity(new_pure, float(t["oversaturation_bad"])),
        "banding": _severity(step_ratio - 1.0, 3.0) if step_c >= float(t["banding_min_step"]) else 0.0,
        "channels": _severity(new_channel[worst_channel] - float(t["channel_clip_tolerance"]),
                              float(t["channel_clip_bad"])),
    }
    score = 1.0 - sum(float(w.get(k, 0.5)) * v for k, v in problems.items())
    diagnoses, sentences = [], []
    if new_blown > clip_tol:
        diagnoses.append("highlights_clipped")
        sentences.append(f"Highlights now clip on {new_blown:.0%} of the image.")
    if new_crushed > crush_tol:
        diagnoses.append("shadows_crushed")
        sentences.append(f"Shadows are crushed to black on {new_crushed:.0%} more of the image.")
    if new_pure > float(t["oversaturation_tolerance"]):
        diagnoses.append("oversaturated")
        sentences.append(f"Colours are oversaturated: {new_pure:.0%} of the image is now flat pure colour.")
    if step_ratio >= float(t["banding_ratio"]) and step_c >= float(t["banding_min_step"]):
        diagnoses.append("banding")
        sentences.append(f"Tones are posterised (banding): levels {step_ratio:.1f}x further apart.")
    clipped = [c for c, v in new_channel.items() if v > float(t["channel_clip_tolerance"])]
    if clipped and "highlights_clipped" not in diagnoses:
        diagnoses.append("channel_clipped")
        sentences.append(" and ".join(f"The {c} channel now clips on {new_channel[c]:.1%} of the image"
                                      for c in clipped) + ".")
    numbers = {
        "technical.new_clipped_highlights": new_blown,
        "technical.new_crushed_shadows": new_crushed,
        "technical.new_pure_colour": new_pure,
        "technical.level_step_ratio": step_ratio,
        **{f"technical.new_clipped_{c}": v for c, v in new_channel.items()},
    }
    plain = [_PLAIN_TECHNICAL[d] for d in diagnoses if d in _PLAIN_TECHNICAL]
    if "channel_clipped" in diagnoses:
        plain.append(" and ".join(f"the {c}s" for c in clipped).capitalize() + " lose their texture where "
                     "they are brightest.")
    return _Technical(float(min(1.0, max(0.0, score))), numbers, diagnoses, sentences, plain)


@dataclass
class _Preservation:
    score: float
    ssim: float
    delta_e: float
    spill: bool
    sentence: str
    plain: str = ""


def check_preservation(before: np.ndarray, current: np.ndarray, edited: np.ndarray,
                       t: Mapping[str, Any], where_text: str) -> _Preservation | None:
    """SSIM and mean ΔE outside the edited area (``edited``: union of the local masks, 0..1).

    None when nothing lies outside the masks.
    """
    outside = (edited < float(t["outside_below"])).astype(np.float32)
    if outside.mean() < 0.01:
        return None
    s = measure.ssim(before, current, outside)
    de = measure.delta_e(before, current, outside)
    p_ssim = (s - float(t["ssim_floor"])) / (float(t["ssim_good"]) - float(t["ssim_floor"]))
    p_de = 1.0 - (de - float(t["delta_e_good"])) / (float(t["delta_e_bad"]) - float(t["delta_e_good"]))
    score = float(min(1.0, max(0.0, min(p_ssim, p_de))))
    spill = s < float(t["spill_ssim"]) or de > float(t["spill_delta_e"])
    rest = rest_of(where_text)
    if spill:
        sentence = f"The edit spilled beyond {where_text} (SSIM {s:.2f}, ΔE {de:.1f} on {rest})."
        plain = f"The edit also changed {rest}."
    else:
        sentence = f"{rest.capitalize()} is intact (SSIM {s:.2f})."
        # ("faces kept their look", "the sky kept its look", "everything but the blues kept its look")
        plural = rest.split()[-1].endswith("s") and not rest.split()[-1].endswith("'s") \
            and not rest.startswith(("everything", "the rest", "outside"))
        plain = f"{rest.capitalize()} kept {'their' if plural else 'its'} look."
    return _Preservation(score, s, de, spill, sentence, plain)


def rest_of(where_text: str) -> str:
    """What lies outside an edited place, in words: 'the rest of the photo', or 'the subject'
    for an edit 'outside the subject' (never 'outside outside the subject')."""
    if where_text.startswith("outside "):
        return where_text.removeprefix("outside ")
    if where_text.startswith("everything but "):
        return where_text.removeprefix("everything but ")
    return "the rest of the photo"


# -- custom quality-schema fields ----------------------------------------------------------

#: Custom schema fields the embedded judge can measure: name -> f(original, current, dimensions).
MEASURABLE_FIELDS: dict[str, Callable[[measure.LabImage, measure.LabImage, dict], Any]] = {
    "brightness": lambda o, c, d: round(measure.weighted_mean(c.L) / 100.0, 4),
    "colorfulness": lambda o, c, d: round(min(1.0, measure.weighted_mean(c.chroma) / 60.0), 4),
    "highlight_clipping": lambda o, c, d: round(d.get("technical.new_clipped_highlights", 0.0), 4),
    "shadow_clipping": lambda o, c, d: round(d.get("technical.new_crushed_shadows", 0.0), 4),
    "color_grade": lambda o, c, d: _colour_grade(o, c),
}


def _colour_grade(original: measure.LabImage, current: measure.LabImage) -> str:
    """The closest named grade from simple colour statistics (a rough reading)."""
    chroma = measure.weighted_mean(current.chroma)
    warm = measure.weighted_mean(current.b) - measure.weighted_mean(original.b)
    if chroma < 6:
        return "desaturated"
    contrast_gain = _std(current.L, None) - _std(original.L, None)
    if contrast_gain > 6:
        return "high_contrast"
    if warm > 3:
        return "warm"
    if warm < -3:
        return "cool"
    return "natural"


def _custom_fields(schema_name: str, original: measure.LabImage, current: measure.LabImage,
                   dims: dict, root: str | None = None) -> tuple[dict, list[str]]:
    """Fill the quality schema's custom fields this judge can measure; the rest are None."""
    if not schema_name or schema_name == "default":
        return {}, []
    try:
        import schemas
        schema = schemas.load_schema("quality", schema_name, root=root)
    except Exception as exc:  # a missing or broken schema must not sink the turn
        return {}, [f"quality schema {schema_name!r} not loaded ({exc}); custom fields not assessed"]
    measured = {}
    for name in schema.custom_field_names():
        fn = MEASURABLE_FIELDS.get(name)
        if fn is not None:
            measured[name] = fn(original, current, dims)
    return schemas.fill_custom_fields(schema, measured, judge="the embedded judge")


# -- thresholds -----------------------------------------------------------------------------

def _merge(base: dict, extra: Mapping | None) -> dict:
    out = copy.deepcopy(base)
    for k, v in (extra or {}).items():
        if isinstance(v, Mapping) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        elif k in out:
            out[k] = v
    return out


def _section(source: Any, *path: str) -> Mapping | None:
    for key in path:
        if source is None:
            return None
        source = source.get(key) if isinstance(source, Mapping) else getattr(source, key, None)
    if isinstance(source, JudgeSettings):
        return source.model_dump(exclude_unset=True)  # only what the config sets overrides the profile
    return source if isinstance(source, Mapping) else None


def _engine_profile():
    """The engine profile, or None when profiles are missing or broken (the judge's defaults then)."""
    try:
        from profiles import load_profile  # written alongside; optional; parsed once and cached
        return load_profile("engine")
    except Exception:
        return None


def _profile_thresholds() -> Mapping | None:
    """The engine profile's ``quality_signatures.judge`` section, if profiles exist."""
    profile = _engine_profile()
    return None if profile is None else _section(profile, "quality_signatures", "judge")


@functools.lru_cache(maxsize=1)
def _sweet_spots() -> dict:
    """op -> the engine profile's sweet spot (where the planner stops repeated moves); {} without profiles."""
    profile = _engine_profile()
    if profile is None:
        return {}
    return {op: spot for op in ops.OPS if (spot := profile.sweet_spot(op)) is not None}


def _file_thresholds() -> Mapping | None:
    try:
        import yaml
        with open(DEFAULT_CONFIG_PATH, encoding="utf-8") as fh:
            return _section(yaml.safe_load(fh), "quality", "judge")
    except (OSError, ValueError, ImportError):
        return None


def load_thresholds(config: Any = None) -> dict:
    """Judge thresholds: defaults < engine profile < agent_config.yaml < ``config``.

    ``config`` may be the judge section itself, or any mapping/object with a
    ``quality.judge`` or ``judge`` section (the rest is ignored).
    """
    t = _merge(DEFAULTS, _profile_thresholds())
    t = _merge(t, _file_thresholds())
    if config is not None:
        extra = _section(config, "quality", "judge") or _section(config, "judge")
        if extra is None and isinstance(config, Mapping):
            extra = config
        t = _merge(t, extra)
    return t


# -- the judge ---------------------------------------------------------------------------------

_PARENS = re.compile(r"\s*\([^()]*\)")


def plain_words(sentence: str) -> str:
    """A judge sentence without its measurements: 'Warmer as asked (b* +3.1).' -> 'Warmer as asked.'"""
    return re.sub(r"\s+([.,;:])", r"\1", _PARENS.sub("", sentence)).strip()


def _stopped_at_sweet_spot(request: JudgeRequest) -> bool:
    """Whether a step outward ends on its op's sweet-spot edge: where the planner stops a repeated
    move ("more", "again") and says so, a step shorter than the repeat asked."""
    spots = _sweet_spots()
    for g in request.sub_goals:
        spot = spots.get(g.op)
        if spot is not None and g.mode == "add" and g.value:
            try:
                after = request.state.value(g.op, g.target)
            except (MaskSpecError, ops.OpError):
                continue
            if after in (spot.low, spot.high) and abs(after) > abs(after - g.value):
                return True
    return False


def _held(request: JudgeRequest) -> bool:
    """Whether the executor held any non-zero step short of what was asked (sweet spot, range)."""
    if getattr(request, "held", False):
        return True
    for g in request.sub_goals:
        if g.mode != "set" and not g.value:
            continue
        try:
            before = request.previous_state.value(g.op, g.target)
            after = request.state.value(g.op, g.target)
        except (MaskSpecError, ops.OpError):
            continue
        asked = g.value if g.mode == "set" else before + g.value
        if after != asked:
            return True
    return False


def _reading_mask(reading: Reading, original: np.ndarray, warnings: list[str],
                  locate: Callable[[dict], np.ndarray] | None = None) -> np.ndarray | None:
    """The reading's own target mask at the original's size (None when it names no mask)."""
    if not reading.target_mask:
        return None
    try:
        spec = dict(reading.target_mask)
        mask = _located(spec, original, locate)
        # "brighten the grass at the bottom" on a photo with no green: the part of the frame the person said is
        # where the thing is (as the planner reads it)
        frame = [m for m in spec.get("masks") or () if m.get("type") in ("gradient", "radial") and not m.get("invert")]
        if spec.get("type") == "intersect" and frame and len(frame) < len(spec["masks"]) \
                and float(mask.mean()) < MIN_TARGET_SHARE:
            mask = _located(frame[0] if len(frame) == 1 else {"type": "intersect", "masks": frame}, original, locate)
        stand_in = _stand_in(reading, spec) if float(mask.mean()) < MIN_TARGET_SHARE else None
        if stand_in is not None:
            # "darken the grass" on a black-and-white photo: no green to find it by, so where such a thing
            # stands (the bottom), as the planner reads it
            mask = _located(stand_in, original, locate)
        return mask
    except (MaskSpecError, ValueError) as exc:
        warnings.append(f"the judge could not locate {reading.target} ({exc})")
        return None


def _stand_in(reading: Reading, spec: Mapping) -> dict | None:
    """The mask of the place a thing named by its colour stands for ("grass": the bottom), when the reading's
    mask is that colour and the message names such a thing; else None."""
    if spec.get("type") != "color":
        return None
    lex = load_lexicon()
    words = re.findall(r"[a-z]+", (reading.message or "").lower())
    for before, word in zip(["", *words], words):
        # (a thing named as one, "the grass", not "it's meant to be grass")
        if before in NAMING_DETERMINERS and word in lex.stand_ins and lex.bands.get(word) == spec.get("band"):
            return dict(lex.stand_ins[word])
    return None



def _located(spec: dict, original: np.ndarray, locate: Callable[[dict], np.ndarray] | None) -> np.ndarray:
    if locate is not None:   # the renderer's masks: a face found once is not searched for again
        return np.clip(np.asarray(locate(spec), np.float32), 0.0, 1.0)
    return np.clip(build_mask(spec, original, original.shape[:2]), 0.0, 1.0)


def _last_change_place(request: JudgeRequest, original: np.ndarray) -> LastChange | None:
    """The last change, ``before_last_state`` -> ``previous_state``: the ops it moved (op -> signed step)
    and where (None for the whole photo, else the union of the masks of the layers it moved). None
    without the states, when it moved no op (a generated layer), or when a layer's mask cannot be built."""
    older, newer = getattr(request, "before_last_state", None), request.previous_state
    if older is None or newer is None:
        return None
    history = list(getattr(request, "history", None) or [])
    if history and keeps_out_of_last(history[-1], history[:-1]):
        return None     # "but leave the sky alone": that change, kept off a place, is not a change of its own

    def steps(a: Mapping, b: Mapping) -> dict[str, float]:
        out = {}
        for op in set(a) | set(b):
            va, vb = a.get(op, 0), b.get(op, 0)
            if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va != vb:
                out[op] = float(vb) - float(va)
        return out

    moved = steps(older.settings, newer.settings)
    if moved:
        return LastChange(moved, None)

    def layers(state) -> dict[str, Any]:
        return {json.dumps(normalize_mask_spec(layer.mask), sort_keys=True): layer for layer in state.layers}

    a, b = layers(older), layers(newer)
    places: list[str] = []
    for key in sorted(set(a) | set(b)):
        step = steps(a[key].settings if key in a else {}, b[key].settings if key in b else {})
        if step:
            places.append(key)
            for op, v in step.items():
                moved[op] = moved.get(op, 0.0) + v
    if not moved:
        return None
    try:
        masks = [_located(json.loads(k), original, getattr(request, "locate", None)) for k in places]
    except (MaskSpecError, ValueError):
        return None
    return LastChange(moved, np.maximum.reduce(masks) if len(masks) > 1 else masks[0])


def _repeats_doubt(request: JudgeRequest, original: np.ndarray, before: np.ndarray,
                   last_change: LastChange | None, t: Mapping) -> bool:
    """Whether the last change, which a bare "more" repeats, is one the judge doubts: its message read
    again and measured as it landed (``before_last`` -> ``before``, where it went) falls short, or went
    on a place the judge cannot find. The person's "more" says they liked the way it went, not where."""
    history = list(getattr(request, "history", None) or [])
    before_last = getattr(request, "before_last", None)
    if not history or before_last is None or last_change is None:
        return False
    last = read_attempt(history[-1], history[:-1])
    if last.kind != "edit" or not last.expects:
        return False
    where = last_change.where
    judged = score_reading(last, before=np.asarray(before_last), after=before, original=original,
                           target_mask=_reading_mask(last, original, [], getattr(request, "locate", None)),
                           plan_mask=where, plan_is_local=where is not None)
    return judged.compliance is not None and (judged.compliance < float(t["doubt_below"])
                                              or judged.place_unconfirmed)


#: Places the judge can trust as the thing meant: a face (its mesh confirms it), skin, and what the person painted.
_CONFIRMED_PLACES = frozenset({"face", "skin", "painted", "selection"})


def _unconfirmed_place(goals) -> bool:
    """Whether a sub-goal works on a place other than those the judge can trust (a mask's parts, walked)."""
    def kinds(spec) -> set[str]:
        if not isinstance(spec, Mapping):
            return set()
        inner = [spec.get("mask")] + list(spec.get("masks") or ())
        own = set() if spec.get("type") in ("invert", "intersect", "union") else {str(spec.get("type"))}
        return own.union(*(kinds(m) for m in inner))
    found = set().union(*(kinds(g.target) for g in goals)) if goals else set()
    return bool(found - _CONFIRMED_PLACES)


def _nothing_asked_happened(judged) -> bool:
    """Whether the reading found no move the asked way at all: every check "none" or "wrong"."""
    return (judged.compliance is not None and bool(judged.checks)
            and all(c.verdict in ("none", "wrong", "past") for c in judged.checks))


@dataclass
class JudgeReport:
    """Everything the judge found: the Assessment plus the per-sub-goal checks."""

    assessment: Assessment
    checks: list[SubGoalCheck] = field(default_factory=list)


def _goal_key(goal: SubGoal, seen: dict[str, int]) -> str:
    """'temperature', 'temperature@sky', 'temperature@sky#2' (unique per turn)."""
    key = goal.op
    if goal.target:
        tag = goal.target.get("type", "mask")
        if tag == "color" and "hue" in goal.target:
            tag = describe_mask(goal.target).split()[0]
        key = f"{goal.op}@{tag}"
    seen[key] = seen.get(key, 0) + 1
    return key if seen[key] == 1 else f"{key}#{seen[key]}"


@functools.lru_cache(maxsize=1)
def _engine_vocabulary():
    from agent.conversation.vocabulary import Vocabulary
    from profiles import load_profile

    return Vocabulary(load_profile("engine"))


#: Diagnoses that doubt the reading of the request rather than the quality of the result.
_DOUBTS = frozenset({"unread_words", "part_skipped", "local_spill", "target_not_found", "not_asked", "repeats_doubt",
                     "place_guessed"})
#: The lowest ceiling doubts alone set (above the default pass mark, 0.6).
_DOUBT_FLOOR = 0.65


def _unread_words(request: JudgeRequest) -> list[str]:
    """The message's words no table knows (none for the person's own slider values: no message)."""
    message = str(request.message or "")
    return _engine_vocabulary().unread_words(message) if message.strip() else []


class EmbeddedJudge:
    """Scores a turn from measurements only; see the module docstring for the rules."""

    name = "embedded"

    def __init__(self, config: Any = None):
        self.thresholds = load_thresholds(config)

    def assess(self, request: JudgeRequest) -> Assessment:
        return self.report(request).assessment

    def assess_generated(self, before: np.ndarray, after: np.ndarray, mask: np.ndarray, *,
                         operation: str = "fill", signatures: Any = None):
        """A generated region (remove / fill / expand): preservation, seams, colour match (agent/judging/generative.py)."""
        from agent.judging.generative import assess_generated
        return assess_generated(before, after, mask, operation=operation, signatures=signatures)

    def report(self, request: JudgeRequest) -> JudgeReport:
        """The Assessment plus per-sub-goal checks (for the UI and the trace)."""
        t = self.thresholds
        original = np.asarray(request.original)
        current = np.asarray(request.current)
        before = original if request.previous is None else np.asarray(request.previous)
        if current.shape != original.shape or before.shape != original.shape:
            raise ValueError(f"judge: original {original.shape}, previous {before.shape} and current "
                             f"{current.shape} must be renders of the same size")
        warnings: list[str] = []
        views = _Views(measure.LabImage.of(before), measure.LabImage.of(current),
                       measure.LabImage.of(original) if before is not original else None, before, current)
        if views.original is None:
            views.original = views.before

        checks: list[SubGoalCheck] = []
        seen: dict[str, int] = {}
        for goal in request.sub_goals:
            if goal.target is not None and _find_mask(request, goal.target) is None:
                warnings.append(f"{goal.summary()}: no mask given for {describe_mask(goal.target)}; "
                                f"measured over the whole image")
            checks.append(check_sub_goal(goal, request, views, t, _goal_key(goal, seen)))

        technical = check_technical(original, current, request.sub_goals, t, views)

        preservation = None
        local = [g for g in request.sub_goals if g.target is not None]
        plan_masks = [m for m in (_find_mask(request, g.target) for g in local) if m is not None]
        plan_mask = (np.maximum.reduce(plan_masks) if len(plan_masks) > 1 else plan_masks[0]) if plan_masks else None
        if request.sub_goals and len(local) == len(request.sub_goals) and plan_mask is not None:
            where_text = " and ".join(dict.fromkeys(describe_mask(g.target) for g in local))
            preservation = check_preservation(before, current, plan_mask, t, where_text)

        # The judge's own reading of the message: how the pixels moved against what was asked.
        reading = read_attempt(request.message or "", list(getattr(request, "history", None) or []),
                               getattr(request, "feedback", "") or "")
        last_change = _last_change_place(request, original)
        judged = score_reading(reading, before=before, after=current, original=original,
                               before_last=getattr(request, "before_last", None),
                               target_mask=_reading_mask(reading, original, warnings,
                                                         getattr(request, "locate", None)),
                               plan_mask=plan_mask, plan_is_local=bool(local),
                               views=(views.before, views.after), last_change=last_change)
        # a repeat the planner stopped at a sweet-spot edge falls short of the repeat on purpose
        held = _held(request) or (reading.follow == "more" and any(c.verdict == "weak" for c in judged.checks)
                                   and _stopped_at_sweet_spot(request))
        if held and not _nothing_asked_happened(judged):
            # a step was held by the executor (a sweet spot, a limit): the edit could not go as far as
            # asked on purpose; the plan's checks judge it, and the warnings say why. A held edit that
            # moved nothing the asked way (or went the wrong way) is still no edit of what was asked.
            reading = Reading(request.message or "", "unknown")
            judged = score_reading(reading, before=before, after=current)

        if reading.bare and reading.follow == "more" and judged.compliance is not None \
                and _repeats_doubt(request, original, before, last_change, t):
            # "a little more" on a change the judge doubted: more of a misread is still a misread
            judged.place_unconfirmed = True
            judged.diagnoses.append("repeats_doubt")
            judged.sentences.append("The change this repeats did not look like what was asked either, "
                                    "so have a look before it is kept.")

        dims: dict[str, float] = {}
        parts: dict[str, float] = {}
        plan_compliance = float(np.mean([c.score for c in checks])) if checks else None
        if judged.compliance is not None:
            parts["compliance"] = judged.compliance
        elif plan_compliance is not None:
            parts["compliance"] = plan_compliance
        parts["technical"] = technical.score
        if preservation is not None:
            parts["preservation"] = preservation.score
        weights = t["weights"]
        total = sum(float(weights.get(k, 0)) for k in parts) or 1.0
        score = sum(float(weights.get(k, 0)) * v for k, v in parts.items()) / total
        if judged.compliance is not None:
            # A wrong, empty or unasked edit never passes; a doubtful one never auto-approves.
            if judged.compliance < float(t["fail_below"]):
                score = min(score, float(t["fail_cap"]) * (0.5 + 0.5 * judged.compliance))
            elif judged.compliance < float(t["doubt_below"]) or judged.place_unconfirmed:
                # a place the judge could not find itself is the plan's guess: the person confirms it
                score = min(score, float(t["doubt_cap"]))
        unread = _unread_words(request) if request.sub_goals else []
        skipped = list(request.skipped) if request.sub_goals else []
        guessed = request.guessed and bool(request.sub_goals)
        if (skipped or guessed) and score > float(t["doubt_cap"]):
            # part of the message was left out, or the change went on the plan's own guess for a place it
            # could not find: what was done may not be what was asked, the person decides
            score = float(t["doubt_cap"])
        if unread and score > float(t["unread_cap"]):
            # words no table knows: what was read may not be what was meant, so the person looks first
            score = float(t["unread_cap"])

        if _unconfirmed_place(request.sub_goals):
            # (local changes on such places pass the pixel checks less often than changes on the whole photo
            # or on a face: measured on the tuning dialogues, agent/eval)
            score *= float(t["unconfirmed_place_factor"])
            details_place = ["The place was found by the planner's own detectors; I checked that the change "
                             "landed there, not that it is the thing you meant."]
        else:
            details_place = []
        dims["compliance"] = parts.get("compliance", 1.0)
        dims["preservation"] = parts.get("preservation", 1.0)
        dims["technical"] = technical.score
        if plan_compliance is not None:
            dims["plan_compliance"] = plan_compliance
        if judged.compliance is not None:
            dims["reading.compliance"] = judged.compliance
        if judged.spill is not None:
            dims["reading.spill"] = judged.spill
        for c in checks:
            dims[f"compliance.{c.key}"] = c.score
            if c.moved:
                dims[f"change.{c.key}"] = c.change
        if preservation is not None:
            dims["preservation.ssim_outside"] = preservation.ssim
            dims["preservation.delta_e_outside"] = preservation.delta_e
        dims.update(technical.numbers)

        diagnoses: list[str] = []
        for c in checks:
            if c.verdict in ("too_weak", "wrong_direction"):
                diagnoses.append(f"{c.verdict}:{c.op}")
        diagnoses += [d for d in judged.diagnoses if d in ("local_spill", "target_not_found", "not_asked", "repeats_doubt")]
        if any(c.verdict == "past" for c in judged.checks or ()):
            # a take-back that went past where it was taking back to: the next attempt takes back less
            diagnoses.append("effect_too_strong")
        diagnoses += technical.diagnoses
        if unread:
            diagnoses.append("unread_words")
        if skipped:
            diagnoses.append("part_skipped")
        if guessed:
            diagnoses.append("place_guessed")
        if preservation is not None and preservation.spill:
            diagnoses.append("local_spill")
        diagnoses = list(dict.fromkeys(diagnoses))
        doubts = [d for d in diagnoses if d in _DOUBTS or d.startswith(("too_weak:", "wrong_direction:"))]
        if len(doubts) > 1:
            # each further sign that this may not be what was meant (words not read, a part left out, a
            # change that spread, one that fell short) lowers the ceiling: the more doubt, the lower it ranks
            # (never under the pass mark on doubt alone: the person decides, the agent does not replan)
            score = min(score, max(float(t["doubt_cap"]) - float(t["doubt_step"]) * (len(doubts) - 1),
                                   _DOUBT_FLOOR))
        # "brighten it and cool it down slightly": the brightening warmed the measure the cooling moves, so the
        # words' reading saw no cooling though the op on its own moved; the op that moves that property is what
        # a replan strengthens (it had no diagnosis, so each replan made the same plan)
        lex = load_lexicon()
        for d in judged.diagnoses:
            verdict, _, prop = d.partition(":")
            signal = {"none": "too_weak", "weak": "too_weak", "wrong": "wrong_direction"}.get(verdict)
            if signal:
                diagnoses += [f"{signal}:{g.op}" for g in request.sub_goals if g.mode == "add" and g.value
                              and (moved := lex.moved_by(g.op)) is not None and moved[0] == prop]
        diagnoses = list(dict.fromkeys(diagnoses))

        # Plain words for the person; the measurements go to the details.
        plain: list[str] = []
        if judged.compliance is not None:
            plain += judged.sentences
        else:
            plain += [plain_words(c.sentence) for c in checks]
            plain += judged.sentences
        if preservation is not None and not (judged.spill is not None and judged.spill > 0.25 and preservation.spill):
            plain.append(preservation.plain)
        plain += technical.plain
        details: list[str] = list(judged.details) + [c.sentence for c in checks] + details_place
        if preservation is not None:
            details.append(preservation.sentence)
        details += technical.sentences
        if unread:
            plain.append("I wasn't sure what \u201c" + "\u201d, \u201c".join(unread[:2]) + "\u201d meant here, "
                         "so have a look before it is kept.")
        if skipped:
            plain.append("Part of what you asked (\u201c" + skipped[0][:40] + "\u201d) was not done, "
                         "so have a look before it is kept.")
        if not request.sub_goals:
            changed = measure.delta_e(views.before, views.after) > 0.5
            plain.insert(0, "Nothing was asked this turn; " +
                         ("the photo changed anyway." if changed else "the photo is unchanged."))
        elif not technical.sentences:
            details.append("No new clipping, banding or oversaturation.")
        details.append(f"Request read as: {reading.describe()} ({reading.kind}).")

        fields, field_warnings = _custom_fields(request.schema, views.original, views.after, dims,
                                                getattr(request, "schema_root", None))
        warnings += field_warnings
        assessment = Assessment(
            score=float(min(1.0, max(0.0, score))),
            assessment=" ".join(dict.fromkeys(s for s in plain if s)),
            dimensions=dims,
            fields=fields,
            diagnoses=diagnoses,
            warnings=warnings,
            source=self.name,
            details=" ".join(dict.fromkeys(s for s in details if s)),
            reading={**reading.to_dict(), **judged.to_dict()},
        )
        return JudgeReport(assessment, checks)
