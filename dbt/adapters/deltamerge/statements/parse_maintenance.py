"""Table property and maintenance statements on a Delta table, parsed (pure).

``ALTER TABLE t SET TBLPROPERTIES ('k' = 'v', ...)``, ``ALTER TABLE t UNSET TBLPROPERTIES
[IF EXISTS] ('k', ...)`` and ``REORG TABLE t [WHERE partition_predicate] APPLY (PURGE)``.
sqlglot reads the first; the others it does not know, so they are matched here and only their
table name and predicate are handed to sqlglot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from dbt.adapters.deltamerge.statements.parse_dml import SPARK, StatementParseError, sql_of, table_parts


@dataclass(frozen=True)
class SetPropertiesStatement:
    """``ALTER TABLE t SET TBLPROPERTIES`` (``unset``: ``UNSET``, values empty)."""

    parts: tuple[str, ...]
    properties: tuple[tuple[str, str], ...]
    unset: bool = False
    if_exists: bool = False


@dataclass(frozen=True)
class ReorgStatement:
    """``REORG TABLE t [WHERE predicate] APPLY (PURGE)``."""

    parts: tuple[str, ...]
    condition: str | None


_UNSET = re.compile(
    r"^\s*alter\s+table\s+(?P<table>.+?)\s+unset\s+tblproperties\s+(?P<exists>if\s+exists\s+)?\((?P<keys>.*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_REORG = re.compile(
    r"^\s*reorg\s+table\s+(?P<table>.+?)(?:\s+where\s+(?P<where>.+?))?\s+apply\s*\((?P<how>[^)]*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def parse_maintenance(sql: str, tree: exp.Expr | None) -> SetPropertiesStatement | ReorgStatement | None:
    """The property or REORG statement ``sql`` is, or None.

    >>> parse_maintenance("REORG TABLE s.t WHERE p = 'x' APPLY (PURGE)", None)
    ReorgStatement(parts=('s', 't'), condition="p = 'x'")
    >>> parse_maintenance("alter table t unset tblproperties if exists ('a', b.c)", None)
    SetPropertiesStatement(parts=('t',), properties=(('a', ''), ('b.c', '')), unset=True, if_exists=True)
    >>> tree = sqlglot.parse_one("alter table t set tblproperties ('a' = 1)", dialect="spark")
    >>> parse_maintenance("", tree)
    SetPropertiesStatement(parts=('t',), properties=(('a', '1'),), unset=False, if_exists=False)
    """
    if isinstance(tree, exp.Alter) and len(tree.actions) == 1 and isinstance(tree.actions[0], exp.AlterSet):
        found = tree.actions[0].expressions
        if len(found) == 1 and isinstance(found[0], exp.Properties):
            pairs = tuple((_text(p.this), _text(p.args.get("value"))) for p in found[0].expressions)
            return SetPropertiesStatement(table_parts(tree.this), pairs)
    if (match := _UNSET.match(sql)) is not None:
        keys = tuple((k.strip().strip("'\"`"), "") for k in match["keys"].split(",") if k.strip())
        return SetPropertiesStatement(
            _table(match["table"]), keys, unset=True, if_exists=bool(match["exists"])
        )
    if (match := _REORG.match(sql)) is not None:
        if match["how"].strip().upper() != "PURGE":
            raise StatementParseError(
                f"REORG TABLE ... APPLY ({match['how']}): only APPLY (PURGE) is supported"
            )
        where = match["where"]
        return ReorgStatement(
            _table(match["table"]), sql_of(sqlglot.parse_one(where, dialect=SPARK)) if where else None
        )
    return None


def _table(text: str) -> tuple[str, ...]:
    return table_parts(sqlglot.parse_one(text.strip(), dialect=SPARK, into=exp.Table))


def _text(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, (exp.Literal, exp.Identifier)):
        return str(node.this)
    return sql_of(node)
