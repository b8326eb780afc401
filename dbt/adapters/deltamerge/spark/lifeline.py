"""A dbt process's watch on the warm local server it uses: a server that dies fails the command at once.

Spark Connect's client is built for a remote cluster: a call that finds its server gone retries
for about ten minutes (``DefaultPolicy``: 15 retries, backoff up to 60 s), and a DataFrame's
finalizer retries the same way to release its server-side cache. Against the warm local server,
whose JVM either runs or is gone, that turned a crash into a dbt command that said nothing for
ten minutes, then hung at exit in finalizers. Here instead:

- a session on the local server retries a failed call for about three seconds (``RETRY_POLICY``):
  a local JVM that refuses connections is not coming back;
- a daemon thread watches the server's JVM; once it is gone (``lost``: crashed, killed, stopped),
  the process records one line saying what happened, with the supervisor's reason from its log
  (``lost_message``), and closes its sessions on that server: calls in flight fail, later ones
  fail at once, and a closed client's finalizers skip their cleanup calls;
- the error boundary (``errors.py``, ``connections.py``) says that line, with the version a model
  committed before, instead of a gRPC error; no later connection of the command starts a new server.

A new dbt invocation in the same process (dbt's Python API) starts afresh (``forget``).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from typing import Any

from dbt.adapters.deltamerge.spark.process import PROCESS
from dbt.adapters.deltamerge.spark.processes import jvm_alive
from dbt.adapters.deltamerge.spark.server import ServerState

POLL_SECONDS = 0.25
# How long the supervisor may take to log why its JVM ended (it polls every 0.5 s).
REASON_WAIT_SECONDS = 2.0
STOPPING = "deltamerge-server: stopping: "


def retry_policies() -> list[Any]:
    """The Spark Connect retry policies of a session on the local server (see the module's docstring)."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    # Retries of a failed call: after 50 ms, 200 ms, 800 ms and 2 s (about 3 s in all). Once they
    # are spent pyspark warns on stderr ("[RETRIES_EXCEEDED]"): the error names what happened.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]", category=UserWarning)
    return [DefaultPolicy(max_retries=4, initial_backoff=50, backoff_multiplier=4.0, max_backoff=2000)]


def watch(state: ServerState) -> None:
    """Watch ``state``'s JVM from a daemon thread for the rest of this process (once per server)."""
    with PROCESS.connect_lock:
        if state.pid in PROCESS.watched:
            return
        PROCESS.watched[state.pid] = state
    threading.Thread(target=_watch, args=(state,), name="deltamerge-server-watch", daemon=True).start()


def _watch(state: ServerState) -> None:
    while PROCESS.watched.get(state.pid) is state and jvm_alive(state.jvm_pid):
        time.sleep(POLL_SECONDS)
    if PROCESS.watched.get(state.pid) is state:
        _record(state)


def lost(error: BaseException | None = None) -> str | None:
    """What happened to a watched server that is gone (checked now, not only by the watch), else None.

    ``error``: the failure that asks; one that reads like a server going away (``dying``) waits up
    to ``REASON_WAIT_SECONDS`` for the JVM to end or its supervisor to log why it stops (a stopped
    server's JVM fails its running operations while its shutdown hooks still run).
    """
    if PROCESS.lost_server is None and not PROCESS.watched:
        return None  # no warm server in use (``session``, ``connect``): nothing to tell
    waiting = error is not None and dying(str(error))
    deadline = time.monotonic() + (REASON_WAIT_SECONDS if waiting else 0.0)
    while PROCESS.lost_server is None:
        for state in list(PROCESS.watched.values()):
            if not jvm_alive(state.jvm_pid) or (waiting and logged_reason(_log_tail(state.log), state)):
                _record(state)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    return PROCESS.lost_server


# What a Spark call fails with when its server goes away (gRPC statuses, a closed client, Spark's
# own text while a stopped server's JVM shuts down).
DYING = (
    "UNAVAILABLE", "CANCELLED", "Connection refused", "Socket closed", "Channel closed",
    "NO_ACTIVE_SESSION", "stopped SparkContext", "SparkContext was shut down",
)  # fmt: skip


def dying(text: str) -> bool:
    """Whether an error's text reads like its server going away.

    >>> dying("(java.lang.IllegalStateException) Cannot call methods on a stopped SparkContext.")
    True
    >>> dying("[TABLE_OR_VIEW_NOT_FOUND] The table or view `x` cannot be found.")
    False
    """
    return any(sign in text for sign in DYING)


def forget() -> None:
    """Start a new dbt invocation afresh: no server watched, none lost (the next one is started)."""
    with PROCESS.connect_lock:
        PROCESS.watched.clear()
        PROCESS.lost_server = None


def _record(state: ServerState) -> None:
    message = lost_message(state, _reason(state))
    with PROCESS.connect_lock:
        if PROCESS.lost_server is None:
            PROCESS.lost_server = message
        gone = [url for url in PROCESS.connect_sessions if url.split("/;", 1)[0] == state.url]
        sessions = [PROCESS.connect_sessions.pop(url) for url in gone]
    for session in sessions:
        # In-flight calls fail now; finalizers of its DataFrames skip their cleanup calls. The
        # channel of a dead server has nothing to release.
        with contextlib.suppress(Exception):
            session.client.close()


def _reason(state: ServerState) -> str:
    """The supervisor's reason for stopping ``state``'s server, from its log ('' if not logged)."""
    deadline = time.monotonic() + REASON_WAIT_SECONDS
    while True:
        reason = logged_reason(_log_tail(state.log), state)
        if reason or time.monotonic() > deadline:
            return reason
        time.sleep(0.1)


def _log_tail(log: str, size: int = 2**20) -> str:
    try:
        with open(log, "rb") as file:
            file.seek(max(0, os.path.getsize(log) - size))
            return file.read().decode(errors="replace")
    except OSError:
        return ""


def logged_reason(log: str, state: ServerState) -> str:
    """The reason the supervisor logged for stopping the server ``state`` names ('' if none yet).

    >>> s = ServerState(7, 1, "sc://localhost:1", "/w", "local[*]", "/w/l", 0.0, jvm_pid=8)
    >>> log = ("x deltamerge-server: serving on port 1 (pid 7, JVM pid 8)\\n"
    ...        "x deltamerge-server: stopping: crash: the JVM exited with code -9\\n")
    >>> logged_reason(log, s)
    'crash: the JVM exited with code -9'
    >>> logged_reason(log.replace("pid 7,", "pid 6,"), s)
    ''
    """
    serving = log.rfind(f"(pid {state.pid}, JVM pid {state.jvm_pid})")
    if serving < 0:
        return ""
    stopping = log.find(STOPPING, serving)
    return log[stopping + len(STOPPING) :].split("\n", 1)[0].strip() if stopping >= 0 else ""


def lost_message(state: ServerState, reason: str) -> str:
    """One line: what happened to the server, its log, and what the next command does.

    >>> s = ServerState(7, 1, "sc://localhost:1", "/w", "local[*]", "/w/s.log", 0.0, jvm_pid=8)
    >>> lost_message(s, "crash: the JVM exited with code -9")
    'the local Spark server crashed (exit -9); log: /w/s.log; the next command starts a new one'
    >>> lost_message(s, "signal SIGTERM")  # doctest: +ELLIPSIS
    'the local Spark server was stopped (SIGTERM: deltamerge-server stop --force?); log: ...'
    >>> lost_message(s, "")  # doctest: +ELLIPSIS
    'the local Spark server is gone (its JVM, pid 8, ended; its supervisor said nothing); log: ...'
    """
    if reason.startswith("crash:"):
        what = f"crashed (exit {reason.rsplit(' ', 1)[-1]})"
    elif reason.startswith("signal "):
        what = f"was stopped ({reason.removeprefix('signal ')}: deltamerge-server stop --force?)"
    elif reason:
        what = f"stopped ({reason})"
    else:
        what = f"is gone (its JVM, pid {state.jvm_pid}, ended; its supervisor said nothing)"
    return f"the local Spark server {what}; log: {state.log}; the next command starts a new one"
