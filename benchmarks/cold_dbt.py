"""One cold ``dbt run`` end to end: a new dbt process, dbt parse, the model's merge.

``embedded``: the process starts its own JVM and Spark session; ``server``: it is a Spark
Connect client of a warm local server (``deltamerge-server``), whose start is not timed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from benchmarks.measure import PeakMemory, commit_files, fresh_copy, latest_version

if TYPE_CHECKING:
    from benchmarks.settings import Settings
    from benchmarks.workloads import Workload

PROJECT = """name: deltamerge_bench
version: "1.0"
profile: deltamerge_bench
model-paths: ["models"]
config-version: 2
flags:
  send_anonymous_usage_stats: false
"""

PROFILE = """deltamerge_bench:
  target: embedded
  outputs:
    embedded:
      type: deltamerge
      method: session
      schema: {schema}
      warehouse: {warehouse}
    server:
      type: deltamerge
      method: connect
      host: {url}
      schema: {schema}
"""

MODEL = """{{{{ config(
    materialized='incremental',
    incremental_strategy='delta_merge',
    location_root='{tables}',
    {config}
) }}}}
select * from parquet.`{source}`
"""


def model_sql(workload: Workload, *, tables: str, source: str) -> str:
    """The workload's merge as a dbt model over the source parquet."""
    # Every clause list, empty ones too: an absent list would be dbt's default (update, insert).
    config = ",\n    ".join(f"{k}={v!r}" for k, v in workload.config.items())
    return MODEL.format(tables=tables, config=config, source=source)


def cold_dbt_run(
    settings: Settings, workload: Workload, base: str, source: str, *, target: str = "embedded", url: str = ""
) -> dict[str, Any]:
    """Time ``dbt run`` of the workload's model on a fresh copy of ``base`` (Delta log, no catalog entry).

    Each workload has its own schema, so a server's catalog never holds another workload's table.
    """
    project = os.path.join(settings.workdir, f"dbt_project_{target}")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "models"))
    tables = os.path.join(project, "tables")
    table = fresh_copy(base, os.path.join(tables, "bench_target"))
    with open(os.path.join(project, "dbt_project.yml"), "w") as f:
        f.write(PROJECT)
    with open(os.path.join(project, "profiles.yml"), "w") as f:
        warehouse = os.path.join(project, "warehouse")
        f.write(PROFILE.format(warehouse=warehouse, url=url, schema=f"bench_{workload.name}"))
    with open(os.path.join(project, "models", "bench_target.sql"), "w") as f:
        f.write(model_sql(workload, tables=tables, source=source))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    started = time.monotonic()
    process = subprocess.Popen(
        [dbt, "run", "--target", target, "--project-dir", project, "--profiles-dir", project],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=project,
    )
    with PeakMemory(process.pid) as peak:
        output, _ = process.communicate()
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"cold dbt run ({workload.name}, {target}) failed:\n{output[-3000:]}")
    version = latest_version(table)
    written = commit_files(table, version)
    metrics = _commit_metrics(table, version)
    with open(os.path.join(project, "target", "run_results.json")) as f:
        model_seconds = float(json.load(f)["results"][0]["execution_time"])
    return {
        "workload": workload.name,
        "target": target,
        "seconds": seconds,
        "model_seconds": model_seconds,
        "peak_bytes": peak.peak,
        "version": version,
        "files_removed": len(written.removed),
        "files_added": written.added,
        "merge_ms": int(metrics.get("executionTimeMs", 0)),
        "table": table,
    }


def _commit_metrics(table: str, version: int) -> dict[str, Any]:
    with open(os.path.join(table, "_delta_log", f"{version:020d}.json")) as log:
        for line in log:
            action = json.loads(line)
            if "commitInfo" in action:
                return dict(action["commitInfo"].get("operationMetrics", {}))
    return {}
