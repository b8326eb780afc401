"""Struct values assigned by name and nested-field assignments, as Delta builds them (pure SQL)."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.merge.structs import AssignmentError, assigned_cast, by_name, nested_update


def struct(*fields: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(n, t) for n, t in fields])


AB = struct(("a", T.IntegerType()), ("b", T.StringType()))
BA = struct(("b", T.StringType()), ("a", T.IntegerType()))


def test_a_struct_takes_its_fields_by_name_and_a_null_stays_null():
    assert by_name("s.v", BA, AB, missing_allowed=False) == (
        "IF((s.v) IS NULL, NULL, named_struct('a', (s.v).`a`, 'b', (s.v).`b`))"
    )


def test_same_fields_whatever_their_case_need_no_conversion():
    upper = struct(("A", T.IntegerType()), ("B", T.StringType()))
    assert by_name("s.v", upper, AB, missing_allowed=False) == "s.v"


def test_nested_leaves_are_cast_to_the_targets_types():
    wide = struct(("a", T.LongType()), ("b", T.StringType()))
    assert "CAST((s.v).`a` AS bigint)" in by_name("s.v", BA, wide, missing_allowed=False)


def test_missing_and_extra_fields_are_deltas_schema_mismatch():
    only_a = struct(("a", T.IntegerType()))
    with pytest.raises(
        AssignmentError, match=r"DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION\] Cannot cast struct<a:int>"
    ):
        by_name("s.v", only_a, AB, missing_allowed=False)
    extra = struct(("a", T.IntegerType()), ("b", T.StringType()), ("c", T.IntegerType()))
    with pytest.raises(AssignmentError, match="All nested columns must match"):
        by_name("s.v", extra, AB, missing_allowed=True)


def test_with_schema_evolution_a_missing_field_is_null_or_kept():
    only_a = struct(("a", T.IntegerType()))
    assert "'b', CAST(NULL AS string)" in by_name("s.v", only_a, AB, missing_allowed=True)
    kept = by_name("s.v", only_a, AB, missing_allowed=True, kept="t.v")
    assert "'b', CAST((t.v).`b` AS string)" in kept
    assert kept.startswith("IF((s.v) IS NULL AND (t.v) IS NULL, NULL,")


def test_arrays_and_maps_of_structs_are_converted_element_by_element():
    converted = by_name("s.items", T.ArrayType(BA), T.ArrayType(AB), missing_allowed=False)
    assert converted.startswith("transform(s.items, _merge_e0 -> IF((_merge_e0) IS NULL, NULL, named_struct(")
    mapped = by_name(
        "s.m", T.MapType(T.StringType(), BA), T.MapType(T.StringType(), AB), missing_allowed=False
    )
    assert mapped.startswith("transform_values(s.m, (_merge_k0, _merge_v0) -> IF(")


def test_a_struct_into_an_atomic_column_is_refused_but_into_a_string_is_its_text():
    with pytest.raises(AssignmentError, match="DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION"):
        by_name("s.v", AB, T.IntegerType(), missing_allowed=False)
    # Delta casts any value into a string column (Spark's text of a struct: "{1, x}").
    assert "try_cast((s.v) AS string)" in by_name("s.v", AB, T.StringType(), missing_allowed=False)


def test_field_assignments_rebuild_the_column_around_the_others():
    deep = T.StructField("v", struct(("a", AB), ("c", T.LongType())))
    rebuilt = nested_update("t.v", deep, [(("a", "b"), "'x'", T.StringType())], missing_allowed=False)
    assert rebuilt == ("named_struct('a', named_struct('a', ((t.v).`a`).`a`, 'b', 'x'), 'c', (t.v).`c`)")


def test_conflicting_or_impossible_field_assignments_are_deltas_errors():
    column = T.StructField("v", struct(("a", AB), ("c", T.LongType())))
    with pytest.raises(AssignmentError, match=r"DELTA_CONFLICT_SET_COLUMN.*\[`v.a`, `v.a.b`\]"):
        nested_update("t.v", column, [(("a",), "x", None), (("a", "b"), "'y'", None)], missing_allowed=False)
    with pytest.raises(AssignmentError, match=r"FIELD_NOT_FOUND\] No such struct field `z` in `a`, `c`"):
        nested_update("t.v", column, [(("z",), "1", None)], missing_allowed=False)
    with pytest.raises(
        AssignmentError, match=r"DELTA_UNSUPPORTED_FIELD_UPDATE_NON_STRUCT.*`v.c`, which is of type: bigint"
    ):
        nested_update("t.v", column, [(("c", "x"), "1", None)], missing_allowed=False)


def test_a_value_assigned_across_types_is_cast_as_delta_casts_it():
    """A string into an int (Delta: Spark's ANSI cast) is cast where it is assigned, and a value that
    does not convert raises instead of becoming null; lossless widening stays a plain value."""
    sql = by_name("s.txt", T.StringType(), T.IntegerType(), missing_allowed=False)
    assert "try_cast((s.txt) AS int)" in sql and "raise_error(" in sql
    assert by_name("s.n", T.IntegerType(), T.LongType(), missing_allowed=False) == "s.n"


def test_a_field_assigned_by_name_is_checked_as_a_whole_value_is():
    """A struct field whose value does not convert fails too (a plain CAST follows ansi.enabled=false)."""
    source = T.StructType([T.StructField("a", T.StringType()), T.StructField("b", T.StringType())])
    sql = by_name("s.v", source, AB, missing_allowed=False)
    assert "try_cast(((s.v).`a`) AS int)" in sql and "raise_error(" in sql


def test_an_array_element_that_does_not_convert_is_found_at_any_depth():
    nested = T.ArrayType(T.ArrayType(T.StringType()))
    sql = assigned_cast("s.v", nested, T.ArrayType(T.ArrayType(T.IntegerType())))
    assert "zip_with((s.v), try_cast((s.v) AS array<array<int>>), (_cast_x0, _cast_y0) ->" in sql
    assert "zip_with(_cast_x0, _cast_y0, (_cast_x1, _cast_y1) ->" in sql  # the inner arrays' elements
    keyed = assigned_cast(
        "s.m", T.MapType(T.StringType(), T.StringType()), T.MapType(T.StringType(), T.IntegerType())
    )
    assert "map_values((s.m))" in keyed and "map_keys((s.m))" in keyed
