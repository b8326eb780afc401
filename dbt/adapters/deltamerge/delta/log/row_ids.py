"""Stable row ids and row commit versions, kept for the rows a rewrite copies or updates.

PROTOCOL.md ("Row Tracking"): when row tracking is enabled, a row's stable id is its file's
materialized row id column where not null, else the file's ``baseRowId`` plus the row's index in
the file; its stable commit version likewise, from ``defaultRowCommitVersion``. Writers should
preserve them: a copied row keeps both (written to the materialized columns, whose names the
table's properties give), an updated row keeps its id and gets the new version (a null commit
version), an inserted row gets fresh ones (both null). ``read_files(..., row_ids=True)`` adds
the two values under ``STABLE_ROW_ID`` / ``STABLE_ROW_COMMIT_VERSION``; ``write_files`` stores
them in the materialized columns (never in statistics) and drops them for a table without row tracking.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import types as T

STABLE_ROW_ID = "_deltamerge_row_id"
STABLE_ROW_COMMIT_VERSION = "_deltamerge_row_commit_version"
STABLE_COLUMNS = (STABLE_ROW_ID, STABLE_ROW_COMMIT_VERSION)
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"


def materialized_columns(configuration: Mapping[str, str]) -> tuple[str, str] | None:
    """The materialized row id and row commit version columns of a table whose writers preserve
    row ids (row tracking enabled, not suspended, both names given), else None.

    >>> on = {"delta.enableRowTracking": "true", ROW_ID_COLUMN: "r", ROW_COMMIT_VERSION_COLUMN: "v"}
    >>> materialized_columns(on), materialized_columns({**on, "delta.rowTrackingSuspended": "true"})
    (('r', 'v'), None)
    """
    enabled = str(configuration.get("delta.enableRowTracking", "false")).lower() == "true"
    suspended = str(configuration.get("delta.rowTrackingSuspended", "false")).lower() == "true"
    names = configuration.get(ROW_ID_COLUMN), configuration.get(ROW_COMMIT_VERSION_COLUMN)
    if not enabled or suspended or not names[0] or not names[1]:
        return None
    return str(names[0]), str(names[1])


def materialized_fields(names: tuple[str, str]) -> list[T.StructField]:
    """The materialized columns as a read schema's fields (absent from a file: null)."""
    return [T.StructField(name, T.LongType(), True) for name in names]
