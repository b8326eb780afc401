"""Rows as a table stores them, written as its data files: the writes' common last step.

The rows are checked against the table's constraints in the same Spark job that writes them,
laid out as the table asks (optimized writes), renamed to physical names under column mapping,
given their stable row ids where the table keeps them, and written with statistics for every
indexed column (``files.write_data_files``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.constraints import Constraints, enforced
from dbt.adapters.deltamerge.delta.data.files import (
    CHANGE_TYPE,
    optimized,
    physical_columns,
    write_data_and_changes,
    write_data_files,
)
from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.iceberg_compat import ROW_TRACKING_FIELD_IDS, compat_v2
from dbt.adapters.deltamerge.delta.log.mapping import FIELD_ID, mapping_mode, physical_names
from dbt.adapters.deltamerge.delta.log.row_ids import STABLE_COLUMNS, materialized_columns
from dbt.adapters.deltamerge.delta.log.schema import contains_type
from dbt.adapters.deltamerge.delta.log.stats import DEFAULT_NUM_INDEXED_COLS
from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, WrittenFile


def write_files(
    df: DataFrame,
    table: TableLocation,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None = None,
    *,
    columns: T.StructType | None = None,
) -> list[WrittenFile]:
    """``df`` (in the table's column order) as data files; ``schema`` (the table's, with column
    mapping metadata) is needed when the table maps columns: files hold physical names.
    Every row is checked against the table's constraints in the same Spark job. ``columns``:
    ``df``'s own schema where the caller knows it (else Spark is asked, once)."""
    stored = _stored(df, columns or df.schema, partition_columns, configuration, schema)
    written = write_data_files(
        stored.rows,
        table,
        partition_columns=stored.partition_columns,
        num_indexed_cols=stored.num_indexed_cols,
        unindexed=stored.unindexed,
        written_schema=stored.schema,
    )
    return [replace(f, partition_values=stored.keyed(f.partition_values)) for f in written]


def write_files_and_changes(
    df: DataFrame,
    table: TableLocation,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None = None,
) -> tuple[list[WrittenFile], list[ChangeFile]]:
    """Rows with ``_change_type``: data files for null, change data files for the rest (the data
    rows checked against the table's constraints in the same Spark job)."""
    rows = F.col(CHANGE_TYPE).isNull()  # the data rows: only they are checked
    stored = _stored(df, df.schema, partition_columns, configuration, schema, checked=rows)
    data, changes = write_data_and_changes(
        stored.rows,
        table,
        partition_columns=stored.partition_columns,
        num_indexed_cols=stored.num_indexed_cols,
        unindexed=stored.unindexed,
        written_schema=stored.schema,
    )
    return (
        [replace(f, partition_values=stored.keyed(f.partition_values)) for f in data],
        [replace(c, partition_values=stored.keyed(c.partition_values)) for c in changes],
    )


@dataclass(frozen=True)
class _Stored:
    """Rows as the table's data files hold them, and what the file writer needs to know of them."""

    rows: DataFrame
    partition_columns: list[str]
    num_indexed_cols: int
    unindexed: frozenset[str]
    schema: T.StructType | None  # the rows' schema where it follows without Spark
    # Partition folders named otherwise than the log keys their values (materialized partitions).
    folder_keys: Mapping[str, str] = field(default_factory=dict)

    def keyed(self, values: Mapping[str, str | None]) -> dict[str, str | None]:
        """A written file's partition values (by folder name) keyed as the log keys them."""
        return {self.folder_keys.get(k, k): v for k, v in values.items()}


def _stored(
    df: DataFrame,
    columns: T.StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None,
    checked: Column | None = None,
) -> _Stored:
    """``df`` (whose schema is ``columns``) checked against the table's constraints (``checked``:
    the rows checked, all by default), laid out as the table asks, renamed as stored."""
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    constraints = Constraints.of(schema or T.StructType(), configuration)
    df = optimized(enforced(df, constraints, rows=checked), partition_columns, configuration)
    df, partition_columns, unindexed, written = _as_stored(
        df, columns, partition_columns, configuration, schema
    )
    _unshredded_variants(df, columns)
    if compat_v2(configuration) and partition_columns and schema is not None:
        return _materialized(df, partition_columns, num_indexed, unindexed, schema)
    return _Stored(df, partition_columns, num_indexed, unindexed, written)


def _materialized(
    rows: DataFrame, physical: list[str], num_indexed: int, unindexed: frozenset[str], schema: T.StructType
) -> _Stored:
    """Rows of an IcebergCompatV2 table (column mapping on): the partition columns stay in the data
    files (Iceberg readers read their values there, PROTOCOL.md asks for them), the folders are
    named by copies of them under their logical names (without statistics: the log keys them)."""
    names = physical_names(schema)  # logical -> physical
    logical = {stored: name for name, stored in names.items()}
    in_files = {*names.values(), CHANGE_TYPE}
    folders = {p: logical[p] if logical[p] not in in_files else f"_p_{p}" for p in physical}
    copies = [F.col(quote_identifier(p)).alias(folders[p]) for p in physical]
    return _Stored(
        rows.select("*", *copies),
        [folders[p] for p in physical],
        num_indexed,
        unindexed | frozenset(physical),
        None,
        {folder: p for p, folder in folders.items()},
    )


def _unshredded_variants(df: DataFrame, columns: T.StructType) -> None:
    """Have Spark write variant columns unshredded (a struct of ``value`` and ``metadata``), as
    PROTOCOL.md asks of a table without ``variantShredding`` (Spark 4.1+ shreds by default).
    ``columns``: the rows' schema before they are renamed as stored (the same types)."""
    if contains_type(columns, T.VariantType):
        df.sparkSession.conf.set("spark.sql.variant.writeShredding.enabled", "false")


def _as_stored(
    df: DataFrame,
    columns: T.StructType,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None,
) -> tuple[DataFrame, list[str], frozenset[str], T.StructType | None]:
    """``df`` (whose schema is ``columns``) and the partition columns as data files hold them, the
    columns without statistics, and the stored rows' schema where it follows from ``columns``
    without Spark (None under column mapping, whose casts Spark resolves): physical names with
    column mapping; stable row ids (``STABLE_ROW_ID``, ...) in the materialized columns of a table
    that preserves them, dropped otherwise."""
    hidden = materialized_columns(configuration)
    names = columns.names
    stable_pairs = [
        (internal, stored)
        for internal, stored in zip(STABLE_COLUMNS, hidden or (), strict=False)
        if internal in names
    ]
    stable = [F.col(internal).alias(stored) for internal, stored in stable_pairs]
    if compat_v2(configuration):  # field ids Iceberg reserves for row lineage
        stable = [
            F.col(internal).alias(
                stored, metadata={FIELD_ID: ROW_TRACKING_FIELD_IDS[STABLE_COLUMNS.index(internal)]}
            )
            for internal, stored in stable_pairs
        ]
    unindexed = frozenset(hidden or ())
    if mapping_mode(configuration) == "none":
        kept = [f for f in columns.fields if f.name not in STABLE_COLUMNS]
        written = stored_schema(columns, kept, stable_pairs)
        return (
            df.select(*[F.col(quote_identifier(f.name)) for f in kept], *stable),
            partition_columns,
            unindexed,
            written,
        )
    if schema is None:
        raise DeltaError("a write to a table with column mapping needs the table's schema (a bug)")
    extra = [F.col(quote_identifier(c)) for c in names if c == CHANGE_TYPE]
    physical = physical_names(schema)
    return (
        df.select(*physical_columns(schema), *extra, *stable),
        [physical[c] for c in partition_columns],
        unindexed,
        None,
    )


def stored_schema(
    columns: T.StructType, kept: list[T.StructField], stable: list[tuple[str, str]]
) -> T.StructType:
    """The schema of ``columns`` selected as ``kept`` then the ``stable`` (internal, stored) row-id
    columns renamed: what Spark's analysis of that projection gives (a column selected or aliased
    keeps its type, nullability and metadata).

    >>> cols = T.StructType([T.StructField("a", T.LongType()), T.StructField("_r", T.LongType(), False)])
    >>> stored_schema(cols, [cols["a"]], [("_r", "row_id_col")]).simpleString()
    'struct<a:bigint,row_id_col:bigint>'
    """
    by_name = {f.name: f for f in columns.fields}
    renamed = [
        T.StructField(
            stored, by_name[internal].dataType, by_name[internal].nullable, by_name[internal].metadata
        )
        for internal, stored in stable
    ]
    return T.StructType([*kept, *renamed])
