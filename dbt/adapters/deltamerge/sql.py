"""SQL text helpers: the one place identifiers are quoted."""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """A Spark SQL identifier, backquoted; a backquote inside is doubled.

    >>> quote_identifier("order id"), quote_identifier("we`ird")
    ('`order id`', '`we``ird`')
    """
    return "`" + name.replace("`", "``") + "`"


def qualified(alias: str, column: str) -> str:
    """``alias.column``, both quoted.

    >>> qualified("DBT_INTERNAL_DEST", "id")
    '`DBT_INTERNAL_DEST`.`id`'
    """
    return f"{quote_identifier(alias)}.{quote_identifier(column)}"


def conjunction(predicates: list[str]) -> str:
    """Predicates ANDed, each parenthesized.

    >>> conjunction(["a = 1", "b OR c"])
    '(a = 1) AND (b OR c)'
    """
    return " AND ".join(f"({p})" for p in predicates)
