"""Table-level writes: one DataFrame becomes one new Delta version.

``create_or_replace`` (a new table, or a new version with a new definition: history is
kept), ``append``, ``replace_partitions`` (dynamic partition overwrite), ``replace_where``
(rows matching a predicate are replaced, as Delta's ``replaceWhere``) and ``replace_keys``
(rows sharing a new row's key are replaced: dbt's ``delete+insert``); the last two are
``replace.py``'s.
Every check that can refuse a write runs before the first data file is written.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.align import align_to_schema
from dbt.adapters.deltamerge.delta.data.column_values import declared
from dbt.adapters.deltamerge.delta.data.replace import Replacement, replace_rows
from dbt.adapters.deltamerge.delta.data.stored import write_files
from dbt.adapters.deltamerge.delta.errors import DeltaError, DeltaSchemaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.clustering import definition_clustering
from dbt.adapters.deltamerge.delta.log.definition import (
    DEFAULT_TXN_RETENTION,
    NO_CHANGE,
    TXN_RETENTION_PROPERTY,
    TableChange,
    changed,
    definition_actions,
    mapped_schema,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.log.features import configuration_problems
from dbt.adapters.deltamerge.delta.log.iceberg_compat import compat_problems
from dbt.adapters.deltamerge.delta.log.mapping import (
    MAPPING_MODE,
    MAX_COLUMN_ID,
    mapping_mode,
)
from dbt.adapters.deltamerge.delta.log.properties import value_problems, with_session_defaults
from dbt.adapters.deltamerge.delta.log.protocol import (
    TableMetadata,
    table_features,
    upgraded,
    with_row_tracking_columns,
)
from dbt.adapters.deltamerge.delta.log.schema import (
    find_field,
    required_features,
    schema_to_json,
    to_delta_schema,
)
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions, WrittenFile
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo, now_ms
from dbt.adapters.deltamerge.delta.txn.metrics import execution_time, write_metrics
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files

Action = dict[str, object]
WriteMode = Literal["create_or_replace", "append", "replace_partitions", "replace_where", "replace_keys"]


@dataclass(frozen=True)
class WriteRequest:
    """What to write where (``location``: the table's handle)."""

    location: TableLocation
    mode: WriteMode
    partition_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    replace_where: str | None = None
    # ``replace_keys``: the key columns (dbt's ``unique_key``) and the predicates narrowing the rows
    # replaced (``incremental_predicates``).
    replace_keys: tuple[str, ...] = ()
    replace_predicates: tuple[str, ...] = ()
    # The existing table's definition change riding in this write's commit (``TableChange``: the
    # schema the write leaves, the change data feed switched on); a new table's is the request's.
    change: TableChange = NO_CHANGE
    # (appId, version) of the run this write belongs to: recorded as a `txn` action.
    txn: tuple[str, int] | None = None
    # The table's description (a new or replaced table's `metaData.description`).
    description: str | None = None
    # Metrics recorded beside Delta's (CDC apply's event counts).
    extra_metrics: Mapping[str, int] = field(default_factory=dict)
    # The declared columns of a new table (CREATE TABLE's column list, a model's contract): their
    # nullability (NOT NULL) and metadata (generation, default, identity) are the table's; declared
    # columns the data lacks are computed (``column_values``).
    definition: T.StructType | None = None
    # A new definition's clustering columns (``CLUSTER BY``, a model's ``cluster_by``).
    cluster_by: tuple[str, ...] | None = None


def write_dataframe(spark: SparkSession, df: DataFrame, request: WriteRequest) -> WriteResult:
    """Write ``df`` to the Delta table at ``request.location`` as one new version."""
    started = time.monotonic()
    current = load_snapshot(request.location)
    if current is not None:
        current.check_writable()
    if current is None:
        properties = with_session_defaults(request.properties, spark.conf.getAll)
        result = _create_or_replace(df, dataclasses.replace(request, properties=properties), current)
    elif request.mode == "create_or_replace":
        result = _create_or_replace(df, request, current)
    else:
        target = changed(current, request.change)
        if request.txn is not None:
            target = with_transaction_retention(target)
        leading = definition_actions(current, target)
        if request.mode == "append":
            result = _append(df, request, target, leading)
        elif request.mode == "replace_partitions":
            result = _replace_partitions(df, request, target, leading)
        else:
            replacement = Replacement(
                request.location,
                predicate=request.replace_where if request.mode == "replace_where" else None,
                keys=request.replace_keys if request.mode == "replace_keys" else (),
                predicates=request.replace_predicates,
                txn=request.txn,
                extra_metrics=request.extra_metrics,
            )
            result = replace_rows(spark, df, replacement, target, leading)
    result.metrics.update(execution_time(int((time.monotonic() - started) * 1000)))
    return result


def _create_or_replace(df: DataFrame, request: WriteRequest, current: Snapshot | None) -> WriteResult:
    configuration = {str(k): str(v) for k, v in request.properties.items()}
    if current is not None and mapping_mode(current.metadata.configuration) != "none":
        # Replacing keeps column mapping (the protocol keeps the feature); columns keep their ids.
        for key in (MAPPING_MODE, MAX_COLUMN_ID):
            configuration.setdefault(key, current.metadata.configuration.get(key, "0"))
    configuration = with_row_tracking_columns(
        configuration, current.metadata.configuration if current else {}
    )
    mapped = mapping_mode(configuration) != "none"
    schema = to_delta_schema(df.schema, mapped=mapped)
    if request.definition is not None:
        df, schema = declared(df, schema, request.definition)
    if mapped:
        previous = current.schema if current is not None else None
        schema, top = mapped_schema(schema, previous, configuration)
        configuration[MAX_COLUMN_ID] = str(top)
    partition_columns = _resolve_partition_columns(schema, request.partition_by)
    if request.txn is not None:
        configuration.setdefault(TXN_RETENTION_PROPERTY, DEFAULT_TXN_RETENTION)
    wrong = value_problems(configuration)
    if wrong:
        raise DeltaError(f"Delta table at {request.location}: {'; '.join(wrong)}. Nothing was written.")
    problems = configuration_problems(configuration, current.metadata.configuration if current else None)
    problems += compat_problems(configuration, schema_to_json(schema))  # IcebergCompatV2's rules
    if problems:
        raise DeltaError(
            f"Delta table at {request.location}: dbt-deltamerge cannot write "
            + "; ".join(problems)
            + " yet. Nothing was written."
        )
    metadata = TableMetadata(
        id=current.metadata.id if current else str(uuid.uuid4()),
        schema_string=schema_to_json(schema),
        partition_columns=tuple(partition_columns),
        configuration=configuration,
        created_time=current.metadata.created_time if current else now_ms(),
        description=request.description,
    )
    current_clustering = current.clustering if current else None
    clustered, domains = definition_clustering(
        request.cluster_by, schema, partition_columns, configuration, current_clustering
    )
    features = table_features(configuration, required_features(schema)) | clustered
    protocol = upgraded(current.protocol if current else None, features)
    written = write_files(
        df.select(*[F.col(quote_identifier(f.name)) for f in schema.fields]),
        request.location,
        partition_columns,
        configuration,
        schema,
        columns=selected_schema(df.schema, schema),
    )
    actions: list[dict[str, object]] = []
    if current is None or protocol != current.protocol:
        actions.append(protocol.to_action())
    actions += [metadata.to_action(), *domains]
    removed = list(current.files) if current else []
    operation = "CREATE OR REPLACE TABLE AS SELECT" if current else "CREATE TABLE AS SELECT"
    params: dict[str, object] = {
        "partitionBy": partition_columns,
        "description": request.description,
        "properties": configuration,
        "isManaged": "false",
    }
    return _commit(request, current, operation, params, actions, written, removed, blind=False)


def _append(df: DataFrame, request: WriteRequest, current: Snapshot, leading: list[Action]) -> WriteResult:
    aligned = align_to_schema(df, current.schema, what=f"append to {request.location}")
    configuration = current.metadata.configuration
    location, columns = request.location, current.partition_columns
    written = write_files(aligned, location, columns, configuration, current.schema)
    params: dict[str, object] = {"mode": "Append", "partitionBy": current.partition_columns}
    # Readers infer an append's changes from its adds: no change data files.
    return _commit(request, current, "WRITE", params, leading, written, [], blind=not leading)


def _replace_partitions(
    df: DataFrame, request: WriteRequest, current: Snapshot, leading: list[Action]
) -> WriteResult:
    aligned = align_to_schema(df, current.schema, what=f"insert_overwrite into {request.location}")
    configuration = current.metadata.configuration
    location, columns = request.location, current.partition_columns
    written = write_files(aligned, location, columns, configuration, current.schema)
    params: dict[str, object] = {"mode": "Overwrite", "partitionBy": current.partition_columns}
    if current.partition_columns:
        touched = {_partition_key(f.partition_values) for f in written}
        removed = [f for f in current.files if _partition_key(f.partition_values) in touched]
        params["partitionOverwriteMode"] = "DYNAMIC"
    else:
        removed = list(current.files)
    return _commit(request, current, "WRITE", params, leading, written, removed, blind=False)


def _commit(
    request: WriteRequest,
    current: Snapshot | None,
    operation: str,
    params: dict[str, object],
    leading: list[dict[str, object]],
    written: list[WrittenFile],
    removed: list[AddFile],
    *,
    blind: bool,
) -> WriteResult:
    metrics = {**write_metrics(written, removed), **request.extra_metrics}
    info = CommitInfo(operation, params, metrics, is_blind_append=blind, txn=request.txn)
    return commit_files(
        current or request.location,
        CommitActions(leading=leading, written=written, removed=removed),
        CommitOptions(info),
    )


def _resolve_partition_columns(schema: T.StructType, requested: tuple[str, ...]) -> list[str]:
    problems, resolved = [], []
    for name in requested:
        found = find_field(schema, name)
        if found is None:
            problems.append(f"partition column `{name}` is not a column of the data")
        elif isinstance(found.dataType, (T.StructType, T.ArrayType, T.MapType, T.BinaryType, T.VariantType)):
            problems.append(
                f"partition column `{name}` has type {found.dataType.simpleString()}, which cannot partition"
            )
        else:
            resolved.append(found.name)
    if schema.fields and len(resolved) == len(schema.fields):
        problems.append("every column is a partition column; a Delta table needs one data column")
    if problems:
        raise DeltaSchemaError(problems)
    return resolved


def _partition_key(values: Mapping[str, str | None]) -> tuple[tuple[str, str | None], ...]:
    return tuple(sorted((k.lower(), v) for k, v in values.items()))


def selected_schema(frame: T.StructType, table: T.StructType) -> T.StructType | None:
    """The schema of a frame (``frame``) with the table's columns selected by name, in the
    table's order: the frame's own fields (Spark resolves names case-insensitively and keeps the
    frame's), without asking Spark; None if a column is missing (Spark then says so).

    >>> frame = T.StructType([T.StructField("B", T.LongType()), T.StructField("a", T.StringType())])
    >>> table = T.StructType([T.StructField("a", T.StringType()), T.StructField("b", T.LongType())])
    >>> selected_schema(frame, table).names
    ['a', 'B']
    >>> selected_schema(frame, T.StructType([T.StructField("c", T.LongType())])) is None
    True
    """
    by_name = {f.name.lower(): f for f in frame.fields}
    fields = [by_name.get(f.name.lower()) for f in table.fields]
    return None if any(f is None for f in fields) else T.StructType([f for f in fields if f is not None])
