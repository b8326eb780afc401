from __future__ import annotations

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.data.column_values import computed_columns, default_value, substituted


def test_a_generation_expression_reads_the_rows_new_values():
    assert substituted("year(ts) * 100 + month(ts)", {"TS": "`s`.`event_ts`"}) == (
        "YEAR((`s`.`event_ts`)) * 100 + MONTH((`s`.`event_ts`))"
    )
    # A qualified reference or an unknown name is left as it is.
    assert substituted("t.a + b", {"a": "1"}) == "t.a + b"


def test_computed_columns_and_defaults():
    schema = T.StructType(
        [
            T.StructField("id", T.LongType(), True, {"delta.identity.start": 1, "delta.identity.step": 1}),
            T.StructField("g", T.LongType(), True, {"delta.generationExpression": "v + 1"}),
            T.StructField("s", T.StringType(), True, {"CURRENT_DEFAULT": "'x'"}),
            T.StructField("v", T.LongType()),
        ]
    )
    assert computed_columns(schema) == frozenset({"id", "g", "s"})
    assert default_value(schema["s"]) == "CAST(('x') AS string)" and default_value(schema["v"]) == "NULL"
