"""The dbt process around the Spark client: its state in one object, and Python's cyclic collector
kept off what lives until exit.

``PROCESS`` (``ProcessState``) is everything this package keeps for the life of the process. It is
global because what it holds belongs to the process, not to one dbt invocation: dbt instantiates
adapters and connection managers itself (once per invocation; dbt's Python API may invoke dbt many
times in one process), while a JVM with its metastore can start once per process, Spark Connect
sessions and their server-side state outlive a connection, a lease on a warm server's clients file
must be held until exit, and a server started in the background is waited for by a later
connection. One place, so a reader (and a test) sees all of it: nothing else in the package keeps
module-level state across connections. What one dbt invocation knows (its catalog reads, its
writes' ``txn`` numbers) is its ``invocation.Invocation``, kept here by invocation id.

The collector:

A small ``dbt run`` on the warm server spends most of its time in Python, and much of that in
the cyclic garbage collector: dbt, pyspark's Spark Connect client, pandas, pyarrow and grpc
leave millions of long-lived objects (modules, classes, functions, dbt's manifest), and every
full collection walks all of them again (measured in one ``dbt run`` of a 100-row merge: 5 full
collections, 0.39 s), as does the interpreter's last collection at exit (0.3 s).

Objects that exist once the imports are done live until the process ends. ``gc.freeze()``
moves them out of the collector's reach: later collections walk only what came after, and
none of them is ever freed by the collector (reference counting still frees what is not in a
cycle). That is done at two points, each once per process whatever runs in it (dbt's Python
API may invoke dbt many times): after this plugin's imports, and after the Spark client's.
At exit the process's objects are frozen too, so the interpreter's last collection walks
nothing: the memory goes back to the system with the process.
"""

from __future__ import annotations

import atexit
import gc
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import IO, Any


@dataclass
class ProcessState:
    """What the process keeps across dbt's connections and invocations (see the module's docstring)."""

    # The embedded SparkSession (``method: session``), once started: one per process (spark/embedded.py).
    embedded: Any = None
    # The warehouse's session lock, taken before the embedded session's JVM starts and held (open)
    # until exit: a second process on the warehouse is refused at once (spark/metastore.py).
    session_lock: int | None = None
    # Spark Connect sessions by URL; those other processes share (a warm server's) are never released
    # here; the settings set on each session (by id), so a later connection sets only what differs.
    connect_sessions: dict[str, Any] = field(default_factory=dict)
    shared_sessions: set[int] = field(default_factory=set)
    # Each Connect session's tracker of its operations running Spark jobs, by id (spark/cancel.py).
    running_jobs: dict[int, Any] = field(default_factory=dict)
    applied_settings: dict[int, dict[str, str]] = field(default_factory=dict)
    connect_lock: threading.Lock = field(default_factory=threading.Lock)
    # A shared lock on the clients file of each warm server's warehouse used (held until exit), and
    # the servers being found or started in the background, by warehouse (spark/warm.py).
    leases: dict[str, IO[bytes]] = field(default_factory=dict)
    prepared: dict[str, Future[Any]] = field(default_factory=dict)
    # The warm servers this process watches (by supervisor pid), and what happened to the one that
    # died or was stopped under it: every later Spark call fails with that line (spark/lifeline.py).
    watched: dict[int, Any] = field(default_factory=dict)
    lost_server: str | None = None
    # The points at which the collector froze what was alive (below), and whether the process was
    # prepared for dbt (``connections.prepare_process``).
    frozen: set[str] = field(default_factory=set)
    prepared_for_dbt: bool = False
    # The embedded metastores (by JDBC URL) whose view text columns this process saw widened: the
    # database belongs to one JVM for its life, and widened it stays (spark/view_text.py).
    wide_view_text: set[str] = field(default_factory=set)
    view_text_lock: threading.Lock = field(default_factory=threading.Lock)
    # Each dbt invocation's knowledge by invocation id, the last few (``invocation.py``): dbt's
    # Python API runs invocations one after another in one process.
    invocations: dict[str, Any] = field(default_factory=dict)
    invocations_lock: threading.Lock = field(default_factory=threading.Lock)
    # The clients locks this process holds on warm servers it stopped (``server.hold_clients``),
    # open until exit.
    held_clients: list[IO[bytes]] = field(default_factory=list)


PROCESS = ProcessState()


def freeze_imports(point: str) -> bool:
    """Freeze every object alive now, the first time ``point`` is reached in this process.

    Returns whether it froze (False: ``point`` was passed before).

    >>> freeze_imports("doctest"), freeze_imports("doctest")
    (True, False)
    """
    if point in PROCESS.frozen:
        return False
    if not PROCESS.frozen:
        # Registered once, at the first point: it runs after every exit handler registered later.
        atexit.register(gc.freeze)
    PROCESS.frozen.add(point)
    gc.freeze()
    return True
