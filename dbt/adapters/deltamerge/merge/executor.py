"""Running a merge on Spark: Delta's insert-only and classic executors.

The source is materialized once (``localCheckpoint``), so both phases see the same
rows. Insert-only: source rows with no match in the target files that may match are
appended; nothing is removed. Classic: phase 1 joins the source with the candidate
files to find the touched files and to enforce the multiple-match rule; phase 2
rewrites only the touched files, with every output column a CASE over the clause that
takes the row. Row counts come from ``observe`` on the rewrite itself, not extra scans.
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.align import align_to_schema
from dbt.adapters.deltamerge.delta.commit import CommitInfo
from dbt.adapters.deltamerge.delta.conflicts import ReadSet
from dbt.adapters.deltamerge.delta.definition import definition_actions, with_change_data_feed, with_schema
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.files import ChangeFile, WrittenFile
from dbt.adapters.deltamerge.delta.paths import local_path, table_path_of
from dbt.adapters.deltamerge.delta.protocol import change_data_feed_enabled, check_writable
from dbt.adapters.deltamerge.delta.read import read_files
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.write import (
    WriteResult,
    commit_files,
    write_files,
    write_files_and_changes,
)
from dbt.adapters.deltamerge.merge.broadcast import fits_in_broadcast
from dbt.adapters.deltamerge.merge.changes import output_with_changes
from dbt.adapters.deltamerge.merge.clauses import MergeSpec
from dbt.adapters.deltamerge.merge.metrics import merge_metrics, merge_parameters
from dbt.adapters.deltamerge.merge.output import (
    ACTION,
    COPY,
    DROP,
    SOURCE_PRESENT,
    TARGET_PRESENT,
    action_expression,
    counted_actions,
    output_expressions,
)
from dbt.adapters.deltamerge.merge.pruning import (
    FileFilter,
    files_from_profile,
    files_to_read,
    profile_aggregates,
    skips_by_key_range,
)
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge, resolve
from dbt.adapters.deltamerge.sql import quote_identifier

MULTIPLE_MATCHES = (
    "Cannot perform Merge as multiple source rows matched and attempted to modify the same target row "
    "in the Delta table in possibly conflicting ways."
)
FILE, ROW_ID = "_merge_file", "_merge_row_id"


class MultipleMatchesError(DeltaError):
    """Delta's error: several source rows match one target row."""


@dataclass
class _Run:
    spark: SparkSession
    spec: MergeSpec
    merge: ResolvedMerge
    snapshot: Snapshot
    source: DataFrame
    candidates: list[AddFile]
    num_source_rows: int
    # Phase 1 saw a target row matched by several source rows (only an unconditional delete allows it).
    duplicate_matches: bool = False
    # Write change data (the table has the feed on, or this merge switches it on).
    change_data: bool = False


def merge_into(
    spark: SparkSession,
    source_df: DataFrame,
    snapshot: Snapshot,
    spec: MergeSpec,
    *,
    schema: T.StructType | None = None,
    txn: tuple[str, int] | None = None,
) -> WriteResult:
    """Merge ``source_df`` into the table at ``snapshot`` as one MERGE commit.

    ``schema`` is the table schema the merge leaves (schema evolution): the new
    ``metaData`` is part of the merge's commit, and ``*`` actions then take only the
    columns the source has (an update keeps the others, an insert writes null).
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
    done = _insert_past_target(spark, spec, merge, snapshot, source_df) if spec.is_insert_only else None
    done = done or _execute(spark, spec, merge, snapshot, source_df)
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
    changed = (
        counts["numTargetRowsInserted"] + counts["numTargetRowsUpdated"] + counts["numTargetRowsDeleted"]
    )
    if not changed and not leading:
        _discard(snapshot.table_path, [f.path for f in written] + [c.path for c in changes])
        return WriteResult(None, "MERGE", metrics, snapshot)
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
    spark: SparkSession, spec: MergeSpec, merge: ResolvedMerge, snapshot: Snapshot, source_df: DataFrame
) -> _Done:
    """The source materialized once, data skipping, then the insert-only or the classic executor."""
    source = source_df.localCheckpoint(eager=True)
    candidates, num_source_rows, skipping = files_to_read(spark, spec, snapshot, source)
    joining = spec
    if skipping.ranges is not None and not any(r.has_nulls for r in skipping.ranges):
        joining = spec.without_null_safe_keys()
    change_data = change_data_feed_enabled(snapshot.metadata.configuration)
    run = _Run(spark, joining, merge, snapshot, source, candidates, num_source_rows, change_data=change_data)
    scan_started = time.monotonic()
    touched = [] if spec.is_insert_only else _find_touched_files(run)
    scan_ms = int((time.monotonic() - scan_started) * 1000)
    rewrite_started = time.monotonic()
    out = _write_inserts_only(run) if spec.is_insert_only else _write_all_changes(run, touched)
    rewrite_ms = int((time.monotonic() - rewrite_started) * 1000)
    return _Done(candidates, num_source_rows, skipping, touched, out, scan_ms, rewrite_ms)


def _insert_past_target(
    spark: SparkSession, spec: MergeSpec, merge: ResolvedMerge, snapshot: Snapshot, source_df: DataFrame
) -> _Done | None:
    """Insert-only in one pass over the source, when its keys turn out to match no target file.

    The inserts are written while the same pass profiles the source keys; if data skipping
    then proves no target file can hold a matching key (new keys past the table's, or an
    empty table), those files are the result. Otherwise they are discarded (None) and the
    merge runs the usual way. No second read, so no materialized source is needed.
    """
    if snapshot.files and not skips_by_key_range(spec):
        return None  # no key range to skip by: every file would be read anyway
    profile = Observation("merge_source")
    observed = source_df.observe(profile, *profile_aggregates(spec))
    run = _Run(spark, spec, merge, snapshot, observed, [], 0)
    started = time.monotonic()
    written, changes, counts = _write_inserts_only(run)
    candidates, num_source_rows, skipping = files_from_profile(spark, spec, snapshot, profile.get)
    if candidates:
        _discard(snapshot.table_path, [f.path for f in written])
        return None
    rewrite_ms = int((time.monotonic() - started) * 1000)
    return _Done([], num_source_rows, skipping, [], (written, changes, counts), 0, rewrite_ms)


def _aliased_source(run: _Run) -> DataFrame:
    return run.source.withColumn(SOURCE_PRESENT, F.lit(True)).alias(run.spec.source_alias)


def _aliased_target(run: _Run, files: list[AddFile]) -> DataFrame:
    target = read_files(run.spark, run.snapshot, files)
    return (
        target.withColumn(FILE, F.input_file_name())
        .withColumn(ROW_ID, F.monotonically_increasing_id())
        .withColumn(TARGET_PRESENT, F.lit(True))
        .alias(run.spec.target_alias)
    )


def _find_touched_files(run: _Run) -> list[AddFile]:
    """Phase 1: files holding a matched row (or an unmatched row a NOT MATCHED BY SOURCE clause changes)."""
    if not run.candidates:
        return []
    spec = run.spec
    target = _aliased_target(run, run.candidates)
    joined = _aliased_source(run).join(target, F.expr(spec.on_condition), "inner")
    if spec.is_matched_only and all(c.condition for c in spec.matched):
        joined = joined.where(" OR ".join(f"({c.condition})" for c in spec.matched))
    per_row = joined.groupBy(FILE, ROW_ID).agg(F.count(F.lit(1)).alias("n"))
    per_file = per_row.groupBy(FILE).agg(F.max("n").alias("most")).collect()
    run.duplicate_matches = any(r["most"] > 1 for r in per_file)
    if run.duplicate_matches and not spec.is_only_one_unconditional_delete:
        raise MultipleMatchesError(_multiple_matches_message(run, joined))
    hit = {table_path_of(r[FILE]) for r in per_file}
    if spec.not_matched_by_source:
        hit |= _files_with_unmatched_changes(run, target)
    return [f for f in run.candidates if local_path(run.snapshot.table_path, f.path) in hit]


def _files_with_unmatched_changes(run: _Run, target: DataFrame) -> set[str]:
    conditions = [c.condition for c in run.spec.not_matched_by_source]
    unmatched = target.join(_aliased_source(run), F.expr(run.spec.on_condition), "left_anti")
    if all(conditions):
        unmatched = unmatched.where(" OR ".join(f"({c})" for c in conditions))
    return {table_path_of(r[FILE]) for r in unmatched.select(FILE).distinct().collect()}


def _multiple_matches_message(run: _Run, joined: DataFrame) -> str:
    keys = run.spec.unique_key or tuple(f.name for f in run.snapshot.schema.fields[:3])
    columns = [F.col(f"{quote_identifier(run.spec.target_alias)}.{quote_identifier(k)}") for k in keys]
    dupes = joined.groupBy(ROW_ID, *columns).count().where("count > 1").limit(5).collect()
    examples = "; ".join(", ".join(f"{k}={r[i + 1]!r}" for i, k in enumerate(keys)) for r in dupes)
    return (
        f"{MULTIPLE_MATCHES} Target rows matched more than once (by {list(keys)}): {examples}. "
        "De-duplicate the model's result on its unique_key, or make the ON condition stricter."
    )


def _write_all_changes(run: _Run, touched: list[AddFile]) -> _Written:
    """Phase 2: rewrite the touched files with every clause applied, plus the inserts."""
    if not run.spec.not_matched and not touched:
        return [], [], _zero_counts()
    joined = _touched_joined_with_source(run, touched)
    if run.duplicate_matches:
        # A target row deleted by several source rows is one deleted row (and one output row).
        both = F.col(TARGET_PRESENT).isNotNull() & F.col(SOURCE_PRESENT).isNotNull()
        joined = joined.where(both).dropDuplicates([ROW_ID]).union(joined.where(~both))
    action = F.expr(action_expression(run.merge, run.spec.target_alias, run.spec.source_alias))
    return _write_outputs(run, joined.withColumn(ACTION, action), copy=True, changes=run.change_data)


def _write_inserts_only(run: _Run) -> _Written:
    source = _aliased_source(run)
    if run.candidates:
        source = source.join(_matched_target(run, run.candidates), F.expr(run.spec.on_condition), "left_anti")
    whens = " ".join(
        f"WHEN ({c.condition or 'true'}) THEN 'not_matched_insert_{i}'"
        for i, c in enumerate(run.merge.not_matched)
    )
    # Readers infer an insert-only commit's changes from its adds: no change data files.
    return _write_outputs(
        run, source.withColumn(ACTION, F.expr(f"CASE {whens} ELSE '{DROP}' END")), copy=False, changes=False
    )


def _touched_joined_with_source(run: _Run, touched: list[AddFile]) -> DataFrame:
    """Every row of the touched files with its source row, plus the unmatched source rows (with inserts).

    A small source is broadcast to the tasks reading the touched files: the target is
    never shuffled, and each new file holds the rows of one old file, so the table keeps
    its clustering. The unmatched source rows are found against the touched files'
    matched rows (every matched row is in a touched file) and appended with null targets.
    """
    on = F.expr(run.spec.on_condition)
    target = _aliased_target(run, touched)
    if not fits_in_broadcast(run.source.schema, run.num_source_rows):
        return target.join(_aliased_source(run), on, "full_outer" if run.spec.not_matched else "left_outer")
    joined = target.join(F.broadcast(_aliased_source(run)), on, "left_outer")
    if not run.spec.not_matched:
        return joined
    unmatched = _aliased_source(run).join(_matched_target(run, touched), on, "left_anti")
    return joined.union(_aliased_target(run, []).join(unmatched, on, "right_outer"))


def _matched_target(run: _Run, files: list[AddFile]) -> DataFrame:
    """The rows of ``files`` a source row matches (all of them when the source is too big to broadcast).

    A small source is broadcast into a semi-join over the target, so the anti-join
    that finds the new rows never shuffles the whole target.
    """
    target = read_files(run.spark, run.snapshot, files).alias(run.spec.target_alias)
    if not fits_in_broadcast(run.source.schema, run.num_source_rows):
        return target
    source = F.broadcast(run.source.alias(run.spec.source_alias))
    return target.join(source, F.expr(run.spec.on_condition), "left_semi").alias(run.spec.target_alias)


_Written = tuple[list[WrittenFile], list[ChangeFile], dict[str, int]]


def _write_outputs(run: _Run, rows: DataFrame, *, copy: bool, changes: bool) -> _Written:
    codes = counted_actions(run.merge)
    observation = Observation("merge")
    metrics = [F.sum(F.col(ACTION).isin(*v).cast("long")).alias(k) for k, v in codes.items() if v]
    metrics.append(F.sum((F.col(ACTION) == COPY).cast("long")).alias("numTargetRowsCopied"))
    observed = rows.observe(observation, *metrics)
    dropped = [DROP, *codes["numTargetRowsMatchedDeleted"], *codes["numTargetRowsNotMatchedBySourceDeleted"]]
    outputs = output_expressions(run.merge, run.spec.target_alias, copy=copy)
    what = f"merge of model '{run.spec.model}'"
    table = run.snapshot
    change_files: list[ChangeFile] = []
    if changes:
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
        kept = align_to_schema(kept, table.schema, what=what)
        written = write_files(kept, table.table_path, table.partition_columns, table.metadata.configuration)
    observed_counts = {k: int(v or 0) for k, v in observation.get.items()}
    counts = _zero_counts()
    counts.update(observed_counts)
    counts["numTargetRowsUpdated"] = (
        counts["numTargetRowsMatchedUpdated"] + counts["numTargetRowsNotMatchedBySourceUpdated"]
    )
    counts["numTargetRowsDeleted"] = (
        counts["numTargetRowsMatchedDeleted"] + counts["numTargetRowsNotMatchedBySourceDeleted"]
    )
    return written, change_files, counts


def _zero_counts() -> dict[str, int]:
    names = [
        "numTargetRowsInserted",
        "numTargetRowsUpdated",
        "numTargetRowsDeleted",
        "numTargetRowsCopied",
        "numTargetRowsMatchedUpdated",
        "numTargetRowsMatchedDeleted",
        "numTargetRowsNotMatchedBySourceUpdated",
        "numTargetRowsNotMatchedBySourceDeleted",
    ]
    return dict.fromkeys(names, 0)


def _discard(table_path: str, paths: list[str]) -> None:
    for path in paths:
        os.unlink(local_path(table_path, path))
