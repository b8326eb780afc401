"""The warm server's bookkeeping without a server: the clients lock and stale state files."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import time

from dbt.adapters.deltamerge.spark import daemon, processes, server, warm


def test_the_clients_lock_tells_a_server_in_use_from_an_idle_one(tmp_path):
    clients = str(tmp_path / server.CLIENTS_FILE)
    assert not daemon.clients_busy(clients)
    with open(clients, "a+b") as lease:
        fcntl.flock(lease, fcntl.LOCK_SH)  # what each dbt process using the server holds
        assert daemon.clients_busy(clients)
    assert not daemon.clients_busy(clients)


def _record(folder, **changes):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    state = {"pid": int(dead.stdout), "port": processes.free_port(), "url": "sc://localhost:1",
             "warehouse": str(folder), "master": "local[*]", "log": "", "started_at": 0.0}  # fmt: skip
    (folder / server.STATE_FILE).write_text(json.dumps({**state, **changes}))


def test_a_server_whose_process_is_gone_is_said_and_not_used(tmp_path):
    _record(tmp_path)
    said: list[str] = []
    lease = warm._lease(str(tmp_path))
    try:
        assert warm._usable(str(tmp_path), lease, said.append) is None
    finally:
        warm.release(str(tmp_path))
    state = server.recorded(str(tmp_path))
    assert state is not None
    assert said == [
        f"The warm Spark server recorded in {tmp_path} (pid {state.pid}, port {state.port}) is gone; "
        "starting a new one"
    ]


def test_a_state_file_of_another_warehouse_is_ignored(tmp_path):
    _record(tmp_path, warehouse="/elsewhere/warehouse")
    said: list[str] = []
    with open(tmp_path / server.CLIENTS_FILE, "a+b") as lease:
        assert warm._usable(str(tmp_path), lease, said.append) is None
    assert said == [
        f"The warm Spark server recorded in {tmp_path} serves another warehouse, /elsewhere/warehouse "
        "(a copied folder?); starting one for this"
    ]
    assert server.status(str(tmp_path)) is None


def test_the_warm_up_starts_only_once_no_command_uses_the_server(tmp_path):
    """The supervisor's watch starts the warm-up process at the first moment no client holds the
    clients lock: its start (Python importing pyspark) takes no CPU from a running command."""
    clients, marker = str(tmp_path / server.CLIENTS_FILE), tmp_path / "warm-up ran"
    command = [sys.executable, "-c", f"open({str(marker)!r}, 'w').close()"]
    spec = {"idle_seconds": 0, "clients_file": clients, "log": str(tmp_path / "log"),
            "warehouse": str(tmp_path), "env": {}, "warmup": command}  # fmt: skip
    jvm = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stopping: list[str] = []
    warmups: list[subprocess.Popen[bytes]] = []
    watch = threading.Thread(target=daemon._watch, args=(spec, jvm, stopping, warmups))
    try:
        with open(clients, "a+b") as lease:
            fcntl.flock(lease, fcntl.LOCK_SH)  # a dbt command uses the server
            watch.start()
            time.sleep(3 * daemon.POLL_SECONDS)
            assert warmups == [] and not marker.exists()
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker.exists() and len(warmups) == 1
    finally:
        stopping.append("SIGTERM")
        watch.join(timeout=5)
        jvm.kill()
    assert not watch.is_alive()
