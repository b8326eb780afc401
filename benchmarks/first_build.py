"""``python -m benchmarks.first_build``: a CI's first ``dbt build``, ours against dbt-spark (issue 71).

What a CI job runs: a fresh warehouse, one ``dbt build`` of the jaffle_shop-shaped project
(``benchmarks/projects.py``) in an embedded Spark. Ours with ``method: session``; the user's
alternative, dbt-spark's ``method: session`` with Delta Lake's jars (``spark.jars.packages``,
Delta's SQL extension and catalog: ``file_format: delta``, ``incremental_strategy: merge``), in
the same venv (dbt-spark is our base) on the same pyspark. Paired rounds alternating, medians
[ours <= 1.0x]. Writes ``benchmarks/first_build.json`` and the "A CI's first build" section of
BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import projects
from benchmarks.connect import replace_section
from benchmarks.warm import timed

SECTION_START = "<!-- first-build:start -->"
SECTION_END = "<!-- first-build:end -->"
ROOT = Path(__file__).resolve().parent.parent
# The jar Maven Central serves for Delta 4.4 (built for Spark 4.2), as the oracle tier's.
DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"
OURS_PROFILE = """jaffle:
  target: ci
  outputs:
    ci:
      type: deltamerge
      method: session
      schema: jaffle
      warehouse: {warehouse}
      threads: 4
"""
SPARK_PROFILE = """jaffle:
  target: ci
  outputs:
    ci:
      type: spark
      method: session
      host: localhost
      schema: jaffle
      threads: 4
      server_side_parameters:
        spark.jars.packages: "{package}"
        spark.sql.extensions: io.delta.sql.DeltaSparkSessionExtension
        spark.sql.catalog.spark_catalog: org.apache.spark.sql.delta.catalog.DeltaCatalog
        spark.sql.warehouse.dir: "{warehouse}"
        spark.driver.extraJavaOptions: "-Dderby.system.home={warehouse}"
        spark.ui.enabled: "false"
"""


def round_(workdir: str, index: int) -> dict[str, dict[str, float]]:
    """One pair: each side's first build on a fresh copy of the project and warehouse."""
    dbt = str(Path(sys.executable).with_name("dbt"))
    figures = {}
    for side in ("dbt-spark", "ours"):
        root = Path(workdir, f"{side}-{index}")
        shutil.rmtree(root, ignore_errors=True)
        warehouse = root / "warehouse"
        if side == "ours":
            projects.jaffle(root, "ours", OURS_PROFILE.format(warehouse=warehouse))
        else:
            projects.jaffle(root, "duckdb", SPARK_PROFILE.format(warehouse=warehouse, package=DELTA_PACKAGE))
            project = root / "dbt_project.yml"
            text = project.read_text().replace("models:\n", "models:\n  +file_format: delta\n", 1)
            project.write_text(text + "seeds:\n  +file_format: delta\n")
        warehouse.mkdir(parents=True, exist_ok=True)
        figures[side] = timed([dbt, "build", "--profiles-dir", "."], str(root))
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.first_build", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "deltamerge-first-build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT))
    args = parser.parse_args(argv)
    workdir = os.path.abspath(args.workdir)
    os.makedirs(workdir, exist_ok=True)
    os.environ.pop("PYTHONPATH", None)
    round_(workdir, 0)  # Ivy's cache filled, both projects parsed once: not measured
    records: dict[str, list[dict[str, float]]] = {"dbt-spark": [], "ours": []}
    for index in range(1, args.rounds + 1):
        for side, figures in round_(workdir, index).items():
            records[side].append(figures)
    median = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for side, rs in records.items()}
    results: dict[str, Any] = {"records": records, "median": median, "delta": DELTA_PACKAGE}
    record = os.path.join(args.out, "benchmarks", "first_build.json")
    with open(record, "w") as f:
        json.dump(results, f, indent=1)
    replace_section(os.path.join(args.out, "BENCHMARKS.md"), SECTION_START, SECTION_END, section(results))
    print(section(results))
    return 0


def section(results: dict[str, Any]) -> str:
    """The BENCHMARKS.md section of one run."""
    ours, spark = results["median"]["ours"], results["median"]["dbt-spark"]
    n = len(results["records"]["ours"])
    return "\n".join(
        [
            SECTION_START,
            "### A CI's first build: `method: session` against dbt-spark's session with Delta's jars",
            "",
            f"`python -m benchmarks.first_build` (medians of {n} paired rounds, each on a fresh copy and "
            "warehouse; the jaffle_shop-shaped project, 4 threads). dbt-spark: `type: spark, method: "
            f"session`, `{results['delta']}` from Ivy's cache, Delta's extension and catalog, "
            "`file_format: delta`, `incremental_strategy: merge`; same venv, same pyspark.",
            "",
            "| first `dbt build` | ours | dbt-spark + Delta | ratio | target |",
            "| --- | --- | --- | --- | --- |",
            f"| wall | {ours['wall']:.1f} s | {spark['wall']:.1f} s "
            f"| {ours['wall'] / spark['wall']:.2f}x | <= 1.0x |",
            f"| peak memory | {ours['peak_mib']:.0f} MiB | {spark['peak_mib']:.0f} MiB | | |",
            "",
            SECTION_END,
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
