"""Time travel and history through SQL, on Delta-bound names.

``DESCRIBE HISTORY`` / ``DESCRIBE DETAIL`` answer from the log with Delta's columns; ``RESTORE``
is one commit (``history.restore``), then the name is bound to it. A query that reads a table
``VERSION AS OF n`` or ``TIMESTAMP AS OF t`` (a model's SQL, a ``ref`` with the clause after it,
a statement) has each such reference replaced, in its text, by the catalog entry of that version:
``<name>__deltamerge_v<n>``, bound once, its link folder under the live binding's root in
``_travel/v<n>`` (the live binding's pruning never reaches it). Every read checks that the version
is still in the log and its files are still there (``history.snapshot_at``).
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame, SparkSession

from dbt.adapters.deltamerge import binding
from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import Stores, after_commit, load_snapshot
from dbt.adapters.deltamerge.statements.parse.history import (
    DescribeDetail,
    DescribeHistory,
    parse_history_statement,
    travel_references,
)
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.history import (
    detail_frame,
    history_frame,
    resolve_version,
    restore,
    snapshot_at,
)

# Catalog entries of old versions end so; dbt's relation listing leaves them out.
TRAVEL_MARK = "__deltamerge_v"


class NotADeltaName(EngineError):
    """Time travel or history asked of a name that is no Delta table's catalog entry."""


def run_history(spark: SparkSession, sql: str, stores: Stores) -> tuple[str, DataFrame] | None:
    """Run ``DESCRIBE HISTORY`` / ``DETAIL`` or ``RESTORE`` of a Delta-bound name (its table reached
    through ``stores``): what it names and its result rows; None when ``sql`` is none of them. A
    name no entry of ours binds is refused."""
    parsed = parse_history_statement(sql)
    if parsed is None:
        return None
    schema, identifier = _split(spark, parsed.parts)
    name = f"{schema}.{identifier}"
    entry = binding.binding(spark, schema, identifier, stores)
    if entry is None:
        raise NotADeltaName(f"{name} is not a Delta table (no catalog entry of dbt-deltamerge names it)")
    table = entry.location
    if isinstance(parsed, DescribeHistory):
        return name, history_frame(spark, table, parsed.limit)
    current = load_snapshot(table)
    if current is None:
        raise NotADeltaName(f"{name} is bound to {table}, where no Delta table is")
    if isinstance(parsed, DescribeDetail):
        return name, detail_frame(spark, current, name)
    version = resolve_version(spark, table, parsed.to, name)
    result = restore(current, snapshot_at(table, version, name), parsed.to)
    with after_commit(f"binding the restored version as {name} in the catalog"):
        binding.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
    metrics = result.metrics
    row = {
        "table_size_after_restore": metrics["tableSizeAfterRestore"],
        "num_of_files_after_restore": metrics["numOfFilesAfterRestore"],
        "num_removed_files": metrics["numRemovedFiles"],
        "num_restored_files": metrics["numRestoredFiles"],
        "removed_files_size": metrics["removedFilesSize"],
        "restored_files_size": metrics["restoredFilesSize"],
    }
    columns = ", ".join(f"{k} long" for k in row)
    return name, spark.createDataFrame([tuple(row.values())], columns)


def with_versions(spark: SparkSession, text: SqlText, stores: Stores) -> str:
    """``text`` with each ``name VERSION|TIMESTAMP AS OF x`` of a Delta-bound name replaced by that
    version's catalog entry (other names' clauses are left to Spark); tables reached through
    ``stores``."""
    sql, references = text.sql, travel_references(text)
    for reference in reversed(references):  # from the end: earlier offsets stay right
        schema, identifier = _split(spark, reference.parts)
        entry = binding.binding(spark, schema, identifier, stores)
        if entry is None or entry.delta_entry:
            continue  # (Delta's own entry: Delta reads the version itself)
        name = f"{schema}.{identifier}"
        version = resolve_version(spark, entry.location, reference.to, name)
        travel = _bound_version(spark, schema, identifier, entry, version)
        sql = sql[: reference.start] + travel + sql[reference.end :]
    return sql


def _bound_version(
    spark: SparkSession, schema: str, identifier: str, entry: binding.Binding, version: int
) -> str:
    """The catalog entry of ``version`` (bound now unless it already reads it), quoted."""
    name = f"{schema}.{identifier}"
    snapshot = snapshot_at(entry.location, version, name)  # refused if VACUUM removed its files
    travel = f"{identifier}{TRAVEL_MARK}{version}"
    found = binding.binding(spark, schema, travel, entry.location.stores)
    if found is None or found.version != version or found.table_path != entry.table_path:
        live_root = entry.properties.get(binding.ROOT_PROPERTY) or binding.bindings_root(entry.location)
        root = os.path.join(live_root, binding.TRAVEL_DIR, f"v{version}")
        current = {binding.LOCATION_PROPERTY: entry.table_path, binding.ROOT_PROPERTY: root}
        binding.bind(spark, schema=schema, identifier=travel, snapshot=snapshot, current=current)
    return f"{quote_identifier(schema)}.{quote_identifier(travel)}"


def _split(spark: SparkSession, parts: tuple[str, ...]) -> tuple[str, str]:
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 2:
        return parts[0], parts[1]
    if len(parts) == 1:
        return spark.catalog.currentDatabase(), parts[0]
    raise NotADeltaName(f"{'.'.join(parts)}: time travel reads tables of the session catalog")
