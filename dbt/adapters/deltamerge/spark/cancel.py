"""Ctrl-C: the Spark operations of a dbt command interrupted, so that it ends within seconds.

On Ctrl-C dbt cancels every open connection, then waits for the threads running models
(``GraphRunnableTask._cancel_connections``); dbt-spark's session connection cancels nothing,
so dbt waited for each running merge to finish. Each thread that runs Spark operations for
this process tags them with the process's ``TAG`` (Spark's operation tags belong to a thread),
and a cancel interrupts the operations with that tag, on the embedded session and on Spark
Connect alike. A warm server's session is shared by the commands with the same settings: the
tag is this process's own, so another command's operations go on. A model whose Spark work is
interrupted fails before its commit (the commit runs no Spark): its table stays at its version.
"""

from __future__ import annotations

import os
import threading
import uuid
from typing import Any

TAG = f"dbt-deltamerge-{os.getpid()}-{uuid.uuid4().hex[:8]}"
_THREAD = threading.local()


def tag_thread(spark: Any) -> None:
    """Tag the operations this thread starts on ``spark`` with the process's ``TAG`` (once per thread)."""
    tagged: set[int] | None = getattr(_THREAD, "sessions", None)
    if tagged is None:
        tagged = _THREAD.sessions = set()
    if id(spark) not in tagged:
        spark.addTag(TAG)
        tagged.add(id(spark))


def interrupt(spark: Any) -> list[str]:
    """Interrupt this process's running operations on ``spark``; the ids of those interrupted."""
    try:
        return list(spark.interruptTag(TAG))
    except Exception:  # a session already gone has nothing left to interrupt
        return []
