"""A bounded load generator for a running studio: N people, K turns each, at the same time.

    python -m agent.loadtest --url http://127.0.0.1:7860/ --sessions 16 --turns 4
    python -m agent.loadtest --launch --sessions 64 --turns 2       # starts `python app.py` itself

Each simulated person opens a session through the studio's named API
(``gradio_client``: ``/start_session``) with a real photo and sends ``--turns``
messages (``/edit``), all people at once. It prints the p50 / p95 / max
latency of a turn, the errors (by message), the throughput, and the server's
resident memory (peak, sampled every 0.2 s) against ``replicas.memory_cap_mb``
of configs/agent_config.yaml. Exit status 1 when a turn failed or memory went
over the cap.

Safety: it only talks to loopback addresses unless ``--allow-remote`` is given
(it is a load generator: point it only at servers you run), and it is bounded
(at most 256 sessions and 50 turns each, a deadline per request). The server's
memory is read from /proc for the process listening on the URL's port (or
``--pid``), so that figure needs the server on this machine.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Sequence
from urllib.parse import urlparse

REPO_ROOT = Path(__file__).resolve().parents[2]
MAX_SESSIONS = 256
MAX_TURNS = 50
MESSAGES = ("make it warmer", "a bit brighter", "more contrast", "less saturation", "cooler please",
            "lift the shadows", "darken the sky", "more vibrance")


class LoadTestError(ValueError):
    """The load test cannot run as asked; the message says why."""


def check_target(url: str, allow_remote: bool) -> str:
    """The URL, if it is http(s) and loopback (or ``allow_remote``); LoadTestError otherwise."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise LoadTestError(f"--url: expected http://host:port/, got {url!r}")
    if not allow_remote:
        try:
            addresses = {info[4][0] for info in socket.getaddrinfo(parsed.hostname, parsed.port or 80)}
        except socket.gaierror as exc:
            raise LoadTestError(f"--url: cannot resolve {parsed.hostname!r} ({exc})") from None
        if not all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses):
            raise LoadTestError(f"--url: {parsed.hostname} is not a loopback address; a load test only "
                                "targets servers you run: add --allow-remote to point it elsewhere")
    return url if url.endswith("/") else url + "/"


# -- server memory ------------------------------------------------------------------------------

def listening_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` on this machine (Linux /proc), if visible."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(parts[9])
    if not inodes:
        return None
    wanted = {f"socket:[{i}]" for i in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) in wanted:
                    return int(proc.name)
        except OSError:
            continue
    return None


def rss_mb(pid: int) -> float | None:
    """Resident memory of ``pid`` in MiB (VmRSS), or None if it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class MemorySampler(threading.Thread):
    def __init__(self, pid: int | None, every: float = 0.2):
        super().__init__(daemon=True, name="rss-sampler")
        self.pid, self.every = pid, every
        self.samples: list[float] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while self.pid and not self._halt.is_set():
            value = rss_mb(self.pid)
            if value is not None:
                self.samples.append(value)
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=2)
        # one sample at the end too: a load shorter than the first tick (or stopped before this thread ran)
        # still has a peak to hold against the cap
        value = rss_mb(self.pid) if self.pid else None
        if value is not None:
            self.samples.append(value)


# -- the load ------------------------------------------------------------------------------------

def one_person(url: str, photo: str, turns: int, index: int, timeout_s: float, latencies: list, errors: Counter,
               lock: threading.Lock, start_gate: threading.Barrier) -> None:
    from gradio_client import Client, handle_file

    try:
        client = Client(url, verbose=False, httpx_kwargs={"timeout": timeout_s})
    except Exception as exc:  # noqa: BLE001 - counted and reported
        start_gate.wait()
        with lock:
            errors[f"connect: {type(exc).__name__}: {str(exc)[:80]}"] += 1
        return
    start_gate.wait()   # everyone starts together
    try:
        session = client.predict(handle_file(photo), "", "never", api_name="/start_session")
        token = session["resume_token"]
    except Exception as exc:  # noqa: BLE001
        with lock:
            errors[f"start_session: {str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__}"] += 1
        return
    for k in range(turns):
        message = MESSAGES[(index + k) % len(MESSAGES)]
        start = time.perf_counter()
        try:
            result = client.predict(token, message, api_name="/edit")
            took = time.perf_counter() - start
            with lock:
                latencies.append(took)
                if result.get("status") == "failed":
                    errors[f"turn failed: {result.get('reply', '')[:80]}"] += 1
        except Exception as exc:  # noqa: BLE001
            with lock:
                errors[f"edit: {str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__}"] += 1


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def run_load(url: str, sessions: int, turns: int, *, photo: str | None = None, pid: int | None = None,
             timeout_s: float = 300.0, cap_mb: float | None = None) -> dict:
    if not 1 <= sessions <= MAX_SESSIONS:
        raise LoadTestError(f"--sessions: 1..{MAX_SESSIONS}, got {sessions}")
    if not 1 <= turns <= MAX_TURNS:
        raise LoadTestError(f"--turns: 1..{MAX_TURNS}, got {turns}")
    if cap_mb is None:
        from agent.config import load_config
        cap_mb = float(load_config().memory_cap_mb)
    photo = photo or str(REPO_ROOT / "assets" / "coffee.jpg")
    if not Path(photo).is_file():
        raise LoadTestError(f"--photo: no such file {photo!r}")
    port = urlparse(url).port or (443 if url.startswith("https") else 80)
    pid = pid or listening_pid(port)
    sampler = MemorySampler(pid)
    before = rss_mb(pid) if pid else None
    latencies: list[float] = []
    errors: Counter = Counter()
    lock = threading.Lock()
    gate = threading.Barrier(sessions + 1)
    people = [threading.Thread(target=one_person, args=(url, photo, turns, i, timeout_s, latencies, errors, lock, gate),
                               daemon=True) for i in range(sessions)]
    for t in people:
        t.start()
    gate.wait()
    sampler.start()
    start = time.perf_counter()
    for t in people:
        t.join(timeout=timeout_s * (turns + 2))
    seconds = time.perf_counter() - start
    sampler.stop()
    peak = max(sampler.samples) if sampler.samples else None
    return {
        "url": url, "sessions": sessions, "turns_each": turns, "turns_done": len(latencies),
        "errors": sum(errors.values()), "error_kinds": dict(errors.most_common(5)),
        "p50_s": round(percentile(latencies, 50), 3), "p95_s": round(percentile(latencies, 95), 3),
        "max_s": round(max(latencies), 3) if latencies else None,
        "mean_s": round(statistics.fmean(latencies), 3) if latencies else None,
        "seconds": round(seconds, 1), "turns_per_second": round(len(latencies) / seconds, 2) if seconds else 0.0,
        "server_pid": pid, "server_rss_mb_before": round(before, 1) if before else None,
        "server_rss_mb_peak": round(peak, 1) if peak else None, "memory_cap_mb": cap_mb,
        "within_cap": (peak <= cap_mb) if peak else None,
    }


# -- launching the studio for a self-contained run ------------------------------------------------

def launch_app(port: int, sessions_dir: str) -> subprocess.Popen:
    env = {**os.environ, "ATELIER_SESSIONS_DIR": sessions_dir, "PYTHONPATH": str(REPO_ROOT)}
    for key in ("ATELIER_DATABASE_URL", "ATELIER_STORAGE_URL"):
        env.pop(key, None)
    proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "app.py"), "--host", "127.0.0.1", "--port", str(port)],
                            cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LoadTestError(f"the app did not start: {proc.stderr.read().decode()[-600:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.kill()
    raise LoadTestError("the app did not listen within 180 s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agent.loadtest", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="the studio, e.g. http://127.0.0.1:7860/")
    where.add_argument("--launch", action="store_true", help="start `python app.py` on a free port for the run")
    parser.add_argument("--sessions", type=int, default=16, help=f"people at once (1..{MAX_SESSIONS})")
    parser.add_argument("--turns", type=int, default=4, help=f"messages each (1..{MAX_TURNS})")
    parser.add_argument("--photo", help="the photo each person uploads (default assets/coffee.jpg)")
    parser.add_argument("--pid", type=int, help="the server's pid (default: the process listening on the port)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one request may take")
    parser.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --url")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    proc, tmp = None, None
    try:
        if args.launch:
            tmp = tempfile.TemporaryDirectory(prefix="atelier-load-")
            port = free_port()
            proc = launch_app(port, tmp.name)
            url = f"http://127.0.0.1:{port}/"
            args.pid = args.pid or proc.pid
        else:
            url = check_target(args.url, args.allow_remote)
        result = run_load(url, args.sessions, args.turns, photo=args.photo, pid=args.pid, timeout_s=args.timeout)
    except LoadTestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if tmp is not None:
            tmp.cleanup()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        mem = (f"server memory {result['server_rss_mb_before']} -> peak {result['server_rss_mb_peak']} MiB "
               f"(cap {result['memory_cap_mb']:g} MiB: {'within' if result['within_cap'] else 'OVER'})"
               if result["server_rss_mb_peak"] else "server memory: not visible (give --pid)")
        print(f"{result['sessions']} sessions x {result['turns_each']} turns: {result['turns_done']} turns in "
              f"{result['seconds']} s ({result['turns_per_second']} turns/s)")
        print(f"turn latency p50 {result['p50_s']} s, p95 {result['p95_s']} s, max {result['max_s']} s")
        print(f"errors: {result['errors']}" + (f" {result['error_kinds']}" if result["errors"] else ""))
        print(mem)
    bad = result["errors"] or result["within_cap"] is False
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
