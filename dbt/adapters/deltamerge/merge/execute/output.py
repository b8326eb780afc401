"""Writing a merge's output rows: the table's new files, its change data, and the row counts.

Every executor ends here with rows that carry the code of the clause that takes each
(``_merge_action``). The counts come from ``observe`` on the write itself, not extra scans
(or on the materialization of a few rows an insert-only merge counts before writing);
a dry run sends the same rows to Spark's ``noop`` sink, so a failing cast still fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.delta import AddFile
from dbt.adapters.deltamerge.delta.data import (
    ROW_INDEX,
    Constraints,
    VectorUpdate,
    aligned_columns,
    enforced,
    with_identity_values,
    write_files,
    write_files_and_changes,
)
from dbt.adapters.deltamerge.delta.log import (
    STABLE_ROW_COMMIT_VERSION,
    STABLE_ROW_ID,
    identity_columns,
    identity_value_column,
)
from dbt.adapters.deltamerge.delta.txn import ChangeFile, WrittenFile
from dbt.adapters.deltamerge.merge.counts import MergeCounts
from dbt.adapters.deltamerge.merge.execute.actions import counted_actions, output_expressions
from dbt.adapters.deltamerge.merge.execute.change_rows import output_with_changes
from dbt.adapters.deltamerge.merge.execute.frames import ACTION, COPY, DROP, FILE, TARGET_PRESENT, MergeRun
from dbt.adapters.deltamerge.merge.pruning import FilePruning
from dbt.adapters.deltamerge.merge.source import checkpoint_with_aggregates

# Rows per written file of a merge-on-read merge's output (updated and inserted rows).
OUTPUT_ROWS_PER_FILE = 2_000_000


@dataclass(frozen=True)
class MergeOutput:
    """What an executor wrote (nothing in a dry run) and the rows each clause took."""

    written: list[WrittenFile] = field(default_factory=list)
    changes: list[ChangeFile] = field(default_factory=list)
    counts: MergeCounts = field(default_factory=MergeCounts)


@dataclass(frozen=True)
class Executed:
    """A plan, run: the files it removes, what it wrote, how long, and what it learnt of the source.

    ``source_rows`` and ``pruning`` are the plan's, except for an insert-only merge into a table
    without files, which profiles its source while writing it (one pass): then they come from
    that profile. The commit judges files a concurrent writer added by ``pruning``.
    """

    removed: list[AddFile]
    output: MergeOutput
    scan_ms: int
    rewrite_ms: int
    source_rows: int
    pruning: FilePruning | None
    # Merge-on-read: the deletion vectors that mark the target rows it removed (``removed``
    # then holds every file a vector changed or that went whole).
    vectors: VectorUpdate | None = None


def counted_output_rows(run: MergeRun, rows: DataFrame) -> tuple[DataFrame, MergeCounts]:
    """``rows`` computed once (a local checkpoint) and the rows each clause kind takes in them.

    For a few rows: writing them afterwards reads the checkpoint, not the target again.
    """
    codes = counted_actions(run.merge)
    computed, counted = checkpoint_with_aggregates(rows, "merge_counted", _count_expressions(codes))
    return computed, MergeCounts.from_observed(counted)


def row_id_outputs(target_alias: str) -> list[tuple[str, str]]:
    """``(column, SQL)`` of the stable row ids a rewrite keeps (``row_ids.py``): every target row
    keeps its id; a copied one its commit version too (an updated one gets the commit's, null)."""
    version = qualified(target_alias, STABLE_ROW_COMMIT_VERSION)
    return [
        (STABLE_ROW_ID, qualified(target_alias, STABLE_ROW_ID)),
        (STABLE_ROW_COMMIT_VERSION, f"CASE WHEN {quote_identifier(ACTION)} = '{COPY}' THEN {version} END"),
    ]


def _count_expressions(codes: dict[str, list[str]]) -> list[Column]:
    counts = [F.sum(F.col(ACTION).isin(*v).cast("long")).alias(k) for k, v in codes.items() if v]
    return [*counts, F.sum((F.col(ACTION) == COPY).cast("long")).alias("copied")]


def write_output_rows(
    run: MergeRun,
    rows: DataFrame,
    *,
    copy: bool,
    changes: bool,
    dry_run: bool,
    keep_row_ids: bool = False,
    marking: Callable[[DataFrame], int] | None = None,
) -> MergeOutput:
    """Write ``rows`` (each with its action code) as the table's new files; count every action.

    ``copy``: rows no clause takes are kept as they are (rows of rewritten files).
    ``changes``: change data rows are written beside, in the same pass. ``keep_row_ids``:
    updated rows keep their stable row ids though nothing is copied (merge-on-read).
    ``marking`` (merge-on-read, no change data): the output columns are computed once with each
    row's action, file and position, and kept by Spark; ``marking`` collects the positions of
    the removed target rows from them (returning how many), then the kept rows are written in
    as many files as they need. One scan of the target, of only the columns the output names.
    """
    codes = counted_actions(run.merge)
    observation = Observation("merge")
    observed = rows.observe(observation, *_count_expressions(codes))
    identities = {identity_value_column(i.column): i for i in identity_columns(run.snapshot.schema)}
    if identities and codes["inserted"]:
        observed = with_identity_values(observed, identities, F.col(ACTION).isin(*codes["inserted"]))
    outputs = output_expressions(run.merge, run.spec.target_alias, copy=copy)
    keeps = (copy or keep_row_ids) and STABLE_ROW_ID in rows.columns
    kept_ids = row_id_outputs(run.spec.target_alias) if keeps else []
    what = f"merge of model '{run.spec.model}'"
    table = run.snapshot
    if changes and not dry_run:
        frame = output_with_changes(
            observed,
            outputs=outputs,
            target_alias=run.spec.target_alias,
            schema=table.schema,
            codes=codes,
            what=what,
            row_ids=kept_ids,
        )
        written, change_files = write_files_and_changes(
            frame, table.location, table.partition_columns, table.metadata.configuration, table.schema
        )
        return MergeOutput(written, change_files, MergeCounts.from_observed(observation.get))
    dropped = [DROP, *codes["matched_deleted"], *codes["not_matched_by_source_deleted"]]
    if marking is not None:
        return _write_marked(run, observed, outputs, kept_ids, dropped, marking, dry_run)
    kept = observed.where(~F.col(ACTION).isin(*dropped)).select(
        *[F.expr(sql).alias(c) for c, sql in [*outputs, *kept_ids]]
    )
    return _write_kept(
        run, kept, outputs, kept_ids, lambda: MergeCounts.from_observed(observation.get), dry_run
    )


def _write_marked(
    run: MergeRun,
    observed: DataFrame,
    outputs: list[tuple[str, str]],
    kept_ids: list[tuple[str, str]],
    dropped: list[str],
    marking: Callable[[DataFrame], int],
    dry_run: bool,
) -> MergeOutput:
    carried = [F.col(c) for c in (ACTION, FILE, ROW_INDEX, TARGET_PRESENT)]
    projected = observed.select(*[F.expr(sql).alias(c) for c, sql in [*outputs, *kept_ids]], *carried)
    projected = projected.persist()
    try:
        # Counted from the kept rows (the job that fills them): an observation below a cached
        # plan is not always reported (an empty result, with adaptive execution).
        counted = projected.agg(*_count_expressions(counted_actions(run.merge))).first()
        counts = MergeCounts.from_observed(counted.asDict() if counted is not None else {})
        marked = marking(projected)
        files = max(1, min(64, (run.plan.source_rows + marked) // OUTPUT_ROWS_PER_FILE + 1))
        kept = projected.where(~F.col(ACTION).isin(*dropped)).select(*[c for c, _ in [*outputs, *kept_ids]])
        return _write_kept(run, kept.repartition(files), outputs, kept_ids, lambda: counts, dry_run)
    finally:
        projected.unpersist()


def _write_kept(
    run: MergeRun,
    kept: DataFrame,
    outputs: list[tuple[str, str]],
    kept_ids: list[tuple[str, str]],
    counts: Callable[[], MergeCounts],
    dry_run: bool,
) -> MergeOutput:
    table, what = run.snapshot, f"merge of model '{run.spec.model}'"
    # A clause's expression must fit its column's type, or the file would contradict the schema.
    values = T.StructType(kept.schema.fields[: len(outputs)])
    aligned = aligned_columns(values, table.schema, what=what, store_assignment=True)
    kept = kept.select(*aligned, *[F.col(c) for c, _ in kept_ids])
    if dry_run:
        checked = enforced(kept, Constraints.of(table.schema, table.metadata.configuration))
        checked.write.format("noop").mode("overwrite").save()
        return MergeOutput(counts=counts())
    written = write_files(
        kept, table.location, table.partition_columns, table.metadata.configuration, table.schema
    )
    return MergeOutput(written, [], counts())
