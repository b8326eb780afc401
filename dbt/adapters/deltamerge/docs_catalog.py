"""What ``dbt docs generate`` shows of a Delta table, read from its Delta log.

The catalog entry Spark keeps of a Delta table is a copy: it has no row count, and its comments
are cut to what the embedded metastore stores. The Delta log has the table's own statistics,
description and column comments, which every Delta reader sees. Views have only their catalog
entry.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.binding import listed
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot, Stores, load_snapshot

_HELD = threading.local()


def delta_snapshot(information: str, stores: Stores) -> Snapshot | None:
    """The current version of the Delta table a ``show table extended`` text describes, if it is
    ours (reached through ``stores``, the invocation's).

    Inside ``held_snapshot(information)`` it is the snapshot held there, not read again.
    """
    entry = getattr(_HELD, "entry", None)
    if entry is not None and entry[0] == information:
        return entry[1]
    try:  # ours, or Delta's own entry (``binding/delta_catalog.py``)
        found = listed(information, stores, delta=True)
    except ValueError:  # a view an older release bound, its properties redacted: no statistics
        return None
    return load_snapshot(found.location) if found is not None else None


@contextmanager
def held_snapshot(information: str, stores: Stores) -> Iterator[Snapshot | None]:
    """One relation's Delta snapshot, read once for everything that asks for it in this thread
    (dbt-spark's catalog code and ours both need it for one catalog entry)."""
    snapshot = delta_snapshot(information, stores)
    _HELD.entry = (information, snapshot)
    try:
        yield snapshot
    finally:
        _HELD.entry = None


def catalog_stats(snapshot: Snapshot) -> dict[str, Any]:
    """dbt docs' table statistics: rows, bytes, files and version of the current Delta version."""
    values = {
        "rows": (
            "Rows",
            sum(f.live_records or 0 for f in snapshot.files),
            "Rows in the current Delta version",
        ),
        "bytes": ("Bytes", snapshot.size_bytes, "Bytes of the live data files"),
        "files": ("Files", len(snapshot.files), "Live data files"),
        "version": ("Delta version", snapshot.version, "The table's current Delta version"),
    }
    stats: dict[str, Any] = {}
    for key, (label, value, description) in values.items():
        stats.update(
            {
                f"stats:{key}:label": label,
                f"stats:{key}:value": value,
                f"stats:{key}:description": description,
                f"stats:{key}:include": True,
            }
        )
    return stats


def catalog_comments(snapshot: Snapshot) -> tuple[str | None, dict[str, str]]:
    """The table description and the column comments (by lowercased name) in the Delta metadata."""
    columns = {
        f.name.lower(): f.metadata["comment"]
        for f in snapshot.schema.fields
        if isinstance(f.metadata.get("comment"), str)
    }
    return snapshot.metadata.description or None, columns


def view_comments(spark: SparkSession, schema: str, identifier: str) -> tuple[str | None, dict[str, str]]:
    """A view's description and column comments (by lowercased name), from its catalog entry.

    ``show table extended`` lists neither the column comments nor a multi-line description in a
    readable way; ``DESCRIBE TABLE EXTENDED`` has both, the columns first, then the details.
    """
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quote_identifier(schema)}.{quote_identifier(identifier)}")
    columns: dict[str, str] = {}
    description = None
    in_columns = True
    for name, value, comment in rows.collect():
        if not name or name.startswith("#"):
            in_columns = False
        elif in_columns and comment:
            columns[name.lower()] = comment
        elif not in_columns and name == "Comment":
            description = value or None
    return description, columns
