"""Counts a dbt process's Spark Connect round trips (``benchmarks.project``'s accounting).

Loaded by Python at start when this folder is on ``PYTHONPATH`` and ``DELTAMERGE_ROUND_TRIPS``
names a file: each call of the Spark Connect client that reaches the server (an execution, an
analysis, a configuration read) is appended there as a tab-separated line: the request's kind,
its wall milliseconds, and the innermost frame of this package (or dbt-spark's) that made it.
Measurement only: the package never loads it.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

_PATH = os.environ.get("DELTAMERGE_ROUND_TRIPS")


def _caller() -> str:
    frames = [
        f
        for f in traceback.extract_stack()[:-3]
        if "/dbt/adapters/deltamerge/" in f.filename or "/dbt/adapters/spark/" in f.filename
    ]
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{frame.filename.split('/dbt/adapters/')[-1]}:{frame.name}"


def _install(path: str) -> None:
    from pyspark.sql.connect.client import core

    lock = threading.Lock()
    out = open(path, "a")  # noqa: SIM115 (open for the process's life)

    def record(kind: str, started: float) -> None:
        line = f"{kind}\t{(time.perf_counter() - started) * 1000:.1f}\t{_caller()}\n"
        with lock:
            out.write(line)
            out.flush()

    def plain(name: str, kind: str) -> None:
        original: Callable[..., Any] = getattr(core.SparkConnectClient, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(self, *args, **kwargs)
            finally:
                record(kind, started)

        setattr(core.SparkConnectClient, name, wrapped)

    def streamed(name: str, kind: str) -> None:
        original: Callable[..., Iterator[Any]] = getattr(core.SparkConnectClient, name)

        def wrapped(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            started = time.perf_counter()
            try:
                yield from original(self, *args, **kwargs)
            finally:
                record(kind, started)

        setattr(core.SparkConnectClient, name, wrapped)

    plain("_analyze", "analyze")
    plain("config", "config")
    plain("_execute", "execute")
    streamed("_execute_and_fetch_as_iterator", "execute")


if _PATH:
    _install(_PATH)
