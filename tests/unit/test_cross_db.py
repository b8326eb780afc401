"""dbt's cross-database macros in Spark SQL (pure: the SQL text only; the suites run it)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.cross_db import _sort_keys, listagg_sql


def test_ordered_and_limited_listagg_sorts_pairs_by_every_key_then_cuts():
    sql = listagg_sql("s", "', '", "order by a desc, b", 3)
    assert sql.startswith(
        "array_join(transform(slice(array_sort(collect_list(named_struct('k0', a, 'k1', b, 'v', s))"
    )
    assert sql.endswith(", 1, 3), x -> x.v), ', ')")
    # a descending: larger first, nulls last; b ascending: nulls first
    assert "WHEN l.k0 < r.k0 THEN 1 WHEN l.k0 > r.k0 THEN -1" in sql
    assert "WHEN l.k0 IS NULL AND r.k0 IS NOT NULL THEN 1" in sql
    assert "WHEN l.k1 IS NULL AND r.k1 IS NOT NULL THEN -1" in sql
    assert "WHEN l.k1 < r.k1 THEN -1 WHEN l.k1 > r.k1 THEN 1" in sql


def test_sort_keys_follow_spark_null_ordering_defaults():
    assert _sort_keys("ORDER BY x ASC, y DESC, z DESC NULLS FIRST") == [
        ("x", False, True),
        ("y", True, False),
        ("z", True, True),
    ]


def test_an_order_by_clause_that_is_not_one_fails_naming_it():
    with pytest.raises(ValueError, match="cannot read the order_by_clause 'group by x'"):
        _sort_keys("group by x")
