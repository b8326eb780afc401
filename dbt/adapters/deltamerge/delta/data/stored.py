"""Rows as a table stores them, written as its data files: the writes' common last step.

The rows are checked against the table's constraints in the same Spark job that writes them,
laid out as the table asks (optimized writes), renamed to physical names under column mapping,
given their stable row ids where the table keeps them, and written with statistics for every
indexed column (``files.write_data_files``).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame
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
from dbt.adapters.deltamerge.delta.log.mapping import mapping_mode, physical_names
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
) -> list[WrittenFile]:
    """``df`` (in the table's column order) as data files; ``schema`` (the table's, with column
    mapping metadata) is needed when the table maps columns: files hold physical names.
    Every row is checked against the table's constraints in the same Spark job."""
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    df = optimized(
        enforced(df, Constraints.of(schema or T.StructType(), configuration)),
        partition_columns,
        configuration,
    )
    df, partition_columns, unindexed = _as_stored(df, partition_columns, configuration, schema)
    _unshredded_variants(df)
    return write_data_files(
        df, table, partition_columns=partition_columns, num_indexed_cols=num_indexed, unindexed=unindexed
    )


def write_files_and_changes(
    df: DataFrame,
    table: TableLocation,
    partition_columns: list[str],
    configuration: Mapping[str, str],
    schema: T.StructType | None = None,
) -> tuple[list[WrittenFile], list[ChangeFile]]:
    """Rows with ``_change_type``: data files for null, change data files for the rest (the data
    rows checked against the table's constraints in the same Spark job)."""
    num_indexed = int(configuration.get("delta.dataSkippingNumIndexedCols", DEFAULT_NUM_INDEXED_COLS))
    constraints = Constraints.of(schema or T.StructType(), configuration)
    df = optimized(
        enforced(df, constraints, rows=F.col(CHANGE_TYPE).isNull()), partition_columns, configuration
    )
    df, partition_columns, unindexed = _as_stored(df, partition_columns, configuration, schema)
    _unshredded_variants(df)
    return write_data_and_changes(
        df, table, partition_columns=partition_columns, num_indexed_cols=num_indexed, unindexed=unindexed
    )


def _unshredded_variants(df: DataFrame) -> None:
    """Have Spark write variant columns unshredded (a struct of ``value`` and ``metadata``), as
    PROTOCOL.md asks of a table without ``variantShredding`` (Spark 4.1+ shreds by default)."""
    if contains_type(df.schema, T.VariantType):
        df.sparkSession.conf.set("spark.sql.variant.writeShredding.enabled", "false")


def _as_stored(
    df: DataFrame, partition_columns: list[str], configuration: Mapping[str, str], schema: T.StructType | None
) -> tuple[DataFrame, list[str], frozenset[str]]:
    """``df`` and the partition columns as data files hold them, and the columns without
    statistics: physical names with column mapping; stable row ids (``STABLE_ROW_ID``, ...) in the
    materialized columns of a table that preserves them, dropped otherwise."""
    hidden = materialized_columns(configuration)
    stable = [
        F.col(internal).alias(stored)
        for internal, stored in zip(STABLE_COLUMNS, hidden or (), strict=False)
        if internal in df.columns
    ]
    unindexed = frozenset(hidden or ())
    if mapping_mode(configuration) == "none":
        kept = [F.col(quote_identifier(c)) for c in df.columns if c not in STABLE_COLUMNS]
        return df.select(*kept, *stable), partition_columns, unindexed
    if schema is None:
        raise DeltaError("a write to a table with column mapping needs the table's schema (a bug)")
    extra = [F.col(quote_identifier(c)) for c in df.columns if c == CHANGE_TYPE]
    names = physical_names(schema)
    return (
        df.select(*physical_columns(schema), *extra, *stable),
        [names[c] for c in partition_columns],
        unindexed,
    )
