"""What a merge counts: the rows each clause kind took (``MergeCounts``), and Delta's MERGE metrics.

Row counts are one ``MergeCounts`` value that speaks Delta's metric names only in
``to_metrics``; ``merge_metrics`` adds the file, byte and time metrics of the contract, and
``merge_parameters`` the ``operationParameters`` of a MERGE commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from dbt.adapters.deltamerge.delta.files import ChangeFile, WrittenFile
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.merge.spec import MergeClause, MergeSpec


@dataclass(frozen=True)
class MergeCounts:
    """The rows a merge inserted, updated, deleted and copied, by the clause kind that did it."""

    inserted: int = 0
    matched_updated: int = 0
    matched_deleted: int = 0
    not_matched_by_source_updated: int = 0
    not_matched_by_source_deleted: int = 0
    copied: int = 0

    @property
    def updated(self) -> int:
        return self.matched_updated + self.not_matched_by_source_updated

    @property
    def deleted(self) -> int:
        return self.matched_deleted + self.not_matched_by_source_deleted

    @property
    def changed(self) -> int:
        """Rows inserted, updated or deleted: a merge that changed none commits nothing."""
        return self.inserted + self.updated + self.deleted

    def to_metrics(self) -> dict[str, int]:
        """Delta's row-count metrics of a MERGE commit.

        >>> MergeCounts(inserted=1, matched_deleted=2).to_metrics()["numTargetRowsDeleted"]
        2
        """
        return {
            "numTargetRowsInserted": self.inserted,
            "numTargetRowsUpdated": self.updated,
            "numTargetRowsDeleted": self.deleted,
            "numTargetRowsCopied": self.copied,
            **{metric: getattr(self, field) for field, metric in _METRICS.items() if field != "copied"},
        }

    @classmethod
    def from_observed(cls, observed: Mapping[str, int | None]) -> MergeCounts:
        """The counts an ``Observation`` named by ``COUNTED_BY`` / ``copied`` collected (nulls are 0)."""
        return cls(**{f.name: int(observed.get(f.name) or 0) for f in fields(cls)})


# (clause kind, action) -> the MergeCounts field its rows add to.
COUNTED_BY = {
    ("matched", "update"): "matched_updated",
    ("matched", "delete"): "matched_deleted",
    ("not_matched_by_source", "update"): "not_matched_by_source_updated",
    ("not_matched_by_source", "delete"): "not_matched_by_source_deleted",
    ("not_matched", "insert"): "inserted",
}
_METRICS = {
    "matched_updated": "numTargetRowsMatchedUpdated",
    "matched_deleted": "numTargetRowsMatchedDeleted",
    "not_matched_by_source_updated": "numTargetRowsNotMatchedBySourceUpdated",
    "not_matched_by_source_deleted": "numTargetRowsNotMatchedBySourceDeleted",
    "copied": "numTargetRowsCopied",
}


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
