"""Ctrl-C: the Spark jobs of a dbt command interrupted, so that it ends within seconds.

On Ctrl-C (and on ``--fail-fast``) dbt cancels the connections of the threads running models,
then waits for those threads (``GraphRunnableTask._cancel_connections``); dbt-spark's session
connection cancelled nothing, so dbt waited for each running merge to finish. Here a cancel
marks the connection's thread as cancelled (``common/cancel.py``): every Spark job that thread
runs from then on, not only the one running now, is interrupted (a model between two Spark
actions at the moment of the cancel is interrupted at its next one), and it starts no commit.
A commit already under way (it runs no Spark) completes; a model stopped before fails with its
table at its version.

- Spark Connect: the operations of a cancelled thread are interrupted by id once the server
  reports their jobs' progress (``RunningJobs``, a progress handler, which pyspark calls in the
  thread that runs the operation). An interrupted operation's server thread is interrupted, and
  a thread interrupted inside the embedded Derby metastore loses its JDBC connection (the
  warm-up found this, ``spark/warmup.py``): catalog statements, which run no job, are never
  interrupted. A warm server's session is shared by the commands with the same settings; only
  the cancelled threads' operations are interrupted.
- The embedded session, this process's alone: its jobs are cancelled (``interruptAll``) at
  once and then every half second while a cancelled thread lives (a classic session's tags do
  not do: it finds a tag's jobs only from a thread that added it, measured). dbt runs nothing
  else until those threads end (``pool.join``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from dbt.adapters.deltamerge.common.cancel import cancel, cancelled

# How often the embedded session's jobs are cancelled again while a cancelled thread runs.
RECANCEL_SECONDS = 0.5


class RunningJobs:
    """A Spark Connect session's progress handler: which thread runs each operation with Spark
    jobs; it interrupts those of a cancelled thread."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._threads: dict[str, threading.Thread] = {}
        self._interrupted: set[str] = set()
        self._lock = threading.Lock()

    def __call__(
        self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool
    ) -> None:
        if not operation_id:
            return
        thread = threading.current_thread()
        with self._lock:
            if done:
                self._threads.pop(operation_id, None)
                self._interrupted.discard(operation_id)
                return
            self._threads[operation_id] = thread
        if cancelled(thread):
            self._interrupt([operation_id])

    def cancel(self, thread: threading.Thread) -> list[str]:
        """Interrupt ``thread``'s running operation and every later one; the ids interrupted now."""
        with self._lock:
            operations = [op for op, runner in self._threads.items() if runner is thread]
        return self._interrupt(operations)

    def _interrupt(self, operations: list[str]) -> list[str]:
        with self._lock:
            operations = [op for op in operations if op not in self._interrupted]
            self._interrupted.update(operations)
        interrupted: list[str] = []
        for operation in operations:
            with suppress(Exception):  # a session already gone has nothing left to interrupt
                interrupted += self._spark.interruptOperation(operation)
        return interrupted


def interrupt(spark: Any, jobs: RunningJobs | None, thread: threading.Thread | None) -> None:
    """Interrupt the Spark jobs ``thread`` runs on ``spark``, now and until it ends (``jobs``: a
    Connect session's tracker; None: the embedded session, whose every job is cancelled)."""
    if thread is not None:
        cancel(thread)  # it starts no commit either (common/cancel.py)
    if jobs is not None:
        if thread is not None:
            jobs.cancel(thread)
        return
    _interrupt_all(spark)
    if thread is not None and thread.is_alive():
        recancel = threading.Thread(target=_recancel, args=(spark, thread), name="deltamerge-cancel")
        recancel.daemon = True
        recancel.start()


def _recancel(spark: Any, thread: threading.Thread) -> None:
    while not _stopped(thread):
        _interrupt_all(spark)


def _stopped(thread: threading.Thread) -> bool:
    thread.join(RECANCEL_SECONDS)
    return not thread.is_alive()


def _interrupt_all(spark: Any) -> None:
    with suppress(Exception):  # a session already gone has nothing left to interrupt
        spark.interruptAll()
