"""A new table definition (properties and schema) as one commit, after the live rows pass every
constraint it adds, as Delta's ALTER TABLE does.

A CHECK constraint the definition adds is counted against every live row, and each column it
makes NOT NULL against its nulls, in one Spark job; any failing row refuses the change with
Delta's text (``DELTA_NEW_CHECK_CONSTRAINT_VIOLATION``, ``DELTA_NEW_NOT_NULL_VIOLATION``) and
nothing is committed. The commit carries the protocol the definition needs. ``recluster``: ALTER
TABLE ... CLUSTER BY's new clustering columns. ``commit_before`` and ``commit_after`` commit the
parts of a write's ``TableChange`` that need a commit of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.constraints import check_constraints, referenced_columns
from dbt.adapters.deltamerge.delta.data.read import read_files
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log.clustering import FEATURES, clustering_action, clustering_problems
from dbt.adapters.deltamerge.delta.log.definition import TableChange, definition_actions, with_metadata
from dbt.adapters.deltamerge.delta.log.protocol import upgraded
from dbt.adapters.deltamerge.delta.log.schema import schema_to_json
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files


class ConstraintViolation(DeltaError):
    """Live rows violate a constraint a definition change adds; nothing was committed."""


def redefine(
    spark: SparkSession,
    snapshot: Snapshot,
    table: str,
    *,
    operation: str,
    params: dict[str, object],
    configuration: Mapping[str, str] | None = None,
    schema: T.StructType | None = None,
) -> WriteResult:
    """Commit ``configuration`` (CHECK constraints among the properties) and ``schema`` as the
    table's definition (None keeps each), once the live rows pass what they add."""
    before = check_constraints(snapshot.metadata.configuration)
    added = {
        name: expression
        for name, expression in check_constraints(configuration or {}).items()
        if before.get(name) != expression
    }
    target = schema or snapshot.schema
    names = {f.name.lower() for f in target.fields}
    for name, expression in added.items():
        unknown = [c for c in referenced_columns(expression) if c.split(".")[0].lower() not in names]
        if unknown:
            raise ConstraintViolation(
                f"CHECK constraint {name} ({expression}) on {table}: {unknown} are not columns of the "
                "table. Nothing was committed."
            )
    old = {f.name: f.nullable for f in snapshot.schema.fields}
    required = [f.name for f in (schema or T.StructType()).fields if not f.nullable and old.get(f.name, True)]
    tests = [("check", n, f"NOT coalesce(({e}), true)") for n, e in added.items()]
    tests += [("not null", c, f"{quote_identifier(c)} IS NULL") for c in required]
    if tests and snapshot.files:
        rows = read_files(spark, snapshot, list(snapshot.files))
        counts = rows.selectExpr(
            *[f"count_if({sql}) AS `{i}`" for i, (_, _, sql) in enumerate(tests)]
        ).first()
        for (kind, name, _), failing in zip(tests, counts or (), strict=True):
            if failing and kind == "check":
                raise ConstraintViolation(
                    f"[DELTA_NEW_CHECK_CONSTRAINT_VIOLATION] {failing} rows in {table} violate the new CHECK "
                    f"constraint ({added[name]}). Nothing was committed."
                )
            if failing:
                raise ConstraintViolation(
                    f"[DELTA_NEW_NOT_NULL_VIOLATION] {failing} rows in {table} violate the new NOT NULL "
                    f"constraint on {name}. Nothing was committed."
                )
    metadata = snapshot.metadata
    if configuration is not None:
        metadata = replace(metadata, configuration=dict(configuration))
    if schema is not None:
        metadata = replace(metadata, schema_string=schema_to_json(schema))
    leading = definition_actions(snapshot, with_metadata(snapshot, metadata))
    info = CommitInfo(operation, params, {})
    return commit_files(snapshot, CommitActions(leading=leading), CommitOptions(info))


def recluster(snapshot: Snapshot, columns: Sequence[str], name: str) -> WriteResult:
    """ALTER TABLE ... CLUSTER BY (columns) / NONE: the ``delta.clustering`` domain (and the
    ``clustering`` feature) as one ``CLUSTER BY`` commit; none when the columns stay the same.
    Files keep their layout: the next OPTIMIZE clusters by the new columns."""
    before = snapshot.clustering
    if snapshot.partition_columns:
        raise DeltaError(
            f"ALTER TABLE CLUSTER BY cannot be applied to a partitioned table ({name}). "
            "Nothing was committed."
        )
    problems, resolved = clustering_problems(columns, snapshot.schema, [], snapshot.metadata.configuration)
    if problems:
        raise DeltaError("; ".join(problems) + f" ({name}). Nothing was committed.")
    if before is not None and tuple(resolved) == before:
        return WriteResult(None, "CLUSTER BY", {}, snapshot)
    leading: list[dict[str, object]] = []
    protocol = upgraded(snapshot.protocol, set(FEATURES))
    if protocol != snapshot.protocol:
        leading.append(protocol.to_action())
    leading.append(clustering_action(resolved, snapshot.schema))
    parameters = {"oldClusteringColumns": ",".join(before or ()), "newClusteringColumns": ",".join(resolved)}
    info = CommitInfo("CLUSTER BY", parameters, {})
    return commit_files(snapshot, CommitActions(leading=leading), CommitOptions(info))


def commit_before(spark: SparkSession, snapshot: Snapshot, change: TableChange, table: str) -> Snapshot:
    """Commit the part of ``change`` that goes before the write (a contract's constraints, the live
    rows checked first); the version the write then works on (``snapshot`` when there is none)."""
    if change.before is None:
        return snapshot
    before = change.before
    return redefine(
        spark,
        snapshot,
        table,
        operation=before.operation,
        params=dict(before.params),
        configuration=before.configuration,
        schema=before.schema,
    ).snapshot


def commit_after(snapshot: Snapshot, change: TableChange, table: str) -> WriteResult | None:
    """Commit the clustering columns ``change`` asks for after the write, where the table's differ
    (``recluster``: the next OPTIMIZE clusters by them); None when they are the table's."""
    wanted = change.cluster_by
    have = tuple(c.lower() for c in snapshot.clustering or ())
    if not wanted or have == tuple(c.lower() for c in wanted):
        return None
    return recluster(snapshot, wanted, table)
