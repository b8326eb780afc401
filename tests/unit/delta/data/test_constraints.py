from __future__ import annotations

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.data.constraints import (
    GENERATED_CHECK,
    Constraints,
    display,
    referenced_columns,
)


def _schema() -> T.StructType:
    return T.StructType(
        [
            T.StructField("id", T.LongType(), False),
            T.StructField("ts", T.TimestampType()),
            T.StructField("d", T.DateType(), True, {"delta.generationExpression": "CAST(ts AS DATE)"}),
            T.StructField(
                "v", T.IntegerType(), True, {"delta.invariants": '{"expression": {"expression": "v < 9"}}'}
            ),
            T.StructField("s", T.StructType([T.StructField("x", T.IntegerType(), False)])),
        ]
    )


def test_every_kind_of_constraint_is_read_from_schema_and_properties():
    found = Constraints.of(_schema(), {"delta.constraints.positive": "v > 0", "delta.appendOnly": "true"})
    assert found.not_null == (("id",), ("s", "x"))
    assert [(c.name, c.expression, c.columns) for c in found.checks] == [
        ("positive", "v > 0", ("v",)),
        ("EXPRESSION(v < 9)", "v < 9", ("v",)),
        (GENERATED_CHECK, "`d` <=> (CAST(ts AS DATE))", ("d", "ts")),
    ]
    assert not Constraints.of(T.StructType([T.StructField("a", T.LongType())]), {})


def test_messages_are_deltas():
    check = Constraints.of(T.StructType(), {"delta.constraints.positive": "v > 0"}).checks[0]
    assert check.message() == (
        "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (v > 0) "
        "violated by row with values:"
    )
    assert display("(a) OR (b)") == "((a) OR (b))" and display(" x = 1 ") == "(x = 1)"
    assert referenced_columns("s.x > 0 AND `full name` IS NOT NULL") == ("s.x", "full name")
