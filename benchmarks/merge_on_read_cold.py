"""Merge-on-read as a cold ``dbt run`` through the warm local server, beside delta-rs in a fresh process.

``python -m benchmarks.merge_on_read_cold --rows 10000000 --files 40 --out DIR`` (the tables and
sources of ``benchmarks.merge_on_read`` in the same ``DIR``). For each merge workload, interleaved:
a new ``dbt run`` process, a Spark Connect client of a warm local server (its start and a first run
are not timed), of the workload's model with ``deletion_vectors: true`` on a fresh copy of the base
table; and delta-rs's merge in a fresh Python process, timed from outside (interpreter, import,
open, merge), on another copy. The rows both leave are checked equal; ``DIR/merge_on_read_cold.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks.measure import fresh_copy
from benchmarks.merge_on_read import MERGES, _base_table, _check, _source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--out", default="/tmp/benchout")
    parser.add_argument("--only", nargs="*", default=[])
    args = parser.parse_args()
    from benchmarks.harness import _free_port
    from benchmarks.settings import Settings
    from benchmarks.workloads import workloads
    from dbt.adapters.deltamerge.spark import server
    from dbt.adapters.deltamerge.spark.embedded import start_session

    spark = start_session(os.path.join(args.out, "warehouse"), {})
    base = _base_table(spark, args.out, args.rows, args.files)
    names = [n for n in MERGES if not args.only or n in args.only]
    sources = {n: _source(spark, args.out, args.rows, n) for n in names}
    spark.stop()
    settings = Settings(rows=args.rows, layouts=[args.files], runs=args.runs, warmups=0, workdir=args.out)
    by_name = {w.name: w for w in workloads(args.rows)}
    warehouse = os.path.join(args.out, "cold_server_warehouse")
    port = _free_port()
    server.start(warehouse, port, "local[*]", {})
    records: list[dict[str, Any]] = []
    try:
        url = f"sc://localhost:{port}"
        for run in range(args.runs + 1):  # run 0: the server's first queries of each shape, not counted
            for name in names:
                workload = by_name[name]
                dbt = _cold_dbt(settings, workload, base, sources[name], url)
                theirs = _deltars(args, base, sources[name], name)
                record = {"workload": name, "warmup": run == 0, **dbt, **theirs}
                same = record.pop("ours_check") == record.pop("deltars_check")
                record["check"] = "ok" if same else "DIFFER"
                records.append(record)
                print(json.dumps(record), flush=True)
    finally:
        server.stop(warehouse)
    with open(os.path.join(args.out, "merge_on_read_cold.json"), "w") as handle:
        json.dump(records, handle, indent=1)
    print(report(records))


def _cold_dbt(settings: Any, workload: Any, base: str, source: str, url: str) -> dict[str, Any]:
    from benchmarks.cold_dbt import cold_dbt_run

    config = {**workload.config, "deletion_vectors": True}
    run = cold_dbt_run(
        settings, dataclasses.replace(workload, config=config), base, source, target="server", url=url
    )
    return {
        "dbt_seconds": run["seconds"],
        "model_seconds": run["model_seconds"],
        "merge_seconds": run["merge_ms"] / 1000,
        "ours_check": _check(run["table"]),
    }


def _deltars(args: argparse.Namespace, base: str, source: str, name: str) -> dict[str, Any]:
    table = fresh_copy(base, os.path.join(args.out, "work", "cold_deltars"))
    command = {"table": table, "rows": args.rows, "workload": name, "source": source}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.deltars_worker", json.dumps(command)],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.monotonic() - started
    inner = json.loads(done.stdout.strip().splitlines()[-1])["seconds"]
    return {"deltars_wall": wall, "deltars_seconds": inner, "deltars_check": _check(table)}


def report(records: list[dict[str, Any]]) -> str:
    """The markdown table: medians of the counted runs per workload."""
    lines = [
        "| workload | cold dbt run (server) s | its model s | its merge s | delta-rs process s "
        "| dbt run / delta-rs | check |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    counted = [r for r in records if not r["warmup"]]
    for name in MERGES:
        mine = [r for r in counted if r["workload"] == name]
        if not mine:
            continue
        med = {k: statistics.median(r[k] for r in mine) for k in mine[0] if isinstance(mine[0][k], float)}
        ratio = statistics.median(r["dbt_seconds"] / r["deltars_wall"] for r in mine)
        checks = {r["check"] for r in mine}
        lines.append(
            f"| {name} | {med['dbt_seconds']:.2f} | {med['model_seconds']:.2f} | {med['merge_seconds']:.2f} "
            f"| {med['deltars_wall']:.2f} | {ratio:.2f} | {'ok' if checks == {'ok'} else 'ROWS DIFFER'} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
