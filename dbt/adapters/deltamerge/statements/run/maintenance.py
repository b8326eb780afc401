"""Table properties and REORG ... APPLY (PURGE) on a Delta table, each one commit.

``SET TBLPROPERTIES`` / ``UNSET TBLPROPERTIES`` change the table's ``metaData`` (with the protocol
the properties need: ``delta.enableDeletionVectors=true`` adds the ``deletionVectors`` feature),
refusing a property that switches on a feature this engine does not write. ``REORG TABLE t
APPLY (PURGE)`` rewrites every file with a deletion vector (``WHERE``: of the partitions the
predicate keeps) without its deleted rows, as Delta's ``REORG`` commit: removes and adds with
``dataChange: false``, OPTIMIZE's metrics, rows and row ids unchanged; readers that cannot
read deletion vectors can read the table again. ``OPTIMIZE t [WHERE ...] [ZORDER BY (...)]``
runs ``delta/commands/optimize.py`` on the files of the partitions the predicate keeps. The predicates of
both may name partition columns only (Delta's refusal otherwise).
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.delta import AddFile, Snapshot, UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.commands import (
    OptimizeOptions,
    ZOrderError,
    not_iceberg_compatible,
    optimize,
    redefine,
    upgrade_uniform,
    zorder_problems,
)
from dbt.adapters.deltamerge.delta.data import read_files, write_files
from dbt.adapters.deltamerge.delta.log import (
    COMPAT_V2,
    check_writable,
    compat_v2,
    configuration_problems,
    mapping_mode,
)
from dbt.adapters.deltamerge.delta.txn import (
    CommitActions,
    CommitInfo,
    CommitOptions,
    WriteResult,
    commit_files,
    execution_time,
    optimize_metrics,
)
from dbt.adapters.deltamerge.statements.parse.maintenance import (
    OptimizeStatement,
    ReorgStatement,
    SetPropertiesStatement,
    non_partition_column,
)
from dbt.adapters.deltamerge.statements.run.dml_parts import columns, layout, row_ids, skipped


class MaintenanceError(EngineError):
    """An OPTIMIZE or REORG Delta refuses (a predicate on data columns): nothing was committed."""


def set_properties(
    spark: SparkSession, snapshot: Snapshot, statement: SetPropertiesStatement, name: str
) -> WriteResult:
    """SET / UNSET TBLPROPERTIES: one commit, or none when nothing changes."""
    before = dict(snapshot.metadata.configuration)
    after = dict(before)
    for key, value in statement.properties:
        if statement.unset:
            after.pop(key, None)
        else:
            after[key] = value
    operation = "UNSET TBLPROPERTIES" if statement.unset else "SET TBLPROPERTIES"
    if after == before:
        return WriteResult(None, operation, {}, snapshot)
    if compat_v2(after) and not compat_v2(before):  # switched on where every file keeps its rules
        _refuse_stale_files(snapshot, f"{operation} on {name}", name)
    problems = configuration_problems(after, before, switchable=(COMPAT_V2,))
    modes = (mapping_mode(before), mapping_mode(after))
    if modes[0] != modes[1] and modes != ("none", "name"):  # Delta's allowMappingModeChange
        raise UnsupportedTableFeature(
            f"[DELTA_UNSUPPORTED_COLUMN_MAPPING_MODE_CHANGE] Changing column mapping mode from "
            f"'{modes[0]}' to '{modes[1]}' is not supported ({operation} on {name}). Nothing was committed."
        )
    if problems:
        raise UnsupportedTableFeature(
            f"{operation} on {name}: "
            + "; ".join(problems)
            + " is not written by dbt-deltamerge. Nothing was committed."
        )
    params: dict[str, object] = (
        {"propertyKeys": json.dumps([k for k, _ in statement.properties]), "ifExists": statement.if_exists}
        if statement.unset
        else {"properties": json.dumps(dict(statement.properties))}
    )
    return redefine(spark, snapshot, name, operation=operation, params=params, configuration=after)


def _refuse_stale_files(snapshot: Snapshot, doing: str, name: str) -> None:
    """Refuse switching IcebergCompatV2 on by its property while live files were written before it
    (no field ids, partition values only in the log: Iceberg readers that resolve columns by field
    id read them as NULLs), which Delta's ALTER leaves in place; the upgrade that rewrites them is
    named."""
    stale = not_iceberg_compatible(snapshot)
    if stale:
        raise UnsupportedTableFeature(
            f"{doing}: {COMPAT_V2}=true while {len(stale)} of {len(snapshot.files)} live files were not "
            "written as IcebergCompatV2 asks (Iceberg readers that resolve columns by field id would "
            f"read them as NULLs). Run REORG TABLE {name} APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2)), "
            "which rewrites them and switches UniForm on in one commit. Nothing was committed."
        )


def reorg(spark: SparkSession, snapshot: Snapshot, statement: ReorgStatement, name: str) -> WriteResult:
    """REORG TABLE ... APPLY (PURGE), or APPLY (UPGRADE UNIFORM(...)): the table made a UniForm
    table in place (``commands.upgrade_uniform``)."""
    if statement.upgrade_uniform is not None:
        return upgrade_uniform(spark, snapshot, name)
    return reorg_purge(spark, snapshot, statement)


def reorg_purge(spark: SparkSession, snapshot: Snapshot, statement: ReorgStatement) -> WriteResult:
    """REORG TABLE ... APPLY (PURGE): the files with deletion vectors rewritten with their live rows."""
    started = time.monotonic()
    check_writable(
        snapshot.protocol,
        snapshot.metadata.configuration,
        snapshot.metadata.schema_string,
        table=snapshot.table_path,
    )
    _check_predicate(statement.condition, snapshot)
    kept, read = skipped(spark, snapshot, statement.condition or "true", None)
    purged = [f for f in kept if f.deletion_vector is not None]
    if not purged:
        return WriteResult(
            None, "REORG", optimize_metrics(removed=[], written=[]) | execution_time(0), snapshot
        )
    rows = read_files(spark, snapshot, purged, row_ids=True)
    written = write_files(rows.select(*columns(snapshot), *row_ids(rows)), *layout(snapshot))
    metrics = optimize_metrics(removed=purged, written=written, vectors_removed=len(purged))
    metrics |= execution_time(int((time.monotonic() - started) * 1000))
    parameters = {"predicate": [statement.condition] if statement.condition else [], "applyPurge": True}
    info = CommitInfo("REORG", parameters, metrics)
    return commit_files(
        snapshot,
        CommitActions(written=written, removed=purged),
        CommitOptions(info, read=read, data_change=False),
    )


def optimize_table(spark: SparkSession, snapshot: Snapshot, statement: OptimizeStatement) -> WriteResult:
    """OPTIMIZE [WHERE partition predicate] [ZORDER BY]: one ``OPTIMIZE`` commit, or none."""
    considered, options = optimize_plan(spark, snapshot, statement)
    predicate = [statement.condition] if statement.condition else []
    return optimize(spark, snapshot, considered, options, predicate)


def optimize_plan(
    spark: SparkSession, snapshot: Snapshot, statement: OptimizeStatement
) -> tuple[list[AddFile], OptimizeOptions]:
    """The files an OPTIMIZE considers (its predicate's partitions) and its options (Z-order
    columns checked as Delta checks them), before anything is read: the dry run's plan too."""
    _check_predicate(statement.condition, snapshot)
    considered, _ = skipped(spark, snapshot, statement.condition or "true", None)
    configuration = dict(snapshot.metadata.configuration)
    options = OptimizeOptions.for_table(configuration, zorder_by=statement.zorder_by, full=statement.full)
    if statement.full and not snapshot.clustering:
        raise MaintenanceError(
            "OPTIMIZE FULL is only supported for clustered tables with non-empty clustering columns. "
            "Nothing was committed."
        )
    problems, columns = zorder_problems(snapshot, options.zorder_by)
    if problems:
        raise ZOrderError("; ".join(problems) + ". Nothing was committed.")
    return considered, replace(options, zorder_by=tuple(columns))


def _check_predicate(condition: str | None, snapshot: Snapshot) -> None:
    problem = non_partition_column(condition, snapshot.partition_columns) if condition else None
    if problem:
        raise MaintenanceError(f"{problem}. Nothing was committed.")
