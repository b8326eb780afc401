"""What Delta's DELETE and UPDATE share, copy-on-write (``dml``) or merge-on-read (``dml_vectors``):
the files data skipping keeps, the frames they read, the stable row ids they keep, and the commit."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot, TableLocation
from dbt.adapters.deltamerge.delta.log import (
    STABLE_COLUMNS,
    STABLE_ROW_COMMIT_VERSION,
    STABLE_ROW_ID,
    materialized_columns,
)
from dbt.adapters.deltamerge.delta.txn import (
    ChangeFile,
    CommitActions,
    CommitInfo,
    CommitOptions,
    ReadSet,
    WriteResult,
    WrittenFile,
    commit_files,
    execution_time,
)
from dbt.adapters.deltamerge.skipping.files import partition_types
from dbt.adapters.deltamerge.skipping.predicates import may_satisfy, target_predicate


def skipped(
    spark: SparkSession, snapshot: Snapshot, condition: str, alias: str | None
) -> tuple[list[AddFile], ReadSet]:
    """The files data skipping keeps for ``condition``, and the command's read set."""
    columns = [f.name for f in snapshot.schema.fields]
    qualifiers = {"", *([alias.lower()] if alias else [])}
    node, constants = target_predicate(spark, [condition], target_alias=qualifiers, columns=columns)
    kinds = partition_types(snapshot)
    kept = [f for f in snapshot.files if may_satisfy(node, f, constants, kinds)]
    read = ReadSet(
        files_read=frozenset(f.path for f in kept),
        reads=lambda added: any(may_satisfy(node, f, constants, kinds) for f in added),
    )
    return kept, read


def row_ids(rows: DataFrame, updated: Column | None = None) -> list[Column]:
    """The stable row ids ``rows`` carry (``read_files(..., row_ids=True)`` of a table that keeps
    them), kept; an updated row's commit version is the commit's own (null)."""
    if STABLE_ROW_ID not in rows.columns:
        return []
    version = F.col(STABLE_ROW_COMMIT_VERSION)
    if updated is not None:
        version = F.when(updated, F.lit(None).cast("long")).otherwise(version)
    return [F.col(STABLE_ROW_ID), version.alias(STABLE_ROW_COMMIT_VERSION)]


def no_row_ids(ids: list[Column]) -> list[Column]:
    """Nulls in place of ``ids``, for change rows (the change feed has no row ids)."""
    return [F.lit(None).cast("long").alias(n) for n in STABLE_COLUMNS] if ids else []


def aliased(df: DataFrame, alias: str | None) -> DataFrame:
    return df.alias(alias) if alias else df


def holds(condition: str) -> Column:
    return F.coalesce(F.expr(f"({condition})"), F.lit(False))


def columns(snapshot: Snapshot) -> list[Column]:
    return [F.col(quote_identifier(f.name)) for f in snapshot.schema.fields]


def layout(snapshot: Snapshot) -> tuple[TableLocation, list[str], dict[str, str], T.StructType]:
    return (
        snapshot.location,
        snapshot.partition_columns,
        dict(snapshot.metadata.configuration),
        snapshot.schema,
    )


def commit(
    snapshot: Snapshot,
    operation: str,
    condition: str | None,
    metrics: dict[str, int],
    files: tuple[list[WrittenFile], Sequence[AddFile], list[ChangeFile]],
    started: float,
    read: ReadSet | None = None,
    readded: Sequence[dict[str, Any]] = (),
) -> WriteResult:
    """The command's commit (``files``: written, removed, change files; ``readded``: files given new
    deletion vectors); none when it changes nothing."""
    written, removed, changes = files
    if not removed and not written and not changes:
        return WriteResult(None, operation, metrics | execution_time(0), snapshot)
    metrics.update(execution_time(int((time.monotonic() - started) * 1000)))
    if read is None:
        read = ReadSet(files_read=frozenset(f.path for f in snapshot.files))
    preserved = materialized_columns(snapshot.metadata.configuration) is not None
    info = CommitInfo(
        operation, {"predicate": [condition] if condition else []}, metrics, row_ids_kept=preserved
    )
    return commit_files(
        snapshot,
        CommitActions(written=written, removed=list(removed), changes=changes, readded=readded),
        CommitOptions(info, read=read),
    )
