"""Delta's operation metrics: every metric name of every operation this engine commits, in one place.

Each function gives one operation's ``operationMetrics`` under Delta's names (integers here;
``commitInfo`` records them as strings, as Delta does), from plain counts and the files a
write removed and added. ``rows_affected`` reads them back as the row counts Databricks
returns for a statement, and ``affected_rows`` as dbt's ``rows_affected``. The merge engine's
own counts (``merge.counts.MergeCounts``) and CDC apply's event counts become metrics here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol


class _File(Protocol):
    """A data file's size and partition values (an ``AddFile`` removed or a ``WrittenFile`` added)."""

    @property
    def size(self) -> int: ...

    @property
    def partition_values(self) -> Mapping[str, str | None]: ...


class _Written(_File, Protocol):
    @property
    def num_records(self) -> int: ...


def write_metrics(written: Sequence[_Written], removed: Sequence[_File]) -> dict[str, int]:
    """A WRITE's (and a CREATE TABLE AS SELECT's): files and rows written, files removed."""
    return {
        "numFiles": len(written),
        "numOutputRows": sum(f.num_records for f in written),
        "numOutputBytes": sum(f.size for f in written),
        "numRemovedFiles": len(removed),
        "numRemovedBytes": sum(f.size for f in removed),
    }


def convert_metrics(files: int) -> dict[str, int]:
    """CONVERT TO DELTA's."""
    return {"numConvertedFiles": files}


def dml_metrics(
    *,
    removed: Sequence[_File],
    written: Sequence[_File],
    changes: Sequence[_File],
    deleted: int | None = None,
    updated: int | None = None,
    copied: int = 0,
    scan_ms: int = 0,
    rewrite_ms: int = 0,
) -> dict[str, int]:
    """A DELETE's (``deleted``) or an UPDATE's (``updated``): files are rewritten, no deletion vectors
    written; a removed file's vector goes with it (``numDeletionVectorsRemoved``)."""
    rows = {"numDeletedRows": deleted} if deleted is not None else {"numUpdatedRows": updated or 0}
    return {
        "numRemovedFiles": len(removed),
        "numAddedFiles": len(written),
        "numAddedChangeFiles": len(changes),
        "numRemovedBytes": sum(f.size for f in removed),
        "numAddedBytes": sum(f.size for f in written),
        **rows,
        "numCopiedRows": copied,
        "numDeletionVectorsAdded": 0,
        "numDeletionVectorsRemoved": sum(1 for f in removed if getattr(f, "deletion_vector", None)),
        "numDeletionVectorsUpdated": 0,
        "scanTimeMs": scan_ms,
        "rewriteTimeMs": rewrite_ms,
    }


def optimize_metrics(
    *, removed: Sequence[_File], written: Sequence[_File], vectors_removed: int = 0
) -> dict[str, int]:
    """An OPTIMIZE's or a REORG's: files and bytes in and out, the new files' size distribution.

    >>> optimize_metrics(removed=[], written=[])["p50FileSize"]
    0
    """
    sizes = sorted(f.size for f in written)

    def at(fraction: float) -> int:
        return sizes[min(len(sizes) - 1, int(fraction * len(sizes)))] if sizes else 0

    return {
        "numAddedFiles": len(written),
        "numRemovedFiles": len(removed),
        "numAddedBytes": sum(sizes),
        "numRemovedBytes": sum(f.size for f in removed),
        "minFileSize": sizes[0] if sizes else 0,
        "p25FileSize": at(0.25),
        "p50FileSize": at(0.5),
        "p75FileSize": at(0.75),
        "maxFileSize": sizes[-1] if sizes else 0,
        "numDeletionVectorsRemoved": vectors_removed,
    }


def merge_row_metrics(
    *,
    inserted: int,
    matched_updated: int,
    matched_deleted: int,
    not_matched_by_source_updated: int,
    not_matched_by_source_deleted: int,
    copied: int,
) -> dict[str, int]:
    """A MERGE's row counts, by the clause kind that changed each row.

    >>> counts = merge_row_metrics(inserted=1, matched_updated=2, matched_deleted=0,
    ...     not_matched_by_source_updated=0, not_matched_by_source_deleted=3, copied=4)
    >>> counts["numTargetRowsDeleted"], counts["numTargetRowsUpdated"]
    (3, 2)
    """
    updated = matched_updated + not_matched_by_source_updated
    return {
        "numTargetRowsInserted": inserted,
        "numTargetRowsUpdated": updated,
        "numTargetRowsDeleted": matched_deleted + not_matched_by_source_deleted,
        "numTargetRowsCopied": copied,
        "numTargetRowsMatchedUpdated": matched_updated,
        "numTargetRowsMatchedDeleted": matched_deleted,
        "numTargetRowsNotMatchedBySourceUpdated": not_matched_by_source_updated,
        "numTargetRowsNotMatchedBySourceDeleted": not_matched_by_source_deleted,
        # Delta's rows written to data files (change rows not counted).
        "numOutputRows": inserted + updated + copied,
    }


def merge_file_metrics(
    *,
    snapshot_files: Sequence[_File],
    candidates: Sequence[_File],
    removed: Sequence[_File],
    written: Sequence[_File],
    changes: Sequence[_File],
    partitioned: bool,
) -> dict[str, int]:
    """A MERGE's file, byte and partition counts: before and after data skipping, removed, added."""
    return {
        "numTargetFilesBeforeSkipping": len(snapshot_files),
        "numTargetFilesAfterSkipping": len(candidates),
        "numTargetFilesRemoved": len(removed),
        "numTargetFilesAdded": len(written),
        "numTargetChangeFilesAdded": len(changes),
        "numTargetChangeFileBytes": sum(c.size for c in changes),
        "numTargetBytesBeforeSkipping": sum(f.size for f in snapshot_files),
        "numTargetBytesAfterSkipping": sum(f.size for f in candidates),
        "numTargetBytesRemoved": sum(f.size for f in removed),
        "numTargetBytesAdded": sum(f.size for f in written),
        "numTargetPartitionsAfterSkipping": _partitions(candidates) if partitioned else 0,
        "numTargetPartitionsRemovedFrom": _partitions(removed) if partitioned else 0,
        "numTargetPartitionsAddedTo": _partitions(written) if partitioned else 0,
    }


def timing_metrics(execution_ms: int, scan_ms: int, rewrite_ms: int) -> dict[str, int]:
    """Where an operation's time went."""
    return {**execution_time(execution_ms), "scanTimeMs": scan_ms, "rewriteTimeMs": rewrite_ms}


def execution_time(milliseconds: int) -> dict[str, int]:
    """An operation's whole time."""
    return {"executionTimeMs": milliseconds}


def merge_metrics(*, source_rows: int, rows: Mapping[str, int], files: Mapping[str, int]) -> dict[str, int]:
    """A MERGE's metrics in Delta's order: source rows, row counts, file counts."""
    return {"numSourceRows": source_rows, **rows, **files}


# The MERGE metrics of files a write adds: a dry run writes none, and a zero would read as a fact.
MERGE_WRITTEN_METRICS = (
    "numTargetFilesAdded",
    "numTargetBytesAdded",
    "numTargetPartitionsAddedTo",
    "numTargetChangeFilesAdded",
    "numTargetChangeFileBytes",
)


def cdc_event_metrics(
    *, received: int, applied: int, late: int, duplicates: int | None = None
) -> dict[str, int]:
    """CDC apply's event counts (this adapter's, recorded beside Delta's in the same commit)."""
    counts = {"numEventsReceived": received, "numEventsApplied": applied, "numEventsIgnoredAsLate": late}
    return counts if duplicates is None else {**counts, "numEventsDuplicate": duplicates}


def rows_affected(operation: str, metrics: Mapping[str, int]) -> dict[str, int]:
    """The row counts a statement returns, named as Databricks returns them for Delta tables.

    >>> rows_affected("DELETE", {"numDeletedRows": 3})
    {'num_affected_rows': 3, 'num_deleted_rows': 3}
    >>> rows_affected("MERGE", {"numTargetRowsInserted": 1, "numTargetRowsUpdated": 2})["num_affected_rows"]
    3
    """
    m = metrics
    if operation == "MERGE":
        counts = {
            "num_updated_rows": m.get("numTargetRowsUpdated", 0),
            "num_deleted_rows": m.get("numTargetRowsDeleted", 0),
            "num_inserted_rows": m.get("numTargetRowsInserted", 0),
        }
        return {"num_affected_rows": sum(counts.values()), **counts}
    if operation == "UPDATE":
        name, rows = "num_updated_rows", m.get("numUpdatedRows", 0)
    elif operation in ("DELETE", "TRUNCATE"):
        name, rows = "num_deleted_rows", m.get("numDeletedRows", 0)
    else:
        name, rows = "num_inserted_rows", m.get("numOutputRows", 0)
    return {"num_affected_rows": rows, name: rows}


def affected_rows(operation: str, metrics: Mapping[str, int]) -> int:
    """dbt's ``rows_affected``: rows inserted, updated and deleted (a merge), or written.

    >>> affected_rows("WRITE", {"numOutputRows": 5})
    5
    """
    return rows_affected(operation, metrics)["num_affected_rows"]


def _partitions(files: Sequence[_File]) -> int:
    return len({tuple(sorted(f.partition_values.items(), key=lambda kv: kv[0])) for f in files})
