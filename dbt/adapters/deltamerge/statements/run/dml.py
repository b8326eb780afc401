"""Delta's DELETE, UPDATE and TRUNCATE commands: one new version each, Delta's metrics.

A command first narrows the files by data skipping on its condition (partition values and
min / max / null-count statistics), then counts, in one Spark job, each remaining file's rows
and the rows the condition selects. Files with no selected row are left alone. A DELETE
removes files whose every row is selected without rewriting them (unless the table has the
change data feed on: then the deleted rows are written as change rows), and rewrites the
others with the unselected rows. An UPDATE rewrites each touched file with the assignments
applied to the selected rows. Row counts come from the counting job, so the rewrite needs
no second pass over the rows.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, DeltaError, Snapshot, local_path, table_path_of
from dbt.adapters.deltamerge.delta.data import (
    CHANGE_TYPE,
    read_files,
    regenerated,
    store_assigned,
    write_files,
    write_files_and_changes,
    writes_deletion_vectors,
)
from dbt.adapters.deltamerge.delta.log import Identity, change_data_feed_enabled, find_field
from dbt.adapters.deltamerge.delta.txn import ChangeFile, ReadSet, WriteResult, WrittenFile, dml_metrics
from dbt.adapters.deltamerge.statements.run.dml_parts import (
    aliased,
    columns,
    commit,
    holds,
    layout,
    no_row_ids,
    row_ids,
    skipped,
)
from dbt.adapters.deltamerge.statements.run.dml_vectors import delete_marking, update_marking

_FILE, _ROWS, _SELECTED = "_dml_file", "_dml_rows", "_dml_selected"


@dataclass(frozen=True)
class FileCount:
    """One candidate file: its rows, and the rows the condition selects."""

    file: AddFile
    rows: int
    selected: int


def delete_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    condition: str | None,
    *,
    alias: str | None = None,
    operation: Literal["DELETE", "TRUNCATE"] = "DELETE",
) -> WriteResult:
    """``DELETE FROM`` the table at ``snapshot`` the rows where ``condition`` holds (all without one).

    Nothing selected commits nothing (the version stays, as for a merge that changes nothing).
    """
    started = time.monotonic()
    snapshot.check_writable()
    feed = change_data_feed_enabled(snapshot.metadata.configuration)
    if condition is None and not feed:
        deleted = sum(f.live_records or 0 for f in snapshot.files)
        metrics = dml_metrics(removed=snapshot.files, written=[], changes=[], deleted=deleted)
        return commit(snapshot, operation, None, metrics, ([], snapshot.files, []), started)
    selected = condition or "true"
    if writes_deletion_vectors(snapshot):
        return delete_marking(spark, snapshot, condition, alias, operation, started)
    candidates, scan_ms, read = _candidates(spark, snapshot, selected, alias)
    counts = [c for c in candidates if c.selected > 0]
    whole = [c for c in counts if c.selected == c.rows and not feed]
    partial = [c for c in counts if c not in whole]
    rewriting = time.monotonic()
    written: list[WrittenFile] = []
    changes: list[ChangeFile] = []
    if partial:
        rows = aliased(read_files(spark, snapshot, [c.file for c in partial], row_ids=True), alias)
        hit = holds(selected)
        if feed:
            change = F.when(hit, F.lit("delete")).alias(CHANGE_TYPE)
            frame = rows.select(*columns(snapshot), *row_ids(rows), change)
            written, changes = write_files_and_changes(frame, *layout(snapshot))
        else:
            kept = rows.where(~hit).select(*columns(snapshot), *row_ids(rows))
            written = write_files(kept, *layout(snapshot))
    removed = [c.file for c in counts]
    metrics = dml_metrics(
        removed=removed,
        written=written,
        changes=changes,
        deleted=sum(c.selected for c in counts),
        copied=sum(c.rows - c.selected for c in partial),
        scan_ms=scan_ms,
        rewrite_ms=int((time.monotonic() - rewriting) * 1000),
    )
    return commit(snapshot, operation, condition, metrics, (written, removed, changes), started, read)


def update_rows(
    spark: SparkSession,
    snapshot: Snapshot,
    assignments: Sequence[tuple[str, str]],
    condition: str | None,
    *,
    alias: str | None = None,
) -> WriteResult:
    """``UPDATE`` the table at ``snapshot``: ``column = expression`` on the rows where ``condition`` holds."""
    started = time.monotonic()
    snapshot.check_writable()
    table = f"UPDATE of {snapshot.table_path}"
    values = _assigned_values(snapshot, assignments, table)
    selected = condition or "true"
    if writes_deletion_vectors(snapshot):
        return update_marking(spark, snapshot, values, condition, alias, started)
    candidates, scan_ms, read = _candidates(spark, snapshot, selected, alias)
    counts = [c for c in candidates if c.selected > 0]
    rewriting = time.monotonic()
    written: list[WrittenFile] = []
    changes: list[ChangeFile] = []
    if counts:
        rows = aliased(read_files(spark, snapshot, [c.file for c in counts], row_ids=True), alias)
        hit = holds(selected)
        new = [
            F.when(hit, store_assigned(values[f.name.lower()], f, table))
            .otherwise(F.col(quote_identifier(f.name)))
            .alias(f.name)
            if f.name.lower() in values
            else F.col(quote_identifier(f.name))
            for f in snapshot.schema.fields
        ]
        ids = row_ids(rows, updated=hit)
        if change_data_feed_enabled(snapshot.metadata.configuration):
            flagged = rows.withColumn(_SELECTED, hit)
            data = flagged.select(*new, *ids, F.lit(None).cast("string").alias(CHANGE_TYPE))
            updated = flagged.where(F.col(_SELECTED))
            none = no_row_ids(ids)
            before = updated.select(*columns(snapshot), *none, F.lit("update_preimage").alias(CHANGE_TYPE))
            after = updated.select(*new, *none, F.lit("update_postimage").alias(CHANGE_TYPE))
            data, after = (regenerated(f, snapshot.schema, values) for f in (data, after))
            frame = data.unionByName(before).unionByName(after)
            written, changes = write_files_and_changes(frame, *layout(snapshot))
        else:
            written = write_files(
                regenerated(rows.select(*new, *ids), snapshot.schema, values), *layout(snapshot)
            )
    removed = [c.file for c in counts]
    metrics = dml_metrics(
        removed=removed,
        written=written,
        changes=changes,
        updated=sum(c.selected for c in counts),
        copied=sum(c.rows - c.selected for c in counts),
        scan_ms=scan_ms,
        rewrite_ms=int((time.monotonic() - rewriting) * 1000),
    )
    return commit(snapshot, "UPDATE", condition, metrics, (written, removed, changes), started, read)


def truncate(spark: SparkSession, snapshot: Snapshot) -> WriteResult:
    """``TRUNCATE TABLE``: every row deleted (a DELETE without condition, named TRUNCATE)."""
    return delete_rows(spark, snapshot, None, operation="TRUNCATE")


def _assigned_values(
    snapshot: Snapshot, assignments: Sequence[tuple[str, str]], what: str
) -> dict[str, Column]:
    values: dict[str, Column] = {}
    for column, expression in assignments:
        field = find_field(snapshot.schema, column)
        if field is None:
            columns = [f.name for f in snapshot.schema.fields]
            raise DeltaError(f"{what}: `{column}` is not a column of the table (columns: {columns})")
        if field.name in snapshot.partition_columns:
            raise DeltaError(f"{what}: `{column}` is a partition column; an UPDATE cannot change it")
        if field.name.lower() in values:
            raise DeltaError(f"{what}: `{column}` is assigned twice")
        if Identity.of(field) is not None:
            raise DeltaError(
                f"{what}: [DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY column "
                f"{field.name} is not supported."
            )
        values[field.name.lower()] = F.expr(expression)
    return values


def _candidates(
    spark: SparkSession, snapshot: Snapshot, condition: str, alias: str | None
) -> tuple[list[FileCount], int, ReadSet]:
    """The files data skipping keeps, each with its row and selected-row counts (one Spark job)."""
    started = time.monotonic()
    kept, read = skipped(spark, snapshot, condition, alias)
    counts: list[FileCount] = []
    if kept:
        rows = aliased(read_files(spark, snapshot, kept), alias).withColumn(_FILE, F.input_file_name())
        per_file = rows.groupBy(_FILE).agg(
            F.count(F.lit(1)).alias(_ROWS), F.sum(holds(condition).cast("long")).alias(_SELECTED)
        )
        found = {table_path_of(r[_FILE]): (r[_ROWS], r[_SELECTED] or 0) for r in per_file.collect()}
        for file in kept:
            rows_of, selected = found.get(local_path(snapshot.table_path, file.path), (0, 0))
            counts.append(FileCount(file, int(rows_of), int(selected)))
    return counts, int((time.monotonic() - started) * 1000), read
