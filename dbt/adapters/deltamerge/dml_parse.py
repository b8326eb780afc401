"""The row-changing and table-defining statements the engine runs on Delta tables (pure Python).

``UPDATE``, ``DELETE``, ``MERGE INTO`` (Spark's grammar, with ``WITH SCHEMA EVOLUTION``),
``TRUNCATE TABLE``, ``CREATE [OR REPLACE] TABLE ... [USING delta] [AS query | LIKE source]``
(Delta is the default format, as on Databricks: a CREATE TABLE without USING makes a Delta
table; ``USING parquet``, ``STORED AS`` and ``ROW FORMAT`` stay Spark's) and ``ALTER TABLE ...
ADD COLUMNS``
parsed by sqlglot's Spark dialect into frozen values. Conditions, expressions and a MERGE's
source subquery are Spark SQL regenerated from the parse tree; a CREATE's ``AS`` query is cut
from the statement by token offsets, so Spark runs it as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

_SPARK = sqlglot.Dialect.get_or_raise("spark")
_EVOLUTION = re.compile(r"^(\s*merge)\s+with\s+schema\s+evolution(\s+into\b)", re.IGNORECASE)
_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.TABLE}


class DmlParseError(ValueError):
    """A statement on a Delta table has a form the engine does not run."""


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


@dataclass(frozen=True)
class ColumnDefinition:
    """A column of ``CREATE TABLE (...)`` or ``ADD COLUMNS (...)``: name, Spark type, comment."""

    name: str
    type_sql: str
    comment: str | None = None


@dataclass(frozen=True)
class CreateTableStatement:
    """``CREATE [OR REPLACE] TABLE [IF NOT EXISTS] name [(columns)] USING delta ... [AS query]``,
    or ``CREATE TABLE [IF NOT EXISTS] name LIKE source [USING delta] ...``."""

    parts: tuple[str, ...]
    replace: bool
    if_not_exists: bool
    columns: tuple[ColumnDefinition, ...]
    partition_by: tuple[str, ...]
    properties: tuple[tuple[str, str], ...]
    comment: str | None
    location: str | None
    query: str | None
    # ``LIKE source``: the source table's name parts (its definition is the new table's).
    like: tuple[str, ...] = ()
    # ``USING delta`` was written (a LIKE of a table of another format stays Spark's without it).
    using_delta: bool = False


@dataclass(frozen=True)
class AddColumnsStatement:
    """``ALTER TABLE name ADD COLUMN[S] (column type [COMMENT ...], ...)``."""

    parts: tuple[str, ...]
    columns: tuple[ColumnDefinition, ...]


DmlStatement = (
    DeleteStatement
    | UpdateStatement
    | MergeStatement
    | TruncateStatement
    | CreateTableStatement
    | AddColumnsStatement
)


def parse_dml(sql: str, tree: exp.Expr | None = None) -> DmlStatement | None:
    """The statement ``sql`` is, or None when it is none of these forms.

    >>> parse_dml("delete from s.t where id > 3")
    DeleteStatement(parts=('s', 't'), alias=None, condition='id > 3')
    >>> parse_dml("update t as x set v = x.v + 1")
    UpdateStatement(parts=('t',), alias='x', assignments=(('v', 'x.v + 1'),), condition=None)
    >>> parse_dml("create table t (a int) using parquet") is None
    True

    Raises:
        DmlParseError: the statement is one of these, in a form the engine does not run.
    """
    evolution = bool(_EVOLUTION.match(sql))
    if evolution:
        sql = _EVOLUTION.sub(r"\1\2", sql, count=1)
        tree = None
    if tree is None:
        try:
            tree = sqlglot.parse_one(sql, dialect=_SPARK)
        except sqlglot.errors.SqlglotError:
            return None
    if isinstance(tree, exp.Delete):
        return DeleteStatement(_parts(tree.this), _alias(tree.this), _where(tree))
    if isinstance(tree, exp.Update):
        return _update(tree)
    if isinstance(tree, exp.Merge):
        return _merge(tree, sql, evolution)
    if isinstance(tree, exp.TruncateTable):
        if len(tree.expressions) != 1 or tree.args.get("partition"):
            raise DmlParseError("TRUNCATE TABLE of one table without PARTITION is supported")
        return TruncateStatement(_parts(tree.expressions[0]))
    if isinstance(tree, exp.Create) and _creates_delta_table(tree):
        return _create(tree, sql)
    if isinstance(tree, exp.Alter) and tree.actions and all(_is_column_def(a) for a in tree.actions):
        return AddColumnsStatement(_parts(tree.this), tuple(_added_columns(tree.actions)))
    return None


def _parts(table: exp.Expr) -> tuple[str, ...]:
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        return ()
    return tuple(part.name for part in table.parts)


def _alias(table: exp.Expr) -> str | None:
    return table.alias or None if isinstance(table, exp.Table) else None


def _sql(node: exp.Expr) -> str:
    return node.sql(dialect=_SPARK)


def _where(tree: exp.Expr) -> str | None:
    where = tree.args.get("where")
    return _sql(where.this) if where is not None else None


def _update(tree: exp.Update) -> UpdateStatement:
    assignments = []
    for item in tree.expressions:
        if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
            raise DmlParseError(f"UPDATE assignment {_sql(item)} is not `column = expression`")
        assignments.append((item.this.name, _sql(item.expression)))
    if tree.args.get("from_") or tree.args.get("from"):
        raise DmlParseError("UPDATE ... FROM is not Spark SQL; use MERGE INTO")
    return UpdateStatement(_parts(tree.this), _alias(tree.this), tuple(assignments), _where(tree))


def _merge(tree: exp.Merge, sql: str, evolution: bool) -> MergeStatement:
    target, source = tree.this, tree.args["using"]
    target_alias = _alias(target) or (target.name if isinstance(target, exp.Table) else None)
    if isinstance(source, exp.Table):
        source_alias = source.alias or source.name
        query = "SELECT * FROM " + ".".join(_quoted(p) for p in _parts(source))
    elif isinstance(source, exp.Subquery) and source.alias:
        source_alias = source.alias
        query = _sql(source.this)
    else:
        raise DmlParseError("the MERGE source must be a table or a subquery with an alias")
    config: dict[str, Any] = {
        "merge_condition": _sql(tree.args["on"]),
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
    return MergeStatement(_parts(target), query, config)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _clause(when: exp.When, key: str) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    condition = when.args.get("condition")
    if condition is not None:
        entry["condition"] = _sql(condition)
    then = when.args.get("then")
    if isinstance(then, exp.Var) and then.name.lower() == "delete":
        entry["action"] = "delete"
    elif isinstance(then, exp.Update):
        entry["action"] = "update"
        items = then.expressions
        if not (len(items) == 1 and isinstance(items[0], exp.Star)):
            entry["set"] = {_assigned(i): _sql(i.expression) for i in items}
    elif isinstance(then, exp.Insert):
        entry["action"] = "insert"
        if not isinstance(then.this, exp.Star):
            columns = [c.name for c in then.this.expressions]
            values = [_sql(v) for v in then.expression.expressions]
            if len(columns) != len(values):
                raise DmlParseError(f"INSERT of {len(columns)} columns with {len(values)} values")
            entry["values"] = dict(zip(columns, values, strict=True))
    else:
        raise DmlParseError(f"the {key} action {_sql(then) if then else '(none)'} is not understood")
    return entry


def _assigned(item: exp.Expr) -> str:
    if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
        raise DmlParseError(f"UPDATE SET {_sql(item)} is not `column = expression`")
    return item.this.name


def _creates_delta_table(tree: exp.Expr) -> bool:
    """A ``CREATE TABLE`` with ``USING delta``, or with no format at all: Delta is the default format."""
    if not isinstance(tree, exp.Create) or str(tree.args.get("kind", "")).upper() != "TABLE":
        return False
    properties = tree.args.get("properties")
    hive = (exp.RowFormatDelimitedProperty, exp.RowFormatSerdeProperty)
    if properties is not None and any(isinstance(p, hive) for p in properties.expressions):
        return False
    return _file_format(tree) in (None, "delta")


def _file_format(tree: exp.Create) -> str | None:
    properties = tree.args.get("properties")
    for prop in properties.expressions if properties is not None else []:
        if isinstance(prop, exp.FileFormatProperty):
            return prop.name.lower()
    return None


def _create(tree: exp.Create, sql: str) -> CreateTableStatement:
    if str(tree.args.get("kind", "")).upper() != "TABLE":
        raise DmlParseError("only CREATE TABLE ... USING delta is supported")
    schema = tree.this if isinstance(tree.this, exp.Schema) else None
    table = schema.this if schema is not None else tree.this
    columns = tuple(_column(c) for c in schema.expressions) if schema is not None else ()
    partition_by: tuple[str, ...] = ()
    properties: list[tuple[str, str]] = []
    comment = location = None
    like: tuple[str, ...] = ()
    properties_node = tree.args.get("properties")
    for prop in properties_node.expressions if properties_node is not None else []:
        if isinstance(prop, exp.LikeProperty):
            like = _parts(prop.this)
        elif isinstance(prop, exp.PartitionedByProperty):
            partition_by = tuple(e.name for e in prop.this.expressions)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
        elif type(prop) is exp.Property:  # TBLPROPERTIES ('key' = 'value')
            properties.append((prop.name, prop.args["value"].name))
        elif not isinstance(prop, exp.FileFormatProperty):
            raise DmlParseError(f"CREATE TABLE ... USING delta: {_sql(prop)} is not supported")
    query = _query_after_as(sql) if tree.expression is not None else None
    if like and (columns or query is not None or partition_by or comment is not None):
        raise DmlParseError(
            "CREATE TABLE ... LIKE takes its columns, partitioning and comment from the source table"
        )
    return CreateTableStatement(
        parts=_parts(table),
        replace=bool(tree.args.get("replace")),
        if_not_exists=bool(tree.args.get("exists")),
        columns=columns,
        partition_by=partition_by,
        properties=tuple(properties),
        comment=comment,
        location=location,
        query=query,
        like=like,
        using_delta=_file_format(tree) == "delta",
    )


def _column(node: exp.Expr) -> ColumnDefinition:
    if not isinstance(node, exp.ColumnDef) or node.args.get("kind") is None:
        raise DmlParseError(f"column definition {_sql(node)} is not `name type [COMMENT '...']`")
    comment = None
    for constraint in node.args.get("constraints") or []:
        if isinstance(constraint.kind, exp.CommentColumnConstraint):
            comment = constraint.kind.name
        elif isinstance(constraint.kind, exp.DefaultColumnConstraint) and isinstance(
            constraint.kind.this, exp.Null
        ):
            continue  # DEFAULT NULL is what a column without a default gets
        else:
            raise DmlParseError(f"column constraint {_sql(constraint)} is not supported")
    return ColumnDefinition(node.name, _sql(node.args["kind"]), comment)


def _is_column_def(action: exp.Expr) -> bool:
    if isinstance(action, exp.Schema):
        return all(isinstance(e, exp.ColumnDef) for e in action.expressions)
    return isinstance(action, exp.ColumnDef)


def _added_columns(actions: list[exp.Expr]) -> list[ColumnDefinition]:
    found: list[ColumnDefinition] = []
    for action in actions:
        defs = action.expressions if isinstance(action, exp.Schema) else [action]
        found.extend(_column(d) for d in defs)
    return found


def _query_after_as(sql: str) -> str:
    """The query of ``CREATE TABLE ... AS query`` as written (the text after the top-level AS).

    >>> _query_after_as("create table t (a int) tblproperties ('x' = 'y') as (select 1 as a)")
    '(select 1 as a)'
    """
    tokens = _SPARK.tokenize(sql)
    depth = 0
    for index, token in enumerate(tokens):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if depth == 0 and token.token_type == TokenType.ALIAS and index + 1 < len(tokens):
            return sql[tokens[index + 1].start :].strip().removesuffix(";").rstrip()
    raise DmlParseError("CREATE TABLE ... AS has no query after AS")
