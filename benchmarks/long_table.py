"""A table that lives for years: 1,000 hourly merges, with and without auto compaction.

``python -m benchmarks.long_table --rows 10000000 --runs 1000 --out DIR`` writes
``DIR/long_table.json`` and ``benchmarks/long_table.png`` (files and merge seconds by run) and
prints the markdown table BENCHMARKS.md carries. Each run is what an hourly ``delta_merge``
model does, through the engine in this process's warm Spark session (not 1,000 dbt processes):
the upsert of 0.1% of the rows (updates of recent keys: every 10th of the newest 100,000) and
1,000 new rows, merge-on-read (deletion vectors on), then the auto compaction the table asks
for (``delta.autoOptimize.autoCompact``; timed apart from the merge). Both tables must end with
the same rows (count, key sum, a checksum, by delta-rs's reader).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from benchmarks.measure import fresh_copy

UPDATES_WINDOW, UPDATE_STRIDE, NEW_ROWS = 100_000, 10, 1_000
CONFIGS = {"auto_compaction": {"delta.autoOptimize.autoCompact": "true"}, "none": {}}
SHOWN_RUNS = (1, 10, 50, 100, 200, 500, 1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--out", default="/tmp/benchlong")
    parser.add_argument("--configs", nargs="*", default=list(CONFIGS))
    parser.add_argument("--chart", default=os.path.join(os.path.dirname(__file__), "long_table.png"))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    from dbt.adapters.deltamerge.spark.embedded import start_session

    spark = start_session(os.path.join(args.out, "warehouse"), {})
    base = _base_table(spark, args)
    results: dict[str, Any] = {"settings": vars(args), "configs": {}}
    for name in args.configs:
        table = fresh_copy(base, os.path.join(args.out, "work", name))
        _set_properties(spark, table, {"delta.enableDeletionVectors": "true", **CONFIGS[name]})
        runs = [_run(spark, table, args.rows, run) for run in range(1, args.runs + 1)]
        results["configs"][name] = {"runs": runs, "check": _check(table)}
        _save(args, results)
    _save(args, results)
    if len(results["configs"]) > 1:
        draw(results, args.chart)
    print(report(results))


def _save(args: argparse.Namespace, results: dict[str, Any]) -> None:
    with open(os.path.join(args.out, "long_table.json"), "w") as handle:
        json.dump(results, handle)


def _base_table(spark: Any, args: argparse.Namespace) -> str:
    from benchmarks import data
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = os.path.join(args.out, "tables", f"rows{args.rows}_files{args.files}")
    if not os.path.exists(path):
        rows = data.base_rows(spark, rows=args.rows, files=args.files)
        write_dataframe(spark, rows, WriteRequest(TableLocation.of(path), "create_or_replace"))
    return path


def _set_properties(spark: Any, table: str, properties: dict[str, str]) -> None:
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.statements.parse.maintenance import SetPropertiesStatement
    from dbt.adapters.deltamerge.statements.run.maintenance import set_properties

    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    set_properties(spark, snapshot, SetPropertiesStatement(("t",), tuple(properties.items())), table)


def _source(spark: Any, rows: int, run: int) -> Any:
    """Run ``run``'s rows: updates of every 10th of the newest 100,000 keys, and 1,000 new keys.

    Keys by position: the base table's ``2p`` for ``p < rows``, then ``2 * rows + (p - rows)`` for
    the rows earlier runs inserted (each run's new keys follow the last)."""
    from pyspark.sql import functions as F

    from benchmarks import data

    existing = rows + (run - 1) * NEW_ROWS
    position = F.col("id")
    key = F.when(position < rows, position * 2).otherwise(F.lit(2 * rows) + position - F.lit(rows))
    updated = spark.range(existing - UPDATES_WINDOW, existing, UPDATE_STRIDE)
    new = spark.range(existing, existing + NEW_ROWS)
    keys = updated.unionAll(new).select(key.alias(data.KEY))
    return data.rows_for_keys(keys, version=run)


def _run(spark: Any, table: str, rows: int, run: int) -> dict[str, Any]:
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.commands import auto_compact
    from dbt.adapters.deltamerge.delta.log import TableChange
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    spec = MergeSpec.from_config("hourly", {"unique_key": "id"})
    started = time.monotonic()
    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None
    vectors = TableChange(deletion_vectors=True)
    result = merge_into(spark, _source(spark, rows, run), snapshot, spec, change=vectors)
    merged = time.monotonic()
    compacted = auto_compact(spark, result)
    done = time.monotonic()
    done_compacting = compacted is not None and compacted.version is not None
    latest = compacted.snapshot if compacted is not None and done_compacting else result.snapshot
    record = {
        "run": run,
        "merge_seconds": merged - started,
        "compaction_seconds": done - merged if compacted is not None else 0.0,
        "compacted": compacted is not None and compacted.version is not None,
        "files": len(latest.files),
        "files_before_compaction": len(result.snapshot.files),
        "updated": result.metrics.get("numTargetRowsUpdated"),
        "inserted": result.metrics.get("numTargetRowsInserted"),
    }
    print(json.dumps(record), flush=True)
    return record


def _check(table: str) -> list[Any]:
    sql = "select count(*) as n, sum(id) as k, sum(quantity * (id % 1000)) as c from t"
    row = pa.table(QueryBuilder().register("t", DeltaTable(table)).execute(sql).read_all()).to_pylist()[0]
    return [row["n"], row["k"], row["c"]]


def _median_around(runs: list[dict[str, Any]], run: int, key: str, half: int = 2) -> float:
    """The median of ``key`` over the runs ``run - half .. run + half`` (a run is noisy alone)."""
    values = sorted(r[key] for r in runs if abs(r["run"] - run) <= half)
    return values[len(values) // 2]


def report(results: dict[str, Any]) -> str:
    """Files and merge seconds at chosen runs for each configuration."""
    lines = []
    for name, found in results["configs"].items():
        runs = found["runs"]
        shown = [r for r in SHOWN_RUNS if r <= len(runs)]
        lines.append(f"**{name}** (rows at the end: {found['check'][0]:,}; checksums {found['check'][1:]})\n")
        lines.append("| run | " + " | ".join(str(r) for r in shown) + " |")
        lines.append("|---|" + "---:|" * len(shown))
        lines.append("| files | " + " | ".join(str(runs[r - 1]["files"]) for r in shown) + " |")
        merge = [f"{_median_around(runs, r, 'merge_seconds'):.2f}" for r in shown]
        lines.append("| merge s (median of 5 runs around) | " + " | ".join(merge) + " |")
        compactions = [r for r in runs if r["compacted"]]
        total = sum(r["compaction_seconds"] for r in compactions)
        growth = _median_around(runs, len(runs), "merge_seconds") / _median_around(runs, 10, "merge_seconds")
        lines.append(
            f"\nauto compactions: {len(compactions)} ({total:.1f} s in all); most files at any run: "
            f"{max(r['files_before_compaction'] for r in runs)}; merge s, last run / run 10: {growth:.2f}x\n"
        )
    return "\n".join(lines)


def draw(results: dict[str, Any], path: str) -> None:
    """Files and merge seconds by run, one line per configuration."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (files, seconds) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for name, found in results["configs"].items():
        runs = found["runs"]
        files.plot([r["run"] for r in runs], [r["files_before_compaction"] for r in runs], label=name)
        seconds.plot([r["run"] for r in runs], [r["merge_seconds"] for r in runs], label=name, linewidth=0.7)
    files.set_ylabel("files after the merge")
    seconds.set_ylabel("merge seconds")
    seconds.set_xlabel("run")
    files.legend()
    rows = results["settings"]["rows"]
    files.set_title(f"{rows:,}-row table, hourly merges (0.1% updates, 1,000 new rows)")
    figure.tight_layout()
    figure.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
