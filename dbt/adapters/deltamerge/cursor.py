"""The cursor of ``method: session`` and ``method: connect``: statements run on the process's session.

Every statement dbt runs (materializations, hooks, ``run-operation``, tests' setup SQL, ``dbt
show``) passes through ``DeltaCursor.execute``; the Delta tables it reads are bound to their latest
versions first (``statements/fresh.py``: one log listing each when nothing changed); one that
writes a Delta-bound table runs as a Delta commit (see ``statements``) and returns Delta's row
counts as Databricks does (``num_affected_rows``, ``num_inserted_rows``). Others run on the
connection's session, embedded or Spark Connect alike (dbt-spark's cursor would build a classic
session itself).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.session import Connection, Cursor, SessionConnectionWrapper
from dbt_common.exceptions import DbtDatabaseError
from pyspark.errors import PySparkException

from dbt.adapters.deltamerge.errors import named_errors
from dbt.adapters.deltamerge.invocation import current
from dbt.adapters.deltamerge.spark.view_text import make_room
from dbt.adapters.deltamerge.statements import may_write_table
from dbt.adapters.deltamerge.statements.parse.history import may_be_history_statement, travel_references
from dbt.adapters.deltamerge.statements.parse.reads import may_define_objects, read_names
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.travel import with_versions

logger = AdapterLogger("deltamerge")
# ``ALTER TABLE ... RENAME TO``: Spark renames; a registered table's Iceberg catalog entry follows.
_RENAME = re.compile(r"\balter\s+table\b.*\brename\s+to\b", re.IGNORECASE | re.DOTALL)


class DeltaCursor(Cursor):
    """A cursor on one Spark session that runs statements writing Delta-bound tables through the engine."""

    def __init__(self, spark: Any) -> None:
        super().__init__()
        self.spark = spark

    def execute(self, sql: str, *parameters: Any) -> None:
        if parameters:
            sql = sql % parameters
        invocation = current()
        catalog = invocation.catalog
        text = SqlText(sql)  # lexed and parsed once, for every question below
        reads = read_names(text)
        if reads:
            with named_errors("SQL statement reading a Delta table"):
                catalog.refresh(self.spark, reads)
        if may_define_objects(sql):
            catalog.forget_definitions()  # a view's text or a table's kind may change
        if may_be_history_statement(sql) and self._history(sql):
            return
        if travel_references(text):  # VERSION / TIMESTAMP AS OF: those versions' entries
            with named_errors("Time travel"):
                sql = with_versions(self.spark, text, invocation.stores)
            if sql != text.sql:  # a version's entry replaced a reference: another text
                text = SqlText(sql)
        if not parameters and may_write_table(sql):
            from dbt.adapters.deltamerge.statements.run.statement import (
                run_on_delta,  # the parsers, on first use
            )

            with named_errors("SQL statement on a Delta table"):
                folder = partial(catalog.schema_folder, self.spark)
                handled = run_on_delta(self.spark, text, invocation.stores, folder)
            if handled is not None:
                result = handled.result
                logger.debug(f"{result.operation} of {handled.table}: Delta version {result.version}")
                names = ", ".join(
                    f"{k} {'string' if isinstance(v, str) else 'long'}" for k, v in handled.affected.items()
                )
                self._df = self.spark.createDataFrame([tuple(handled.affected.values())], names)
                self._rows = None
                return
        make_room(self.spark, sql)  # a view's text past the embedded metastore's 32,700 characters
        try:
            self._df = self.spark.sql(sql)
        except PySparkException as exc:
            # A database error, as dbt's other adapters raise for SQL the database refuses.
            raise DbtDatabaseError(str(exc).strip()) from exc
        self._rows = None
        if _RENAME.search(sql):
            self._follow_rename(text)

    def _follow_rename(self, text: SqlText) -> None:
        """After Spark ran ``ALTER TABLE old RENAME TO new`` (dbt's ``rename_relation`` or a user's):
        a table registered in an Iceberg REST catalog takes the new name there too
        (``model/registration.follow_rename``: a ``SET TBLPROPERTIES`` commit)."""
        from dbt.adapters.deltamerge.statements.parse.ddl import renamed_table

        names = renamed_table(text)
        if names is None:
            return
        from dbt.adapters.deltamerge.model import registration  # such renames only

        old, new = names
        schema = (
            new[-2] if len(new) > 1 else old[-2] if len(old) > 1 else self.spark.catalog.currentDatabase()
        )
        with named_errors(f"the Iceberg catalog entry of {schema}.{new[-1]} (renamed in Spark's catalog)"):
            registration.follow_rename(self.spark, schema, new[-1], current().stores)

    def _history(self, sql: str) -> bool:
        """DESCRIBE HISTORY / DETAIL or RESTORE of a Delta-bound name; False for another statement."""
        from dbt.adapters.deltamerge.statements.run.travel import run_history

        with named_errors("History statement on a Delta table"):
            handled = run_history(self.spark, sql, current().stores)
        if handled is None:
            return False
        self._df, self._rows = handled[1], None
        return True


class DeltaConnection(Connection):
    """dbt-spark's session connection, bound to one Spark session, handing out ``DeltaCursor``s."""

    def __init__(self, spark: Any) -> None:
        super().__init__()
        self.spark = spark

    def cursor(self) -> Cursor:
        return DeltaCursor(self.spark)


class DeltaConnectionWrapper(SessionConnectionWrapper):
    """dbt-spark's session wrapper whose results come in one Spark round trip.

    dbt reads a result's column names (``description``) before its rows; on Spark Connect the
    names are a schema request, which analyzes the statement once more (its tables looked up in
    the metastore again) before the rows are fetched. The rows carry their names: a result with
    rows takes them from there; an empty one asks for the schema.
    """

    def names_and_rows(self) -> tuple[list[str], list[Any]]:
        """The result's column names and rows."""
        rows = self.fetchall() or []
        if rows:
            return list(rows[0].__fields__), rows
        return [column[0] for column in self.description], rows
