"""``python -m agent.loadtest`` against a launched studio on 127.0.0.1 (gradio_client, real HTTP)."""

from __future__ import annotations

import os

import pytest

from agent.runs.loadtest import LoadTestError, check_target, listening_pid, run_load
from conftest import free_port


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    from agent.service import Studio
    from app import create_app

    sessions = tmp_path_factory.mktemp("load-sessions")
    studio = Studio(database_url=f"sqlite:///{sessions / 'atelier.db'}", sessions_dir=sessions)
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}/", port, studio
    demo.close()
    studio.close()


def test_a_small_load_reports_latency_errors_and_memory(app_url):
    url, port, studio = app_url
    assert listening_pid(port) == os.getpid()               # the server is this test process
    result = run_load(url, sessions=3, turns=2, cap_mb=100_000)
    assert result["turns_done"] == 6 and result["errors"] == 0, result["error_kinds"]
    assert 0 < result["p50_s"] <= result["p95_s"] <= result["max_s"]
    assert result["server_pid"] == os.getpid() and result["server_rss_mb_peak"] > 50
    assert result["within_cap"] is True
    assert len(studio.list_sessions()) == 3                 # three people, three sessions
    assert all(s.turns == 2 for s in studio.list_sessions())


def test_memory_over_the_cap_is_reported(app_url):
    url, _, _ = app_url
    result = run_load(url, sessions=1, turns=1, cap_mb=1)
    assert result["within_cap"] is False


def test_it_stays_on_loopback_and_within_bounds(app_url):
    url, _, _ = app_url
    assert check_target("http://127.0.0.1:7860", False) == "http://127.0.0.1:7860/"
    assert check_target("http://localhost:7860/", False) == "http://localhost:7860/"
    with pytest.raises(LoadTestError, match="not a loopback address.*--allow-remote"):
        check_target("http://10.20.30.40:7860/", False)
    assert check_target("http://10.20.30.40:7860/", True) == "http://10.20.30.40:7860/"
    with pytest.raises(LoadTestError, match="expected http"):
        check_target("ftp://127.0.0.1/", False)
    with pytest.raises(LoadTestError, match="--sessions: 1..256"):
        run_load(url, sessions=1000, turns=1)
    with pytest.raises(LoadTestError, match="--turns: 1..50"):
        run_load(url, sessions=1, turns=0)
