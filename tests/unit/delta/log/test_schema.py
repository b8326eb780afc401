"""Spark types <-> Delta schema JSON, and the checks before a schema is written."""

from __future__ import annotations

import json

import pytest
from deltalake import Schema as DeltaRsSchema
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaSchemaError
from dbt.adapters.deltamerge.delta.log.schema import (
    required_features,
    schema_from_json,
    schema_problems,
    schema_to_json,
    to_delta_schema,
)

NESTED = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("amount", T.DecimalType(38, 9)),
        T.StructField("at", T.TimestampType()),
        T.StructField("local_at", T.TimestampNTZType()),
        T.StructField("day", T.DateType()),
        T.StructField("tags", T.ArrayType(T.StringType())),
        T.StructField("attrs", T.MapType(T.StringType(), T.IntegerType())),
        T.StructField(
            "point",
            T.StructType(
                [T.StructField("x", T.DoubleType()), T.StructField("labels", T.ArrayType(T.ShortType()))]
            ),
        ),
        T.StructField("raw", T.BinaryType()),
        T.StructField("flag", T.BooleanType()),
        T.StructField("small", T.ByteType()),
        T.StructField("ratio", T.FloatType()),
    ]
)


def test_round_trip_through_delta_json_and_delta_rs():
    text = schema_to_json(to_delta_schema(NESTED))
    assert schema_from_json(text) == to_delta_schema(NESTED)
    # delta-rs parses the same JSON into the same field types
    parsed = json.loads(DeltaRsSchema.from_json(text).to_json())
    types = {f["name"]: f["type"] for f in parsed["fields"]}
    assert types["amount"] == "decimal(38,9)"
    assert types["at"] == "timestamp" and types["local_at"] == "timestamp_ntz"
    assert types["tags"] == {"type": "array", "elementType": "string", "containsNull": True}
    assert types["attrs"]["type"] == "map" and types["attrs"]["valueType"] == "integer"
    assert types["point"]["fields"][1]["type"]["elementType"] == "short"


def test_delta_json_names_match_the_protocol():
    fields = json.loads(schema_to_json(to_delta_schema(NESTED)))["fields"]
    assert [f["type"] for f in fields if isinstance(f["type"], str)] == [
        "long",
        "decimal(38,9)",
        "timestamp",
        "timestamp_ntz",
        "date",
        "binary",
        "boolean",
        "byte",
        "float",
    ]


def test_everything_becomes_nullable_and_char_becomes_string():
    schema = T.StructType(
        [
            T.StructField("c", T.CharType(3), False),
            T.StructField("v", T.VarcharType(9), False, {"__CHAR_VARCHAR_TYPE_STRING": "varchar(9)"}),
        ]
    )
    out = to_delta_schema(schema)
    assert [(f.dataType, f.nullable, f.metadata) for f in out.fields] == [
        (T.StringType(), True, {}),
        (T.StringType(), True, {}),
    ]


def test_timestamp_ntz_needs_its_table_feature():
    assert required_features(NESTED) == {"timestampNtz"}
    assert required_features(T.StructType([T.StructField("a", T.TimestampType())])) == set()


@pytest.mark.parametrize(
    ("field", "fragment"),
    [
        (T.StructField("n", T.NullType()), "cast(null as"),
        (T.StructField("i", T.DayTimeIntervalType()), "cannot be stored in Delta"),
        (T.StructField("a b", T.IntegerType()), "rename it with an alias"),
        (T.StructField("s", T.StructType([T.StructField("x=y", T.IntegerType())])), "`s.x=y`"),
    ],
)
def test_problems_name_the_column(field, fragment):
    problems = schema_problems(T.StructType([field]))
    assert len(problems) == 1 and fragment in problems[0]


def test_all_problems_are_collected_into_one_error():
    schema = T.StructType([T.StructField("a", T.NullType()), T.StructField("A", T.IntegerType())])
    with pytest.raises(DeltaSchemaError) as err:
        to_delta_schema(schema)
    assert len(err.value.problems) == 2
