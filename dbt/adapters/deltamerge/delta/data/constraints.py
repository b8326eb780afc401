"""Delta's write-time constraints: CHECK constraints, NOT NULL columns, column invariants and
generated columns (table features ``checkConstraints``, ``invariants``, ``generatedColumns``).

PROTOCOL.md: a writer must validate every row it writes against each ``delta.constraints.<name>``
table property, each non-nullable field, each ``delta.invariants`` of a column, and each generated
column (its value must equal its ``delta.generationExpression``), and fail the write otherwise.
``Constraints.of`` reads them from a table's schema and properties; ``enforced`` adds them to the
write's own Spark job: a filter whose condition raises Delta's error on the first violating row
(never a second scan). The texts are Delta's (``DELTA_VIOLATE_CONSTRAINT_WITH_VALUES``,
``DELTA_NOT_NULL_CONSTRAINT_VIOLATED``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from dbt.adapters.deltamerge.common.sql import quote_identifier

CONSTRAINT_PREFIX = "delta.constraints."
GENERATION_EXPRESSION = "delta.generationExpression"
INVARIANTS = "delta.invariants"
GENERATED_CHECK = "Generated Column"


@dataclass(frozen=True)
class Check:
    """A condition every written row must not make false: a CHECK constraint, an invariant, or a
    generated column's ``column <=> expression``."""

    name: str
    expression: str
    columns: tuple[str, ...]

    def message(self) -> str:
        """Delta's error text up to the row's values."""
        return (
            f"[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint {self.name} "
            f"{display(self.expression)} violated by row with values:"
        )


@dataclass(frozen=True)
class Constraints:
    """Everything a write to one table must check, from its schema and properties."""

    checks: tuple[Check, ...] = ()
    not_null: tuple[tuple[str, ...], ...] = ()

    @classmethod
    def of(cls, schema: T.StructType, configuration: Mapping[str, str]) -> Constraints:
        """The constraints of a table with ``schema`` and properties ``configuration``."""
        checks = [
            Check(name, expression, referenced_columns(expression))
            for name, expression in check_constraints(configuration).items()
        ]
        for field in schema.fields:
            invariant = _invariant(field)
            if invariant is not None:
                checks.append(Check(f"EXPRESSION({invariant})", invariant, referenced_columns(invariant)))
        for column, expression in generated_columns(schema).items():
            equal = f"{quote_identifier(column)} <=> ({expression})"
            checks.append(Check(GENERATED_CHECK, equal, (column, *referenced_columns(expression))))
        return cls(tuple(checks), tuple(not_null_paths(schema)))

    def __bool__(self) -> bool:
        return bool(self.checks or self.not_null)


def check_constraints(configuration: Mapping[str, str]) -> dict[str, str]:
    """``name -> expression`` of the table's CHECK constraints (``delta.constraints.<name>``).

    >>> check_constraints({"delta.constraints.positive": "id > 0", "delta.appendOnly": "true"})
    {'positive': 'id > 0'}
    """
    return {
        key[len(CONSTRAINT_PREFIX) :]: str(value)
        for key, value in configuration.items()
        if key.startswith(CONSTRAINT_PREFIX)
    }


def generated_columns(schema: T.StructType) -> dict[str, str]:
    """``column -> generation expression`` of the table's generated (top-level) columns."""
    return {
        f.name: str(f.metadata[GENERATION_EXPRESSION])
        for f in schema.fields
        if (f.metadata or {}).get(GENERATION_EXPRESSION)
    }


def not_null_paths(schema: T.StructType, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the non-nullable fields, into structs (not arrays or maps, as Delta checks them).

    >>> s = T.StructType([T.StructField("a", T.LongType(), False),
    ...     T.StructField("b", T.StructType([T.StructField("c", T.LongType(), False)]))])
    >>> not_null_paths(s)
    [('a',), ('b', 'c')]
    """
    found: list[tuple[str, ...]] = []
    for field in schema.fields:
        path = (*prefix, field.name)
        if not field.nullable:
            found.append(path)
        if isinstance(field.dataType, T.StructType):
            found.extend(not_null_paths(field.dataType, path))
    return found


def referenced_columns(expression: str) -> tuple[str, ...]:
    """The columns ``expression`` reads, in order of appearance, each once.

    >>> referenced_columns("id > 0 AND `from` = 'blue' OR id < -5")
    ('id', 'from')
    """
    seen: dict[str, None] = {}
    for column in sqlglot.parse_one(expression, read="spark").find_all(exp.Column):
        seen.setdefault(".".join(part.name for part in column.parts), None)
    return tuple(seen)


def display(expression: str) -> str:
    """The expression as Delta's messages show it: parenthesized, as Spark prints a predicate.

    >>> display("id > 0"), display("(id > 0)"), display("(a > 0) and (b > 0)")
    ('(id > 0)', '(id > 0)', '((a > 0) and (b > 0))')
    """
    text = expression.strip()
    parsed = sqlglot.parse_one(text, read="spark")
    return text if isinstance(parsed, exp.Paren) else f"({text})"


def _invariant(field: T.StructField) -> str | None:
    raw = (field.metadata or {}).get(INVARIANTS)
    if not raw:
        return None
    parsed = json.loads(raw) if isinstance(raw, str) else raw
    return str(parsed["expression"]["expression"])


def enforced(df: DataFrame, constraints: Constraints, *, rows: Column | None = None) -> DataFrame:
    """``df`` (the table's columns by their names) failing its Spark job on the first row that
    violates ``constraints``, with Delta's error; ``rows`` limits the checks to the rows it holds
    (the data rows among change rows)."""
    if not constraints:
        return df
    failures = [_not_null_failure(path) for path in constraints.not_null]
    failures.extend(_check_failure(check) for check in constraints.checks)
    if rows is not None:
        failures = [F.when(rows, failure) for failure in failures]
    return df.where(F.coalesce(*failures, F.lit(True)))


def _not_null_failure(path: tuple[str, ...]) -> Column:
    column = F.expr(".".join(quote_identifier(p) for p in path))
    parents = [F.expr(".".join(quote_identifier(p) for p in path[:i])) for i in range(1, len(path))]
    violated = column.isNull()
    for parent in parents:  # a nested field of a null struct is not checked (as Delta)
        violated = violated & parent.isNotNull()
    message = (
        f"[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: {'.'.join(path)}."
    )
    return F.when(violated, F.raise_error(F.lit(message)))


def _check_failure(check: Check) -> Column:
    values: list[Column] = [F.lit(check.message())]
    for name in check.columns:
        path = ".".join(quote_identifier(p) for p in name.split("."))
        values += [F.lit(f"\n - {name} : "), F.coalesce(F.expr(path).cast("string"), F.lit("null"))]
    # NULL satisfies a CHECK constraint (SQL's rule); only false fails.
    return F.when(~F.coalesce(F.expr(f"({check.expression})"), F.lit(True)), F.raise_error(F.concat(*values)))
