"""Reading chosen files of a snapshot as a Spark DataFrame with the table's schema.

Spark is given the exact files from the Delta log (never a directory listing, which
would include removed and uncommitted files) and the table schema, so columns added
after a file was written read as null and partition values come back typed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import reduce
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
from pyroaring import FrozenBitMap64
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.log.mapping import field_id, mapping_mode, physical_name, physical_type
from dbt.adapters.deltamerge.delta.log.row_ids import (
    STABLE_COLUMNS,
    STABLE_ROW_COMMIT_VERSION,
    STABLE_ROW_ID,
    materialized_columns,
    materialized_fields,
)
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.paths import local_path, partition_folder, table_path_of

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
    if mapping_mode(snapshot.metadata.configuration) in ("name", "id") or not _in_partition_folders(
        snapshot.partition_columns, files
    ):
        return _read_mapped(spark, snapshot, files, hidden, positions)
    fields = [*schema.fields, *(materialized_fields(hidden) if hidden else [])]
    reader = spark.read.schema(T.StructType(fields))
    if snapshot.partition_columns:
        reader = reader.option("basePath", snapshot.table_path)
    frames = []
    for paths, group, sizes in _size_groups(snapshot, files):
        frames.append(
            _live(reader.parquet(*paths), paths, group, sizes).select(
                *[F.col(quote_identifier(f.name)) for f in schema.fields],
                *_stable(hidden, paths, group),
                *_positions(positions),
            )
        )
    return reduce(DataFrame.unionAll, frames)


# Files sharing a size are spread over at most this many scans (more: named by URI in the last).
_SIZE_SCANS = 8


def _size_groups(
    snapshot: Snapshot, files: Sequence[AddFile]
) -> list[tuple[list[str], list[AddFile], list[int] | None]]:
    """``files`` (with their local paths and sizes) split into scans in none of which two files
    share a size that a file with a vector has: the n-th file of each such size goes to the n-th
    scan, so that ``_live`` names every file with a vector by its size (a long per row) and no scan
    names every row's file by its URI for the sake of a few (at most ``_SIZE_SCANS`` scans). Sizes
    are looked up once, and only when a file has a vector (None otherwise)."""
    paths = [local_path(snapshot.table_path, f.path) for f in files]
    if not any(f.deleted_rows for f in files):
        return [(paths, list(files), None)]  # one scan, and no file looked up
    sizes = [snapshot.location.store.size_and_mtime(p)[0] for p in paths]
    marked = {size for f, size in zip(files, sizes, strict=True) if f.deleted_rows}
    seen: Counter[int] = Counter()
    scans: dict[int, tuple[list[str], list[AddFile], list[int]]] = {}
    for path, file, size in zip(paths, files, sizes, strict=True):
        scan = min(seen[size], _SIZE_SCANS - 1) if size in marked else 0
        seen[size] += 1
        in_scan = scans.setdefault(scan, ([], [], []))
        in_scan[0].append(path)
        in_scan[1].append(file)
        in_scan[2].append(size)
    return [scans[n] for n in sorted(scans)]


def _positions(wanted: bool) -> list[Column]:
    if not wanted:
        return []
    return [F.input_file_name().alias(FILE_URI), F.col("_metadata.row_index").alias(ROW_INDEX)]


def _stable(hidden: tuple[str, str] | None, paths: Sequence[str], files: Sequence[AddFile]) -> list[Column]:
    if hidden is None:
        return []
    defaults = [(p, f.base_row_id, f.default_row_commit_version) for p, f in zip(paths, files, strict=True)]
    return stable_columns(hidden, file_path(), defaults)


def _in_partition_folders(columns: Sequence[str], files: Sequence[AddFile]) -> bool:
    """Whether each file lies in its partition's folder right under the table (``k=v/part-0``), so
    that Spark infers its partition values from the path; otherwise (a file written elsewhere, such
    as ``w<uuid>/k=v/...`` on an object store, or by a writer with random prefixes) the read takes
    them from the log. Unpartitioned tables: always.

    >>> from types import SimpleNamespace as F
    >>> _in_partition_folders(["k"], [F(path="k=1/p.parquet", partition_values={"k": "1"})])
    True
    >>> _in_partition_folders(["k"], [F(path="w1/k=1/p.parquet", partition_values={"k": "1"})])
    False
    """
    if not columns:
        return True
    return all(
        unquote(f.path).startswith(partition_folder(list(columns), f.partition_values) + "/") for f in files
    )


def _read_mapped(
    spark: SparkSession,
    snapshot: Snapshot,
    files: Sequence[AddFile],
    hidden: tuple[str, str] | None,
    positions: bool,
) -> DataFrame:
    """Column mapping, or files outside their partition folders: each group of files with one
    partition's values read by physical names (mode ``name``; the names themselves without
    mapping) or parquet field ids (mode ``id``), returned under the schema's names with the log's
    partition values.

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
    scans = [(values, scan) for values, group in groups.items() for scan in _size_groups(snapshot, group)]
    for values, (paths, group, sizes) in scans:
        rows = _live(spark.read.schema(physical).parquet(*paths), paths, group, sizes)
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


def _live(
    rows: DataFrame, paths: Sequence[str], files: Sequence[AddFile], known: Sequence[int] | None
) -> DataFrame:
    """``rows`` without those the files' deletion vectors delete (by file and row index);
    ``known``: the files' sizes (``_size_groups`` looks them up for every scan with a vector).

    The deleted positions go to Spark as one small Arrow table, broadcast into a join: no plan
    text that grows with the vectors. A file whose size (``_metadata.file_size``, a number per
    file) no other file of the read has is named by it, and its vector is sent as 64-row blocks,
    each a long whose bits are the block's deleted rows (``_deleted_blocks``): one long key per
    row and a table of at most one entry per block, where a random 1% of rows marked would take
    a (file, row) entry each. Files sharing a size within the scan (``_size_groups`` spreads them
    over scans of their own, so only past ``_SIZE_SCANS`` of one size) are named by Spark's own
    name of them (``input_file_name``, as ``inputFiles`` spells it), their positions anti-joined.
    """
    vectors = {table_path_of(p): f.deleted_rows for p, f in zip(paths, files, strict=True) if f.deleted_rows}
    if not vectors:
        return rows
    # The sizes Spark reads (``_metadata.file_size`` is the file's length, not the log's record).
    assert known is not None, "_size_groups looks up the sizes of every scan with a vector"
    sizes = {table_path_of(p): size for p, size in zip(paths, known, strict=True)}
    shared = {size for size, n in Counter(sizes.values()).items() if n > 1}
    by_size = {
        sizes[p]: deleted
        for p, deleted in vectors.items()
        if sizes[p] not in shared and sizes[p] < 1 << (63 - _SIZE_SHIFT) and deleted.max() < 1 << 32
    }
    if by_size:
        rows = _without_blocks(rows, _deleted_blocks(by_size))
    by_uri = {p: deleted for p, deleted in vectors.items() if sizes[p] not in by_size}
    return _without_positions(rows, by_uri) if by_uri else rows


# A block key is the file's size shifted left by this, plus the row index's block (row >> 6):
# unique for files below 128 GiB with fewer than 2^32 rows.
_SIZE_SHIFT = 26
_BLOCK, _BIT, _DELETED_BLOCK, _DELETED_MASK = "_live_block", "_live_bit", "_deleted_block", "_deleted_mask"


def _deleted_blocks(by_size: dict[int, FrozenBitMap64]) -> pa.Table:
    """Every 64-row block holding a deleted row, keyed by file size and block, with its bit mask.

    >>> from pyroaring import BitMap64
    >>> table = _deleted_blocks({3: BitMap64([0, 2, 64, 130])}).to_pydict()
    >>> [(k >> 26, k & 63, m) for k, m in zip(table["_deleted_block"], table["_deleted_mask"])]
    [(3, 0, 5), (3, 1, 1), (3, 2, 4)]
    """
    keys, masks = [], []
    for size, deleted in by_size.items():
        blocks, bits = block_masks(deleted)
        masks.append(bits)
        keys.append((np.uint64(size) << np.uint64(_SIZE_SHIFT)) | blocks)
    return pa.table(
        {
            _DELETED_BLOCK: pa.array(np.concatenate(keys).view(np.int64), pa.int64()),
            _DELETED_MASK: pa.array(np.concatenate(masks).view(np.int64), pa.int64()),
        }
    )


def block_masks(deleted: FrozenBitMap64) -> tuple[np.ndarray, np.ndarray]:
    """Each 64-row block (``row_index >> 6``) holding a deleted row, and its mask: bit ``row_index
    & 63`` set for each deleted row (unsigned 64-bit arrays, blocks ascending).

    >>> from pyroaring import BitMap64
    >>> [a.tolist() for a in block_masks(BitMap64([0, 2, 64, 130]))]
    [[0, 1, 2], [5, 1, 4]]
    """
    positions = np.frombuffer(deleted.to_array(), dtype=np.uint64)  # ascending
    blocks = positions >> np.uint64(6)
    starts = np.flatnonzero(np.r_[True, blocks[1:] != blocks[:-1]])
    bits = np.left_shift(np.uint64(1), positions & np.uint64(63))
    return blocks[starts], np.bitwise_or.reduceat(bits, starts)


def _without_blocks(rows: DataFrame, blocks: pa.Table) -> DataFrame:
    """``rows`` without those whose bit is set in their block's mask (a broadcast left outer join)."""
    row = F.col("_metadata.row_index")
    located = rows.withColumns(
        {
            _BLOCK: F.shiftleft(F.col("_metadata.file_size"), _SIZE_SHIFT) + F.shiftright(row, 6),
            _BIT: F.pmod(row, F.lit(64)).cast("int"),
        }
    )
    masks = F.broadcast(rows.sparkSession.createDataFrame(blocks))
    joined = located.join(masks, F.col(_BLOCK) == F.col(_DELETED_BLOCK), "left_outer")
    live = F.expr(f"{_DELETED_MASK} IS NULL OR (shiftrightunsigned({_DELETED_MASK}, {_BIT}) & 1) = 0")
    return joined.where(live).drop(_BLOCK, _BIT, _DELETED_BLOCK, _DELETED_MASK)


def _without_positions(rows: DataFrame, vectors: dict[str, FrozenBitMap64]) -> DataFrame:
    """``rows`` without the (file URI, row index) pairs of ``vectors`` (a broadcast left anti-join)."""
    keys: list[str] = []
    positions = []
    for uri in rows.inputFiles():
        deleted = vectors.get(table_path_of(uri))
        if deleted:
            keys.extend([uri] * len(deleted))
            positions.append(np.frombuffer(deleted.to_array(), dtype=np.uint64).astype(np.int64))
    table = pa.table(
        {
            _DELETED_FILE: pa.array(keys, pa.string()),
            _DELETED_ROW: pa.array(np.concatenate(positions) if positions else [], pa.int64()),
        }
    )
    deleted_rows = rows.sparkSession.createDataFrame(table)
    located = rows.withColumns({_FILE: F.input_file_name(), _ROW: F.col("_metadata.row_index")})
    on = (F.col(_FILE) == F.col(_DELETED_FILE)) & (F.col(_ROW) == F.col(_DELETED_ROW))
    return located.join(F.broadcast(deleted_rows), on, "left_anti").drop(_FILE, _ROW)


def file_path() -> Column:
    """The local path of the file a scanned row comes from (Spark's ``_metadata.file_path`` is a URI).

    ``url_decode`` would read a ``+`` as a space; Hadoop leaves ``+`` unquoted in its URIs.
    """
    uri = F.replace(F.col("_metadata.file_path"), F.lit("+"), F.lit("%2B"))
    return F.regexp_replace(F.url_decode(uri), "^file:/*", "/")


def stable_columns(
    names: tuple[str, str], file: Column, defaults: Sequence[tuple[str, int | None, int | None]]
) -> list[Column]:
    """``STABLE_ROW_ID`` and ``STABLE_ROW_COMMIT_VERSION`` of each scanned row: its file's
    materialized values where set, else the file's defaults (``defaults``: local path, baseRowId,
    defaultRowCommitVersion of each file)."""
    bases = F.create_map(*[F.lit(x) for path, base, _ in defaults for x in (path, base)])
    versions = F.create_map(*[F.lit(x) for path, _, version in defaults for x in (path, version)])
    row_index = F.col("_metadata.row_index")
    return [
        F.coalesce(F.col(names[0]), bases[file] + row_index).cast("long").alias(STABLE_ROW_ID),
        F.coalesce(F.col(names[1]), versions[file]).cast("long").alias(STABLE_ROW_COMMIT_VERSION),
    ]
