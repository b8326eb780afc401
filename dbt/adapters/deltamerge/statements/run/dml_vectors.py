"""DELETE and UPDATE on a table that writes deletion vectors (merge-on-read, ``delta/data/row_deletion.py``).

Delta's ``DMLWithDeletionVectorsHelper``: data skipping keeps the candidate files; the selected
rows' positions (file, ``_metadata.row_index``) become deletion vectors; an UPDATE writes only
its updated rows (and a DELETE nothing, but its change rows when the feed is on). The selected
rows are computed once (a local checkpoint) when both the positions and the written rows need
them. A file whose every row is selected is removed whole.
"""

from __future__ import annotations

import time
from typing import Literal

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.data import (
    CHANGE_TYPE,
    FILE_URI,
    ROW_INDEX,
    collect_positions,
    mark_deleted,
    read_files,
    regenerated,
    store_assigned,
    write_files,
    write_files_and_changes,
)
from dbt.adapters.deltamerge.delta.log import change_data_feed_enabled
from dbt.adapters.deltamerge.delta.txn import ChangeFile, WriteResult, WrittenFile, dml_metrics
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


def delete_marking(
    spark: SparkSession,
    snapshot: Snapshot,
    condition: str | None,
    alias: str | None,
    operation: Literal["DELETE", "TRUNCATE"],
    started: float,
) -> WriteResult:
    """DELETE: the selected rows marked deleted; with the feed on, written as ``delete`` change rows."""
    kept, read = skipped(spark, snapshot, condition or "true", alias)
    scan_ms = _since(started)
    rows = aliased(read_files(spark, snapshot, kept, row_ids=True, positions=True), alias)
    selected = rows.where(holds(condition or "true"))
    changes: list[ChangeFile] = []
    rewriting = time.monotonic()
    if change_data_feed_enabled(snapshot.metadata.configuration) and kept:
        selected = selected.localCheckpoint()
        frame = selected.select(
            *columns(snapshot), *no_row_ids(row_ids(rows)), F.lit("delete").alias(CHANGE_TYPE)
        )
        _, changes = write_files_and_changes(frame, *layout(snapshot))
    update = mark_deleted(snapshot, collect_positions(selected, FILE_URI, ROW_INDEX) if kept else {})
    metrics = dml_metrics(
        removed=update.fully_removed,
        written=[],
        changes=changes,
        deleted=update.modified_rows,
        scan_ms=scan_ms,
        rewrite_ms=_since(rewriting),
    )
    metrics.update(update.metrics())
    files: tuple[list[WrittenFile], list, list[ChangeFile]] = ([], update.removed, changes)
    return commit(snapshot, operation, condition, metrics, files, started, read, update.readded)


def update_marking(
    spark: SparkSession,
    snapshot: Snapshot,
    values: dict[str, Column],
    condition: str | None,
    alias: str | None,
    started: float,
) -> WriteResult:
    """UPDATE: the selected rows marked deleted where they are and written anew with the assignments."""
    table = f"UPDATE of {snapshot.table_path}"
    kept, read = skipped(spark, snapshot, condition or "true", alias)
    scan_ms = _since(started)
    rows = aliased(read_files(spark, snapshot, kept, row_ids=True, positions=True), alias)
    rewriting = time.monotonic()
    written: list[WrittenFile] = []
    changes: list[ChangeFile] = []
    if not kept:
        metrics = dml_metrics(removed=[], written=[], changes=[], updated=0, scan_ms=scan_ms)
        return commit(snapshot, "UPDATE", condition, metrics, ([], [], []), started, read)
    selected = rows.where(holds(condition or "true")).localCheckpoint()
    new = [
        store_assigned(values[f.name.lower()], f, table).alias(f.name)
        if f.name.lower() in values
        else F.col(quote_identifier(f.name))
        for f in snapshot.schema.fields
    ]
    ids = row_ids(rows, updated=F.lit(True))
    positions = collect_positions(selected, FILE_URI, ROW_INDEX)
    if positions:
        written, changes = _write_updated(selected, snapshot, new, ids, values)
    update = mark_deleted(snapshot, positions)
    metrics = dml_metrics(
        removed=update.fully_removed,
        written=written,
        changes=changes,
        updated=update.modified_rows,
        scan_ms=scan_ms,
        rewrite_ms=_since(rewriting),
    )
    metrics.update(update.metrics())
    # Delta's UPDATE counts the files it touched as removed, vectors given or gone whole
    # (``UpdateCommand``: ``numTouchedFiles``); its DELETE only the files gone whole.
    metrics["numRemovedFiles"] = len(update.removed)
    files = (written, update.removed, changes)
    return commit(snapshot, "UPDATE", condition, metrics, files, started, read, update.readded)


def _write_updated(
    selected: DataFrame, snapshot: Snapshot, new: list[Column], ids: list[Column], values: dict[str, Column]
) -> tuple[list[WrittenFile], list[ChangeFile]]:
    if not change_data_feed_enabled(snapshot.metadata.configuration):
        return write_files(
            regenerated(selected.select(*new, *ids), snapshot.schema, values), *layout(snapshot)
        ), []
    none = no_row_ids(ids)
    data = selected.select(*new, *ids, F.lit(None).cast("string").alias(CHANGE_TYPE))
    before = selected.select(*columns(snapshot), *none, F.lit("update_preimage").alias(CHANGE_TYPE))
    after = selected.select(*new, *none, F.lit("update_postimage").alias(CHANGE_TYPE))
    data, after = (regenerated(f, snapshot.schema, values) for f in (data, after))
    return write_files_and_changes(data.unionByName(before).unionByName(after), *layout(snapshot))


def _since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
