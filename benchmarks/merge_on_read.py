"""Merge-on-read, side by side: ours with deletion vectors, ours copy-on-write, delta-rs.

``python -m benchmarks.merge_on_read --rows 10000000 --layouts 40 250 --runs 2 --out DIR``
writes ``DIR/merge_on_read.json`` and the markdown table BENCHMARKS.md carries. Every round
runs each contestant on a fresh copy of the same base table (data files hard-linked), ours in one
warm Spark session of this process, delta-rs in a fresh process per operation (``deltars_worker``,
import and open included, as a user's script pays them). The rows each contestant leaves are
checked equal (count, key sum, and a checksum of the changed column, read by delta-rs's DataFusion
reader). Then the read cost: a table after 10 random upserts with vectors is scanned whole, beside
the same rows without vectors (the table after ``REORG ... APPLY (PURGE)``).
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

from benchmarks.measure import PeakMemory, fresh_copy

MERGES = ("upsert_random", "delete_whole", "upsert_clustered", "three_clause")
# DELETE / UPDATE of 1% of the rows, spread over every file (keys are the even numbers).
DML = {
    "delete_random": {"kind": "delete", "predicate": "id % 200 = 6"},
    "update_random": {"kind": "update", "predicate": "id % 200 = 8", "set": {"status": "'refunded'"}},
}
CONTESTANTS = ("ours_dv", "ours_cow", "deltars")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--layouts", type=int, nargs="+", default=[40, 250])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="/tmp/benchout")
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--scan-merges", type=int, default=10, help="0: no read-cost measurement")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from dbt.adapters.deltamerge.spark.embedded import start_session

    spark = start_session(os.path.join(args.out, "warehouse"), {})
    records: list[dict[str, Any]] = []
    names = [n for n in (*MERGES, *DML) if not args.only or n in args.only]
    for files in args.layouts:
        base = _base_table(spark, args.out, args.rows, files)
        sources = {n: _source(spark, args.out, args.rows, n) for n in names if n in MERGES}
        for name in names:
            for run in range(args.runs + 1):  # run 0 warms up
                for contestant in CONTESTANTS:
                    record = _run(spark, args, base, sources.get(name), name, contestant, files)
                    record["warmup"] = run == 0
                    records.append(record)
                    print(json.dumps(record), flush=True)
        if args.scan_merges:
            records.append(_scan_cost(spark, args, base, files))
            print(json.dumps(records[-1]), flush=True)
    with open(os.path.join(args.out, "merge_on_read.json"), "w") as handle:
        json.dump(records, handle, indent=1)
    print(report(records))


def _base_table(spark: Any, out: str, rows: int, files: int) -> str:
    from benchmarks import data
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = os.path.join(out, "tables", f"files{files}")
    if not os.path.exists(path):
        write_dataframe(
            spark,
            data.base_rows(spark, rows=rows, files=files),
            WriteRequest(TableLocation.of(path), "create_or_replace"),
        )
    return path


def _source(spark: Any, out: str, rows: int, name: str) -> str:
    from benchmarks.workloads import workloads

    path = os.path.join(out, "sources", name)
    if not os.path.exists(path):
        workload = {w.name: w for w in workloads(rows)}[name]
        workload.source(spark, rows).coalesce(1).write.parquet(path)
    return path


def _with_vectors(spark: Any, table: str) -> None:
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.statements.parse.maintenance import SetPropertiesStatement
    from dbt.adapters.deltamerge.statements.run.maintenance import set_properties

    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    statement = SetPropertiesStatement(("t",), (("delta.enableDeletionVectors", "true"),))
    set_properties(spark, snapshot, statement, table)


def _run(
    spark: Any,
    args: argparse.Namespace,
    base: str,
    source: str | None,
    name: str,
    contestant: str,
    files: int,
) -> dict[str, Any]:
    table = fresh_copy(base, os.path.join(args.out, "work", contestant))
    if contestant == "ours_dv":
        _with_vectors(spark, table)
    if contestant == "deltars":
        command = {"table": table, "rows": args.rows}
        command.update({"workload": name, "source": source} if source else {"dml": DML[name]})
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks.deltars_worker", json.dumps(command)],
            capture_output=True,
            text=True,
            check=True,
        )
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        seconds, metrics, peak = answer["seconds"], answer["metrics"], answer["peak_bytes"]
    else:
        # This process and its JVM (whose resident memory grows to the heap it is given, then stays).
        with PeakMemory(os.getpid()) as sampled:
            seconds, metrics = _ours(spark, args.rows, table, source, name)
        peak = sampled.peak
    return {
        "workload": name,
        "files": files,
        "contestant": contestant,
        "seconds": seconds,
        "metrics": {k: v for k, v in metrics.items() if isinstance(v, (int, float))},
        "check": _check(table),
        "vectors": _vectors(table),
        "peak_bytes": peak,
    }


def _vectors(table: str) -> int:
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot

    snapshot = load_snapshot(TableLocation.of(table))
    return sum(1 for f in snapshot.files if f.deletion_vector) if snapshot else 0


def _ours(spark: Any, rows: int, table: str, source: str | None, name: str) -> tuple[float, dict[str, Any]]:
    from benchmarks.workloads import workloads
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
    from dbt.adapters.deltamerge.statements.run.dml import delete_rows, update_rows

    started = time.monotonic()
    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    if source is not None:
        workload = {w.name: w for w in workloads(rows)}[name]
        spec = MergeSpec.from_config(f"bench_{name}", workload.config)
        result = merge_into(spark, spark.read.parquet(source), snapshot, spec)
    elif DML[name]["kind"] == "delete":
        result = delete_rows(spark, snapshot, DML[name]["predicate"])
    else:
        result = update_rows(spark, snapshot, list(DML[name]["set"].items()), DML[name]["predicate"])
    return time.monotonic() - started, result.metrics


def _check(table: str) -> list[Any]:
    """Rows, key sum and a checksum of the status column, by delta-rs's reader (vectors applied)."""
    sql = "select count(*) as n, sum(id) as k, sum(length(status) * (id % 1000)) as c from t"
    row = pa.table(QueryBuilder().register("t", DeltaTable(table)).execute(sql).read_all()).to_pylist()[0]
    return [row["n"], row["k"], row["c"]]


def _scan_cost(spark: Any, args: argparse.Namespace, base: str, files: int) -> dict[str, Any]:
    """A full scan after ``scan_merges`` random upserts with vectors, and of the same rows without."""
    from pyspark.sql import functions as F

    from benchmarks import data
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.data import read_files
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
    from dbt.adapters.deltamerge.statements.parse.maintenance import ReorgStatement
    from dbt.adapters.deltamerge.statements.run.maintenance import reorg_purge

    table = fresh_copy(base, os.path.join(args.out, "work", "scan_dv"))
    _with_vectors(spark, table)
    spec = MergeSpec.from_config("bench_scan", {"unique_key": "id", "source_alias": "s", "target_alias": "t"})
    for i in range(args.scan_merges):
        keys = data.random_existing_keys(spark, rows=args.rows, count=args.rows // 100, salt=100 + i)
        snapshot = load_snapshot(TableLocation.of(table))
        assert snapshot is not None
        merge_into(spark, data.rows_for_keys(keys, version=i + 1), snapshot, spec)
    purged = fresh_copy(table, os.path.join(args.out, "work", "scan_purged"))
    snapshot = load_snapshot(TableLocation.of(purged))
    assert snapshot is not None
    reorg_purge(spark, snapshot, ReorgStatement(("t",), None))

    def scan(path: str) -> float:
        snapshot = load_snapshot(TableLocation.of(path))
        assert snapshot is not None
        started = time.monotonic()
        frame = read_files(spark, snapshot, snapshot.files)
        frame.agg(F.count(F.lit(1)), F.sum(F.xxhash64(*frame.columns) % 1000)).collect()
        return time.monotonic() - started

    with_vectors, without = [], []
    for _ in range(args.runs + 1):
        with_vectors.append(scan(table))
        without.append(scan(purged))
    marked = sum(len(f.deleted_rows) for f in load_snapshot(TableLocation.of(table)).files)  # type: ignore[union-attr]
    return {
        "workload": "scan_after_merges",
        "files": files,
        "merges": args.scan_merges,
        "deleted_rows": marked,
        "with_vectors": statistics.median(with_vectors[1:]),
        "without_vectors": statistics.median(without[1:]),
        "same_rows": _check(table) == _check(purged),
    }


def report(records: list[dict[str, Any]]) -> str:
    """The markdown table: medians per workload and layout, ratios of same-round pairs."""
    lines = [
        "| workload | files | ours, vectors s | ours, copy-on-write s | delta-rs s | vectors / delta-rs "
        "| vectors / copy-on-write | peak memory vectors / delta-rs | check |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    counted = [r for r in records if not r.get("warmup") and "contestant" in r]
    for key in sorted({(r["workload"], r["files"]) for r in counted}, key=lambda k: (k[1], _order(k[0]))):
        mine = {
            c: [r for r in counted if (r["workload"], r["files"]) == key and r["contestant"] == c]
            for c in CONTESTANTS
        }
        med = {c: statistics.median(r["seconds"] for r in rs) for c, rs in mine.items() if rs}
        pairs = list(zip(mine["ours_dv"], mine["deltars"], mine["ours_cow"], strict=False))
        vs_rs = statistics.median(a["seconds"] / b["seconds"] for a, b, _ in pairs)
        vs_cow = statistics.median(a["seconds"] / c["seconds"] for a, _, c in pairs)
        checks = {json.dumps(r["check"]) for rs in mine.values() for r in rs}
        memory = statistics.median(
            a.get("peak_bytes", 0) / max(b.get("peak_bytes", 0), 1) for a, b, _ in pairs
        )
        lines.append(
            f"| {key[0]} | {key[1]} | {med['ours_dv']:.2f} | {med['ours_cow']:.2f} | {med['deltars']:.2f} | "
            f"{vs_rs:.2f} | {vs_cow:.2f} | {memory:.2f} | {'ok' if len(checks) == 1 else 'ROWS DIFFER'} |"
        )
    for scan in (r for r in records if r.get("workload") == "scan_after_merges"):
        lines.append("")
        lines.append(
            f"Read cost ({scan['files']} files): a full scan after {scan['merges']} random 1% upserts with "
            f"vectors ({scan['deleted_rows']:,} rows marked) took {scan['with_vectors']:.2f} s, the same "
            "rows "
            f"without vectors (after REORG PURGE) {scan['without_vectors']:.2f} s: "
            f"{scan['with_vectors'] / scan['without_vectors']:.2f}x; same rows: {scan['same_rows']}."
        )
    return "\n".join(lines)


def _peak(record: dict[str, Any]) -> int:
    return int(record.get("peak_bytes", 0))


def _order(name: str) -> int:
    order = [*MERGES, *DML]
    return order.index(name) if name in order else len(order)


if __name__ == "__main__":
    main()
