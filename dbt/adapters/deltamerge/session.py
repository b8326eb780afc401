"""The embedded session's cursor: dbt-spark's, with writes to Delta tables sent to the engine.

Every statement dbt runs in ``method: session`` (materializations, hooks,
``run-operation``, tests' setup SQL) passes through ``Cursor.execute``; one that writes a
Delta-bound table runs as a Delta commit (see ``statements``) and returns Delta's row
counts as Databricks does (``num_affected_rows``, ``num_inserted_rows``).
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.session import Connection, Cursor

from dbt.adapters.deltamerge import statements
from dbt.adapters.deltamerge.connections import embedded_session
from dbt.adapters.deltamerge.errors import named_errors

logger = AdapterLogger("deltamerge")


class DeltaCursor(Cursor):
    """A cursor that runs statements writing Delta-bound tables through the engine."""

    def execute(self, sql: str, *parameters: Any) -> None:
        if not parameters and statements.may_write_table(sql):
            spark = embedded_session()
            with named_errors("SQL statement on a Delta table"):
                handled = statements.run_on_delta(spark, sql)
            if handled is not None:
                name, result = handled
                rows = int(result.metrics.get("numOutputRows", 0))
                logger.debug(f"{result.operation} of {name}: Delta version {result.version}, {rows} rows")
                self._df = spark.createDataFrame(
                    [(rows, rows)], "num_affected_rows long, num_inserted_rows long"
                )
                self._rows = None
                return
        super().execute(sql, *parameters)


class DeltaConnection(Connection):
    """dbt-spark's session connection handing out ``DeltaCursor``s."""

    def cursor(self) -> Cursor:
        return DeltaCursor(server_side_parameters=self.server_side_parameters)
