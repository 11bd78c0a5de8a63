"""Run one function over many items: in this process, on a process pool, or on Ray.

Batch work (``agent.batch``), trajectory synthesis (``agent.synthesize``) and
evaluation share this runner:

    results = map_jobs(render_one, jobs, workers=4)                 # a spawn process pool
    results = map_jobs(render_one, jobs, workers=4, ray="local")    # Ray on this machine
    results = map_jobs(render_one, jobs, ray="auto")                # a running Ray cluster (or an address)

``fn`` must be a module-level function (it is pickled to the workers) that
takes one item and returns a small, picklable result. Results come back in
the items' order; ``on_done(item, result)`` is called in this process as each
one finishes (progress bars, incremental reports). An exception inside
``fn`` (or a worker process that dies) never ends the run: that item's result
is ``{"error": "<Type>: <message>"}`` and the others carry on.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path
from typing import Any, Callable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]

#: What ``ray=`` accepts besides an address ("host:port" or "ray://host:port").
RAY_MODES = ("local", "auto")


class ParallelError(RuntimeError):
    """The runner itself cannot start (Ray missing, no cluster at the address); the message says why."""


def _guarded(fn: Callable[[Any], Any], item: Any) -> Any:
    try:
        return fn(item)
    except Exception as exc:  # noqa: BLE001 - one bad item is a result, never the end of the run
        return {"error": f"{type(exc).__name__}: {exc}"}


class _Guard:
    """``fn`` with exceptions turned into error results (picklable for pool and Ray workers)."""

    def __init__(self, fn: Callable[[Any], Any]):
        self.fn = fn

    def __call__(self, item: Any) -> Any:
        return _guarded(self.fn, item)


def default_workers() -> int:
    """One worker per CPU core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def map_jobs(fn: Callable[[Any], Any], items: Sequence[Any], *, workers: int = 1, ray: str | None = None,
             on_done: Callable[[Any, Any], None] | None = None) -> list[Any]:
    """``fn`` over ``items``; see the module docstring. ``workers`` <= 1 without Ray runs here, in order."""
    items = list(items)
    results: list[Any] = [None] * len(items)
    guarded = _Guard(fn)

    def done(i: int, result: Any) -> None:
        results[i] = result
        if on_done is not None:
            on_done(items[i], result)

    if ray:
        _on_ray(guarded, items, workers, ray, done)
    elif workers <= 1 or len(items) <= 1:
        for i, item in enumerate(items):
            done(i, guarded(item))
    else:
        _on_pool(guarded, items, workers, done)
    return results


def _on_pool(fn: _Guard, items: list, workers: int, done: Callable[[int, Any], None]) -> None:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    # spawn: workers start clean (no copied locks or threads from this process)
    context = multiprocessing.get_context("spawn")
    left = dict(enumerate(items))
    while left:
        with ProcessPoolExecutor(max_workers=min(workers, len(left)), mp_context=context) as pool:
            futures = {pool.submit(fn, item): i for i, item in left.items()}
            broken = False
            for fut in as_completed(futures):
                i = futures[fut]
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    broken = True
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. an unpicklable result
                    result = {"error": f"{type(exc).__name__}: {exc}"}
                left.pop(i, None)
                done(i, result)
        if broken and left:
            # a worker died (out of memory, a crash in native code): the item it held is reported,
            # the rest are retried on a fresh pool, one at a time so the culprit is found
            i = min(left)
            done(i, _run_alone(fn, left.pop(i), context))


def _run_alone(fn: _Guard, item: Any, context) -> Any:
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        try:
            return pool.submit(fn, item).result()
        except BrokenProcessPool:
            return {"error": "the worker process died on this item (out of memory or a crash)"}


def _on_ray(fn: _Guard, items: list, workers: int, address: str, done: Callable[[int, Any], None]) -> None:
    try:
        import ray
    except ImportError:
        raise ParallelError("--ray needs the optional Ray package (pip install 'ray>=2.9')") from None
    started_here = not ray.is_initialized()
    if started_here:
        try:
            if address == "local":   # a Ray instance of our own on this machine, stopped at the end
                ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False,
                         runtime_env={"env_vars": {"PYTHONPATH": str(REPO_ROOT)}})
            else:                    # "auto" (a running cluster) or its address; our code travels along
                ray.init(address=address, log_to_driver=False,
                         runtime_env={"working_dir": str(REPO_ROOT),
                                      "excludes": [".venv", ".git", "sessions", "**/__pycache__", "*.db"]})
        except ConnectionError as exc:
            raise ParallelError(f"no Ray cluster at {address!r} ({exc}); start one with `ray start --head` "
                                "or use --ray local") from None
    try:
        task = ray.remote(num_cpus=1, max_retries=1)(_guarded)
        fn_ref = ray.put(fn.fn)
        refs = {task.remote(fn_ref, item): i for i, item in enumerate(items)}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                try:
                    result = ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker that died is this item's error
                    result = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
                done(refs[ref], result)
    finally:
        if started_here:
            ray.shutdown()


__all__ = ["ParallelError", "RAY_MODES", "default_workers", "map_jobs"]
