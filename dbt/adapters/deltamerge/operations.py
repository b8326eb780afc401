"""The adapter's operations besides materializing models: change feed, vacuum, descriptions.

Each takes the connection's Spark session and plain values, finds the Delta table of
a catalog relation, runs the engine and returns plain values for Jinja.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge import catalog
from dbt.adapters.deltamerge.delta.changes import read_changes
from dbt.adapters.deltamerge.delta.docs import set_descriptions
from dbt.adapters.deltamerge.delta.snapshot import load_snapshot
from dbt.adapters.deltamerge.delta.vacuum import vacuum
from dbt.adapters.deltamerge.errors import ModelWriteError
from dbt.adapters.deltamerge.sql import quote_identifier


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
        catalog.bind(spark, schema=schema, identifier=identifier, snapshot=result.snapshot)
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
    found = catalog.binding(spark, schema, identifier)
    if found is None:
        raise ModelWriteError(f"{what}: {schema}.{identifier} is not a Delta table of this adapter")
    return schema, identifier, found[0]
