"""The studio serves an A2A agent card (A2A 1.0) at /.well-known/agent-card.json (and the old agent.json)
naming its skills and endpoints.

Its URLs come from ``ATELIER_PUBLIC_URL`` or the bound address, never from the request's Host header.
"""

from __future__ import annotations

import json
import urllib.request

import httpx

import pytest

from tests.conftest import free_port


@pytest.fixture(scope="module")
def studio_url(tmp_path_factory):
    from agent.service import Studio
    from app import create_app

    sessions = tmp_path_factory.mktemp("sessions")
    studio = Studio(sessions_dir=sessions)
    demo, options = create_app(studio)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **options)
    yield f"http://127.0.0.1:{port}"
    demo.close()
    studio.close()


def test_the_agent_card_names_skills_and_endpoints(studio_url, monkeypatch):
    monkeypatch.setenv("ATELIER_MCP_URL", "http://127.0.0.1:9999/mcp")
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        with urllib.request.urlopen(f"{studio_url}{path}", timeout=30) as response:
            assert response.status == 200 and response.headers["content-type"].startswith("application/json")
            card = json.loads(response.read())
        assert card["name"] == "Atelier" and card["supportedInterfaces"][0]["url"] == f"{studio_url}/a2a"
        assert card["url"] == f"{studio_url}/a2a"        # the 0.3 key older readers look for
    ids = [s["id"] for s in card["skills"]]
    assert ids[0] == "edit_photo" and {"skill.film", "skill.clean_portrait", "skill.portrait_film"} <= set(ids)
    portrait = next(s for s in card["skills"] if s["id"] == "skill.clean_portrait")
    assert "needs_face" in portrait["tags"] and "use the clean portrait skill" in portrait["examples"]
    mcp = card["capabilities"]["extensions"][0]["params"]
    assert mcp["url"] == "http://127.0.0.1:9999/mcp" and {"open_photo", "edit", "export"} <= set(mcp["tools"])
    # the studio itself still answers next to the card
    with urllib.request.urlopen(card["provider"]["url"], timeout=30) as page:
        assert page.status == 200 and b"<html" in page.read(2000).lower()


def test_the_card_never_takes_its_urls_from_the_host_header(studio_url, monkeypatch):
    monkeypatch.delenv("ATELIER_PUBLIC_URL", raising=False)
    forged = httpx.get(f"{studio_url}/.well-known/agent-card.json", headers={"Host": "evil.example:666"}, timeout=30)
    card = forged.json()
    assert "evil.example" not in forged.text
    assert card["supportedInterfaces"][0]["url"] == f"{studio_url}/a2a"   # the bound address

    monkeypatch.setenv("ATELIER_PUBLIC_URL", "https://atelier.example.org")
    behind_proxy = httpx.get(f"{studio_url}/.well-known/agent-card.json", headers={"Host": "evil.example"},
                             timeout=30)
    card = behind_proxy.json()
    assert card["supportedInterfaces"][0]["url"] == "https://atelier.example.org/a2a"
    assert card["provider"]["url"] == "https://atelier.example.org/" and "evil.example" not in behind_proxy.text


def test_a_malformed_public_url_is_refused_at_start(monkeypatch):
    from agent.interfaces.card import card_routes

    monkeypatch.setenv("ATELIER_PUBLIC_URL", "atelier.example.org/studio?x=1")
    with pytest.raises(ValueError, match="ATELIER_PUBLIC_URL"):
        card_routes()
