"""A real Spark standalone cluster and Spark Connect server, from the installed pyspark, for tests.

A master, one worker (its executors are their own JVMs) and the dbt-deltamerge local
Connect server pointed at that master, on free local ports, each stopped by process group.
The worker offers two slots of one core each: the Connect server's application takes one,
the other is left for an embedded dbt session pointed at the master (``method: session``
with ``spark.master``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

from dbt.adapters.deltamerge.spark import server

SPARK_HOME = os.path.dirname(pyspark.__file__)
# What each application on the test cluster takes: one of the worker's two slots.
APP_RESOURCES = {"spark.cores.max": "1", "spark.executor.cores": "1", "spark.executor.memory": "900m"}


@dataclass
class Cluster:
    """A running master + worker + Connect server."""

    master_url: str
    master_ui: int
    connect_url: str
    warehouse: str
    work_dir: str
    processes: list[subprocess.Popen[bytes]]

    def stop(self) -> None:
        server.stop(self.warehouse)
        for process in reversed(self.processes):
            end_group(process)

    def master_state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui}/json/", timeout=10) as reply:
            return json.load(reply)

    def executor_task_lines(self, app_name: str | None = None) -> int:
        """How many tasks the cluster's executors logged running (tasks never run in a driver).

        ``app_name``: only the executors of applications of that name.
        """
        ids = None
        if app_name is not None:
            state = self.master_state()
            apps = state.get("activeapps", []) + state.get("completedapps", [])
            ids = {a["id"] for a in apps if a["name"] == app_name}
        count = 0
        for log in Path(self.work_dir).glob("app-*/*/stderr"):
            if ids is None or log.parent.parent.name in ids:
                count += log.read_text(errors="replace").count("Running task")
        return count


def connect_profile(profile: str, url: str, schema: str) -> str:
    """A ``profiles.yml`` with one ``method: connect`` target for the test cluster."""
    return (
        f"{profile}:\n  target: cluster\n  outputs:\n    cluster:\n      type: deltamerge\n"
        f"      method: connect\n      host: {url}\n      schema: {schema}\n      threads: 1\n"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_cluster(root: str, server_conf: dict[str, str]) -> Cluster:
    """Master, one worker (1 core, 1 GB) and a Connect server whose warehouse is ``root``/warehouse."""
    warehouse = os.path.join(root, "warehouse")
    work_dir = os.path.join(root, "work")
    os.makedirs(work_dir, exist_ok=True)
    port, ui = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    env = {
        **os.environ,
        "SPARK_HOME": SPARK_HOME,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    processes = []
    try:
        processes.append(
            _spawn(
                [
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                env,
                os.path.join(root, "master.log"),
            )
        )
        _wait_for(lambda: _listening(port), "the master", processes[0])
        processes.append(
            _spawn(
                [
                    "org.apache.spark.deploy.worker.Worker",
                    master_url,
                    "--cores",
                    "2",
                    "--memory",
                    "2g",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    work_dir,
                ],
                env,
                os.path.join(root, "worker.log"),
            )
        )
        cluster = Cluster(master_url, ui, "", warehouse, work_dir, processes)
        _wait_for(lambda: _alive_workers(cluster) > 0, "the worker to register", processes[1])
        conf = {**APP_RESOURCES, **server_conf}
        state = server.start(warehouse, free_port(), master_url, conf)
        cluster.connect_url = state.url
        return cluster
    except BaseException:
        for process in reversed(processes):
            end_group(process)
        raise


def _spawn(args: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [os.path.join(SPARK_HOME, "bin", "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )


def _alive_workers(cluster: Cluster) -> int:
    try:
        return int(cluster.master_state().get("aliveworkers", 0))
    except (OSError, ValueError):
        # Not up yet; a master UI whose Jetty has started but whose handlers are not attached
        # yet answers /json/ with an HTML page (seen once in CI, the cluster then torn down).
        return 0


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait_for(ready, what: str, process: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode} while starting")
        if ready():
            return
        time.sleep(0.5)
    raise RuntimeError(f"{what} was not ready within {timeout:.0f} s")


def end_group(process: subprocess.Popen[bytes]) -> None:
    """Stop ``process``'s process group: SIGTERM, then SIGKILL after 20 s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=20)
            return
        except subprocess.TimeoutExpired:
            continue
