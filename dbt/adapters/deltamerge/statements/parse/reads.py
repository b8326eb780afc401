"""The catalog names a statement reads (pure Python, sqlglot's Spark dialect).

A read through the catalog must see a Delta table's latest version (``statements/fresh.py``): for
that we need the names a statement, a model's query or a view's text reads, before Spark plans
it. A name a ``WITH`` defines is no table; the table a ``CREATE`` makes is not read; a statement
that is no query (``SHOW``, ``DESCRIBE``, ``SET``, ...) reads none. Text sqlglot cannot parse is
scanned for the names after ``FROM``, ``JOIN`` and ``TABLE`` instead: a name too many costs one
catalog look-up, a name missed would be a stale read.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.tokens import TokenType

from dbt.adapters.deltamerge.statements.parse.dml import table_parts
from dbt.adapters.deltamerge.statements.parse.text import SqlText

# A catalog name as the session resolves it: (schema, identifier), lower case; schema "" when the
# statement leaves it to the session's current database.
Name = tuple[str, str]

_LEADING = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*([a-z]+)", re.IGNORECASE | re.DOTALL)
_READING = {"select", "with", "from", "table", "values", "insert", "merge", "update", "delete"}
_READING |= {"create", "replace", "refresh", "cache"}
_DEFINING = {"create", "replace", "drop", "alter"}
_NAME_STARTS = {TokenType.FROM, TokenType.JOIN, TokenType.TABLE, TokenType.INTO, TokenType.USING}


def may_read_tables(sql: str) -> bool:
    """Whether ``sql`` can read a catalog table (a cheap text test: its leading keyword).

    >>> may_read_tables("-- a\\n(select 1)"), may_read_tables("show tables in s")
    (True, False)
    """
    found = _LEADING.match(sql)
    return found is not None and found.group(1).lower() in _READING


def may_define_objects(sql: str) -> bool:
    """Whether ``sql`` can create, replace, alter or drop a catalog object (its leading keyword).

    >>> may_define_objects("create or replace view v as select 1"), may_define_objects("select 1")
    (True, False)
    """
    found = _LEADING.match(sql)
    return found is not None and found.group(1).lower() in _DEFINING


def read_names(text: SqlText) -> frozenset[Name]:
    """The catalog tables and views ``text`` names, but the ones it creates and its CTEs.

    >>> sorted(read_names(SqlText("with a as (select * from raw.events) select * from a join `S`.`T` on 1")))
    [('raw', 'events'), ('s', 't')]
    >>> sorted(read_names(SqlText("create or replace view s.v as select * from spark_catalog.s.w, range(3)")))
    [('s', 'w')]
    >>> sorted(read_names(SqlText("select * from other_catalog.s.t, events")))
    [('', 'events')]
    >>> read_names(SqlText("show tables"))
    frozenset()
    """
    if not may_read_tables(text.sql):
        return frozenset()
    trees = text.trees
    if trees is None or any(isinstance(t, exp.Command) for t in trees):
        return _scanned_names(text)
    names: set[Name] = set()
    for tree in trees:
        defined = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
        created = {id(_created_table(tree))} if isinstance(tree, exp.Create) else set()
        for table in tree.find_all(exp.Table):
            name = _name(table_parts(table))
            if name is None or id(table) in created or (not name[0] and name[1] in defined):
                continue
            names.add(name)
    return frozenset(names)


def _created_table(tree: exp.Create) -> exp.Expr | None:
    target = tree.this
    return target.this if isinstance(target, exp.Schema) else target


def _name(parts: tuple[str, ...]) -> Name | None:
    """The session catalog's name of a table reference, None for another catalog's or no name."""
    if len(parts) == 3 and parts[0].lower() == "spark_catalog":
        parts = parts[1:]
    if len(parts) == 2:
        return parts[0].lower(), parts[1].lower()
    if len(parts) == 1 and parts[0]:
        return "", parts[0].lower()
    return None


def _scanned_names(text: SqlText) -> frozenset[Name]:
    """The dotted names right after ``FROM``, ``JOIN``, ``TABLE``, ``INTO`` and ``USING`` tokens.

    >>> sorted(_scanned_names(SqlText("select * from a.b lateral view explode(x) t join `c` using (k)")))
    [('', 'c'), ('a', 'b')]
    """
    tokens = text.tokens
    if tokens is None:
        return frozenset()
    names: set[Name] = set()
    for i, token in enumerate(tokens):
        if token.token_type not in _NAME_STARTS:
            continue
        parts: list[str] = []
        j = i + 1
        while j < len(tokens) and tokens[j].token_type in (TokenType.VAR, TokenType.IDENTIFIER):
            parts.append(tokens[j].text)
            if j + 1 < len(tokens) and tokens[j + 1].token_type == TokenType.DOT:
                j += 2
                continue
            break
        name = _name(tuple(parts))
        if name is not None:
            names.add(name)
    return frozenset(names)
