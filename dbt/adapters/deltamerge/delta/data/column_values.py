"""Values a write computes for the columns it does not give: column defaults
(``allowColumnDefaults``), identity values (``identity``) and generated columns.

As Delta's writers: an insert that leaves a column out writes its default (``CURRENT_DEFAULT``
in the column's metadata), a new identity value, or its generation expression over the row's
other values (null otherwise); an update recomputes a generated column it does not assign from
the row's new values. A value a write does give is kept, and checked (``constraints``: a
generated column's value must equal its expression).

``substituted`` does this for a merge's SQL outputs; ``filled`` for a DataFrame.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import sqlglot
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.constraints import generated_columns
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log.identity import Identity, explicit_values_refused
from dbt.adapters.deltamerge.delta.log.schema import find_field

CURRENT_DEFAULT = "CURRENT_DEFAULT"
_SLOT = "__deltamerge_slot_{}__"


def column_defaults(schema: T.StructType) -> dict[str, str]:
    """``column -> default SQL`` of the columns with a default."""
    return {
        f.name: str(f.metadata[CURRENT_DEFAULT])
        for f in schema.fields
        if CURRENT_DEFAULT in (f.metadata or {})
    }


def computed_columns(schema: T.StructType) -> frozenset[str]:
    """Lower-cased names of the columns a write may leave out and still get a value for
    (generated, identity and default columns)."""
    names = {*generated_columns(schema), *column_defaults(schema)}
    names |= {f.name for f in schema.fields if Identity.of(f) is not None}
    return frozenset(n.lower() for n in names)


def substituted(expression: str, values: Mapping[str, str]) -> str:
    """``expression`` with each column it reads replaced by ``(values[column])`` (case-insensitive).

    >>> substituted("CAST(ts AS DATE)", {"ts": "`s`.`event_ts`"})
    'CAST((`s`.`event_ts`) AS DATE)'
    >>> substituted("a + B", {"a": "1", "b": "NULL"})
    '(1) + (NULL)'
    """
    lowered = {k.lower(): v for k, v in values.items()}
    slots: list[str] = []

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in lowered:
            slots.append(lowered[node.name.lower()])
            return exp.column(_SLOT.format(len(slots) - 1))
        return node

    tree = sqlglot.parse_one(expression, read="spark").transform(swap)
    text = tree.sql(dialect="spark")
    for index, sql in enumerate(slots):
        text = text.replace(_SLOT.format(index), f"({sql})", 1)
    return text


def default_value(field: T.StructField) -> str:
    """The SQL an insert writes for ``field`` when it leaves it out, identity aside."""
    metadata = field.metadata or {}
    if CURRENT_DEFAULT in metadata:
        return f"CAST(({metadata[CURRENT_DEFAULT]}) AS {field.dataType.simpleString()})"
    return "NULL"


def filled(df: DataFrame, schema: T.StructType, missing: Collection[str]) -> DataFrame:
    """``df`` (``schema``'s columns, by name) with the ``missing`` columns computed: defaults and
    identity values first, then generated columns from the row's values."""
    if not missing:
        return df
    lost = {m.lower() for m in missing}
    fields = [f for f in schema.fields if f.name.lower() in lost]
    identities = {f.name: i for f in fields if (i := Identity.of(f)) is not None}
    generated = {c: e for c, e in generated_columns(schema).items() if c.lower() in lost}
    plain = [f for f in fields if f.name not in identities and f.name not in generated]
    if plain:
        df = df.withColumns({f.name: F.expr(default_value(f)).cast(f.dataType) for f in plain})
    df = with_identity_values(df, identities)
    if generated:
        types = {f.name: f.dataType for f in fields}
        df = df.withColumns({c: F.expr(f"({e})").cast(types[c]) for c, e in generated.items()})
    return df.select(*[F.col(quote_identifier(f.name)) for f in schema.fields])


def regenerated(df: DataFrame, schema: T.StructType, assigned: Collection[str]) -> DataFrame:
    """``df`` after an update: each generated column not in ``assigned`` recomputed from the
    row's (new) values."""
    given = {a.lower() for a in assigned}
    again = {c: e for c, e in generated_columns(schema).items() if c.lower() not in given}
    if not again:
        return df
    types = {f.name: f.dataType for f in schema.fields}
    return df.withColumns({c: F.expr(f"({e})").cast(types[c]) for c, e in again.items()})


def declared(df: DataFrame, schema: T.StructType, definition: T.StructType) -> tuple[DataFrame, T.StructType]:
    """``df`` and the new table's schema with the ``definition``'s nullability and column metadata;
    declared columns ``df`` lacks are added (computed, else null)."""
    by_name = {f.name.lower(): f for f in definition.fields}
    fields = [
        T.StructField(f.name, f.dataType, d.nullable, {**f.metadata, **d.metadata})
        if (d := by_name.get(f.name.lower())) is not None
        else f
        for f in schema.fields
    ]
    missing = [d for d in definition.fields if find_field(schema, d.name) is None]
    # The definition's order (a CREATE TABLE's identity column first stays first), then any other.
    rank = {d.name.lower(): i for i, d in enumerate(definition.fields)}
    table = T.StructType(sorted([*fields, *missing], key=lambda f: rank.get(f.name.lower(), len(rank))))
    refused = explicit_values_refused(table, [f.name for f in schema.fields], "the new table")
    if refused:
        raise DeltaError("; ".join(refused) + " Leave the column out of the query. Nothing was written.")
    if not missing:  # (Spark Connect refuses an empty withColumns)
        return df, table
    placeholders = {d.name: F.lit(None).cast(d.dataType) for d in missing}
    return filled(df.withColumns(placeholders), table, [d.name for d in missing]), table


def with_identity_values(
    df: DataFrame, columns: Mapping[str, Identity], rows: Column | None = None
) -> DataFrame:
    """``df`` with a column per entry of ``columns`` (name -> identity): the identity's next
    values on the rows ``rows`` holds (all rows without it), null on the others.

    The filled rows are numbered in one window partition; the other rows stay where they are.
    """
    if not columns:
        return df
    fill = rows if rows is not None else F.lit(True)
    numbered = df.withColumn(_ROW, F.monotonically_increasing_id()).withColumn(
        _GROUP, F.when(fill, F.lit(-1)).otherwise(F.spark_partition_id())
    )
    rank = F.row_number().over(Window.partitionBy(_GROUP).orderBy(_ROW)) - 1
    for name, identity in columns.items():
        value = F.lit(identity.first) + rank * F.lit(identity.step)
        numbered = numbered.withColumn(name, F.when(F.col(_GROUP) == -1, value.cast("long")))
    return numbered.drop(_ROW, _GROUP)


_ROW, _GROUP = "__identity_row", "__identity_group"
