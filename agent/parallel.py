"""Run one function over many items: in this process, on a process pool, or on Ray.

The one engine behind evaluation (``agent.eval``), trajectory synthesis
(``agent.synthesize``) and folder batch work. ``fn`` must be a module-level
function and items and results picklable (they cross process boundaries).
Results come back in the items' order; ``on_done(item, result)`` is called in
this process as each one finishes (progress bars, writing results as they come).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
#: What a Ray cluster's workers do not need of the repository.
RAY_EXCLUDES = [".venv", ".git", "sessions", "**/__pycache__"]


class ParallelError(RuntimeError):
    """The engine asked for cannot run (Ray not installed, bad address)."""


def map_jobs(fn: Callable[[Any], Any], items: Sequence[Any], *, workers: int = 1, ray_address: str | None = None,
             on_done: Callable[[Any, Any], None] | None = None, order: Sequence[int] | None = None) -> list:
    """``fn`` over ``items``: serial when ``workers`` <= 1, a spawn process pool of ``workers`` otherwise,
    or Ray tasks when ``ray_address`` is given ("local" starts a Ray instance on this machine with
    ``workers`` CPUs; "auto" or "host:port" joins a cluster and ships the code there).

    ``order``: the indices in the order to submit them (e.g. longest first); default as given.
    """
    items = list(items)
    order = list(order) if order is not None else list(range(len(items)))
    results: dict[int, Any] = {}

    def done(i: int, result: Any) -> None:
        results[i] = result
        if on_done:
            on_done(items[i], result)

    if ray_address:
        _run_on_ray(fn, items, order, ray_address, max(1, workers), done)
    elif workers <= 1:
        for i in order:
            done(i, fn(items[i]))
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        ctx = multiprocessing.get_context("spawn")   # no fork after threads: each worker starts clean
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = {pool.submit(fn, items[i]): i for i in order}
            for fut in as_completed(futures):
                done(futures[fut], fut.result())
    return [results[i] for i in range(len(items))]


def _run_on_ray(fn, items, order, address: str, cpus: int, done) -> None:
    try:
        import ray
    except ImportError:
        raise ParallelError("Ray is not installed: python -m pip install 'ray>=2.9'") from None
    if address == "local":
        # A Ray instance on this machine; its workers import the repository from PYTHONPATH.
        ray.init(runtime_env={"env_vars": {"PYTHONPATH": str(REPO_ROOT)}}, include_dashboard=False,
                 ignore_reinit_error=True, log_to_driver=False, num_cpus=cpus)
    else:
        # A cluster: ship the code (not the venv, sessions or git history) to its workers.
        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 runtime_env={"working_dir": str(REPO_ROOT), "excludes": RAY_EXCLUDES})
    try:
        task = ray.remote(num_cpus=1)(fn)
        refs = {task.remote(items[i]): i for i in order}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                done(refs[ref], ray.get(ref))
    finally:
        ray.shutdown()
