"""Parsing the SQL statements that may write a table (pure Python, sqlglot's Spark dialect).

The cursor needs, before Spark sees a statement, to know whether it writes a table and
which. ``PARSERS`` is the one table of the statement families, tried in order, each answering
None for a statement not of its family: ``parse_dml`` (``UPDATE``, ``DELETE``, ``MERGE`` with or
without ``WITH SCHEMA EVOLUTION``, ``TRUNCATE``), ``parse_maintenance`` (``ALTER TABLE ... SET`` /
``UNSET TBLPROPERTIES``, ``CLUSTER BY``, ``REORG``, ``OPTIMIZE``: recognised from their tokens,
which sqlglot does not parse), ``parse_ddl`` (``CREATE TABLE ... USING delta``, ``ALTER TABLE``'s
column and constraint forms through ``parse_alter``) and ``parse_insert`` (an ``INSERT``: its
target, column list, static partitions, ``BY NAME`` and ``OVERWRITE`` flags and the exact text of
its query, cut from the statement by token offsets so Spark runs the user's query as written).
Anything else is not a table write. ``statements/run.RUNNERS`` is the table the other way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from dbt.adapters.deltamerge.statements.parse.ddl import DdlStatement, parse_ddl
from dbt.adapters.deltamerge.statements.parse.dml import (
    SPARK,
    DmlStatement,
    StatementParseError,
    parse_dml,
    table_parts,
)
from dbt.adapters.deltamerge.statements.parse.maintenance import (
    ClusterByStatement,
    OptimizeStatement,
    ReorgStatement,
    SetPropertiesStatement,
    parse_maintenance,
)
from dbt.adapters.deltamerge.statements.parse.text import SqlText

__all__ = ["SqlText", "StatementParseError", "table_parts"]
_QUERY_STARTS = {TokenType.SELECT, TokenType.WITH, TokenType.VALUES, TokenType.FROM, TokenType.TABLE}


@dataclass(frozen=True)
class InsertStatement:
    """``INSERT INTO|OVERWRITE [TABLE] name [PARTITION (...)] [(columns) | BY NAME] query``."""

    parts: tuple[str, ...]
    columns: tuple[str, ...]
    static_partitions: tuple[tuple[str, str | None], ...]
    by_name: bool
    overwrite: bool
    query: str


@dataclass(frozen=True)
class RefusedStatement:
    """A form of INSERT the engine does not run: one statement writing several tables."""

    parts: tuple[str, ...]
    statement: str


Statement = (
    InsertStatement
    | RefusedStatement
    | DmlStatement
    | DdlStatement
    | SetPropertiesStatement
    | ReorgStatement
    | OptimizeStatement
    | ClusterByStatement
)


def parse_write_statement(text: SqlText) -> Statement | None:
    """The table write ``text`` is, or None when it writes no table (or does not parse: Spark
    reports a syntax error itself when it runs the statement). The families share the text's one
    lex and one parse.

    >>> insert = SqlText("insert into s.t (a, b) values (1, 'x')")
    >>> parse_write_statement(insert)  # doctest: +NORMALIZE_WHITESPACE
    InsertStatement(parts=('s', 't'), columns=('a', 'b'), static_partitions=(), by_name=False,
                    overwrite=False, query="values (1, 'x')")
    >>> overwrite = SqlText("INSERT OVERWRITE TABLE t PARTITION (p='a', q) SELECT 1")
    >>> parse_write_statement(overwrite).static_partitions
    (('p', 'a'), ('q', None))
    >>> parse_write_statement(SqlText("delete from `my s`.t where a = 1"))
    DeleteStatement(parts=('my s', 't'), alias=None, condition='a = 1')
    >>> parse_write_statement(SqlText("select 1")) is None
    True

    Raises:
        StatementParseError: a statement writing a table in a form not handled here.
    """
    for parser in PARSERS:
        statement = parser(text)
        if statement is not None:
            return statement
    return None


def parse_insert(text: SqlText) -> InsertStatement | RefusedStatement | None:
    """The ``INSERT`` ``text`` is, or None."""
    tree = text.tree
    if isinstance(tree, exp.MultitableInserts) and len(tree.expressions) > 1:
        first = tree.expressions[0].this
        return RefusedStatement(
            table_parts(first.this if isinstance(first, exp.Schema) else first),
            "FROM ... INSERT into several tables (one Delta commit writes one table)",
        )
    if isinstance(tree, exp.MultitableInserts) and tree.expressions:
        tree = tree.expressions[0]
    if not isinstance(tree, exp.Insert):
        return None
    target = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    columns = tuple(c.name for c in tree.this.expressions) if isinstance(tree.this, exp.Schema) else ()
    return InsertStatement(
        parts=table_parts(target),
        columns=columns,
        static_partitions=_partition_spec(target),
        by_name=bool(tree.args.get("by_name")),
        overwrite=bool(tree.args.get("overwrite")),
        query=_query_text(text),
    )


# The statement families, in the order they are tried (the module's docstring).
PARSERS: tuple[Callable[[SqlText], Statement | None], ...] = (
    parse_dml,
    parse_maintenance,
    parse_ddl,
    parse_insert,
)


def _partition_spec(target: exp.Expr) -> tuple[tuple[str, str | None], ...]:
    partition = target.args.get("partition")
    if partition is None:
        return ()
    spec: list[tuple[str, str | None]] = []
    for item in partition.expressions:
        if isinstance(item, exp.EQ) and isinstance(item.expression, exp.Literal):
            spec.append((item.this.name, item.expression.name))
        elif isinstance(item, exp.EQ) and isinstance(item.expression, exp.Null):
            raise StatementParseError(f"a NULL partition value ({item.sql(dialect=SPARK)}) is not supported")
        elif isinstance(item, exp.Column | exp.Identifier):
            spec.append((item.name, None))
        else:
            raise StatementParseError(f"partition spec item {item.sql(dialect=SPARK)} is not understood")
    return tuple(spec)


def _query_text(text: SqlText) -> str:
    """The query of an INSERT, exactly as written: the text from its first token on.

    What comes before the ``INSERT`` (a leading ``WITH`` or Hive's ``FROM``) belongs to the
    query: ``WITH x AS (...) INSERT INTO t SELECT ...`` inserts ``WITH x AS (...) SELECT ...``.

    >>> _query_text(SqlText("insert into t partition (p = 1) (a, b) (select 1, 2);"))
    '(select 1, 2)'
    >>> _query_text(SqlText("INSERT INTO TABLE `we(ird` BY NAME SELECT 1 AS a"))
    'SELECT 1 AS a'
    >>> _query_text(SqlText("with x as (select 1 a) insert into t select a from x"))
    'with x as (select 1 a) select a from x'
    >>> _query_text(SqlText("from s insert overwrite table t select a where a > 1"))
    'from s select a where a > 1'
    """
    sql, tokens = text.sql, text.tokens or []
    start = _insert_position(tokens)
    index = start + 1
    while index < len(tokens):
        token = tokens[index]
        if token.token_type in _QUERY_STARTS and not _is_table_keyword(tokens, index):
            return _joined(sql, tokens, start, token)
        if token.token_type == TokenType.L_PAREN:
            if index + 1 < len(tokens) and tokens[index + 1].token_type in _QUERY_STARTS:
                return _joined(sql, tokens, start, token)
            index = _after_parentheses(tokens, index)
            continue
        index += 1
    raise StatementParseError("the INSERT has no query (SELECT, VALUES, WITH, FROM or TABLE)")


def _insert_position(tokens: list[Token]) -> int:
    depth = 0
    for index, token in enumerate(tokens):
        depth += (token.token_type == TokenType.L_PAREN) - (token.token_type == TokenType.R_PAREN)
        if depth == 0 and token.token_type == TokenType.INSERT:
            return index
    raise StatementParseError("the statement has no top-level INSERT")


def _joined(sql: str, tokens: list[Token], insert: int, query: Token) -> str:
    """The text before the INSERT (if any) and the query after its header, as one query."""
    tail = sql[query.start :].strip().removesuffix(";").rstrip()
    if insert == 0:
        return tail
    if tokens[0].token_type == TokenType.WITH and query.token_type == TokenType.WITH:
        raise StatementParseError(
            "a WITH both before the INSERT and in its query; write the CTEs in one WITH"
        )
    head = sql[tokens[0].start : tokens[insert].start].strip()
    return f"{head} {tail}"


def _is_table_keyword(tokens: list[Token], index: int) -> bool:
    # `INSERT INTO TABLE t` / `INSERT OVERWRITE TABLE t`: TABLE is part of the header there.
    return tokens[index].token_type == TokenType.TABLE and tokens[index - 1].token_type in (
        TokenType.INTO,
        TokenType.OVERWRITE,
    )


def _after_parentheses(tokens: list[Token], index: int) -> int:
    depth = 0
    for position in range(index, len(tokens)):
        kind = tokens[position].token_type
        depth += (kind == TokenType.L_PAREN) - (kind == TokenType.R_PAREN)
        if depth == 0:
            return position + 1
    raise StatementParseError("unbalanced parentheses in the INSERT")
