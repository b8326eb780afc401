"""SQL text helpers: the one place identifiers are quoted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import types as T


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


def column_definitions(schema: T.StructType) -> str:
    """A schema as the column list of ``CREATE TABLE`` (names quoted, nested types, comments).

    >>> column_definitions(T.StructType([
    ...     T.StructField("id", T.LongType(), False),
    ...     T.StructField("a b", T.StructType([T.StructField("x`y", T.DecimalType(10, 2))])),
    ... ]))
    '`id` BIGINT NOT NULL, `a b` STRUCT<`x``y`: DECIMAL(10,2)>'
    >>> column_definitions(T.StructType([T.StructField(
    ...     "tags", T.MapType(T.StringType(), T.ArrayType(T.DateType())), metadata={"comment": "it's"})]))
    "`tags` MAP<STRING, ARRAY<DATE>> COMMENT 'it\\\\'s'"
    """
    return ", ".join(_field_definition(f, separator=" ") for f in schema.fields)


def _field_definition(field: T.StructField, *, separator: str) -> str:
    text = f"{quote_identifier(field.name)}{separator}{type_sql(field.dataType)}"
    if not field.nullable:
        text += " NOT NULL"
    comment = (field.metadata or {}).get("comment")
    if comment:
        text += f" COMMENT {string_literal(str(comment))}"
    return text


def type_sql(data_type: T.DataType) -> str:
    """A type as Spark's SQL writes it (``STRUCT<`x`: INT>``, ``ARRAY<STRING>``)."""
    if isinstance(data_type, T.StructType):
        return "STRUCT<" + ", ".join(_field_definition(f, separator=": ") for f in data_type.fields) + ">"
    if isinstance(data_type, T.ArrayType):
        return f"ARRAY<{type_sql(data_type.elementType)}>"
    if isinstance(data_type, T.MapType):
        return f"MAP<{type_sql(data_type.keyType)}, {type_sql(data_type.valueType)}>"
    return data_type.simpleString().upper()


def string_literal(text: str) -> str:
    """A Spark SQL string literal: quoted, backslashes and quotes escaped.

    >>> print(string_literal("it's a \\\\ path"))
    'it\\'s a \\\\ path'
    """
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


class _CommandFallback(logging.Filter):
    """Drops sqlglot's "falling back to parsing as a Command" record, and only it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Falling back to parsing as a 'Command'" not in record.getMessage()


_FALLBACK_FILTER = _CommandFallback()


@contextmanager
def quiet_sqlglot() -> Iterator[None]:
    """sqlglot's "falling back to parsing as a Command" for a statement it has no grammar for
    (``OPTIMIZE``, ``VACUUM``), which the caller handles, kept off dbt's console. A filter on
    sqlglot's logger, added once: thread-safe (dbt runs models in threads), its other warnings kept."""
    logger = logging.getLogger("sqlglot")
    if _FALLBACK_FILTER not in logger.filters:
        logger.addFilter(_FALLBACK_FILTER)
    yield
