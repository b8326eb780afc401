"""An existing table made a UniForm table in place: ``REORG TABLE t APPLY (UPGRADE UNIFORM
(ICEBERG_COMPAT_VERSION = 2))``, and a model whose config asks for ``table_format: iceberg``.

Delta's ``ReorgTableForUpgradeUniformHelper`` does it in three commits (the properties, the files
rewritten, ``enabledFormats``); here it is one, so no reader ever sees half of it: IcebergCompatV2
and ``enabledFormats = iceberg`` set, column mapping by name switched on where the table had none
(each column's own name its physical name, as its files hold it), deletion vectors switched off
(``iceberg_compat.upgraded_configuration``), and every live file not written under
IcebergCompatV2 (no ``ICEBERG_COMPAT_VERSION = 2`` tag in its ``add``, or a deletion vector)
rewritten with its live rows: parquet field ids, partition values inside the file, ``numRecords``,
the tag. ``dataChange: false``, OPTIMIZE's metrics, rows and row ids unchanged.

Why every such file is rewritten rather than left to the name mapping (Delta's ``ALTER TABLE ...
SET TBLPROPERTIES`` leaves them): Iceberg readers that resolve columns by field id only (DuckDB's
``iceberg_scan``) read a file without ids as NULLs. After the commit the commit path writes the
whole Iceberg side, whose first snapshot is this version. A table whose columns Iceberg v2 cannot
hold (a type outside the allow-list, array and map columns) is refused by name before anything is
read or written.
"""

from __future__ import annotations

import time
from dataclasses import replace
from urllib.parse import unquote

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.read import read_files
from dbt.adapters.deltamerge.delta.data.stored import write_files
from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.log.definition import definition_actions, with_metadata
from dbt.adapters.deltamerge.delta.log.features import check_writable
from dbt.adapters.deltamerge.delta.log.iceberg_compat import (
    ICEBERG_COMPAT_TAG,
    compat_problems,
    compat_v2,
    upgraded_configuration,
)
from dbt.adapters.deltamerge.delta.log.replay import log_state
from dbt.adapters.deltamerge.delta.log.row_ids import STABLE_COLUMNS, materialized_columns
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo
from dbt.adapters.deltamerge.delta.txn.metrics import execution_time, optimize_metrics
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files

OPERATION = "REORG"


def upgrade_uniform(spark: SparkSession, snapshot: Snapshot, table: str) -> WriteResult:
    """Make ``snapshot``'s table a UniForm (IcebergCompatV2) table: one ``REORG`` commit, or none
    when it is one already and every live file was written as IcebergCompatV2 asks."""
    started = time.monotonic()
    check_writable(
        snapshot.protocol, snapshot.metadata.configuration, snapshot.metadata.schema_string, table=table
    )
    configuration = upgraded_configuration(snapshot.metadata.configuration)
    target = with_metadata(snapshot, replace(snapshot.metadata, configuration=configuration))
    problems = compat_problems(target.metadata.configuration, target.metadata.schema_string)
    if problems:
        raise UnsupportedTableFeature(
            f"REORG TABLE {table} APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2)): "
            + "; ".join(problems)
            + ". Nothing was committed."
        )
    stale = not_iceberg_compatible(snapshot)
    leading = definition_actions(snapshot, target)
    if not stale and not leading:
        nothing = optimize_metrics(removed=[], written=[]) | execution_time(0)
        return WriteResult(None, OPERATION, nothing, snapshot)
    written = []
    if stale:
        kept = list(STABLE_COLUMNS) if materialized_columns(snapshot.metadata.configuration) else []
        rows = read_files(spark, snapshot, stale, row_ids=bool(kept))
        names = [quote_identifier(f.name) for f in snapshot.schema.fields]
        written = write_files(
            rows.select(*names, *[F.col(n) for n in kept]),
            target.location,
            target.partition_columns,
            dict(target.metadata.configuration),
            target.schema,
        )
    vectors = sum(1 for f in stale if f.deletion_vector is not None)
    metrics = optimize_metrics(removed=stale, written=written, vectors_removed=vectors)
    metrics |= execution_time(int((time.monotonic() - started) * 1000))
    parameters = {"predicate": [], "applyPurge": False, "icebergCompatVersion": 2}
    return commit_files(
        snapshot,
        CommitActions(leading=leading, written=written, removed=stale),
        CommitOptions(CommitInfo(OPERATION, parameters, metrics), data_change=False),
    )


def not_iceberg_compatible(snapshot: Snapshot) -> list[AddFile]:
    """The live files an Iceberg reader may misread: all of a table without IcebergCompatV2; of one
    with it, those its ``add`` does not tag as written under it (written before another writer's
    ``ALTER TABLE`` switched it on) and those with a deletion vector."""
    if not compat_v2(snapshot.metadata.configuration):
        return list(snapshot.files)
    adds = log_state(snapshot.location, snapshot.version).adds
    return [
        f
        for f in snapshot.files
        if f.deletion_vector is not None
        or ((adds.get(unquote(f.path)) or {}).get("tags") or {}).get(ICEBERG_COMPAT_TAG) != "2"
    ]
