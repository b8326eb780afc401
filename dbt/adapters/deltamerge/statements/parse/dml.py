"""The row-changing statements the engine runs on Delta tables, parsed (pure Python).

``UPDATE``, ``DELETE``, ``MERGE INTO`` (Spark's grammar, with ``WITH SCHEMA EVOLUTION``) and
``TRUNCATE TABLE``, parsed by sqlglot's Spark dialect into frozen values. Conditions,
expressions and a MERGE's source subquery are Spark SQL regenerated from the parse tree. The
helpers every statement parser shares (``SPARK``, ``table_parts``, ``sql_of``, the error)
live here, the lowest of the three parsers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from dbt.adapters.deltamerge.statements.parse.text import SPARK, SqlText

__all__ = ["SPARK"]
# ``MERGE WITH SCHEMA EVOLUTION INTO``, after any comments (dbt puts its query comment first).
_EVOLUTION = re.compile(
    # Possessive: whitespace and comments are taken one way only (no backtracking over long runs).
    r"^((?:\s|/\*.*?\*/|--[^\n]*(?:\n|$))*+merge)\s+with\s+schema\s+evolution(\s+into\b)",
    re.IGNORECASE | re.DOTALL,
)


class StatementParseError(ValueError):
    """A statement writes a table, but its form is not one the engine runs."""


@dataclass(frozen=True)
class DeleteStatement:
    """``DELETE FROM name [alias] [WHERE condition]``."""

    parts: tuple[str, ...]
    alias: str | None
    condition: str | None


@dataclass(frozen=True)
class UpdateStatement:
    """``UPDATE name [alias] SET column = expression, ... [WHERE condition]``."""

    parts: tuple[str, ...]
    alias: str | None
    assignments: tuple[tuple[str, str], ...]
    condition: str | None


@dataclass(frozen=True)
class MergeStatement:
    """``MERGE [WITH SCHEMA EVOLUTION] INTO target USING source ON ... WHEN ...``.

    ``config`` is the clause set in a ``delta_merge`` model's config keys, so a statement
    and a model are validated and run by the same code.
    """

    parts: tuple[str, ...]
    source_query: str
    config: dict[str, Any]


@dataclass(frozen=True)
class TruncateStatement:
    """``TRUNCATE TABLE name``."""

    parts: tuple[str, ...]


DmlStatement = DeleteStatement | UpdateStatement | MergeStatement | TruncateStatement


def parse_dml(text: SqlText) -> DmlStatement | None:
    """The statement ``text`` is, or None when it is none of these forms.

    >>> parse_dml(SqlText("delete from s.t where id > 3"))
    DeleteStatement(parts=('s', 't'), alias=None, condition='id > 3')
    >>> parse_dml(SqlText("update t as x set v = x.v + 1"))
    UpdateStatement(parts=('t',), alias='x', assignments=(('v', 'x.v + 1'),), condition=None)
    >>> parse_dml(SqlText("select 1")) is None
    True
    >>> parse_dml(SqlText("/* dbt */ merge with schema evolution into t using s on t.k = s.k "
    ...     "when matched then delete")).config["merge_with_schema_evolution"]
    True

    Raises:
        StatementParseError: the statement is one of these, in a form the engine does not run.
    """
    sql = text.sql
    evolution = bool(_EVOLUTION.match(sql))
    if evolution:  # sqlglot has no grammar for it: the statement without the clause is parsed
        sql = _EVOLUTION.sub(r"\1\2", sql, count=1)
        text = SqlText(sql)
    tree = text.tree
    if tree is None:
        return None
    if isinstance(tree, exp.Delete):
        return DeleteStatement(table_parts(tree.this), _alias(tree.this), _where(tree))
    if isinstance(tree, exp.Update):
        return _update(tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree, sql, evolution)
    if isinstance(tree, exp.TruncateTable):
        if len(tree.expressions) != 1 or tree.args.get("partition"):
            raise StatementParseError("TRUNCATE TABLE of one table without PARTITION is supported")
        return TruncateStatement(table_parts(tree.expressions[0]))
    return None


def table_parts(table: exp.Expr) -> tuple[str, ...]:
    """The name parts of a table reference, outermost first (empty when it is not a name).

    >>> table_parts(SqlText("select * from c.s.t").tree.find(exp.Table))
    ('c', 's', 't')
    """
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        return ()
    return tuple(part.name for part in table.parts)


def _alias(table: exp.Expr) -> str | None:
    return table.alias or None if isinstance(table, exp.Table) else None


def sql_of(node: exp.Expr) -> str:
    """A parse tree as Spark SQL text."""
    return node.sql(dialect=SPARK)


def _where(tree: exp.Expr) -> str | None:
    where = tree.args.get("where")
    return sql_of(where.this) if where is not None else None


def _update(tree: exp.Update) -> UpdateStatement:
    assignments = []
    for item in tree.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise StatementParseError(f"UPDATE assignment {sql_of(item)} is not `column = expression`")
        assignments.append((item.this.name, sql_of(item.expression)))
    if tree.args.get("from_") or tree.args.get("from"):
        raise StatementParseError("UPDATE ... FROM is not Spark SQL; use MERGE INTO")
    return UpdateStatement(table_parts(tree.this), _alias(tree.this), tuple(assignments), _where(tree))


def _merge(tree: exp.Merge, sql: str, evolution: bool) -> MergeStatement:
    target, source = tree.this, tree.args["using"]
    target_alias = _alias(target) or (target.name if isinstance(target, exp.Table) else None)
    if isinstance(source, exp.Table):
        source_alias = source.alias or source.name
        query = "SELECT * FROM " + ".".join(_quoted(p) for p in table_parts(source))
    elif isinstance(source, exp.Subquery) and source.alias:
        source_alias = source.alias
        query = sql_of(source.this)
    else:
        raise StatementParseError("the MERGE source must be a table or a subquery with an alias")
    ctes = tree.args.get("with_") or tree.args.get("with")
    if ctes is not None:
        query = f"{sql_of(ctes)} {query}"  # `WITH c AS (...) MERGE ... USING c`: the source's
    config: dict[str, Any] = {
        "merge_condition": sql_of(tree.args["on"]),
        "source_alias": source_alias,
        "target_alias": target_alias,
        "merge_with_schema_evolution": evolution,
        "when_matched": [],
        "when_not_matched": [],
        "when_not_matched_by_source": [],
    }
    whens = tree.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        key = (
            "when_not_matched_by_source"
            if when.args.get("source")
            else ("when_matched" if when.args.get("matched") else "when_not_matched")
        )
        config[key].append(_clause(when, key))
    return MergeStatement(table_parts(target), query, config)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _clause(when: exp.When, key: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    condition = when.args.get("condition")
    if condition is not None:
        entry["condition"] = sql_of(condition)
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.lower() == "delete":
        entry["action"] = "delete"
    elif isinstance(then, exp.Update):
        entry["action"] = "update"
        items = then.expressions
        if not (len(items) == 1 and isinstance(items[0], exp.Star)):
            keys = [_assigned(i) for i in items]
            _no_repeats(keys, "update")
            entry["set"] = {key: sql_of(i.expression) for key, i in zip(keys, items, strict=True)}
    elif isinstance(then, exp.Insert):
        entry["action"] = "insert"
        if not isinstance(then.this, exp.Star):
            # A column's key is its reference as written (``value.a`` is refused as Delta refuses it).
            columns = [sql_of(c) for c in then.this.expressions]
            values = [sql_of(v) for v in then.expression.expressions]
            if len(columns) != len(values):
                raise StatementParseError(f"INSERT of {len(columns)} columns with {len(values)} values")
            _no_repeats(columns, "insert")
            entry["values"] = dict(zip(columns, values, strict=True))
    else:
        raise StatementParseError(f"the {key} action {sql_of(then) if then else '(none)'} is not understood")
    return entry


def _assigned(item: exp.Expr) -> str:
    """An UPDATE SET's column as written: a name, a path into a struct, qualified or not (the
    merge resolves it against the target, ``merge/scope.assigned_path``)."""
    if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column | exp.Dot):
        raise StatementParseError(f"UPDATE SET {sql_of(item)} is not `column = expression`")
    return sql_of(item.this)


def _no_repeats(keys: list[str], action: str) -> None:
    """Delta's errors for a column written twice as written (spellings that differ, ``v`` and
    ``t.V``, are found when the merge resolves them)."""
    repeated = sorted({k for k in keys if [x.lower() for x in keys].count(k.lower()) > 1})
    if not repeated:
        return
    if action == "insert":
        raise StatementParseError(
            "[DELTA_DUPLICATE_COLUMNS_ON_INSERT] Duplicate column names in INSERT clause"
        )
    listed = ", ".join(f"`{k}`" for k in keys if k in repeated)
    raise StatementParseError(
        f"[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns: [{listed}]."
    )
