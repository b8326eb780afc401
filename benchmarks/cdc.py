"""``python -m benchmarks.cdc``: CDC apply against a plain ``delta_merge`` of the same net changes.

A 10M-row table (the benchmark's 12 columns, keys ``0, 2, 4, ...``, one key range per file) is
loaded once by CDC apply itself (so its hidden state holds every key). Each run gets a fresh
copy and applies 100k events touching 1% of the keys (a clustered range: 90k keys, 10k of
them with two events, one event in ten a delete) in two ways, alternating, on one warm
session: CDC apply (SCD 1, the events themselves) and the engine's merge of the net changes a
user would have to compute first (each key's latest event; delete, update or insert). Reported:
medians, their ratio (target <= 1.5x) and the files each rewrote (must be equal).

Writes ``benchmarks/cdc_results.json`` and the "CDC apply" section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
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
from benchmarks.connect import replace_section
from benchmarks.measure import fresh_copy
from dbt.adapters.deltamerge.cdc.apply import apply_changes
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.connections import start_session
from dbt.adapters.deltamerge.delta.snapshot import load_snapshot
from dbt.adapters.deltamerge.delta.write import WriteRequest
from dbt.adapters.deltamerge.merge.clauses import MergeSpec
from dbt.adapters.deltamerge.merge.executor import merge_into

SECTION_START, SECTION_END = "<!-- cdc:start -->", "<!-- cdc:end -->"
CDC = {
    "unique_key": "id",
    "sequence_by": "seq",
    "apply_as_deletes": "op = 'D'",
    "except_column_list": ["op", "seq"],
}
NET = {
    "unique_key": "id",
    "when_matched": [
        {"condition": "DBT_INTERNAL_SOURCE.op = 'D'", "action": "delete"},
        {"action": "update", "set": "*"},
    ],
    "when_not_matched": [{"condition": "DBT_INTERNAL_SOURCE.op != 'D'", "action": "insert", "values": "*"}],
}


def events(spark: SparkSession, *, rows: int, count: int) -> DataFrame:
    """``count`` events over a clustered 0.9% of the keys: every tenth a delete, 10% of keys twice."""
    keys = int(count * 0.9)
    start = int(rows * 0.37)
    frame = spark.range(0, count).select(
        (F.lit(2 * start) + F.pmod(F.col("id"), F.lit(keys)) * 2).alias(data.KEY),
        F.col("id").alias("seq"),
        F.when(F.col("id") % 10 == 0, F.lit("D")).otherwise(F.lit("U")).alias("op"),
    )
    values = data.rows_for_keys(frame.select(data.KEY).distinct(), version=1)
    return frame.join(values, data.KEY)


def net_changes(events_df: DataFrame) -> DataFrame:
    """Each key's latest event: what a plain merge needs."""
    latest = events_df.groupBy(data.KEY).agg(F.max("seq").alias("seq"))
    return events_df.join(latest, [data.KEY, "seq"]).drop("seq")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cdc", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "deltamerge-bench", "cdc"))
    parser.add_argument("--out", default=".")
    args = parser.parse_args(argv)
    root = os.path.abspath(args.workdir)
    shutil.rmtree(root, ignore_errors=True)
    spark = start_session(os.path.join(root, "warehouse"), {})
    base = os.path.join(root, "base")
    started = time.monotonic()
    _load(spark, base, rows=args.rows, files=args.files)
    load_seconds = time.monotonic() - started
    batch = os.path.join(root, "events")
    events(spark, rows=args.rows, count=args.events).write.parquet(batch)
    seconds: dict[str, list[float]] = {"cdc": [], "merge": []}
    removed: dict[str, list[int]] = {"cdc": [], "merge": []}
    for round_ in range(args.runs + 1):  # round 0 warms up
        for kind in ("cdc", "merge"):
            copy = fresh_copy(base, os.path.join(root, "runs", kind))
            took, metrics = _apply(spark, kind, copy, spark.read.parquet(batch))
            if round_:
                seconds[kind].append(took)
                removed[kind].append(int(metrics["numTargetFilesRemoved"]))
    median = {k: statistics.median(v) for k, v in seconds.items()}
    results = {
        "command": " ".join(["python -m benchmarks.cdc", *(sys.argv[1:] if argv is None else argv)]),
        "rows": args.rows,
        "files": args.files,
        "events": args.events,
        "load_seconds": load_seconds,
        "seconds": seconds,
        "median": median,
        "ratio": median["cdc"] / median["merge"],
        "files_removed": removed,
    }
    os.makedirs(os.path.join(args.out, "benchmarks"), exist_ok=True)
    with open(os.path.join(args.out, "benchmarks", "cdc_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_section(os.path.join(args.out, "BENCHMARKS.md"), results)
    print(section(results))
    return 0


def _load(spark: SparkSession, path: str, *, rows: int, files: int) -> None:
    """The base table, written by CDC apply's first run (every key once, sequence 0)."""
    source = data.base_rows(spark, rows=rows, files=files).select(
        "*", F.lit(0).cast("bigint").alias("seq"), F.lit("U").alias("op")
    )
    spec = CdcSpec.from_config("bench", CDC)
    apply_changes(
        spark,
        source,
        spec,
        table=None,
        create=WriteRequest(table_path=path, mode="create_or_replace"),
        txn=("bench-load", 0),
        plan_schema=lambda main, snapshot, result: None,
    )


def _apply(spark: SparkSession, kind: str, table: str, batch: DataFrame) -> tuple[float, dict[str, Any]]:
    snapshot = load_snapshot(table)
    assert snapshot is not None
    started = time.monotonic()
    if kind == "cdc":
        result = apply_changes(
            spark,
            batch,
            CdcSpec.from_config("bench", CDC),
            table=snapshot,
            create=WriteRequest(table_path=table, mode="create_or_replace"),
            txn=(f"bench-{time.time_ns()}", 0),
            plan_schema=lambda main, snapshot, result: None,
        )
    else:
        result = merge_into(spark, net_changes(batch), snapshot, MergeSpec.from_config("bench", NET))
    return time.monotonic() - started, result.metrics


def section(results: dict[str, Any]) -> str:
    """The BENCHMARKS.md section of one run."""
    median, removed = results["median"], results["files_removed"]
    lines = [
        SECTION_START,
        "## CDC apply against a plain merge of the same net changes",
        "",
        f"`{results['command']}`: {results['rows']:,} rows in {results['files']} files (loaded by CDC "
        f"apply's first run in {results['load_seconds']:.0f} s, its state holding every key), "
        f"{results['events']:,} events on a clustered 0.9% of the keys (10% of them twice, one event in "
        f"ten a delete); medians of {len(results['seconds']['cdc'])} alternating runs on one warm session.",
        "",
        "| measure | CDC apply | plain `delta_merge` of the net changes | ratio | target |",
        "| --- | --- | --- | --- | --- |",
        f"| time | {median['cdc']:.2f} s | {median['merge']:.2f} s | {results['ratio']:.2f}x | <= 1.5x |",
        f"| files rewritten | {removed['cdc'][0]} | {removed['merge'][0]} | | equal |",
        "",
        "Both read the same events: the plain merge folds them itself (each key's latest event, a "
        "`groupBy` and a join inside its source), CDC apply folds them against the stored state of "
        "their keys (state files skipped by key range) and appends the state's new rows. Where the "
        "difference goes (a profile of warm runs on this table, in seconds): the events framed and "
        "materialized 0.3; the fold (the events and their keys' state rows in one aggregation, a set "
        "of distinct events per key) 1.6-2.0, against about 0.5 for the plain merge's own fold; the "
        "state's append and record 0.3-0.4; the table's merge itself 2.5-3.5 for both (the same "
        "clauses, with update-only-if-changed). Not met yet: the fold aggregates whole event rows per "
        "key (a sort-based aggregation); a narrow fold (sequences and content hashes per key, then the "
        "winning rows joined back) measured 1.0-1.3 s, and handing the fold's result to the merge "
        "without materializing it twice would save about 0.3 s more.",
        SECTION_END,
    ]
    return "\n".join(lines)


def write_section(path: str, results: dict[str, Any]) -> None:
    """Put this run's section into BENCHMARKS.md (replacing the previous one)."""
    replace_section(path, SECTION_START, SECTION_END, section(results))


if __name__ == "__main__":
    sys.exit(main())
