"""Evaluation scenarios: scripted conversations over real photos, each step with
an expectation that can be checked from pixels.

A scenario file (YAML, ``evals/scenarios/*.yaml``) looks like::

    suite: single            # single | multi | soak (how the metrics group its turns)
    image: astronaut         # default photo for the file's scenarios (skimage.data name)
    scenarios:
      - id: warmer
        tags: [white-balance]
        say: make it warmer              # shorthand for a one-step scenario
        expect: {b_mean: {up: 2}}
      - id: sky-then-undo
        image: rocket
        upscale: 1.5                     # optional: enlarge the photo first (1..4)
        review_mode: always              # optional: "always" | "below_auto_approve" | "never" (default)
        steps:
          - say: darken the sky
            region: {type: sky}          # a pipeline.masks spec, built on the original
            expect:
              inside: {L_mean: {down: 2}}
              outside: {L_mean: {within: 1.5}}
              preserve_outside: 0.95     # SSIM outside the region, before vs after, >= 0.95
          - approve: true
          - modify: {exposure: 30}
            expect: {L_mean: {up: 2}}
          - rollback: 1                  # head back to the version after step 1: must be byte-identical
          - replan: too strong, go softer
            expect: {L_mean: {up: 0.5}}

A condition is ``STAT: {up: X}`` (rose by at least X), ``{down: X}`` (fell by at
least X) or ``{within: X}`` (moved by at most X), optionally with
``at_most: Y`` (for up/down: moved by at most Y, for magnitudes). Changes are
measured between the render before the step and the render after it, or
against ``against: original`` / ``against: <step number>``. ``STAT`` is any
key of :func:`agent.eval.checks.photo_stats` (``L_mean``, ``b_mean``,
``bands.blue.chroma_mean``, ``detail``, ...).
"""

from __future__ import annotations

import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from agent.eval.checks import STAT_NAMES
from pipeline import ops
from pipeline.masks import MaskSpecError, normalize_mask_spec

#: Where the shipped scenario files live (relative to the repository).
SCENARIO_DIR = Path(__file__).resolve().parents[2] / "evals" / "scenarios"

SUITES = ("single", "multi", "soak", "conversation")
#: Conversation suites come in three splits: "tuning" (the planner may be tuned on
#: it), "heldout" (written before any tuning; never tuned on) and "unseen" (written
#: by people who never read the vocabulary, on photos the project never used; never
#: tuned on, and its sentences are never printed by the eval).
SPLITS = ("tuning", "heldout", "unseen")
#: Splits whose sentences the eval never prints or writes (figures only): not in the text report,
#: the JSON summary or the trace.
HIDDEN_SPLITS = ("heldout", "unseen")
#: Turn fields that carry a held-out sentence or words quoted from it (the reply may quote the person).
HIDDEN_TEXT_FIELDS = ("instruction", "reply", "assessment", "details", "warnings", "plans", "text")


def without_hidden_text(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` as it may be shown: a held-out split's sentences and replies replaced by a marker."""
    if record.get("split") not in HIDDEN_SPLITS:
        return dict(record)
    return {k: ("(held-out, not shown)" if k in HIDDEN_TEXT_FIELDS and v else v) for k, v in record.items()}
#: What a conversation turn is, for compliance per kind.
TURN_KINDS = ("edit", "follow_up", "complaint", "undo", "negation", "local", "magnitude",
              "unsupported", "chat", "question", "constraint", "clarify", "review")
REVIEW_MODES = ("always", "below_auto_approve", "never")
ACTIONS = ("say", "approve", "modify", "rollback", "replan")
#: Conversation folders (relative to the repository): one per split.
CONVERSATION_DIR = Path(__file__).resolve().parents[2] / "evals" / "conversations"
DIRECTIONS = ("up", "down", "within")
REGIONS = ("all", "inside", "outside")

#: Held-out evaluation photos shipped in assets/eval/ (see its README for sources).
ASSET_PHOTO_DIR = Path(__file__).resolve().parents[2] / "assets" / "eval"
ASSET_PHOTOS = {"quokka": "quokka.jpg", "department_store": "department_store.jpg",
                "luispedro": "luispedro.jpg", "motorcycle": "motorcycle.jpg",
                "tower": "tower.jpg", "cheetah": "cheetah.jpg",
                "camera_table": "camera_table.jpg", "friends_shore": "friends_shore.jpg",
                "golden_puppy": "golden_puppy.jpg", "mountain_meadow": "mountain_meadow.jpg",
                "latte_cheers": "latte_cheers.jpg", "lunch_table": "lunch_table.jpg",
                "night_tent": "night_tent.jpg", "sea_island": "sea_island.jpg",
                "abbey_arches": "abbey_arches.jpg", "desk_cat": "desk_cat.jpg",
                "night_towers": "night_towers.jpg", "puppy_bowl": "puppy_bowl.jpg",
                "rotary_phone": "rotary_phone.jpg", "starry_lake": "starry_lake.jpg",
                "dark_guitar": "dark_guitar.jpg", "mountain_selfie": "mountain_selfie.jpg",
                "snow_drone": "snow_drone.jpg"}

#: skimage.data photos usable as scenario images (colour photos, bundled with
#: scikit-image: no download). Grey ones are stacked to RGB.
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "camera", "immunohistochemistry",
          "hubble_deep_field", "retina", "cat", "colorwheel",
          "moon", "coins", "clock", "brick", "grass", "gravel", "page") + tuple(sorted(ASSET_PHOTOS))


class ScenarioError(ValueError):
    """A malformed scenario file: the message names the file, scenario and field."""


@dataclass(frozen=True)
class Condition:
    """One measurable expectation: ``stat`` moved ``direction`` by ``amount``.

    ``direction`` "up"/"down": the change is at least ``amount`` (and at most
    ``at_most`` when given); "within": ``|change| <= amount``. ``region`` says
    where the statistic is measured: the whole frame, inside the step's region
    mask or outside it. Units are the statistic's own (L* 0..100, Lab units...).
    """

    stat: str
    direction: str
    amount: float
    at_most: float | None = None
    region: str = "all"
    against: str | int | None = None    # None: the expectation's own base; else "original" or a step

    def describe(self) -> str:
        where = "" if self.region == "all" else f" ({self.region})"
        if self.against is not None:
            where += f" since {'the original' if self.against == 'original' else f'step {self.against}'}"
        if self.direction == "within":
            return f"{self.stat}{where} within ±{self.amount:g}"
        cap = f" (at most {self.at_most:g})" if self.at_most is not None else ""
        sign = "+" if self.direction == "up" else "-"
        return f"{self.stat}{where} {sign}{self.amount:g} or more{cap}"


@dataclass(frozen=True)
class Expectation:
    """What must hold after a step, judged from pixels only.

    ``against``: "previous" (the render before the step), "original", or a step
    number (the render after that step). ``preserve_outside``: minimum SSIM
    (0..1) between the previous render and the new one outside the step's
    region. ``same_as_step``: the render must be byte-identical to the render
    after that step (rollback exactness).
    """

    conditions: tuple[Condition, ...] = ()
    against: str | int = "previous"
    preserve_outside: float | None = None
    same_as_step: int | None = None
    no_new_version: bool = False   # chat/questions: the head stays, the render is byte-identical
    refusal: bool = False          # unsupported: no new version and the reply says it cannot
    stronger_than: int | None = None   # magnitude pairs: every up/down change >= 1.25x that step's
    asks: bool = False             # a place it cannot find: no new version, and the reply asks back

    @property
    def is_empty(self) -> bool:
        return (not self.conditions and self.preserve_outside is None and self.same_as_step is None
                and not self.no_new_version and not self.refusal and self.stronger_than is None
                and not self.asks)


@dataclass(frozen=True)
class Step:
    """One thing the person does: say something, or act in the review panel."""

    index: int                          # 1-based position in the scenario
    action: str                         # one of ACTIONS
    text: str = ""                      # the instruction (say) or the feedback (replan)
    values: Mapping[str, int] | None = None   # modify: op -> new absolute value
    rollback_to: int | None = None      # rollback: step number whose version comes back
    region: dict | None = None          # canonical mask spec for inside/outside checks
    expect: Expectation = field(default_factory=Expectation)
    tags: tuple[str, ...] = ()
    kind: str = ""                      # conversation turns: one of TURN_KINDS

    def describe(self) -> str:
        if self.action == "say":
            return self.text
        if self.action == "modify":
            return "/modify " + " ".join(f"{k}={v}" for k, v in (self.values or {}).items())
        if self.action == "rollback":
            return f"/rollback to step {self.rollback_to}"
        if self.action == "replan":
            return f"/replan {self.text}"
        return "/approve"


@dataclass(frozen=True)
class Scenario:
    id: str
    suite: str
    image: str
    steps: tuple[Step, ...]
    upscale: float = 1.0
    review_mode: str = "never"
    tags: tuple[str, ...] = ()
    source: str = ""
    split: str = ""                     # conversation suites: "tuning" or "heldout"



# -- parsing ------------------------------------------------------------------

def _fail(where: str, message: str) -> ScenarioError:
    return ScenarioError(f"{where}: {message}")


def _number(where: str, value: Any, lo: float = 0.0, hi: float = float("inf")) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(where, f"expected a number, got {value!r}")
    if not lo <= value <= hi:
        raise _fail(where, f"{value!r} is outside {lo:g}..{hi:g}")
    return float(value)


def _step_number(where: str, value: Any, index: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(where, f"expected a step number, got {value!r}")
    if not 0 <= value < index:
        raise _fail(where, f"step {value} is not an earlier step (0 = the original, 1..{index - 1})")
    return value


def check_stat_name(where: str, name: Any) -> str:
    """Validate a statistic name against :data:`agent.eval.checks.STAT_NAMES`."""
    if name not in STAT_NAMES:
        close = [s for s in STAT_NAMES if isinstance(name, str) and (name in s or s in name)][:4]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise _fail(where, f"unknown statistic {name!r}{hint}")
    return name


def _conditions(where: str, data: Any, region: str) -> list[Condition]:
    if not isinstance(data, Mapping):
        raise _fail(where, f"expected STAT: {{up|down|within: number}}, got {data!r}")
    out = []
    for stat, cond in data.items():
        w = f"{where}.{stat}"
        check_stat_name(w, stat)
        if not isinstance(cond, Mapping):
            raise _fail(w, f"expected {{up|down|within: number}}, got {cond!r}")
        dirs = [d for d in DIRECTIONS if d in cond]
        unknown = set(cond) - set(DIRECTIONS) - {"at_most"}
        if unknown:
            raise _fail(w, f"unknown field(s) {', '.join(sorted(unknown))}")
        if len(dirs) != 1:
            raise _fail(w, "give exactly one of up, down, within")
        amount = _number(f"{w}.{dirs[0]}", cond[dirs[0]])
        at_most = None
        if "at_most" in cond:
            if dirs[0] == "within":
                raise _fail(f"{w}.at_most", "only for up/down")
            at_most = _number(f"{w}.at_most", cond["at_most"], amount)
        out.append(Condition(stat, dirs[0], amount, at_most, region))
    return out


def _expectation(where: str, data: Any, index: int, has_region: bool) -> Expectation:
    if data is None:
        return Expectation()
    if not isinstance(data, Mapping):
        raise _fail(where, f"expected an object, got {type(data).__name__}")
    conditions: list[Condition] = []
    against: str | int = "previous"
    preserve = None
    same_as = None
    flags: dict[str, Any] = {"no_new_version": False, "refusal": False, "stronger_than": None, "asks": False}
    plain: dict = {}
    for key, value in data.items():
        if key in ("inside", "outside"):
            if not has_region:
                raise _fail(f"{where}.{key}", "needs a 'region' on the step")
            conditions += _conditions(f"{where}.{key}", value, key)
        elif key == "against":
            if value in ("previous", "original"):
                against = value
            else:
                against = _step_number(f"{where}.against", value, index)
                if against == 0:
                    against = "original"
        elif key == "preserve_outside":
            if not has_region:
                raise _fail(f"{where}.preserve_outside", "needs a 'region' on the step")
            preserve = _number(f"{where}.preserve_outside", value, 0, 1)
        elif key == "same_as_step":
            same_as = _step_number(f"{where}.same_as_step", value, index)
        elif key == "since":
            # Conditions measured against an earlier step: "less, but never past where we were".
            if not isinstance(value, Mapping) or "step" not in value:
                raise _fail(f"{where}.since", "expected {step: N, STAT: {...}, inside/outside: {...}}")
            base = _step_number(f"{where}.since.step", value["step"], index)
            base = "original" if base == 0 else base
            for k, v in value.items():
                if k == "step":
                    continue
                if k in ("inside", "outside") and not has_region:
                    raise _fail(f"{where}.since.{k}", "needs a 'region' on the step")
                region = k if k in ("inside", "outside") else "all"
                cs = _conditions(f"{where}.since", v if region != "all" else {k: v}, region)
                conditions += [Condition(c.stat, c.direction, c.amount, c.at_most, c.region, base) for c in cs]
        elif key == "stronger_than":
            flags[key] = _step_number(f"{where}.stronger_than", value, index)
        elif key in flags:
            if value is not True:
                raise _fail(f"{where}.{key}", "expected true")
            flags[key] = True
        else:
            plain[key] = value
    conditions = _conditions(where, plain, "all") + conditions if plain else conditions
    return Expectation(tuple(conditions), against, preserve, same_as, **flags)


def _modify_values(where: str, data: Any) -> dict[str, int]:
    if not isinstance(data, Mapping) or not data:
        raise _fail(where, "expected {op: value, ...}")
    try:
        return {name: ops.check_value(name, value) for name, value in data.items()}
    except ops.OpError as exc:
        raise _fail(where, str(exc)) from None


def _step(where: str, data: Any, index: int) -> Step:
    if not isinstance(data, Mapping):
        raise _fail(where, f"expected an object, got {type(data).__name__}")
    actions = [a for a in ACTIONS if a in data]
    if len(actions) != 1:
        raise _fail(where, f"give exactly one of {', '.join(ACTIONS)}")
    action = actions[0]
    unknown = set(data) - set(ACTIONS) - {"region", "expect", "tags", "kind"}
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(sorted(unknown))}")
    region = None
    if data.get("region") is not None:
        try:
            region = normalize_mask_spec(data["region"], f"{where}.region")
        except MaskSpecError as exc:
            raise ScenarioError(str(exc)) from None
    value = data[action]
    text, values, rollback_to = "", None, None
    if action in ("say", "replan"):
        if not isinstance(value, str) or not value.strip():
            raise _fail(f"{where}.{action}", "expected non-empty text")
        text = value.strip()
    elif action == "modify":
        values = _modify_values(f"{where}.modify", value)
    elif action == "rollback":
        rollback_to = _step_number(f"{where}.rollback", value, index)
    elif value is not True:
        raise _fail(f"{where}.approve", "expected true")
    expect = _expectation(f"{where}.expect", data.get("expect"), index, region is not None)
    if action == "rollback" and expect.same_as_step is None:
        # A rollback always promises the earlier version back, byte for byte.
        expect = Expectation(expect.conditions, expect.against, expect.preserve_outside, rollback_to)
    tags = data.get("tags") or ()
    if not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags):
        raise _fail(f"{where}.tags", "expected a list of words")
    kind = data.get("kind", "")
    if kind and kind not in TURN_KINDS:
        raise _fail(f"{where}.kind", f"expected one of {', '.join(TURN_KINDS)}, got {kind!r}")
    return Step(index, action, text, values, rollback_to, region, expect, tuple(tags), kind)


def scenario_from_dict(data: Any, *, suite: str, image: str | None = None,
                       source: str = "", where: str = "scenario", split: str = "") -> Scenario:
    """Validate one scenario (plain data from YAML) into a :class:`Scenario`."""
    if not isinstance(data, Mapping):
        raise _fail(where, f"expected an object, got {type(data).__name__}")
    sid = data.get("id")
    if not isinstance(sid, str) or not sid.strip():
        raise _fail(f"{where}.id", "expected a short name")
    where = f"{where} {sid!r}"
    allowed = {"id", "image", "upscale", "review_mode", "tags", "steps", "say", "region", "expect"}
    unknown = set(data) - allowed
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(sorted(unknown))}")
    photo = data.get("image", image)
    if photo not in PHOTOS:
        raise _fail(f"{where}.image", f"expected one of {', '.join(PHOTOS)}, got {photo!r}")
    upscale = _number(f"{where}.upscale", data.get("upscale", 1.0), 1.0, 4.0)
    mode = data.get("review_mode", "never")
    if mode not in REVIEW_MODES:
        raise _fail(f"{where}.review_mode", f"expected one of {', '.join(REVIEW_MODES)}, got {mode!r}")
    if "steps" in data:
        if "say" in data:
            raise _fail(where, "give either 'say' (one step) or 'steps', not both")
        raw_steps = data["steps"]
        if not isinstance(raw_steps, list) or not raw_steps:
            raise _fail(f"{where}.steps", "expected a non-empty list")
    elif "say" in data:
        raw_steps = [{k: data[k] for k in ("say", "region", "expect") if k in data}]
    else:
        raise _fail(where, "needs 'say' or 'steps'")
    steps = tuple(_step(f"{where}.steps[{i + 1}]", s, i + 1) for i, s in enumerate(raw_steps))
    if steps[0].action != "say":
        raise _fail(f"{where}.steps[1]", "the first step must 'say' something")
    tags = data.get("tags") or ()
    if not isinstance(tags, (list, tuple)):
        raise _fail(f"{where}.tags", "expected a list of words")
    if suite == "conversation":
        # Every conversation turn says what kind it is: compliance is reported per kind.
        steps = tuple(s if s.kind else _with_kind(s, "edit" if s.action == "say" else "") for s in steps)
    return Scenario(sid.strip(), suite, photo, steps, upscale, mode, tuple(map(str, tags)), source, split)


def _with_kind(step: Step, kind: str) -> Step:
    from dataclasses import replace

    return replace(step, kind=kind)


def load_scenario_file(path: str | Path) -> list[Scenario]:
    """Load and validate every scenario of one YAML file."""
    path = Path(path)
    where = path.name
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise _fail(where, f"cannot read the file ({exc})") from None
    if not isinstance(data, Mapping):
        raise _fail(where, "expected an object with 'scenarios'")
    unknown = set(data) - {"suite", "image", "scenarios", "description", "split"}
    if unknown:
        raise _fail(where, f"unknown field(s) {', '.join(sorted(unknown))}")
    suite = data.get("suite", "single")
    if suite not in SUITES:
        raise _fail(f"{where}.suite", f"expected one of {', '.join(SUITES)}, got {suite!r}")
    split = data.get("split", "")
    if suite == "conversation" and split not in SPLITS:
        raise _fail(f"{where}.split", f"a conversation file needs split: {' or '.join(SPLITS)}, got {split!r}")
    if suite != "conversation" and split:
        raise _fail(f"{where}.split", "only conversation files have a split")
    items = data.get("scenarios")
    if not isinstance(items, list) or not items:
        raise _fail(f"{where}.scenarios", "expected a non-empty list")
    out = [scenario_from_dict(s, suite=suite, image=data.get("image"), source=str(path),
                              where=f"{where}: scenarios[{i}]", split=split)
           for i, s in enumerate(items)]
    seen: set[str] = set()
    for s in out:
        if s.id in seen:
            raise _fail(where, f"scenario id {s.id!r} is used twice")
        seen.add(s.id)
    return out


def scenario_paths(spec: str | Path | None = None) -> list[Path]:
    """Scenario files for ``spec``: a file, a folder, a glob, or None (the shipped set)."""
    if spec is None:
        return sorted(SCENARIO_DIR.glob("*.yaml")) + conversation_paths()
    p = Path(spec)
    if p.is_dir():
        return sorted(p.glob("*.yaml"))
    if p.is_file():
        return [p]
    matches = sorted(Path(m) for m in glob.glob(str(spec)))
    if not matches:
        raise ScenarioError(f"scenarios: nothing matches {str(spec)!r}")
    return matches


def conversation_paths(split: str | None = None) -> list[Path]:
    """The shipped conversation files: every split (held-out ones first), or one."""
    splits = (split,) if split else ("unseen", "heldout", "tuning")
    return [p for sp in splits for p in sorted((CONVERSATION_DIR / sp).glob("*.yaml"))]


def load_scenarios(spec: str | Path | None = None) -> list[Scenario]:
    """Load every scenario named by ``spec`` (see :func:`scenario_paths`); ids must be unique."""
    out: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in scenario_paths(spec):
        for s in load_scenario_file(path):
            if s.id in seen:
                raise ScenarioError(f"{path.name}: scenario id {s.id!r} is also used in {seen[s.id]}")
            seen[s.id] = path.name
            out.append(s)
    return out


def smoke_subset(scenarios: Iterable[Scenario], size: int = 4) -> list[Scenario]:
    """A small, fixed subset for ``make test``: scenarios tagged ``smoke`` (else the first few)."""
    scenarios = list(scenarios)
    tagged = [s for s in scenarios if "smoke" in s.tags]
    return tagged or scenarios[:size]


def load_photo(name: str, upscale: float = 1.0):
    """The named photo (skimage.data or assets/eval) as uint8 RGB, optionally enlarged (Lanczos)."""
    import numpy as np
    import skimage.data

    if name not in PHOTOS:
        raise ScenarioError(f"image: expected one of {', '.join(PHOTOS)}, got {name!r}")
    if name in ASSET_PHOTOS:
        from PIL import Image

        with Image.open(ASSET_PHOTO_DIR / ASSET_PHOTOS[name]) as im:
            img = np.asarray(im.convert("RGB"))
    else:
        img = getattr(skimage.data, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    img = np.ascontiguousarray(img[..., :3]).astype(np.uint8)
    if upscale and upscale != 1.0:
        import cv2

        h, w = img.shape[:2]
        img = cv2.resize(img, (round(w * upscale), round(h * upscale)), interpolation=cv2.INTER_LANCZOS4)
    return img
