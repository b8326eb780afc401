"""UniForm's cost, side by side in one run: a merge with and without the Iceberg side, and the
conversion's time as an hourly-append table's history grows.

``python -m benchmarks.uniform --rows 10000000 --files 40 --runs 3 --appends 1000 --out DIR``
writes ``DIR/uniform.json`` and the markdown BENCHMARKS.md carries (``--render``: from the JSON).

1. A merge (``upsert_random``: 0.1% of the keys updated, as many inserted) into a table of
   ``--rows`` rows in ``--files`` files: the plain Delta table (``table_format`` default) and the
   same rows as a UniForm table (``table_format: iceberg``: column mapping, Iceberg metadata
   beside the log), each round on fresh copies (data files hard-linked; the UniForm copy's Iceberg
   side rebuilt at its own path first, untimed), contestants alternating. The conversion's own
   time inside the UniForm merge is timed too. Target: the conversion adds at most 10%.
2. An hourly-append table: ``--appends`` commits of one new file each (no Spark: a data file's
   copy committed as the next hour's), each converting its version; the conversion's time at
   commits 1-10 against commits ``appends-9``..``appends``. Target: flat. The commits come
   seconds apart, not hours: the table's file retention (``--window`` seconds) stands for the
   default 7 days, so the Iceberg metadata keeps the snapshots of a window as it would.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
import uuid
from typing import Any

from benchmarks.measure import fresh_copy

UNIFORM = {
    "delta.enableIcebergCompatV2": "true",
    "delta.universalFormat.enabledFormats": "iceberg",
    "delta.columnMapping.mode": "name",
}


class ConversionTimer:
    """Times every Iceberg conversion the commit path runs (``delta.uniform.sync_after_commit``)."""

    def __init__(self) -> None:
        from dbt.adapters.deltamerge.delta import uniform

        self.seconds: list[float] = []
        self._module = uniform
        self._original = uniform.sync_after_commit

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return self._original(*args, **kwargs)
            finally:
                self.seconds.append(time.perf_counter() - started)

        uniform.sync_after_commit = timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--appends", type=int, default=1000)
    parser.add_argument(
        "--window",
        type=float,
        default=20.0,
        help="the hourly table's file retention, in seconds: it stands for 7 days of hourly commits",
    )
    parser.add_argument("--out", default="/tmp/benchout-uniform")
    parser.add_argument("--render", action="store_true", help="print the markdown of --out's JSON")
    args = parser.parse_args()
    result_path = os.path.join(args.out, "uniform.json")
    if args.render:
        with open(result_path) as handle:
            print(render(json.load(handle)))
        return
    os.makedirs(args.out, exist_ok=True)
    from dbt.adapters.deltamerge.spark.embedded import start_session

    spark = start_session(os.path.join(args.out, "warehouse"), {})
    timer = ConversionTimer()
    results = {
        "rows": args.rows,
        "files": args.files,
        "merge": _merges(spark, args, timer),
        "appends": _appends(spark, args, timer),
    }
    with open(result_path, "w") as handle:
        json.dump(results, handle, indent=2)
    print(render(results))


def _base(spark: Any, out: str, rows: int, files: int, uniform: bool) -> str:
    from benchmarks import data
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    path = os.path.join(out, "tables", f"{'uniform' if uniform else 'plain'}{files}")
    if not os.path.exists(path):
        request = WriteRequest(
            TableLocation.of(path), "create_or_replace", properties=UNIFORM if uniform else {}
        )
        write_dataframe(spark, data.base_rows(spark, rows=rows, files=files), request)
    return path


def _merges(spark: Any, args: argparse.Namespace, timer: ConversionTimer) -> dict[str, Any]:
    from benchmarks.workloads import workloads
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
    from dbt.adapters.deltamerge.delta.uniform import sync_iceberg
    from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

    workload = {w.name: w for w in workloads(args.rows)}["upsert_random"]
    source_path = os.path.join(args.out, "sources", "upsert_random")
    if not os.path.exists(source_path):
        workload.source(spark, args.rows).coalesce(1).write.parquet(source_path)
    spec = MergeSpec.from_config("bench_uniform", workload.config)
    bases = {
        kind: _base(spark, args.out, args.rows, args.files, kind == "uniform")
        for kind in ("plain", "uniform")
    }
    seconds: dict[str, list[float]] = {"plain": [], "uniform": []}
    conversion: list[float] = []
    for run in range(args.runs + 1):  # run 0 warms up
        for kind, base in bases.items():
            table = fresh_copy(base, os.path.join(args.out, "work", kind))
            location = TableLocation.of(table)
            if kind == "uniform":  # the copy's own Iceberg side (the base's names the base's files)
                shutil.rmtree(os.path.join(table, "metadata"))
                sync_iceberg(location, load_snapshot(location))  # type: ignore[arg-type]
            snapshot = load_snapshot(location)
            assert snapshot is not None
            timer.seconds.clear()
            started = time.perf_counter()
            result = merge_into(spark, spark.read.parquet(source_path), snapshot, spec)
            elapsed = time.perf_counter() - started
            assert result.version == snapshot.version + 1
            if run:
                seconds[kind].append(elapsed)
                if kind == "uniform":
                    conversion.append(sum(timer.seconds))
    plain, uniform = statistics.median(seconds["plain"]), statistics.median(seconds["uniform"])
    return {
        "workload": "upsert_random",
        "plain_s": plain,
        "uniform_s": uniform,
        "conversion_s": statistics.median(conversion),
        "ratio": uniform / plain,
        "runs": args.runs,
        "samples": seconds,
    }


def _appends(spark: Any, args: argparse.Namespace, timer: ConversionTimer) -> dict[str, Any]:
    from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot

    path = os.path.join(args.out, "work", "hourly")
    shutil.rmtree(path, ignore_errors=True)
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

    frame = spark.sql("select cast(id as bigint) as id, concat('h', cast(id as string)) as v from range(24)")
    retention = {"delta.deletedFileRetentionDuration": f"interval {int(args.window * 1000)} milliseconds"}
    request = WriteRequest(TableLocation.of(path), "create_or_replace", properties={**UNIFORM, **retention})
    write_dataframe(spark, frame.coalesce(1), request)
    location = TableLocation.of(path)
    first, stats = _first_file_stats(location)
    times: list[float] = []
    for _ in range(args.appends):
        timer.seconds.clear()
        _append_copy(location, first, stats)
        times.append(sum(timer.seconds))
    snapshot = load_snapshot(location)
    assert snapshot is not None
    from dbt.adapters.deltamerge.delta.uniform import iceberg_state

    state = iceberg_state(location)
    assert state is not None and state.delta_version == snapshot.version
    first, last = times[:10], times[-10:]
    return {
        "appends": args.appends,
        "first_ms": 1000 * statistics.median(first),
        "last_ms": 1000 * statistics.median(last),
        "max_ms": 1000 * max(times),
        "mean_ms": 1000 * statistics.mean(times),
        "files": len(snapshot.files),
        "window_s": args.window,
        "snapshots_kept": len(state.metadata.snapshots),
        "metadata_bytes": location.store.size_and_mtime(state.location)[0],
        "per_commit_ms": [round(1000 * t, 2) for t in times],
    }


def _first_file_stats(location: Any) -> tuple[Any, str]:
    """The table's first data file and its ``add``'s statistics (as the log has them)."""
    from urllib.parse import unquote

    from dbt.adapters.deltamerge.delta import load_snapshot
    from dbt.adapters.deltamerge.delta.log import log_state

    snapshot = load_snapshot(location)
    assert snapshot is not None
    first = min(snapshot.files, key=lambda f: f.path)
    return first, str(log_state(location, snapshot.version).adds[unquote(first.path)]["stats"])


def _append_copy(location: Any, first: Any, stats: str) -> None:
    """Commit a copy of ``first`` as a new hour's file (a blind append, no Spark)."""
    from urllib.parse import unquote

    from dbt.adapters.deltamerge.delta import load_snapshot
    from dbt.adapters.deltamerge.delta.txn import (
        CommitActions,
        CommitInfo,
        CommitOptions,
        WrittenFile,
        commit_files,
    )

    snapshot = load_snapshot(location)
    assert snapshot is not None
    name = f"hour-{uuid.uuid4().hex}.parquet"
    os.link(os.path.join(location.path, unquote(first.path)), os.path.join(location.path, name))
    written = WrittenFile(name, first.size, dict(first.partition_values), stats, int(first.num_records or 0))
    info = CommitInfo("WRITE", {"mode": "Append"}, is_blind_append=True)
    commit_files(snapshot, CommitActions(written=[written]), CommitOptions(info))


def render(results: dict[str, Any]) -> str:
    """The markdown BENCHMARKS.md carries."""
    merge, appends = results["merge"], results["appends"]
    rows = f"{results['rows']:,}"
    return "\n".join(
        [
            f"Merge `{merge['workload']}` into {rows} rows in {results['files']} files, median of "
            f"{merge['runs']} runs each, side by side in one process (fresh copies, alternating):",
            "",
            "| table | merge (s) | of which the Iceberg conversion (s) | ratio to plain |",
            "|---|---:|---:|---:|",
            f"| plain Delta | {merge['plain_s']:.2f} | - | 1.00 |",
            f"| `table_format: iceberg` | {merge['uniform_s']:.2f} | {merge['conversion_s']:.3f} | "
            f"{merge['ratio']:.2f} |",
            "",
            f"Hourly appends, one file each, {appends['appends']:,} commits (each converting its version; "
            f"{appends['files']:,} live files at the end): conversion median {appends['first_ms']:.1f} ms "
            f"at commits 1-10, {appends['last_ms']:.1f} ms at the last 10, mean {appends['mean_ms']:.1f} ms, "
            f"max {appends['max_ms']:.1f} ms (a merge of the manifests, every 100 commits). The table's "
            f"file retention was {appends['window_s']:.0f} s, standing for 7 days of hourly commits: the "
            f"last metadata file kept {appends['snapshots_kept']} snapshots "
            f"({appends['metadata_bytes'] / 1024:.0f} KiB).",
        ]
    )


if __name__ == "__main__":
    main()
