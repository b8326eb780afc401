"""What Delta refuses in a MERGE's SQL at analysis, before any file is read (pure: sqlglot).

Delta's ``PreprocessTableMerge.checkCondition`` refuses, in the ON ("search") condition and every
clause's condition, an aggregate (``DELTA_AGGREGATION_NOT_SUPPORTED``) and a subquery
(``DELTA_UNSUPPORTED_SUBQUERY``); Spark's analysis refuses a window function there, and an
aggregate or a window function in an assignment (``UNSUPPORTED_EXPR_FOR_OPERATOR``).
Nondeterministic conditions are refused too (``DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED``), but
which functions are nondeterministic is Spark's to say: ``check.py`` asks Spark. Nondeterministic
assignments (``SET v = rand()``) are allowed, as in Delta.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import sqlglot
import sqlglot.errors
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from dbt.adapters.deltamerge.merge.clauses import MergeClause
from dbt.adapters.deltamerge.merge.spec import MergeSpec

_SPARK = Spark()
# Delta's name of each clause in its messages (``clauseType.toUpperCase``).
CLAUSE_TYPES = {
    ("matched", "update"): "UPDATE",
    ("matched", "delete"): "DELETE",
    ("not_matched", "insert"): "INSERT",
    ("not_matched_by_source", "update"): "UPDATE",
    ("not_matched_by_source", "delete"): "DELETE",
}


def clause_type(clause: MergeClause) -> str:
    """``UPDATE``, ``DELETE`` or ``INSERT``: how Delta names a clause in its errors."""
    return CLAUSE_TYPES[(clause.kind, clause.action)]


def conditions(spec: MergeSpec) -> Iterator[tuple[str, str]]:
    """``(Delta's name of the condition, SQL)``: the search condition, then every clause's.

    >>> spec = MergeSpec.from_config("m", {"unique_key": "id", "when_matched": [
    ...     {"action": "delete", "condition": "s.x"}, {"action": "update"}]})
    >>> [name for name, _ in conditions(spec)]
    ['search', 'DELETE']
    """
    yield "search", spec.on_condition
    for clause in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        if clause.condition is not None:
            yield clause_type(clause), clause.condition


def refusals(spec: MergeSpec) -> list[str]:
    """Delta's error for each condition or assignment it would refuse, in clause order.

    >>> spec = MergeSpec.from_config("m", {"merge_condition": "t.k = s.k", "source_alias": "s",
    ...     "target_alias": "t", "when_matched": [{"action": "update", "condition": "max(0) > 0",
    ...     "set": {"v": "sum(s.v) over ()"}}]})
    >>> for problem in refusals(spec): print(problem[:50], "...", problem[-22:])
    [DELTA_AGGREGATION_NOT_SUPPORTED] Aggregate functi ... ndition = max(0) > 0).
    [UNSUPPORTED_EXPR_FOR_OPERATOR] A query operator c ... ns: [SUM(s.v) OVER ()]
    """
    problems = []
    for name, sql in conditions(spec):
        problems += _condition_refusals(name, sql)
    for clause in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        for assignment in clause.assignments or ():
            problems += _action_refusals(assignment.expression)
    return problems


def subquery_relations(spec: MergeSpec) -> list[str]:
    """The relations the subqueries of the merge's conditions and assignments read, as SQL, in
    order, once each (a CTE's own name excepted): Spark resolves them before Delta refuses the
    subquery, so a name that is no table (the target's alias) is Spark's ``TABLE_OR_VIEW_NOT_FOUND``.

    >>> spec = MergeSpec.from_config("m", {"merge_condition": "t.k = s.k", "source_alias": "s",
    ...     "target_alias": "t", "when_matched": [{"action": "delete",
    ...     "condition": "s.v in (with c as (select 1 as v) select v from c union select v from db.t)"}]})
    >>> subquery_relations(spec)
    ['`db`.`t`']
    """
    texts = [sql for _, sql in conditions(spec)]
    for clause in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        texts += [a.expression for a in clause.assignments or ()]
    found: list[str] = []
    for text in texts:
        tree = _parsed(text)
        if tree is None or not _subqueries(tree):
            continue
        ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        for table in tree.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier) or (not table.db and table.name.lower() in ctes):
                continue  # a table function (range(3)), or a CTE of the subquery
            relation = exp.table_(table.name, db=table.db or None, catalog=table.catalog or None, quoted=True)
            sql = relation.sql(dialect=_SPARK)
            if sql not in found:
                found.append(sql)
    return found


def _condition_refusals(name: str, sql: str) -> list[str]:
    tree = _parsed(sql)
    if tree is None:
        return []
    where = f"the {name} condition of MERGE operation"
    if _subqueries(tree):
        return [f"[DELTA_UNSUPPORTED_SUBQUERY] Subqueries are not supported in {where} (condition = {sql})."]
    windows = list(tree.find_all(exp.Window))
    if windows:
        return [_unsupported(windows)]
    if _aggregates(tree):
        return [
            "[DELTA_AGGREGATION_NOT_SUPPORTED] Aggregate functions are not supported in "
            f"{where} (condition = {sql})."
        ]
    return []


def _action_refusals(sql: str) -> list[str]:
    tree = _parsed(sql)
    if tree is None or _subqueries(tree):
        return []  # a subquery's aggregates are its own; Spark judges the rest
    found: list[exp.Expr] = list(tree.find_all(exp.Window)) or _aggregates(tree)
    return [_unsupported(found)] if found else []


def _unsupported(found: Sequence[exp.Expr]) -> str:
    shown = ", ".join(node.sql(dialect=_SPARK) for node in found)
    return (
        "[UNSUPPORTED_EXPR_FOR_OPERATOR] A query operator contains one or more unsupported expressions. "
        "Consider to rewrite it to avoid window functions, aggregate functions, and generator functions "
        f"in the WHERE clause. Invalid expressions: [{shown}]"
    )


def _parsed(sql: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(sql, read=_SPARK)
    except sqlglot.errors.SqlglotError:
        return None  # Spark's analysis names what does not parse


def _subqueries(tree: exp.Expr) -> bool:
    return tree.find(exp.Select, exp.Subquery, exp.Exists) is not None


def _aggregates(tree: exp.Expr) -> list[exp.Expr]:
    """Aggregate calls not inside a window (``sum(x) over ()`` is a window function)."""
    return [node for node in tree.find_all(exp.AggFunc) if node.find_ancestor(exp.Window) is None]
