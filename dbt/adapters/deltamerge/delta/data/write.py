"""Table-level writes: one DataFrame becomes one new Delta version.

``create_or_replace`` (a new table, or a new version with a new definition: history is
kept), ``append``, ``replace_partitions`` (dynamic partition overwrite) and
``replace_where`` (rows matching a predicate are replaced, as Delta's ``replaceWhere``).
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
from dbt.adapters.deltamerge.delta.data.constraints import Constraints, enforced
from dbt.adapters.deltamerge.delta.data.files import (
    CHANGE_TYPE,
    optimized,
    physical_columns,
    write_data_and_changes,
    write_data_files,
)
from dbt.adapters.deltamerge.delta.data.read import read_files
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
from dbt.adapters.deltamerge.delta.log.mapping import (
    MAPPING_MODE,
    MAX_COLUMN_ID,
    mapping_mode,
    physical_names,
)
from dbt.adapters.deltamerge.delta.log.properties import value_problems, with_session_defaults
from dbt.adapters.deltamerge.delta.log.protocol import (
    TableMetadata,
    change_data_feed_enabled,
    table_features,
    upgraded,
    with_row_tracking_columns,
)
from dbt.adapters.deltamerge.delta.log.row_ids import STABLE_COLUMNS, materialized_columns
from dbt.adapters.deltamerge.delta.log.schema import (
    contains_type,
    find_field,
    required_features,
    schema_to_json,
    to_delta_schema,
)
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.log.stats import DEFAULT_NUM_INDEXED_COLS
from dbt.adapters.deltamerge.delta.paths import local_path, table_path_of
from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, CommitActions, WrittenFile
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo, now_ms
from dbt.adapters.deltamerge.delta.txn.metrics import execution_time, write_metrics
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files

Action = dict[str, object]
WriteMode = Literal["create_or_replace", "append", "replace_partitions", "replace_where"]


@dataclass(frozen=True)
class WriteRequest:
    """What to write where (``location``: a path is a local table's location)."""

    location: TableLocation
    mode: WriteMode
    partition_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    replace_where: str | None = None
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

    def __post_init__(self) -> None:
        if isinstance(self.location, str):  # a caller's plain path (tests, benchmarks)
            object.__setattr__(self, "location", TableLocation.of(self.location))


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
            result = _replace_where(spark, df, request, target, leading)
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
        request.location.path,
        partition_columns,
        configuration,
        schema,
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
    path, columns = request.location.path, current.partition_columns
    written = write_files(aligned, path, columns, configuration, current.schema)
    params: dict[str, object] = {"mode": "Append", "partitionBy": current.partition_columns}
    # Readers infer an append's changes from its adds: no change data files.
    return _commit(request, current, "WRITE", params, leading, written, [], blind=not leading)


def _replace_partitions(
    df: DataFrame, request: WriteRequest, current: Snapshot, leading: list[Action]
) -> WriteResult:
    aligned = align_to_schema(df, current.schema, what=f"insert_overwrite into {request.location}")
    configuration = current.metadata.configuration
    path, columns = request.location.path, current.partition_columns
    written = write_files(aligned, path, columns, configuration, current.schema)
    params: dict[str, object] = {"mode": "Overwrite", "partitionBy": current.partition_columns}
    if current.partition_columns:
        touched = {_partition_key(f.partition_values) for f in written}
        removed = [f for f in current.files if _partition_key(f.partition_values) in touched]
        params["partitionOverwriteMode"] = "DYNAMIC"
    else:
        removed = list(current.files)
    return _commit(request, current, "WRITE", params, leading, written, removed, blind=False)


def _replace_where(
    spark: SparkSession, df: DataFrame, request: WriteRequest, current: Snapshot, leading: list[Action]
) -> WriteResult:
    predicate = request.replace_where or "true"
    aligned = align_to_schema(df, current.schema, what=f"replace where into {request.location}")
    touched = _files_matching(spark, current, predicate)
    configuration = current.metadata.configuration
    params: dict[str, object] = {"mode": "Overwrite", "predicate": [predicate]}
    if leading or change_data_feed_enabled(configuration):
        # Rows kept from rewritten files are not changes: the feed needs explicit change rows.
        old = read_files(spark, current, touched)
        replaced = F.coalesce(F.expr(f"({predicate})"), F.lit(False))
        rows = old.select(*old.columns, F.when(replaced, "delete").alias(CHANGE_TYPE))
        rows = rows.unionByName(aligned.withColumn(CHANGE_TYPE, F.lit(None).cast("string")))
        rows = rows.unionByName(aligned.withColumn(CHANGE_TYPE, F.lit("insert")))
        # Deleted rows are only change rows; the writer keeps rows whose change type is null.
        written, changes = write_files_and_changes(
            rows, request.location.path, current.partition_columns, configuration, current.schema
        )
        info = CommitInfo("WRITE", params, write_metrics(written, touched), txn=request.txn)
        return commit_files(
            current,
            CommitActions(leading=leading, written=written, removed=touched, changes=changes),
            CommitOptions(info),
        )
    kept_rows = read_files(spark, current, touched).where(f"NOT coalesce(({predicate}), false)")
    written = write_files(
        aligned.unionByName(kept_rows),
        request.location.path,
        current.partition_columns,
        configuration,
        current.schema,
    )
    return _commit(request, current, "WRITE", params, leading, written, touched, blind=False)


def _files_matching(spark: SparkSession, snapshot: Snapshot, predicate: str) -> list[AddFile]:
    """Live files holding at least one row that satisfies ``predicate``."""
    if not snapshot.files:
        return []
    matches = (
        read_files(spark, snapshot, list(snapshot.files))
        .where(f"coalesce(({predicate}), false)")
        .select(F.input_file_name().alias("file"))
        .distinct()
        .collect()
    )
    hit = {table_path_of(row.file) for row in matches}
    return [f for f in snapshot.files if local_path(snapshot.table_path, f.path) in hit]


def write_files(
    df: DataFrame,
    table_path: str,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None = None,
) -> list[WrittenFile]:
    """``df`` (in the table's column order) as data files; ``schema`` (the table's, with column
    mapping metadata) is needed when the table maps columns: files hold physical names.
    Every row is checked against the table's constraints in the same Spark job."""
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    df = optimized(
        enforced(df, Constraints.of(schema or T.StructType(), configuration)),
        partition_columns,
        configuration,
    )
    df, partition_columns, unindexed = _as_stored(df, partition_columns, configuration, schema)
    _unshredded_variants(df)
    return write_data_files(
        df, table_path, partition_columns=partition_columns, num_indexed_cols=num_indexed, unindexed=unindexed
    )


def write_files_and_changes(
    df: DataFrame,
    table_path: str,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None = None,
) -> tuple[list[WrittenFile], list[ChangeFile]]:
    """Rows with ``_change_type``: data files for null, change data files for the rest (the data
    rows checked against the table's constraints in the same Spark job)."""
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    constraints = Constraints.of(schema or T.StructType(), configuration)
    df = optimized(
        enforced(df, constraints, rows=F.col(CHANGE_TYPE).isNull()), partition_columns, configuration
    )
    df, partition_columns, unindexed = _as_stored(df, partition_columns, configuration, schema)
    _unshredded_variants(df)
    return write_data_and_changes(
        df, table_path, partition_columns=partition_columns, num_indexed_cols=num_indexed, unindexed=unindexed
    )


def _unshredded_variants(df: DataFrame) -> None:
    """Have Spark write variant columns unshredded (a struct of ``value`` and ``metadata``), as
    PROTOCOL.md asks of a table without ``variantShredding`` (Spark 4.1+ shreds by default)."""
    if contains_type(df.schema, T.VariantType):
        df.sparkSession.conf.set("spark.sql.variant.writeShredding.enabled", "false")


def _as_stored(
    df: DataFrame, partition_columns: list[str], configuration: Mapping[str, str], schema: T.StructType | None
) -> tuple[DataFrame, list[str], frozenset[str]]:
    """``df`` and the partition columns as data files hold them, and the columns without
    statistics: physical names with column mapping; stable row ids (``STABLE_ROW_ID``, ...) in the
    materialized columns of a table that preserves them, dropped otherwise."""
    hidden = materialized_columns(configuration)
    stable = [
        F.col(internal).alias(stored)
        for internal, stored in zip(STABLE_COLUMNS, hidden or (), strict=False)
        if internal in df.columns
    ]
    unindexed = frozenset(hidden or ())
    if mapping_mode(configuration) == "none":
        kept = [F.col(quote_identifier(c)) for c in df.columns if c not in STABLE_COLUMNS]
        return df.select(*kept, *stable), partition_columns, unindexed
    if schema is None:
        raise DeltaError("a write to a table with column mapping needs the table's schema (a bug)")
    extra = [F.col(quote_identifier(c)) for c in df.columns if c == CHANGE_TYPE]
    names = physical_names(schema)
    return (
        df.select(*physical_columns(schema), *extra, *stable),
        [names[c] for c in partition_columns],
        unindexed,
    )


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
