"""dbt Python models (``def model(dbt, session)``) run in the connection's Spark session.

dbt compiles a Python model into its code followed by a prelude (``dbtObj`` with ``ref``,
``source``, ``this``, ``config`` and ``is_incremental``). That code runs here, in this
process, with the connection's session (embedded or Spark Connect) as ``session`` and
``spark.table`` as the loader behind ``dbt.ref`` / ``dbt.source`` (a Delta table bound to its
latest version first, ``statements/fresh.py``); the DataFrame ``model``
returns (Spark, pandas, or pandas-on-Spark) is then written as Delta by the engine, like a SQL
model's result.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession

from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.invocation import current
from dbt.adapters.deltamerge.statements.parse.reads import read_names
from dbt.adapters.deltamerge.statements.parse.text import SqlText


class PythonModelError(EngineError):
    """A Python model did not give a DataFrame to write."""


def python_model_frame(spark: SparkSession, compiled_code: str, *, model: str) -> DataFrame:
    """Run a compiled Python model's ``model(dbt, session)``; its result as a Spark DataFrame."""
    # `spark` too: models written for Databricks notebooks use the global session by that name.
    namespace: dict[str, Any] = {"__name__": f"dbt_python_model_{model}", "spark": spark}
    exec(compile(compiled_code, f"<python model {model}>", "exec"), namespace)
    result = namespace["model"](namespace["dbtObj"](lambda name: _fresh_table(spark, name)), spark)
    if isinstance(result, DataFrame):
        return result
    module = type(result).__module__
    if module.startswith("pyspark.pandas") and hasattr(result, "to_spark"):
        return result.to_spark()
    if module.split(".")[0] == "pandas" and type(result).__name__ == "DataFrame":
        return spark.createDataFrame(result)
    raise PythonModelError(
        f"model() returned {type(result).__name__}; a Python model must return a Spark or pandas DataFrame"
    )


def _fresh_table(spark: SparkSession, name: str) -> DataFrame:
    """``spark.table(name)`` of the table's latest version (another writer may have committed)."""
    current().catalog.refresh(spark, read_names(SqlText(f"SELECT * FROM {name}")))
    return spark.table(name)
