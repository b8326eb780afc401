"""The warm local server's supervisor: runs the Spark Connect JVM, stops it when idle.

``spark.server`` starts this file as its own process (``python daemon.py <spec.json>``), in a
new session, detached from the dbt command that needed the server. It imports nothing but the
standard library (no dbt, no pyspark: it is small and starts in milliseconds). It

1. starts the JVM (the spec's command line) in its own process group, logging to the spec's log;
2. once the JVM listens on the spec's port and the spec's ready file, if it names one, is
   there (the starting command prepares the metastore first: ``spark/view_text.py``), writes
   the warehouse's state file (atomically); the first time no client uses the server, starts
   the spec's warm-up command, if any (``spark/warmup.py``: it runs while no client does; a
   Python process that imports pyspark, whose start so takes no CPU from the command that
   started the server);
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
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

POLL_SECONDS = 0.5
# Renewal: the JVM is replaced by a new one after ``renew_after`` commands (periods in use), once
# none has used it for this long. The embedded Hive metastore keeps a JDO PersistenceManager for
# each thread that used it, and Spark Connect runs each operation on a new thread: never closed,
# ~10 a command (BENCHMARKS.md, "The warm server over time"; HIVE-20192, SPARK-39357 for the
# Thrift server's fix, which Spark Connect lacks).
RENEW = "renewal"
RENEW_IDLE_SECONDS = 20.0
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
    jvm = _launch(spec, stopping)
    if jvm is None:
        return 1
    warmups: list[subprocess.Popen[bytes]] = []
    while True:
        reason, lock = _watch(spec, jvm, stopping, warmups)
        if reason != RENEW or lock is None:
            break
        _say(spec, f"renewing the JVM: {spec['renew_after']} commands served, none running")
        remove_state(spec["state_file"], os.getpid())
        for warmup in warmups:
            stop_server_process(warmup, timeout=5.0)
        stop_server_process(jvm)
        renewed = _launch(spec, stopping)
        lock.close()  # commands waiting for the server go on, on the new JVM
        if renewed is None:
            return 1
        jvm, warmups = renewed, []
    _say(spec, f"stopping: {reason}")
    remove_state(spec["state_file"], os.getpid())
    for warmup in warmups:
        stop_server_process(warmup, timeout=5.0)
    stop_server_process(jvm)
    return 1 if reason.startswith("crash") else 0


def _launch(spec: dict[str, Any], stopping: list[str]) -> subprocess.Popen[bytes] | None:
    """Start the JVM and, once it listens, record it in the state file; None if it did not start
    (then it is stopped and the state file removed). While it starts listening, the spec's Ivy
    lock is held, if it names one (``spark/packages.py``: one resolution of packages at a time)."""
    deadline = time.monotonic() + spec["start_timeout"]
    with _resolve_lock(spec.get("resolve_lock")):
        with open(spec["log"], "ab") as log:
            jvm = subprocess.Popen(
                spec["command"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=spec["warehouse"], env={**os.environ, **spec["env"]},
            )  # fmt: skip
        started = _wait(spec, jvm, stopping, deadline, lambda: port_open(spec["port"]))
    if not (started and _wait(spec, jvm, stopping, deadline, lambda: _ready(spec))):
        _say(spec, "the Spark Connect server did not start; stopping")
        remove_state(spec["state_file"], os.getpid())
        stop_server_process(jvm)
        return None
    state = {**spec["state"], "pid": os.getpid(), "jvm_pid": jvm.pid, "started_at": time.time()}
    write_state(spec["state_file"], state)
    _say(spec, f"serving on port {spec['port']} (pid {os.getpid()}, JVM pid {jvm.pid})")
    return jvm


def _wait(
    spec: dict[str, Any],
    jvm: subprocess.Popen[bytes],
    stopping: list[str],
    deadline: float,
    done: Callable[[], bool],
) -> bool:
    """Poll ``done()`` until true (True), or until the JVM exits, a signal or the deadline (False)."""
    while not done():
        if jvm.poll() is not None or stopping or time.monotonic() > deadline:
            return False
        time.sleep(START_POLL_SECONDS)
    return True


@contextmanager
def _resolve_lock(path: str | None) -> Iterator[None]:
    """Hold the Ivy folder's lock at ``path`` (``spark/packages.py``), if there is one."""
    if not path:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _ready(spec: dict[str, Any]) -> bool:
    """Whether the spec's ready file, if it names one, is there (``spark/view_text.py``: the starting
    command widens the metastore's view text columns before any other client may use it)."""
    return not spec.get("ready_file") or os.path.exists(spec["ready_file"])


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
) -> tuple[str, IO[bytes] | None]:
    """Wait until the server should stop or be renewed; why, and the clients lock if this holds it
    (an idle stop or a renewal: no command starts using the server meanwhile).

    ``warmups`` gets the warm-up process, started the first time no client uses the server.
    """
    idle_seconds = float(spec["idle_seconds"])
    renew_after = int(spec.get("renew_after") or 0)
    last_used = time.monotonic()
    warmup_due = bool(spec.get("warmup"))
    was_busy, commands = False, 0
    while True:
        time.sleep(POLL_SECONDS)
        for warmup in warmups:
            warmup.poll()  # reaped when it ends
        if stopping:
            return f"signal {stopping[0]}", None
        if jvm.poll() is not None:
            return f"crash: the JVM exited with code {jvm.returncode}", None
        busy = clients_busy(spec["clients_file"])
        commands += busy and not was_busy
        was_busy = busy
        if warmup_due and not busy:
            warmup_due = False
            warmups.extend(_start_warmup(spec))
        if busy:
            last_used = time.monotonic()
            continue
        idle_for = time.monotonic() - last_used
        renew = 0 < renew_after <= commands and idle_for >= RENEW_IDLE_SECONDS
        if not renew and (idle_seconds <= 0 or idle_for < idle_seconds):
            continue
        lock = _take_clients(spec["clients_file"])
        if lock is None:
            last_used = time.monotonic()
            continue
        return (RENEW, lock) if renew else (f"idle for {idle_seconds:.0f} s", lock)


def _take_clients(clients_file: str) -> IO[bytes] | None:
    """The clients lock held exclusively (a command arriving waits), or None if a client has it."""
    lock = open(clients_file, "a+b")  # noqa: SIM115 - held until a renewal ends, or this process does
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        return None
    return lock


def _say(spec: dict[str, Any], message: str) -> None:
    with open(spec["log"], "a") as log:
        log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} deltamerge-server: {message}\n")


if __name__ == "__main__":
    sys.exit(serve(json.loads(Path(sys.argv[1]).read_text())))
