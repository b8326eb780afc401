"""What a dry run of a merge reports (``../docs/configuration.md``, "Dry run"): plain values.

The plan names the executor Delta would pick, the candidate files before and after data
skipping with their bytes, and the files the merge would rewrite. Metrics of files a real run
writes (added files, bytes, partitions, change files) are left out: a dry run writes none and
a zero would read as a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.merge.clauses import MergeSpec

WRITTEN_METRICS = (
    "numTargetFilesAdded",
    "numTargetBytesAdded",
    "numTargetPartitionsAddedTo",
    "numTargetChangeFilesAdded",
    "numTargetChangeFileBytes",
)


def dry_run_plan(
    spec: MergeSpec,
    snapshot: Snapshot,
    candidates: Sequence[AddFile],
    rewritten: Sequence[AddFile],
    *,
    changes_definition: bool,
) -> dict[str, Any]:
    """The plan of a merge that was computed and not written (``rewritten``: its touched files)."""
    return {
        "executor": "insert_only" if spec.is_insert_only else "classic",
        "read_version": snapshot.version,
        "files_before_skipping": len(snapshot.files),
        "bytes_before_skipping": snapshot.size_bytes,
        "files_after_skipping": len(candidates),
        "bytes_after_skipping": sum(f.size for f in candidates),
        "files_to_rewrite": sorted(f.path for f in rewritten),
        "bytes_to_rewrite": sum(f.size for f in rewritten),
        "changes_table_definition": changes_definition,
    }


def without_written(metrics: dict[str, int]) -> dict[str, int]:
    """``metrics`` without those of files a real run would write.

    >>> without_written({"numTargetRowsInserted": 2, "numTargetFilesAdded": 0})
    {'numTargetRowsInserted': 2}
    """
    return {k: v for k, v in metrics.items() if k not in WRITTEN_METRICS}
