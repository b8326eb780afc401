"""The table-defining statements the engine runs on Delta tables, parsed (pure Python).

``CREATE [OR REPLACE] TABLE ... [USING delta] [AS query | LIKE source]`` (Delta is the default
format, as on Databricks: a CREATE TABLE without USING makes a Delta table; ``USING parquet``,
``STORED AS`` and ``ROW FORMAT`` stay Spark's) and ``ALTER TABLE ... ADD COLUMNS``, parsed by
sqlglot's Spark dialect into frozen values. A CREATE's ``AS`` query is cut from the statement by
token offsets, so Spark runs it as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import TokenType

from dbt.adapters.deltamerge.statements.parse.alter import AlterStatement, parse_alter
from dbt.adapters.deltamerge.statements.parse.dml import StatementParseError, sql_of, table_parts
from dbt.adapters.deltamerge.statements.parse.maintenance import property_pairs
from dbt.adapters.deltamerge.statements.parse.text import SqlText

_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.TABLE}


@dataclass(frozen=True)
class ColumnDefinition:
    """A column of ``CREATE TABLE (...)`` or ``ADD COLUMNS (...)``: name, Spark type, comment, and
    Delta's column constraints: NOT NULL, ``GENERATED ALWAYS AS (expr)``, ``DEFAULT expr``,
    ``GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(START WITH s INCREMENT BY i)]``."""

    name: str
    type_sql: str
    comment: str | None = None
    not_null: bool = False
    generated: str | None = None
    default: str | None = None
    # (always, start, step) of an identity column.
    identity: tuple[bool, int, int] | None = None


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
    # ``CONSTRAINT name CHECK (expr)`` among the columns: (name, expression).
    checks: tuple[tuple[str, str], ...] = ()
    # ``USING delta`` was written (a LIKE of a table of another format stays Spark's without it).
    using_delta: bool = False
    # ``CLUSTER BY (columns)``: liquid clustering.
    cluster_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class AddColumnsStatement:
    """``ALTER TABLE name ADD COLUMN[S] (column type [COMMENT ...], ...)``."""

    parts: tuple[str, ...]
    columns: tuple[ColumnDefinition, ...]


@dataclass(frozen=True)
class RenameColumnStatement:
    """``ALTER TABLE name RENAME COLUMN old TO new`` (a table with column mapping)."""

    parts: tuple[str, ...]
    old: str
    new: str


@dataclass(frozen=True)
class DropColumnsStatement:
    """``ALTER TABLE name DROP COLUMN[S] [IF EXISTS] (a, b)`` (a table with column mapping)."""

    parts: tuple[str, ...]
    columns: tuple[str, ...]
    if_exists: bool


DdlStatement = (
    CreateTableStatement | AddColumnsStatement | RenameColumnStatement | DropColumnsStatement | AlterStatement
)


def parse_ddl(text: SqlText) -> DdlStatement | None:
    """The CREATE TABLE (of a Delta table) or ALTER TABLE ... ADD COLUMNS ``text`` is, or None.

    >>> parse_ddl(SqlText("create table t (a int) using parquet")) is None
    True
    >>> parse_ddl(SqlText("alter table t add columns (b string)"))  # doctest: +NORMALIZE_WHITESPACE
    AddColumnsStatement(parts=('t',), columns=(ColumnDefinition(name='b', type_sql='STRING', comment=None,
    not_null=False, generated=None, default=None, identity=None),))
    """
    tree = text.tree
    if isinstance(tree, exp.Create) and _creates_delta_table(tree):
        return _create(tree, text)
    if isinstance(tree, exp.Alter) and (altered := parse_alter(tree)) is not None:
        return altered
    if isinstance(tree, exp.Alter) and tree.actions and all(_is_column_def(a) for a in tree.actions):
        return AddColumnsStatement(table_parts(tree.this), tuple(_added_columns(tree.actions)))
    if isinstance(tree, exp.Alter) and len(tree.actions) == 1:
        return _rename_or_drop(table_parts(tree.this), tree.actions[0])
    return None


def renamed_table(text: SqlText) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The old and new name parts of ``ALTER TABLE old RENAME TO new`` (Spark runs it), or None.

    >>> renamed_table(SqlText("alter table s.a rename to `b c`"))
    (('s', 'a'), ('b c',))
    >>> renamed_table(SqlText("alter table s.a rename column x to y")) is None
    True
    """
    tree = text.tree
    if not isinstance(tree, exp.Alter) or str(tree.args.get("kind", "")).upper() != "TABLE":
        return None
    actions = tree.actions
    if len(actions) != 1 or not isinstance(actions[0], exp.AlterRename):
        return None
    new = actions[0].this
    return (table_parts(tree.this), table_parts(new)) if isinstance(new, exp.Table) else None


def _rename_or_drop(parts: tuple[str, ...], action: exp.Expr) -> DdlStatement | None:
    """``RENAME COLUMN`` / ``DROP COLUMN[S]`` of top-level columns, or None (Spark's own ALTERs).

    >>> parse_ddl(SqlText("alter table t rename column a to `b c`"))
    RenameColumnStatement(parts=('t',), old='a', new='b c')
    >>> parse_ddl(SqlText("alter table t drop columns (a, b)"))
    DropColumnsStatement(parts=('t',), columns=('a', 'b'), if_exists=False)
    """
    if isinstance(action, exp.RenameColumn):
        old, new = action.this, action.args.get("to")
        if isinstance(old, exp.Column) and isinstance(new, exp.Column) and not old.table and not new.table:
            return RenameColumnStatement(parts, old.name, new.name)
    if isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() in ("COLUMN", "COLUMNS"):
        names: list[str] = []
        for node in action.args.get("tables") or []:
            for item in node.expressions if isinstance(node, exp.Schema) else [node]:
                if not isinstance(item, (exp.Column, exp.Identifier)) or (
                    isinstance(item, exp.Column) and item.table
                ):
                    return None
                names.append(item.name)
        return DropColumnsStatement(parts, tuple(names), bool(action.args.get("exists")))
    return None


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


def _create(tree: exp.Create, text: SqlText) -> CreateTableStatement:
    if str(tree.args.get("kind", "")).upper() != "TABLE":
        raise StatementParseError("only CREATE TABLE ... USING delta is supported")
    schema = tree.this if isinstance(tree.this, exp.Schema) else None
    table = schema.this if schema is not None else tree.this
    items = list(schema.expressions) if schema is not None else []
    checks = tuple(_table_check(c) for c in items if isinstance(c, exp.Constraint))
    columns = tuple(_column(c) for c in items if not isinstance(c, exp.Constraint))
    partition_by: tuple[str, ...] = ()
    cluster_by: tuple[str, ...] = ()
    properties: list[tuple[str, str]] = []
    comment = location = None
    like: tuple[str, ...] = ()
    properties_node = tree.args.get("properties")
    for prop in properties_node.expressions if properties_node is not None else []:
        if isinstance(prop, exp.LikeProperty):
            like = table_parts(prop.this)
        elif isinstance(prop, exp.PartitionedByProperty):
            partition_by = tuple(e.name for e in prop.this.expressions)
        elif isinstance(prop, exp.ClusterProperty):
            cluster_by = tuple(e.name for e in prop.expressions)
        elif isinstance(prop, exp.SchemaCommentProperty):
            comment = prop.this.name
        elif isinstance(prop, exp.LocationProperty):
            location = prop.this.name
        elif type(prop) is exp.Property:  # TBLPROPERTIES ('key' = 'value', delta.key = true)
            properties.extend(property_pairs([prop]))
        elif not isinstance(prop, exp.FileFormatProperty):
            raise StatementParseError(f"CREATE TABLE ... USING delta: {sql_of(prop)} is not supported")
    query = _query_after_as(text) if tree.expression is not None else None
    if like and (columns or query is not None or partition_by or comment is not None):
        raise StatementParseError(
            "CREATE TABLE ... LIKE takes its columns, partitioning and comment from the source table"
        )
    return CreateTableStatement(
        parts=table_parts(table),
        replace=bool(tree.args.get("replace")),
        if_not_exists=bool(tree.args.get("exists")),
        columns=columns,
        partition_by=partition_by,
        properties=tuple(properties),
        comment=comment,
        location=location,
        query=query,
        like=like,
        checks=checks,
        using_delta=_file_format(tree) == "delta",
        cluster_by=cluster_by,
    )


def _column(node: exp.Expr) -> ColumnDefinition:
    if not isinstance(node, exp.ColumnDef) or node.args.get("kind") is None:
        raise StatementParseError(f"column definition {sql_of(node)} is not `name type [COMMENT '...']`")
    found: dict[str, object] = {}
    for constraint in node.args.get("constraints") or []:
        kind = constraint.kind
        if isinstance(kind, exp.CommentColumnConstraint):
            found["comment"] = kind.name
        elif isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            found["not_null"] = True
        elif isinstance(kind, exp.DefaultColumnConstraint):
            if not isinstance(kind.this, exp.Null):  # DEFAULT NULL: what a column without one gets
                found["default"] = sql_of(kind.this)
        elif isinstance(kind, exp.ComputedColumnConstraint):
            found["generated"] = sql_of(kind.this)
        elif isinstance(kind, exp.GeneratedAsIdentityColumnConstraint) and kind.this is not None:
            start, step = kind.args.get("start"), kind.args.get("increment")
            found["identity"] = (
                bool(kind.this),
                int(sql_of(start)) if start is not None else 1,
                int(sql_of(step)) if step is not None else 1,
            )
        else:
            raise StatementParseError(f"column constraint {sql_of(constraint)} is not supported")
    return ColumnDefinition(node.name, sql_of(node.args["kind"]), **found)  # type: ignore[arg-type]


def _table_check(node: exp.Constraint) -> tuple[str, str]:
    """``CONSTRAINT name CHECK (expr)`` among CREATE TABLE's columns (Delta's only table constraint)."""
    checks = [e for e in node.expressions if isinstance(e, exp.CheckColumnConstraint)]
    if len(checks) != 1 or len(node.expressions) != 1:
        raise StatementParseError(f"table constraint {sql_of(node)} is not `CONSTRAINT name CHECK (expr)`")
    return node.name, sql_of(checks[0].this)


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


def _query_after_as(text: SqlText) -> str:
    """The query of ``CREATE TABLE ... AS query`` as written (the text after the top-level AS).

    >>> _query_after_as(SqlText("create table t (a int) tblproperties ('x' = 'y') as (select 1 as a)"))
    '(select 1 as a)'
    """
    sql, tokens = text.sql, text.tokens or []
    depth = 0
    for index, token in enumerate(tokens):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if depth == 0 and token.token_type == TokenType.ALIAS and index + 1 < len(tokens):
            return sql[tokens[index + 1].start :].strip().removesuffix(";").rstrip()
    raise StatementParseError("CREATE TABLE ... AS has no query after AS")
