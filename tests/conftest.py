"""Shared fixtures: a real photo, scripted planner/judge, and a Studio on a real SQLite file.

The scripted planner and judge implement the real interfaces
(``agent.planning.base.Planner``, ``agent.judging.base.Judge``) and are injected
through the builder — nothing is patched.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Callable

import cv2
import numpy as np
import pytest
from skimage import data as skdata

from agent.judging.base import Assessment
from agent.planning.base import Plan, SubGoal

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


def copy_shipped_schemas(dest: Path) -> Path:
    """A private copy of ``schemas/`` (for ``Studio(schemas_root=...)``): schemas a test makes never land in the repo."""
    shipped = Path(__file__).resolve().parents[1] / "schemas"
    for p in shipped.rglob("*.yaml"):
        target = dest / p.relative_to(shipped)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)
    return dest


def small_photo(name: str = "astronaut", long_side: int = 400) -> np.ndarray:
    """A real skimage.data photo as uint8 RGB, downscaled so tests stay fast."""
    img = getattr(skdata, name)()
    if img.ndim == 2:
        img = np.stack([img] * 3, axis=-1)
    h, w = img.shape[:2]
    s = long_side / max(h, w)
    return np.ascontiguousarray(cv2.resize(img, (round(w * s), round(h * s)), interpolation=cv2.INTER_AREA))


def assert_goes_back(studio, photo: np.ndarray, kept: list[str], later: list[str], said: str) -> None:
    """After ``kept`` then ``later`` are said on a new session of ``photo``, ``said`` rolls back to the version
    ``kept`` left (the person's words for going back, checked by where the head lands)."""
    sid = studio.start_session(photo).id
    for message in kept:
        studio.send_message(sid, message)
    mark = studio.head(sid).id
    for message in later:
        studio.send_message(sid, message)
    result = studio.send_message(sid, said)
    assert result.status == "rolled_back" and studio.head(sid).id == mark, result.reply


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


# -- databases: SQLite files, and a throwaway PostgreSQL cluster on 127.0.0.1 ----------------

BACKENDS = ("sqlite", "postgresql")


class PostgresCluster:
    """A PostgreSQL server of its own: initdb into a temp folder, pg_ctl start on a free port.

    Runs as the ``postgres`` user (``runuser``) when the tests run as root, since
    PostgreSQL refuses to run as root; the folder is owned by that user. Trust
    authentication on 127.0.0.1 only; stopped and deleted at the end.
    """

    def __init__(self):
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
        on_path = shutil.which("initdb")
        if not found and not on_path:
            pytest.fail("PostgreSQL is not installed (initdb not found): apt-get install postgresql "
                        "(.ci/run does this)", pytrace=False)
        self.bin = Path(found[-1] if found else on_path).parent
        self.root = Path(tempfile.mkdtemp(prefix="atelier-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")

    def _run(self, *args: str, **kw) -> subprocess.CompletedProcess:
        cmd = [str(self.bin / args[0]), *args[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, **kw)

    def start(self) -> "PostgresCluster":
        done = self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                         "--locale=C", "--no-sync")
        if done.returncode:
            pytest.fail(f"initdb failed: {done.stderr[-800:]}", pytrace=False)
        self.start_server()
        return self

    def start_server(self) -> None:
        """Start the server on the cluster's data and port (again, after :meth:`stop_server`)."""
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} "
                   "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300")
        done = self._run("pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"), "-o", options,
                         "-w", "-t", "60", "start")
        if done.returncode:
            log = (self.root / "server.log").read_text() if (self.root / "server.log").exists() else ""
            self.stop()
            pytest.fail(f"PostgreSQL did not start: {done.stderr[-400:]} {log[-800:]}", pytrace=False)

    def stop_server(self) -> None:
        """Stop the server as a crash or an operator's restart would (connections cut); the data stays."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        if self.data.exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_cluster():
    cluster = PostgresCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def postgres_url(postgres_cluster):
    """A fresh, empty PostgreSQL database for one test (dropped afterwards)."""
    name = postgres_cluster.create_database()
    yield postgres_cluster.url(name)
    postgres_cluster.drop_database(name)


def backend_url(backend: str, request, tmp_path: Path) -> str:
    if backend == "postgresql":
        return request.getfixturevalue("postgres_url")
    return f"sqlite:///{tmp_path / 'atelier.db'}"


@pytest.fixture
def database_url(tmp_path) -> str:
    """The database a test's Studio uses: a SQLite file (modules that test both backends override this)."""
    return f"sqlite:///{tmp_path / 'atelier.db'}"


@pytest.fixture(params=BACKENDS)
def any_database_url(request, tmp_path) -> str:
    """Each backend in turn: a SQLite file, then a fresh database on the test PostgreSQL cluster."""
    return backend_url(request.param, request, tmp_path)


@pytest.fixture
def make_studio(tmp_path, database_url):
    """Factory: Studio(planner, judge, **config overrides) on ``database_url`` and tmp_path's sessions folder."""
    from agent.config import load_config
    from agent.service import Studio

    made = []

    def make(planner=None, judge=None, **overrides):
        config = load_config().with_overrides(**overrides) if overrides else load_config()
        studio = Studio(database_url=database_url, sessions_dir=tmp_path / "sessions",
                        planner=planner or ScriptedPlanner(), judge=judge or ScriptedJudge(), config=config)
        made.append(studio)
        return studio

    yield make
    for studio in made:
        studio.close()


@pytest.fixture(scope="module")
def judge():
    """The built-in judge (agent.judging.embedded), one per test module."""
    from agent.judging.embedded import EmbeddedJudge

    return EmbeddedJudge()


@pytest.fixture(scope="module")
def planner():
    """The built-in planner (agent.planning.embedded), one per test module (a module may define its own)."""
    from agent.planning.embedded import EmbeddedPlanner

    return EmbeddedPlanner()


@pytest.fixture(scope="module")
def router():
    """The message router on the engine profile, one per test module."""
    from agent.conversation.router import Router

    return Router()


@pytest.fixture
def studio(make_studio):
    """A Studio with the embedded planner and judge that keeps every version (a module may define its own)."""
    from agent.judging.embedded import EmbeddedJudge
    from agent.planning.embedded import EmbeddedPlanner

    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="never")


@pytest.fixture
def reviewing(make_studio):
    """The same Studio with every version waiting for the person's review."""
    from agent.judging.embedded import EmbeddedJudge
    from agent.planning.embedded import EmbeddedPlanner

    return make_studio(EmbeddedPlanner(), EmbeddedJudge(), review_mode="always")


# -- generation: a tiny inpainting pipeline built in code (torch is a dev requirement) ---------------------
@pytest.fixture(scope="module")
def torch_one_thread():
    """Two cores shared by many test runs: one torch thread is several times faster here."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A randomly initialised inpainting pipeline, built in code (no downloads)."""
    from pipeline.generate.tiny import tiny_inpaint_pipeline

    return tiny_inpaint_pipeline(tmp_path_factory.mktemp("tiny"))
