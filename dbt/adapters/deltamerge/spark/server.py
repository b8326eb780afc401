"""``deltamerge-server``: a warm local Spark Connect server for a warehouse on this machine.

``start`` launches the Spark Connect server shipped with the installed pyspark, with the
warehouse, Hive metastore and session defaults of the embedded mode, and leaves it
running; ``stop`` ends it; ``status`` tells whether it runs. dbt commands whose profile
says ``method: connect`` and ``host: sc://localhost:<port>`` then skip Spark's start-up,
and several can run at once (one process holds the metastore: the server).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from dbt.adapters.deltamerge.spark.conf import DEFAULT_WAREHOUSE, session_conf
from dbt.adapters.deltamerge.spark.metastore import describe_process, metastore_holder

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
STATE_FILE = ".deltamerge-server.json"
LOG_FILE = ".deltamerge-server.log"
START_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class ServerState:
    """What ``start`` records in the warehouse for ``stop`` and ``status``."""

    pid: int
    port: int
    url: str
    warehouse: str
    master: str
    log: str
    started_at: float


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
    settings = session_conf(warehouse, conf)
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


def start(warehouse: str, port: int, master: str, conf: dict[str, str]) -> ServerState:
    """Start the server (or return the one already running for ``warehouse``)."""
    running = status(warehouse)
    if running is not None:
        return running
    holder = metastore_holder(warehouse)
    if holder is not None:
        raise SystemExit(f"The warehouse {warehouse} is in use by {describe_process(holder)}; stop it first.")
    if _port_open(port):
        raise SystemExit(f"Port {port} on localhost is taken; choose another with --port.")
    import pyspark

    os.makedirs(warehouse, exist_ok=True)
    spark_home = os.path.dirname(pyspark.__file__)
    log = os.path.join(warehouse, LOG_FILE)
    # Python the server runs (UDFs, e.g. CONVERT's footer reads) uses this interpreter and package.
    env = {**os.environ, "SPARK_HOME": spark_home, "PYSPARK_PYTHON": sys.executable}
    with open(log, "ab") as out:
        process = subprocess.Popen(
            server_command(spark_home=spark_home, warehouse=warehouse, port=port, master=master, conf=conf),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=warehouse,
            env=env,
            start_new_session=True,  # outlives this command; stopped as a process group
        )
    state = ServerState(process.pid, port, f"sc://localhost:{port}", warehouse, master, log, time.time())
    _wait_until_serving(process, state)
    Path(warehouse, STATE_FILE).write_text(json.dumps(asdict(state), indent=2))
    return state


def stop(warehouse: str) -> ServerState | None:
    """Stop the server of ``warehouse``; the state it had, or None when none was running."""
    state = status(warehouse)
    Path(warehouse, STATE_FILE).unlink(missing_ok=True)
    if state is None:
        return None
    _end_group(state.pid)
    return state


def status(warehouse: str) -> ServerState | None:
    """The running server of ``warehouse``, or None (a stale state file is ignored)."""
    try:
        state = ServerState(**json.loads(Path(warehouse, STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return state if _alive(state.pid) and _port_open(state.port) else None


def _wait_until_serving(process: subprocess.Popen[bytes], state: ServerState) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"The Spark Connect server exited while starting:\n{_log_tail(state.log)}")
        if _port_open(state.port):
            return
        time.sleep(0.5)
    _end_group(process.pid)
    raise SystemExit(
        f"The Spark Connect server did not listen within {START_TIMEOUT_SECONDS:.0f} s; see {state.log}"
    )


def _end_group(pid: int, timeout: float = 30.0) -> None:
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.2)
        if not _alive(pid):
            return


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a child of this process that exited but was not reaped yet
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return Path(f"/proc/{pid}").exists() or not Path("/proc").exists()


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _log_tail(log: str, lines: int = 15) -> str:
    try:
        text = Path(log).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    interesting = [line for line in text if "ERROR" in line or "Exception" in line] or text
    return "\n".join(interesting[-lines:])


def main(argv: list[str] | None = None) -> int:
    """The ``deltamerge-server`` command: ``start``, ``stop`` or ``status``."""
    parser = argparse.ArgumentParser(prog="deltamerge-server", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--warehouse", default=DEFAULT_WAREHOUSE, help="the profile's warehouse folder")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--master", default="local[*]", help="Spark master (default: local[*])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    args = parser.parse_args(argv)
    warehouse = os.path.abspath(os.path.expanduser(args.warehouse))
    if args.action == "start":
        conf = dict(item.split("=", 1) for item in args.conf)
        state = start(warehouse, args.port, args.master, conf)
        print(f"Spark Connect server for {warehouse} at {state.url} (pid {state.pid}, log {state.log})")
        print(f"Profile: method: connect, host: {state.url}")
        return 0
    if args.action == "stop":
        stopped = stop(warehouse)
        print(
            f"Stopped the server at {stopped.url} (pid {stopped.pid})" if stopped else "No server was running"
        )
        return 0
    running = status(warehouse)
    if running is None:
        print(f"No Spark Connect server runs for {warehouse}")
        return 1
    minutes = (time.time() - running.started_at) / 60
    print(f"Running at {running.url} (pid {running.pid}, master {running.master}, up {minutes:.0f} min)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
