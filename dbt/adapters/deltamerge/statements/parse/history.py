"""Time travel and history statements, parsed (pure Python): ``DESCRIBE HISTORY``, ``DESCRIBE
DETAIL``, ``RESTORE``, and the ``VERSION AS OF`` / ``TIMESTAMP AS OF`` clauses of table references.

Delta's grammar: ``DESCRIBE HISTORY t [LIMIT n]``, ``DESCRIBE DETAIL t``, ``RESTORE [TABLE] t [TO]
{VERSION | TIMESTAMP} AS OF x``. A table reference in a query may carry ``VERSION AS OF n`` or
``TIMESTAMP AS OF expression`` (also ``FOR SYSTEM_VERSION`` / ``FOR SYSTEM_TIME AS OF``): each is
found with its place in the text (token offsets), so the reference can be replaced by the catalog
entry of that version and the rest of the query run as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
import sqlglot.errors
from sqlglot import exp
from sqlglot.tokens import Token

from dbt.adapters.deltamerge.statements.parse.dml import SPARK
from dbt.adapters.deltamerge.statements.parse.text import SqlText

_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)  # dbt's query comment first
_NAME = r"((?:`[^`]+`|[A-Za-z_][\w$]*)(?:\s*\.\s*(?:`[^`]+`|[A-Za-z_][\w$]*)){0,2})"
_HISTORY = re.compile(
    rf"^\s*(?:DESCRIBE|DESC)\s+HISTORY\s+{_NAME}(?:\s+LIMIT\s+(\d+))?\s*;?\s*$", re.I | re.S
)
_DETAIL = re.compile(rf"^\s*(?:DESCRIBE|DESC)\s+DETAIL\s+{_NAME}\s*;?\s*$", re.I | re.S)
_RESTORE = re.compile(
    rf"^\s*RESTORE\s+(?:TABLE\s+)?{_NAME}\s+(?:TO\s+)?(VERSION|TIMESTAMP)\s+AS\s+OF\s+(.+?)\s*;?\s*$",
    re.I | re.S,
)


@dataclass(frozen=True)
class AsOf:
    """A version, or a timestamp (its SQL expression), to travel to."""

    version: int | None = None
    timestamp: str | None = None


@dataclass(frozen=True)
class DescribeHistory:
    parts: tuple[str, ...]
    limit: int | None


@dataclass(frozen=True)
class DescribeDetail:
    parts: tuple[str, ...]


@dataclass(frozen=True)
class Restore:
    parts: tuple[str, ...]
    to: AsOf


HistoryStatement = DescribeHistory | DescribeDetail | Restore


def parse_history_statement(sql: str) -> HistoryStatement | None:
    """``DESCRIBE HISTORY`` / ``DETAIL`` or ``RESTORE`` parsed; None for any other statement.

    >>> parse_history_statement("describe history `s`.t limit 2")
    DescribeHistory(parts=('s', 't'), limit=2)
    >>> parse_history_statement("RESTORE TABLE s.t TO VERSION AS OF 3")
    Restore(parts=('s', 't'), to=AsOf(version=3, timestamp=None))
    >>> parse_history_statement("restore s.t timestamp as of '2026-01-01'").to.timestamp
    "'2026-01-01'"
    >>> parse_history_statement("/* {dbt} */\\n DESCRIBE DETAIL s.t")
    DescribeDetail(parts=('s', 't'))
    >>> parse_history_statement("describe s.t") is None
    True
    """
    sql = _COMMENTS.sub("", sql, count=1)
    if found := _HISTORY.match(sql):
        return DescribeHistory(_parts(found.group(1)), int(found.group(2)) if found.group(2) else None)
    if found := _DETAIL.match(sql):
        return DescribeDetail(_parts(found.group(1)))
    if found := _RESTORE.match(sql):
        return Restore(_parts(found.group(1)), _as_of(found.group(2), found.group(3)))
    return None


def may_be_history_statement(sql: str) -> bool:
    """A cheap test: the statement starts with DESCRIBE/DESC HISTORY|DETAIL or RESTORE."""
    sql = _COMMENTS.sub("", sql, count=1)
    return re.match(r"^\s*(?:(?:DESCRIBE|DESC)\s+(?:HISTORY|DETAIL)\b|RESTORE\b)", sql, re.I) is not None


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("`") for p in re.findall(r"`[^`]+`|[^.\s]+", name))


def _as_of(kind: str, value: str) -> AsOf:
    if kind.upper() == "VERSION":
        if not value.isdigit():
            raise ValueError(f"VERSION AS OF takes a version number, not {value!r}")
        return AsOf(version=int(value))
    return AsOf(timestamp=value)


@dataclass(frozen=True)
class TravelReference:
    """A table reference with ``AS OF``: its name, where it is, what it travels to."""

    parts: tuple[str, ...]
    start: int  # offsets in the statement of the name's first character ...
    end: int  # ... and one past the AS OF value's last
    to: AsOf


def travel_references(text: SqlText) -> list[TravelReference]:
    """Every table reference with ``VERSION`` / ``TIMESTAMP AS OF`` in ``text``, in order.

    sqlglot's parse says which references travel and what their value is; the value's end in the
    text is the shortest run of tokens after ``AS OF`` that parses to the same expression.

    >>> refs = travel_references(SqlText("select * from s.t version as of 2 x join u on 1=1"))
    >>> [(r.parts, r.to) for r in refs]
    [(('s', 't'), AsOf(version=2, timestamp=None))]
    >>> sql = "select * from `s`.`t` FOR SYSTEM_TIME AS OF current_timestamp() - interval 1 hour x"
    >>> [sql[r.start : r.end] for r in travel_references(SqlText(sql))]
    ['`s`.`t` FOR SYSTEM_TIME AS OF current_timestamp() - interval 1 hour']
    """
    sql = text.sql
    if not re.search(r"\bAS\s+OF\b", sql, re.I):
        return []
    trees, tokens = text.trees, text.tokens
    if trees is None or tokens is None:
        return []
    found = []
    for tree in trees:
        for table in tree.find_all(exp.Table):
            version = table.args.get("version")
            if not isinstance(version, exp.Version) or not table.parts or "start" not in table.parts[0].meta:
                continue
            start = int(table.parts[0].meta["start"])
            end = _value_end(sql, tokens, int(table.parts[-1].meta["end"]), version.expression)
            kind = "VERSION" if str(version.this).upper() == "VERSION" else "TIMESTAMP"
            value = sql[_after_as_of(tokens, int(table.parts[-1].meta["end"])) : end]
            found.append(TravelReference(tuple(p.name for p in table.parts), start, end, _as_of(kind, value)))
    return sorted(found, key=lambda r: r.start)


def _after_as_of(tokens: list[Token], name_end: int) -> int:
    """The offset of the first character after the ``AS OF`` that follows a name ending at ``name_end``."""
    for i, token in enumerate(tokens):
        if token.start > name_end and token.text.upper() == "OF" and tokens[i - 1].text.upper() == "AS":
            return tokens[i + 1].start if i + 1 < len(tokens) else token.end + 1
    raise ValueError("AS OF without a value")


def _value_end(sql: str, tokens: list[Token], name_end: int, value: exp.Expr) -> int:
    """One past the last character of the AS OF value (the shortest token run parsing to ``value``)."""
    begin = _after_as_of(tokens, name_end)
    wanted = value.sql(dialect=SPARK)
    following = [t for t in tokens if t.start >= begin]
    for token in following:
        text = sql[begin : token.end + 1]
        try:
            if sqlglot.parse_one(text, dialect=SPARK).sql(dialect=SPARK) == wanted:
                return token.end + 1
        except sqlglot.errors.SqlglotError:
            continue
    raise ValueError(f"cannot find the end of AS OF {wanted}")
