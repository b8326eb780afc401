"""What ``dbt docs generate`` shows of a Delta table, read from its Delta log: ``DocsCatalogAdapter``,
dbt-spark's adapter with its catalog methods over ours (the adapter, ``impl``, is one).

The catalog entry Spark keeps of a Delta table is a copy: it has no row count, and its comments
are cut to what the embedded metastore stores. The Delta log has the table's own statistics,
description and column comments, which every Delta reader sees. Views have only their catalog
entry. A model registered in an Iceberg REST catalog is listed under that catalog as its database
(``every_database``), as dbt names it.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from dbt.adapters.base.impl import catch_as_completed
from dbt.adapters.base.relation import BaseRelation
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.clients.agate_helper import DEFAULT_TYPE_TESTER
from dbt_common.utils import executor
from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.binding import listed
from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.connections import session_of
from dbt.adapters.deltamerge.delta import Snapshot, Stores, load_snapshot
from dbt.adapters.deltamerge.invocation import current

_HELD = threading.local()


class DocsCatalogAdapter(SparkAdapter):
    """dbt-spark's adapter whose docs catalog has the Delta log's statistics and comments, and
    lists a model registered in an Iceberg REST catalog under that catalog (its ``database``)."""

    def spark_session(self) -> SparkSession:
        """The Spark session of this thread's connection (embedded or Spark Connect)."""
        connection = self.connections.get_thread_connection()
        _ = connection.handle  # opens the connection if needed
        return session_of(connection)

    def parse_columns_from_information(self, relation: BaseRelation) -> list[Any]:
        columns = super().parse_columns_from_information(relation)
        snapshot = delta_snapshot(information(relation), current().stores)
        if snapshot is None:
            return columns
        stats = catalog_stats(snapshot)
        return [dataclasses.replace(c, table_stats=stats) for c in columns]

    def _get_columns_for_catalog(self, relation: BaseRelation) -> Iterable[dict[str, Any]]:
        with held_snapshot(information(relation), current().stores) as snapshot:
            rows = list(super()._get_columns_for_catalog(relation))  # its statistics: the same snapshot
        return commented(rows, relation, snapshot, self.spark_session)

    def get_catalog(self, relation_configs: Iterable[Any], used_schemas: Any) -> tuple[Any, list[Exception]]:
        """dbt-spark's, for every database at once (it allows one): each schema's tables read once
        per database that names it (none, and each Iceberg catalog models are registered in)."""
        relation_configs = list(relation_configs)  # read twice: the schemas, then each database's models
        schema_map = self._get_catalog_schemas(relation_configs)
        with executor(self.config) as pool:
            futures = [
                pool.submit_connected(self, schema, self._get_one_catalog, info, [schema], relation_configs)
                for info, schemas in schema_map.items()
                for schema in schemas
            ]
            return catch_as_completed(futures)

    def _get_one_catalog(self, information_schema: Any, schemas: Any, used_schemas: Any) -> Any:
        """One schema's tables as Spark's catalog lists them (every name is two-part there); under
        an Iceberg catalog (``information_schema.database``), only the models registered there."""
        database = information_schema.database
        spark_catalog = information_schema.replace_path(database=None) if database else information_schema
        table = super()._get_one_catalog(spark_catalog, schemas, used_schemas)
        if not database:
            return table
        import agate

        registered = {
            (str(c.schema).lower(), str(c.identifier).lower())
            for c in used_schemas
            if str(getattr(c, "database", "") or "").lower() == database.lower()
        }
        names = table.column_names
        rows = [
            {**dict(zip(names, row, strict=True)), "table_database": database}
            for row in table.rows
            if (str(row["table_schema"]).lower(), str(row["table_name"]).lower()) in registered
        ]
        return agate.Table.from_object(rows, column_types=DEFAULT_TYPE_TESTER)


def information(relation: BaseRelation) -> str:
    """dbt-spark's ``show table extended`` text of a listed relation."""
    return getattr(relation, "information", None) or ""


def delta_snapshot(information: str, stores: Stores) -> Snapshot | None:
    """The current version of the Delta table a ``show table extended`` text describes, if it is
    ours (reached through ``stores``, the invocation's).

    Inside ``held_snapshot(information)`` it is the snapshot held there, not read again.
    """
    entry = getattr(_HELD, "entry", None)
    if entry is not None and entry[0] == information:
        return entry[1]
    try:  # ours, or Delta's own entry (``binding/delta_catalog.py``)
        found = listed(information, stores, delta=True)
    except ValueError:  # a view an older release bound, its properties redacted: no statistics
        return None
    return load_snapshot(found.location) if found is not None else None


@contextmanager
def held_snapshot(information: str, stores: Stores) -> Iterator[Snapshot | None]:
    """One relation's Delta snapshot, read once for everything that asks for it in this thread
    (dbt-spark's catalog code and ours both need it for one catalog entry)."""
    snapshot = delta_snapshot(information, stores)
    _HELD.entry = (information, snapshot)
    try:
        yield snapshot
    finally:
        _HELD.entry = None


def catalog_stats(snapshot: Snapshot) -> dict[str, Any]:
    """dbt docs' table statistics: rows, bytes, files and version of the current Delta version."""
    values = {
        "rows": (
            "Rows",
            sum(f.live_records or 0 for f in snapshot.files),
            "Rows in the current Delta version",
        ),
        "bytes": ("Bytes", snapshot.size_bytes, "Bytes of the live data files"),
        "files": ("Files", len(snapshot.files), "Live data files"),
        "version": ("Delta version", snapshot.version, "The table's current Delta version"),
    }
    stats: dict[str, Any] = {}
    for key, (label, value, description) in values.items():
        stats.update(
            {
                f"stats:{key}:label": label,
                f"stats:{key}:value": value,
                f"stats:{key}:description": description,
                f"stats:{key}:include": True,
            }
        )
    return stats


def catalog_comments(snapshot: Snapshot) -> tuple[str | None, dict[str, str]]:
    """The table description and the column comments (by lowercased name) in the Delta metadata."""
    columns = {
        f.name.lower(): f.metadata["comment"]
        for f in snapshot.schema.fields
        if isinstance(f.metadata.get("comment"), str)
    }
    return snapshot.metadata.description or None, columns


def view_comments(spark: SparkSession, schema: str, identifier: str) -> tuple[str | None, dict[str, str]]:
    """A view's description and column comments (by lowercased name), from its catalog entry.

    ``show table extended`` lists neither the column comments nor a multi-line description in a
    readable way; ``DESCRIBE TABLE EXTENDED`` has both, the columns first, then the details.
    """
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {quote_identifier(schema)}.{quote_identifier(identifier)}")
    columns: dict[str, str] = {}
    description = None
    in_columns = True
    for name, value, comment in rows.collect():
        if not name or name.startswith("#"):
            in_columns = False
        elif in_columns and comment:
            columns[name.lower()] = comment
        elif not in_columns and name == "Comment":
            description = value or None
    return description, columns


def commented(
    rows: list[dict[str, Any]], relation: Any, snapshot: Snapshot | None, session: Callable[[], SparkSession]
) -> list[dict[str, Any]]:
    """dbt-spark's catalog rows of ``relation`` with the comments of its Delta log (or a view's
    entry), columns numbered from 1 as dbt's catalog and every other adapter number them."""
    if snapshot is not None:
        description, comments = catalog_comments(snapshot)
    elif relation.is_view:
        description, comments = view_comments(session(), str(relation.schema), str(relation.identifier))
    else:  # dbt-spark's catalog has no comments for other tables
        description, comments = None, {}
    for row in rows:
        row["column_index"] = int(row["column_index"]) + 1
        if snapshot is not None or relation.is_view:
            row["table_comment"] = description
            row["column_comment"] = comments.get(str(row.get("column_name") or "").lower())
    return rows
