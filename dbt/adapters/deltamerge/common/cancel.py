"""The threads dbt cancelled (Ctrl-C, ``--fail-fast``): none of them starts a commit afterwards.

dbt cancels the connections of the threads running models, then waits for those threads. The
adapter interrupts their Spark jobs (``spark/cancel.py``), but a model past its last job, or
between two, would go on to commit once its thread runs again: a Ctrl-C must not leave a
table one version further than the run reported. So the adapter marks each cancelled thread
here, and the commit path (``delta/txn/commit.py``) refuses to start a commit on one. A commit
already under way completes (it is atomic; its version is reported).

Threads are held weakly: one that ended is forgotten, and a new dbt invocation's threads are
new objects.
"""

from __future__ import annotations

import threading
import weakref

from dbt.adapters.deltamerge.common.errors import EngineError

_CANCELLED: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
_LOCK = threading.Lock()


class Cancelled(EngineError):
    """The thread's work was cancelled before its commit."""


def cancel(thread: threading.Thread) -> None:
    """Mark ``thread``: it starts no commit from now on."""
    with _LOCK:
        _CANCELLED.add(thread)


def cancelled(thread: threading.Thread | None = None) -> bool:
    """Whether ``thread`` (this one by default) was cancelled."""
    with _LOCK:
        return (thread or threading.current_thread()) in _CANCELLED


def refuse_if_cancelled(table: str, read_version: int) -> None:
    """Raise before a commit to ``table`` (as the message names it) on a cancelled thread: its table
    stays as it was."""
    if cancelled():
        stays = f"stays at version {read_version}" if read_version >= 0 else "was not created"
        raise Cancelled(f"Cancelled (Ctrl-C or --fail-fast) before its commit: {table} {stays}.")
