"""The warm local server's warm-up: small merges run while no dbt command uses the server.

A new server's JVM compiles Spark's code as commands use it: a 100-row incremental merge took
~1.2 s of model time over the first ~15 commands, ~0.8 s after 30 and ~0.6 s after 80
(BENCHMARKS.md, "The local loop"). Those commands are the user's first hour of work. So, the
first time no dbt command uses the listening server, its supervisor (``spark/daemon.py``) starts
this process (its imports then take no CPU from the command that started the server), which runs the
profile's ``server_warmup_rounds`` (default ``warm.DEFAULT_WARMUP_ROUNDS``) rounds of what a dbt
command runs, through this package's engine and on the server session the warehouse's commands
share (generated code is compiled per session, ``server.session_url``): the rounds are
``model/warmup.py``'s (that module is the warm-up process's ``__main__``: it hands its round to
``main`` here, so the model layer imports this one, never the other way), on a scratch table of
schema ``WARMUP_SCHEMA`` under ``<warehouse>/.deltamerge-warmup``; at the end the schema and the
folder are dropped.

It only uses idle time: a round starts while no dbt command holds the warehouse's clients lock,
and a command arriving during a round interrupts the round's write (its Spark operations are
tagged ``WARMUP_TAG``, so the command's own are not; the metastore's statements are left to
finish, since Derby closes a connection whose thread is interrupted), within ``POLL_SECONDS``.
It holds no lock itself: the server's idle time runs while it works. Its progress is in
``<warehouse>/PROGRESS_FILE`` (``deltamerge-server status`` says it); it ends by itself after its
rounds, when the server stops, or after ``MAX_FAILURES`` rounds that failed other than by an
interruption (said in the server's log).
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from dbt.adapters.deltamerge.spark.daemon import clients_busy, write_state

# A round: ``run_round(spark, schema, number, interruptible)`` (``model/warmup.run_round``).
Round = Callable[[Any, str, int, Callable[[], AbstractContextManager[object]]], None]
MAX_FAILURES = 3
POLL_SECONDS = 0.1
WARMUP_SCHEMA = "deltamerge_warmup"
WARMUP_TAG = "deltamerge-warmup"
PROGRESS_FILE = ".deltamerge-server.warmup.json"
SCRATCH_DIR = ".deltamerge-warmup"


def progress_path(warehouse: str) -> str:
    """The file that tells how far the warm-up of ``warehouse``'s server is."""
    return os.path.join(warehouse, PROGRESS_FILE)


def progress(warehouse: str, server_pid: int) -> str:
    """A few words on the warm-up of the server ``server_pid`` (its supervisor), or ""."""
    try:
        found = json.loads(Path(progress_path(warehouse)).read_text())
    except (OSError, ValueError):
        return ""
    if found.get("server_pid") != server_pid:
        return ""
    if found.get("state") == "warm":
        return f"warmed up ({found['done']} rounds in {found['seconds']:.0f} s)"
    if found.get("state") == "stopped":
        return f"warm-up stopped after {found['done']} rounds: {found.get('why', '')}"
    return f"warming up ({found['done']} of {found['rounds']} rounds, between commands)"


def warm_up(spec: dict[str, Any], server_pid: int, url: str, run_round: Round) -> str:
    """Run ``run_round`` the spec's number of times against the server at ``url`` (a session URL);
    how it ended."""
    from dbt.adapters.deltamerge.spark import connect

    warehouse, clients, rounds = spec["warehouse"], spec["clients_file"], int(spec["warmup_rounds"])
    settings = dict(spec.get("warmup_settings", {}))
    # "interrupted": rounds a dbt command interrupted (run again later)
    record: dict[str, Any] = {"server_pid": server_pid, "rounds": rounds, "done": 0, "interrupted": 0}
    record.update(state="warming", seconds=0.0)
    write_state(progress_path(warehouse), record)
    _wait_while_busy(clients)
    started = time.monotonic()
    spark = connect.connect_session(url, settings, preset=spec["state"].get("conf", {}), shared=True)
    scratch = os.path.join(warehouse, SCRATCH_DIR)
    failures, done = 0, 0
    try:
        _drop_scratch(spark, scratch)
        spark.sql(f"CREATE SCHEMA {WARMUP_SCHEMA} LOCATION '{scratch}'")
        while done < rounds:
            _wait_while_busy(clients)
            with _Interrupter(spark, clients) as interrupter:
                try:
                    run_round(spark, WARMUP_SCHEMA, done, lambda: _tagged(spark))
                except Exception as error:
                    if interrupter.interrupted:
                        record["interrupted"] += 1
                    else:
                        failures += 1
                        if failures >= MAX_FAILURES:
                            why = _first_line(error)
                            return _ended(warehouse, record, "stopped", done, started, why)
                    continue
            done += 1
            record.update(done=done, seconds=time.monotonic() - started)
            write_state(progress_path(warehouse), record)
        _wait_while_busy(clients)
        _drop_scratch(spark, scratch)
        return _ended(warehouse, record, "warm", done, started)
    finally:
        spark.clearTags()


@contextmanager
def _tagged(spark: Any) -> Iterator[None]:
    """The operations run inside are the ones a dbt command arriving interrupts."""
    spark.addTag(WARMUP_TAG)
    try:
        yield
    finally:
        spark.removeTag(WARMUP_TAG)


class _Interrupter:
    """While a round runs: interrupts its Spark operations as soon as a dbt command uses the server."""

    def __init__(self, spark: Any, clients_file: str) -> None:
        self.spark, self.clients_file = spark, clients_file
        self.interrupted = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="deltamerge-warmup-watch", daemon=True)

    def __enter__(self) -> _Interrupter:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._done.set()
        self._thread.join()

    def _watch(self) -> None:
        # Once a command came, every operation the round still starts is interrupted too.
        while not self._done.wait(POLL_SECONDS):
            if self.interrupted or clients_busy(self.clients_file):
                self.interrupted = True
                self.spark.interruptTag(WARMUP_TAG)


def _wait_while_busy(clients_file: str) -> None:
    while clients_busy(clients_file):
        time.sleep(POLL_SECONDS)


def _drop_scratch(spark: Any, scratch: str) -> None:
    spark.sql(f"DROP SCHEMA IF EXISTS {WARMUP_SCHEMA} CASCADE")
    shutil.rmtree(scratch, ignore_errors=True)


def _ended(
    warehouse: str, record: dict[str, Any], state: str, done: int, started: float, why: str = ""
) -> str:
    record.update(state=state, done=done, seconds=time.monotonic() - started, why=why)
    write_state(progress_path(warehouse), record)
    ran = f"{done} rounds in {record['seconds']:.0f} s, {record['interrupted']} interrupted by commands"
    return f"{state} after {ran}: {why}" if why else f"done: {ran}"


def main(argv: list[str], run_round: Round) -> int:
    """The warm-up process (``python -m dbt.adapters.deltamerge.model.warmup <spec.json>``, started
    by the supervisor): ``run_round``'s rounds between commands."""
    from dbt.adapters.deltamerge.spark import server
    from dbt.adapters.deltamerge.spark.logs import quiet_python_loggers

    os.nice(10)  # this process's own work (planning, the Delta log) yields to the user's
    spec = json.loads(Path(argv[0]).read_text())
    state = json.loads(Path(spec["state_file"]).read_text())
    served = server.ServerState(
        **{k: v for k, v in state.items() if k in server.ServerState.__dataclass_fields__}
    )
    url = server.session_url(served, dict(spec.get("warmup_settings", {})))
    quiet_python_loggers()  # a round's expected errors (a table not there yet) are not news
    started = time.monotonic()
    try:
        ended = warm_up(spec, state["pid"], url, run_round)
    except Exception as error:  # the server stopped, or Spark failed: said in the server's log
        ended = f"stopped: {_first_line(error)}"
    _log(spec, f"warm-up {ended} ({time.monotonic() - started:.0f} s since the server listened)")
    return 0


def _first_line(error: Exception) -> str:
    return f"{type(error).__name__}: {(str(error).splitlines() or [''])[0]}"


def _log(spec: dict[str, Any], message: str) -> None:
    with open(spec["log"], "a") as log:
        log.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} deltamerge-server: {message}\n")
