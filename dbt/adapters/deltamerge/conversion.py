"""The ``convert_to_delta`` operation: a parquet folder or catalog table becomes a Delta table.

The Delta side is ``delta.convert``; this module finds the folder of a catalog relation
(its format, location and partition columns), and afterwards binds the catalog entry to
the new Delta table. A managed parquet table is first pointed at an empty folder, so
re-binding (which drops the entry) can never delete its data.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge import catalog
from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.convert import (
    ALREADY_DELTA,
    ConvertError,
    ConvertResult,
    convert_to_delta,
    parse_partition_schema,
)
from dbt.adapters.deltamerge.delta.paths import unescape_partition_value
from dbt.adapters.deltamerge.delta.snapshot import load_snapshot
from dbt.adapters.deltamerge.sql import quote_identifier


@dataclass(frozen=True)
class _CatalogTable:
    schema: str
    identifier: str
    provider: str
    location: str
    managed: bool
    partitions: T.StructType


def convert(
    spark: SparkSession,
    *,
    path: str | None,
    relation: str | None,
    partition_by: str | None,
    statistics: bool,
    relation_name: str | None,
) -> ConvertResult:
    """Convert ``path`` or the catalog table ``relation``; bind the catalog entry afterwards."""
    if (path is None) == (relation is None):
        raise ConvertError("convert_to_delta needs exactly one of `path` or `relation`")
    partitions = parse_partition_schema(spark, partition_by)
    if relation is not None:
        return _convert_relation(spark, relation, partitions, statistics)
    assert path is not None
    target = _split(spark, relation_name) if relation_name else None
    if target is not None:
        _check_free(spark, *target, path)
    result = convert_to_delta(spark, path, partition_schema=partitions, statistics=statistics)
    if target is not None and result.version is not None:
        _bind(spark, target[0], target[1], result.table_path)
    return result


def _convert_relation(
    spark: SparkSession, relation: str, partitions: T.StructType | None, statistics: bool
) -> ConvertResult:
    schema, identifier = _split(spark, relation)
    bound = catalog.binding(spark, schema, identifier)
    if bound is not None:
        return ConvertResult(bound[0], None, 0, ALREADY_DELTA)
    table = _describe(spark, schema, identifier)
    if table.provider == "delta":
        return ConvertResult(table.location, None, 0, ALREADY_DELTA)
    if table.provider != "parquet":
        raise ConvertError(
            "CONVERT TO DELTA only supports parquet tables, but you are trying to convert a "
            f"{table.provider} source: {schema}.{identifier}"
        )
    result = convert_to_delta(
        spark,
        table.location,
        partition_schema=partitions if partitions is not None else table.partitions,
        statistics=statistics,
        source_name=f"{schema}.{identifier}",
    )
    if result.version is None:
        return result
    if table.managed:
        _detach_managed_folders(spark, catalog.table_name(schema, identifier), result.table_path)
    _bind(spark, schema, identifier, result.table_path)
    return result


def _detach_managed_folders(spark: SparkSession, name: str, table_path: str) -> None:
    """Point a managed table and each of its partitions at empty folders.

    Dropping a managed table deletes its folder and every partition's folder, which now
    hold the Delta table's data; after this, re-binding deletes only empty folders.
    """
    empty = os.path.join(table_path, catalog.BINDINGS_DIR, f"_converted_{uuid.uuid4().hex}")
    storage.make_new_dir(empty)
    partitions = (
        [str(r[0]) for r in spark.sql(f"SHOW PARTITIONS {name}").collect()]
        if _partitioned(spark, name)
        else []
    )
    for index, partition in enumerate(partitions):
        folder = os.path.join(empty, str(index))
        storage.make_new_dir(folder)
        spec = ", ".join(
            f"{quote_identifier(key)} = '{_sql_string(value or '')}'"
            for key, value in parse_partition_folder(partition)
        )
        spark.sql(f"ALTER TABLE {name} PARTITION ({spec}) SET LOCATION '{_sql_string(folder)}'")
    spark.sql(f"ALTER TABLE {name} SET LOCATION '{_sql_string(empty)}'")


def _partitioned(spark: SparkSession, name: str) -> bool:
    rows = spark.sql(f"DESCRIBE TABLE {name}").collect()
    return any(str(r[0]).strip() == "# Partition Information" for r in rows)


def _describe(spark: SparkSession, schema: str, identifier: str) -> _CatalogTable:
    name = catalog.table_name(schema, identifier)
    if not spark.catalog.tableExists(name):
        raise ConvertError(f"convert_to_delta: relation {schema}.{identifier} does not exist")
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()
    info = {str(r[0]).strip(): str(r[1] or "").strip() for r in rows}
    columns = spark.catalog.listColumns(identifier, schema)
    partitions = T.StructType(
        [T.StructField(c.name, _parse_type(spark, c.dataType)) for c in columns if c.isPartition]
    )
    location = info.get("Location", "").removeprefix("file:")
    return _CatalogTable(
        schema=schema,
        identifier=identifier,
        provider=info.get("Provider", "hive").lower(),
        location=location,
        managed=info.get("Type", "").upper() == "MANAGED",
        partitions=partitions,
    )


def _parse_type(spark: SparkSession, text: str) -> T.DataType:
    parsed = parse_partition_schema(spark, f"x {text}")
    assert parsed is not None
    return parsed.fields[0].dataType


def _split(spark: SparkSession, name: str) -> tuple[str, str]:
    parts = [p.strip("`") for p in name.split(".")]
    if len(parts) == 1:
        return spark.catalog.currentDatabase(), parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ConvertError(f"convert_to_delta: `{name}` is not a relation name (schema.table)")


def _check_free(spark: SparkSession, schema: str, identifier: str, path: str) -> None:
    bound = catalog.binding(spark, schema, identifier)
    if spark.catalog.tableExists(catalog.table_name(schema, identifier)) and (
        bound is None or os.path.abspath(bound[0]) != os.path.abspath(path)
    ):
        raise ConvertError(
            f"convert_to_delta: relation_name {schema}.{identifier} already names another table; "
            "drop it or choose another name (nothing was converted)"
        )


def _bind(spark: SparkSession, schema: str, identifier: str, table_path: str) -> None:
    snapshot = load_snapshot(table_path)
    if snapshot is None:
        raise ConvertError(f"convert_to_delta: no Delta table at {table_path} after converting")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
    catalog.bind(spark, schema=schema, identifier=identifier, snapshot=snapshot)


def _sql_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'")


def parse_partition_folder(text: str) -> list[tuple[str, str | None]]:
    """``SHOW PARTITIONS`` text as ``(column, value)`` pairs.

    >>> parse_partition_folder("day=2026-01-01/tag=a%3Ab")
    [('day', '2026-01-01'), ('tag', 'a:b')]
    """
    pairs = []
    for part in text.split("/"):
        key, _, value = part.partition("=")
        pairs.append((unescape_partition_value(key) or key, unescape_partition_value(value)))
    return pairs
