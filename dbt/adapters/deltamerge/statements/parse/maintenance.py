"""Table property and maintenance statements on a Delta table, parsed (pure).

``ALTER TABLE t SET TBLPROPERTIES ('k' = 'v', ...)``, ``ALTER TABLE t UNSET TBLPROPERTIES
[IF EXISTS] ('k', ...)``, ``REORG TABLE t [WHERE partition_predicate] APPLY (PURGE)`` and
``OPTIMIZE t [WHERE partition_predicate] [ZORDER BY (c1, c2)]``.
sqlglot reads the first; the others it does not know, so they are matched here and only their
table name and predicate are handed to sqlglot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from dbt.adapters.deltamerge.statements.parse.dml import SPARK, StatementParseError, sql_of, table_parts
from dbt.adapters.deltamerge.statements.parse.text import SqlText


@dataclass(frozen=True)
class SetPropertiesStatement:
    """``ALTER TABLE t SET TBLPROPERTIES`` (``unset``: ``UNSET``, values empty)."""

    parts: tuple[str, ...]
    properties: tuple[tuple[str, str], ...]
    unset: bool = False
    if_exists: bool = False


@dataclass(frozen=True)
class ReorgStatement:
    """``REORG TABLE t [WHERE predicate] APPLY (PURGE)``, or with ``upgrade_uniform`` (the
    IcebergCompat version) ``REORG TABLE t APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION = 2))``."""

    parts: tuple[str, ...]
    condition: str | None
    upgrade_uniform: int | None = None


@dataclass(frozen=True)
class OptimizeStatement:
    """``OPTIMIZE t [WHERE predicate] [ZORDER BY (columns)]``."""

    parts: tuple[str, ...]
    condition: str | None
    zorder_by: tuple[str, ...] = ()
    full: bool = False


@dataclass(frozen=True)
class ClusterByStatement:
    """``ALTER TABLE t CLUSTER BY (columns)`` (``CLUSTER BY NONE``: no columns)."""

    parts: tuple[str, ...]
    columns: tuple[str, ...]


_CLUSTER_BY = re.compile(
    r"^\s*alter\s+table\s+(?P<table>.+?)\s+cluster\s+by\s+(?P<columns>none|\(.*\))\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_OPTIMIZE = re.compile(
    r"^\s*optimize\s+(?P<table>.+?)(?P<full>\s+full)?(?:\s+where\s+(?P<where>.+?))?"
    r"(?:\s+zorder\s+by\s*(?P<zorder>\(.*\)|[^()]+?))?\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
# Comments before a statement (dbt's query comment): the patterns below match what follows them.
_LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_UNSET = re.compile(
    r"^\s*alter\s+table\s+(?P<table>.+?)\s+unset\s+tblproperties\s+(?P<exists>if\s+exists\s+)?\((?P<keys>.*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_REORG = re.compile(
    r"^\s*reorg\s+table\s+(?P<table>.+?)(?:\s+where\s+(?P<where>.+?))?\s+apply\s*\((?P<how>.*)\)\s*;?\s*$",
    re.IGNORECASE | re.DOTALL,
)


def parse_maintenance(
    text: SqlText,
) -> SetPropertiesStatement | ReorgStatement | OptimizeStatement | ClusterByStatement | None:
    """The property, REORG or OPTIMIZE statement ``text`` is, or None (the forms sqlglot has no
    grammar for are recognised from the text).

    >>> parse_maintenance(SqlText("OPTIMIZE s.t WHERE d >= '2024-01-01' ZORDER BY (a, `b c`)"))
    OptimizeStatement(parts=('s', 't'), condition="d >= '2024-01-01'", zorder_by=('a', 'b c'), full=False)
    >>> parse_maintenance(SqlText("/* dbt */ -- note\\n optimize t zorder by a"))
    OptimizeStatement(parts=('t',), condition=None, zorder_by=('a',), full=False)
    >>> parse_maintenance(SqlText("OPTIMIZE t FULL")).full
    True
    >>> parse_maintenance(SqlText("alter table t cluster by none"))
    ClusterByStatement(parts=('t',), columns=())

    >>> parse_maintenance(SqlText("REORG TABLE s.t WHERE p = 'x' APPLY (PURGE)"))
    ReorgStatement(parts=('s', 't'), condition="p = 'x'", upgrade_uniform=None)
    >>> parse_maintenance(SqlText("alter table t unset tblproperties if exists ('a', b.c)"))
    SetPropertiesStatement(parts=('t',), properties=(('a', ''), ('b.c', '')), unset=True, if_exists=True)
    >>> parse_maintenance(SqlText("alter table t set tblproperties ('a' = 1)"))
    SetPropertiesStatement(parts=('t',), properties=(('a', '1'),), unset=False, if_exists=False)
    """
    tree = text.tree
    if isinstance(tree, exp.Alter) and len(tree.actions) == 1 and isinstance(tree.actions[0], exp.AlterSet):
        found = tree.actions[0].expressions
        if len(found) == 1 and isinstance(found[0], exp.Properties):
            return SetPropertiesStatement(table_parts(tree.this), property_pairs(found[0].expressions))
    sql = _LEADING_COMMENTS.sub("", text.sql, count=1)
    if (match := _OPTIMIZE.match(sql)) is not None:
        where, zorder = match["where"], match["zorder"]
        return OptimizeStatement(
            _table(match["table"]),
            sql_of(sqlglot.parse_one(where, dialect=SPARK)) if where else None,
            _names(zorder.strip().removeprefix("(").removesuffix(")")) if zorder else (),
            full=bool(match["full"]),
        )
    if (match := _CLUSTER_BY.match(sql)) is not None:
        columns = match["columns"].strip()
        names = () if columns.lower() == "none" else _names(columns[1:-1])
        return ClusterByStatement(_table(match["table"]), names)
    if (match := _UNSET.match(sql)) is not None:
        keys = tuple((k.strip().strip("'\"`"), "") for k in match["keys"].split(",") if k.strip())
        return SetPropertiesStatement(
            _table(match["table"]), keys, unset=True, if_exists=bool(match["exists"])
        )
    if (match := _REORG.match(sql)) is not None:
        where, how = match["where"], match["how"].strip()
        version = _upgrade_uniform(how, where)
        if version is None and how.upper() != "PURGE":
            raise StatementParseError(
                f"REORG TABLE ... APPLY ({how}): only APPLY (PURGE) and "
                "APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2)) are supported"
            )
        return ReorgStatement(
            _table(match["table"]),
            sql_of(sqlglot.parse_one(where, dialect=SPARK)) if where else None,
            version,
        )
    return None


_UPGRADE = re.compile(
    r"^upgrade\s+uniform\s*\(\s*iceberg_compat_version\s*=\s*(?P<version>\d+)\s*\)$", re.IGNORECASE
)


def _upgrade_uniform(how: str, where: str | None) -> int | None:
    """The IcebergCompat version ``APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION = n))`` names
    (None: another APPLY); versions other than 2 and a WHERE are refused as Delta refuses them.

    >>> _upgrade_uniform("UPGRADE UNIFORM ( ICEBERG_COMPAT_VERSION = 2 )", None)
    2
    """
    match = _UPGRADE.match(how)
    if match is None:
        return None
    version = int(match["version"])
    if version != 2:
        raise StatementParseError(
            f"[DELTA_ICEBERG_COMPAT_VIOLATION.COMPAT_VERSION_NOT_SUPPORTED] IcebergCompatVersion = {version} "
            "is not supported here: only ICEBERG_COMPAT_VERSION=2 is written"
        )
    if where:
        raise StatementParseError(
            "REORG TABLE ... WHERE ... APPLY (UPGRADE UNIFORM(...)): the upgrade rewrites the whole "
            "table; drop the WHERE"
        )
    return version


def _table(text: str) -> tuple[str, ...]:
    return table_parts(sqlglot.parse_one(text.strip(), dialect=SPARK, into=exp.Table))


def non_partition_column(condition: str, partition_columns: list[str]) -> str | None:
    """Delta's refusal of an OPTIMIZE or REORG predicate naming a column that is not a partition column.

    >>> non_partition_column("p = 'a' and q > 1", ["p"])
    "Predicate references non-partition column 'q'. Only the partition columns may be referenced: [p]"
    >>> non_partition_column("P = 'a'", ["p"]) is None
    True
    """
    allowed = {c.lower() for c in partition_columns}
    for column in sqlglot.parse_one(condition, dialect=SPARK).find_all(exp.Column):
        if column.name.lower() not in allowed:
            return (
                f"Predicate references non-partition column '{column.name}'. Only the partition columns "
                f"may be referenced: [{', '.join(partition_columns)}]"
            )
    return None


def _names(text: str) -> tuple[str, ...]:
    query = sqlglot.parse_one(f"SELECT {text}", dialect=SPARK)
    return tuple(e.name for e in query.expressions)


def property_pairs(properties: list[exp.Expr]) -> tuple[tuple[str, str], ...]:
    """``TBLPROPERTIES (...)``'s keys and values as Spark stores them: a quoted key or value as
    written inside its quotes, an unquoted dotted key as written, a boolean in lower case.

    >>> tree = sqlglot.parse_one("create table t tblproperties (delta.enableChangeDataFeed = TRUE, "
    ...     "'a' = 'X', b = 1.5, c.d = false)", dialect="spark")
    >>> property_pairs(tree.args["properties"].expressions)
    (('delta.enableChangeDataFeed', 'true'), ('a', 'X'), ('b', '1.5'), ('c.d', 'false'))
    """
    return tuple((_text(p.this), _text(p.args.get("value"))) for p in properties)


def _text(node: exp.Expr | None) -> str:
    if node is None:
        return ""
    if isinstance(node, (exp.Literal, exp.Identifier)):
        return str(node.this)
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    if isinstance(node, exp.Dot):
        return f"{_text(node.this)}.{_text(node.expression)}"
    return sql_of(node)
