"""A seed's rows as a Spark DataFrame, each column cast to the type dbt resolved for it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier


def seed_dataframe(spark: SparkSession, agate_table: Any, types: list[str]) -> DataFrame:
    """A DataFrame of a seed's rows, each column cast to its dbt-resolved type."""
    names = list(agate_table.column_names)
    rows = [tuple(None if v is None else _seed_text(v) for v in row) for row in agate_table.rows]
    raw = spark.createDataFrame(rows, T.StructType([T.StructField(n, T.StringType()) for n in names]))
    return raw.select(
        *[F.expr(f"cast({quote_identifier(n)} as {t})").alias(n) for n, t in zip(names, types, strict=True)]
    )


def _seed_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    return str(value)
