"""Z-order's SQL (pure): keys that order like their columns, range ids, interleaved bits."""

from __future__ import annotations

import re

import pytest
import sqlglot
from pyspark.sql import types as T
from sqlglot.executor import execute

from dbt.adapters.deltamerge.delta.commands.zorder import (
    MAX_BITS,
    ZOrderError,
    bits_per_column,
    interleave,
    order_key,
    range_id,
    usable_boundaries,
    z_value,
)


def _evaluate(sql: str, key: float | None) -> int:
    """Evaluate ``range_id``'s SQL for one key with sqlglot's Python executor."""
    query = sqlglot.transpile(f"SELECT {sql} AS r FROM t", read="spark")[0]
    return int(execute(query, tables={"t": [{"k": key}]}).rows[0][0])


@pytest.mark.parametrize("count", [1, 2, 3, 7, 255])
def test_range_id_counts_the_boundaries_at_or_below_the_key(count):
    boundaries = [float(10 * i) for i in range(count)]
    sql = range_id("k", boundaries)
    assert _evaluate(sql, None) == 0
    for key in [-5.0, 0.0, 5.0, 10.0, 15.0, 10.0 * count, 1e9]:
        assert _evaluate(sql, key) == sum(1 for b in boundaries if b <= key), key


def test_interleave_puts_each_columns_bits_in_turn():
    sql = interleave(["a", "b"], 3)
    positions = {
        (m["col"], int(m["bit"])): int(m["pos"])
        for m in re.finditer(r"shiftright\((?P<col>\w), (?P<bit>\d)\) & 1 AS BIGINT\), (?P<pos>\d+)\)", sql)
    }
    # a's bits at odd positions, b's at even: the highest bits first.
    assert positions == {("a", 2): 5, ("b", 2): 4, ("a", 1): 3, ("b", 1): 2, ("a", 0): 1, ("b", 0): 0}


def test_bits_fit_a_long_and_grow_with_the_files():
    for columns in range(1, 12):
        assert 0 < bits_per_column(columns) * columns <= 63
    assert bits_per_column(2, files=4) < bits_per_column(2, files=1000) == MAX_BITS


def test_the_python_z_value_is_the_sql_one():
    boundaries = [[1.0, 5.0, 9.0], [2.0]]
    sql = interleave([range_id("a", boundaries[0]), range_id("b", boundaries[1])], 2)
    for a, b in [(0.0, 0.0), (5.0, 3.0), (None, 7.0), (12.0, None)]:
        # The interleaved terms of a constant row: evaluate them with sqlglot's executor, bit by bit.
        ids = [_evaluate(range_id("k", boundaries[0]), a), _evaluate(range_id("k", boundaries[1]), b)]
        expected = sum(((ids[i] >> bit) & 1) << (bit * 2 + (1 - i)) for bit in range(2) for i in range(2))
        assert z_value([a, b], boundaries, 2) == expected
    assert "shiftleft" in sql


def test_keys_of_every_orderable_type_and_a_refusal_of_others():
    for kind in (T.LongType(), T.DecimalType(10, 2), T.BooleanType(), T.TimestampNTZType(), T.BinaryType()):
        assert order_key("`c`", kind).startswith("CAST(")
    with pytest.raises(ZOrderError, match="array<int>"):
        order_key("`c`", T.ArrayType(T.IntegerType()))


def test_boundaries_are_distinct_finite_and_split_evenly():
    assert usable_boundaries([2.0, 2.0, float("inf"), 1.0], 255) == [1.0, 2.0]
    cuts = usable_boundaries([float(i) for i in range(1000)], 3)
    assert cuts == [250.0, 500.0, 750.0]
