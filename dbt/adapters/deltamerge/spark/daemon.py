"""The warm local server's supervisor: runs the Spark Connect JVM, stops it when idle.

``spark.server`` starts this file as its own process (``python daemon.py <spec.json>``), in a
new session, detached from the dbt command that needed the server. It imports nothing but the
standard library (no dbt, no pyspark: it is small and starts in milliseconds). It

1. starts the JVM (the spec's command line) in its own process group, logging to the spec's log;
2. once the JVM listens on the spec's port, writes the warehouse's state file (atomically); the
   first time no client uses the server, starts the spec's warm-up command, if any
   (``spark/warmup.py``: it runs while no client does; a Python process that imports pyspark,
   whose start so takes no CPU from the command that started the server);
3. watches: the server is *in use* while any client holds a shared ``flock`` on the warehouse's
   clients file (every dbt process using the server holds one until it exits, crash or not);
   after ``idle_seconds`` without a client it takes that lock exclusively (so no new client
   starts using it meanwhile), removes the state file and stops the JVM;
4. stops the JVM too on ``SIGTERM`` (``deltamerge-server stop``), and when the JVM exits by
   itself (a crash) removes the state file, so the next command starts a new server.

Nothing is left half-started: the state file names a server only once it listens, and a JVM
that does not listen within the spec's timeout is stopped.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POLL_SECONDS = 0.5
# While the JVM starts, its port is probed this often: a dbt command is waiting for it.
START_POLL_SECONDS = 0.05


def clients_busy(clients_file: str) -> bool:
    """Whether a client holds the clients lock; when not, the lock is left free again."""
    with open(clients_file, "a+b") as probe:
        try:
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe, fcntl.LOCK_UN)
        return False


def port_open(port: int) -> bool:
    """Whether something listens on ``127.0.0.1:port``."""
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def write_state(path: str, state: dict[str, Any]) -> None:
    """Write the state file whole or not at all (a reader never sees half of it)."""
    partial = f"{path}.{os.getpid()}.tmp"
    Path(partial).write_text(json.dumps(state, indent=2))
    os.replace(partial, path)


def remove_state(path: str, pid: int) -> None:
    """Remove the state file if it names this supervisor (a newer server's stays)."""
    try:
        if json.loads(Path(path).read_text()).get("pid") == pid:
            Path(path).unlink()
    except (OSError, ValueError):
        pass


def stop_server_process(jvm: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """SIGTERM (Spark's shutdown hooks release the metastore), then SIGKILL if it hangs."""
    if jvm.poll() is not None:
        return
    jvm.terminate()
    try:
        jvm.wait(timeout)
    except subprocess.TimeoutExpired:
        jvm.kill()
        jvm.wait()


def serve(spec: dict[str, Any]) -> int:
    """Run the server the spec describes until it is stopped, idle or crashed; the exit code."""
    stopping: list[str] = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, _frame: stopping.append(signal.Signals(number).name))
    with open(spec["log"], "ab") as log:
        jvm = subprocess.Popen(
            spec["command"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            cwd=spec["warehouse"], env={**os.environ, **spec["env"]},
        )  # fmt: skip
    deadline = time.monotonic() + spec["start_timeout"]
    while not port_open(spec["port"]):
        if jvm.poll() is not None or stopping or time.monotonic() > deadline:
            _say(spec, "the Spark Connect server did not start; stopping")
            stop_server_process(jvm)
            return 1
        time.sleep(START_POLL_SECONDS)
    state = {**spec["state"], "pid": os.getpid(), "jvm_pid": jvm.pid, "started_at": time.time()}
    write_state(spec["state_file"], state)
    _say(spec, f"serving on port {spec['port']} (pid {os.getpid()}, JVM pid {jvm.pid})")
    warmups: list[subprocess.Popen[bytes]] = []
    reason = _watch(spec, jvm, stopping, warmups)
    _say(spec, f"stopping: {reason}")
    remove_state(spec["state_file"], os.getpid())
    for warmup in warmups:
        stop_server_process(warmup, timeout=5.0)
    stop_server_process(jvm)
    return 1 if reason.startswith("crash") else 0


def _start_warmup(spec: dict[str, Any]) -> list[subprocess.Popen[bytes]]:
    """Start the spec's warm-up command (``spark/warmup.py``), if it has one, logging to the log."""
    if not spec.get("warmup"):
        return []
    with open(spec["log"], "ab") as log:
        return [
            subprocess.Popen(
                spec["warmup"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=spec["warehouse"], env={**os.environ, **spec["env"]},
            )
        ]  # fmt: skip


def _watch(
    spec: dict[str, Any],
    jvm: subprocess.Popen[bytes],
    stopping: list[str],
    warmups: list[subprocess.Popen[bytes]],
) -> str:
    """Wait until the server should stop; why. Idle stops return holding the clients lock.

    ``warmups`` gets the warm-up process, started the first time no client uses the server.
    """
    idle_seconds = float(spec["idle_seconds"])
    last_used = time.monotonic()
    warmup_due = bool(spec.get("warmup"))
    while True:
        time.sleep(POLL_SECONDS)
        for warmup in warmups:
            warmup.poll()  # reaped when it ends
        if stopping:
            return f"signal {stopping[0]}"
        if jvm.poll() is not None:
            return f"crash: the JVM exited with code {jvm.returncode}"
        busy = clients_busy(spec["clients_file"])
        if warmup_due and not busy:
            warmup_due = False
            warmups.extend(_start_warmup(spec))
        if busy or idle_seconds <= 0:
            last_used = time.monotonic()
        elif time.monotonic() - last_used >= idle_seconds:
            # Held until this process exits: a command arriving now waits, then starts a new server.
            lock = open(spec["clients_file"], "a+b")  # noqa: SIM115 - released at exit
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.close()
                last_used = time.monotonic()
                continue
            return f"idle for {idle_seconds:.0f} s"


def _say(spec: dict[str, Any], message: str) -> None:
    with open(spec["log"], "a") as log:
        log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} deltamerge-server: {message}\n")


if __name__ == "__main__":
    sys.exit(serve(json.loads(Path(sys.argv[1]).read_text())))
