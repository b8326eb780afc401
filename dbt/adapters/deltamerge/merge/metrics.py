"""Delta's MERGE metrics and operation parameters, as ``commitInfo`` records them."""

from __future__ import annotations

from collections.abc import Sequence

from dbt.adapters.deltamerge.delta.files import ChangeFile, WrittenFile
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.merge.clauses import MergeClause, MergeSpec
from dbt.adapters.deltamerge.merge.names import MergeCounts


def _partitions(files: Sequence[AddFile] | Sequence[WrittenFile]) -> int:
    return len({tuple(sorted(f.partition_values.items(), key=lambda kv: kv[0])) for f in files})


def merge_metrics(
    *,
    snapshot: Snapshot,
    candidates: list[AddFile],
    removed: list[AddFile],
    written: list[WrittenFile],
    changes: Sequence[ChangeFile] = (),
    counts: MergeCounts,
    num_source_rows: int,
    timings: tuple[int, int, int],
) -> dict[str, int]:
    """Every metric of the contract, from what the executor did."""
    partitioned = bool(snapshot.partition_columns)
    execution, scan, rewrite = timings
    return {
        "numSourceRows": num_source_rows,
        **counts.to_metrics(),
        "numTargetFilesBeforeSkipping": len(snapshot.files),
        "numTargetFilesAfterSkipping": len(candidates),
        "numTargetFilesRemoved": len(removed),
        "numTargetFilesAdded": len(written),
        "numTargetChangeFilesAdded": len(changes),
        "numTargetChangeFileBytes": sum(c.size for c in changes),
        "numTargetBytesBeforeSkipping": snapshot.size_bytes,
        "numTargetBytesAfterSkipping": sum(f.size for f in candidates),
        "numTargetBytesRemoved": sum(f.size for f in removed),
        "numTargetBytesAdded": sum(f.size for f in written),
        "numTargetPartitionsAfterSkipping": _partitions(candidates) if partitioned else 0,
        "numTargetPartitionsRemovedFrom": _partitions(removed) if partitioned else 0,
        "numTargetPartitionsAddedTo": _partitions(written) if partitioned else 0,
        "executionTimeMs": execution,
        "scanTimeMs": scan,
        "rewriteTimeMs": rewrite,
    }


def _predicates(clauses: tuple[MergeClause, ...]) -> list[dict[str, str]]:
    out = []
    for clause in clauses:
        entry: dict[str, str] = {"actionType": str(clause.action)}
        if clause.condition:
            entry["predicate"] = clause.condition
        out.append(entry)
    return out


def merge_parameters(spec: MergeSpec) -> dict[str, object]:
    """``operationParameters`` of a MERGE commit (JSON-encoded by the commit writer)."""
    return {
        "predicate": [spec.on_condition],
        "matchedPredicates": _predicates(spec.matched),
        "notMatchedPredicates": _predicates(spec.not_matched),
        "notMatchedBySourcePredicates": _predicates(spec.not_matched_by_source),
    }
