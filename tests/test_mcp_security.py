"""The MCP server as an attacker or an unlucky operator meets it, through the SDK's real client.

- Allowed roots (stdio): the file tools read and write only inside the roots the client declares
  (plus ``ATELIER_MCP_ROOTS``; with neither, the server's working folder). Paths are resolved first:
  ``..`` and symlinks lead nowhere else. Atelier's own files (the sessions folder, the database) stay
  out of reach even inside a root. ``open_photo`` refuses a FIFO (without blocking), a device, an
  oversized file; ``export`` never replaces a file unless ``overwrite`` is true. Every refusal is
  ``ok: false`` with a reason that names the rule, and nothing changes.
- A token off loopback (HTTP): no start without ``ATELIER_MCP_TOKEN``; 401 without or with a wrong
  one; the real client with the token works.
- Failures (HTTP): a broken skill file, a full disk, memory running out, a database that is not a
  database: one line to the client, the cause in the server's log, and the server keeps serving.
"""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from PIL import Image

from pipeline.imageio import load_image, save_image
from test_mcp import REPO, _env, _wait_for_port, roots_of, run_async, stop
from tests.conftest import free_port, small_photo


async def call(client: Client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    data = result.structured_content
    assert isinstance(data, dict) and data["tool"] == tool and result.is_error == (not data["ok"]), result
    if not data["ok"]:
        assert data["errors"] and all("\n" not in e for e in data["errors"])   # one line each
    return data


def refused(result: dict, *words: str) -> str:
    assert result["ok"] is False, result
    text = result["errors"][0]
    assert text.startswith("path:") and all(w in text for w in words), text
    return text


@pytest.fixture()
def layout(tmp_path):
    """work/ (the client's root, Atelier's sessions folder inside it), outside/, and traps in work/."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    save_image(small_photo("astronaut", 200), work / "photo.png")
    save_image(small_photo("coffee", 200), outside / "secret.png")
    os.mkfifo(work / "pipe.jpg")
    (work / "link-out.png").symlink_to(outside / "secret.png")
    (work / "link-db").symlink_to(work / "sessions" / "atelier.db")
    jpeg = io.BytesIO()
    Image.fromarray(small_photo("rocket", 200)).save(jpeg, "JPEG")
    (work / "padded.jpg").write_bytes(jpeg.getvalue() + b"\0" * (3 * 1024 * 1024))   # a 3 MB "photo"
    return work, outside


def test_file_tools_stay_inside_the_client_roots(layout):
    work, outside = layout
    secret = (outside / "secret.png").read_bytes()
    env = _env(work / "sessions", ATELIER_MAX_UPLOAD="1mb")
    params = StdioServerParameters(command=sys.executable, args=["-m", "agent.mcp"], env=env, cwd=str(REPO))

    async def main():
        # the client declares its work folder, and /dev (a client may declare anything: devices stay refused)
        async with Client(params, read_timeout_seconds=120, list_roots_callback=roots_of(work, Path("/dev"))) as c:
            opened = await call(c, "open_photo", path=str(work / "photo.png"))
            assert opened["ok"], opened
            sid = opened["data"]["session_id"]
            refused(await call(c, "open_photo", path=str(outside / "secret.png")), "outside the allowed roots",
                    str(work.resolve()))
            refused(await call(c, "open_photo", path=str(work / ".." / "outside" / "secret.png")), "outside")
            refused(await call(c, "open_photo", path=str(work / "link-out.png")), "outside")   # symlink resolved
            originals = [p for p in (work / "sessions" / sid).rglob("*") if p.is_file()]
            assert originals
            for own in [*originals, work / "sessions" / "atelier.db", work / "link-db"]:
                refused(await call(c, "open_photo", path=str(own)), "Atelier's own files")
            with anyio.fail_after(30):    # a FIFO with no writer must not block the server
                refused(await call(c, "open_photo", path=str(work / "pipe.jpg")), "named pipe")
            refused(await call(c, "open_photo", path="/dev/zero"), "character device")
            refused(await call(c, "open_photo", path=str(work / "padded.jpg")), "larger than 1.0 MB",
                    "ATELIER_MAX_UPLOAD")
            refused(await call(c, "open_photo", path=""), "expected a file path")

            first = await call(c, "export", session_id=sid, path=str(work / "out.png"), format="png", long_side=64)
            assert first["ok"], first
            written = (work / "out.png").read_bytes()
            refused(await call(c, "export", session_id=sid, path=str(work / "out.png"), format="png", long_side=96),
                    "already exists", "overwrite")
            assert (work / "out.png").read_bytes() == written               # not replaced
            again = await call(c, "export", session_id=sid, path=str(work / "out.png"), format="png", long_side=96,
                               overwrite=True)
            assert again["ok"] and max(load_image((work / "out.png").read_bytes()).pixels.shape[:2]) == 96
            into = await call(c, "export", session_id=sid, path=str(work))   # a folder: the file goes inside
            assert into["ok"] and Path(into["data"]["path"]).parent == work.resolve()

            refused(await call(c, "export", session_id=sid, path=str(outside / "x.jpg")), "outside")
            refused(await call(c, "export", session_id=sid, path=str(work / "link-out.png"), overwrite=True),
                    "outside")
            for own in (work / "sessions" / "atelier.db", work / "link-db", work / "sessions" / sid):
                refused(await call(c, "export", session_id=sid, path=str(own), overwrite=True), "Atelier's own files")
            refused(await call(c, "export", session_id=sid, path=str(work / "pipe.jpg"), overwrite=True),
                    "named pipe")
            wrong = await call(c, "export", session_id=sid, path=str(work / "y.jpg"), overwrite="maybe")
            assert not wrong["ok"] and "overwrite" in wrong["errors"][0] and not (work / "y.jpg").exists()

            history = await call(c, "history", session_id=sid)   # the database is intact and in use
            assert history["ok"] and len(history["data"]["versions"]) == 1
            return sid

    run_async(main)
    assert (outside / "secret.png").read_bytes() == secret and sorted(p.name for p in outside.iterdir()) == ["secret.png"]
    assert not [p for p in work.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]   # no temporary files left


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_without_roots_the_working_folder_is_the_root_and_client_roots_can_be_ignored(tmp_path, mode):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    save_image(small_photo("astronaut", 160), here / "a.png")
    save_image(small_photo("coffee", 160), there / "b.png")
    env = _env(tmp_path / "sessions")
    plain = StdioServerParameters(command=sys.executable, args=["-m", "agent.mcp"], env=env, cwd=str(here))
    operator = StdioServerParameters(command=sys.executable, args=["-m", "agent.mcp"], cwd=str(REPO),
                                     env=dict(env, ATELIER_MCP_ROOTS=str(here), ATELIER_MCP_CLIENT_ROOTS="ignore"))

    async def main():
        async with Client(plain, read_timeout_seconds=120, mode=mode) as c:   # no roots declared, no env
            assert (await call(c, "open_photo", path=str(here / "a.png")))["ok"]
            refused(await call(c, "open_photo", path=str(there / "b.png")), "outside", str(here.resolve()))
        async with Client(operator, read_timeout_seconds=120, mode=mode, list_roots_callback=roots_of(there)) as c:
            refused(await call(c, "open_photo", path=str(there / "b.png")), "outside")   # the client's root: ignored
            assert (await call(c, "open_photo", path=str(here / "a.png")))["ok"]

    run_async(main)


def _serve(args: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "wb") as fh:
        return subprocess.Popen([sys.executable, "-m", "agent.mcp", "--http", *args], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=fh)


def test_off_loopback_the_http_server_needs_a_bearer_token(tmp_path):
    photos = tmp_path / "photos"
    photos.mkdir()
    save_image(small_photo("astronaut", 160), photos / "a.png")
    env = _env(tmp_path / "sessions", ATELIER_MCP_ROOTS=str(photos))
    port = free_port()

    for token, why in (("", "ATELIER_MCP_TOKEN"), ("short", "too short")):
        proc = _serve(["--host", "0.0.0.0", "--port", str(port)], dict(env, ATELIER_MCP_TOKEN=token),
                      tmp_path / "refused.log")
        assert proc.wait(timeout=60) == 2
        assert why in (tmp_path / "refused.log").read_text()

    token = "t0ken-" + "x" * 24
    proc = _serve(["--host", "0.0.0.0", "--port", str(port)], dict(env, ATELIER_MCP_TOKEN=token), tmp_path / "mcp.log")
    try:
        _wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        hello = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
        for headers in ({}, {"Authorization": "Bearer wrong-token-wrong-token"}, {"Authorization": token}):
            answer = httpx.post(url, json=hello, headers={"Accept": "application/json, text/event-stream", **headers})
            assert answer.status_code == 401 and answer.headers["www-authenticate"].startswith("Bearer")
            assert token not in answer.text

        async def main():
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120) as http:
                async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as c:
                    opened = await call(c, "open_photo", path=str(photos / "a.png"))
                    assert opened["ok"], opened
                    return opened["data"]["session_id"]

        assert run_async(main)
    finally:
        stop(proc)
    log = (tmp_path / "mcp.log").read_text()
    assert "refused an MCP request" in log and token not in log


@pytest.mark.parametrize("variable, value", [("ATELIER_MCP_CLIENT_ROOTS", "maybe"), ("ATELIER_MAX_UPLOAD", "lots")])
def test_a_malformed_setting_stops_the_start_and_is_named(tmp_path, variable, value):
    done = subprocess.run([sys.executable, "-m", "agent.mcp"], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path / "sessions", **{variable: value}), stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and variable in done.stderr and repr(value) in done.stderr


def _vm_size(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmSize")


def _fill(folder: Path) -> Path:
    filler = folder / "filler"
    with open(filler, "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 16))
                fh.flush()
        except OSError:
            pass
    return filler


@pytest.fixture()
def small_disk(tmp_path):
    """A 24 MB tmpfs of our own (root only: mount is refused otherwise, and the test says so)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mount)], capture_output=True)
    if done.returncode:
        pytest.skip(f"cannot mount a small tmpfs here to fill a disk: {done.stderr.decode()[-200:]}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_failures_answer_one_line_and_the_cause_is_logged(tmp_path, small_disk):
    photos, skills = tmp_path / "photos", tmp_path / "skills"
    photos.mkdir()
    skills.mkdir()
    save_image(small_photo("astronaut", 200), photos / "a.png")
    flat = io.BytesIO()
    Image.new("RGB", (7000, 7000), (120, 130, 140)).save(flat, "PNG")   # 49 MP: under the pixel cap, tiny on disk
    (photos / "huge.png").write_bytes(flat.getvalue())
    (skills / "broken.yaml").write_text("name: broken\nkind: look\ndescription: [unclosed\n")
    (tmp_path / "db").mkdir()
    env = _env(small_disk / "sessions", ATELIER_MCP_ROOTS=str(photos), ATELIER_SKILLS_DIR=str(skills),
               ATELIER_DATABASE_URL=f"sqlite:///{tmp_path / 'db' / 'atelier.db'}")
    port = free_port()
    log_file = tmp_path / "mcp.log"
    proc = _serve(["--port", str(port)], env, log_file)
    try:
        _wait_for_port(port, proc)

        async def main(step):
            async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=120) as c:
                return await step(c)

        async def skill_and_disk(c):
            listed = await call(c, "list_skills")
            assert not listed["ok"] and "broken.yaml" in listed["errors"][0] and "is broken" in listed["errors"][0]
            (skills / "broken.yaml").unlink()                       # the person fixes it: no restart needed
            assert (await call(c, "list_skills"))["ok"]
            filler = _fill(small_disk)
            full = await call(c, "open_photo", path=str(photos / "a.png"))
            assert not full["ok"] and "disk is full" in full["errors"][0], full
            filler.unlink()
            opened = await call(c, "open_photo", path=str(photos / "a.png"))
            assert opened["ok"], opened
            return opened["data"]["session_id"]

        sid = run_async(lambda: main(skill_and_disk))
        limit = _vm_size(proc.pid) + 150 * 1024 * 1024     # room for small work, not for 49 MP of pixels
        resource.prlimit(proc.pid, resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))

        async def memory(c):
            big = await call(c, "open_photo", path=str(photos / "huge.png"))
            resource.prlimit(proc.pid, resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            assert not big["ok"] and "out of memory" in big["errors"][0], big
            still = await call(c, "history", session_id=sid)       # and the server still serves
            return still["ok"]

        assert run_async(lambda: main(memory))
    finally:
        stop(proc)
    log = log_file.read_text()
    assert "broken.yaml" in log and "No space left on device" in log and "MemoryError" in log


def test_a_database_that_is_not_a_database_is_named_in_one_line(tmp_path):
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "atelier.db").write_bytes(b"this is not a database, " * 200)
    params = StdioServerParameters(command=sys.executable, args=["-m", "agent.mcp"], env=_env(tmp_path / "sessions"),
                                   cwd=str(REPO), )

    async def main():
        async with Client(params, read_timeout_seconds=120) as c:
            first = await call(c, "history", session_id="anything")
            second = await call(c, "list_skills")
            return first, second

    first, second = run_async(main)
    for answer in (first, second):
        assert not answer["ok"] and "session database cannot be read" in answer["errors"][0], answer
