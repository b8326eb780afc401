"""The adapter's operations besides materializing models: change feed, vacuum, descriptions, CONVERT.

Each takes the connection's Spark session and plain values, finds the Delta table of
a catalog relation, runs the engine and returns plain values for Jinja.

``convert`` (the ``convert_to_delta`` operation) turns a parquet folder or catalog table into a
Delta table (``delta.convert``): it finds the folder of a catalog relation (its format, location
and partition columns), and afterwards binds the catalog entry to the new Delta table. A
managed parquet table is first pointed at an empty folder, so re-binding (which drops the
entry) can never delete its data.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.change_feed import read_changes
from dbt.adapters.deltamerge.delta.comments import set_descriptions
from dbt.adapters.deltamerge.delta.convert import (
    ALREADY_DELTA,
    ConvertError,
    ConvertResult,
    convert_to_delta,
    parse_partition_schema,
)
from dbt.adapters.deltamerge.delta.paths import unescape_partition_value
from dbt.adapters.deltamerge.delta.snapshot import load_snapshot
from dbt.adapters.deltamerge.delta.vacuum import vacuum
from dbt.adapters.deltamerge.errors import ModelWriteError


def table_changes(spark: SparkSession, relation: Any, start: Any, end: Any = None) -> str:
    """The change data feed of ``relation`` as a temporary view; its quoted name."""
    schema, identifier, table_path = _delta_table(spark, relation, "table_changes")
    last = None if end is None else int(end)
    changes = read_changes(spark, table_path, int(start), last)
    upto = "latest" if last is None else str(last)
    view = f"deltamerge_changes_{schema}_{identifier}_{int(start)}_{upto}"
    changes.createOrReplaceTempView(view)
    return quote_identifier(view)


def persist_docs(
    spark: SparkSession, relation: Any, description: str | None, column_comments: dict[str, str]
) -> int | None:
    """Write ``relation``'s descriptions into its Delta table's metadata; the version committed, if any."""
    schema, identifier, table_path = _delta_table(spark, relation, "persist_docs")
    snapshot = load_snapshot(table_path)
    if snapshot is None:
        raise ModelWriteError(f"persist_docs: no Delta table at {table_path}")
    result = set_descriptions(snapshot, description=description, column_comments=column_comments)
    if result.version is not None:
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return result.version


def vacuum_table(
    spark: SparkSession, relation: Any, retain_hours: float, dry_run: bool, enforce_retention: bool
) -> dict[str, Any]:
    """VACUUM of ``relation``'s Delta table (see ``delta.vacuum``)."""
    _, _, table_path = _delta_table(spark, relation, "vacuum")
    result = vacuum(
        table_path, retain_hours=retain_hours, dry_run=dry_run, enforce_retention=enforce_retention
    )
    return {
        "table_path": result.table_path,
        "files": list(result.files),
        "num_files": len(result.files),
        "bytes": result.bytes,
        "oldest_retained_version": result.oldest_retained_version,
        "dry_run": result.dry_run,
    }


def _delta_table(spark: SparkSession, relation: Any, what: str) -> tuple[str, str, str]:
    """``(schema, identifier, table path)`` of a relation or ``"schema.table"`` text."""
    if isinstance(relation, str):
        schema, _, identifier = relation.rpartition(".")
        schema = schema or spark.catalog.currentDatabase()
    else:
        schema, identifier = str(relation.schema), str(relation.identifier)
    found = binding.binding(spark, schema, identifier)
    if found is None:
        raise ModelWriteError(f"{what}: {schema}.{identifier} is not a Delta table of this adapter")
    return schema, identifier, found[0]


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
    bound = binding.binding(spark, schema, identifier)
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
        _detach_managed_folders(spark, binding.table_name(schema, identifier), result.table_path)
    _bind(spark, schema, identifier, result.table_path)
    return result


def _detach_managed_folders(spark: SparkSession, name: str, table_path: str) -> None:
    """Point a managed table and each of its partitions at empty folders.

    Dropping a managed table deletes its folder and every partition's folder, which now
    hold the Delta table's data; after this, re-binding deletes only empty folders.
    """
    empty = os.path.join(table_path, binding.BINDINGS_DIR, f"_converted_{uuid.uuid4().hex}")
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
    name = binding.table_name(schema, identifier)
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
    bound = binding.binding(spark, schema, identifier)
    if spark.catalog.tableExists(binding.table_name(schema, identifier)) and (
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
    binding.bind(spark, schema=schema, identifier=identifier, snapshot=snapshot)


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
