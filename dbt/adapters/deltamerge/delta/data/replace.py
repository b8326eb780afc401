"""Writes that replace rows: the new rows go in, the rows they replace go out, in one version.

Two ways to say which existing rows are replaced:

- ``replace_where``: the rows satisfying a predicate (Delta's ``replaceWhere``; microbatch, SQL
  ``INSERT ... REPLACE WHERE``);
- ``replace_keys``: the rows whose key columns equal those of a new row (dbt's ``delete+insert``
  strategy: every existing row with such a key is deleted, every new row inserted, duplicates
  and all). Keys compare with ``=``, as dbt's ``DELETE ... WHERE (k) IN (SELECT k ...)``: an
  existing row whose key is null is never replaced. ``predicates`` (the model's
  ``incremental_predicates``, over the table's columns, plain or as ``DBT_INTERNAL_DEST.<column>``)
  narrow the rows replaced further.

Files holding no replaced row stay; the others are rewritten without those rows, beside the new
rows. With the change data feed on (or a definition change in the commit), the replaced rows are
``delete`` change rows and the new rows ``insert`` ones; rows kept from rewritten files are not
changes. The new rows are computed once (a local checkpoint): the keys that decide what is
replaced are those of the rows written, even when the model's query is not deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import conjunction, quote_identifier
from dbt.adapters.deltamerge.delta.data.align import align_to_schema
from dbt.adapters.deltamerge.delta.data.files import CHANGE_TYPE
from dbt.adapters.deltamerge.delta.data.read import read_files
from dbt.adapters.deltamerge.delta.data.stored import write_files, write_files_and_changes
from dbt.adapters.deltamerge.delta.errors import DeltaSchemaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.protocol import change_data_feed_enabled
from dbt.adapters.deltamerge.delta.log.schema import find_field
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.paths import local_path, table_path_of
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo
from dbt.adapters.deltamerge.delta.txn.metrics import write_metrics
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files

_REPLACED = "__deltamerge_replaced"
TARGET_ALIAS = "DBT_INTERNAL_DEST"
Marker = Callable[[DataFrame], DataFrame]


@dataclass(frozen=True)
class Replacement:
    """Which existing rows a write replaces: those satisfying ``predicate``, or (with ``keys``)
    those whose keys equal a new row's and that satisfy every one of ``predicates``."""

    location: TableLocation
    predicate: str | None = None
    keys: tuple[str, ...] = ()
    predicates: tuple[str, ...] = ()
    txn: tuple[str, int] | None = None
    extra_metrics: Mapping[str, int] | None = None

    @property
    def described(self) -> str:
        """The replaced rows in words of SQL, as the commit's ``predicate`` records them.

        >>> Replacement(TableLocation.of("/t"), keys=("id", "day"), predicates=("day > '2024'",)).described
        "((`id`, `day`) IN (the new rows' keys)) AND (day > '2024')"
        """
        if not self.keys:
            return self.predicate or "true"
        keys = ", ".join(quote_identifier(k) for k in self.keys)
        return conjunction([f"({keys}) IN (the new rows' keys)", *self.predicates])


def replace_rows(
    spark: SparkSession,
    df: DataFrame,
    replacement: Replacement,
    current: Snapshot,
    leading: list[dict[str, object]],
) -> WriteResult:
    """Write ``df`` into ``current``'s table, replacing the rows ``replacement`` names, as one version."""
    what = "delete+insert" if replacement.keys else "replace where"
    aligned = align_to_schema(df, current.schema, what=f"{what} into {replacement.location}")
    if replacement.keys:
        _check_keys(current.schema, replacement.keys)
        aligned = aligned.localCheckpoint(eager=True)  # the keys deciding are the keys written
    marked = _marker(aligned, replacement)
    touched = _files_with_replaced_rows(spark, current, marked)
    configuration = current.metadata.configuration
    params: dict[str, object] = {"mode": "Overwrite", "predicate": [replacement.described]}
    changes: list = []
    location, columns, schema = replacement.location, current.partition_columns, current.schema
    old = marked(read_files(spark, current, touched)) if touched else None
    if leading or change_data_feed_enabled(configuration):
        # Rows kept from rewritten files are not changes: the feed needs explicit change rows.
        rows = aligned.withColumn(CHANGE_TYPE, F.lit(None).cast("string"))
        rows = rows.unionByName(aligned.withColumn(CHANGE_TYPE, F.lit("insert")))
        if old is not None:
            kept = old.select(
                *current.schema.fieldNames(), F.when(F.col(_REPLACED), "delete").alias(CHANGE_TYPE)
            )
            rows = rows.unionByName(kept)
        # Deleted rows are only change rows; the writer keeps rows whose change type is null.
        written, changes = write_files_and_changes(rows, location, columns, configuration, schema)
    else:
        rows = aligned
        if old is not None:
            rows = rows.unionByName(old.where(~F.col(_REPLACED)).select(*current.schema.fieldNames()))
        written = write_files(rows, location, columns, configuration, schema)
    metrics = {**write_metrics(written, touched), **(replacement.extra_metrics or {})}
    info = CommitInfo("WRITE", params, metrics, txn=replacement.txn)
    actions = CommitActions(leading=leading, written=written, removed=touched, changes=changes)
    return commit_files(current, actions, CommitOptions(info))


def _marker(new_rows: DataFrame, replacement: Replacement) -> Marker:
    """A function marking existing rows with ``_REPLACED`` (true when the write replaces them)."""
    if not replacement.keys:
        predicate = replacement.predicate or "true"
        return lambda rows: rows.withColumn(_REPLACED, F.coalesce(F.expr(f"({predicate})"), F.lit(False)))
    keys = new_rows.select(*[quote_identifier(k) for k in replacement.keys]).distinct()
    keys = keys.toDF(*[f"__deltamerge_key{i}" for i in range(len(replacement.keys))]).withColumn(
        _REPLACED, F.lit(True)
    )
    narrowed = [F.coalesce(F.expr(f"({p})"), F.lit(False)) for p in replacement.predicates]

    def mark(rows: DataFrame) -> DataFrame:
        rows = rows.alias(TARGET_ALIAS)  # predicates may name the table's columns through dbt's alias
        on = _key_equality(rows, keys, replacement.keys)
        joined = rows.join(keys, on=on, how="left")
        replaced = F.coalesce(F.col(_REPLACED), F.lit(False))
        for condition in narrowed:
            replaced = replaced & condition
        return joined.withColumn(_REPLACED, replaced).drop(*[c for c in keys.columns if c != _REPLACED])

    return mark


def _key_equality(rows: DataFrame, keys: DataFrame, names: Sequence[str]) -> Column:
    pairs = [rows[quote_identifier(n)] == keys[f"__deltamerge_key{i}"] for i, n in enumerate(names)]
    on = pairs[0]
    for pair in pairs[1:]:
        on = on & pair
    return on


def _files_with_replaced_rows(spark: SparkSession, snapshot: Snapshot, marked: Marker) -> list[AddFile]:
    """Live files holding at least one row the write replaces."""
    if not snapshot.files:
        return []
    rows = marked(read_files(spark, snapshot, list(snapshot.files)).withColumn("__file", F.input_file_name()))
    hits = rows.where(F.col(_REPLACED)).select("__file").distinct().collect()
    hit = {table_path_of(row[0]) for row in hits}
    return [f for f in snapshot.files if local_path(snapshot.table_path, f.path) in hit]


def _check_keys(schema: T.StructType, keys: Sequence[str]) -> None:
    missing = [k for k in keys if find_field(schema, k) is None]
    if missing:
        names = ", ".join(f"`{k}`" for k in missing)
        raise DeltaSchemaError([f"unique_key {names} is not a column of the table"])
