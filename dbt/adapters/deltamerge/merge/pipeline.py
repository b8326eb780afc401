"""Running a merge: resolve, plan, execute, commit (``docs/architecture.md``, "One merge").

The source is materialized once (``localCheckpoint``, in the same pass that profiles its
keys for data skipping), so every phase sees the same rows; ``plan.py`` then decides
everything before the target is read, and the plan's executor runs: insert-only
(``insert_only.py``; into a table without files the source is written in one pass, with no
materialization) or classic (``touched.py`` finds the files, ``classic.py`` rewrites them).
The commit's conflict check asks the plan's data skipping about concurrently added files.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.commit import CommitInfo
from dbt.adapters.deltamerge.delta.conflicts import ReadSet
from dbt.adapters.deltamerge.delta.definition import (
    definition_actions,
    with_change_data_feed,
    with_schema,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.paths import local_path
from dbt.adapters.deltamerge.delta.protocol import check_writable
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.transaction import PendingCommit, WriteResult, commit_files
from dbt.adapters.deltamerge.merge.check import check_expressions
from dbt.adapters.deltamerge.merge.counts import merge_metrics, merge_parameters
from dbt.adapters.deltamerge.merge.dry_run import dry_run_plan, without_written
from dbt.adapters.deltamerge.merge.execute.classic import rewrite_touched_files
from dbt.adapters.deltamerge.merge.execute.frames import MergeRun
from dbt.adapters.deltamerge.merge.execute.insert_only import insert_unmatched
from dbt.adapters.deltamerge.merge.execute.output import MergeOutput
from dbt.adapters.deltamerge.merge.execute.touched import find_touched_files
from dbt.adapters.deltamerge.merge.plan import MergePlan, plan_merge
from dbt.adapters.deltamerge.merge.pruning import prepare_pruning, profile_aggregates
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge, resolve
from dbt.adapters.deltamerge.merge.source import checkpoint_with_aggregates
from dbt.adapters.deltamerge.merge.spec import MergeSpec


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
    plan, done = _execute(spark, spec, merge, snapshot, source_df, dry_run=dry_run)
    candidates, touched, out = plan.candidates, done.touched, done.out
    metrics = merge_metrics(
        snapshot=snapshot,
        candidates=candidates,
        removed=touched,
        written=out.written,
        counts=out.counts,
        changes=out.changes,
        num_source_rows=plan.source_rows,
        timings=(int((time.monotonic() - started) * 1000), done.scan_ms, done.rewrite_ms),
    )
    metrics.update(extra_metrics or {})
    if dry_run:
        described = dry_run_plan(plan, touched, changes_definition=bool(leading))
        return WriteResult(None, "MERGE", without_written(metrics), snapshot, plan=described)
    written, changes = out.written, out.changes
    if not out.counts.changed and not leading:
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
        ReadSet(
            files_read=frozenset(f.path for f in candidates),
            removed=frozenset(f.path for f in touched),
            reads=plan.reads,
        ),
    )


@dataclass(frozen=True)
class _Done:
    """What the plan's executor removed and wrote, and how long its phases took."""

    touched: list[AddFile]
    out: MergeOutput
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
) -> tuple[MergePlan, _Done]:
    """Profile the source, plan, and run the plan's executor."""
    if spec.is_insert_only and not snapshot.files:
        empty = plan_merge(spec, merge, snapshot, source_schema=source_df.schema, source_rows=0, pruning=None)
        return _insert_into_empty(spark, empty, source_df, dry_run=dry_run)
    # One pass over the source both materializes it (every phase must see the same rows)
    # and profiles its keys for data skipping.
    source, profile = checkpoint_with_aggregates(source_df, "merge_source", profile_aggregates(spec))
    pruning = prepare_pruning(spark, spec, snapshot, profile)
    plan = plan_merge(
        spec, merge, snapshot, source_schema=source.schema, source_rows=int(profile["n"]), pruning=pruning
    )
    run = MergeRun(spark, plan, source)
    if plan.executor == "insert_only":
        started = time.monotonic()
        out = insert_unmatched(run, dry_run=dry_run)
        return plan, _Done([], out, 0, int((time.monotonic() - started) * 1000))
    started = time.monotonic()
    phase1 = find_touched_files(run)
    scan_ms = int((time.monotonic() - started) * 1000)
    started = time.monotonic()
    out = rewrite_touched_files(run, phase1, dry_run=dry_run)
    return plan, _Done(phase1.files, out, scan_ms, int((time.monotonic() - started) * 1000))


def _insert_into_empty(
    spark: SparkSession, plan: MergePlan, source_df: DataFrame, *, dry_run: bool
) -> tuple[MergePlan, _Done]:
    """Insert-only into a table with no files: one pass over the source, no materialization.

    The source is profiled while it is written; the plan then gets its row count and the
    data skipping the commit's conflict check asks about concurrently added files.
    """
    profile = Observation("merge_source")
    observed = source_df.observe(profile, *profile_aggregates(plan.spec))
    started = time.monotonic()
    out = insert_unmatched(MergeRun(spark, plan, observed), dry_run=dry_run)
    rewrite_ms = int((time.monotonic() - started) * 1000)
    values = profile.get
    plan = dataclasses.replace(
        plan,
        source_rows=int(values["n"]),
        pruning=prepare_pruning(spark, plan.spec, plan.snapshot, values),
    )
    return plan, _Done([], out, 0, rewrite_ms)


def _discard(table_path: str, paths: list[str]) -> None:
    for path in paths:
        storage.delete_file(local_path(table_path, path), missing_ok=True)
