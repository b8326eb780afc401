"""The example project through the real `dbt` CLI, then read back from a fresh process.

Each invocation is its own process, as a user's shell would run them, on the project's default
target (``method: server``): the first starts the warehouse's warm local server, the second
reuses it; the catalog binding must survive between invocations against the same warehouse.
On the Connect backend the project's ``cluster`` target points at the test cluster instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.spark import server
from tests.conftest import ON_CONNECT

ROOT = Path(__file__).resolve().parents[2]
DBT = str(Path(sys.executable).with_name("dbt"))

READ_CATALOG = """
import json, sys
from dbt.adapters.deltamerge.spark.connect import connect_session
spark = connect_session(sys.argv[2], {})
rows = spark.sql("select order_date, orders, revenue from shop.daily_revenue order by order_date").collect()
print(json.dumps([[str(r.order_date), r.orders, float(r.revenue)] for r in rows]))
"""


def run(*args: str, cwd: Path, both: bool = False, batch: str = "1") -> str:
    env = {**os.environ, "SHOP_BATCH": batch}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout + done.stderr if both else done.stdout


@pytest.mark.connect
def test_example_project_across_processes(tmp_path, request):
    project = tmp_path / "shop"
    shutil.copytree(ROOT / "examples" / "shop", project, ignore=shutil.ignore_patterns("warehouse", "target"))
    warehouse, url, target = project / "warehouse", "", "server"
    if ON_CONNECT:
        cluster = request.getfixturevalue("cluster")
        warehouse, url, target = Path(cluster.warehouse), cluster.connect_url, "cluster"
        profiles = project / "profiles.yml"
        profiles.write_text(profiles.read_text().replace("sc://localhost:15002", url))
    dbt, options = (DBT,), ("--profiles-dir", ".", "--target", target)
    try:
        # Two invocations (each a new client): seeds and batch 1, then batch 2 and the tests.
        first = run(*dbt, "build", "--exclude", "resource_type:test", *options, cwd=project, both=True)
        # Spark's own log (start-up warnings, task stack dumps) goes to the server's, not the console.
        assert "log4j" not in first and " WARN " not in first and "\tat org.apache" not in first
        out = run(*dbt, "build", "--exclude", "resource_type:seed", *options, cwd=project, batch="2")
        if not ON_CONNECT:
            assert "Starting a warm local Spark server" in first and "Starting a warm" not in out
            state = server.status(str(warehouse))
            assert state is not None
            url = state.url
        _check_tables(warehouse, project, url, out)
    finally:
        if not ON_CONNECT:
            server.stop(str(warehouse))


def _check_tables(warehouse: Path, project: Path, url: str, out: str) -> None:
    assert "OK MERGE: Delta version 1" in out and "OK WRITE: Delta version 1" in out
    assert "PASS=13 WARN=0 ERROR=0 SKIP=0" in out  # 7 models and their 6 data tests

    table = warehouse / "shop.db" / "daily_revenue"
    delta_rows = sorted(
        [str(r["order_date"]), r["orders"], float(r["revenue"])]
        for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()
    )
    assert [r[:2] for r in delta_rows] == [
        ["2026-01-01", 2],
        ["2026-01-02", 1],  # order 4 was cancelled: deleted by the merge
        ["2026-01-03", 2],
        ["2026-01-04", 1],  # order 8 was cancelled before it was ever inserted
    ]
    # v1 rewrote only the days from 2026-01-02: two partitions replaced, one added
    history = DeltaTable(str(table)).history()
    assert history[0]["operationMetrics"]["numRemovedFiles"] == "2"
    orders = DeltaTable(str(warehouse / "shop.db" / "orders"))
    merge = orders.history()[0]
    assert merge["operation"] == "MERGE"
    assert {
        k: merge["operationMetrics"][k]
        for k in ("numTargetRowsInserted", "numTargetRowsUpdated", "numTargetRowsDeleted")
    } == {"numTargetRowsInserted": "2", "numTargetRowsUpdated": "1", "numTargetRowsDeleted": "1"}
    # CDC apply: a late event and an event older than a delete are ignored (SCD 1), placed (SCD 2).
    latest = DeltaTable(str(warehouse / "shop.db" / "customers_latest")).to_pyarrow_table().to_pylist()
    assert sorted((r["customer_id"], r["name"], r["tier"]) for r in latest) == [
        (1, "Ada", "silver"),
        (2, "Grace H.", "gold"),
        (4, "Ken", "bronze"),
    ]
    tiers = DeltaTable(str(warehouse / "shop.db" / "customer_tiers")).to_pyarrow_table().to_pylist()
    assert sorted(
        (r["customer_id"], r["name"], r["tier"], r["__START_AT"], r["__END_AT"]) for r in tiers
    ) == [
        (1, "Ada", "bronze", 1, 2),
        (1, "Ada", "gold", 2, 3),
        (1, "Ada", "silver", 3, None),
        (2, "Grace H.", "gold", 2, None),
        (3, "Linus", "bronze", 4, 5),
        (3, "Linus", "silver", 5, 6),
        (4, "Ken", "bronze", 7, None),
    ]
    seen = json.loads(run(sys.executable, "-c", READ_CATALOG, str(warehouse), url, cwd=project))
    assert seen == delta_rows
