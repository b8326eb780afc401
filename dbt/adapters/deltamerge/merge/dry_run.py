"""What a dry run of a merge reports (``../docs/configuration.md``, "Dry run"): plain values.

The plan names the executor Delta would pick, the candidate files before and after data
skipping with their bytes (and how many files each skipping rule ruled out), the files the
merge would rewrite (merge-on-read: mark in deletion vectors), and the plan's join and change-data
decisions. Metrics of files a real run
writes (added files, bytes, partitions, change files) are left out: a dry run writes none and
a zero would read as a fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.txn import MERGE_WRITTEN_METRICS
from dbt.adapters.deltamerge.merge.execute.output import Executed
from dbt.adapters.deltamerge.merge.plan import MergePlan


@dataclass(frozen=True)
class DryRun:
    """A merge computed and not written: its plan and the metrics the real run would commit."""

    plan: dict[str, Any]
    metrics: dict[str, int]
    snapshot: Snapshot


def describe(
    plan: MergePlan, executed: Executed, metrics: dict[str, int], *, changes_definition: bool
) -> DryRun:
    """The dry run of ``plan``, whose executor ran with its output sent to Spark's ``noop`` sink."""
    snapshot, candidates, rewritten = plan.snapshot, plan.candidates, executed.removed
    described = {
        "executor": plan.executor,
        "read_version": snapshot.version,
        "files_before_skipping": len(snapshot.files),
        "bytes_before_skipping": snapshot.size_bytes,
        "files_after_skipping": len(candidates),
        "bytes_after_skipping": sum(f.size for f in candidates),
        "files_skipped_because": plan.skipped_by(),
        "files_to_rewrite": sorted(f.path for f in rewritten),
        "bytes_to_rewrite": sum(f.size for f in rewritten),
        "source_broadcast": plan.broadcast_source,
        "multiple_match_check": plan.multiple_match_check,
        "writes_change_data": plan.change_data,
        # Merge-on-read: files_to_rewrite are marked in deletion vectors (or removed whole), not copied.
        "merge_on_read": plan.marks_deleted,
        "changes_table_definition": changes_definition,
    }
    return DryRun(described, without_written(metrics), snapshot)


def without_written(metrics: dict[str, int]) -> dict[str, int]:
    """``metrics`` without those of files a real run would write.

    >>> without_written({"numTargetRowsInserted": 2, "numTargetFilesAdded": 0})
    {'numTargetRowsInserted': 2}
    """
    return {k: v for k, v in metrics.items() if k not in MERGE_WRITTEN_METRICS}
