"""Test hooks of the reliability tests: crash points, pause points and an ordered commit gate.

``DELTAMERGE_CRASH_AT=<point>`` in a process's environment makes it kill itself (no
cleanup, no ``finally``, exactly as an OOM kill or a pulled plug) when it reaches that
point. ``DELTAMERGE_PAUSE_AT=<point>:<folder>`` makes it wait there instead: it creates
``<folder>/<point>.reached`` and goes on once ``<folder>/<point>.go`` exists (the server's
fault tests kill its JVM meanwhile). ``DELTAMERGE_COMMIT_GATE=<folder>:<first|second>`` lines
up two writer processes (two real ``dbt run``s) on a table: both read their snapshot and write
their files, then the ``first`` commits and the ``second`` commits only after it, against a
version it did not read, so Delta's conflict rules decide every time. Unset, each hook costs a
dictionary lookup or two.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

POINTS = (
    "before_data_files",  # the source is computed, no file written yet
    "after_staging",  # Spark wrote the files into staging
    "mid_placement",  # the first file was moved to its place in the table
    "after_deletion_vectors",  # merge-on-read: the commit's vector file is written, no commit yet
    "before_commit",  # every file is in place, no commit yet
    "commit_file_written",  # the commit's temporary file is written and synced, not linked
    "after_commit",  # the version is committed, no checkpoint yet
    "before_catalog_bind",  # committed, the catalog still reads the old version
    "mid_catalog_bind",  # the catalog entry was dropped, not created again
)
# CDC apply's two-table commit (cdc/state.py), besides the points above.
CDC_POINTS = (
    "cdc_state_recorded",  # the state's next commit is written and recorded, the table not committed
    "cdc_table_committed",  # the table committed with the run's txn, the state not yet
)


def crash_point(name: str) -> None:
    """Kill this process if the environment asks for a crash at ``name``; wait there if it asks
    for a pause."""
    if os.environ.get("DELTAMERGE_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
    pause = os.environ.get("DELTAMERGE_PAUSE_AT")
    if pause and pause.split(":", 1)[0] == name:
        mark = os.path.join(pause.split(":", 1)[1], name)
        _touch(f"{mark}.reached")
        _wait_for(f"{mark}.go")


GATE_TIMEOUT_S = 600.0


@contextmanager
def commit_gate(name: str) -> Iterator[None]:
    """Hold a commit to the table in folder ``name`` until its turn, if the environment asks for a gate."""
    setting = os.environ.get("DELTAMERGE_COMMIT_GATE")
    if not setting:
        yield
        return
    folder, role = setting.rsplit(":", 1)
    mark = os.path.join(folder, name)
    if role == "second":
        _touch(f"{mark}.second-ready")
        _wait_for(f"{mark}.first-done")
        yield
        return
    _wait_for(f"{mark}.second-ready")
    try:
        yield
    finally:
        _touch(f"{mark}.first-done")


def _touch(path: str) -> None:
    with open(path, "w", encoding="utf-8"):
        pass


def _wait_for(path: str) -> None:
    deadline = time.monotonic() + GATE_TIMEOUT_S
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"commit gate: {path} did not appear within {GATE_TIMEOUT_S} s")
        time.sleep(0.05)
