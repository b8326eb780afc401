"""Progress a user sees on long Spark work: one dbt log line when an operation passes a minute.

A dbt command prints a model's START line, then nothing until it ends: a merge of a big table
on the warm server (or a cluster) said nothing for minutes, indistinguishable from a hang. Spark
Connect streams each operation's progress (stages, tasks done, bytes read) to its client; this
handler turns it into one line after ``FIRST_SECONDS`` and another every ``EVERY_SECONDS`` while
the operation runs (no progress bar: dbt's log is read in CI as well as on a terminal), naming
what the thread works on (``working_on``: the model or statement the error boundary names).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

FIRST_SECONDS = 30.0
EVERY_SECONDS = 60.0
_THREAD = threading.local()


@contextmanager
def working_on(subject: str) -> Iterator[None]:
    """Name what this thread's Spark operations are for, in the lines ``LongOperations`` logs."""
    before = getattr(_THREAD, "subject", None)
    _THREAD.subject = subject
    try:
        yield
    finally:
        _THREAD.subject = before


class LongOperations:
    """A Spark Connect progress handler (``SparkConnectClient.register_progress_handler``) that
    says how a long operation is doing (see the module's docstring)."""

    def __init__(self, say: Callable[[str], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._say = say
        self._clock = clock
        self._due: dict[str, tuple[float, float]] = {}  # operation -> (started, next line)
        self._lock = threading.Lock()

    def __call__(
        self, stages: Iterable[Any] | None, inflight_tasks: int, operation_id: str | None, done: bool
    ) -> None:
        if not operation_id:
            return
        now = self._clock()
        with self._lock:
            if done:
                self._due.pop(operation_id, None)
                return
            started, due = self._due.setdefault(operation_id, (now, now + FIRST_SECONDS))
            if now < due:
                return
            self._due[operation_id] = (started, now + EVERY_SECONDS)
        self._say(progress_line(getattr(_THREAD, "subject", None), now - started, list(stages or [])))


def progress_line(subject: str | None, seconds: float, stages: list[Any]) -> str:
    """One line about a running operation.

    >>> from types import SimpleNamespace as S
    >>> stage = S(num_tasks=40, num_completed_tasks=12, num_bytes_read=3 * 2**30)
    >>> progress_line("Model 'orders'", 95.2, [stage])
    "Model 'orders': Spark is still working (95 s): 12 of 40 tasks done, 3.0 GiB read"
    >>> progress_line(None, 31, [])
    'Spark is still working (31 s)'
    """
    head = f"{subject}: " if subject else ""
    tasks = sum(s.num_tasks for s in stages)
    if not tasks:
        return f"{head}Spark is still working ({seconds:.0f} s)"
    done = sum(s.num_completed_tasks for s in stages)
    read = sum(s.num_bytes_read for s in stages) / 2**30
    return (
        f"{head}Spark is still working ({seconds:.0f} s): {done} of {tasks} tasks done, {read:.1f} GiB read"
    )
