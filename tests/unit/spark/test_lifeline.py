"""What a lost warm server is said as, read from its supervisor's log; which errors read as one."""

from __future__ import annotations

import os
import subprocess
import sys

from dbt.adapters.deltamerge.spark import lifeline, processes
from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.spark.server import ServerState


def _ended_pid() -> int:
    """The pid of a process that has ended."""
    program = [sys.executable, "-c", "import os; print(os.getpid())"]
    return int(subprocess.run(program, capture_output=True, text=True).stdout)


def _state(tmp_path, jvm_pid: int) -> ServerState:
    log = tmp_path / "server.log"
    return ServerState(41, 1, "sc://localhost:1", str(tmp_path), "local[*]", str(log), 0.0, jvm_pid=jvm_pid)


def test_the_reason_is_the_one_logged_for_this_server_not_an_earlier_one(tmp_path):
    state = _state(tmp_path, 42)
    log = (
        "t deltamerge-server: serving on port 1 (pid 40, JVM pid 39)\n"
        "t deltamerge-server: stopping: idle for 1800 s\n"
        "t deltamerge-server: serving on port 1 (pid 41, JVM pid 42)\n"
    )
    assert lifeline.logged_reason(log, state) == ""
    log += "t deltamerge-server: stopping: signal SIGTERM\n"
    assert lifeline.logged_reason(log, state) == "signal SIGTERM"
    assert lifeline.lost_message(state, "idle for 3 s").startswith(
        "the local Spark server stopped (idle for 3 s)"
    )


def test_a_dead_jvm_is_told_once_with_its_logged_reason_and_a_new_invocation_forgets_it(tmp_path):
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    state = _state(tmp_path, int(ended.stdout))
    (tmp_path / "server.log").write_text(
        f"t deltamerge-server: serving on port 1 (pid 41, JVM pid {state.jvm_pid})\n"
        "t deltamerge-server: stopping: crash: the JVM exited with code 137\n"
    )
    lifeline.forget()
    try:
        assert lifeline.lost() is None  # nothing watched
        PROCESS.watched[state.pid] = state
        message = lifeline.lost(RuntimeError("UNAVAILABLE: Connection refused"))
        tail = "the next command starts a new one"
        assert message == f"the local Spark server crashed (exit 137); log: {state.log}; {tail}"
        assert lifeline.lost() == message
    finally:
        lifeline.forget()
    assert lifeline.lost() is None


def test_a_running_process_is_alive_and_an_ended_one_is_not():
    assert processes.jvm_alive(os.getpid())
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    assert not processes.jvm_alive(int(ended.stdout)) and not processes.jvm_alive(0)
