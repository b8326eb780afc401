"""Spark Connect (`method: connect`): dbt on a real standalone cluster, and quiet, clear failures."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from tests.conftest import ON_CONNECT
from tests.functional.helpers import rows, table_path

MERGE = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
          tblproperties={'delta.enableChangeDataFeed': 'true'}) }}
select id, concat('v', cast(id + {{ var('shift', 0) }} as string)) as v
from range({{ var('lo', 0) }}, {{ var('hi', 100) }})
"""


@pytest.mark.connect
class TestMergeOnTheCluster:
    @pytest.fixture(scope="class")
    def models(self):
        return {"merged.sql": MERGE}

    def test_tasks_run_on_the_cluster_executors_and_the_table_is_delta(self, project, cluster):
        before = cluster.executor_task_lines()
        run_dbt(["run"])
        results = run_dbt(["run", "--vars", "{lo: 50, hi: 150, shift: 1}"])
        path = table_path(project, "merged")
        table = DeltaTable(path)
        assert table.version() == 1 and len(rows(path)) == 150
        assert rows(path)[60] == {"id": 60, "v": "v61"}
        response = results.results[0].adapter_response
        assert response["numTargetRowsUpdated"] == 50 and response["numTargetRowsInserted"] == 50
        assert table.history()[0]["operation"] == "MERGE"
        assert cluster.executor_task_lines() > before  # tasks ran in the worker's executor JVM
        app = cluster.master_state()["activeapps"]
        assert [a["name"] for a in app] == ["dbt-deltamerge server"]


def _dbt_in_a_new_process(project_dir: str, profile: dict, *args: str) -> subprocess.CompletedProcess[str]:
    lines = ["test:", "  target: t", "  outputs:", "    t:"]
    lines += [f"      {k}: {v}" for k, v in profile.items()]
    with open(os.path.join(project_dir, "profiles.yml"), "w") as out:
        out.write("\n".join(lines) + "\n")
    return subprocess.run(
        [
            os.path.join(os.path.dirname(sys.executable), "dbt"),
            *args,
            "--project-dir",
            project_dir,
            "--profiles-dir",
            project_dir,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=project_dir,
    )


def _project(tmp_path) -> str:
    (tmp_path / "models").mkdir()
    (tmp_path / "dbt_project.yml").write_text("name: p\nversion: '1.0'\nconfig-version: 2\nprofile: test\n")
    (tmp_path / "models" / "one.sql").write_text("select 1 as id")
    return str(tmp_path)


def test_an_unreachable_connect_url_fails_naming_it(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    url = f"sc://127.0.0.1:{port}"
    done = _dbt_in_a_new_process(
        _project(tmp_path), {"type": "deltamerge", "method": "connect", "host": url, "schema": "s"}, "run"
    )
    assert done.returncode != 0
    assert f"Cannot reach the Spark Connect server at {url}" in done.stdout
    assert "Traceback" not in done.stdout


def test_a_connect_profile_needs_a_connect_url(tmp_path):
    done = _dbt_in_a_new_process(
        _project(tmp_path),
        {"type": "deltamerge", "method": "connect", "host": "localhost", "schema": "s"},
        "debug",
    )
    assert done.returncode != 0
    assert "needs `host` to be a Spark Connect URL like sc://host:15002" in done.stdout


@pytest.mark.skipif(ON_CONNECT, reason="the embedded metastore of this process's warehouse")
def test_a_second_process_on_a_warehouse_in_use_says_so_in_one_line(tmp_path, spark, warehouse):
    spark.sql("show databases").collect()  # this process holds the warehouse's metastore
    done = _dbt_in_a_new_process(
        _project(tmp_path),
        {"type": "deltamerge", "method": "session", "schema": "s", "warehouse": warehouse},
        "run",
    )
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert f"The warehouse {warehouse} is in use by another process (pid {os.getpid()}" in output
    assert "XSDB6" not in output and "deltamerge-server start" in output
