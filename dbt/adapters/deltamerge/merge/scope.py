"""What a name in a merge's SQL means, as Delta's analyzer decides it (pure: sqlglot, no Spark).

- **Assigned columns** (``SET value.b = ...``, ``INSERT (k, v)``): a key is a column reference,
  possibly a path into a struct and possibly qualified by the target's alias (``column_path``);
  ``assigned_path`` resolves it against the target's columns, or words Delta's error.
- **Scopes**: the ON condition and WHEN MATCHED clauses see both sides; a NOT MATCHED clause
  (its condition and values) sees only the source, a NOT MATCHED BY SOURCE clause only the target
  (``ResolveDeltaMergeInto``). The executors evaluate every clause over the joined row, where a
  name both sides have would be ambiguous, so ``scoped`` qualifies each name of a one-sided clause
  by its side's alias (``check.py`` has Spark refuse a name of the other side, in Delta's words).
- **One time per statement** (``with_fixed_time``): ``current_timestamp()``, ``now()``,
  ``current_date()``, ``localtimestamp()``, ``current_timezone()`` become the literals of one instant,
  as Delta's ``PreprocessTableMerge`` evaluates them once for the source, the target and the clauses.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import sqlglot
import sqlglot.errors
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.merge.clauses import MergeClause
from dbt.adapters.deltamerge.merge.spec import MergeSpec

_SPARK = Spark()


class ScopeError(ValueError):
    """A name a merge's clause cannot see (Delta's ``DELTA_MERGE_UNRESOLVED_EXPRESSION`` and kin)."""


def column_path(key: str) -> tuple[str, ...]:
    """The name parts of an assigned column's key: ``value.b`` -> ``('value', 'b')``.

    >>> column_path("t.`a b`.c"), column_path("v"), column_path("no such (")
    (('t', 'a b', 'c'), ('v',), ('no such (',))
    """
    try:
        node = sqlglot.parse_one(key, read=_SPARK)
    except sqlglot.errors.SqlglotError:
        return (key,)
    if isinstance(node, exp.Column) and all(isinstance(p, exp.Identifier) for p in node.parts):
        return tuple(p.name for p in node.parts)
    if isinstance(node, exp.Dot) and all(isinstance(p, exp.Identifier) for p in node.parts):
        return tuple(p.name for p in node.parts)
    return (key,)


def path_sql(path: Sequence[str]) -> str:
    """A path as Spark SQL (each part quoted): ``('value', 'b')`` -> ```value`.`b```."""
    return ".".join(quote_identifier(p) for p in path)


def columns_sql(alias: str, columns: Sequence[str]) -> str:
    """Delta's list of the columns a clause may name: ``t.a, t.b``."""
    return ", ".join(f"{_quote_if_needed(alias)}.{_quote_if_needed(c)}" for c in columns)


def assigned_path(key: str, *, target_alias: str, columns: Sequence[str], clause: str) -> tuple[str, ...]:
    """The target column (then struct fields) ``key`` assigns: a leading target alias is dropped,
    the column's name is the table's spelling.

    >>> assigned_path("t.V", target_alias="t", columns=["k", "v"], clause="UPDATE clause")
    ('v',)
    >>> assigned_path("value.b", target_alias="t", columns=["k", "Value"], clause="UPDATE clause")
    ('Value', 'b')
    """
    by_lower = {c.lower(): c for c in columns}
    if key.lower() in by_lower:
        return (by_lower[key.lower()],)
    path = column_path(key)
    if len(path) > 1 and path[0].lower() == target_alias.lower() and path[1].lower() in by_lower:
        path = path[1:]
    if path[0].lower() not in by_lower:
        raise ScopeError(
            f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {key} in {clause} given columns "
            f"{columns_sql(target_alias, columns)}."
        )
    return (by_lower[path[0].lower()], *path[1:])


@dataclass(frozen=True)
class Side:
    """The one side a clause sees: its alias and columns."""

    alias: str
    columns: tuple[str, ...]


def scoped_spec(spec: MergeSpec, *, target: Sequence[str], source: Sequence[str]) -> MergeSpec:
    """``spec`` with its one-sided clauses' names qualified (``scoped``): NOT MATCHED clauses by the
    source's alias, NOT MATCHED BY SOURCE clauses by the target's."""
    sides = {
        "not_matched": Side(spec.source_alias, tuple(source)),
        "not_matched_by_source": Side(spec.target_alias, tuple(target)),
    }
    return _rewritten(spec, lambda kind, sql: scoped(sql, sides[kind]) if kind in sides else sql)


def evolved_spec(spec: MergeSpec, added: Sequence[str]) -> MergeSpec:
    """``spec`` with its WHEN MATCHED clauses' unqualified names of the columns schema evolution
    adds to the target qualified by the source's alias: Delta resolved them to the source's, the
    target having none yet; over the joined row, beside the target's new column, they would be
    ambiguous (``MergeIntoSchemaEvolutionSuite`` "multiple clauses": ``SET targetVal = srcVal``).

    >>> spec = MergeSpec.from_config("m", {"merge_condition": "t.k = s.k", "source_alias": "s",
    ...     "target_alias": "t", "when_matched": [{"action": "update", "set": {"v": "srcVal"}}]})
    >>> evolved_spec(spec, ["srcVal"]).matched[0].assignments[0].expression
    '`s`.`srcVal`'
    """
    if not added:
        return spec
    side = Side(spec.source_alias, tuple(added))
    return _rewritten(spec, lambda kind, sql: scoped(sql, side) if kind == "matched" else sql)


def timed_spec(spec: MergeSpec, instant: dt.datetime, zone: str) -> MergeSpec:
    """``spec`` with every current-time function at ``instant`` (``with_fixed_time``)."""
    return _rewritten(spec, lambda _, sql: with_fixed_time(sql, instant, zone), on=True)


def _rewritten(spec: MergeSpec, rewrite: Callable[[str, str], str], *, on: bool = False) -> MergeSpec:
    def clause(c: MergeClause) -> MergeClause:
        assignments = c.assignments
        if assignments is not None:
            assignments = tuple(replace(a, expression=rewrite(c.kind, a.expression)) for a in assignments)
        condition = rewrite(c.kind, c.condition) if c.condition is not None else None
        return replace(c, condition=condition, assignments=assignments)

    if on:
        spec = replace(
            spec,
            on_condition=rewrite("on", spec.on_condition),
            merge_condition=rewrite("on", spec.merge_condition) if spec.merge_condition else None,
            incremental_predicates=tuple(rewrite("on", p) for p in spec.incremental_predicates),
        )
    return replace(
        spec,
        matched=tuple(map(clause, spec.matched)),
        not_matched=tuple(map(clause, spec.not_matched)),
        not_matched_by_source=tuple(map(clause, spec.not_matched_by_source)),
    )


def scoped(sql: str, side: Side) -> str:
    """``sql`` with every unqualified name of ``side``'s columns (or a struct path starting at one)
    qualified by its alias. Other names stay as written: Spark's analysis of the clause against its
    one side refuses them (``check.py`` words Delta's error). SQL sqlglot cannot parse, or with a
    subquery (whose names are its own), is returned as it is.

    >>> side = Side("s", ("k", "value"))
    >>> scoped("k", side)
    '`s`.`k`'
    >>> scoped("value.b + k + t.k", side)
    '`s`.`value`.`b` + `s`.`k` + t.k'
    >>> scoped("transform(value, x -> x + s.k)", side)
    'TRANSFORM(`s`.`value`, x -> x + s.k)'
    """
    try:
        tree = sqlglot.parse_one(sql, read=_SPARK)
    except sqlglot.errors.SqlglotError:
        return sql
    if tree.find(exp.Select) is not None:
        return sql
    by_lower = {c.lower(): c for c in side.columns}
    alias = side.alias.lower()
    changed = False
    for column in list(tree.find_all(exp.Column)):
        parts = [p.name for p in column.parts]
        if not all(isinstance(p, exp.Identifier) for p in column.parts) or _in_lambda(column, parts[0]):
            continue
        head = parts[0].lower()
        if (len(parts) > 1 and head == alias) or head not in by_lower:
            continue
        # On one side, `t.x` of a column `t` is its field x (Delta resolves the clause so).
        qualified = _qualified(side.alias, [by_lower[head], *parts[1:]])
        tree = qualified if column is tree else tree
        column.replace(qualified)
        changed = True
    return tree.sql(dialect=_SPARK) if changed else sql


def _qualified(alias: str, parts: list[str]) -> exp.Expr:
    names = [alias, *parts]
    node: exp.Expr = exp.column(names[1], table=names[0], quoted=True)
    for field in names[2:]:
        node = exp.Dot(this=node, expression=exp.to_identifier(field, quoted=True))
    return node


def _in_lambda(column: exp.Column, name: str) -> bool:
    """Whether ``name`` is a variable of a lambda around ``column`` (``x -> x + 1``)."""
    node = column.parent
    while node is not None:
        if isinstance(node, exp.Lambda) and any(v.name.lower() == name.lower() for v in node.expressions):
            return True
        node = node.parent
    return False


def _quote_if_needed(name: str) -> str:
    return name if name.replace("_", "a").isalnum() and not name[:1].isdigit() else quote_identifier(name)


# The functions of the statement's instant, by sqlglot's node type or Spark's function name.
_TIME_NODES = (exp.CurrentTimestamp, exp.CurrentDate, exp.Localtimestamp, exp.CurrentTimezone)
_TIME_NAMES = {"now", "current_timestamp", "current_date", "localtimestamp", "current_timezone"}


def uses_current_time(spec: MergeSpec) -> bool:
    """Whether any of ``spec``'s SQL calls a current-time function (then it is given one instant)."""
    texts = [spec.on_condition, *spec.incremental_predicates]
    for c in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        texts += [c.condition or "", *(a.expression for a in c.assignments or ())]
    probe = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
    return any(with_fixed_time(t, probe, "UTC") != t for t in texts if t)


def with_fixed_time(sql: str, instant: dt.datetime, zone: str) -> str:
    """``sql`` with the current-time functions replaced by ``instant``'s literals in ``zone``.

    >>> at = dt.datetime(2026, 11, 28, 1, 2, 3, 456789, tzinfo=dt.timezone.utc)
    >>> with_fixed_time("now() > t.ts AND current_date() = d", at, "UTC")
    "TIMESTAMP_MICROS(1795827723456789) > t.ts AND CAST('2026-11-28' AS DATE) = d"
    >>> with_fixed_time("now()", at, "UTC")
    'TIMESTAMP_MICROS(1795827723456789)'
    >>> with_fixed_time("s.v + 1", at, "UTC")
    's.v + 1'
    """
    try:
        tree = sqlglot.parse_one(sql, read=_SPARK)
    except sqlglot.errors.SqlglotError:
        return sql
    found = [
        node
        for node in tree.find_all(exp.Func)
        if isinstance(node, _TIME_NODES)
        or (isinstance(node, exp.Anonymous) and str(node.this).lower() in _TIME_NAMES)
    ]
    if not found:
        return sql
    local = instant.astimezone(_zone(zone))
    for node in found:
        name = type(node).__name__.lower() if not isinstance(node, exp.Anonymous) else str(node.this).lower()
        literal = sqlglot.parse_one(_literal(name, instant, local, zone), read=_SPARK)
        tree = literal if node is tree else tree
        node.replace(literal)
    return tree.sql(dialect=_SPARK)


def _literal(name: str, instant: dt.datetime, local: dt.datetime, zone: str) -> str:
    if name in ("currentdate", "current_date"):
        return f"DATE '{local.date().isoformat()}'"
    if name == "localtimestamp":
        return f"TIMESTAMP_NTZ '{local.replace(tzinfo=None).isoformat(sep=' ')}'"
    if name in ("currenttimezone", "current_timezone"):
        return "'" + zone.replace("'", "\\'") + "'"
    micros = (instant - _EPOCH) // dt.timedelta(microseconds=1)
    return f"TIMESTAMP_MICROS({micros})"


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _zone(zone: str) -> dt.tzinfo:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return dt.timezone.utc
