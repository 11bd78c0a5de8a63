"""Run one function over many items: in this process, on a process pool, or on Ray.

The one engine behind evaluation (``agent.eval``), trajectory synthesis
(``agent.runs.synthesize``) and folder batch work (``agent.runs.batch``). ``fn`` must be
a module-level function and items and results picklable (they cross process
boundaries). Results come back in the items' order; ``on_done(item, result)``
is called in this process as each one finishes (progress bars, writing results
as they come).

    map_jobs(render_one, jobs, workers=4)                          # a spawn process pool
    map_jobs(render_one, jobs, workers=4, ray_address="local")     # Ray on this machine
    map_jobs(render_one, jobs, ray_address="auto")                 # a running Ray cluster (or "host:port")
    map_jobs(render_one, jobs, workers=4, errors="return")         # one bad item never ends the run

``errors="raise"`` (the default): an exception in ``fn`` ends the run, as a
plain loop would. ``errors="return"``: that item's result is
``{"error": "<Type>: <message>"}``, a worker process that dies (out of
memory, a crash in native code) costs only the item it held, and the others
carry on.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any, Callable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[2]
#: What a Ray cluster's workers do not need of the repository.
RAY_EXCLUDES = [".venv", ".git", "sessions", "**/__pycache__"]
_DIED = "the worker process died on this item (out of memory or a crash)"


class ParallelError(RuntimeError):
    """The engine asked for cannot run (Ray not installed, bad address)."""


def default_workers() -> int:
    """One worker per CPU core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _guarded(fn: Callable[[Any], Any], item: Any) -> Any:
    try:
        return fn(item)
    except Exception as exc:  # noqa: BLE001 - one bad item is a result, never the end of the run
        return {"error": f"{type(exc).__name__}: {exc}"}


class _Guard:
    """``fn`` with its exceptions turned into error results (picklable for pool and Ray workers)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, item: Any) -> Any:
        return _guarded(self.fn, item)


def map_jobs(fn: Callable[[Any], Any], items: Sequence[Any], *, workers: int = 1, ray_address: str | None = None,
             on_done: Callable[[Any, Any], None] | None = None, order: Sequence[int] | None = None,
             errors: str = "raise") -> list:
    """``fn`` over ``items``: serial when ``workers`` <= 1, a spawn process pool of ``workers`` otherwise,
    or Ray tasks when ``ray_address`` is given ("local" starts a Ray instance on this machine with
    ``workers`` CPUs; "auto" or "host:port" joins a cluster and ships the code there).

    ``order``: the indices in the order to submit them (e.g. longest first); default as given.
    ``errors``: "raise" or "return" (see the module docstring).
    """
    if errors not in ("raise", "return"):
        raise ValueError(f"errors: expected 'raise' or 'return', got {errors!r}")
    items = list(items)
    order = list(order) if order is not None else list(range(len(items)))
    results: dict[int, Any] = {}
    call = _Guard(fn) if errors == "return" else fn

    def done(i: int, result: Any) -> None:
        results[i] = result
        if on_done:
            on_done(items[i], result)

    if ray_address:
        _run_on_ray(fn, items, order, ray_address, max(1, workers), done, guard=errors == "return")
    elif workers <= 1:
        for i in order:
            done(i, call(items[i]))
    elif errors == "return":
        _run_on_pool_guarded(call, items, order, workers, done)
    else:
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("spawn")   # no fork after threads: each worker starts clean
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(fn, items[i]): i for i in order}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
    return [results[i] for i in range(len(items))]


def _run_on_pool_guarded(call: _Guard, items: list, order: list, workers: int, done) -> None:
    """A pool that survives a dying worker: the item it held is found by running it alone."""
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    ctx = multiprocessing.get_context("spawn")
    left = [i for i in order]
    while left:
        broken = False
        with ProcessPoolExecutor(max_workers=min(workers, len(left)), mp_context=ctx) as pool:
            futures = {pool.submit(call, items[i]): i for i in left}
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    broken = True
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be pickled
                    result = {"error": f"{type(exc).__name__}: {exc}"}
                left.remove(i)
                done(i, result)
        if broken and left:
            i = left.pop(0)   # run the first unfinished item alone: it either finishes or is the culprit
            with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as solo:
                try:
                    result = solo.submit(call, items[i]).result()
                except BrokenProcessPool:
                    result = {"error": _DIED}
            done(i, result)


def _run_on_ray(fn, items, order, address: str, cpus: int, done, guard: bool = False) -> None:
    try:
        import ray
    except ImportError:
        raise ParallelError("Ray is not installed: python -m pip install 'ray>=2.9'") from None
    try:
        if address == "local":
            # A Ray instance on this machine; its workers import the repository from PYTHONPATH.
            ray.init(runtime_env={"env_vars": {"PYTHONPATH": str(REPO_ROOT)}}, include_dashboard=False,
                     ignore_reinit_error=True, log_to_driver=False, num_cpus=cpus)
        else:
            # A cluster: ship the code (not the venv, sessions or git history) to its workers.
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                     runtime_env={"working_dir": str(REPO_ROOT), "excludes": RAY_EXCLUDES})
    except ConnectionError as exc:
        raise ParallelError(f"no Ray cluster at {address!r} ({exc}); start one with `ray start --head` "
                            "or use local") from None
    try:
        if guard:
            task = ray.remote(num_cpus=1, max_retries=0)(_guarded)
            fn_ref = ray.put(fn)
            refs = {task.remote(fn_ref, items[i]): i for i in order}
        else:
            task = ray.remote(num_cpus=1)(fn)
            refs = {task.remote(items[i]): i for i in order}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                if not guard:
                    done(refs[ref], ray.get(ref))
                    continue
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker that died is this item's error
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    result = {"error": f"{_DIED} ({type(exc).__name__}: {first[:120]})"}
                done(refs[ref], result)
    finally:
        ray.shutdown()


__all__ = ["ParallelError", "RAY_EXCLUDES", "default_workers", "map_jobs"]
