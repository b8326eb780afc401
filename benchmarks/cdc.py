"""``python -m benchmarks.cdc``: CDC apply against a plain ``delta_merge`` of the same net changes.

A 10M-row table (the benchmark's 12 columns, keys ``0, 2, 4, ...``, one key range per file) is
loaded once by CDC apply itself (so its hidden state holds every key). Each run gets a fresh
copy and applies 100k events touching 1% of the keys (a clustered range: 90k keys, 10k of
them with two events, one event in ten a delete, every sequence after the load's) in three
ways, alternating, on one warm session: CDC apply of the events (SCD 1); CDC apply of the same
events plus 1% late ones (older than the load, on keys of the range: ignored, but the stored
state of the keys must be read to know); and the engine's merge of the net changes a user would
have to compute first (each key's latest event; delete, update or insert), the same for both
batches. Reported: medians, the ratios (target <= 1.5x) and the files each rewrote (equal).

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
from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.spark.embedded import start_session

SECTION_START, SECTION_END = "<!-- cdc:start -->", "<!-- cdc:end -->"
KINDS = ("cdc", "cdc_late", "merge")
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


def events(spark: SparkSession, *, rows: int, count: int, late: int = 0) -> DataFrame:
    """``count`` events over a clustered 0.9% of the keys: every tenth a delete, 10% of keys twice.

    Sequences run from 1 (the load is sequence 0); ``late`` more events, on keys of the same
    range, have sequences below 0: older than the stored rows, so CDC apply ignores them.
    """
    keys = int(count * 0.9)
    start = int(rows * 0.37)
    frame = spark.range(0, count).select(
        (F.lit(2 * start) + F.pmod(F.col("id"), F.lit(keys)) * 2).alias(data.KEY),
        (F.col("id") + 1).alias("seq"),
        F.when(F.col("id") % 10 == 0, F.lit("D")).otherwise(F.lit("U")).alias("op"),
    )
    if late:
        older = spark.range(0, late).select(
            (F.lit(2 * start) + F.col("id") * 2 * (keys // late)).alias(data.KEY),
            (-F.col("id") - 1).alias("seq"),
            F.lit("U").alias("op"),
        )
        frame = frame.unionByName(older)
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
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmups", type=int, default=2)
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
    batches = {kind: os.path.join(root, f"events_{kind}") for kind in KINDS}
    late = args.events // 100
    for kind, path in batches.items():
        events(
            spark, rows=args.rows, count=args.events, late=late if kind == "cdc_late" else 0
        ).write.parquet(path)
    seconds: dict[str, list[float]] = {kind: [] for kind in KINDS}
    removed: dict[str, list[int]] = {kind: [] for kind in KINDS}
    ignored: list[int] = []
    for round_ in range(args.warmups + args.runs):
        for kind in KINDS:
            copy = fresh_copy(base, os.path.join(root, "runs", kind))
            took, metrics = _apply(spark, kind, copy, spark.read.parquet(batches[kind]))
            if round_ >= args.warmups:
                seconds[kind].append(took)
                removed[kind].append(int(metrics["numTargetFilesRemoved"]))
                if kind == "cdc_late":
                    ignored.append(int(metrics["numEventsIgnoredAsLate"]))
    median = {k: statistics.median(v) for k, v in seconds.items()}
    results = {
        "command": " ".join(["python -m benchmarks.cdc", *(sys.argv[1:] if argv is None else argv)]),
        "rows": args.rows,
        "files": args.files,
        "events": args.events,
        "load_seconds": load_seconds,
        "seconds": seconds,
        "median": median,
        # Each round's own ratio, then their median: drifts of the machine cancel within a round.
        "ratio": _paired(seconds["cdc"], seconds["merge"]),
        "ratio_late": _paired(seconds["cdc_late"], seconds["merge"]),
        "late_events": late,
        "ignored_as_late": ignored,
        "files_removed": removed,
    }
    os.makedirs(os.path.join(args.out, "benchmarks"), exist_ok=True)
    with open(os.path.join(args.out, "benchmarks", "cdc_results.json"), "w") as f:
        json.dump(results, f, indent=1)
    write_section(os.path.join(args.out, "BENCHMARKS.md"), results)
    print(section(results))
    return 0


def _paired(ours: list[float], theirs: list[float]) -> float:
    """The median of the rounds' ratios.

    >>> _paired([2.0, 3.0, 9.0], [1.0, 2.0, 3.0])
    2.0
    """
    return statistics.median(a / b for a, b in zip(ours, theirs, strict=True))


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
        create=WriteRequest(location=TableLocation.of(path), mode="create_or_replace"),
        txn=("bench-load", 0),
    )


def _apply(spark: SparkSession, kind: str, table: str, batch: DataFrame) -> tuple[float, dict[str, Any]]:
    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    started = time.monotonic()
    if kind.startswith("cdc"):
        result = apply_changes(
            spark,
            batch,
            CdcSpec.from_config("bench", CDC),
            table=snapshot,
            create=WriteRequest(location=TableLocation.of(table), mode="create_or_replace"),
            txn=(f"bench-{time.time_ns()}", 0),
        )
    else:
        result = merge_into(spark, net_changes(batch), snapshot, MergeSpec.from_config("bench", NET))
    return time.monotonic() - started, result.metrics


def section(results: dict[str, Any]) -> str:
    """The BENCHMARKS.md section of one run."""
    median, removed = results["median"], results["files_removed"]
    late = results["late_events"]
    lines = [
        SECTION_START,
        "## CDC apply against a plain merge of the same net changes",
        "",
        f"`{results['command']}`: {results['rows']:,} rows in {results['files']} files (loaded by CDC "
        f"apply's first run in {results['load_seconds']:.0f} s at sequence 0, its state holding every "
        f"key), {results['events']:,} events after it on a clustered 0.9% of the keys (10% of them "
        f"twice, one event in ten a delete); medians of {len(results['seconds']['cdc'])} rounds on one "
        "warm session (after warm-up rounds), each round running the three in turn; a ratio is the "
        "median of the rounds' own ratios.",
        "",
        "| measure | CDC apply | plain `delta_merge` of the net changes | ratio | target |",
        "| --- | --- | --- | --- | --- |",
        f"| time, events in order | {median['cdc']:.2f} s | {median['merge']:.2f} s | "
        f"{results['ratio']:.2f}x | <= 1.5x |",
        f"| time, plus {late:,} late events | {median['cdc_late']:.2f} s | {median['merge']:.2f} s | "
        f"{results['ratio_late']:.2f}x | <= 1.5x |",
        f"| files rewritten | {removed['cdc'][0]} / {removed['cdc_late'][0]} | {removed['merge'][0]} "
        "| | equal |",
        "",
        "Both read the same events: the plain merge folds them itself (each key's latest event, a "
        "`groupBy` and a join inside its source), CDC apply folds them per key (one row per key and "
        "sequence with hashes of the events' contents, then the latest live sequence per key, the "
        "winning rows joined back by id) and appends the state's new rows. When the state's file "
        "statistics show every stored sequence older than the run's least one (events in order, "
        "the usual case) the state is not read; otherwise the stored rows of the events' keys "
        f"(state files skipped by key range) join the fold, and here the {late:,} late events "
        f"({results['ignored_as_late'][0]:,} counted in `numEventsIgnoredAsLate`) are ignored.",
        SECTION_END,
    ]
    return "\n".join(lines)


def write_section(path: str, results: dict[str, Any]) -> None:
    """Put this run's section into BENCHMARKS.md (replacing the previous one)."""
    replace_section(path, SECTION_START, SECTION_END, section(results))


if __name__ == "__main__":
    sys.exit(main())
