"""What a merge counts: the rows each clause kind took (``MergeCounts``).

The executors count rows with ``Observation``s named by the fields here (``COUNTED_BY`` maps a
clause's kind and action to its field); ``to_metrics`` gives them Delta's names
(``delta.metrics``, where every metric is named).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from dbt.adapters.deltamerge.delta.txn import merge_row_metrics


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
    def changed(self) -> int:
        """Rows inserted, updated or deleted: a merge that changed none commits nothing."""
        return (
            self.inserted
            + self.matched_updated
            + self.matched_deleted
            + self.not_matched_by_source_updated
            + self.not_matched_by_source_deleted
        )

    def to_metrics(self) -> dict[str, int]:
        """Delta's row-count metrics of a MERGE commit.

        >>> MergeCounts(inserted=1, matched_deleted=2).to_metrics()["numTargetRowsDeleted"]
        2
        """
        return merge_row_metrics(**asdict(self))

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
