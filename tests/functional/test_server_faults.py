"""The warm local server under faults, with real processes: its JVM killed mid-merge, mid-commit and
mid-binding, ``deltamerge-server stop --force`` during a command, Ctrl-C to dbt, its port taken, the
disk full under a table.

Each command must end by itself, saying in one line what happened (which models committed before
a crash said too), and leave every table at a version the validator finds sound; the next command
starts a new server and goes on. ``HANG_GUARD_SECONDS`` only stops a hung test: pyspark's own
retry budget against a dead server was ten minutes; a command now ends ~2 s after its JVM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.spark import server
from tests.backend import SLOW as SLOW_TIER
from tests.functional.test_warm_server import CLI, DBT, _gone, _wait_for
from tests.validator import problems

# Warm servers of its own: the Connect tier's (``make test-connect``), as are the warm server's tests.
pytestmark = [
    pytest.mark.server,
    pytest.mark.skipif(not Path("/proc").exists(), reason="finds processes through /proc"),
]

SLOW_TIER_ONLY = pytest.mark.skipif(not SLOW_TIER, reason="the slow tier's (DELTAMERGE_SLOW=1)")
# A command that starts a server on a loaded 2-core machine took 60 s and more (CI).
HANG_GUARD_SECONDS = 240
PROFILE = """faults:
  target: t
  outputs:
    t:
      type: deltamerge
      method: server
      schema: faults
      threads: 4
      warehouse: ./warehouse
      server_warmup_rounds: 0
      server_side_parameters:
        spark.master: "local[2]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "2"
    local:
      type: deltamerge
      method: session
      schema: faults
      threads: 4
      warehouse: ./warehouse_local
      server_side_parameters:
        spark.master: "local[2]"
        spark.driver.memory: 1g
        spark.sql.shuffle.partitions: "2"
"""
# Each row sleeps in the server's JVM (var `sleep`, ms): a merge whose Spark job is running.
SLOW = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select id, {{ var('batch', 1) }} as batch,
       java_method('java.lang.Thread', 'sleep', cast({{ var('sleep', 0) }} as bigint)) as slept
from range(4)
"""
QUICK = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select id, {{ var('batch', 1) }} as batch from range(5)
"""
# Random hex strings do not compress: `rows` of them fill a small disk.
FILLER = """{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id',
                      location_root=env_var('FULL_DISK')) }}
select id, sha2(cast(rand() as string), 512) as payload from range({{ var('rows', 100) }})
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("server_faults")
    (root / "models").mkdir()
    (root / "dbt_project.yml").write_text(
        'name: faults\nversion: "1.0"\nprofile: faults\nconfig-version: 2\n'
        "flags:\n  send_anonymous_usage_stats: false\n"
    )
    (root / "profiles.yml").write_text(PROFILE)
    for name, sql in (("slow_a", SLOW), ("slow_b", SLOW), ("slow_c", SLOW), ("quick", QUICK)):
        (root / "models" / f"{name}.sql").write_text(sql)
    assert _run(root, "run", "--select", "slow_a slow_b slow_c quick").returncode == 0
    yield root
    subprocess.run([CLI, "stop", "--force", "--warehouse", str(root / "warehouse")], timeout=120)


def _start(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [DBT, *args, "--profiles-dir", "."], cwd=project, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
    )  # fmt: skip


def _run(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    process = _start(project, *args, env=env)
    out = _ended(process)
    if process.returncode != 0 and "--select" in args and "filler" not in args:
        print(out[-4000:])
    return subprocess.CompletedProcess(args, process.returncode, out)


def _ended(process: subprocess.Popen[str]) -> str:
    try:
        return process.communicate(timeout=HANG_GUARD_SECONDS)[0]
    except subprocess.TimeoutExpired:
        process.kill()
        out = process.communicate()[0]
        pytest.fail(f"dbt did not end within {HANG_GUARD_SECONDS} s:\n{out[-4000:]}")


def _table(project: Path, name: str) -> str:
    return str(project / "warehouse" / "faults.db" / name)


def _state(project: Path) -> server.ServerState:
    state = server.status(str(project / "warehouse"))
    assert state is not None, "no server runs"
    return state


def _slow_run(project: Path, batch: int) -> tuple[subprocess.Popen[str], server.ServerState]:
    """A `dbt run` of the slow models, and the server, once their Spark jobs run (their `START`
    lines in this command's part of dbt's log, then a few seconds of their sleep)."""
    log = project / "logs" / "dbt.log"
    offset = log.stat().st_size if log.exists() else 0
    process = _start(
        project, "run", "--select", " ".join(SLOWS), "--vars", f"{{sleep: 30000, batch: {batch}}}"
    )

    def started() -> bool:
        return _since(log, offset).count("START sql incremental model faults.slow_") >= 3

    _wait_for(lambda: started() and server.status(str(project / "warehouse")) is not None, "the models start")
    time.sleep(3)
    assert process.poll() is None
    return process, _state(project)


def _crashed(state: server.ServerState) -> str:
    return f"the local Spark server crashed (exit -9); log: {state.log}; the next command starts a new one"


def _sound(project: Path, *names: str) -> None:
    for name in names:
        assert problems(_table(project, name)) == [], name


def _versions(project: Path, *names: str) -> list[int]:
    return [DeltaTable(_table(project, name)).version() for name in names]


SLOWS = ("slow_a", "slow_b", "slow_c")


def test_ctrl_c_interrupts_the_running_merges_and_leaves_the_tables_and_server(project):
    before = _versions(project, *SLOWS)
    dbt, state = _slow_run(project, 2)
    dbt.send_signal(signal.SIGINT)
    out = _ended(dbt)
    assert dbt.returncode != 0 and "Exited because of keyboard interrupt" in out, out[-3000:]
    assert out.count("CANCEL query model.faults.slow_") == 3, out[-3000:]
    assert _versions(project, *SLOWS) == before
    _sound(project, *SLOWS)
    assert server.status(str(project / "warehouse")) == state  # the server goes on for the next command
    assert _run(project, "run", "--select", "quick", "--vars", "{batch: 2}").returncode == 0


def test_ctrl_c_cancels_the_embedded_sessions_jobs(project):
    """``method: session``: the process's own Spark, whose jobs a cancel cancels."""
    local = ("--target", "local")
    assert _run(project, "run", "--select", " ".join(SLOWS), *local).returncode == 0
    tables = [str(project / "warehouse_local" / "faults.db" / name) for name in SLOWS]
    before = [DeltaTable(t).version() for t in tables]
    log = project / "logs" / "dbt.log"
    offset = log.stat().st_size
    dbt = _start(project, "run", "--select", " ".join(SLOWS), *local, "--vars", "{sleep: 30000, batch: 2}")
    _wait_for(lambda: _since(log, offset).count("START sql incremental model faults.slow_") >= 3, "the start")
    time.sleep(3)
    dbt.send_signal(signal.SIGINT)
    out = _ended(dbt)
    assert dbt.returncode != 0 and "Exited because of keyboard interrupt" in out, out[-3000:]
    assert "OK MERGE" not in out and out.count("CANCEL query model.faults.slow_") == 3, out[-3000:]
    assert [DeltaTable(t).version() for t in tables] == before
    assert [problems(t) for t in tables] == [[], [], []]


# ``make test`` runs the server's target; the embedded session's Ctrl-C is also checked by
# ``test_ctrl_c_cancels_the_embedded_sessions_jobs``; the slow tier (``DELTAMERGE_SLOW=1``) runs both.
@pytest.mark.parametrize(
    "target, warehouse",
    [("t", "warehouse"), pytest.param("local", "warehouse_local", marks=SLOW_TIER_ONLY)],
)
def test_ctrl_c_before_the_commit_refuses_it(project, tmp_path, target, warehouse):
    """SIGINT while the model waits at its commit, every file written, no Spark job left to
    interrupt: dbt cancels its connection; let go, the model starts no commit."""
    run = ("run", "--select", "quick", "--target", target)
    assert _run(project, *run, "--vars", "{batch: 10}").returncode == 0
    table = str(project / warehouse / "faults.db" / "quick")
    version = DeltaTable(table).version()
    log = project / "logs" / "dbt.log"
    offset = log.stat().st_size
    pause = {"DELTAMERGE_PAUSE_AT": f"before_commit:{tmp_path}"}
    dbt = _start(project, *run, "--vars", "{batch: 11}", env=pause)
    _wait_for(lambda: (tmp_path / "before_commit.reached").exists(), "dbt reaches its commit")
    dbt.send_signal(signal.SIGINT)
    _wait_for(lambda: "CANCEL query model.faults.quick" in _since(log, offset), "dbt cancels the model")
    (tmp_path / "before_commit.go").touch()
    out = _ended(dbt)
    assert dbt.returncode != 0 and "Exited because of keyboard interrupt" in out, out[-3000:]
    refused = f"Cancelled (Ctrl-C or --fail-fast) before its commit: {table} stays at version {version}."
    assert refused in _since(log, offset), _since(log, offset)[-3000:]
    assert DeltaTable(table).version() == version and problems(table) == []
    assert {r["batch"] for r in DeltaTable(table).to_pyarrow_table().to_pylist()} == {10}


def _since(log: Path, offset: int) -> str:
    with open(log, "rb") as file:
        file.seek(offset)
        return file.read().decode(errors="replace")


def test_a_jvm_killed_mid_merge_fails_the_command_in_one_line(project):
    before = _versions(project, *SLOWS)
    dbt, state = _slow_run(project, 3)
    os.kill(state.jvm_pid, signal.SIGKILL)
    out = _ended(dbt)
    assert dbt.returncode == 1, out[-3000:]
    for name in SLOWS:
        assert f"Model '{name}': {_crashed(state)}" in out, out[-4000:]
    assert "_InactiveRpcError" not in out and "Traceback" not in out and "Starting a warm" not in out
    assert "RETRIES_EXCEEDED" not in out  # pyspark's warning once the ~3 s of retries are spent
    assert _versions(project, *SLOWS) == before
    _sound(project, *SLOWS)
    # The next command starts a new server and merges.
    again = _run(project, "run", "--select", "slow_a", "--vars", "{batch: 4}")
    assert again.returncode == 0 and "Starting a warm local Spark server" in again.stdout
    started = server.status(str(project / "warehouse"))
    assert started is not None
    assert f"The local Spark server listens at {started.url} (started in " in again.stdout
    assert _versions(project, "slow_a") == [before[0] + 1]


# ``make test`` kills at the commit; a kill mid-binding (a server restart more) in the slow tier,
# and without a server in ``test_kill_harness.py``'s ``mid_catalog_bind`` point.
@pytest.mark.parametrize(
    "point, step",
    [
        ("before_commit", "every file is in place"),
        pytest.param("mid_catalog_bind", "the catalog entry was dropped", marks=SLOW_TIER_ONLY),
    ],
)
def test_a_jvm_killed_at_the_commit_or_the_binding_says_what_committed(project, tmp_path, point, step):
    """Killed while the command's engine is at ``point`` (``step``): the commit runs no Spark, so
    the version lands; the error says so, then what happened to the server."""
    _run(project, "run", "--select", "quick", "--vars", "{batch: 5}")  # a server runs
    state = _state(project)
    (version,) = _versions(project, "quick")
    dbt = _start(project, "run", "--select", "quick", "--vars", "{batch: 6}",
                 env={"DELTAMERGE_PAUSE_AT": f"{point}:{tmp_path}"})  # fmt: skip
    _wait_for(lambda: (tmp_path / f"{point}.reached").exists(), f"dbt reaches {point}")
    os.kill(state.jvm_pid, signal.SIGKILL)
    _wait_for(lambda: _gone(state.jvm_pid), "the JVM ends")
    (tmp_path / f"{point}.go").touch()
    out = _ended(dbt)
    assert dbt.returncode == 1, out[-3000:]
    table = _table(project, "quick")
    assert f"Model 'quick': Delta version {version + 1} of {table} was committed (MERGE)" in out, out[-3000:]
    assert _crashed(state) in out and "Traceback" not in out
    assert _versions(project, "quick") == [version + 1]
    assert {r["batch"] for r in DeltaTable(table).to_pyarrow_table().to_pylist()} == {6}
    _sound(project, "quick")
    # The next command (a new server) reads the committed version: the merge finds every row.
    again = _run(project, "run", "--select", "quick", "--vars", "{batch: 7}")
    assert again.returncode == 0 and "Starting a warm local Spark server" in again.stdout
    assert _versions(project, "quick") == [version + 2]
    assert DeltaTable(table).history(1)[0]["operationMetrics"]["numTargetRowsUpdated"] == "5"


def test_stop_force_during_a_command_fails_it_in_one_line(project):
    _run(project, "run", "--select", "quick", "--vars", "{batch: 8}")  # a server runs
    before = _versions(project, *SLOWS)
    dbt, state = _slow_run(project, 9)
    stop = subprocess.run([CLI, "stop", "--warehouse", str(project / "warehouse")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert stop.returncode == 1 and "is in use by dbt commands" in stop.stderr  # refused without --force
    forced = subprocess.run([CLI, "stop", "--force", "--warehouse", str(project / "warehouse")],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert forced.returncode == 0, forced.stderr
    out = _ended(dbt)
    stopped = "the local Spark server was stopped (SIGTERM: deltamerge-server stop --force?); "
    for name in SLOWS:
        assert f"Model '{name}': {stopped}log: {state.log}" in out, out[-4000:]
    assert "Cannot call methods on a stopped SparkContext" not in out and "Traceback" not in out
    assert _versions(project, *SLOWS) == before
    _sound(project, *SLOWS)


def test_a_taken_port_is_refused_by_name(project, tmp_path):
    import socket

    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        done = subprocess.run([CLI, "start", "--warehouse", str(tmp_path / "w"), "--port", str(port)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 1
    assert f"Port {port} on localhost is taken by another program; choose another (--port)." in done.stderr
    assert server.status(str(tmp_path / "w")) is None


def test_a_full_disk_fails_the_merge_and_leaves_the_table(project, tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"this machine does not allow a tmpfs mount: {mounted.stderr.decode().strip()}")
    try:
        (project / "models" / "filler.sql").write_text(FILLER)
        env = {"FULL_DISK": str(disk)}
        first = _run(project, "run", "--select", "filler", env=env)
        assert first.returncode == 0, first.stdout[-3000:]
        table = str(disk / "filler")
        full = _run(project, "run", "--select", "filler", "--vars", "{rows: 200000}", env=env)
        assert full.returncode == 1 and "No space left on device" in full.stdout, full.stdout[-3000:]
        assert "Model 'filler': Spark failed; the table is unchanged." in full.stdout
        assert "Caused by: java.io.IOException: No space left on device" in full.stdout
        assert DeltaTable(table).version() == 0 and problems(table) == []
        # Room again once the failed job's tasks have ended (a killed task's deleted file keeps its
        # space while open): the next merge commits; nothing the failed one wrote is the table's.
        _wait_for(lambda: _free_bytes(disk) > 3 * 2**20, "the failed job's files are closed")
        again = _run(project, "run", "--select", "filler", env=env)
        left = sorted(f"{p.relative_to(disk)} {p.stat().st_size}" for p in disk.rglob("*") if p.is_file())
        assert again.returncode == 0, again.stdout[-3000:] + "\n".join(left)
        assert DeltaTable(table).version() == 1 and problems(table) == []
    finally:
        (project / "models" / "filler.sql").unlink(missing_ok=True)
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def _free_bytes(folder: Path) -> int:
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize
