"""PostgreSQL restarts under a running Atelier: the next call after it is back works, nothing is lost.

A throwaway PostgreSQL cluster of its own (the one the other tests share is left alone) is stopped
and started again under a Studio, as an operator's restart or a crash would do. While it is down a
call fails with a clear error (the MCP tools say the database is unreachable, in one line); once it
is back the next call works without restarting Atelier, and a turn that was waiting for review is
still waiting and can be approved.
"""

from __future__ import annotations

import pytest

from agent.interfaces.mcp import AtelierTools
from agent.service import Studio
from conftest import PostgresCluster, ScriptedJudge, ScriptedPlanner


@pytest.fixture
def cluster():
    c = PostgresCluster().start()
    yield c
    c.stop()


def test_after_postgresql_restarts_the_next_call_works_and_a_pending_review_survives(cluster, tmp_path, photo):
    url = cluster.url(cluster.create_database())
    studio = Studio(database_url=url, sessions_dir=tmp_path / "sessions", planner=ScriptedPlanner(),
                    judge=ScriptedJudge([0.7]))
    tools = AtelierTools(studio)
    try:
        info = studio.start_session(photo, review_mode="always")
        pending = studio.send_message(info.id, "temperature+20")
        assert pending.status == "awaiting_review"

        cluster.stop_server()
        down = tools.history(info.id)
        assert down["ok"] is False and len(down["errors"]) == 1
        assert "database" in down["errors"][0] and "\n" not in down["errors"][0]

        cluster.start_server()
        # no restart of Atelier: the next call finds new connections by itself
        assert [v["turn"] for v in tools.history(info.id)["data"]["versions"]] == [0, 1]
        waiting = studio.pending_review(info.id)
        assert waiting is not None and waiting.asset_id == pending.asset_id      # the checkpoint survived
        approved = studio.review(info.id, "approve")
        assert approved.status == "approved" and studio.head(info.id).id == pending.asset_id
        again = studio.send_message(info.id, "exposure+10")
        assert again.status == "awaiting_review"
    finally:
        studio.close()
