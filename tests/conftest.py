"""Shared fixtures: a real photo, scripted planner/judge, and a Studio on a real SQLite file.

The scripted planner and judge implement the real interfaces
(``agent.planners.base.Planner``, ``agent.judges.base.Judge``) and are injected
through the builder — nothing is patched.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import pytest
from skimage import data as skdata

from agent.judges.base import Assessment
from agent.planners.base import Plan, SubGoal

#: Debian's Chromium, driven by Playwright (the Playwright browser download is not available).
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a server a test launches."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test of the run."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium package", pytrace=False)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


_STEP = re.compile(r"\b([a-z_]+)([+=-])(\d+)(?:@([a-z]+))?")
_TARGETS = {"sky": {"type": "sky"}, "top": {"type": "gradient", "start": [0.5, 0.0], "end": [0.5, 0.6]},
            "shadows": {"type": "luminance", "low": 0.0, "high": 0.35}, "selection": {"type": "selection"}}


def small_photo(name: str = "astronaut", long_side: int = 400) -> np.ndarray:
    """A real skimage.data photo as uint8 RGB, downscaled so tests stay fast."""
    img = getattr(skdata, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    h, w = img.shape[:2]
    s = long_side / max(h, w)
    return np.ascontiguousarray(cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA))


def plan_from_text(text: str) -> Plan:
    """'temperature+20 exposure-10 saturation=0 contrast+15@sky' -> a Plan; nothing recognised -> not understood."""
    goals = []
    for op, sign, number, where in _STEP.findall(text.lower()):
        value = int(number) * (-1 if sign == "-" else 1)
        goals.append(SubGoal(op=op, value=value, mode="set" if sign == "=" else "add",
                             target=_TARGETS.get(where) if where else None))
    if not goals:
        return Plan(sub_goals=[], reply="I don't know how to do that yet.", understood=False, source="scripted")
    return Plan(sub_goals=goals, reply="Planned: " + ", ".join(g.summary() for g in goals), source="scripted")


class ScriptedPlanner:
    """Plans from 'op+N' words in the message, or from ``script(request)``; records every request.

    ``script`` may return a Plan or raise (to exercise the error handler).
    """

    name = "scripted"

    def __init__(self, script: Callable | None = None):
        self.script = script
        self.requests = []

    def plan(self, request):
        self.requests.append(request)
        return self.script(request) if self.script else plan_from_text(request.message)


class ScriptedJudge:
    """Scores from ``scores`` (one per call; the last repeats) or ``score_fn(request)``."""

    name = "scripted"

    def __init__(self, scores=(0.9,), score_fn: Callable | None = None):
        self.scores = list(scores)
        self.score_fn = score_fn
        self.requests = []

    def assess(self, request):
        self.requests.append(request)
        if self.score_fn is not None:
            score = self.score_fn(request)
        else:
            score = self.scores[min(len(self.requests), len(self.scores)) - 1]
        return Assessment(score=score, assessment=f"scripted score {score:.2f}",
                          dimensions={"compliance": score}, diagnoses=["scripted"] if score < 0.6 else [],
                          source="scripted")


@pytest.fixture(scope="session")
def photo() -> np.ndarray:
    return small_photo("astronaut")


@pytest.fixture
def make_studio(tmp_path):
    """Factory: Studio(planner, judge, **config overrides) on tmp_path's SQLite file and sessions folder."""
    from agent.config import load_config
    from agent.service import Studio

    made = []

    def make(planner=None, judge=None, **overrides):
        config = load_config().with_overrides(**overrides) if overrides else load_config()
        studio = Studio(database_url=f"sqlite:///{tmp_path / 'atelier.db'}", sessions_dir=tmp_path / "sessions",
                        planner=planner or ScriptedPlanner(), judge=judge or ScriptedJudge(), config=config)
        made.append(studio)
        return studio

    yield make
    for studio in made:
        studio.close()
