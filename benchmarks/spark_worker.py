"""The Spark side of the benchmark: one warm local session for ours, the rewrite and the floor.

Runs as its own process (``python -m benchmarks.spark_worker``) so the harness can
measure its whole process tree (this interpreter and its JVM). It reads one JSON
command per line on stdin and answers one JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks import data
from benchmarks.workloads import SOURCE, TARGET, workloads
from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, read_files, write_dataframe
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.spark.connect import connect_session
from dbt.adapters.deltamerge.spark.embedded import start_session

CDF = {"delta.enableChangeDataFeed": "true"}


class Worker:
    """The commands the harness sends, each timed around exactly the work it names."""

    def __init__(self, warehouse: str, rows: int, connect_url: str | None = None) -> None:
        started = time.monotonic()
        if connect_url:
            self.spark: SparkSession = connect_session(connect_url, {})
        else:
            self.spark = start_session(warehouse, {})
        self.spark.range(1).collect()
        self.startup_seconds = time.monotonic() - started
        self.by_name = {w.name: w for w in workloads(rows)}
        self.rows = rows

    def generate(self, *, root: str, layouts: list[int], only: list[str]) -> dict[str, Any]:
        """Write the base tables (each layout, feed off and on) and the sources of the workloads run."""
        started = time.monotonic()
        chosen = [w for w in self.by_name.values() if not only or w.name in only]
        feeds = (False, True) if any(w.change_data_feed for w in chosen) else (False,)
        for files in layouts:
            for cdf in feeds:
                path = os.path.join(root, "tables", _table_name(files, cdf))
                if not os.path.exists(path):
                    rows = data.base_rows(self.spark, rows=self.rows, files=files)
                    request = WriteRequest(
                        TableLocation.of(path), "create_or_replace", properties=CDF if cdf else {}
                    )
                    write_dataframe(self.spark, rows, request)
        for workload in chosen:
            path = os.path.join(root, "sources", workload.name)
            if not os.path.exists(path):
                source = workload.source(self.spark, self.rows)
                source.coalesce(1).write.parquet(path)
        return {"seconds": time.monotonic() - started}

    def ours(self, *, workload: str, table: str, source: str) -> dict[str, Any]:
        """``delta_merge`` through the engine: what a model's run does after dbt's own steps."""
        w = self.by_name[workload]
        started = time.monotonic()
        snapshot = load_snapshot(TableLocation.of(table))
        assert snapshot is not None
        spec = MergeSpec.from_config(f"bench_{w.name}", w.config)
        result = merge_into(self.spark, self.spark.read.parquet(source), snapshot, spec)
        return {"seconds": time.monotonic() - started, "metrics": result.metrics, "version": result.version}

    def rewrite(self, *, workload: str, table: str, source: str) -> dict[str, Any]:
        """The same result by rewriting the whole table (a full outer join, then overwrite)."""
        w = self.by_name[workload]
        started = time.monotonic()
        snapshot = load_snapshot(TableLocation.of(table))
        assert snapshot is not None
        read_files(self.spark, snapshot, snapshot.files).createOrReplaceTempView(TARGET)
        self.spark.read.parquet(source).createOrReplaceTempView(SOURCE)
        rows = self.spark.sql(w.rewrite_sql(TARGET, SOURCE))
        properties = dict(snapshot.metadata.configuration)
        result = write_dataframe(
            self.spark,
            rows,
            WriteRequest(TableLocation.of(table), "create_or_replace", properties=properties),
        )
        return {"seconds": time.monotonic() - started, "metrics": result.metrics, "version": result.version}

    def append(self, *, workload: str, table: str, source: str) -> dict[str, Any]:
        """A plain append of the source rows (the bar for an insert-only merge)."""
        started = time.monotonic()
        result = write_dataframe(
            self.spark, self.spark.read.parquet(source), WriteRequest(TableLocation.of(table), "append")
        )
        return {"seconds": time.monotonic() - started, "metrics": result.metrics, "version": result.version}

    def floor(self, *, table: str, source: str, touched: list[str], scratch: str) -> dict[str, Any]:
        """The least a merge can do: copy the files ours touched, write the source rows, and scan
        the key column of every file whose key range overlaps the source's."""
        snapshot = load_snapshot(TableLocation.of(table))
        assert snapshot is not None
        by_path = {f.path: f for f in snapshot.files}
        started = time.monotonic()
        incoming = self.spark.read.parquet(source)
        low, high = incoming.agg(F.min("id"), F.max("id")).collect()[0]
        read = [f for f in snapshot.files if f.min_values.get("id") <= high and f.max_values.get("id") >= low]
        frames: list[DataFrame] = [read_files(self.spark, snapshot, [by_path[p] for p in touched])]
        if set(incoming.columns) == set(snapshot.schema.fieldNames()):
            frames.append(incoming.select(*snapshot.schema.fieldNames()))
        out = frames[0].unionByName(frames[1]) if len(frames) > 1 else frames[0]
        out.write.mode("overwrite").parquet(os.path.join(scratch, "floor_copy"))
        read_files(self.spark, snapshot, read).select("id").agg(F.count("id")).collect()
        seconds = time.monotonic() - started
        shutil.rmtree(scratch, ignore_errors=True)
        return {"seconds": seconds, "files_read": len(read)}

    def noop_merge(self, *, root: str, runs: int) -> dict[str, Any]:
        """The engine's insert-only merge of a 4-row table's own rows (no change, no commit), repeated.

        The median of the second half of the runs: the session's JIT and caches are warm by
        then, as they are in a warm server after a few models.
        """
        path = os.path.join(root, "noop_table")
        shutil.rmtree(path, ignore_errors=True)
        rows = lambda: self.spark.sql("select id, concat('v', cast(id as string)) as v from range(4)")  # noqa: E731
        write_dataframe(self.spark, rows(), WriteRequest(TableLocation.of(path), "create_or_replace"))
        spec = MergeSpec.from_config("bench_noop", {"unique_key": "id", "when_matched": []})
        seconds = []
        for _ in range(runs):
            started = time.monotonic()
            snapshot = load_snapshot(TableLocation.of(path))
            assert snapshot is not None
            result = merge_into(self.spark, rows(), snapshot, spec)
            seconds.append(time.monotonic() - started)
            if result.version is not None:
                raise RuntimeError(f"the no-op merge committed version {result.version}")
        shutil.rmtree(path, ignore_errors=True)
        counted = max(1, runs // 2)
        return {"seconds": seconds, "counted": counted, "median": statistics.median(seconds[-counted:])}

    def checksum(self, *, table: str, files: list[str]) -> dict[str, Any]:
        """Row count and an order-independent checksum of the given files (listed by delta-rs)."""
        snapshot = load_snapshot(TableLocation.of(table))
        assert snapshot is not None
        columns = [F.col(c) for c in snapshot.schema.fieldNames()]
        frame = self.spark.read.schema(snapshot.schema).parquet(*files) if files else None
        if frame is None:
            return {"count": 0, "checksum": "0"}
        row = (
            frame.select(F.xxhash64(*columns).cast("decimal(38,0)").alias("h"))
            .agg(F.count("h").alias("n"), F.sum("h").alias("s"))
            .collect()[0]
        )
        return {"count": int(row["n"]), "checksum": str(row["s"])}


def _table_name(files: int, cdf: bool) -> str:
    return f"files{files}{'_cdf' if cdf else ''}"


def serve(worker: Worker) -> None:
    """Answer commands until stdin closes."""
    out = sys.stdout
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        try:
            answer = getattr(worker, op)(**command)
        except Exception as error:  # the harness reports it and stops
            answer = {"error": f"{type(error).__name__}: {error}"}
        out.write(json.dumps(answer, default=str) + "\n")
        out.flush()


def main() -> None:
    rows = int(sys.argv[1])
    connect_url = sys.argv[2] if len(sys.argv) > 2 else None  # a Spark Connect server instead of a JVM here
    warehouse = tempfile.mkdtemp(prefix="deltamerge-bench-warehouse-")
    # Spark's and py4j's chatter must not reach the harness's answer channel.
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = answers
    worker = Worker(warehouse, rows, connect_url)
    answers.write(json.dumps({"startup_seconds": worker.startup_seconds, "pid": os.getpid()}) + "\n")
    answers.flush()
    serve(worker)


if __name__ == "__main__":
    main()
