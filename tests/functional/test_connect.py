"""Spark Connect (`method: connect`): dbt on a real standalone cluster, and quiet, clear failures."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

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
        before = cluster.executor_task_lines("dbt-deltamerge server")
        run_dbt(["run"])
        results = run_dbt(["run", "--vars", "{lo: 50, hi: 150, shift: 1}"])
        path = table_path(project, "merged")
        table = DeltaTable(path)
        assert table.version() == 1 and len(rows(path)) == 150
        assert rows(path)[60] == {"id": 60, "v": "v61"}
        response = results.results[0].adapter_response
        assert response["numTargetRowsUpdated"] == 50 and response["numTargetRowsInserted"] == 50
        assert table.history()[0]["operation"] == "MERGE"
        # Tasks ran in the worker's executor JVM of the server's application.
        assert cluster.executor_task_lines("dbt-deltamerge server") > before
        assert "dbt-deltamerge server" in [a["name"] for a in cluster.master_state()["activeapps"]]


@pytest.fixture
def on_cluster(request):
    """The test cluster; these tests need the Connect backend (DELTAMERGE_TEST_BACKEND=connect)."""
    if not ON_CONNECT:
        pytest.skip("needs the test cluster (DELTAMERGE_TEST_BACKEND=connect)")
    return request.getfixturevalue("cluster")


def _dbt_in_a_new_process(
    project_dir: str, profile: dict | None, *args: str
) -> subprocess.CompletedProcess[str]:
    if profile is not None:
        _write_profile(project_dir, profile)
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


def _write_profile(project_dir: str, profile: dict) -> None:
    lines = ["test:", "  target: t", "  outputs:", "    t:"]
    lines += [f"      {k}: {v}" for k, v in profile.items()]
    with open(os.path.join(project_dir, "profiles.yml"), "w") as out:
        out.write("\n".join(lines) + "\n")


_RUNNER = """
import sys
from dbt.cli.main import dbtRunner

project = sys.argv[1]
for args in (a.split("\\x1f") for a in sys.argv[2:]):
    print("=== dbt", *args, flush=True)
    if not dbtRunner().invoke([*args, "--project-dir", project, "--profiles-dir", project]).success:
        sys.exit(1)
"""


def _dbt_runs_in_one_process(
    project_dir: str, profile: dict, *runs: list[str]
) -> subprocess.CompletedProcess[str]:
    """dbt commands one after another in one new Python process: one embedded session for all."""
    _write_profile(project_dir, profile)
    return subprocess.run(
        [sys.executable, "-c", _RUNNER, project_dir, *("\x1f".join(args) for args in runs)],
        capture_output=True,
        text=True,
        timeout=600,
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
    assert "XSDB6" not in output and "`method: server`" in output


SESSION_PROGRAM = """
import sys, time
from dbt.adapters.deltamerge.spark.embedded import start_session
start_session(sys.argv[1], {"spark.master": "local[1]", "spark.ui.enabled": "false"})
print("started", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.mark.skipif(ON_CONNECT, reason="embedded sessions in processes of their own")
def test_two_sessions_starting_at_once_on_a_warehouse_the_second_is_refused_before_its_jvm(tmp_path):
    """The first process holds the warehouse's session lock from before its JVM starts; a second one
    coming then (seconds before the first could open the metastore) gets the one-line message."""
    from pathlib import Path

    from dbt.adapters.deltamerge.spark.metastore import SESSION_LOCK, lock_holder

    warehouse = str(tmp_path / "warehouse")
    first = subprocess.Popen(
        [sys.executable, "-c", SESSION_PROGRAM, warehouse, "120"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while lock_holder(Path(warehouse) / SESSION_LOCK) != first.pid:
            assert first.poll() is None and time.monotonic() < deadline, "the first never took the lock"
            time.sleep(0.05)
        second = subprocess.run(
            [sys.executable, "-c", SESSION_PROGRAM, warehouse, "0"],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        first.kill()
        first.wait()
    output = second.stdout + second.stderr
    assert second.returncode != 0 and "started" not in output, output[-3000:]
    assert f"The warehouse {warehouse} is in use by another process (pid {first.pid}" in output
    assert "HiveException" not in output and "XSDB6" not in output


@pytest.mark.connect
def test_dbt_show_while_a_dbt_run_is_going(tmp_path, on_cluster):
    """Two dbt commands at once on one warehouse: the run is held mid-write by the commit gate."""
    url = on_cluster.connect_url
    project = _project(tmp_path)
    (tmp_path / "models" / "held.sql").write_text("{{ config(materialized='table') }} select 2 as id")
    profile = {"type": "deltamerge", "method": "connect", "host": url, "schema": "show_during_run"}
    _dbt_in_a_new_process(project, profile, "parse")
    gate = tmp_path / "gate"
    gate.mkdir()
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    running = subprocess.Popen(
        [dbt, "run", "--select", "held", "--project-dir", project, "--profiles-dir", project],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=project,
        env={**os.environ, "DELTAMERGE_COMMIT_GATE": f"{gate}:second"},
    )
    try:
        while not (gate / "held.second-ready").exists():  # the run wrote its files and waits to commit
            assert running.poll() is None, running.communicate()[0][-3000:]
            time.sleep(0.1)
        shown = _dbt_in_a_new_process(
            project, None, "show", "--inline", "select 41 + 1 as answer", "--target-path", "target_show"
        )
        held = running.poll() is None
    finally:
        (gate / "held.first-done").touch()
        out, _ = running.communicate(timeout=300)
    assert shown.returncode == 0 and "42" in shown.stdout, shown.stdout[-2000:]
    assert held  # the show ran while the run was inside its write
    assert running.returncode == 0 and "OK CREATE TABLE AS SELECT: Delta version 0" in out, out[-2000:]


@pytest.mark.connect
def test_an_embedded_session_drives_a_standalone_cluster(tmp_path, on_cluster):
    """``method: session`` with ``spark.master``: the driver in dbt, the tasks on the cluster's executors."""
    from tests.cluster import APP_RESOURCES

    cluster = on_cluster
    project = _project(tmp_path)
    tables = tmp_path / "tables"
    (tmp_path / "models" / "merged.sql").write_text(
        MERGE.replace("tblproperties=", f"location_root='{tables}', tblproperties=")
    )
    settings = {"spark.master": cluster.master_url, "spark.app.name": "dbt-on-standalone", **APP_RESOURCES}
    profile = {
        "type": "deltamerge",
        "method": "session",
        "schema": "standalone",
        "warehouse": str(tmp_path / "warehouse"),
        "server_side_parameters": "{" + ", ".join(f'"{k}": "{v}"' for k, v in settings.items()) + "}",
    }
    # Both runs in one dbt process (dbt's programmatic runner, as the demo does): one driver JVM.
    runs = _dbt_runs_in_one_process(
        project,
        profile,
        ["run", "--select", "merged"],
        ["run", "--select", "merged", "--vars", "{lo: 50, hi: 150, shift: 1}"],
    )
    assert runs.returncode == 0, runs.stdout[-3000:]
    second = runs.stdout.split("=== dbt run --select merged --vars")[1]
    assert "OK MERGE: Delta version 1" in second
    path = str(tables / "merged")
    assert len(rows(path)) == 150 and rows(path)[60] == {"id": 60, "v": "v61"}
    assert DeltaTable(path).history()[0]["operationMetrics"]["numTargetRowsUpdated"] == "50"
    assert cluster.executor_task_lines("dbt-on-standalone") > 0  # executors of the dbt process's application


@pytest.mark.connect
def test_a_connect_dbt_process_starts_no_jvm(tmp_path, on_cluster):
    """With no Java reachable at all, `method: connect` still merges and tests."""
    url = on_cluster.connect_url
    project = _project(tmp_path)
    tables = tmp_path / "tables"
    (tmp_path / "models" / "merged.sql").write_text(
        MERGE.replace("tblproperties=", f"location_root='{tables}', tblproperties=")
    )
    (tmp_path / "models" / "schema.yml").write_text(
        "version: 2\nmodels:\n  - name: merged\n"
        "    columns:\n      - name: id\n        data_tests: [unique]\n"
    )
    profile = {"type": "deltamerge", "method": "connect", "host": url, "schema": "no_jvm"}
    _dbt_in_a_new_process(project, profile, "parse")
    no_java = {
        **{k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")},
        "JAVA_HOME": str(tmp_path / "no-java"),
        "PATH": os.path.dirname(sys.executable),  # the venv's bin only: no `java` on the PATH
    }
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    for args in (["run"], ["run", "--vars", "{lo: 50, hi: 150, shift: 1}"], ["test"]):
        done = subprocess.run(
            [dbt, *args, "--select", "merged", "--project-dir", project, "--profiles-dir", project],
            capture_output=True,
            text=True,
            cwd=project,
            env=no_java,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert DeltaTable(str(tables / "merged")).history()[0]["operation"] == "MERGE"
    assert len(rows(str(tables / "merged"))) == 150
    failed = subprocess.run(
        [
            dbt,
            "show",
            "--inline",
            "select * from no_jvm.missing",
            "--project-dir",
            project,
            "--profiles-dir",
            project,
        ],
        capture_output=True,
        text=True,
        cwd=project,
        env=no_java,
        timeout=300,
    )
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0 and "TABLE_OR_VIEW_NOT_FOUND" in output
    # One error, said once: no server stack trace, no pyspark JSON log of the same error.
    assert "JVM stacktrace" not in output and "SQLQueryContextLogger" not in output
    assert "\tat org.apache" not in output
