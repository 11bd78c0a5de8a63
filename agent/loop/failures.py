"""Typed failure kinds of a turn, each with its own retry budget and backoff (``failures:`` in the config).

A node that fails (see ``agent.loop.nodes.guarded``) names what went wrong as one of :data:`KINDS`; the
error handler retries that kind at most ``retries`` times, waiting ``backoff_s * 2**(attempt-1)``
seconds (at most ``max_backoff_s``) before going back to the planner, and then ends the turn with a
clear message. A judged candidate below the bar is the fifth kind (``quality_below_bar``): its
replans are the quality tiers' business (``quality.min_pass_score``), recorded the same way.

>>> classify(TimeoutError("read timed out"), "planner")
'model_timeout'

:func:`describe_failure` is the other half: the one line a person (or an MCP client) reads for an
exception nobody expected — a full disk, a database that is down, a broken skill file, memory
running out — while the cause goes to the server's log.

>>> describe_failure(OSError(28, "No space left on device"))
'the disk is full (No space left on device): nothing was saved; free some space and try again'
"""

from __future__ import annotations

from typing import Any, Mapping

from agent.config import AgentConfig, AgentConfigError, FailurePolicy, load_section

KINDS = (*FailurePolicy.kinds(), "quality_below_bar")
#: What a person reads for each kind.
LABELS = {"plan_invalid": "the plan was not valid", "render_error": "rendering failed",
          "model_timeout": "the model did not answer in time", "model_refused": "the model refused",
          "quality_below_bar": "the result was below the quality bar"}


def failure_policy(config: Any = None) -> FailurePolicy:
    """The ``failures:`` section of an AgentConfig, or a mapping of it checked the same way; defaults without either.

    Raises ValueError (AgentConfigError) naming the key for an unknown kind or a bad value.
    """
    if isinstance(config, AgentConfig):
        return config.failures
    if isinstance(config, Mapping):
        return load_section("failures", config)
    return FailurePolicy()


def backoff_seconds(policy: FailurePolicy, kind: str, attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1, 2, ...) of ``kind``: doubling, capped."""
    base = policy.budget(kind).backoff_s
    return min(policy.max_backoff_s, base * (2 ** max(0, attempt - 1))) if base > 0 else 0.0


def classify(exc: BaseException, node: str) -> str:
    """The failure kind of an exception raised in ``node`` ("planner", "executor", "quality")."""
    from agent.planning.base import PlanError

    text = str(exc).lower()
    name = type(exc).__name__.lower()
    if isinstance(exc, TimeoutError) or "timeout" in name or "timed out" in text or "deadline" in text:
        return "model_timeout"
    if "refus" in text:
        return "model_refused"
    if isinstance(exc, PlanError):
        return "plan_invalid"
    if node == "executor":
        return "render_error"
    if node == "planner":
        return "plan_invalid"
    return "render_error"


#: The longest one-line reason :func:`describe_failure` returns.
MAX_REASON_CHARS = 300


def one_line(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` on one line, credentials redacted, at most ``limit`` characters."""
    from agent.redact import redact

    text = " ".join(redact(str(text)).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _database_error(exc: BaseException) -> bool:
    import sqlite3

    if isinstance(exc, sqlite3.Error):
        return True
    module = type(exc).__module__.split(".")[0]
    return module in ("sqlalchemy", "psycopg", "psycopg_pool", "psycopg2")


def describe_failure(exc: BaseException) -> str:
    """One line for a person about an unexpected failure (the full cause belongs in the log).

    Known causes get a plain reason: a full disk, a file that cannot be written, the database being
    unreachable or unusable, memory running out, a broken skill file; anything else names its type.
    """
    import errno

    from profiles import ProfileError
    from skills import SkillError

    if isinstance(exc, MemoryError):
        return ("the server ran out of memory doing this (the photo or the request is too large for it); "
                "nothing was changed")
    if isinstance(exc, SkillError):
        return one_line(f"a skill file is broken: {exc}")
    if isinstance(exc, ProfileError):   # a profile, or a skill file the engine profile reads its looks from
        return one_line(f"a profile or skill file is broken: {exc}")
    if isinstance(exc, AgentConfigError):
        return one_line(f"the agent config is broken: {exc}")
    if _database_error(exc):
        text = str(getattr(exc, "orig", None) or exc).lower()
        if "not a database" in text or "malformed" in text or "corrupt" in text:
            return one_line(f"the session database cannot be read ({getattr(exc, 'orig', None) or exc}); "
                            "nothing was changed")
        if "disk is full" in text or "no space left" in text:
            return "the disk is full (the database could not write): nothing was saved; free some space and try again"
        if "locked" in text:
            return "the session database is busy (locked by another process); try again in a moment"
        first = str(getattr(exc, "orig", None) or exc).splitlines()[0] if str(exc) else type(exc).__name__
        return one_line(f"the database is not reachable right now ({first}); nothing was changed, "
                        "try again when it is back")
    if isinstance(exc, OSError):
        why = exc.strerror or str(exc) or type(exc).__name__
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return f"the disk is full ({why}): nothing was saved; free some space and try again"
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return one_line(f"a file could not be written or read ({why}); check the folder's permissions")
        return one_line(f"a file operation failed ({why})")
    return one_line(f"an unexpected error ({type(exc).__name__}) stopped this; nothing was changed and the "
                    "server's log has the details")


__all__ = ["KINDS", "LABELS", "backoff_seconds", "classify", "describe_failure", "failure_policy",
           "one_line"]
