"""The warm server's bookkeeping without a server: the clients lock and stale state files."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys

from dbt.adapters.deltamerge.spark import daemon, server, warm


def test_the_clients_lock_tells_a_server_in_use_from_an_idle_one(tmp_path):
    clients = str(tmp_path / server.CLIENTS_FILE)
    assert not daemon.clients_busy(clients)
    with open(clients, "a+b") as lease:
        fcntl.flock(lease, fcntl.LOCK_SH)  # what each dbt process using the server holds
        assert daemon.clients_busy(clients)
    assert not daemon.clients_busy(clients)


def _record(folder, **changes):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    state = {"pid": int(dead.stdout), "port": server.free_port(), "url": "sc://localhost:1",
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
