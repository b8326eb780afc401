"""CONVERT TO DELTA: a folder of parquet files becomes a Delta table in place.

As Delta's ``ConvertToDeltaCommand``: list the files (Spark's hidden-file rules), parse
partition values from ``col=value`` folders against the given partition schema, infer
the data schema by merging every file's schema, collect statistics from the footers
(unless ``NO STATISTICS``) and commit version 0 with an ``add`` per file. No data file
is copied or rewritten. The log appears atomically: version 0 is written in a hidden
folder that is renamed to ``_delta_log``, so a crash leaves no log or a whole version 0.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.commands.convert_files import (
    ParquetFile,
    file_schemas,
    file_stats_json,
    list_data_files,
    merge_schemas,
    not_parquet,
)
from dbt.adapters.deltamerge.delta.errors import DeltaError, StorageError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.protocol import TableMetadata, protocol_for
from dbt.adapters.deltamerge.delta.log.schema import (
    required_features,
    schema_problems,
    schema_to_json,
    to_delta_schema,
)
from dbt.adapters.deltamerge.delta.log.stats import DEFAULT_NUM_INDEXED_COLS
from dbt.adapters.deltamerge.delta.paths import encode_add_path
from dbt.adapters.deltamerge.delta.txn.commit import (
    CommitInfo,
    encode_actions,
    latest_version,
    now_ms,
)
from dbt.adapters.deltamerge.delta.txn.metrics import convert_metrics

ALREADY_DELTA = "The table you are trying to convert is already a delta table"


class ConvertError(DeltaError):
    """The folder cannot be converted; nothing was written."""


@dataclass(frozen=True)
class ConvertResult:
    """What the conversion did (``version`` None: it was already a Delta table)."""

    location: TableLocation
    version: int | None
    num_files: int
    message: str

    def as_output(self) -> dict[str, object]:
        """The operation's result as plain values (``table_path`` the table's path)."""
        return {
            "table_path": self.location.path,
            "version": self.version,
            "num_files": self.num_files,
            "message": self.message,
        }


def convert_to_delta(
    spark: SparkSession,
    table: TableLocation,
    *,
    partition_schema: T.StructType | None = None,
    statistics: bool = True,
    source_name: str | None = None,
) -> ConvertResult:
    """Convert the parquet files under ``table`` into version 0 of a Delta table there."""
    path = table.path
    name = source_name or path
    if not table.store.is_dir(path):
        raise ConvertError(f"CONVERT TO DELTA: {name}: no directory at {path}")
    if latest_version(table) >= 0:
        return ConvertResult(table, None, 0, ALREADY_DELTA)
    files = list_data_files(table, [f.name for f in (partition_schema or T.StructType()).fields])
    if not files:
        raise ConvertError(f"CONVERT TO DELTA: {name}: no parquet files under {path}; nothing to convert")
    wrong = not_parquet(table, files)
    if wrong is not None:
        fmt, file = wrong
        raise ConvertError(
            f"CONVERT TO DELTA only supports parquet tables, but you are trying to convert a {fmt} source: "
            f"{name} (file {file})"
        )
    partitions = partition_schema or T.StructType()
    _check_partition_values(spark, partitions, files, path)
    data_schema = _data_schema(spark, table, files, partitions)
    schema = to_delta_schema(T.StructType([*data_schema.fields, *partitions.fields]))
    problems = schema_problems(schema)
    if problems:
        raise ConvertError(f"CONVERT TO DELTA: {name}: " + "; ".join(problems))
    stats = file_stats_json(spark, table, files, data_schema, DEFAULT_NUM_INDEXED_COLS) if statistics else {}
    _write_version_zero(table, schema, partitions, files, stats, statistics)
    return ConvertResult(table, 0, len(files), f"Converted {len(files)} parquet files at {path} to Delta")


def parse_partition_schema(spark: SparkSession, ddl: str | None) -> T.StructType | None:
    """``"day DATE, country STRING"`` as a schema, parsed by Spark (public API, classic or Connect)."""
    if not ddl or not ddl.strip():
        return None
    return spark.createDataFrame([], schema=ddl).schema


def _check_partition_values(
    spark: SparkSession, partitions: T.StructType, files: list[ParquetFile], path: str
) -> None:
    expected = [f.name for f in partitions.fields]
    for file in files:
        found = list(file.partition_values)
        if [c.lower() for c in found] != [c.lower() for c in expected]:
            raise ConvertError(
                f"Expecting {len(expected)} partition column(s): [{_backticked(expected)}], but found "
                f"{len(found)} partition column(s): [{_backticked(found)}] from parsing the file name: "
                f"{os.path.join(path, file.relative)}"
            )
    if not expected:
        return
    distinct = sorted({tuple(f.partition_values.values()) for f in files}, key=str)
    frame = spark.createDataFrame(
        distinct, T.StructType([T.StructField(c, T.StringType()) for c in expected])
    )
    bad = frame.where(
        " OR ".join(
            f"({quote_identifier(f.name)} IS NOT NULL AND try_cast({quote_identifier(f.name)} AS "
            f"{f.dataType.simpleString()}) IS NULL)"
            for f in partitions.fields
        )
    ).limit(1)
    rows = bad.collect()
    if rows:
        raise ConvertError(
            f"CONVERT TO DELTA: partition values {rows[0].asDict()} do not convert to the partition "
            f"schema {partitions.simpleString()}; fix partition_by"
        )


def _data_schema(
    spark: SparkSession, table: TableLocation, files: list[ParquetFile], partitions: T.StructType
) -> T.StructType:
    merged = merge_schemas(file_schemas(spark, table, files))
    names = {f.name.lower() for f in partitions.fields}
    return T.StructType([f for f in merged.fields if f.name.lower() not in names])


def _backticked(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _write_version_zero(
    table: TableLocation,
    schema: T.StructType,
    partitions: T.StructType,
    files: list[ParquetFile],
    stats: dict[str, str],
    statistics: bool,
) -> None:
    partition_columns = tuple(f.name for f in partitions.fields)
    metadata = TableMetadata(
        id=str(uuid.uuid4()),
        schema_string=schema_to_json(schema),
        partition_columns=partition_columns,
        created_time=now_ms(),
    )
    adds = [_add_action(f, stats.get(f.relative)) for f in files]
    info = CommitInfo(
        "CONVERT",
        {
            "numFiles": len(files),
            "partitionBy": list(partition_columns),
            "collectStats": statistics,
            "sourceFormat": "parquet",
        },
        convert_metrics(len(files)),
    )
    head = info.to_action(timestamp=now_ms(), read_version=None)
    data = encode_actions(
        [head, protocol_for(required_features(schema)).to_action(), metadata.to_action(), *adds]
    )
    store = table.store
    if store.object_store:
        # No folder rename there: version 0 is one conditional create, all of it or nothing.
        if not store.put_if_absent(table.commit_file(0), data):
            raise ConvertError(
                f"CONVERT TO DELTA: {table.log_folder} has a version 0 already (another writer?); "
                "nothing was committed"
            )
        return
    staging = os.path.join(table.path, f".deltamerge_convert_{uuid.uuid4().hex}")
    store.make_new_dir(staging)
    try:
        store.write_durably(os.path.join(staging, f"{0:020d}.json"), data)
        _publish(table, staging)
    finally:
        store.delete_tree(staging)


def _publish(table: TableLocation, staging: str) -> None:
    """Rename the staged log into place: all of version 0 appears at once, or nothing."""
    log, store = table.log_folder, table.store
    if store.is_dir(log) and not store.list_names(log):
        store.remove_empty_dir(log)  # an empty log folder holds no version: it is not a table yet
    try:
        store.rename(staging, log)
    except StorageError as exc:
        raise ConvertError(
            f"CONVERT TO DELTA: {log} appeared while converting (another writer?); nothing was committed"
        ) from exc


def _add_action(file: ParquetFile, stats: str | None) -> dict[str, object]:
    add: dict[str, object] = {
        "path": encode_add_path(file.relative),
        "partitionValues": file.partition_values,
        "size": file.size,
        "modificationTime": file.modification_time,
        "dataChange": True,
    }
    if stats is not None:
        add["stats"] = stats
    return {"add": add}
