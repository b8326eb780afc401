"""Z-order's SQL (pure): keys that order like their columns, range ids, interleaved bits."""

from __future__ import annotations

import re

import pytest
import sqlglot
from pyspark.sql import types as T
from sqlglot.executor import execute

from dbt.adapters.deltamerge.delta.zorder import (
    ZOrderError,
    bits_per_column,
    interleave,
    order_key,
    range_id,
    usable_boundaries,
)


def _evaluate_range_id(sql: str, key: float | None) -> int:
    """Evaluate ``range_id``'s SQL for one key with sqlglot's Python executor."""
    query = sqlglot.transpile(f"SELECT {sql} AS r FROM t", read="spark")[0]
    return int(execute(query, tables={"t": [{"k": key}]}).rows[0][0])


@pytest.mark.parametrize("count", [1, 2, 3, 7, 255])
def test_range_id_counts_the_boundaries_at_or_below_the_key(count):
    boundaries = [float(10 * i) for i in range(count)]
    sql = range_id("k", boundaries)
    assert _evaluate_range_id(sql, None) == 0
    for key in [-5.0, 0.0, 5.0, 10.0, 15.0, 10.0 * count, 1e9]:
        assert _evaluate_range_id(sql, key) == sum(1 for b in boundaries if b <= key), key


def test_interleave_puts_each_columns_bits_in_turn():
    sql = interleave(["a", "b"], 3)
    positions = {
        (m["col"], int(m["bit"])): int(m["pos"])
        for m in re.finditer(r"shiftright\((?P<col>\w), (?P<bit>\d)\) & 1 AS BIGINT\), (?P<pos>\d+)\)", sql)
    }
    # a's bits at odd positions, b's at even: the highest bits first.
    assert positions == {("a", 2): 5, ("b", 2): 4, ("a", 1): 3, ("b", 1): 2, ("a", 0): 1, ("b", 0): 0}


def test_bits_leave_room_for_the_noise_byte_in_a_long():
    for columns in range(1, 12):
        assert 0 < bits_per_column(columns) * columns + 8 <= 63


def test_keys_of_every_orderable_type_and_a_refusal_of_others():
    for kind in (T.LongType(), T.DecimalType(10, 2), T.BooleanType(), T.TimestampNTZType(), T.BinaryType()):
        assert order_key("`c`", kind).startswith("CAST(")
    with pytest.raises(ZOrderError, match="array<int>"):
        order_key("`c`", T.ArrayType(T.IntegerType()))


def test_boundaries_are_distinct_finite_and_thinned():
    assert usable_boundaries([2.0, 2.0, float("inf"), 1.0], 8) == [1.0, 2.0]
    assert len(usable_boundaries([float(i) for i in range(1000)], 8)) == 255
