"""A Spark cluster that shares no disk with dbt: the tables live on S3 and nowhere else.

Six hosts (``tests/netcluster.py``: network namespaces, each with a private ``/tmp``): S3Proxy, a
standalone master, two workers, the cluster's Spark Connect server and the dbt host. dbt runs on
its host as a user's CLI would (``method: connect``, the S3 variables in its environment): a model
created then merged, a snapshot taken twice, an OPTIMIZE. The tables are then read back from the
bucket by delta-rs and checked by the validator, each worker's executor must have run tasks, and no
host's disk may hold a data file, a log file or a manifest of any table.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from tests import netcluster, validator

pytestmark = pytest.mark.s3

WAREHOUSE = "s3a://lake/warehouse"
SCHEMA = "analytics"

MODEL = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
{% if var('round', 1) == 1 %}
select * from values (1, 'new', 10), (2, 'new', 20), (3, 'new', 30) as t(id, status, amount)
{% else %}
select * from values (2, 'shipped', 20), (4, 'new', 40) as t(id, status, amount)
{% endif %}
"""

SNAPSHOT = """snapshots:
  - name: orders_snapshot
    relation: ref('orders')
    config:
      unique_key: id
      strategy: check
      check_cols: all
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    missing = netcluster.unavailable()
    if missing is not None:
        pytest.skip(f"the no-shared-disk cluster cannot be built here: {missing}")
    running = netcluster.start_no_shared_disk_cluster(tmp_path_factory.mktemp("hosts"), WAREHOUSE)
    yield running
    running.stop()


def _project(host: netcluster.Host, connect_url: str) -> None:
    project = host.folder / "project"
    (project / "models").mkdir(parents=True)
    (project / "snapshots").mkdir()
    (project / "dbt_project.yml").write_text("name: lake\nversion: '1.0'\nconfig-version: 2\nprofile: lake\n")
    (project / "profiles.yml").write_text(
        "lake:\n  target: cluster\n  outputs:\n    cluster:\n      type: deltamerge\n"
        f"      method: connect\n      host: {connect_url}\n      schema: {SCHEMA}\n      threads: 1\n"
    )
    (project / "models" / "orders.sql").write_text(MODEL)
    (project / "snapshots" / "orders_snapshot.yml").write_text(SNAPSHOT)


def _dbt(cluster: netcluster.NoSharedDiskCluster, *args: str) -> str:
    """One dbt command on the dbt host (its own process, as a user runs it); its output."""
    host = cluster.host("dbt")
    env = {**cluster.environment(), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    argv = [str(Path(netcluster.sys.executable).parent / "dbt"), *args]
    argv += ["--project-dir", "/tmp/project", "--profiles-dir", "/tmp/project"]
    code, output = host.run(argv, env, "dbt.log", timeout=600)
    assert code == 0, output[-4000:]
    return output


def _table(cluster: netcluster.NoSharedDiskCluster, name: str) -> DeltaTable:
    return DeltaTable(f"{WAREHOUSE}/{SCHEMA}.db/{name}", storage_options=cluster.options())


def _rows(table: DeltaTable) -> list[dict]:
    query = QueryBuilder().register("t", table).execute("select * from t")
    return pa.table(query.read_all()).to_pylist()


def _table_files_on(folder: Path) -> list[str]:
    """Files of a Delta table on a host's disk: data, log, checkpoint, manifest or vector files."""
    found = []
    for path in folder.rglob("*"):
        parts = set(path.parts)
        if path.is_file() and (
            path.suffix in (".parquet", ".crc", ".bin")
            or parts & {"_delta_log", "_spark_metadata", "_change_data"}
        ):
            found.append(str(path.relative_to(folder)))
    return found


def test_merge_snapshot_and_optimize_on_a_cluster_sharing_no_disk(cluster, monkeypatch):
    for key, value in cluster.options().items():  # the test's own readers: the cluster's S3 server
        monkeypatch.setenv(key, value)
    _project(cluster.host("dbt"), cluster.connect_url)

    _dbt(cluster, "run")
    _dbt(cluster, "snapshot")
    _dbt(cluster, "run", "--vars", "{round: 2}")
    _dbt(cluster, "snapshot")
    _dbt(cluster, "run-operation", "optimize", "--args", f"{{relation: {SCHEMA}.orders}}")

    orders = _table(cluster, "orders")
    assert sorted((r["id"], r["status"]) for r in _rows(orders)) == [
        (1, "new"), (2, "shipped"), (3, "new"), (4, "new"),
    ]  # fmt: skip
    history = {h["version"]: h for h in orders.history()}
    assert [history[v]["operation"] for v in sorted(history)] == [
        "CREATE TABLE AS SELECT",
        "MERGE",
        "OPTIMIZE",
    ]
    merge = history[1]["operationMetrics"]
    assert (merge["numTargetRowsInserted"], merge["numTargetRowsUpdated"]) == ("1", "1"), merge
    snapshot = _rows(_table(cluster, "orders_snapshot"))
    versions = sorted((r["id"], r["status"], r["dbt_valid_to"] is None) for r in snapshot)
    assert versions == [
        (1, "new", True), (2, "new", False), (2, "shipped", True), (3, "new", True), (4, "new", True),
    ]  # fmt: skip
    for name in ("orders", "orders_snapshot"):
        assert validator.problems(f"{WAREHOUSE}/{SCHEMA}.db/{name}") == []

    # Both workers' executors ran tasks: the work was the cluster's, not the driver's.
    for worker in ("worker1", "worker2"):
        logs = list((cluster.host(worker).folder / "work").glob("app-*/*/stderr"))
        assert sum(log.read_text(errors="replace").count("Running task") for log in logs) > 0, worker
    # The tables are in the bucket, and no host's disk holds a file of one.
    assert (cluster.bucket_folder("lake") / "warehouse" / f"{SCHEMA}.db" / "orders" / "_delta_log").is_dir()
    for name in ("master", "worker1", "worker2", "connect", "dbt"):
        assert _table_files_on(cluster.host(name).folder) == [], name
    assert json.loads((cluster.host("dbt").folder / "project" / "target" / "run_results.json").read_text())
