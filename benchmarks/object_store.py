"""Merges on S3 beside the same merges on a local disk, ours and delta-rs's, every request counted.

``python -m benchmarks.object_store [--rows N] [--rounds R]`` starts the tests' S3 server (S3Proxy
on loopback, ``tests/s3server.py``) and runs two phases, each a process of its own with its own
embedded Spark session:

- ``times``: each workload's merge into a fresh copy of the same base table (``files`` files),
  on a local disk and on S3, by our engine (Spark's S3A for data, obstore for the log) and by
  delta-rs (in this process, the faster way for it), medians of ``rounds``;
- ``requests``: the same merges once more, every client pointed at the tests' counting proxy
  (``tests/s3faults.py``), the requests of each counted by kind, the log's apart from the data's;
  and one small append (a commit of one file) by each.

The source is read from a local parquet file by both. Results: ``benchmarks/object_store.json``
and a Markdown table on stdout (BENCHMARKS.md, "Tables on S3").
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

WORKLOADS = ("insert_beyond", "upsert_clustered", "upsert_random", "delete_window")
PHASES = ("times", "requests")


def results_file(rows: int) -> str:
    """The record of a run of ``rows`` rows: ``object_store.json`` for 1M, else named by the rows."""
    name = "object_store.json" if rows == 1_000_000 else f"object_store_{rows}.json"
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), name)


def _copy(source: str, target: str) -> None:
    if "://" not in source:
        shutil.copytree(source, target)
        return
    from tests.files import copy_folder

    copy_folder(source, target)


class Phase:
    """One process's Spark session, base tables and sources."""

    def __init__(self, *, endpoint: str, rows: int, root: str, bucket: str) -> None:
        os.environ.update({"AWS_ENDPOINT_URL": endpoint, "AWS_ALLOW_HTTP": "true"})
        from dbt.adapters.deltamerge.common.store_options import effective_options
        from dbt.adapters.deltamerge.delta import Stores
        from dbt.adapters.deltamerge.spark.committer import committer_conf, committer_jar
        from dbt.adapters.deltamerge.spark.conf import object_store_conf
        from dbt.adapters.deltamerge.spark.embedded import start_session

        options = effective_options(os.environ, {})
        self.stores = Stores(options)  # the phase's (one client per bucket, as an invocation's)
        conf = {**object_store_conf(options), **committer_conf(committer_jar(os.environ))}
        self.spark = start_session(os.path.join(root, "warehouse"), conf)
        self.rows, self.root = rows, root
        self.lake = f"s3a://{bucket}/bench"
        self.local = os.path.join(root, "lake")

    def base(self, where: str, files: int) -> str:
        from benchmarks import data
        from dbt.adapters.deltamerge.delta import TableLocation, storage
        from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

        path = f"{where}/base_{self.rows}_{files}"
        if storage.exists(self.stores, f"{path}/_delta_log/{0:020d}.json"):
            return path
        frame = data.base_rows(self.spark, rows=self.rows, files=files)
        location = TableLocation.of(path, self.stores)
        write_dataframe(self.spark, frame, WriteRequest(location, "create_or_replace"))
        return path

    def source(self, workload: Any) -> str:
        path = os.path.join(self.root, "sources", workload.name)
        if not os.path.exists(path):
            workload.source(self.spark, self.rows).coalesce(1).write.parquet(path)
        return path

    def ours(self, table: str, workload: Any, source: str) -> float:
        from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
        from dbt.adapters.deltamerge.merge import MergeSpec, merge_into

        frame = self.spark.read.parquet(source)
        started = time.monotonic()
        snapshot = load_snapshot(TableLocation.of(table, self.stores))
        assert snapshot is not None
        merge_into(self.spark, frame, snapshot, MergeSpec.from_config(workload.name, workload.config))
        return time.monotonic() - started

    def theirs(self, table: str, workload: Any, source: str) -> float:
        import pyarrow.parquet as pq
        from deltalake import DeltaTable, WriterProperties

        from benchmarks.workloads import ON, SOURCE, TARGET
        from dbt.adapters.deltamerge.delta import TableLocation

        arrow = pq.read_table(source)
        options = TableLocation.of(table, self.stores).deltalake_options()
        started = time.monotonic()
        merger = DeltaTable(table, storage_options=options).merge(
            arrow, predicate=ON, source_alias=SOURCE, target_alias=TARGET, streamed_exec=False,
            writer_properties=WriterProperties(compression="SNAPPY"),
        )  # fmt: skip
        workload.deltars(merger).execute()
        return time.monotonic() - started


def _phase_times(args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks.workloads import workloads

    phase = Phase(endpoint=args.endpoint, rows=args.rows, root=args.root, bucket=args.bucket)
    results: dict[str, Any] = {}
    for workload in (w for w in workloads(args.rows) if w.name in WORKLOADS):
        source = phase.source(workload)
        times: dict[str, list[float]] = {}
        for store, where in (("local", phase.local), ("s3", phase.lake)):
            base = phase.base(where, args.files)
            for who in ("ours", "delta-rs"):
                for _ in range(args.rounds):
                    table = f"{where}/{who}_{uuid.uuid4().hex[:8]}"
                    _copy(base, table)
                    run = phase.ours if who == "ours" else phase.theirs
                    times.setdefault(f"{who} {store}", []).append(run(table, workload, source))
        results[workload.name] = {k: statistics.median(v) for k, v in times.items()}
        print(workload.name, json.dumps(results[workload.name]), flush=True)
    return results


def _phase_requests(args: argparse.Namespace) -> dict[str, Any]:
    from deltalake import write_deltalake

    from benchmarks.workloads import workloads
    from dbt.adapters.deltamerge.delta import TableLocation
    from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
    from tests.s3faults import FaultProxy

    proxy = FaultProxy(args.endpoint)
    try:
        phase = Phase(endpoint=proxy.endpoint, rows=args.rows, root=args.root, bucket=args.bucket)
        results: dict[str, Any] = {}

        def counted(action: Callable[[], object]) -> dict[str, dict[str, int]]:
            proxy.reset()
            action()
            log: Counter[str] = Counter()
            data: Counter[str] = Counter()
            for kind, path, query in proxy.requests():
                in_log = "/_delta_log" in path or "_delta_log" in unquote(query)
                (log if in_log else data)[kind] += 1
            return {"log": dict(log), "data": dict(data)}

        base = phase.base(phase.lake, args.files)
        for workload in (w for w in workloads(args.rows) if w.name in WORKLOADS):
            source = phase.source(workload)
            for who, run in (("ours", phase.ours), ("delta-rs", phase.theirs)):
                table = f"{phase.lake}/{who}_{uuid.uuid4().hex[:8]}"
                _copy(base, table)
                merge = functools.partial(run, table, workload, source)
                results.setdefault(workload.name, {})[who] = counted(merge)
        one_row = phase.spark.range(1).selectExpr("id * 2 as id")
        ours_table, their_table = f"{phase.lake}/append_ours", f"{phase.lake}/append_theirs"
        write_dataframe(
            phase.spark,
            one_row,
            WriteRequest(TableLocation.of(ours_table, phase.stores), "create_or_replace"),
        )
        write_deltalake(
            their_table,
            one_row.toArrow(),
            storage_options=TableLocation.of(their_table, phase.stores).deltalake_options(),
        )
        arrow = one_row.toArrow()
        ours_append = functools.partial(
            write_dataframe,
            phase.spark,
            one_row,
            WriteRequest(TableLocation.of(ours_table, phase.stores), "append"),
        )
        options = TableLocation.of(their_table, phase.stores).deltalake_options()
        their_append = functools.partial(
            write_deltalake, their_table, arrow, mode="append", storage_options=options
        )
        results["append"] = {"ours": counted(ours_append), "delta-rs": counted(their_append)}
        return results
    finally:
        proxy.stop()


def _markdown(times: dict[str, Any], requests: dict[str, Any], rows: int) -> str:
    lines = [
        f"{rows:,} rows; medians; seconds around the merge (the table's load included).",
        "",
        "| workload | ours local | ours S3 | ours S3/local | delta-rs local | delta-rs S3 "
        "| delta-rs S3/local |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, t in times.items():
        ours, theirs = t["ours s3"] / t["ours local"], t["delta-rs s3"] / t["delta-rs local"]
        lines.append(
            f"| {name} | {t['ours local']:.2f} | {t['ours s3']:.2f} | {ours:.2f}x | "
            f"{t['delta-rs local']:.2f} | {t['delta-rs s3']:.2f} | {theirs:.2f}x |"
        )
    lines += ["", "| requests (log / data) | ours | delta-rs |", "| --- | --- | --- |"]

    def said(counts: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"

    for name, r in requests.items():
        lines.append(
            f"| {name} | log: {said(r['ours']['log'])}; data: {said(r['ours']['data'])} | "
            f"log: {said(r['delta-rs']['log'])}; data: {said(r['delta-rs']['data'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks.object_store")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--phase", choices=PHASES)
    parser.add_argument("--phases", default=",".join(PHASES), help="which to run (the others kept)")
    parser.add_argument("--endpoint")
    parser.add_argument("--root")
    parser.add_argument("--bucket", default="bench")
    args = parser.parse_args(argv)
    if args.phase:
        found = _phase_times(args) if args.phase == "times" else _phase_requests(args)
        with open(os.path.join(args.root, f"{args.phase}.json"), "w") as out:
            json.dump(found, out)
        return 0
    from tests.s3server import ACCESS_KEY, REGION, SECRET_KEY, start_s3_server

    root = tempfile.mkdtemp(prefix="deltamerge-s3-bench-")
    server = start_s3_server(os.path.join(root, "s3"))
    server.make_bucket(args.bucket)
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_REGION": REGION,
    }
    record_file = results_file(args.rows)
    found: dict[str, Any] = {"times": {}, "requests": {}}
    if os.path.exists(record_file):  # the phases not run this time are kept
        with open(record_file) as handle:
            found.update({k: v for k, v in json.load(handle).items() if k in PHASES})
    try:
        for phase in args.phases.split(","):
            command = [
                sys.executable, "-m", "benchmarks.object_store", "--phase", phase,
                "--endpoint", server.endpoint, "--root", os.path.join(root, phase),
                "--rows", str(args.rows), "--files", str(args.files),
                "--rounds", str(args.rounds), "--bucket", args.bucket,
            ]  # fmt: skip
            os.makedirs(os.path.join(root, phase))
            subprocess.run(command, check=True, env=env)
            with open(os.path.join(root, phase, f"{phase}.json")) as handle:
                found[phase] = json.load(handle)
    finally:
        server.stop()
    record = {"rows": args.rows, "files": args.files, "rounds": args.rounds, **found}
    with open(record_file, "w") as out:
        json.dump(record, out, indent=1)
    print(_markdown(found["times"], found["requests"], args.rows))
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
