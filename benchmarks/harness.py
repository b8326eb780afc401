"""The benchmark run: data once, then every workload with every contestant, interleaved.

The Spark contestants run in one warm worker process; delta-rs runs in a fresh process
per merge. Each run gets a fresh copy of its base table, its own peak-memory sampler
and the files its commit removed and added; the warm-up round and the last round also
check every contestant's resulting rows against delta-rs's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import Any

import psutil
from deltalake import DeltaTable

from benchmarks.measure import PeakMemory, commit_files, fresh_copy, tree_rss
from benchmarks.settings import Settings
from benchmarks.workloads import Workload, workloads

CONTESTANTS = ("ours", "ours_feed_off", "deltars", "rewrite", "append", "floor")
TABLE_OUTPUT = ("ours", "ours_feed_off", "deltars", "rewrite", "append")


class SparkWorker:
    """The warm Spark process (``benchmarks.spark_worker``), one JSON command at a time."""

    def __init__(self, rows: int, connect_url: str | None = None) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "benchmarks.spark_worker",
                str(rows),
                *([connect_url] if connect_url else []),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=_repo_root(),
        )
        hello = self._answer()
        self.startup_seconds = float(hello["startup_seconds"])

    @property
    def pid(self) -> int:
        return self.process.pid

    def call(self, op: str, **arguments: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.process.stdin.flush()
        answer = self._answer()
        if "error" in answer:
            raise RuntimeError(f"Spark worker, {op}: {answer['error']}")
        return answer

    def _answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError("The Spark worker exited; see its output above.")
        return dict(json.loads(line))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=120)


def _repo_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def contestants_for(workload: Workload) -> list[str]:
    """Who runs ``workload``, in the order each round runs them (ours first: the floor needs its files)."""
    names = ["ours"]
    if workload.change_data_feed:
        names.append("ours_feed_off")
    names += ["deltars", "rewrite"]
    if workload.kind == "insert":
        names.append("append")
    names.append("floor")
    return names


def base_table(settings: Settings, files: int, cdf: bool) -> str:
    return os.path.join(settings.workdir, "tables", f"files{files}{'_cdf' if cdf else ''}")


def source_path(settings: Settings, workload: Workload) -> str:
    return os.path.join(settings.workdir, "sources", workload.name)


def run_benchmark(
    settings: Settings, log: Any = print, checkpoint: Any = lambda records: None
) -> dict[str, Any]:
    """Everything the report needs: the machine's JVM start, every run's record, the cold dbt run."""
    chosen = [w for w in workloads(settings.rows) if not settings.only or w.name in settings.only]
    started = time.monotonic()
    spark = SparkWorker(settings.rows)
    idle_bytes = tree_rss(psutil.Process(spark.pid))
    log(f"JVM + Spark session start: {spark.startup_seconds:.1f} s, idle worker {idle_bytes / 2**20:.0f} MB")
    generated = spark.call("generate", root=settings.workdir, layouts=settings.layouts, only=settings.only)
    log(f"data generated in {generated['seconds']:.1f} s")
    totals = {
        files: len(DeltaTable(base_table(settings, files, False)).file_uris()) for files in settings.layouts
    }
    records: list[dict[str, Any]] = list(settings.resumed)
    done = {(r["workload"], r["layout"]) for r in records}
    try:
        for files in settings.layouts:
            for workload in chosen:
                if (workload.name, files) in done:  # measured by the interrupted run resumed
                    continue
                for round_ in range(settings.warmups + settings.runs):
                    round_records = _round(spark, settings, workload, files, round_, totals[files])
                    records += round_records
                    log(_progress(workload, files, round_, round_records))
                checkpoint(records)
        noop = spark.call("noop_merge", root=settings.workdir, runs=settings.noop_runs)
        log(f"warm no-op merge of a 4-row table: median {noop['median']:.3f} s")
        cold = _cold_dbt_runs(spark, settings, chosen, records, log) if settings.cold_dbt else []
    finally:
        spark.close()
    return {
        "settings": settings.__dict__,
        "startup_seconds": spark.startup_seconds,
        "idle_bytes": idle_bytes,
        "generate_seconds": generated["seconds"],
        "file_totals": totals,
        "records": records,
        "noop_merge": noop,
        "cold_dbt": cold,
        "harness_seconds": time.monotonic() - started,
    }


def _round(
    spark: SparkWorker, settings: Settings, workload: Workload, files: int, round_: int, total: int
) -> list[dict[str, Any]]:
    source = source_path(settings, workload)
    check = round_ == 0 or round_ == settings.warmups + settings.runs - 1
    records: list[dict[str, Any]] = []
    copies: dict[str, str] = {}
    ours_files: dict[str, list[str]] = {}
    for contestant in contestants_for(workload):
        record: dict[str, Any] = {
            "layout": files,
            "workload": workload.name,
            "round": round_,
            "warmup": round_ < settings.warmups,
            "contestant": contestant,
            "files_total": total,
        }
        cdf = workload.change_data_feed and contestant != "ours_feed_off"
        if contestant == "floor":
            scratch = os.path.join(settings.workdir, "runs", "floor")
            with PeakMemory(spark.pid) as peak:
                answer = spark.call(
                    "floor",
                    table=base_table(settings, files, cdf),
                    source=source,
                    touched=ours_files["removed"],
                    scratch=scratch,
                )
            record.update(seconds=answer["seconds"], peak_bytes=peak.peak, files_read=answer["files_read"])
            records.append(record)
            continue
        copy = fresh_copy(
            base_table(settings, files, cdf),
            os.path.join(settings.workdir, "runs", f"{workload.name}-{files}-{contestant}"),
        )
        copies[contestant] = copy
        if contestant == "deltars":
            answer, peak_bytes = _run_deltars(settings, workload, copy, source)
        else:
            op = "ours" if contestant.startswith("ours") else contestant
            with PeakMemory(spark.pid) as peak:
                answer = spark.call(op, workload=workload.name, table=copy, source=source)
            peak_bytes = peak.peak
        version = answer.get("version", 1 if contestant == "deltars" else None)
        written = commit_files(copy, version)
        if contestant == "ours":
            ours_files["removed"] = written.removed
        record.update(
            seconds=answer["seconds"],
            peak_bytes=peak_bytes,
            files_removed=len(written.removed),
            files_added=written.added,
            bytes_removed=written.removed_bytes,
            bytes_added=written.added_bytes,
            metrics=answer.get("metrics", {}),
        )
        records.append(record)
    if check:
        _check(spark, records, copies)
    for copy in copies.values():
        shutil.rmtree(copy, ignore_errors=True)
    return records


def _run_deltars(
    settings: Settings, workload: Workload, table: str, source: str
) -> tuple[dict[str, Any], int]:
    command = json.dumps({"rows": settings.rows, "workload": workload.name, "table": table, "source": source})
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.deltars_worker", command],
        stdout=subprocess.PIPE,
        text=True,
        cwd=_repo_root(),
    )
    with PeakMemory(process.pid) as peak:
        out, _ = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"delta-rs merge of {workload.name} failed (exit {process.returncode})")
    answer = dict(json.loads(out.strip().splitlines()[-1]))
    return answer, max(peak.peak, int(answer["peak_bytes"]))


def _check(spark: SparkWorker, records: list[dict[str, Any]], copies: dict[str, str]) -> None:
    sums = {}
    for contestant, copy in copies.items():
        if contestant == "append":
            continue
        files = DeltaTable(copy).file_uris()
        sums[contestant] = spark.call("checksum", table=copy, files=files)
    expected = sums.get("deltars")
    for record in records:
        mine = sums.get(record["contestant"])
        if mine is not None and expected is not None:
            record["rows"] = mine["count"]
            record["checksum"] = mine["checksum"]
            record["check"] = "ok" if mine == expected else f"MISMATCH {mine} vs delta-rs {expected}"


def _progress(workload: Workload, files: int, round_: int, records: list[dict[str, Any]]) -> str:
    parts = [f"{r['contestant']} {r['seconds']:.2f}s" for r in records]
    checks = {r.get("check") for r in records} - {None}
    return (
        f"{workload.name:22} {files:4} files  round {round_}: "
        + ", ".join(parts)
        + (f"  [{', '.join(sorted(checks))}]" if checks else "")
    )


def _cold_dbt_runs(
    spark: SparkWorker,
    settings: Settings,
    chosen: list[Workload],
    records: list[dict[str, Any]],
    log: Any,
) -> list[dict[str, Any]]:
    """Every workload's model as a cold ``dbt run``: embedded, and through a warm local server."""
    from dbt.adapters.deltamerge.spark import server

    cold = [w for w in chosen if not settings.cold_only or w.name in settings.cold_only]
    files = settings.layouts[0]
    targets = {"embedded": ""}
    server_warehouse = os.path.join(settings.workdir, "server_warehouse")
    if settings.cold_server and cold:
        port = _free_port()
        server.start(server_warehouse, port, "local[*]", {})
        targets["server"] = f"sc://localhost:{port}"
    out = []
    try:
        if "server" in targets:  # the server's first session and queries are its warm-up, not timed
            _cold_check(spark, records, cold[0], files, _cold(settings, cold[0], files, "server", targets))
        for workload in cold:
            for target in targets:
                run = _cold_check(
                    spark, records, workload, files, _cold(settings, workload, files, target, targets)
                )
                log(
                    f"cold dbt run {workload.name:22} {target:8}: {run['seconds']:.1f} s wall, "
                    f"model {run['model_seconds']:.1f} s, merge {run['merge_ms'] / 1000:.1f} s "
                    f"[{run['check']}]"
                )
                out.append(run)
    finally:
        if "server" in targets:
            server.stop(server_warehouse)
    return out


def _cold(
    settings: Settings, workload: Workload, files: int, target: str, urls: dict[str, str]
) -> dict[str, Any]:
    from benchmarks.cold_dbt import cold_dbt_run

    base = base_table(settings, files, workload.change_data_feed)
    return cold_dbt_run(
        settings, workload, base, source_path(settings, workload), target=target, url=urls[target]
    )


def _cold_check(
    spark: SparkWorker, records: list[dict[str, Any]], workload: Workload, files: int, cold: dict[str, Any]
) -> dict[str, Any]:
    """The cold run's rows checked against delta-rs's result of the same merge."""
    mine = spark.call("checksum", table=cold["table"], files=DeltaTable(cold["table"]).file_uris())
    expected = [
        r["checksum"]
        for r in records
        if r["workload"] == workload.name
        and r["layout"] == files
        and r["contestant"] == "deltars"
        and "checksum" in r
    ]
    cold["check"] = (
        "ok" if expected and mine["checksum"] == expected[-1] else f"MISMATCH {mine} vs {expected[-1:]}"
    )
    shutil.rmtree(os.path.dirname(os.path.dirname(cold.pop("table"))), ignore_errors=True)
    return cold


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
