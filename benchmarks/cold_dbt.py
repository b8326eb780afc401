"""One cold ``dbt run`` end to end: a new process, JVM start, dbt parse, the model's merge."""

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
    from benchmarks.harness import Settings
    from benchmarks.workloads import Workload

PROJECT = """name: deltamerge_bench
version: "1.0"
profile: deltamerge_bench
model-paths: ["models"]
"""

PROFILE = """deltamerge_bench:
  target: local
  outputs:
    local:
      type: deltamerge
      method: session
      schema: bench
      warehouse: {warehouse}
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
    keys = ("unique_key", "source_alias", "target_alias", "when_matched", "when_not_matched")
    config = ",\n    ".join(f"{k}={workload.config[k]!r}" for k in keys if workload.config.get(k))
    return MODEL.format(tables=tables, config=config, source=source)


def cold_dbt_run(settings: Settings, workload: Workload, base: str, source: str) -> dict[str, Any]:
    """Time ``dbt run`` of the workload's model on a fresh copy of ``base`` (Delta log, no catalog entry)."""
    project = os.path.join(settings.workdir, "dbt_project")
    shutil.rmtree(project, ignore_errors=True)
    os.makedirs(os.path.join(project, "models"))
    tables = os.path.join(project, "tables")
    table = fresh_copy(base, os.path.join(tables, "bench_target"))
    with open(os.path.join(project, "dbt_project.yml"), "w") as f:
        f.write(PROJECT)
    with open(os.path.join(project, "profiles.yml"), "w") as f:
        f.write(PROFILE.format(warehouse=os.path.join(project, "warehouse")))
    with open(os.path.join(project, "models", "bench_target.sql"), "w") as f:
        f.write(model_sql(workload, tables=tables, source=source))
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    started = time.monotonic()
    process = subprocess.Popen(
        [dbt, "run", "--project-dir", project, "--profiles-dir", project],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    with PeakMemory(process.pid) as peak:
        output, _ = process.communicate()
    seconds = time.monotonic() - started
    if process.returncode != 0:
        raise RuntimeError(f"cold dbt run failed:\n{output[-3000:]}")
    version = latest_version(table)
    written = commit_files(table, version)
    metrics = _commit_metrics(table, version)
    return {
        "workload": workload.name,
        "seconds": seconds,
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
