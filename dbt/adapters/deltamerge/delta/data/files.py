"""Writing a Spark DataFrame as new data files of a Delta table.

On a local disk Spark writes parquet into a staging folder inside the table (hidden by its
``_`` prefix, so no Delta or Hive reader lists it); each file is then renamed to its final place
under its partition folder. An object store has no rename: there Spark writes into a folder of
the table named for the write (``w<uuid>/``, then Spark's partition folders), where the files stay
(``add.path`` names them there, as Delta allows any relative path); a write that fails or is
killed leaves files no commit names, which VACUUM removes as any orphan. Each file is described by
an ``add`` action with statistics from its footer; files become part of the table only when a
commit references them.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.faults import crash_point
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.mapping import field_id, physical_name, physical_type
from dbt.adapters.deltamerge.delta.log.stats import stats_from_metadata, stats_to_json
from dbt.adapters.deltamerge.delta.paths import encode_add_path, parse_partition_folder
from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, WrittenFile

STAGING_DIR = "_deltamerge_staging"
CHANGE_DATA_DIR = "_change_data"
CHANGE_TYPE = "_change_type"
_CDC_PARTITION = "__is_cdc"
OPTIMIZE_WRITE = "delta.autoOptimize.optimizeWrite"


def optimized(df: DataFrame, partition_columns: list[str], configuration: Mapping[str, str]) -> DataFrame:
    """``df`` as an optimized write (``delta.autoOptimize.optimizeWrite``) writes it: rebalanced by
    the partition columns into Spark's adaptive partitions (a few right-sized files per partition,
    not one per task); unchanged when the table does not ask for it."""
    if str(configuration.get(OPTIMIZE_WRITE, "false")).lower() != "true":
        return df
    # Columns, not names: a hint's text parameter is parsed (a name with a space would not parse).
    return df.hint("rebalance", *[F.col(quote_identifier(c)) for c in partition_columns])


def write_data_and_changes(
    df: DataFrame,
    table: TableLocation,
    *,
    partition_columns: list[str],
    num_indexed_cols: int,
    unindexed: frozenset[str] = frozenset(),
    written_schema: T.StructType | None = None,
) -> tuple[list[WrittenFile], list[ChangeFile]]:
    """Write rows with a ``_change_type`` column in one Spark job, as Delta's writer does.

    Rows whose ``_change_type`` is null are the table's new data; the others are change
    rows (``insert``, ``update_preimage``, ``update_postimage``, ``delete``), written
    under ``_change_data/`` in the same partition layout. ``written_schema``: ``df``'s schema
    where the caller knows it (else Spark is asked).
    """
    flagged = df.withColumn(_CDC_PARTITION, F.col(CHANGE_TYPE).isNotNull())
    staging, kept = _write_folder(table)
    writer = flagged.write.mode("error").option("compression", "snappy")
    try:
        crash_point("before_data_files")
        writer.partitionBy(_CDC_PARTITION, *partition_columns).parquet(staging)
        crash_point("after_staging")
        skip = {*partition_columns, CHANGE_TYPE, _CDC_PARTITION, *unindexed}
        fields = (written_schema or df.schema).fields
        data_schema = T.StructType([f for f in fields if f.name not in skip])
        data: list[WrittenFile] = []
        changes: list[ChangeFile] = []
        for relative in _staged_files(table, staging):
            flag, _, rest = relative.partition(os.sep)
            if kept:
                at = os.path.join(os.path.basename(staging), relative)
                if flag == f"{_CDC_PARTITION}=true":
                    changes.append(_describe_change(table, at, rest, partition_columns))
                else:
                    data.append(_describe(table, at, rest, partition_columns, data_schema, num_indexed_cols))
            elif flag == f"{_CDC_PARTITION}=true":
                changes.append(_place_change(staging, table, relative, rest, partition_columns))
            else:
                placed = _place(
                    staging, table, rest, partition_columns, data_schema, num_indexed_cols, relative
                )
                data.append(placed)
        return _without_empty(table, data), changes
    except BaseException:
        if kept:
            table.store.delete_tree(staging)
        raise
    finally:
        if not kept:
            table.store.delete_tree(staging)
            _remove_if_empty(table, os.path.join(table.path, STAGING_DIR))


def _place_change(
    staging: str, table: TableLocation, relative: str, rest: str, partition_columns: list[str]
) -> ChangeFile:
    destination = os.path.join(CHANGE_DATA_DIR, rest)
    final = os.path.join(table.path, destination)
    table.store.make_dirs(os.path.dirname(final))
    table.store.rename(os.path.join(staging, relative), final)
    return _describe_change(table, destination, rest, partition_columns)


def _describe_change(
    table: TableLocation, at: str, partitioned: str, partition_columns: list[str]
) -> ChangeFile:
    """The ``cdc`` action of the change file at ``at`` (relative to the table; ``partitioned``: its
    path from its partition folders on)."""
    folder = os.path.dirname(partitioned)
    values = parse_partition_folder(folder, partition_columns) if partition_columns else {}
    return ChangeFile(
        encode_add_path(at), table.store.size_and_mtime(os.path.join(table.path, at))[0], values
    )


def _write_folder(table: TableLocation) -> tuple[str, bool]:
    """Where Spark writes a new set of files, and whether they stay there (an object store) or are
    staged to be renamed into their partition folders (a local disk)."""
    if table.store.object_store:
        return os.path.join(table.path, f"w{uuid.uuid4().hex}"), True
    return os.path.join(table.path, STAGING_DIR, uuid.uuid4().hex), False


def _without_empty(table: TableLocation, placed: list[WrittenFile]) -> list[WrittenFile]:
    # Spark writes one empty file for an empty result; the log needs none.
    for empty in (f for f in placed if f.num_records == 0):
        table.store.delete_file(os.path.join(table.path, unquote(empty.path)))
    return [f for f in placed if f.num_records > 0]


def write_data_files(
    df: DataFrame,
    table: TableLocation,
    *,
    partition_columns: list[str],
    num_indexed_cols: int,
    unindexed: frozenset[str] = frozenset(),
    written_schema: T.StructType | None = None,
) -> list[WrittenFile]:
    """Write ``df`` (already in table column order and types) as parquet files of the table
    (``unindexed``: columns not in the schema, such as materialized row ids: no statistics;
    ``written_schema``: ``df``'s schema where the caller knows it, else Spark is asked)."""
    staging, kept = _write_folder(table)
    writer = df.write.mode("error").option("compression", "snappy")
    if partition_columns:
        writer = writer.partitionBy(*partition_columns)
    try:
        crash_point("before_data_files")
        writer.parquet(staging)
        crash_point("after_staging")
        skip = {*partition_columns, *unindexed}
        fields = (written_schema or df.schema).fields
        data_schema = T.StructType([f for f in fields if f.name not in skip])
        prefix = os.path.basename(staging)
        placed = [
            _describe(table, os.path.join(prefix, rel), rel, partition_columns, data_schema, num_indexed_cols)
            if kept
            else _place(staging, table, rel, partition_columns, data_schema, num_indexed_cols)
            for rel in _staged_files(table, staging)
        ]
        return _without_empty(table, placed)
    except BaseException:
        if kept:
            table.store.delete_tree(staging)
        raise
    finally:
        if not kept:
            table.store.delete_tree(staging)
            _remove_if_empty(table, os.path.join(table.path, STAGING_DIR))


def _staged_files(table: TableLocation, root: str) -> list[str]:
    """The parquet files Spark wrote under ``root`` in ``table`` (relative paths, sorted)."""
    found, seen = [], False
    for folder, dirs, names in table.store.walk(root):
        seen = seen or bool(dirs or names)
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    # Spark creates the folder of every write it finishes, even of an empty result (one empty
    # file; on S3, S3A's marker of the folder): a missing one means Spark's storage is not this
    # process's at this path.
    if not seen and not table.store.is_dir(root):
        raise StorageError(
            f"Spark wrote the data files to {root}, which this dbt process cannot see: the dbt process "
            "and Spark must share the table's storage at the same paths. Nothing was committed."
        )
    return found


def _place(
    staging: str,
    table: TableLocation,
    relative: str,
    partition_columns: list[str],
    data_schema: T.StructType,
    num_indexed_cols: int,
    staged: str | None = None,
) -> WrittenFile:
    """Move a staged file to ``relative`` in the table and describe it (``staged``: its staging path)."""
    final = os.path.join(table.path, relative)
    table.store.make_dirs(os.path.dirname(final))
    table.store.rename(os.path.join(staging, staged or relative), final)
    crash_point("mid_placement")
    return _describe(table, relative, relative, partition_columns, data_schema, num_indexed_cols)


def _describe(
    table: TableLocation,
    at: str,
    partitioned: str,
    partition_columns: list[str],
    data_schema: T.StructType,
    num_indexed_cols: int,
) -> WrittenFile:
    """The ``add`` of the data file at ``at`` (relative to the table; ``partitioned``: its path from
    its partition folders on), with statistics from its footer."""
    footer, size = table.store.parquet_footer(os.path.join(table.path, at))
    stats = stats_from_metadata(footer, data_schema, num_indexed_cols)
    folder = os.path.dirname(partitioned)
    values = parse_partition_folder(folder, partition_columns) if partition_columns else {}
    return WrittenFile(
        path=encode_add_path(at),
        size=size,
        partition_values=values,
        stats=stats_to_json(stats),
        num_records=int(stats["numRecords"]),
    )


def _remove_if_empty(table: TableLocation, folder: str) -> None:
    with contextlib.suppress(StorageError):
        table.store.remove_empty_dir(folder)


def physical_columns(schema: T.StructType) -> list[Column]:
    """The table's columns (logical names, in order) as the data files hold them: physical names,
    nested fields renamed too, each with its column id as the parquet field id."""
    return [
        F.col(quote_identifier(f.name))
        .cast(physical_type(f.dataType, ids=True))
        .alias(physical_name(f), metadata=field_id(f))
        for f in schema.fields
    ]
