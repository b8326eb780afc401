"""Delta Lake on Spark, the project's oracle: Delta's own jars in a Spark of their own process.

pyspark hosts one Spark per process, and ours must stay free of Delta's extension (the product's
default session); so Delta runs in a child Python process with its own local Spark, started with
``io.delta:delta-spark_2.13`` (Ivy resolves it from Maven Central once, then from its cache,
``~/.ivy2.5.2``), Delta's SQL extension and catalog. The test process sends it SQL and gets rows
back (pickled over a local socket): Delta's ``MERGE INTO`` / ``UPDATE`` / ``DELETE`` on its copy of
a table, its reads of ours, ``DESCRIBE HISTORY``, errors with Delta's error class. Its session has
one function of ours, ``deltamerge_pause(folder)``, which holds a statement mid-transaction.

Where Maven Central cannot be reached the tests that need Delta skip, saying so; with
``DELTAMERGE_REQUIRE_DELTA=1`` (``.ci/run``) they fail instead: CI must run the tier.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

# Delta 4.4 is built for Spark 4.2 (the pyspark setup.py pins). The PyPI package ``delta-spark``
# is 4.4.1, whose jar Maven Central does not serve: the jar's newest 4.4 release is pinned here.
DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"
REQUIRED = os.environ.get("DELTAMERGE_REQUIRE_DELTA") == "1"


@dataclass(eq=False)  # (not frozen: raising sets its __traceback__)
class DeltaError(Exception):
    """A statement Delta refused: its exception class, error class (``None`` if it has none), text."""

    kind: str
    error_class: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.kind} [{self.error_class}] {self.message}"


class DeltaUnavailable(RuntimeError):
    """Delta on Spark could not start here (its jars could not be resolved, or the JVM failed)."""


class DeltaSpark:
    """The handle on the child process: ``sql`` runs a statement in Delta's Spark."""

    def __init__(self, workdir: str) -> None:
        os.makedirs(workdir, exist_ok=True)
        key = secrets.token_bytes(16)
        listener = Listener(("127.0.0.1", 0), authkey=key)
        host, port = listener.address
        self.log_path = os.path.join(workdir, "delta-spark.log")
        with open(self.log_path, "wb") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "tests.delta_spark", host, str(port), key.hex(), workdir],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            )
        try:
            self._conn: Connection = _accept(listener, self._process)
            reply = self._conn.recv()
        except (EOFError, OSError) as error:
            self._process.kill()
            raise DeltaUnavailable(f"Delta on Spark did not start: {_tail(self.log_path)}") from error
        finally:
            listener.close()
        if reply[0] != "ready":
            self._process.kill()
            raise DeltaUnavailable(f"Delta on Spark did not start: {reply[1]}")
        self.version: str = reply[1]

    def sql(self, text: str) -> list[dict[str, Any]]:
        """The statement's result rows (``Row.asDict(recursive=True)``); raises ``DeltaError``."""
        return self.query(text)[1]

    def query(self, text: str) -> tuple[str, list[dict[str, Any]]]:
        """The statement's result schema (Spark's DDL string) and rows; raises ``DeltaError``."""
        self._conn.send(("sql", text))
        reply = self._conn.recv()
        if reply[0] == "error":
            raise DeltaError(*reply[1:])
        return reply[1], reply[2]

    def error(self, text: str) -> DeltaError:
        """The error Delta raises for ``text`` (which must fail)."""
        try:
            rows = self.sql(text)
        except DeltaError as error:
            return error
        raise AssertionError(f"Delta ran {text!r} without error: {rows[:3]}")

    def history(self, path: str) -> list[dict[str, Any]]:
        """``DESCRIBE HISTORY``, oldest version first."""
        return sorted(self.sql(f"DESCRIBE HISTORY delta.`{path}`"), key=lambda h: h["version"])

    def metrics(self, path: str, version: int | None = None) -> dict[str, str]:
        """Delta's ``operationMetrics`` of one version (the latest if ``None``)."""
        history = self.history(path)
        entry = history[-1] if version is None else next(h for h in history if h["version"] == version)
        return dict(entry["operationMetrics"] or {})

    def close(self) -> None:
        try:
            self._conn.send(("stop",))
            self._process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self._process.kill()
        finally:
            self._conn.close()


def _accept(listener: Listener, process: subprocess.Popen) -> Connection:
    """The child's connection, or ``EOFError`` when it exits first (Ivy's resolution failed)."""
    import select

    sock = listener._listener._socket  # type: ignore[attr-defined]  # (to wait with a timeout)
    while True:
        ready, _, _ = select.select([sock], [], [], 1.0)
        if ready:
            return listener.accept()
        if process.poll() is not None:
            raise EOFError(f"exited with {process.returncode}")


def _tail(path: str, lines: int = 12) -> str:
    with open(path, errors="replace") as f:
        text = [line.rstrip() for line in f if "WARN" not in line and line.strip()]
    return " | ".join(text[-lines:])


# ---- the child process ---------------------------------------------------------------------------


def _session(workdir: str) -> Any:
    from pyspark.sql import SparkSession

    from dbt.adapters.deltamerge.spark.packages import resolving

    builder = (
        SparkSession.builder.master("local[2]")
        .appName("delta-oracle")
        .config("spark.jars.packages", DELTA_PACKAGE)
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.catalogImplementation", "in-memory")
        .config("spark.sql.warehouse.dir", os.path.join(workdir, "warehouse"))
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1500m")
        # Delta keeps every table's log it opened (10000 by default): the oracle's long runs open
        # thousands of tables and ran out of memory after ~150 cases; a few at a time here.
        .config("spark.databricks.delta.delta.log.cacheSize", "16")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Delta replays a table's log in 50 tasks by default: tiny tables here, one task each.
        .config("spark.databricks.delta.snapshotPartitions", "1")
        # VACUUM ... DRY RUN of files just removed, as ours is asked.
        .config("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    )
    with resolving({"spark.jars.packages": DELTA_PACKAGE}):  # one Ivy resolution at a time
        return builder.getOrCreate()


def _pause(folder: str) -> bool:
    """A SQL function of Delta's session that holds a statement inside its transaction (its
    snapshot read, its job running): it creates ``<folder>/delta.reached`` and returns once
    ``<folder>/delta.go`` exists (each row; once released, at once). The concurrent-writers tests
    commit ours meanwhile, so Delta's own conflict checks decide."""
    import time

    open(os.path.join(folder, "delta.reached"), "a").close()
    deadline = time.monotonic() + 600
    while not os.path.exists(os.path.join(folder, "delta.go")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _serve(host: str, port: int, key: bytes, workdir: str) -> None:
    conn = Client((host, port), authkey=key)
    try:
        spark = _session(workdir)
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as error:  # (told to the parent, which skips or fails)
        conn.send(("failed", f"{type(error).__name__}: {error}"))
        return
    spark.udf.register("deltamerge_pause", _pause, "boolean")
    conn.send(("ready", spark.version))
    while True:
        request = conn.recv()
        if request[0] == "stop":
            spark.stop()
            return
        try:
            frame = spark.sql(request[1])
            rows = [row.asDict(recursive=True) for row in frame.collect()]
        except Exception as error:  # (every refusal goes back with its class)
            error_class, message = _described(error)
            conn.send(("error", type(error).__name__, error_class, message))
            continue
        conn.send(("rows", frame.schema.simpleString(), rows))


def _described(error: Exception) -> tuple[str | None, str]:
    """An error's class and message; a Java exception that reached Python raw (Delta's constraint
    checks fail in the writing task) by its first line, ``<java class>: [ERROR_CLASS] text``."""
    import re

    error_class = getattr(error, "getCondition", lambda: None)()
    text = str(error).split("\nJVM stacktrace:")[0]
    if error_class is None:
        lines = [line.strip() for line in text.splitlines() if "Exception: " in line]
        text = lines[-1] if lines else text
        found = re.search(r"\[([A-Z][A-Z0-9_]+(?:\.[A-Z0-9_]+)?)\]", text)
        error_class = found.group(1) if found else None
    return error_class, text


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), bytes.fromhex(sys.argv[3]), sys.argv[4])
