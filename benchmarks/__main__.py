"""``python -m benchmarks``: run the harness and write BENCHMARKS.md, the chart and the raw results."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from benchmarks.harness import run_benchmark
from benchmarks.report import write_report
from benchmarks.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000_000, help="rows of the base tables (default 10M)")
    parser.add_argument("--layouts", default="40,250", help="files per base table, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="counted runs per workload and contestant")
    parser.add_argument("--warmups", type=int, default=1, help="warm-up runs (not counted)")
    parser.add_argument("--only", default="", help="comma-separated workload names (default: all)")
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "deltamerge-bench"))
    parser.add_argument("--out", default=".", help="where BENCHMARKS.md and benchmarks/ go")
    parser.add_argument("--no-cold-dbt", action="store_true", help="skip the cold `dbt run`s")
    parser.add_argument("--cold", default="", help="workloads run as a cold `dbt run` (default: every one)")
    parser.add_argument(
        "--no-cold-server", action="store_true", help="cold `dbt run`s on the embedded session only"
    )
    parser.add_argument("--noop-runs", type=int, default=20, help="no-op merges of a 4-row table")
    parser.add_argument(
        "--large", default="", help="results.json of a run at another scale, shown in its own section"
    )
    parser.add_argument(
        "--resume", action="store_true", help="keep the records an interrupted run left in --out"
    )
    parser.add_argument("--render", default="", help="only rewrite the report from this results.json")
    args = parser.parse_args(argv)
    large = None
    if args.large:
        with open(args.large) as f:
            large = json.load(f)
    if args.render:
        with open(args.render) as f:
            return _report(json.load(f), args.out, large)
    partial = os.path.join(args.out, "benchmarks", "records.partial.json")
    resumed = []
    if args.resume and os.path.exists(partial):
        with open(partial) as f:
            resumed = json.load(f)
    settings = Settings(
        rows=args.rows,
        layouts=[int(x) for x in args.layouts.split(",")],
        runs=args.runs,
        warmups=args.warmups,
        workdir=os.path.join(os.path.abspath(args.workdir), f"rows{args.rows}"),
        only=[x for x in args.only.split(",") if x],
        cold_dbt=not args.no_cold_dbt,
        cold_only=[x for x in args.cold.split(",") if x],
        cold_server=not args.no_cold_server,
        noop_runs=args.noop_runs,
        resumed=resumed,
    )
    os.makedirs(os.path.join(args.out, "benchmarks"), exist_ok=True)

    def checkpoint(records: list[dict[str, object]]) -> None:
        with open(partial, "w") as f:  # an interrupted run keeps what it measured
            json.dump(records, f, default=str)

    results = run_benchmark(settings, log=lambda line: print(line, flush=True), checkpoint=checkpoint)
    os.remove(partial)
    results["command"] = " ".join(["python -m benchmarks", *(sys.argv[1:] if argv is None else argv)])
    os.makedirs(os.path.join(args.out, "benchmarks"), exist_ok=True)
    with open(os.path.join(args.out, "benchmarks", "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    return _report(results, args.out, large)


def _report(results: dict[str, object], out: str, large: dict[str, object] | None) -> int:
    os.makedirs(os.path.join(out, "benchmarks"), exist_ok=True)
    failures = write_report(results, out, large=large)
    for failure in failures:
        print(f"result check failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
