"""Data skipping by target-only predicates, from file statistics, as Delta's merge does.

A condition (the ON condition with its ``incremental_predicates``, or for a matched-only
merge the matched clauses' conditions) is parsed by Spark's own SQL parser and turned
into a small tree over target columns and constants: comparisons, ``IN``, ``BETWEEN``,
``IS [NOT] NULL``, ``AND``, ``OR``. Anything else (source columns, functions of
columns, ``NOT``) is *unknown* and never skips. A file is skipped only when its
partition values or its min / max / null-count statistics prove that no row of it can
satisfy the condition.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Union

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.delta.snapshot import AddFile
from dbt.adapters.deltamerge.merge.skipping import comparable, typed_partition_value

_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<=>": "<=>"}
_COMPARISONS = {
    "EqualTo": "=",
    "EqualNullSafe": "<=>",
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
}
# Deterministic functions whose value, over constants only, is one value for the whole merge.
_CONSTANT_FUNCTIONS = {
    "current_date",
    "current_timestamp",
    "now",
    "date_add",
    "date_sub",
    "add_months",
    "to_date",
    "date",
    "make_date",
    "lower",
    "upper",
    "concat",
}


@dataclass(frozen=True)
class Compare:
    """``column <op> constant``."""

    column: str
    op: str
    constant: int


@dataclass(frozen=True)
class InList:
    """``column IN (constants)``."""

    column: str
    constants: tuple[int, ...]


@dataclass(frozen=True)
class NullTest:
    """``column IS NULL`` (or ``IS NOT NULL``)."""

    column: str
    is_null: bool


@dataclass(frozen=True)
class AllOf:
    """Every part holds."""

    parts: tuple[Node, ...]


@dataclass(frozen=True)
class AnyOf:
    """Some part holds."""

    parts: tuple[Node, ...]


Node = Union[Compare, InList, NullTest, AllOf, AnyOf, None]  # None: unknown


def may_satisfy(
    node: Node, file: AddFile, constants: Sequence[Any], partition_types: Mapping[str, type]
) -> bool:
    """False only when no row of ``file`` can satisfy ``node``.

    >>> f = AddFile("a", 1, {}, 10, {"x": 1}, {"x": 5}, {"x": 0})
    >>> may_satisfy(Compare("x", ">", 0), f, [7], {}), may_satisfy(Compare("x", "<", 0), f, [2], {})
    (False, True)
    >>> may_satisfy(AnyOf((NullTest("x", True), InList("x", (0, 1)))), f, [8, 9], {})
    False
    """
    if node is None:
        return True
    if isinstance(node, AllOf):
        return all(may_satisfy(p, file, constants, partition_types) for p in node.parts)
    if isinstance(node, AnyOf):
        return any(may_satisfy(p, file, constants, partition_types) for p in node.parts)
    bounds = _bounds(file, node.column, partition_types)
    if bounds is None:
        return True
    low, high, nulls, rows = bounds
    if isinstance(node, NullTest):
        if nulls is None:
            return True
        return nulls > 0 if node.is_null else rows is None or nulls < rows
    if rows is not None and nulls == rows:  # only nulls: no comparison with a value holds
        return isinstance(node, Compare) and node.op == "<=>" and constants[node.constant] is None
    if isinstance(node, InList):
        return any(_compare(low, high, nulls, "=", constants[i]) for i in node.constants)
    return _compare(low, high, nulls, node.op, constants[node.constant])


def _bounds(
    file: AddFile, column: str, partition_types: Mapping[str, type]
) -> tuple[Any, Any, int | None, int | None] | None:
    rows = file.num_records
    if column in file.partition_values:
        raw = file.partition_values[column]
        if raw is None:  # every row's value is null, whatever the row count
            return None, None, rows or 1, rows or 1
        value = typed_partition_value(raw, partition_types.get(column))
        return None if value is None else (value, value, 0, rows)
    if column not in file.min_values and column not in file.null_counts:
        return None
    nulls = file.null_counts.get(column)
    return file.min_values.get(column), file.max_values.get(column), nulls, rows


def _compare(low: Any, high: Any, nulls: int | None, op: str, value: Any) -> bool:
    if value is None:
        return op == "<=>" and (nulls is None or nulls > 0)
    value = _like(value, low)
    if not comparable(low, value) or not comparable(high, value):
        return True
    checks = {
        "=": low <= value <= high,
        "<=>": low <= value <= high,
        "<": low < value,
        "<=": low <= value,
        ">": high > value,
        ">=": high >= value,
    }
    return bool(checks[op])


def _like(value: Any, example: Any) -> Any:
    """A string constant compared with a date column is read as a date, as Spark casts it."""
    if isinstance(value, str) and type(example) is dt.date:
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            return value
    return value


def target_predicate(
    spark: SparkSession, conditions: Sequence[str], *, target_alias: str, columns: Sequence[str]
) -> tuple[Node, list[Any]]:
    """The conjunction of ``conditions`` as a tree over target ``columns``, and its constants."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    names = {c.lower(): c for c in columns}
    sqls: list[str] = []
    parts: list[Node] = []
    for condition in conditions:
        try:
            parts.append(_translate(parser.parseExpression(condition), target_alias.lower(), names, sqls))
        except Exception:  # a condition Spark cannot parse fails later, with Spark's message
            parts.append(None)
    if not sqls:
        return AllOf(tuple(parts)), []
    try:
        constants = list(spark.range(1).selectExpr(*sqls).collect()[0])
    except Exception:  # a constant Spark cannot evaluate alone: skip nothing
        return None, []
    return AllOf(tuple(parts)), constants


def _translate(expr: Any, alias: str, names: Mapping[str, str], sqls: list[str]) -> Node:
    kind = expr.getClass().getSimpleName()
    children = [expr.children().apply(i) for i in range(expr.children().size())]
    if kind in ("And", "Or"):
        parts = tuple(_translate(c, alias, names, sqls) for c in children)
        return AllOf(parts) if kind == "And" else AnyOf(parts)
    if kind in ("IsNull", "IsNotNull"):
        column = _column(children[0], alias, names)
        return None if column is None else NullTest(column, kind == "IsNull")
    if kind in _COMPARISONS:
        op, (left, right) = _COMPARISONS[kind], children
        if _column(right, alias, names) is not None:
            left, right, op = right, left, _FLIPPED[op]
        column = _column(left, alias, names)
        if column is None or not _constant(right):
            return None
        return Compare(column, op, _register(right, sqls))
    if kind == "In":
        column = _column(children[0], alias, names)
        if column is None or not all(_constant(c) for c in children[1:]):
            return None
        return InList(column, tuple(_register(c, sqls) for c in children[1:]))
    if kind == "UnresolvedFunction" and _function_name(expr) == "between" and len(children) == 3:
        column = _column(children[0], alias, names)
        if column is None or not (_constant(children[1]) and _constant(children[2])):
            return None
        return AllOf(
            (
                Compare(column, ">=", _register(children[1], sqls)),
                Compare(column, "<=", _register(children[2], sqls)),
            )
        )
    return None


def _column(expr: Any, alias: str, names: Mapping[str, str]) -> str | None:
    if expr.getClass().getSimpleName() != "UnresolvedAttribute":
        return None
    parts = [str(expr.nameParts().apply(i)) for i in range(expr.nameParts().size())]
    if len(parts) != 2 or parts[0].lower() != alias:
        return None
    return names.get(parts[1].lower())


def _constant(expr: Any) -> bool:
    kind = expr.getClass().getSimpleName()
    if kind == "UnresolvedFunction" and _function_name(expr) not in _CONSTANT_FUNCTIONS:
        return False
    if kind not in ("Literal", "Cast", "UnresolvedFunction", "UnaryMinus"):
        return False
    return all(_constant(expr.children().apply(i)) for i in range(expr.children().size()))


def _function_name(expr: Any) -> str:
    parts = expr.nameParts()
    return str(parts.apply(parts.size() - 1)).lower()


def _register(expr: Any, sqls: list[str]) -> int:
    sqls.append(f"{expr.sql()} AS c{len(sqls)}")
    return len(sqls) - 1
