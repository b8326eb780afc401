"""Parsing data-skipping predicates with sqlglot: pure, no JVM.

Each condition becomes a tree over target columns plus the Spark SQL of its constants;
anything that is not provably a target column compared with a constant is unknown
(None), which never skips a file.
"""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.deltamerge.delta.log.snapshot import AddFile
from dbt.adapters.deltamerge.skipping.predicates import (
    AllOf,
    AnyOf,
    Compare,
    InList,
    NullTest,
    may_satisfy,
    parse_target_predicate,
)

COLUMNS = ["id", "Day", "name"]


def parsed(condition: str, alias: str = "t"):
    node, sqls = parse_target_predicate([condition], target_alias=alias, columns=COLUMNS)
    assert isinstance(node, AllOf) and len(node.parts) == 1
    return node.parts[0], sqls


@pytest.mark.parametrize(
    ("condition", "tree", "sqls"),
    [
        ("t.id > 20", Compare("id", ">", 0), ["20"]),
        ("20 >= t.id", Compare("id", "<=", 0), ["20"]),
        ("t.id <=> 3", Compare("id", "<=>", 0), ["3"]),
        ("`t`.`id` = -5", Compare("id", "=", 0), ["-5"]),
        ("T.ID < 1", Compare("id", "<", 0), ["1"]),
        ("t.day >= date'2026-01-01'", Compare("Day", ">=", 0), ["CAST('2026-01-01' AS DATE)"]),
        ("t.day >= date_sub(current_date(), 3)", Compare("Day", ">=", 0), ["DATE_ADD(CURRENT_DATE, 3 * -1)"]),
        ("t.name IN ('a', 'b')", InList("name", (0, 1)), ["'a'", "'b'"]),
        ("t.id BETWEEN 1 AND 9", AllOf((Compare("id", ">=", 0), Compare("id", "<=", 1))), ["1", "9"]),
        ("t.id IS NULL", NullTest("id", True), []),
        ("t.id IS NOT NULL", NullTest("id", False), []),
        ("(t.id = 1 OR t.id = 2)", AnyOf((Compare("id", "=", 0), Compare("id", "=", 1))), ["1", "2"]),
        ("t.id = s.id AND t.id > 3", AllOf((None, Compare("id", ">", 0))), ["3"]),
    ],
)
def test_conditions_become_trees_over_target_columns(condition, tree, sqls):
    assert parsed(condition) == (tree, sqls)


@pytest.mark.parametrize(
    "condition",
    [
        "t.id != 3",  # a file holding only 3s is the one case it would skip: not worth the risk
        "NOT (t.id < 20)",
        "t.id NOT IN (1, 2)",
        "s.id > 20",  # the source side
        "id > 20",  # unqualified: not provably the target's
        "other.t.id > 20",  # three parts
        "t.missing > 20",
        "t.id > t.name",  # column against column
        "t.id + 1 > 20",  # a function of the column
        "t.id > rand()",  # not one value for the whole merge
        "t.id > my_udf(1)",
        "t.id IN (SELECT 1)",
        "t.id >",  # does not parse: Spark reports it in the merge
    ],
)
def test_anything_else_is_unknown(condition):
    assert parsed(condition) == (None, [])


def test_unknown_parts_never_skip_and_known_parts_do():
    node, sqls = parse_target_predicate(
        ["t.id > 50 OR s.x = 1", "t.id > 50"], target_alias="t", columns=COLUMNS
    )
    low = AddFile("low", 1, {}, 10, {"id": 1}, {"id": 10}, {"id": 0})
    constants = [50] * len(sqls)
    assert may_satisfy(node.parts[0], low, constants, {}) is True  # type: ignore[union-attr]
    assert may_satisfy(node, low, constants, {}) is False


def test_dates_compare_with_date_statistics():
    node, _ = parse_target_predicate(["t.day < '2026-01-01'"], target_alias="t", columns=COLUMNS)
    stats = AddFile("f", 1, {}, 3, {"Day": dt.date(2026, 1, 1)}, {"Day": dt.date(2026, 1, 9)}, {"Day": 0})
    assert may_satisfy(node, stats, ["2026-01-01"], {}) is False
    assert may_satisfy(node, stats, ["2026-01-02"], {}) is True


def test_a_null_test_of_a_struct_column_never_skips():
    # A struct column's statistics are its fields' (nested maps): no null count of the struct itself.
    node, _ = parse_target_predicate(["t.name IS NULL"], target_alias="t", columns=COLUMNS)
    nested = AddFile("f", 1, {}, 3, {"name": {"a": 1}}, {"name": {"a": 9}}, {"name": {"a": 0, "b": 3}})
    assert may_satisfy(node, nested, [], {}) is True
