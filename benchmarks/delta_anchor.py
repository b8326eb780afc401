"""The speed anchor: our engine against Delta Lake's own commands, in one warm Spark session.

One embedded session with Delta's jars, extension and catalog (``io.delta:delta-spark_2.13``, Ivy's
cache) runs both: each workload of ``benchmarks/workloads.py`` as the same SQL ``MERGE INTO`` text
on two fresh copies of one base table, registered ``USING delta`` (``binding/delta_catalog.py``):
ours through the statement path a dbt hook or ``run_query`` takes (``run_on_delta``), Delta's
through ``spark.sql``. Copy-on-write and deletion vectors (the base table with
``delta.enableDeletionVectors``), then ``UPDATE`` and ``DELETE`` of 1% of the rows, ``OPTIMIZE``
of a table of small files and ``OPTIMIZE ... ZORDER BY``. Rounds alternate who runs first; after
each pair both tables must hold the same rows (count and an order-free checksum, read by Delta).

    python -m benchmarks.delta_anchor --rows 10000000 --runs 2 --workdir /tmp/anchor

Writes ``benchmarks/delta_anchor.json`` and the section "Against Delta Lake" of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from typing import Any

from benchmarks.connect import replace_section
from benchmarks.environment import describe_machine
from benchmarks.workloads import Workload, workloads

DELTA = "io.delta:delta-spark_2.13:4.4.0"
SETTINGS = {
    "spark.jars.packages": DELTA,
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}
MODES = {"copy-on-write": {}, "deletion vectors": {"delta.enableDeletionVectors": "true"}}
START, END = "<!-- delta-anchor:start -->", "<!-- delta-anchor:end -->"


def merge_sql(workload: Workload, target: str, source: str) -> str:
    """The workload's merge as SQL (its model config's clauses, ``*`` for every column).

    >>> w = next(w for w in workloads(100) if w.name == "upsert_random")
    >>> merge_sql(w, "x", "/s").split(" s ON ")[1]
    't.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *'
    """
    clauses = []
    for head, key in (
        ("WHEN MATCHED", "when_matched"),
        ("WHEN NOT MATCHED", "when_not_matched"),
        ("WHEN NOT MATCHED BY SOURCE", "when_not_matched_by_source"),
    ):
        for clause in workload.config.get(key, []):
            condition = f" AND {clause['condition']}" if clause.get("condition") else ""
            action = {"delete": "DELETE", "update": "UPDATE SET *", "insert": "INSERT *"}[clause["action"]]
            clauses.append(f"{head}{condition} THEN {action}")
    return f"MERGE INTO {target} t USING (SELECT * FROM parquet.`{source}`) s ON t.id = s.id " + " ".join(
        clauses
    )


class Anchor:
    """The session, the base tables and the timed pairs."""

    def __init__(self, workdir: str, rows: int, files: int) -> None:
        from dbt.adapters.deltamerge.spark.embedded import start_session

        self.workdir, self.rows, self.files = workdir, rows, files
        self.spark = start_session(os.path.join(workdir, "warehouse"), SETTINGS)
        self.spark.sql("CREATE DATABASE IF NOT EXISTS anchor")
        self.serial = 0

    def base(self, mode: str, *, small_files: bool = False) -> str:
        """The base table of ``mode`` (written once, by ours): ``files`` files, or 20x as many small ones."""
        from benchmarks import data
        from dbt.adapters.deltamerge.delta import TableLocation
        from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe

        files = self.files * 20 if small_files else self.files
        path = os.path.join(self.workdir, "tables", f"{mode.replace(' ', '_')}_{files}")
        if not os.path.exists(path):
            rows = data.base_rows(self.spark, rows=self.rows, files=files)
            write_dataframe(
                self.spark,
                rows,
                WriteRequest(TableLocation.of(path), "create_or_replace", properties=MODES[mode]),
            )
        return path

    def source(self, workload: Workload) -> str:
        path = os.path.join(self.workdir, "sources", workload.name)
        if not os.path.exists(path):
            workload.source(self.spark, self.rows).coalesce(1).write.parquet(path)
        return path

    def pair(self, base: str, statement: str, first: str, *, warm: bool = False) -> dict[str, Any]:
        """``statement`` (``{}`` for the table) on a fresh copy each: ours and Delta's, timed.
        ``warm``: each copy is read once first (``SELECT count(*)``, Delta's reader), as a
        long-running cluster would have read it: Delta keeps the snapshot it loaded; ours keeps
        none between statements (delta-rs reads the log at each), both find the files cached."""
        from dbt.adapters.deltamerge.delta import Stores
        from dbt.adapters.deltamerge.statements.parse.text import SqlText
        from dbt.adapters.deltamerge.statements.run.statement import run_on_delta

        seconds: dict[str, float] = {}
        names = {}
        for who in (first, "delta" if first == "ours" else "ours"):
            self.serial += 1
            name = f"anchor.{who}_{self.serial}"
            copy = os.path.join(self.workdir, "copies", name)
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            self.spark.sql(f"DROP TABLE IF EXISTS {name}")
            self.spark.sql(f"CREATE TABLE {name} USING delta LOCATION '{copy}'")
            if warm:
                self.spark.sql(f"SELECT count(*) FROM {name}").collect()
            sql = statement.format(name)
            started = time.monotonic()
            if who == "ours":
                assert run_on_delta(self.spark, SqlText(sql), Stores({})) is not None, sql
            else:
                self.spark.sql(sql).collect()
            seconds[who] = time.monotonic() - started
            names[who] = (name, copy)
        same = [self._checksum(n) for n, _ in names.values()]
        if same[0] != same[1]:
            raise RuntimeError(f"different rows after {statement}: {same}")
        for name, copy in names.values():
            self.spark.sql(f"DROP TABLE {name}")
            shutil.rmtree(copy)
        return seconds

    def _checksum(self, name: str) -> tuple[int, str]:
        row = self.spark.sql(
            f"SELECT count(*) AS n, sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) AS s FROM {name}"
        )
        found = row.collect()[0]
        return int(found["n"]), str(found["s"])


def run(args: argparse.Namespace) -> dict[str, Any]:
    anchor = Anchor(args.workdir, args.rows, args.files)
    chosen = [w for w in workloads(args.rows) if not w.change_data_feed or args.feed]
    cases: list[tuple[str, str, str]] = []  # (name, mode, statement), base chosen by the name
    for mode in MODES:
        for w in chosen:
            cases.append((w.name, mode, merge_sql(w, "{}", anchor.source(w))))
        cases.append(("update_1pct", mode, "UPDATE {} SET amount = amount + 1 WHERE id % 200 = 14"))
        cases.append(("delete_1pct", mode, "DELETE FROM {} WHERE id % 200 = 28"))
    cases.append(("optimize", "copy-on-write", "OPTIMIZE {}"))
    cases.append(("zorder", "copy-on-write", "OPTIMIZE {} ZORDER BY (amount)"))
    results = []
    if args.only:
        cases = [c for c in cases if c[0] in args.only.split(",")]
    for name, mode, statement in cases:
        feed = name.endswith("_cdf")
        base = anchor.base(mode, small_files=name == "optimize")
        if feed:
            base = _with_feed(anchor, base)
        for variant in args.variants.split(","):
            warm = variant == "warm"
            runs = [
                anchor.pair(base, statement, "ours" if i % 2 == 0 else "delta", warm=warm)
                for i in range(args.runs)
            ]
            ours, theirs = (statistics.median(r[k] for r in runs) for k in ("ours", "delta"))
            results.append(
                {
                    "case": name,
                    "mode": mode,
                    "variant": variant,
                    "ours": ours,
                    "delta": theirs,
                    "ratio": ours / theirs,
                }
            )
            print(
                f"{name:24} {mode:18} {variant:5} ours {ours:7.2f} s  Delta {theirs:7.2f} s"
                f"  {ours / theirs:5.2f}x",
                flush=True,
            )
    return {
        "rows": args.rows,
        "files": args.files,
        "runs": args.runs,
        "variants": args.variants,
        "machine": describe_machine(),
        "results": results,
    }


def _with_feed(anchor: Anchor, base: str) -> str:
    path = base + "_cdf"
    if not os.path.exists(path):
        shutil.copytree(base, path)
        from dbt.adapters.deltamerge.delta import Stores
        from dbt.adapters.deltamerge.statements.parse.text import SqlText
        from dbt.adapters.deltamerge.statements.run.statement import run_on_delta

        name = f"anchor.feed_{os.path.basename(base)}"
        anchor.spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING delta LOCATION '{path}'")
        run_on_delta(
            anchor.spark,
            SqlText(f"ALTER TABLE {name} SET TBLPROPERTIES (delta.enableChangeDataFeed = true)"),
            Stores({}),  # a local table
        )
    return path


def section(found: dict[str, Any], start: str = START, end: str = END) -> str:
    lines = [
        start,
        f"Ours against Delta Lake 4.4.0's own commands (`{DELTA}`) in one warm embedded session, "
        f"{found['rows']:,} rows in {found['files']} files, the same SQL on fresh copies of one table, "
        f"median of {found['runs']} runs alternating who runs first (`python -m benchmarks.delta_anchor`). "
        "Both results hold the same rows (checked after every pair). Variant: cold = a fresh copy, "
        "registered and the statement run at once; warm = the copy read once first (`SELECT "
        "count(*)`), as a long-running cluster has its tables: Delta keeps the snapshot it loaded, "
        "ours keeps none between statements (delta-rs reads the log at each).",
        "",
        "| workload | mode | variant | ours (s) | Delta (s) | ours / Delta |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for r in found["results"]:
        lines.append(
            f"| {r['case']} | {r['mode']} | {r.get('variant', 'cold')} | {r['ours']:.2f} | {r['delta']:.2f} "
            f"| {r['ratio']:.2f}x |"
        )
    lines += ["", *found["machine"], end]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--feed", action="store_true", help="also the change data feed workloads")
    parser.add_argument("--variants", default="cold,warm", help="cold, warm or both (comma-separated)")
    parser.add_argument("--only", default="", help="only these workloads (comma-separated names)")
    parser.add_argument("--start", default=START, help="the report section's start marker")
    parser.add_argument("--end", default=END, help="the report section's end marker")
    parser.add_argument("--workdir", default="/tmp/deltamerge-anchor")
    parser.add_argument("--out", default="benchmarks/delta_anchor.json")
    parser.add_argument("--report", default="BENCHMARKS.md")
    args = parser.parse_args(argv)
    found = run(args)
    with open(args.out, "w") as out:
        json.dump(found, out, indent=1)
    if args.report:
        replace_section(args.report, args.start, args.end, section(found, args.start, args.end))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
