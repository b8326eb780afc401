"""Planning a merge: every decision made once, before any target data is read (pure, no Spark).

``plan_merge`` takes the clause set resolved against the schemas, the table's snapshot, the
source's profile (row count, key ranges) and the prepared data skipping, and returns a
frozen ``MergePlan``: which executor runs (``ExecutorKind``: Delta's ``MergeIntoCommandBase``
picks insert-only or classic; merge-on-read adds ours),
every file with the reason it is read or skipped, the join condition and whether the
source is broadcast, how the multiple-match rule is checked, whether change data is
written, and the output columns. Executors run a plan on the source frame; the commit's
conflict check asks the plan's data skipping about files added concurrently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import types as T
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from dbt.adapters.deltamerge.delta import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.data import writes_deletion_vectors
from dbt.adapters.deltamerge.delta.log import change_data_feed_enabled
from dbt.adapters.deltamerge.merge.pruning import FilePruning, skips_by_key_range
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge
from dbt.adapters.deltamerge.merge.source import fits_in_broadcast
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.skipping.files import FileDecision

# Up to this many source rows, an insert-only merge materializes its new rows before writing.
COUNT_FIRST_ROWS = 10_000
# Every route a merge runs by (``pipeline.execute`` runs exactly these; the dry run reports them):
# - insert_into_empty: inserts only, into a table without files (the source profiled as written);
# - insert_only: Delta's insert-only executor (unmatched source rows appended, one anti-join);
# - one_join: merge-on-read in one join (``execute/one_join.py``: the source, or the columns its
#   conditions name, is broadcast; no NOT MATCHED BY SOURCE clause);
# - classic_mark_deleted: Delta's classic two phases, the removed rows marked in deletion vectors;
# - classic_rewrite: Delta's classic two phases, the touched files rewritten (copy-on-write);
# - empty_source: a source without rows and no NOT MATCHED BY SOURCE clause: no row can change,
#   so the target is not read (a no-op incremental run costs the source's one query).
ExecutorKind = Literal[
    "insert_into_empty", "insert_only", "one_join", "classic_mark_deleted", "classic_rewrite", "empty_source"
]
# How Delta's rule "a target row matched by several source rows is an error" is checked:
# not at all (inserts only), by the keys the source repeats (ON is the join keys' equality and no
# WHEN MATCHED clause joins each row anyway), or by grouping the key join by target row.
MultipleMatchCheck = Literal["none", "repeated_source_keys", "per_target_row"]


@dataclass(frozen=True)
class MergePlan:
    """What one merge will do, decided before it reads the target."""

    spec: MergeSpec
    merge: ResolvedMerge
    snapshot: Snapshot
    executor: ExecutorKind
    # Every file of the snapshot, read or skipped, with why (empty into an empty table).
    decisions: tuple[FileDecision, ...]
    source_rows: int
    # The ON condition the joins use: the spec's, with null-safe key equality relaxed to `=` when
    # no source key is null (the same rows match; Spark joins on `=` faster).
    join_condition: str
    broadcast_source: bool
    # The output rows are computed once and counted before they are written, and nothing is
    # written when no clause takes a row: for an insert-only merge of a few source rows that
    # may match (its new rows are at most the source's), where Spark's write of an empty
    # result (a job and its commit protocol) costs more than materializing the few rows first.
    counts_before_writing: bool
    multiple_match_check: MultipleMatchCheck
    # Change data files are written (the feed is on, or this merge turns it on).
    change_data: bool
    output_columns: tuple[str, ...]
    pruning: FilePruning | None

    @property
    def candidates(self) -> list[AddFile]:
        """The files data skipping keeps: those the merge reads."""
        return [d.file for d in self.decisions if d.kept]

    @property
    def marks_deleted(self) -> bool:
        """Merge-on-read: the executor marks the target rows it removes in deletion vectors and writes
        only updated and inserted rows (``delta/data/row_deletion.py``); the others rewrite files or
        insert."""
        return self.executor in ("one_join", "classic_mark_deleted")

    def skipped_by(self) -> dict[str, int]:
        """How many files each skipping rule ruled out."""
        return dict(Counter(d.reason for d in self.decisions if not d.kept))

    def reads(self, added: Sequence[AddFile]) -> bool:
        """Whether this merge would have read any of ``added`` (files committed concurrently)."""
        return self.pruning is None or bool(self.pruning.keep(added))


def plan_merge(
    spec: MergeSpec,
    merge: ResolvedMerge,
    snapshot: Snapshot,
    *,
    source_schema: T.StructType,
    source_rows: int,
    pruning: FilePruning | None,
) -> MergePlan:
    """The plan of merging a source of ``source_rows`` rows into ``snapshot``.

    ``pruning`` is None only for an insert-only merge into a table without files (then the
    source is profiled while it is written, and nothing is skipped).
    """
    decisions = tuple(pruning.decide(f) for f in snapshot.files) if pruning is not None else ()
    joining = spec
    if pruning is not None and pruning.ranges is not None and not any(r.has_nulls for r in pruning.ranges):
        joining = spec.without_null_safe_keys()
    broadcast = fits_in_broadcast(source_schema, source_rows)
    marks = not spec.copy_on_write and writes_deletion_vectors(snapshot)
    executor: ExecutorKind
    if spec.is_insert_only and not snapshot.files:
        executor = "insert_into_empty"
    elif source_rows == 0 and pruning is not None and not spec.not_matched_by_source:
        executor = "empty_source"
    elif spec.is_insert_only:
        executor = "insert_only"
    elif (
        marks
        and not spec.not_matched_by_source
        and (
            broadcast
            or fits_in_broadcast(narrow_schema(merge, joining.on_condition, source_schema), source_rows)
        )
    ):
        executor = "one_join"
    else:
        executor = "classic_mark_deleted" if marks else "classic_rewrite"
    return MergePlan(
        spec=spec,
        merge=merge,
        snapshot=snapshot,
        executor=executor,
        decisions=decisions,
        source_rows=source_rows,
        join_condition=joining.on_condition,
        broadcast_source=broadcast,
        counts_before_writing=executor == "insert_only"
        and source_rows <= COUNT_FIRST_ROWS
        and any(d.kept for d in decisions),
        multiple_match_check=_multiple_match_check(spec),
        change_data=not spec.is_insert_only and change_data_feed_enabled(snapshot.metadata.configuration),
        output_columns=merge.target_columns,
        pruning=pruning,
    )


def _multiple_match_check(spec: MergeSpec) -> MultipleMatchCheck:
    """How the multiple-match rule is checked (the insert-only executors join nothing twice).

    >>> _multiple_match_check(MergeSpec.from_config("m", {"unique_key": "id"}))
    'per_target_row'
    >>> _multiple_match_check(MergeSpec.from_config("m", {"unique_key": "id",
    ...     "when_matched": [], "when_not_matched_by_source": [{"action": "delete"}]}))
    'repeated_source_keys'
    """
    if spec.is_insert_only:
        return "none"
    if spec.matched or not skips_by_key_range(spec):
        return "per_target_row"
    return "repeated_source_keys"


def narrow_schema(merge: ResolvedMerge, join_condition: str, source: T.StructType) -> T.StructType:
    """The source columns whose names the ON condition or a clause condition mention (a superset
    of those the join and the choice of clause read): what a merge in one join broadcasts of a
    source too big to broadcast whole."""
    named = condition_names(merge, join_condition)
    return T.StructType([f for f in source.fields if f.name.lower() in named])


def condition_names(merge: ResolvedMerge, join_condition: str) -> set[str]:
    """Every name (lower case) in the ON condition and the clauses' conditions, whatever qualifies it.

    >>> spec = MergeSpec.from_config("m", {"unique_key": "id", "source_alias": "s"})
    >>> merge = ResolvedMerge(spec, ("id", "v"), (), (), ())
    >>> sorted(condition_names(merge, "t.id = s.`Id` AND s.v > 1"))
    ['id', 's', 't', 'v']
    """
    texts = [join_condition]
    for clause in (*merge.matched, *merge.not_matched, *merge.not_matched_by_source):
        texts += [clause.condition or "", clause.unchanged or ""]
    return {
        token.text.lower()
        for text in texts
        if text
        for token in Spark().tokenize(text)
        if token.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
    }
