"""The warm local Spark Connect server of a warehouse: start, find, stop.

A server is pyspark's own ``SparkConnectServer`` with the warehouse, Hive metastore and session
defaults of the embedded mode, run by a small supervisor (``spark/daemon.py``) that stops it
after an idle time. Its state file, ``<warehouse>/.deltamerge-server.json``, names it once it
listens. ``method: server`` profiles start one on first use (``spark/warm.py``);
``deltamerge-server start/stop/status`` (``spark/server_cli.py``) manage one by hand.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path

from dbt.adapters.deltamerge.spark import daemon, processes
from dbt.adapters.deltamerge.spark.conf import SERVER_SESSION_DEFAULTS, session_conf
from dbt.adapters.deltamerge.spark.java import java_problem, java_version_problem
from dbt.adapters.deltamerge.spark.logs import server_java_option
from dbt.adapters.deltamerge.spark.metastore import describe_process, lock_holders, metastore_holder
from dbt.adapters.deltamerge.spark.packages import lock_path
from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.spark.view_text import METASTORE_URL, awaited_mark, prepare_server

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
STATE_FILE = ".deltamerge-server.json"
LOG_FILE = ".deltamerge-server.log"
SPEC_FILE = ".deltamerge-server.spec.json"
# Every dbt process using the server holds a shared lock on it (see spark/daemon.py).
CLIENTS_FILE = ".deltamerge-server.clients"
# Held while a server starts: concurrent first commands start one server.
START_LOCK = ".deltamerge-server.lock"
START_TIMEOUT_SECONDS = 120.0
RENEW_AFTER_COMMANDS = 400  # ~4,000 of the metastore's leaked PersistenceManagers (daemon.RENEW)
# The warm-up process's program (``python -m``) over ``spark/warmup.py``: a process this layer
# starts, not a module it imports (it imports nothing above it); a unit test checks the name.
WARMUP_MAIN = "dbt.adapters.deltamerge.model.warmup"
LOG_KEEP_BYTES = 10 * 2**20


class ServerError(RuntimeError):
    """The server cannot be started or used; the message is one line saying why and what to do."""


@dataclass(frozen=True)
class ServerState:
    """What the supervisor records in the warehouse once the server listens."""

    pid: int  # the supervisor's (its process group holds the JVM)
    port: int
    url: str
    warehouse: str
    master: str
    log: str
    started_at: float
    jvm_pid: int = 0
    pyspark: str = ""
    python: str = ""
    idle_minutes: float = 0.0
    conf: dict[str, str] = field(default_factory=dict)  # the session settings it started with
    session_seed: str = ""  # commands with the same settings share a session (``session_url``)


def session_url(state: ServerState, settings: dict[str, str]) -> str:
    """The Spark Connect URL of the server session for commands with ``settings``.

    Spark Connect compiles generated code per session (each has its own class loader): a new
    session per dbt command compiled every query's code again (~40 classes for a small merge,
    and the JIT compiling them anew). Commands with the same settings share one session instead;
    its id is derived from the server's seed (a new server, new sessions) and the settings (a
    command with other settings does not change theirs).

    >>> s = ServerState(7, 15002, "sc://localhost:15002", "/w", "local[*]", "/w/l", 0.0, session_seed="x")
    >>> session_url(s, {"a": "1"}) == session_url(s, {"a": "1"}) != session_url(s, {"a": "2"})
    True
    >>> session_url(s, {}).startswith("sc://localhost:15002/;session_id=")
    True
    """
    if not state.session_seed:
        return state.url
    digest = hashlib.sha256(json.dumps([state.session_seed, sorted(settings.items())]).encode())
    return f"{state.url}/;session_id={uuid.UUID(bytes=digest.digest()[:16], version=4)}"


def pyspark_version() -> str:
    """The installed pyspark's version, without importing pyspark."""
    return version("pyspark")


def interpreter() -> str:
    """This Python, as one path whichever way it was called (``../../.venv/bin/python`` too);
    not resolved through symlinks, which would lose the virtualenv."""
    return os.path.normpath(os.path.abspath(sys.executable))


def server_command(
    *, spark_home: str, warehouse: str, port: int, master: str, conf: dict[str, str]
) -> list[str]:
    """The ``spark-submit`` command line of the server (bound to this machine only).

    >>> cmd = server_command(spark_home="/s", warehouse="/w", port=15002, master="local[*]", conf={})
    >>> cmd[0], cmd[2], cmd[4]
    ('/s/bin/spark-submit', 'org.apache.spark.sql.connect.service.SparkConnectServer', 'local[*]')
    >>> "spark.connect.grpc.binding.port=15002" in cmd, "spark.sql.warehouse.dir=/w" in cmd
    (True, True)
    """
    settings = server_conf(warehouse, conf)
    settings.pop("spark.master", None)
    settings.update(
        {
            "spark.app.name": "dbt-deltamerge server",
            "spark.sql.catalogImplementation": "hive",
            "spark.connect.grpc.binding.port": str(port),
            "spark.connect.grpc.binding.address": "127.0.0.1",
        }
    )
    command = [os.path.join(spark_home, "bin", "spark-submit"), "--class", SERVER_CLASS, "--master", master]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return command


def server_conf(warehouse: str, conf: dict[str, str]) -> dict[str, str]:
    """The server's settings: the embedded session's, the settings every Connect client sets
    (so a client of this server sets none), then ``conf``."""
    return session_conf(warehouse, {**SERVER_SESSION_DEFAULTS, **conf})


def start(
    warehouse: str,
    port: int,
    master: str,
    conf: dict[str, str],
    idle_minutes: float = 0.0,
    *,
    warmup_rounds: int = 0,
    renew_after: int = RENEW_AFTER_COMMANDS,
) -> ServerState:
    """Start a server for ``warehouse`` and wait until it listens (or return the running one).

    ``idle_minutes``: stop after that long without a dbt command using it (0: never).
    ``warmup_rounds``: once it listens, it runs that many warm-up rounds between commands
    (``spark/warmup.py``), on the session of commands with the settings ``conf``. ``renew_after``:
    its JVM is replaced, once idle, after that many commands (0: never; ``daemon.RENEW``).

    Raises:
        ServerError: the port is taken, or the server did not start (its log's last lines).
    """
    running = status(warehouse)
    if running is not None:
        return running
    settings = dict(conf)  # the commands' session settings (``session_url``), before the JVM's own
    if daemon.port_open(port):
        raise ServerError(f"Port {port} on localhost is taken by another program; choose another (--port).")
    if java_problem() is not None:  # the JVM's Java: a missing one said as such, before anything
        raise ServerError(str(java_problem()))
    import pyspark  # the Spark the server runs: the one this process would use

    os.makedirs(warehouse, exist_ok=True)
    spark_home = os.path.dirname(pyspark.__file__)
    log = os.path.join(warehouse, LOG_FILE)
    if os.path.exists(log) and os.path.getsize(log) > LOG_KEEP_BYTES:
        os.replace(log, f"{log}.1")  # the previous servers' log, once
    java = server_conf(warehouse, conf)["spark.driver.extraJavaOptions"]
    if "log4j" not in java:  # a profile's own log4j setting wins
        conf = {**conf, "spark.driver.extraJavaOptions": f"{java} {server_java_option(warehouse)}"}
    state = ServerState(
        0, port, f"sc://localhost:{port}", warehouse, master, log, 0.0,
        pyspark=pyspark_version(), python=interpreter(), idle_minutes=idle_minutes,
        session_seed=uuid.uuid4().hex,
        conf={k: v for k, v in server_conf(warehouse, conf).items() if not k.startswith("spark.hadoop.")},
    )  # fmt: skip
    command = server_command(spark_home=spark_home, warehouse=warehouse, port=port, master=master, conf=conf)
    spec = {
        "command": command,
        # Python the server runs (UDFs, e.g. CONVERT's footer reads) is this interpreter and package.
        "env": {"SPARK_HOME": spark_home, "PYSPARK_PYTHON": interpreter()},
        "warehouse": warehouse,
        "port": port,
        "log": log,
        "idle_seconds": idle_minutes * 60,
        "renew_after": renew_after,
        "start_timeout": START_TIMEOUT_SECONDS,
        "state_file": os.path.join(warehouse, STATE_FILE),
        "clients_file": os.path.join(warehouse, CLIENTS_FILE),
        "state": {k: v for k, v in asdict(state).items() if k not in ("pid", "jvm_pid", "started_at")},
    }
    if warmup_rounds > 0:
        spec["warmup"] = [interpreter(), "-m", WARMUP_MAIN, os.path.join(warehouse, SPEC_FILE)]
        spec.update(warmup_rounds=warmup_rounds, warmup_settings=settings)
    mark = awaited_mark(server_conf(warehouse, conf)[METASTORE_URL], master)
    if mark is not None:  # announced once its metastore's view text is widened (spark/view_text.py)
        spec["ready_file"] = mark
    spec["resolve_lock"] = lock_path(server_conf(warehouse, conf))  # Ivy: one resolution at a time
    spec_file = os.path.join(warehouse, SPEC_FILE)
    Path(spec_file).write_text(json.dumps(spec, indent=2))
    supervisor = subprocess.Popen(
        [sys.executable, daemon.__file__, spec_file],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        cwd=warehouse, start_new_session=True,  # outlives this command; stopped as a process group
    )  # fmt: skip
    if mark is not None:
        _prepare(supervisor, port, log)
    return _wait_until_serving(supervisor, warehouse, log)


def _prepare(supervisor: subprocess.Popen[bytes], port: int, log: str) -> None:
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        prepare_server(port, lambda: supervisor.poll() is None, deadline)
    except Exception as error:  # stopped: the next command starts a server again
        processes.end_group(supervisor.pid)
        why = f"The Spark Connect server did not start ({error}); see {log}:\n{log_tail(log)}"
        raise ServerError(why) from error


def _wait_until_serving(supervisor: subprocess.Popen[bytes], warehouse: str, log: str) -> ServerState:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS + 10
    while time.monotonic() < deadline:
        state = recorded(warehouse)
        if state is not None and state.pid == supervisor.pid:
            return state
        if supervisor.poll() is not None:
            java = java_version_problem()  # a Java too old is the reason, said first
            why = f"{java}\n" if java else ""
            raise ServerError(f"The Spark Connect server did not start; {why}see {log}:\n{log_tail(log)}")
        time.sleep(daemon.START_POLL_SECONDS)
    processes.end_group(supervisor.pid)
    raise ServerError(f"The Spark Connect server did not listen within {START_TIMEOUT_SECONDS:.0f} s: {log}")


def hold_clients(warehouse: str, *, wait: bool, say: Callable[[str], None]) -> str:
    """Take the clients lock of ``warehouse``'s server exclusively, held until this process exits
    (a dbt command arriving meanwhile waits, then starts a new server): ``""`` once taken, else
    who holds it (``wait``: wait for them to finish first, saying so once)."""
    clients = os.path.join(warehouse, CLIENTS_FILE)
    holder = open(clients, "a+b")  # noqa: SIM115 - held until exit, as a client's lease is
    try:
        fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        users = ", ".join(describe_process(p) for p in lock_holders(Path(clients), "FLOCK"))
        if not wait:
            holder.close()
            return users or "a dbt command"
        say(f"Waiting for the dbt commands using the server to finish ({users or 'a dbt command'})")
        fcntl.flock(holder, fcntl.LOCK_EX)
    PROCESS.held_clients.append(holder)
    return ""


def stop(warehouse: str) -> ServerState | None:
    """Stop the server of ``warehouse``; the state it had, or None when none was running."""
    state = status(warehouse)
    if state is None:
        Path(warehouse, STATE_FILE).unlink(missing_ok=True)
        return None
    processes.end_group(state.pid)
    daemon.remove_state(os.path.join(warehouse, STATE_FILE), state.pid)
    return state


def orphan(warehouse: str) -> int | None:
    """The pid of a server JVM of ``warehouse`` whose supervisor is gone (killed), if one holds
    the warehouse's metastore: no state file names it, so nothing else would stop it."""
    holder = metastore_holder(warehouse)
    if holder is None or status(warehouse) is not None:
        return None
    line = processes.command_line(holder)
    return holder if SERVER_CLASS in line and f"derby.system.home={warehouse}" in line else None


def stop_orphan(warehouse: str) -> int | None:
    """Stop ``orphan(warehouse)``; its pid, or None when there was none."""
    pid = orphan(warehouse)
    if pid is not None and processes.is_group_leader(pid):
        processes.end_group(pid)
    elif pid is not None:
        processes.end_process(pid)
    return pid


def status(warehouse: str) -> ServerState | None:
    """The running server of ``warehouse``, or None (a stale state file is ignored)."""
    state = recorded(warehouse)
    return state if state is not None and is_serving(state) else None


def is_serving(state: ServerState) -> bool:
    """Whether the recorded supervisor still runs (not a reused pid) and its port listens."""
    return _is_supervisor(state.pid) and daemon.port_open(state.port)


def recorded(warehouse: str) -> ServerState | None:
    """The state file's server, running or not."""
    try:
        return ServerState(**json.loads(Path(warehouse, STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _is_supervisor(pid: int) -> bool:
    if pid <= 0 or not processes.alive(pid):
        return False
    return os.path.basename(daemon.__file__) in processes.command_line(pid)


def log_tail(log: str, lines: int = 15) -> str:
    """The last error lines of a server log (or its last lines)."""
    try:
        text = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    interesting = [line for line in text if "ERROR" in line or "Exception" in line] or text
    return "\n".join(interesting[-lines:])


def describe(state: ServerState, now: float | None = None) -> str:
    """One line about a running server.

    >>> s = ServerState(7, 15002, "sc://localhost:15002", "/w", "local[*]", "/w/l", 0.0, idle_minutes=30)
    >>> describe(s, now=600.0)
    'Running at sc://localhost:15002 (pid 7, master local[*], up 10 min, stops after 30 idle minutes)'
    """
    minutes = ((now if now is not None else time.time()) - state.started_at) / 60
    idle = f"stops after {state.idle_minutes:g} idle minutes" if state.idle_minutes > 0 else "no idle stop"
    return f"Running at {state.url} (pid {state.pid}, master {state.master}, up {minutes:.0f} min, {idle})"
