"""Ctrl-C: the Spark jobs of a dbt command interrupted, so that it ends within seconds.

On Ctrl-C dbt cancels every open connection, then waits for the threads running models
(``GraphRunnableTask._cancel_connections``); dbt-spark's session connection cancels nothing,
so dbt waited for each running merge to finish. Here a cancel interrupts this process's
operations that run Spark jobs, and only those:

- on the embedded session, which is this process's alone, it cancels the session's jobs
  (``interruptAll``: Spark cancels jobs, it does not interrupt the threads running them; a
  thread's tags would not do, as a classic session finds a tag's jobs only from a thread that
  added it);
- on Spark Connect, an interrupted operation's server thread is interrupted, and a thread
  interrupted inside the embedded Derby metastore loses its JDBC connection (the warm-up found
  this, ``spark/warmup.py``): so a cancel interrupts, by id, the operations whose Spark jobs
  the server reports progress of (``RunningJobs``), never a catalog statement (which has no job).
  A warm server's session is shared by the commands with the same settings; only this
  process's operations are interrupted.

A model whose Spark work is interrupted fails before its commit (the commit runs no Spark): its
table stays at its version.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any


class RunningJobs:
    """A Spark Connect progress handler keeping the ids of this client's operations whose Spark
    jobs are running (the server reports progress only for operations with jobs)."""

    def __init__(self) -> None:
        self.operations: set[str] = set()
        self._lock = threading.Lock()

    def __call__(
        self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool
    ) -> None:
        if not operation_id:
            return
        with self._lock:
            if done:
                self.operations.discard(operation_id)
            else:
                self.operations.add(operation_id)

    def running(self) -> list[str]:
        with self._lock:
            return sorted(self.operations)


def interrupt(spark: Any, jobs: RunningJobs | None) -> list[str]:
    """Interrupt this process's running Spark jobs on ``spark`` (``jobs``: a Connect session's
    tracker; None: an embedded session); the ids of the operations interrupted."""
    interrupted: list[str] = []
    try:
        if jobs is None:
            return list(spark.interruptAll())
        for operation in jobs.running():
            interrupted += spark.interruptOperation(operation)
    except Exception:  # a session already gone has nothing left to interrupt
        pass
    return interrupted
