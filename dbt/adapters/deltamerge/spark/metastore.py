"""The embedded (Derby) metastore of a warehouse, which process holds it, and a partition
registration Hive would refuse.

Derby lets one process open a database at a time: it takes a POSIX lock on
``metastore_db/dbex.lck`` for as long as that process's JVM has the metastore open. A
second Spark on the same warehouse would print thousands of ``XSDB6`` lines and fail;
finding the holder first turns that into one clear sentence.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

METASTORE_FOLDER = "metastore_db"


# Taken by a process before its embedded session's JVM starts, held until it exits: Derby's own
# lock comes only once that JVM has opened the metastore, seconds later.
SESSION_LOCK = ".deltamerge-session.lock"


def claim_warehouse(warehouse: str) -> tuple[int | None, int | None]:
    """Take ``warehouse``'s session lock for this process: ``(descriptor, None)``, to keep open while
    the session lives; ``(None, pid)`` when another process holds it (``pid`` 0: not knowable here).
    """
    path = os.path.join(warehouse, SESSION_LOCK)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None, lock_holder(Path(path)) or 0
    return descriptor, None


def metastore_holder(warehouse: str, *, locks: str = "/proc/locks") -> int | None:
    """The process id holding ``warehouse``'s metastore, or None (free, or not knowable here).

    Reads the kernel's lock table (Linux ``/proc/locks``); elsewhere nothing is known and
    Spark reports the conflict itself.
    """
    return lock_holder(Path(warehouse) / METASTORE_FOLDER / "dbex.lck", locks=locks)


def lock_holder(lock_file: Path, *, locks: str = "/proc/locks") -> int | None:
    """The process id holding a POSIX lock on ``lock_file`` (from ``/proc/locks``), or None."""
    holders = lock_holders(lock_file, "POSIX", locks=locks)
    return holders[0] if holders else None


def lock_holders(lock_file: Path, kind: str, *, locks: str = "/proc/locks") -> list[int]:
    """The other processes holding a ``kind`` lock (``POSIX``, ``FLOCK``) on ``lock_file``."""
    try:
        inode = lock_file.stat().st_ino
        table = Path(locks).read_text()
    except OSError:
        return []
    return sorted({pid for pid, locked in _locks(table, kind) if locked == inode and pid != os.getpid()})


def _locks(table: str, kind: str) -> list[tuple[int, int]]:
    """``(pid, inode)`` of each ``kind`` lock in a ``/proc/locks`` text.

    >>> table = ("1: POSIX  ADVISORY  WRITE 32524 fe:00:2342920 0 EOF\\n"
    ...          "2: FLOCK  ADVISORY  READ 9 fe:00:7 0 EOF")
    >>> _locks(table, "POSIX"), _locks(table, "FLOCK")
    ([(32524, 2342920)], [(9, 7)])
    """
    found = []
    for line in table.splitlines():
        fields = line.split()
        if len(fields) >= 6 and fields[1] == kind and fields[4].isdigit():
            found.append((int(fields[4]), int(fields[5].rsplit(":", 1)[-1])))
    return found


def describe_process(pid: int) -> str:
    """``pid`` with its command line, shortened (``pid 42: dbt run``).

    An embedded session's JVM is a child of the Python process that started it (through
    ``pyspark-shell``); the user knows that process (a ``dbt`` command), so it is named instead.
    """
    command = _command_line(pid)
    if "pyspark-shell" in command:
        parent = _parent(pid)
        if parent is not None:
            pid, command = parent, _command_line(parent)
    if "SparkConnectServer" in command:
        command = "the dbt-deltamerge local Spark Connect server"
    return f"pid {pid}: {command[:100]}" if command else f"pid {pid}"


def _command_line(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    words = [w for w in raw.decode(errors="replace").split("\0") if w]
    return " ".join(os.path.basename(w) if i == 0 else w for i, w in enumerate(words))


def _parent(pid: int) -> int | None:
    try:
        # The field after the parenthesized command name is the state, then the parent's pid.
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def in_use_message(warehouse: str, pid: int, server_url: str | None = None) -> str:
    """The one line a second process on a warehouse in use gets."""
    if server_url is not None:
        return (
            f"The local Spark Connect server runs on the warehouse {warehouse}: use it with "
            f"`method: server` in the profile (or `method: connect`, `host: {server_url}`), or stop it "
            f"first (`deltamerge-server stop --warehouse {warehouse}`)."
        )
    who = f" ({describe_process(pid)})" if pid > 0 else ""
    return (
        f"The warehouse {warehouse} is in use by another process{who}: its "
        "embedded metastore admits one Spark process at a time. Wait for it to finish, or use "
        "`method: server` in the profile so that several dbt commands share one warm Spark."
    )


# Hive refuses the last step of Spark's RECOVER PARTITIONS (an ALTER TABLE marking the table's
# partitions as the catalog's, which ours are from their CREATE) when a partition column's type
# is one Hive does not know and the table has other partition columns: timestamp_ntz among several.
_HIVE_PARTITION_KEYS = "partition keys can not be changed"


def recover_partitions(spark: Any, name: str, expected: int) -> None:
    """``ALTER TABLE name RECOVER PARTITIONS``: register the partition folders of a table the
    catalog already tracks the partitions of (``expected`` of them).

    Spark adds every partition, then alters the table; where Hive refuses that alteration
    (``_HIVE_PARTITION_KEYS``) the partitions are in, and counted: fewer than ``expected`` raises
    Hive's error as it came.
    """
    from pyspark.errors import AnalysisException

    try:
        spark.sql(f"ALTER TABLE {name} RECOVER PARTITIONS")
    except AnalysisException as error:
        if _HIVE_PARTITION_KEYS not in str(error):
            raise
        if spark.sql(f"SHOW PARTITIONS {name}").count() < expected:
            raise
