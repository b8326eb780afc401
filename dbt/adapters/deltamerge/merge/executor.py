"""Running a merge on Spark: Delta's insert-only and classic executors.

The source is materialized once (``localCheckpoint``, in the same pass that profiles
its keys for data skipping), so every phase sees the same rows. Insert-only: source
rows with no match in the target files that may match are appended; nothing is removed
(into an empty table the inserts are written in one pass, with no materialization).
Classic: phase 1 (``touched.py``) finds the touched files and enforces the
multiple-match rule; phase 2 rewrites only the touched files, with every output column
a CASE over the clause that takes the row. Row counts come from ``observe`` on the
rewrite itself, not extra scans.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.align import align_to_schema
from dbt.adapters.deltamerge.delta.commit import CommitInfo
from dbt.adapters.deltamerge.delta.conflicts import ReadSet
from dbt.adapters.deltamerge.delta.definition import (
    definition_actions,
    with_change_data_feed,
    with_schema,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.files import ChangeFile, WrittenFile
from dbt.adapters.deltamerge.delta.paths import local_path
from dbt.adapters.deltamerge.delta.pending import PendingCommit
from dbt.adapters.deltamerge.delta.protocol import change_data_feed_enabled, check_writable
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.write import (
    WriteResult,
    commit_files,
    write_files,
    write_files_and_changes,
)
from dbt.adapters.deltamerge.merge.changes import output_with_changes
from dbt.adapters.deltamerge.merge.clauses import MergeSpec
from dbt.adapters.deltamerge.merge.dry_run import dry_run_plan, without_written
from dbt.adapters.deltamerge.merge.expressions import check_expressions
from dbt.adapters.deltamerge.merge.joins import touched_joined_with_source, touched_with_unmatched_keys
from dbt.adapters.deltamerge.merge.materialized import checkpoint_with_aggregates
from dbt.adapters.deltamerge.merge.metrics import merge_metrics, merge_parameters
from dbt.adapters.deltamerge.merge.names import (
    ACTION,
    COPY,
    DROP,
    ROW_ID,
    SOURCE_PRESENT,
    TARGET_PRESENT,
    MergeCounts,
)
from dbt.adapters.deltamerge.merge.output import (
    action_expression,
    counted_actions,
    output_expressions,
)
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge, resolve
from dbt.adapters.deltamerge.merge.run import (
    MergeRun,
    aliased_source,
    matched_target,
)
from dbt.adapters.deltamerge.merge.touched import TouchedFiles, find_touched_files
from dbt.adapters.deltamerge.skipping.files import (
    FileFilter,
    files_from_profile,
    profile_aggregates,
)


def merge_into(
    spark: SparkSession,
    source_df: DataFrame,
    snapshot: Snapshot,
    spec: MergeSpec,
    *,
    schema: T.StructType | None = None,
    txn: tuple[str, int] | None = None,
    extra_metrics: Mapping[str, int] | None = None,
    prepare_only: bool = False,
    dry_run: bool = False,
) -> WriteResult:
    """Merge ``source_df`` into the table at ``snapshot`` as one MERGE commit.

    ``schema`` is the table schema the merge leaves (schema evolution): the new
    ``metaData`` is part of the merge's commit, and ``*`` actions then take only the
    columns the source has (an update keeps the others, an insert writes null).
    ``extra_metrics`` join Delta's in the commit (CDC apply's event counts).
    ``prepare_only`` writes the files but returns the commit as ``pending`` instead of making it.
    ``dry_run`` runs both phases with the output computed and discarded (Spark's ``noop``
    sink, so a failing cast still fails): the result's ``plan`` and row and file counts are
    the real run's; no file is written, nothing is committed.
    """
    started = time.monotonic()
    check_writable(
        snapshot.protocol,
        snapshot.metadata.configuration,
        snapshot.metadata.schema_string,
        table=snapshot.table_path,
    )
    current = snapshot
    if schema is not None:
        snapshot = with_schema(snapshot, schema)
    if spec.change_data_feed:
        snapshot = with_change_data_feed(snapshot)
    leading = definition_actions(current, snapshot)
    merge = resolve(spec, target=snapshot.schema, source=source_df.schema, lenient_star=schema is not None)
    check_expressions(spark, spec, snapshot.schema, source_df)
    if spec.is_insert_only and not snapshot.files:
        done = _insert_into_empty(spark, spec, merge, snapshot, source_df, dry_run=dry_run)
    else:
        done = _execute(spark, spec, merge, snapshot, source_df, dry_run=dry_run)
    candidates, skipping, touched, (written, changes, counts) = (
        done.files,
        done.skipping,
        done.touched,
        done.out,
    )
    read = ReadSet(
        files_read=frozenset(f.path for f in candidates),
        reads=lambda added: bool(skipping.keep(added)),
    )
    metrics = merge_metrics(
        snapshot=snapshot,
        candidates=candidates,
        removed=touched,
        written=written,
        counts=counts,
        changes=changes,
        num_source_rows=done.num_source_rows,
        timings=(int((time.monotonic() - started) * 1000), done.scan_ms, done.rewrite_ms),
    )
    metrics.update(extra_metrics or {})
    if dry_run:
        plan = dry_run_plan(spec, snapshot, candidates, touched, changes_definition=bool(leading))
        return WriteResult(None, "MERGE", without_written(metrics), snapshot, plan=plan)
    if not counts.changed and not leading:
        _discard(snapshot.table_path, [f.path for f in written] + [c.path for c in changes])
        return WriteResult(None, "MERGE", metrics, snapshot)
    if txn is not None:
        # Only a merge that commits anyway gives an older table the txn retention.
        snapshot = with_transaction_retention(snapshot)
        leading = definition_actions(current, snapshot)
    if prepare_only:
        pending = PendingCommit.of_files(
            table_path=snapshot.table_path,
            read_version=snapshot.version,
            operation="MERGE",
            leading=leading,
            written=written,
            removed=touched,
            changes=changes,
            parameters=merge_parameters(spec),
            metrics=metrics,
        )
        return WriteResult(None, "MERGE", metrics, snapshot, pending=pending)
    info = CommitInfo("MERGE", merge_parameters(spec), metrics, txn=txn)
    return commit_files(
        snapshot.table_path,
        snapshot,
        info,
        leading,
        written,
        touched,
        snapshot.metadata.configuration,
        changes,
        dataclasses.replace(read, removed=frozenset(f.path for f in touched)),
    )


@dataclass(frozen=True)
class _Done:
    """What an executor read, changed and wrote."""

    files: list[AddFile]
    num_source_rows: int
    skipping: FileFilter
    touched: list[AddFile]
    out: _Written
    scan_ms: int
    rewrite_ms: int


def _execute(
    spark: SparkSession,
    spec: MergeSpec,
    merge: ResolvedMerge,
    snapshot: Snapshot,
    source_df: DataFrame,
    *,
    dry_run: bool,
) -> _Done:
    """The source materialized and profiled, data skipping, then the insert-only or the classic executor."""
    # One pass over the source both materializes it (every phase must see the same rows)
    # and profiles its keys for data skipping.
    source, profile = checkpoint_with_aggregates(source_df, "merge_source", profile_aggregates(spec))
    candidates, num_source_rows, skipping = files_from_profile(spark, spec, snapshot, profile)
    joining = spec
    if skipping.ranges is not None and not any(r.has_nulls for r in skipping.ranges):
        joining = spec.without_null_safe_keys()
    change_data = change_data_feed_enabled(snapshot.metadata.configuration)
    run = MergeRun(
        spark, joining, merge, snapshot, source, candidates, num_source_rows, change_data=change_data
    )
    scan_started = time.monotonic()
    phase1 = TouchedFiles([]) if spec.is_insert_only else find_touched_files(run)
    scan_ms = int((time.monotonic() - scan_started) * 1000)
    rewrite_started = time.monotonic()
    out = (
        _write_inserts_only(run, dry_run) if spec.is_insert_only else _write_all_changes(run, phase1, dry_run)
    )
    rewrite_ms = int((time.monotonic() - rewrite_started) * 1000)
    return _Done(candidates, num_source_rows, skipping, phase1.files, out, scan_ms, rewrite_ms)


def _insert_into_empty(
    spark: SparkSession,
    spec: MergeSpec,
    merge: ResolvedMerge,
    snapshot: Snapshot,
    source_df: DataFrame,
    *,
    dry_run: bool,
) -> _Done:
    """Insert-only into a table with no files: one pass over the source, no materialization."""
    profile = Observation("merge_source")
    observed = source_df.observe(profile, *profile_aggregates(spec))
    run = MergeRun(spark, spec, merge, snapshot, observed, [], 0)
    started = time.monotonic()
    out = _write_inserts_only(run, dry_run)
    _, num_source_rows, skipping = files_from_profile(spark, spec, snapshot, profile.get)
    rewrite_ms = int((time.monotonic() - started) * 1000)
    return _Done([], num_source_rows, skipping, [], out, 0, rewrite_ms)


def _write_all_changes(run: MergeRun, phase1: TouchedFiles, dry_run: bool) -> _Written:
    """Phase 2: rewrite the touched files with every clause applied, plus the inserts."""
    if not run.spec.not_matched and not phase1.files:
        return [], [], MergeCounts()
    present = None
    if phase1.unmatched_keys is not None and not (run.spec.matched or run.spec.not_matched):
        joined, present = touched_with_unmatched_keys(run, phase1)
    else:
        joined = touched_joined_with_source(run, phase1)
    if phase1.duplicate_matches:
        # A target row deleted by several source rows is one deleted row (and one output row).
        both = F.col(TARGET_PRESENT).isNotNull() & F.col(SOURCE_PRESENT).isNotNull()
        joined = joined.where(both).dropDuplicates([ROW_ID]).union(joined.where(~both))
    spec = run.spec
    action = action_expression(run.merge, spec.target_alias, spec.source_alias, source_present=present)
    return _write_outputs(
        run, joined.withColumn(ACTION, F.expr(action)), copy=True, changes=run.change_data, dry_run=dry_run
    )


def _write_inserts_only(run: MergeRun, dry_run: bool) -> _Written:
    source = aliased_source(run)
    if run.candidates:
        source = source.join(matched_target(run, run.candidates), F.expr(run.spec.on_condition), "left_anti")
    whens = " ".join(
        f"WHEN ({c.condition or 'true'}) THEN 'not_matched_insert_{i}'"
        for i, c in enumerate(run.merge.not_matched)
    )
    # Readers infer an insert-only commit's changes from its adds: no change data files.
    rows = source.withColumn(ACTION, F.expr(f"CASE {whens} ELSE '{DROP}' END"))
    return _write_outputs(run, rows, copy=False, changes=False, dry_run=dry_run)


_Written = tuple[list[WrittenFile], list[ChangeFile], MergeCounts]


def _write_outputs(run: MergeRun, rows: DataFrame, *, copy: bool, changes: bool, dry_run: bool) -> _Written:
    codes = counted_actions(run.merge)
    observation = Observation("merge")
    metrics = [F.sum(F.col(ACTION).isin(*v).cast("long")).alias(k) for k, v in codes.items() if v]
    metrics.append(F.sum((F.col(ACTION) == COPY).cast("long")).alias("copied"))
    observed = rows.observe(observation, *metrics)
    dropped = [DROP, *codes["matched_deleted"], *codes["not_matched_by_source_deleted"]]
    outputs = output_expressions(run.merge, run.spec.target_alias, copy=copy)
    what = f"merge of model '{run.spec.model}'"
    table = run.snapshot
    change_files: list[ChangeFile] = []
    written: list[WrittenFile] = []
    if changes and not dry_run:
        frame = output_with_changes(
            observed,
            outputs=outputs,
            target_alias=run.spec.target_alias,
            schema=table.schema,
            codes=codes,
            what=what,
        )
        written, change_files = write_files_and_changes(
            frame, table.table_path, table.partition_columns, table.metadata.configuration
        )
    else:
        kept = observed.where(~F.col(ACTION).isin(*dropped)).select(
            *[F.expr(sql).alias(c) for c, sql in outputs]
        )
        # A clause's expression must fit its column's type, or the file would contradict the schema.
        kept = align_to_schema(kept, table.schema, what=what, store_assignment=True)
        if dry_run:
            kept.write.format("noop").mode("overwrite").save()
        else:
            written = write_files(
                kept, table.table_path, table.partition_columns, table.metadata.configuration
            )
    return written, change_files, MergeCounts.from_observed(observation.get)


def _discard(table_path: str, paths: list[str]) -> None:
    for path in paths:
        storage.delete_file(local_path(table_path, path), missing_ok=True)
