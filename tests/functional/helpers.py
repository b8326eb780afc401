"""Reading what dbt wrote, independently of our engine: deltalake and the raw log."""

from __future__ import annotations

import json
import os
from typing import Any

from deltalake import DeltaTable


def table_path(project: Any, name: str) -> str:
    """The Delta table folder of model ``name`` in the test schema (the default location)."""
    database_dir = project.adapter.config.credentials.warehouse
    return os.path.join(database_dir, f"{project.test_schema}.db", name)


def rows(path: str, version: int | None = None, order_by: str | None = None) -> list[dict[str, Any]]:
    """Rows of a Delta table version as read by delta-rs, sorted."""
    table = DeltaTable(path, version=version).to_pyarrow_table()
    data = table.to_pylist()
    key = order_by or table.column_names[0]
    return sorted(data, key=lambda r: (r[key] is None, r[key]))


def operations(path: str) -> list[str]:
    """Operations of every version, oldest first."""
    return [h["operation"] for h in reversed(DeltaTable(path).history())]


def log_actions(path: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file."""
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json")) as handle:
        return [json.loads(line) for line in handle]


def add_stats(path: str, version: int) -> list[dict[str, Any]]:
    """Parsed ``stats`` of every ``add`` in one commit."""
    return [json.loads(a["add"]["stats"]) for a in log_actions(path, version) if "add" in a]


def catalog_rows(spark: Any, project: Any, name: str, order_by: str) -> list[dict[str, Any]]:
    """Rows that Spark's catalog returns for ``<schema>.<name>`` (what downstream models read)."""
    result = spark.sql(f"select * from {project.test_schema}.{name} order by {order_by}").collect()
    return [r.asDict() for r in result]
