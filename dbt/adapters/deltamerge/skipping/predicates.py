"""Data skipping by target-only predicates, from file statistics, as Delta's merge does.

A condition (the ON condition with its ``incremental_predicates``, or for a matched-only
merge the matched clauses' conditions) is parsed by sqlglot's Spark dialect (pure Python,
no JVM) and turned into a small tree over target columns and constants: comparisons, ``IN``, ``BETWEEN``,
``IS [NOT] NULL``, ``AND``, ``OR``. Anything else (source columns, functions of
columns, ``NOT``) is *unknown* and never skips. A file is skipped only when its
partition values or its min / max / null-count statistics prove that no row of it can
satisfy the condition.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
import sqlglot.errors
from pyspark.sql import SparkSession
from sqlglot import exp

from dbt.adapters.deltamerge.delta import AddFile
from dbt.adapters.deltamerge.skipping.stats import comparable, typed_partition_value

_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<=>": "<=>"}
_COMPARISONS: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NullSafeEQ: "<=>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}
# Literals, casts, arithmetic and deterministic functions whose value, over constants
# only, is one value for the whole merge (sqlglot's names for Spark's functions).
_CONSTANT_NODES: tuple[type[exp.Expr], ...] = (
    exp.Literal,
    exp.Boolean,
    exp.Null,
    exp.Neg,
    exp.Paren,
    exp.Cast,
    exp.Add,
    exp.Sub,
    exp.Mul,
    exp.Div,
    exp.CurrentDate,
    exp.CurrentTimestamp,
    exp.TsOrDsAdd,
    exp.AddMonths,
    exp.TsOrDsToDate,
    exp.Lower,
    exp.Upper,
    exp.Concat,
)
_CONSTANT_FUNCTIONS = {"now", "make_date", "date_add", "date_sub", "to_date", "date"}


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


Node = Compare | InList | NullTest | AllOf | AnyOf | None  # None: unknown


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
    if not isinstance(nulls, int | None):
        # A struct column's statistics are its fields' (Delta keeps no null count of the struct).
        return None
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
    spark: SparkSession,
    conditions: Sequence[str],
    *,
    target_alias: str | Collection[str],
    columns: Sequence[str],
) -> tuple[Node, list[Any]]:
    """The conjunction of ``conditions`` as a tree over target ``columns``, and its constants.

    Parsing is pure (``parse_target_predicate``); the constants are evaluated by Spark in
    one row, so ``current_date()`` or a cast means what it means in the merge itself.
    """
    node, sqls = parse_target_predicate(conditions, target_alias=target_alias, columns=columns)
    if not sqls:
        return node, []
    try:
        row = spark.range(1).selectExpr(*[f"{sql} AS c{i}" for i, sql in enumerate(sqls)]).collect()[0]
    except Exception:  # a constant Spark cannot evaluate alone: skip nothing
        return None, []
    return node, list(row)


def parse_target_predicate(
    conditions: Sequence[str], *, target_alias: str | Collection[str], columns: Sequence[str]
) -> tuple[Node, list[str]]:
    """The conjunction of ``conditions`` as a tree, and the Spark SQL of each constant it refers to.

    ``target_alias`` is the qualifier of target columns, or several (``""`` accepts bare
    column names, as in an UPDATE's or DELETE's WHERE).

    Parsed with sqlglot's Spark dialect; a condition it cannot parse is unknown (it fails
    later, in the merge, with Spark's own message).

    >>> parse_target_predicate(["t.v >= 30 AND s.k = t.k"], target_alias="t", columns=["k", "v"])
    (AllOf(parts=(AllOf(parts=(Compare(column='v', op='>=', constant=0), None)),)), ['30'])
    >>> node, sqls = parse_target_predicate(["t.d BETWEEN date'2026-01-01' AND current_date()"],
    ...     target_alias="t", columns=["d"])
    >>> sqls
    ["CAST('2026-01-01' AS DATE)", 'CURRENT_DATE']
    """
    names = {c.lower(): c for c in columns}
    aliases = frozenset(
        [target_alias.lower()] if isinstance(target_alias, str) else [a.lower() for a in target_alias]
    )
    sqls: list[str] = []
    parts: list[Node] = []
    for condition in conditions:
        try:
            parsed = sqlglot.parse_one(condition, read="spark")
        except sqlglot.errors.SqlglotError:
            parts.append(None)
            continue
        parts.append(_translate(parsed, aliases, names, sqls))
    return AllOf(tuple(parts)), sqls


def _translate(expr: exp.Expr, alias: frozenset[str], names: Mapping[str, str], sqls: list[str]) -> Node:
    if isinstance(expr, exp.Paren):
        return _translate(expr.this, alias, names, sqls)
    if isinstance(expr, (exp.And, exp.Or)):
        parts = tuple(_translate(c, alias, names, sqls) for c in (expr.left, expr.right))
        return AllOf(parts) if isinstance(expr, exp.And) else AnyOf(parts)
    if isinstance(expr, exp.Is) and isinstance(expr.expression, exp.Null):
        column = _column(expr.this, alias, names)
        return None if column is None else NullTest(column, True)
    if isinstance(expr, exp.Not):
        inner = expr.this.unnest()
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            column = _column(inner.this, alias, names)
            return None if column is None else NullTest(column, False)
        return None
    op = _COMPARISONS.get(type(expr))
    if op is not None:
        left, right = expr.this, expr.expression
        if _column(right, alias, names) is not None:
            left, right, op = right, left, _FLIPPED[op]
        column = _column(left, alias, names)
        if column is None or not _constant(right):
            return None
        return Compare(column, op, _register(right, sqls))
    if isinstance(expr, exp.In):
        column = _column(expr.this, alias, names)
        values = expr.expressions
        if column is None or expr.args.get("query") or not values or not all(map(_constant, values)):
            return None
        return InList(column, tuple(_register(v, sqls) for v in values))
    if isinstance(expr, exp.Between):
        column = _column(expr.this, alias, names)
        low, high = expr.args.get("low"), expr.args.get("high")
        if column is None or low is None or high is None or not (_constant(low) and _constant(high)):
            return None
        return AllOf(
            (Compare(column, ">=", _register(low, sqls)), Compare(column, "<=", _register(high, sqls)))
        )
    return None


def _column(expr: exp.Expr, alias: frozenset[str], names: Mapping[str, str]) -> str | None:
    """The target column ``expr`` names as ``<alias>.<column>`` (an alias of ``alias``), or None."""
    expr = expr.unnest()
    if not isinstance(expr, exp.Column) or expr.args.get("db") or expr.args.get("catalog"):
        return None
    if expr.table.lower() not in alias:
        return None
    return names.get(expr.name.lower())


def _constant(expr: exp.Expr) -> bool:
    """Whether ``expr`` is one value for the whole merge: literals and deterministic functions of them."""
    if isinstance(expr, _CONSTANT_NODES):
        return all(_constant(child) for child in _children(expr))
    if isinstance(expr, exp.Anonymous) and expr.name.lower() in _CONSTANT_FUNCTIONS:
        return all(_constant(child) for child in _children(expr))
    return False


def _children(expr: exp.Expr) -> list[exp.Expr]:
    """The expression's operands (a cast's type and a date function's unit keyword are not)."""
    return [c for c in expr.iter_expressions() if not isinstance(c, (exp.DataType, exp.Var))]


def _register(expr: exp.Expr, sqls: list[str]) -> int:
    sqls.append(expr.sql(dialect="spark"))
    return len(sqls) - 1
