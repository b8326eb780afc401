"""Spark with Apache Iceberg's own Spark runtime, reading tables through an Iceberg REST catalog.

Iceberg's runtime is built for one Spark minor version (``iceberg-spark-runtime-4.1_2.13``): it
runs here in a process of its own, on a pyspark of that version in a virtualenv of its own (made
once under ``~/.cache/dbt-deltamerge``, ``DELTAMERGE_CACHE`` moves it; the runtime jar downloaded
beside it, its SHA-1 checked). ``read_through_catalog`` returns the rows of a table at its current
snapshot or at a given one (Iceberg time travel), as that engine reads them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.s3server import cache_dir, maven_jar

PYSPARK = "4.1.4"
RUNTIME = "iceberg-spark-runtime-4.1_2.13"
RUNTIME_VERSION = "1.11.0"
URL = f"https://repo1.maven.org/maven2/org/apache/iceberg/{RUNTIME}/{RUNTIME_VERSION}/{RUNTIME}-{RUNTIME_VERSION}.jar"

READ = """
import json, sys
from pyspark.sql import SparkSession
args = json.loads(sys.argv[1])
builder = SparkSession.builder.master("local[1]").appName("iceberg-reader")
conf = {
    "spark.jars": args["jar"],
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
    "spark.sql.catalog.cat": "org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.cat.type": "rest",
    **{f"spark.sql.catalog.cat.{k}": v for k, v in args["catalog"].items()},
}
for key, value in conf.items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
out = {}
for label, query in args["queries"].items():
    out[label] = [list(r) for r in spark.sql(query).collect()]
print("ROWS " + json.dumps(out, default=str))
"""


def reader_python() -> Path:
    """The python of a virtualenv with pyspark ``PYSPARK`` (made on first use)."""
    folder = cache_dir().parent / f"iceberg-spark-{PYSPARK}"
    python = folder / "bin" / "python"
    if (folder / ".complete").exists():
        return python
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", f"pyspark=={PYSPARK}"], check=True)
    (folder / ".complete").touch()
    return python


def runtime_jar() -> Path:
    """Iceberg's Spark runtime jar, downloaded into the cache on first use (its SHA-1 checked)."""
    return maven_jar(URL)


def read_through_catalog(catalog: dict[str, str], queries: dict[str, str]) -> dict[str, list[list[Any]]]:
    """Run ``queries`` (SQL naming the catalog ``cat``) on Spark with Iceberg's runtime; their rows."""
    args = {"jar": str(runtime_jar()), "catalog": catalog, "queries": queries}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    done = subprocess.run(
        [str(reader_python()), "-c", READ, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("ROWS ")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"Iceberg's Spark reader failed ({done.returncode}): {done.stderr[-3000:]}")
    return json.loads(lines[-1][5:])  # type: ignore[no-any-return]
