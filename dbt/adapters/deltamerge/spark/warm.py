"""``method: server``: the warehouse's warm local server, started by the first dbt command.

The first command finds no server and starts one in the background (``spark/server.py``);
every later command reuses it; it stops by itself after ``server_idle_minutes`` without a
command. Two first commands at once start one server: the start is serialized by an exclusive
``flock`` on the warehouse's start lock, and the second finds the first's server. Each dbt
process holds a shared lock on the warehouse's clients file while it runs, which is how the
supervisor knows the server is in use (``spark/daemon.py``).

What is found instead of a usable server is said in one line, and handled:

- a state file whose process is gone, or whose pid or port now belongs to another program
  (a crash, a reboot): a new server is started on a free port;
- a state file written for another warehouse (the folder was copied or moved): ignored;
- a server started by another Python or pyspark (another virtualenv, an upgrade): replaced
  when no command uses it, else refused naming both;
- the warehouse held by an embedded session (another process with ``method: session``): refused.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import IO

from dbt.adapters.deltamerge.spark import processes, server
from dbt.adapters.deltamerge.spark.metastore import in_use_message, metastore_holder
from dbt.adapters.deltamerge.spark.process import PROCESS

DEFAULT_IDLE_MINUTES = 30.0
# Warm-up rounds a started server runs between commands (``spark/warmup.py``): ~45 s of its
# idle time, after which a small merge's model time is what ~80 commands gave it otherwise.
DEFAULT_WARMUP_ROUNDS = 40


def prepare(
    warehouse: str,
    conf: dict[str, str],
    idle_minutes: float,
    say: Callable[[str], None],
    warmup_rounds: int = 0,
) -> None:
    """Find or start the server in a background thread, so that a start overlaps dbt's parse.

    ``ensure_server`` waits for it (a thread sleeping on a process start costs dbt nothing).
    """
    if warehouse in PROCESS.prepared:
        return
    future: Future[server.ServerState] = Future()

    def work() -> None:
        try:
            future.set_result(ensure_server(warehouse, conf, idle_minutes, say, warmup_rounds))
        except BaseException as error:  # handed to the connection that waits for it
            future.set_exception(error)

    PROCESS.prepared[warehouse] = future
    threading.Thread(target=work, name="deltamerge-server-start", daemon=True).start()


def prepared_server(
    warehouse: str,
    conf: dict[str, str],
    idle_minutes: float,
    say: Callable[[str], None],
    warmup_rounds: int = 0,
) -> server.ServerState:
    """The server ``prepare`` found or started, else ``ensure_server``'s (a server that stopped
    since, for its idle time, is looked for again)."""
    future = PROCESS.prepared.get(warehouse)
    if future is not None:
        state = future.result()
        if server.is_serving(state):
            return state
    return ensure_server(warehouse, conf, idle_minutes, say, warmup_rounds)


def ensure_server(
    warehouse: str,
    conf: dict[str, str],
    idle_minutes: float,
    say: Callable[[str], None],
    warmup_rounds: int = 0,
) -> server.ServerState:
    """The running server of ``warehouse`` this process may use, started if there is none.

    ``say`` gets one line for each thing found and done (a start, a stale server replaced).
    ``warmup_rounds``: a server started here runs that many warm-up rounds between commands
    (``spark/warmup.py``).

    Raises:
        server.ServerError: it cannot be used or started (one line: why, and what to do).
    """
    os.makedirs(warehouse, exist_ok=True)
    lease = _lease(warehouse)
    state = _usable(warehouse, lease, say)
    if state is not None:
        return state
    with open(os.path.join(warehouse, server.START_LOCK), "a+b") as start_lock:
        fcntl.flock(start_lock, fcntl.LOCK_EX)  # another first command may be starting it
        state = _usable(warehouse, lease, say)
        if state is not None:
            return state
        holder = metastore_holder(warehouse)
        if holder is not None and server.orphan(warehouse) == holder:
            raise server.ServerError(
                f"A Spark server JVM of {warehouse} (pid {holder}) runs without its supervisor (was it "
                f"killed?) and holds the warehouse; stop it: deltamerge-server stop --warehouse {warehouse}"
            )
        if holder is not None:
            raise server.ServerError(in_use_message(warehouse, holder))
        until = f"it stops after {idle_minutes:g} idle minutes" if idle_minutes else "it runs until stopped"
        say(f"Starting a warm local Spark server for {warehouse} (later commands reuse it; {until})")
        began = time.monotonic()
        state = server.start(
            warehouse, processes.free_port(), "local[*]", conf, idle_minutes, warmup_rounds=warmup_rounds
        )
        took = time.monotonic() - began
        say(f"The local Spark server listens at {state.url} (started in {took:.0f} s; log: {state.log})")
        return state


def _usable(warehouse: str, lease: IO[bytes], say: Callable[[str], None]) -> server.ServerState | None:
    """The recorded server if this process can use it; stale or foreign ones said and dropped."""
    state = server.recorded(warehouse)
    if state is None:
        return None
    where = f"The warm Spark server recorded in {warehouse}"
    if os.path.realpath(state.warehouse) != os.path.realpath(warehouse):
        say(f"{where} serves another warehouse, {state.warehouse} (a copied folder?); starting one for this")
        return None
    if not server.is_serving(state):
        taken = " and its port is now another program's" if server.daemon.port_open(state.port) else ""
        say(f"{where} (pid {state.pid}, port {state.port}) is gone{taken}; starting a new one")
        return None
    mine = (server.pyspark_version(), server.interpreter())
    if (state.pyspark, state.python) == mine:
        return state
    theirs = f"pyspark {state.pyspark} from {state.python}"
    if not _only_user(lease):
        raise server.ServerError(
            f"{where} runs {theirs}, and another command is using it; this dbt has pyspark {mine[0]} "
            f"from {mine[1]}. Stop it when that command ends: deltamerge-server stop --warehouse {warehouse}"
        )
    say(f"{where} runs {theirs}; replacing it with one of this dbt's pyspark {mine[0]} ({mine[1]})")
    server.stop(warehouse)
    fcntl.flock(lease, fcntl.LOCK_SH)  # held exclusively while the old server stopped
    return None


def _lease(warehouse: str) -> IO[bytes]:
    """This process's shared lock on the warehouse's clients file, taken once (waits while an
    idle server is stopping: the command then starts a new one)."""
    lease = PROCESS.leases.get(warehouse)
    if lease is None:
        lease = open(os.path.join(warehouse, server.CLIENTS_FILE), "a+b")  # noqa: SIM115 - held until exit
        fcntl.flock(lease, fcntl.LOCK_SH)
        PROCESS.leases[warehouse] = lease
    return lease


def _only_user(lease: IO[bytes]) -> bool:
    """Whether no other process holds the clients lock; if so this one now holds it exclusively
    (no command starts using the server while it is replaced), else its shared lock is kept."""
    try:
        fcntl.flock(lease, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fcntl.flock(lease, fcntl.LOCK_SH)  # a failed conversion may have dropped it
        return False
    return True


def release(warehouse: str) -> None:
    """Drop this process's lease on ``warehouse``'s server (tests; a process's exit does it too)."""
    lease = PROCESS.leases.pop(warehouse, None)
    if lease is not None:
        lease.close()
