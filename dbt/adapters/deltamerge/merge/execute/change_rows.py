"""Change data of a merge, from the same rows that produce its output (Delta's ``MergeOutputGeneration``).

Each joined row already carries the code of the clause that takes it. With the change
data feed on, one projection turns it into an array of rows, exploded in the same pass
that writes the table: the output row (``_change_type`` null) where the row stays, plus
``update_preimage`` / ``update_postimage`` for an update, ``delete`` for a delete and
``insert`` for an insert. The writer routes rows with a change type to ``_change_data/``.
Target rows matched by several source rows (an unconditional delete) were de-duplicated
by target row before this, so their ``delete`` appears once; inserts are never merged.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.data import CHANGE_TYPE, aligned_columns
from dbt.adapters.deltamerge.merge.execute.frames import ACTION, DROP

_OLD = "__old_value_"


def output_with_changes(
    rows: DataFrame,
    *,
    outputs: Sequence[tuple[str, str]],
    target_alias: str,
    schema: T.StructType,
    codes: dict[str, list[str]],
    what: str,
    row_ids: Sequence[tuple[str, str]] = (),
) -> DataFrame:
    """The table's new rows and the change rows, as one DataFrame with ``_change_type``
    (``row_ids``: the stable row ids the new rows keep; change rows have none)."""
    from dbt.adapters.deltamerge.common.sql import qualified

    flat = rows.where(F.col(ACTION) != DROP).select(
        F.col(ACTION),
        *[F.expr(sql).alias(column) for column, sql in outputs],
        *[F.col(qualified(target_alias, f.name)).alias(f"{_OLD}{i}") for i, f in enumerate(schema.fields)],
        *[F.expr(sql).alias(column) for column, sql in row_ids],
    )
    new_values = aligned_columns(
        T.StructType(flat.schema.fields[1 : 1 + len(outputs)]), schema, what=what, store_assignment=True
    )
    old_values = [F.col(f"{_OLD}{i}").alias(f.name) for i, f in enumerate(schema.fields)]
    ids = [F.col(column) for column, _ in row_ids]
    none = [F.lit(None).cast("long").alias(column) for column, _ in row_ids]
    updates = codes["matched_updated"] + codes["not_matched_by_source_updated"]
    deletes = codes["matched_deleted"] + codes["not_matched_by_source_deleted"]
    main = _image([*new_values, *ids], None)
    pre, post = (
        _image([*old_values, *none], "update_preimage"),
        _image([*new_values, *none], "update_postimage"),
    )
    entries = (
        F.when(_is(updates), F.array(main, pre, post))
        .when(_is(deletes), F.array(_image([*old_values, *none], "delete")))
        .when(_is(codes["inserted"]), F.array(main, _image([*new_values, *none], "insert")))
        .otherwise(F.array(main))
    )
    return flat.select(F.explode(entries).alias("_row")).select("_row.*")


def _is(codes: list[str]) -> Column:
    return F.col(ACTION).isin(*codes) if codes else F.lit(False)


def _image(values: Sequence[Column], change_type: str | None) -> Column:
    return F.struct(*values, F.lit(change_type).cast("string").alias(CHANGE_TYPE))
