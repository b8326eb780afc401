"""OPTIMIZE and Z-order, side by side with delta-rs; data skipping after Z-order.

``python -m benchmarks.optimize --rows 10000000 --files 1000 --runs 2 --out DIR`` writes
``DIR/optimize.json`` and prints the markdown table BENCHMARKS.md carries. The base table is the
benchmark's 10M rows in 1,000 small files (one contiguous key range each, the rest of the
columns random), with ``delta.targetFileSize`` set so that both engines aim at the same file
size. Every round runs each contestant on a fresh copy (data files hard-linked): ours in this
process's warm Spark session, delta-rs's ``optimize.compact()`` / ``optimize.z_order()`` in a
fresh process (``optimize_worker``: import and open included). The rows each leaves are checked
equal (count, key sum, a checksum of two columns, by delta-rs's DataFusion reader). For Z-order,
the files a range predicate on the second Z-order column must read (their statistics meet the
range) are counted before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from benchmarks.measure import fresh_copy

ZORDER = ("customer_id", "order_date")
# The range predicate on the second Z-order column: 2% of its 2,000 days.
RANGE = ("2021-01-01", "2021-02-10")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--target-mb", type=int, default=100, help="delta.targetFileSize of compaction")
    parser.add_argument("--zorder-target-mb", type=int, default=8, help="file size Z-order aims at")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="/tmp/benchopt")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from dbt.adapters.deltamerge.spark.embedded import start_session

    spark = start_session(os.path.join(args.out, "warehouse"), {})
    records: list[dict[str, Any]] = []
    for kind, target in (("compact", args.target_mb), ("zorder", args.zorder_target_mb)):
        base = _base_table(spark, args, target)
        for run in range(args.runs + 1):  # run 0 warms up
            for contestant in ("ours", "deltars"):
                table = fresh_copy(base, os.path.join(args.out, "work", contestant))
                seconds = _run(spark, contestant, kind, table, target)
                record = {
                    "kind": kind,
                    "contestant": contestant,
                    "seconds": seconds,
                    "warmup": run == 0,
                    "files_before": len(DeltaTable(base).file_uris()),
                    "files_after": len(DeltaTable(table).file_uris()),
                    "range_files_before": _files_meeting(base),
                    "range_files_after": _files_meeting(table),
                    "check": _check(table),
                    "base_check": _check(base) if run == 0 else None,
                }
                records.append(record)
                print(json.dumps(record), flush=True)
    with open(os.path.join(args.out, "optimize.json"), "w") as handle:
        json.dump(records, handle, indent=1)
    print(report(records))


def _base_table(spark: Any, args: argparse.Namespace, target_mb: int) -> str:
    from benchmarks import data
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = os.path.join(args.out, "tables", f"files{args.files}_target{target_mb}")
    if not os.path.exists(path):
        properties = {"delta.targetFileSize": str(target_mb * 1024 * 1024)}
        rows = data.base_rows(spark, rows=args.rows, files=args.files)
        write_dataframe(
            spark, rows, WriteRequest(TableLocation.of(path), "create_or_replace", properties=properties)
        )
    return path


def _run(spark: Any, contestant: str, kind: str, table: str, target_mb: int) -> float:
    if contestant == "deltars":
        command = {"table": table, "kind": kind, "columns": list(ZORDER), "target": target_mb * 1024 * 1024}
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.optimize_worker", json.dumps(command)],
            capture_output=True,
            text=True,
            check=True,
        )
        return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.commands import OptimizeOptions, optimize

    started = time.monotonic()
    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    zorder = ZORDER if kind == "zorder" else ()
    options = OptimizeOptions.for_table(dict(snapshot.metadata.configuration), zorder_by=zorder)
    optimize(spark, snapshot, snapshot.files, options)
    return time.monotonic() - started


def _files_meeting(table: str) -> int:
    """Files whose ``order_date`` statistics meet ``RANGE`` (what data skipping reads)."""
    adds = pa.table(DeltaTable(table).get_add_actions(flatten=True)).to_pylist()
    low, high = (__import__("datetime").date.fromisoformat(d) for d in RANGE)
    return sum(1 for a in adds if a["min.order_date"] <= high and a["max.order_date"] >= low)


def _check(table: str) -> list[Any]:
    sql = "select count(*) as n, sum(id) as k, sum(quantity * (id % 1000)) as c, sum(customer_id) as u from t"
    row = pa.table(QueryBuilder().register("t", DeltaTable(table)).execute(sql).read_all()).to_pylist()[0]
    return [row["n"], row["k"], row["c"], row["u"]]


def report(records: list[dict[str, Any]]) -> str:
    """The markdown table: median seconds of each, their ratio, files, the range predicate's files."""
    lines = [
        "| operation | ours (s) | delta-rs (s) | ours / delta-rs | files before -> after (ours / delta-rs) "
        "| files a range on `order_date` reads: before -> after (ours / delta-rs) | rows equal |",
        "|---|---:|---:|---:|---|---|---|",
    ]
    for kind in ("compact", "zorder"):
        measured = {
            c: [r for r in records if r["kind"] == kind and r["contestant"] == c and not r["warmup"]]
            for c in ("ours", "deltars")
        }
        if not all(measured.values()):
            continue
        ours, theirs = (statistics.median(r["seconds"] for r in measured[c]) for c in ("ours", "deltars"))
        o, d = measured["ours"][-1], measured["deltars"][-1]
        base = next(r["base_check"] for r in records if r["kind"] == kind and r["base_check"])
        equal = all(r["check"] == base for rs in measured.values() for r in rs)
        lines.append(
            f"| {'OPTIMIZE' if kind == 'compact' else 'OPTIMIZE ZORDER BY (customer_id, order_date)'} "
            f"| {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f}x "
            f"| {o['files_before']} -> {o['files_after']} / {d['files_after']} "
            f"| {o['range_files_before']} -> {o['range_files_after']} / {d['range_files_after']} "
            f"| {'yes' if equal else 'NO'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
