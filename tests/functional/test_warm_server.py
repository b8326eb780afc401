"""``method: server``: the warm local server's life cycle, with real dbt processes and real servers.

One scenario, in order (each server start is a real JVM, so they are few): a stale state file
whose port another program now holds; two first commands at once (one server starts, both
use it); reuse; a server of another pyspark replaced, the new one stopping when idle; a JVM
crash found by the supervisor. Every step is checked on processes, state files, Delta versions
and dbt's output.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.spark import processes, server

# Servers of its own: the Connect tier's (``make test-connect``), not ``make test``'s.
pytestmark = pytest.mark.server

DBT = str(Path(sys.executable).with_name("dbt"))
CLI = str(Path(sys.executable).with_name("deltamerge-server"))

PROFILE = """warm:
  target: warm
  outputs:
    warm:
      type: deltamerge
      method: server
      schema: warm
      warehouse: ./warehouse
      server_idle_minutes: "{{ env_var('IDLE_MINUTES', '30') | float }}"
      server_warmup_rounds: "{{ env_var('WARMUP_ROUNDS', '0') | int }}"
      server_side_parameters:
        spark.master: "local[1]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "2"
"""
MODEL = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select id, {{ var('batch', 1) }} as batch from range(5)
"""


def _project(root: Path) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        'name: warm\nversion: "1.0"\nprofile: warm\nconfig-version: 2\n'
        "flags:\n  send_anonymous_usage_stats: false\n"
    )
    (root / "profiles.yml").write_text(PROFILE)
    (root / "models" / "numbers.sql").write_text(MODEL)
    (root / "models" / "others.sql").write_text(MODEL)
    return root


def _dbt(
    project: Path, batch: int, idle: str = "30", select: str = "numbers", warmup: str = "0"
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DBT, "run", "--profiles-dir", ".", "--select", select, "--vars", f"{{batch: {batch}}}"],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "IDLE_MINUTES": idle, "WARMUP_ROUNDS": warmup},
    )  # fmt: skip


SCHEMAS = """
import sys
from dbt.adapters.deltamerge.spark.connect import connect_session
print(sorted(r[0] for r in connect_session(sys.argv[1], {}).sql("show schemas").collect()))
"""


def _schemas(url: str) -> str:
    """The server's schemas, as a Spark Connect client in a process of its own sees them."""
    done = subprocess.run([sys.executable, "-c", SCHEMAS, url], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def _finished(process: subprocess.Popen[str]) -> str:
    out, _ = process.communicate(timeout=600)
    assert process.returncode == 0, out[-3000:]
    return out


def _supervisors(warehouse: Path) -> list[int]:
    """Processes running a supervisor of this warehouse (its spec file is in the warehouse; the
    server's warm-up process, started by the supervisor, names it too)."""
    spec = f"daemon.py {warehouse / server.SPEC_FILE}"
    return [
        int(pid) for pid in os.listdir("/proc") if pid.isdigit() and spec in processes.command_line(int(pid))
    ]


def _wait_for(condition, what: str, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.5)


def _gone(pid: int) -> bool:
    """Whether a process ended (an unreaped one counts: its parent dbt command has exited)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc").exists(), reason="finds processes through /proc")
def test_the_warm_server_life_cycle(tmp_path):
    project = _project(tmp_path / "project")
    warehouse = project / "warehouse"
    warehouse.mkdir()
    table = warehouse / "warm.db" / "numbers"

    # A state file left by a crash: its pid is gone and another program now listens on its port.
    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    stale = {"pid": int(dead.stdout), "port": squatter.getsockname()[1], "url": "sc://localhost:1",
             "warehouse": str(warehouse), "master": "local[*]", "log": "", "started_at": 0.0}  # fmt: skip
    (warehouse / server.STATE_FILE).write_text(json.dumps(stale))
    try:
        # Two first commands at once: one server starts (with 3 warm-up rounds), both commands use it.
        first, second = _dbt(project, 1, warmup="3"), _dbt(project, 1, select="others", warmup="3")
        outputs = [_finished(first), _finished(second)]
    finally:
        squatter.close()
    both = "\n".join(outputs)
    assert both.count("Starting a warm local Spark server") == 1, both[-4000:]
    assert "is gone and its port is now another program's; starting a new one" in both
    state = server.status(str(warehouse))
    assert state is not None and state.port != stale["port"] and _supervisors(warehouse) == [state.pid]
    others = warehouse / "warm.db" / "others"
    assert DeltaTable(str(table)).version() == DeltaTable(str(others)).version() == 0

    # Reuse: no start, the same server, a merge (while the server warms up, between commands).
    out = _finished(_dbt(project, 2))
    assert "Starting a warm" not in out and "OK MERGE" in out, out[-3000:]
    assert server.status(str(warehouse)) == state
    assert sorted(r["batch"] for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()) == [2] * 5
    log = warehouse / server.LOG_FILE
    _wait_for(lambda: "deltamerge-server: warm-up done: 3 rounds" in log.read_text(), "the warm-up ends")
    status = subprocess.run([CLI, "status", "--warehouse", str(warehouse)], capture_output=True, text=True)
    assert status.returncode == 0 and f"pid {state.pid}" in status.stdout, status.stdout
    assert "stops after 30 idle minutes); warmed up (3 rounds in" in status.stdout
    # Its scratch table is gone with its schema; the project's tables are as they were.
    assert not (warehouse / ".deltamerge-warmup").exists()
    assert _schemas(server.session_url(state, {})) == "['default', 'warm']"
    assert DeltaTable(str(table)).version() == 1 and DeltaTable(str(others)).version() == 0

    # A server of another pyspark (an upgrade, another virtualenv), not in use: replaced; the new
    # one (started with a 3 s idle time) stops by itself after the command.
    recorded = json.loads((warehouse / server.STATE_FILE).read_text())
    (warehouse / server.STATE_FILE).write_text(json.dumps({**recorded, "pyspark": "4.1.0"}))
    out = _finished(_dbt(project, 3, idle="0.05"))
    assert "runs pyspark 4.1.0 from" in out and "replacing it" in out, out[-3000:]
    assert "Starting a warm local Spark server" in out and "stops after 0.05 idle minutes" in out
    idle = server.recorded(str(warehouse))
    assert idle is not None and idle.pid != state.pid and _gone(state.jvm_pid)
    _wait_for(lambda: _gone(idle.pid) and _gone(idle.jvm_pid), "the idle server stops")
    assert not (warehouse / server.STATE_FILE).exists() and _supervisors(warehouse) == []
    assert "stopping: idle for 3 s" in (warehouse / server.LOG_FILE).read_text()

    # The JVM crashes: the supervisor removes the state file and exits; the next command starts anew.
    _finished(_dbt(project, 4))
    crashed = server.status(str(warehouse))
    assert crashed is not None
    os.kill(crashed.jvm_pid, signal.SIGKILL)
    _wait_for(lambda: _gone(crashed.pid), "the supervisor exits after its JVM died")
    assert not (warehouse / server.STATE_FILE).exists()
    assert "the JVM exited" in (warehouse / server.LOG_FILE).read_text()
    assert sorted(r["batch"] for r in DeltaTable(str(table)).to_pyarrow_table().to_pylist()) == [4] * 5
    stop = subprocess.run([CLI, "stop", "--warehouse", str(warehouse)], capture_output=True, text=True)
    assert stop.stdout.strip() == "No server was running"


# A dbt command's hold on a warm server: the clients lock every `method: server` command takes
# (spark/warm.py) and keeps until it exits.
CLIENT_PROGRAM = """
import sys, time
from dbt.adapters.deltamerge.spark import warm
warm._lease(sys.argv[1])
print("holding", flush=True)
time.sleep(600)
"""


def _client(warehouse: Path) -> subprocess.Popen[str]:
    client = subprocess.Popen(
        [sys.executable, "-c", CLIENT_PROGRAM, str(warehouse)], stdout=subprocess.PIPE, text=True
    )
    assert client.stdout is not None and client.stdout.readline().strip() == "holding"
    return client


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not Path("/proc").exists(), reason="finds processes through /proc")
def test_stop_refuses_while_a_command_uses_the_server_and_waits_or_forces(tmp_path):
    warehouse = tmp_path / "warehouse"
    started = _cli("start", "--warehouse", str(warehouse), "--port", str(processes.free_port()),
                   "--master", "local[1]", "--warmup-rounds", "0")  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    state = server.status(str(warehouse))
    assert state is not None
    client = _client(warehouse)
    try:
        refused = _cli("stop", "--warehouse", str(warehouse))
        assert refused.returncode == 1
        assert f"The server at {state.url} is in use by dbt commands (pid {client.pid}" in refused.stderr
        assert "`--wait`" in refused.stderr and server.status(str(warehouse)) == state
        waiting = subprocess.Popen(
            [CLI, "stop", "--wait", "--warehouse", str(warehouse)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert waiting.stdout is not None
        assert waiting.stdout.readline().startswith("Waiting for the dbt commands using the server")
        assert server.status(str(warehouse)) == state  # not stopped while the command runs
    finally:
        client.kill()
        client.wait()
    out = waiting.communicate(timeout=120)[0]
    assert waiting.returncode == 0 and f"Stopped the server at {state.url}" in out, out
    assert server.status(str(warehouse)) is None and _gone(state.jvm_pid)

    # --force: stopped at once, although a command holds it.
    assert _cli("start", "--warehouse", str(warehouse), "--port", str(processes.free_port()),
                "--master", "local[1]", "--warmup-rounds", "0").returncode == 0  # fmt: skip
    again = server.status(str(warehouse))
    assert again is not None
    client = _client(warehouse)
    try:
        forced = _cli("stop", "--force", "--warehouse", str(warehouse))
    finally:
        client.kill()
        client.wait()
    assert forced.returncode == 0 and f"Stopped the server at {again.url}" in forced.stdout
    assert server.status(str(warehouse)) is None


@pytest.mark.skipif(not Path("/proc").exists(), reason="finds processes through /proc")
def test_the_server_renews_its_jvm_once_idle_after_its_commands(tmp_path):
    """``--renew-after 2``: after two commands, once none runs, the supervisor replaces its JVM
    (the metastore's per-thread memory goes with the old one); a command arriving meanwhile waits
    and runs on the new JVM, at the same address, with the catalog and tables as they were."""
    project = _project(tmp_path / "project")
    warehouse = project / "warehouse"
    started = _cli("start", "--warehouse", str(warehouse), "--port", str(processes.free_port()), "--master",
                   "local[1]", "--warmup-rounds", "0", "--renew-after", "2")  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    state = server.status(str(warehouse))
    assert state is not None
    try:
        for batch in (1, 2):
            _finished(_dbt(project, batch))
        log = Path(state.log)
        _wait_for(lambda: "renewing the JVM: 2 commands served, none running" in log.read_text(), "renewal")
        out = _finished(_dbt(project, 3))  # arrives while the JVM is replaced
        renewed = server.status(str(warehouse))
        assert renewed is not None and (renewed.pid, renewed.url) == (state.pid, state.url)
        assert renewed.jvm_pid != state.jvm_pid and _gone(state.jvm_pid)
        assert "Starting a warm local Spark server" not in out
        table = DeltaTable(str(warehouse / "warm.db" / "numbers"))
        assert table.version() == 2 and {r["batch"] for r in table.to_pyarrow_table().to_pylist()} == {3}
        assert table.history(1)[0]["operationMetrics"]["numTargetRowsUpdated"] == "5"
    finally:
        _cli("stop", "--force", "--warehouse", str(warehouse))
