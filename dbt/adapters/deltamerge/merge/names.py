"""Every name the merge engine makes up: internal columns, action codes, row-count metrics.

Internal columns are ``_merge_*`` and ``_*_row_present`` (user columns so named are not
supported); action codes name the clause that takes a row (``matched_update_0``) or ``copy`` /
``drop``; row counts are one ``MergeCounts`` value that speaks Delta's metric names only in
``to_metrics``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

# Internal columns of the joined frames.
ACTION = "_merge_action"  # the action code of the clause that takes the row
SOURCE_PRESENT = "_source_row_present"  # non-null on every source row (null after an outer join: absent)
TARGET_PRESENT = "_target_row_present"
FILE = "_merge_file"  # the target row's data file
ROW_ID = "_merge_row_id"  # a target row's id within one scan
UNMATCHED = "_merge_unmatched"  # alias of phase 1's unmatched target keys
UNMATCHED_ROW = "_merge_unmatched_row"  # true on every row of those keys
SOURCE_MATCHES = "_merge_source_matches"  # how many source rows have a key (null: none)

# Action codes besides the clauses' own.
COPY = "copy"  # the target row is written unchanged
DROP = "drop"  # nothing is written (a source row no clause inserts)


def action_code(kind: str, action: str, index: int) -> str:
    """A short code naming a clause's outcome.

    >>> action_code("matched", "delete", 1)
    'matched_delete_1'
    """
    return f"{kind}_{action}_{index}"


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
