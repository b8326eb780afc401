"""The commit path's room: a transaction's actions, conflict checks, the put-if-absent commit,
row tracking and in-commit timestamps, operation metrics.

No Spark job (``tools/lint_layout.py``, rule 6), so a commit can be retried, and tested, without a
JVM. Callers outside ``delta/`` import this face, never its modules.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, CommitActions, WrittenFile
from dbt.adapters.deltamerge.delta.txn.commit import (
    CommitInfo,
    commit,
    committed_version_of,
    latest_version,
    maybe_checkpoint,
    read_commit,
)
from dbt.adapters.deltamerge.delta.txn.conflicts import (
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    ConcurrentTransaction,
    ReadSet,
    check_winner,
)
from dbt.adapters.deltamerge.delta.txn.metrics import (
    MERGE_WRITTEN_METRICS,
    affected_rows,
    cdc_event_metrics,
    dml_metrics,
    execution_time,
    merge_file_metrics,
    merge_metrics,
    merge_row_metrics,
    optimize_metrics,
    rows_affected,
    timing_metrics,
    write_metrics,
)
from dbt.adapters.deltamerge.delta.txn.transaction import (
    CommitOptions,
    PendingCommit,
    WriteResult,
    commit_files,
)

__all__ = [
    "MERGE_WRITTEN_METRICS",
    "ChangeFile",
    "CommitActions",
    "CommitInfo",
    "CommitOptions",
    "ConcurrentDeleteDelete",
    "ConcurrentDeleteRead",
    "ConcurrentTransaction",
    "PendingCommit",
    "ReadSet",
    "WriteResult",
    "WrittenFile",
    "affected_rows",
    "cdc_event_metrics",
    "check_winner",
    "commit",
    "commit_files",
    "committed_version_of",
    "dml_metrics",
    "execution_time",
    "latest_version",
    "maybe_checkpoint",
    "merge_file_metrics",
    "merge_metrics",
    "merge_row_metrics",
    "optimize_metrics",
    "read_commit",
    "rows_affected",
    "timing_metrics",
    "write_metrics",
]
