"""A table's folder without a Delta log: empty, another writer's creation in flight, or foreign files.

Delta's writers (ours, Delta on Spark, delta-rs) place a new table's data files before its first
version: between the two, another writer sees files and no log. Such a folder holding only what a
data writer places (``part-*.parquet`` files, ``column=value`` partition folders, our object-store
write folders) is given a few seconds for its version 0 before it is refused as foreign files;
a folder with anything else is refused at once. Only the refusal's path waits: a table with a log
is read as ever.
"""

from __future__ import annotations

import re
import time

from dbt.adapters.deltamerge.delta.location import TableLocation

# How long a reader waits for the first version of a table whose data files are in place: a
# creator under load (2 cores, two JVMs) took ~1-2 s from placing its files to its commit.
CREATION_WAIT_SECONDS = 15.0
_POLL_SECONDS = 0.2
# What a writer creating a table places before its first version: Spark's data files, its
# partition folders, our object-store write folders (``delta/data/files._write_folder``).
_DATA_ENTRY = re.compile(r"part-\d{5}-[\w.-]+\.parquet|[^=/]+=[^/]*|w[0-9a-f]{32}")


def has_delta_log(table: TableLocation) -> bool:
    """Whether ``table`` holds a Delta table (a non-empty ``_delta_log``)."""
    names = table.store.list_names(table.log_folder)
    return any(n.endswith(".json") or n.endswith(".checkpoint.parquet") for n in names)


def visible_entries(table: TableLocation) -> list[str]:
    """Entries of a table's folder that a table would be written over (hidden ones excluded)."""
    return sorted(n for n in table.store.list_names(table.path) if not n.startswith((".", "_")))


def may_be_in_flight(entries: list[str]) -> bool:
    """Whether every entry is one a writer creating a Delta table places before its first version.

    >>> may_be_in_flight(["part-00000-3f1e.c000.snappy.parquet", "day=2024-01-01"])
    True
    >>> may_be_in_flight(["part-00000-3f1e.c000.snappy.parquet", "data.csv"]), may_be_in_flight([])
    (False, False)
    """
    return bool(entries) and all(_DATA_ENTRY.fullmatch(e) for e in entries)


def first_version_appeared(table: TableLocation, seconds: float = CREATION_WAIT_SECONDS) -> bool:
    """Whether ``table``'s log gets a version within ``seconds`` (checked every 0.2 s)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(_POLL_SECONDS)
        if has_delta_log(table):
            return True
    return has_delta_log(table)
