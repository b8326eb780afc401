"""The adapter's operations besides materializing models: change feed, vacuum, descriptions, CONVERT.

Each takes the connection's Spark session and the operation's arguments as given (``--args``
YAML, or a macro's values), reads every argument before doing anything (a wrong one fails the
operation naming it, as ``SpecError``; ``dry_run: "false"`` is false, ``dry_run: "no"`` an error,
never a silent default), finds the Delta table of a catalog relation, runs the engine and
returns plain values for Jinja.

``convert`` (the ``convert_to_delta`` operation) turns a parquet folder or catalog table into a
Delta table (``delta.convert``): it finds the folder of a catalog relation (its format, location
and partition columns), and afterwards binds the catalog entry to the new Delta table. A
managed parquet table is first pointed at an empty folder, so re-binding (which drops the
entry) can never delete its data.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.config_values import SpecError, names, number, operation_flag, text
from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import (
    Snapshot,
    TableLocation,
    load_snapshot,
    parse_partition_folder,
    table_path_of,
)
from dbt.adapters.deltamerge.delta.commands import (
    ALREADY_DELTA,
    ConvertError,
    ConvertResult,
    convert_to_delta,
    optimize,
    parse_partition_schema,
    plan_bins,
    read_changes,
    set_descriptions,
    vacuum,
)
from dbt.adapters.deltamerge.errors import ModelWriteError
from dbt.adapters.deltamerge.invocation import current
from dbt.adapters.deltamerge.statements.parse.maintenance import OptimizeStatement, ReorgStatement
from dbt.adapters.deltamerge.statements.run.maintenance import optimize_plan, reorg_purge


def table_changes(spark: SparkSession, relation: Any, start: Any, end: Any = None) -> str:
    """The change data feed of ``relation`` as a temporary view; its quoted name."""
    problems: list[str] = []
    first = _version(start, "starting_version", problems)
    last = None if end is None else _version(end, "ending_version", problems)
    _checked("table_changes", problems)
    schema, identifier, location = _delta_table(spark, relation, "table_changes")
    changes = read_changes(spark, location, first, last)
    upto = "latest" if last is None else str(last)
    view = f"deltamerge_changes_{schema}_{identifier}_{first}_{upto}"
    changes.createOrReplaceTempView(view)
    return quote_identifier(view)


def persist_docs(
    spark: SparkSession, relation: Any, description: str | None, column_comments: dict[str, str]
) -> int | None:
    """Write ``relation``'s descriptions into its Delta table's metadata; the version committed, if any."""
    schema, identifier, location = _delta_table(spark, relation, "persist_docs")
    snapshot = load_snapshot(location)
    if snapshot is None:
        raise ModelWriteError(f"persist_docs: no Delta table at {location}")
    result = set_descriptions(snapshot, description=description, column_comments=column_comments)
    if result.version is not None:
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return result.version


def vacuum_table(
    spark: SparkSession, relation: Any, retain_hours: Any, dry_run: Any, enforce_retention: Any
) -> dict[str, Any]:
    """VACUUM of ``relation``'s Delta table (see ``delta.vacuum``)."""
    problems: list[str] = []
    hours = number(retain_hours, "retain_hours", problems, what="a number of hours >= 0")
    listing = operation_flag(dry_run, "dry_run", problems)
    enforce = operation_flag(enforce_retention, "enforce_retention", problems)
    if retain_hours is None:
        problems.append("retain_hours must be a number of hours >= 0, got None")
    _checked("vacuum", problems)
    _, _, location = _delta_table(spark, relation, "vacuum")
    result = vacuum(location, retain_hours=hours or 0.0, dry_run=listing, enforce_retention=enforce)
    return {
        "table_path": result.table.path,
        "files": list(result.files),
        "num_files": len(result.files),
        "bytes": result.bytes,
        "oldest_retained_version": result.oldest_retained_version,
        "dry_run": result.dry_run,
    }


def reorg_table(spark: SparkSession, relation: Any, where: Any) -> dict[str, Any]:
    """REORG ... APPLY (PURGE) of ``relation``'s Delta table (``statements.maintenance``): the version
    committed (None when no file has a deletion vector) and Delta's metrics."""
    if where is not None and not (isinstance(where, str) and where.strip()):
        _checked("reorg", [f"where must be a SQL condition on partition columns, got {where!r}"])
    schema, identifier, location = _delta_table(spark, relation, "reorg")
    snapshot = load_snapshot(location)
    if snapshot is None:
        raise ModelWriteError(f"reorg: no Delta table at {location}")
    result = reorg_purge(spark, snapshot, ReorgStatement((schema, identifier), where))
    if result.version is not None:
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return {"table_path": location.path, "version": result.version, "metrics": dict(result.metrics)}


def optimize_table(
    spark: SparkSession, relation: Any, where: Any, zorder_by: Any, dry_run: Any
) -> dict[str, Any]:
    """OPTIMIZE of ``relation``'s Delta table (``delta.optimize``): the version committed (None when
    no file needed rewriting) and Delta's metrics; ``dry_run``: the bins it would write, nothing written."""
    problems: list[str] = []
    if where is not None and not (isinstance(where, str) and where.strip()):
        problems.append(f"where must be a SQL condition on partition columns, got {where!r}")
    columns = names(zorder_by, "zorder_by", problems) if zorder_by is not None else ()
    listing = operation_flag(dry_run, "dry_run", problems)
    _checked("optimize", problems)
    schema, identifier, location = _delta_table(spark, relation, "optimize")
    snapshot = load_snapshot(location)
    if snapshot is None:
        raise ModelWriteError(f"optimize: no Delta table at {location}")
    statement = OptimizeStatement((schema, identifier), where, tuple(columns))
    considered, options = optimize_plan(spark, snapshot, statement)
    if listing:
        bins = plan_bins(considered, options)
        return {
            "table_path": location.path,
            "dry_run": True,
            "bins": [
                {
                    "partition": dict(b.partition_values),
                    "files": len(b.files),
                    "bytes": b.size,
                    "files_out": b.files_out,
                }
                for b in bins
            ],
            "files_in": sum(len(b.files) for b in bins),
            "files_out": sum(b.files_out for b in bins),
            "bytes": sum(b.size for b in bins),
        }
    result = optimize(spark, snapshot, considered, options, [where] if where else [])
    if result.version is not None:
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    return {
        "table_path": location.path,
        "dry_run": False,
        "version": result.version,
        "metrics": dict(result.metrics),
    }


def _version(value: Any, key: str, problems: list[str]) -> int:
    """A table version: a whole number >= 0 (a number from ``run_query`` may be a Decimal).

    >>> problems = []
    >>> _version(Decimal(3), "v", problems), _version("4", "v", problems), _version(True, "v", problems)
    (3, 4, 0)
    >>> problems
    ['v must be a table version (a whole number >= 0), got True']
    """
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    number_like = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
    if number_like and value >= 0 and value == int(value):
        return int(value)
    problems.append(f"{key} must be a table version (a whole number >= 0), got {value!r}")
    return 0


def _checked(operation: str, problems: list[str]) -> None:
    if problems:
        raise SpecError(operation, problems, kind="Operation", what="arguments")


def iceberg_sync_table(spark: SparkSession, relation: Any) -> dict[str, Any]:
    """The Iceberg side of ``relation``'s UniForm table, and its Iceberg catalog, at its latest version."""
    from dbt.adapters.deltamerge.delta import uniform

    schema, identifier, location = _delta_table(spark, relation, "iceberg_sync")
    snapshot = load_snapshot(location)
    if snapshot is None or not uniform.iceberg_enabled(snapshot.metadata.configuration):
        raise ModelWriteError(
            f"iceberg_sync: {schema}.{identifier} is no UniForm table (create it with table_format: "
            "iceberg, or delta.enableIcebergCompatV2 and delta.universalFormat.enabledFormats=iceberg)"
        )
    shown = uniform.sync_iceberg(location, snapshot)
    state = uniform.iceberg_state(location)
    place = uniform.registration(snapshot.metadata.configuration)
    return {
        "table_path": location.path,
        "delta_version": shown,
        "metadata_location": state.location if state is not None else None,
        "catalog": str(place) if place else None,
        "catalog_delta_version": uniform.publish_registered(location, snapshot),
    }


def _delta_table(spark: SparkSession, relation: Any, what: str) -> tuple[str, str, TableLocation]:
    """``(schema, identifier, table location)`` of a relation or ``"schema.table"`` text."""
    if not isinstance(relation, str) and not hasattr(relation, "identifier"):
        _checked(what, [f"relation must be a relation or a name like schema.table, got {relation!r}"])
    if isinstance(relation, str):
        schema, _, identifier = relation.rpartition(".")
        schema = schema or spark.catalog.currentDatabase()
    else:
        schema, identifier = str(relation.schema), str(relation.identifier)
    found = binding.binding(spark, schema, identifier, current().stores)
    if found is None:
        raise ModelWriteError(f"{what}: {schema}.{identifier} is not a Delta table of this adapter")
    return schema, identifier, found.location


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
    path: Any,
    relation: Any,
    partition_by: Any,
    statistics: Any,
    relation_name: Any,
) -> ConvertResult:
    """Convert ``path`` or the catalog table ``relation``; bind the catalog entry afterwards."""
    problems: list[str] = []
    path, relation = text(path, "path", problems), text(relation, "relation", problems)
    partition_by = text(partition_by, "partition_by", problems, what="columns with types (day DATE, ...)")
    statistics = operation_flag(statistics, "statistics", problems)
    relation_name = text(relation_name, "relation_name", problems, what="a relation name (schema.table)")
    if (path is None) == (relation is None) and not problems:
        problems.append("give exactly one of `path` or `relation`")
    _checked("convert_to_delta", problems)
    partitions = parse_partition_schema(spark, partition_by)
    if relation is not None:
        return _convert_relation(spark, relation, partitions, statistics)
    assert path is not None
    target = _split(spark, relation_name) if relation_name else None
    if target is not None:
        _check_free(spark, *target, path)
    located = TableLocation.of(path, current().stores)
    result = convert_to_delta(spark, located, partition_schema=partitions, statistics=statistics)
    if target is not None:
        # A folder that already was a Delta table is registered: nothing is written into it.
        bound = _bind(spark, target[0], target[1], result.location, registering=result.version is None)
        registered = (
            f"Registered {target[0]}.{target[1]}: Delta version {bound.version}, "
            f"{len(bound.files)} live files, columns {', '.join(bound.schema.fieldNames())}"
        )
        return dataclasses.replace(result, message=f"{result.message}. {registered}")
    return result


def _convert_relation(
    spark: SparkSession, relation: str, partitions: T.StructType | None, statistics: bool
) -> ConvertResult:
    schema, identifier = _split(spark, relation)
    stores = current().stores
    bound = binding.binding(spark, schema, identifier, stores)
    if bound is not None:
        return ConvertResult(bound.location, None, 0, ALREADY_DELTA)
    table = _describe(spark, schema, identifier)
    if table.provider == "delta":
        return ConvertResult(TableLocation.of(table.location, stores), None, 0, ALREADY_DELTA)
    if table.provider != "parquet":
        raise ConvertError(
            "CONVERT TO DELTA only supports parquet tables, but you are trying to convert a "
            f"{table.provider} source: {schema}.{identifier}"
        )
    result = convert_to_delta(
        spark,
        TableLocation.of(table.location, stores),
        partition_schema=partitions if partitions is not None else table.partitions,
        statistics=statistics,
        source_name=f"{schema}.{identifier}",
    )
    if result.version is None:
        return result
    if table.managed:
        _detach_managed_folders(spark, binding.table_name(schema, identifier), result.location)
    _bind(spark, schema, identifier, result.location)
    return result


def _detach_managed_folders(spark: SparkSession, name: str, table: TableLocation) -> None:
    """Point a managed table and each of its partitions at empty folders.

    Dropping a managed table deletes its folder and every partition's folder, which now
    hold the Delta table's data; after this, re-binding deletes only empty folders.
    """
    empty = os.path.join(table.path, binding.BINDINGS_DIR, f"_converted_{uuid.uuid4().hex}")
    table.store.make_new_dir(empty)
    partitions = (
        [str(r[0]) for r in spark.sql(f"SHOW PARTITIONS {name}").collect()]
        if _partitioned(spark, name)
        else []
    )
    for index, partition in enumerate(partitions):
        folder = os.path.join(empty, str(index))
        table.store.make_new_dir(folder)
        spec = ", ".join(
            f"{quote_identifier(key)} = {string_literal(value or '')}"
            for key, value in parse_partition_folder(partition).items()
        )
        spark.sql(f"ALTER TABLE {name} PARTITION ({spec}) SET LOCATION {string_literal(folder)}")
    spark.sql(f"ALTER TABLE {name} SET LOCATION {string_literal(empty)}")


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
    bound = binding.binding(spark, schema, identifier, current().stores)
    if spark.catalog.tableExists(binding.table_name(schema, identifier)) and (
        bound is None or bound.table_path != table_path_of(path)
    ):
        raise ConvertError(
            f"convert_to_delta: relation_name {schema}.{identifier} already names another table; "
            "drop it or choose another name (nothing was converted)"
        )


def _bind(
    spark: SparkSession, schema: str, identifier: str, table: TableLocation, *, registering: bool = False
) -> Snapshot:
    snapshot = load_snapshot(table)
    if snapshot is None:
        raise ConvertError(f"convert_to_delta: no Delta table at {table} after converting")
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {quote_identifier(schema)}")
    binding.bind(spark, schema=schema, identifier=identifier, snapshot=snapshot, registering=registering)
    return snapshot
