"""Column mapping's physical names and ids (PROTOCOL.md, "Column Mapping"): pure."""

from __future__ import annotations

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.mapping import (
    COLUMN_ID,
    FIELD_ID,
    PHYSICAL_NAME,
    logical_stats,
    physical_type,
    with_column_mapping,
)


def _field(name: str, data_type: T.DataType, column_id: int | None = None, physical: str | None = None):
    metadata = {COLUMN_ID: column_id, PHYSICAL_NAME: physical} if column_id is not None else {}
    return T.StructField(name, data_type, True, metadata)


def test_new_columns_and_nested_fields_get_fresh_ids_and_names_existing_ones_keep_theirs():
    before = T.StructType([_field("a", T.IntegerType(), 1, "col-a"), _field("b", T.StringType(), 4, "col-b")])
    inner = T.StructType([T.StructField("x", T.LongType()), T.StructField("y y", T.LongType())])
    after = T.StructType(
        [
            T.StructField("A", T.IntegerType()),
            T.StructField("b", T.StringType()),
            T.StructField("s", T.ArrayType(inner)),
        ]
    )
    mapped, top = with_column_mapping(after, before, 4)
    ids = {f.name: f.metadata[COLUMN_ID] for f in mapped.fields}
    assert ids == {"A": 1, "b": 4, "s": 5} and top == 7
    assert mapped.fields[0].metadata[PHYSICAL_NAME] == "col-a"
    nested = mapped.fields[2].dataType.elementType
    assert [f.metadata[COLUMN_ID] for f in nested.fields] == [6, 7]
    assert all(f.metadata[PHYSICAL_NAME].startswith("col-") for f in nested.fields)
    again, same = with_column_mapping(mapped, mapped, top)
    assert again == mapped and same == top  # idempotent


def test_a_table_switching_mapping_on_keeps_its_names_as_physical_names():
    plain = T.StructType([T.StructField("a", T.IntegerType())])
    mapped, top = with_column_mapping(plain, plain, 0)
    assert mapped.fields[0].metadata == {COLUMN_ID: 1, PHYSICAL_NAME: "a"} and top == 1


def test_physical_types_rename_nested_fields_and_carry_field_ids_only_when_asked():
    inner = T.StructType([_field("d d", T.IntegerType(), 3, "col-d")])
    assert physical_type(inner).fields[0].metadata == {}
    assert physical_type(inner, ids=True).fields[0] == T.StructField(
        "col-d", T.IntegerType(), True, {FIELD_ID: 3}
    )


def test_statistics_by_physical_name_are_read_by_the_schema_s_names():
    schema = T.StructType([_field("s", T.StructType([_field("x", T.IntegerType(), 2, "col-x")]), 1, "col-s")])
    assert logical_stats({"col-s": {"col-x": 4}, "gone": 1}, schema) == {"s": {"x": 4}}
