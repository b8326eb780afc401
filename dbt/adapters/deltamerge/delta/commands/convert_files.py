"""The files of a parquet folder being converted: listing, schemas and statistics.

Footers are read where the files are: on the driver for a few files, in one Spark job
over batches of files when there are many (as Delta's ``mergeSchemasInParallel`` and
its batched statistics collection do).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.stats import stats_from_metadata, stats_to_json
from dbt.adapters.deltamerge.delta.paths import unescape_partition_value
from dbt.adapters.deltamerge.delta.stores import Store

# Above this many files, footers are read by a Spark job instead of the driver.
DISTRIBUTE_ABOVE = 256
FILES_PER_TASK = 64
MAX_TASKS = 256
_FORMATS = {".csv": "csv", ".json": "json", ".orc": "orc", ".avro": "avro", ".txt": "text"}


@dataclass(frozen=True)
class ParquetFile:
    """One data file found under the folder."""

    relative: str
    size: int
    modification_time: int
    partition_values: dict[str, str | None]


def is_hidden(name: str) -> bool:
    """Spark's rule for names its file listing skips.

    >>> [is_hidden(n) for n in ["_SUCCESS", ".x.crc", "_day=1", "part-0.parquet", "f._COPYING_"]]
    [True, True, False, False, True]
    """
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def list_data_files(table: TableLocation, partition_columns: list[str]) -> list[ParquetFile]:
    """Every data file under ``table`` with its partition values (names as in ``partition_columns``)."""
    canonical = {c.lower(): c for c in partition_columns}
    found: list[ParquetFile] = []
    for folder, dirs, names in table.store.walk(table.path):
        dirs[:] = sorted(d for d in dirs if not is_hidden(d))
        relative_dir = os.path.relpath(folder, table.path)
        values = partition_values(relative_dir, canonical)
        for name in sorted(names):
            if is_hidden(name):
                continue
            full = os.path.join(folder, name)
            size, mtime = table.store.size_and_mtime(full)
            relative = os.path.normpath(os.path.join(relative_dir, name)).replace(os.sep, "/")
            found.append(ParquetFile(relative, size, int(mtime * 1000), values))
    return found


def partition_values(relative_dir: str, canonical: dict[str, str]) -> dict[str, str | None]:
    """``col=value`` folders of a relative folder, in order (names as the partition schema spells them).

    >>> partition_values("day=2026-01-01/c=a%3Ab", {"day": "day", "c": "C"})
    {'day': '2026-01-01', 'C': 'a:b'}
    """
    values: dict[str, str | None] = {}
    for part in relative_dir.replace(os.sep, "/").split("/"):
        if "=" not in part:
            continue
        key, _, raw = part.partition("=")
        name = unescape_partition_value(key) or key
        values[canonical.get(name.lower(), name)] = unescape_partition_value(raw)
    return values


def not_parquet(table: TableLocation, files: list[ParquetFile]) -> tuple[str, str] | None:
    """``(format, file)`` of the first file that is not parquet (by its magic bytes)."""
    for file in files:
        full = os.path.join(table.path, file.relative)
        with table.store.open_input(full) as handle:
            head = handle.read(4)
            if file.size >= 8:
                handle.seek(-4, os.SEEK_END)
            tail = handle.read(4)
        if head != b"PAR1" or tail != b"PAR1":
            return _FORMATS.get(os.path.splitext(file.relative)[1].lower(), "non-parquet"), file.relative
    return None


def file_schemas(
    spark: SparkSession, table: TableLocation, files: list[ParquetFile]
) -> list[tuple[str, T.StructType]]:
    """One ``(file, Spark schema)`` per distinct file schema, in listing order.

    Files are grouped by their parquet schema; Spark reads one file of each group, so
    types are exactly what Spark's parquet reader gives (INT96, unsigned, timestamps).
    """
    relatives = [f.relative for f in files]
    pairs = _each_file(spark, relatives, partial(_schema_of, table.store, table.path))
    representatives: dict[bytes, str] = {}
    for relative, schema in pairs:
        representatives.setdefault(schema, relative)
    return [
        (relative, spark.read.parquet(os.path.join(table.path, relative)).schema)
        for relative in sorted(representatives.values(), key=relatives.index)
    ]


def _schema_of(store: Store, root: str, relative: str) -> bytes:
    schema = store.parquet_schema(os.path.join(root, relative))
    return bytes(schema.remove_metadata().serialize().to_pybytes())


def merge_schemas(schemas: list[tuple[str, T.StructType]]) -> T.StructType:
    """Spark's schema merge over every file's schema; a conflict names two files."""
    merged = T.StructType()
    origin: dict[str, str] = {}
    for relative, schema in schemas:
        for field in schema.fields:
            existing = next((f for f in merged.fields if f.name == field.name), None)
            if existing is None:
                merged = merged.add(field)
                origin[field.name] = relative
                continue
            combined = merge_types(existing.dataType, field.dataType)
            if combined is None:
                raise DeltaError(
                    f"CONVERT TO DELTA: the schemas of {origin[field.name]} and {relative} cannot be merged: "
                    f"column `{field.name}` is {existing.dataType.simpleString()} in the first and "
                    f"{field.dataType.simpleString()} in the second. "
                    "Rewrite one of them with the other's type."
                )
            fields = [
                T.StructField(f.name, combined, True) if f.name == field.name else f for f in merged.fields
            ]
            merged = T.StructType(fields)
    return merged


def merge_types(left: T.DataType, right: T.DataType) -> T.DataType | None:
    """Spark's ``StructType.merge`` for two types (no widening); None when they conflict.

    >>> merge_types(T.IntegerType(), T.LongType()) is None
    True
    >>> merge_types(T.StructType([T.StructField("a", T.IntegerType())]),
    ...             T.StructType([T.StructField("b", T.StringType())])).simpleString()
    'struct<a:int,b:string>'
    """
    if left == right:
        return left
    if isinstance(left, T.NullType):
        return right
    if isinstance(right, T.NullType):
        return left
    if isinstance(left, T.ArrayType) and isinstance(right, T.ArrayType):
        element = merge_types(left.elementType, right.elementType)
        return None if element is None else T.ArrayType(element, True)
    if isinstance(left, T.MapType) and isinstance(right, T.MapType):
        key, value = merge_types(left.keyType, right.keyType), merge_types(left.valueType, right.valueType)
        return None if key is None or value is None else T.MapType(key, value, True)
    if isinstance(left, T.StructType) and isinstance(right, T.StructType):
        fields = []
        for field in left.fields:
            other = next((f for f in right.fields if f.name == field.name), None)
            kind = field.dataType if other is None else merge_types(field.dataType, other.dataType)
            if kind is None:
                return None
            fields.append(T.StructField(field.name, kind, True))
        names = {f.name for f in left.fields}
        fields += [T.StructField(f.name, f.dataType, True) for f in right.fields if f.name not in names]
        return T.StructType(fields)
    return None


def file_stats_json(
    spark: SparkSession,
    table: TableLocation,
    files: list[ParquetFile],
    data_schema: T.StructType,
    num_indexed: int,
) -> dict[str, str]:
    """``add.stats`` JSON of every file, keyed by relative path."""
    task = partial(_stats_of, table.store, table.path, data_schema, num_indexed)
    pairs = _each_file(spark, [f.relative for f in files], task)
    return {relative: value.decode("utf-8") for relative, value in pairs}


def _stats_of(store: Store, root: str, schema: T.StructType, num_indexed: int, relative: str) -> bytes:
    metadata = store.parquet_metadata(os.path.join(root, relative))
    return stats_to_json(stats_from_metadata(metadata, schema, num_indexed)).encode("utf-8")


def _each_file(
    spark: SparkSession, relatives: list[str], read: Callable[[str], bytes]
) -> list[tuple[str, bytes]]:
    """``read`` of every file; above ``DISTRIBUTE_ABOVE`` files, in Spark tasks of about ``FILES_PER_TASK``.

    A DataFrame of file names through a Python UDF (public API, no pandas): the footers
    are read by the executors of a classic session and of a Spark Connect server alike. ``read``
    holds the table's store and root only (a local disk's store ships nothing; an object store
    ships its configuration's options, rebuilt into clients on the executor).
    """
    if len(relatives) <= DISTRIBUTE_ABOVE:
        return [(relative, read(relative)) for relative in relatives]
    tasks = max(1, min(len(relatives) // FILES_PER_TASK, MAX_TASKS))
    names = spark.createDataFrame([(r,) for r in relatives], "relative string").repartition(tasks)
    # A lambda: pyspark reads a function's type hints as a pandas UDF's and warns on these.
    per_file = F.udf(lambda relative: read(relative), T.BinaryType(), useArrow=False)
    values = names.select("relative", per_file("relative").alias("value")).collect()
    return [(row["relative"], bytes(row["value"])) for row in values]
