"""Reading chosen files of a snapshot as a Spark DataFrame with the table's schema.

Spark is given the exact files from the Delta log (never a directory listing, which
would include removed and uncommitted files) and the table schema, so columns added
after a file was written read as null and partition values come back typed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from functools import reduce

import numpy as np
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.mapping import field_id, mapping_mode, physical_name, physical_type
from dbt.adapters.deltamerge.delta.paths import local_path, table_path_of
from dbt.adapters.deltamerge.delta.row_ids import (
    STABLE_COLUMNS,
    materialized_columns,
    materialized_fields,
    stable_columns,
)
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot

_DELETED_FILE, _DELETED_ROW = "_deleted_file", "_deleted_row_index"
_FILE, _ROW = "_live_file", "_live_row_index"
# The columns ``read_files(..., positions=True)`` adds: a row's file (Spark's URI) and index in it.
FILE_URI, ROW_INDEX = "_delta_file", "_delta_row_index"


def read_files(
    spark: SparkSession,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    *,
    row_ids: bool = False,
    positions: bool = False,
) -> DataFrame:
    """The rows of ``files`` (live files of ``snapshot``) in table column order.

    Every read of a table's data files comes here, after the table's reader features are
    checked (``Snapshot.check_readable``): a feature this read does not implement fails naming
    it, before any row is read. ``row_ids``: with each row's stable row id and row commit
    version (``row_ids.STABLE_ROW_ID`` / ``STABLE_ROW_COMMIT_VERSION``) where the table preserves them.
    ``positions``: with each row's file (Spark's URI, ``FILE_URI``) and its index in the file
    (``ROW_INDEX``), the position a deletion vector marks (``row_deletion``).
    """
    snapshot.check_readable()
    schema = snapshot.schema
    hidden = materialized_columns(snapshot.metadata.configuration) if row_ids else None
    if not files:
        extra = [T.StructField(n, T.LongType()) for n in STABLE_COLUMNS] if hidden else []
        if positions:
            extra += [T.StructField(FILE_URI, T.StringType()), T.StructField(ROW_INDEX, T.LongType())]
        return spark.createDataFrame([], T.StructType([*schema.fields, *extra]))
    if mapping_mode(snapshot.metadata.configuration) in ("name", "id"):
        return _read_mapped(spark, snapshot, files, hidden, positions)
    fields = [*schema.fields, *(materialized_fields(hidden) if hidden else [])]
    reader = spark.read.schema(T.StructType(fields))
    if snapshot.partition_columns:
        reader = reader.option("basePath", snapshot.table_path)
    paths = [local_path(snapshot.table_path, f.path) for f in files]
    rows = _live(reader.parquet(*paths), paths, files)
    return rows.select(
        *[F.col(quote_identifier(f.name)) for f in schema.fields],
        *_stable(hidden, paths, files),
        *_positions(positions),
    )


def _positions(wanted: bool) -> list[Column]:
    if not wanted:
        return []
    return [F.input_file_name().alias(FILE_URI), F.col("_metadata.row_index").alias(ROW_INDEX)]


def _stable(hidden: tuple[str, str] | None, paths: Sequence[str], files: Sequence[AddFile]) -> list[Column]:
    if hidden is None:
        return []
    defaults = [(p, f.base_row_id, f.default_row_commit_version) for p, f in zip(paths, files, strict=True)]
    return stable_columns(hidden, file_path(), defaults)


def _read_mapped(
    spark: SparkSession,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    hidden: tuple[str, str] | None,
    positions: bool,
) -> DataFrame:
    """Column mapping: each group of files with one partition's values read by physical names
    (mode ``name``) or parquet field ids (mode ``id``), returned under the schema's names with
    the log's partition values.

    Spark resolves columns by field id only when the read schema carries ids and
    ``spark.sql.parquet.fieldId.read.enabled`` is on; a read schema without ids (every other
    read) still resolves by name, so the setting stays on for the session once an id-mode
    table was read.
    """
    schema, partitions = snapshot.schema, set(snapshot.partition_columns)
    data = [f for f in schema.fields if f.name not in partitions]
    by_id = mapping_mode(snapshot.metadata.configuration) == "id"
    if by_id:
        spark.conf.set("spark.sql.parquet.fieldId.read.enabled", "true")
    physical = T.StructType(
        [
            *[
                T.StructField(
                    physical_name(f), physical_type(f.dataType, ids=by_id), True, field_id(f) if by_id else {}
                )
                for f in data
            ],
            *(materialized_fields(hidden) if hidden else []),
        ]
    )
    groups: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
    for file in files:
        groups.setdefault(tuple(sorted(file.partition_values.items())), []).append(file)
    frames = []
    for values, group in groups.items():
        paths = [local_path(snapshot.table_path, f.path) for f in group]
        rows = _live(spark.read.schema(physical).parquet(*paths), paths, group)
        known = dict(values)
        frames.append(
            rows.select(
                *[
                    F.lit(known.get(f.name)).cast(f.dataType).alias(f.name)
                    if f.name in partitions
                    else F.col(quote_identifier(physical_name(f))).cast(f.dataType).alias(f.name)
                    for f in schema.fields
                ],
                *_stable(hidden, paths, group),
                *_positions(positions),
            )
        )
    return reduce(DataFrame.unionAll, frames)


def _live(rows: DataFrame, paths: Sequence[str], files: Sequence[AddFile]) -> DataFrame:
    """``rows`` without those the files' deletion vectors delete (by file and row index).

    The deleted positions go to Spark as one small Arrow table, joined (broadcast, left anti) on
    the row's file and position: no plan text that grows with the vectors. A file is named by its
    size (``_metadata.file_size``, a number per file, no per-row string) when no other file of the
    read has the size of a file with a vector, else by Spark's own name of it (``input_file_name``,
    as ``inputFiles`` spells it).
    """
    vectors = {
        os.path.abspath(p): f.deleted_rows for p, f in zip(paths, files, strict=True) if f.deleted_rows
    }
    if not vectors:
        return rows
    # The sizes Spark reads (``_metadata.file_size`` is the file's length, not the log's record).
    sizes = {os.path.abspath(p): storage.size_and_mtime(p)[0] for p in paths}
    marked = [sizes[p] for p in vectors]
    by_size = len(set(marked)) == len(marked) and not set(marked) & {
        size for p, size in sizes.items() if p not in vectors
    }
    keys: list[object] = []
    positions = []
    for uri in rows.inputFiles():
        deleted = vectors.get(table_path_of(uri))
        if deleted:
            keys.extend([sizes[table_path_of(uri)] if by_size else uri] * len(deleted))
            positions.append(np.frombuffer(deleted.to_array(), dtype=np.uint64).astype(np.int64))
    table = pa.table(
        {
            _DELETED_FILE: pa.array(keys, pa.int64() if by_size else pa.string()),
            _DELETED_ROW: pa.array(np.concatenate(positions) if positions else [], pa.int64()),
        }
    )
    deleted_rows = rows.sparkSession.createDataFrame(table)
    file = F.col("_metadata.file_size") if by_size else F.input_file_name()
    located = rows.withColumns({_FILE: file, _ROW: F.col("_metadata.row_index")})
    on = (F.col(_FILE) == F.col(_DELETED_FILE)) & (F.col(_ROW) == F.col(_DELETED_ROW))
    return located.join(F.broadcast(deleted_rows), on, "left_anti").drop(_FILE, _ROW)


def file_path() -> Column:
    """The local path of the file a scanned row comes from (Spark's ``_metadata.file_path`` is a URI).

    ``url_decode`` would read a ``+`` as a space; Hadoop leaves ``+`` unquoted in its URIs.
    """
    uri = F.replace(F.col("_metadata.file_path"), F.lit("+"), F.lit("%2B"))
    return F.regexp_replace(F.url_decode(uri), "^file:/*", "/")
