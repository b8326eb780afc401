"""Writing a Spark DataFrame as new data files of a Delta table.

Spark writes parquet into a staging folder inside the table (hidden by its ``_`` prefix,
so no Delta or Hive reader lists it); each file is then renamed to its final place
under its partition folder and described by an ``add`` action with statistics from its
footer. Files become part of the table only when a commit references them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.commit import now_ms
from dbt.adapters.deltamerge.delta.paths import encode_add_path, parse_partition_folder
from dbt.adapters.deltamerge.delta.stats import file_stats, stats_to_json

STAGING_DIR = "_deltamerge_staging"


@dataclass(frozen=True)
class WrittenFile:
    """A data file written for a commit that does not exist yet."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    stats: str
    num_records: int

    def add_action(self, *, modification_time: int) -> dict[str, object]:
        """The ``add`` action for this file."""
        return {
            "add": {
                "path": self.path,
                "partitionValues": self.partition_values,
                "size": self.size,
                "modificationTime": modification_time,
                "dataChange": True,
                "stats": self.stats,
            }
        }


def write_data_files(
    df: DataFrame,
    table_path: str,
    *,
    partition_columns: list[str],
    num_indexed_cols: int,
) -> list[WrittenFile]:
    """Write ``df`` (already in table column order and types) as parquet files of the table."""
    staging = os.path.join(table_path, STAGING_DIR, uuid.uuid4().hex)
    writer = df.write.mode("errorifexists").option("compression", "snappy")
    if partition_columns:
        writer = writer.partitionBy(*partition_columns)
    try:
        writer.parquet(staging)
        data_schema = T.StructType([f for f in df.schema.fields if f.name not in set(partition_columns)])
        placed = [
            _place(staging, table_path, rel, partition_columns, data_schema, num_indexed_cols)
            for rel in _parquet_files(staging)
        ]
        # Spark writes one empty file for an empty result; the log needs none.
        for empty in (f for f in placed if f.num_records == 0):
            os.unlink(os.path.join(table_path, unquote(empty.path)))
        return [f for f in placed if f.num_records > 0]
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_if_empty(os.path.join(table_path, STAGING_DIR))


def _parquet_files(root: str) -> Iterator[str]:
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            if name.endswith(".parquet") and not name.startswith((".", "_")):
                yield os.path.relpath(os.path.join(folder, name), root)


def _place(
    staging: str,
    table_path: str,
    relative: str,
    partition_columns: list[str],
    data_schema: T.StructType,
    num_indexed_cols: int,
) -> WrittenFile:
    final = os.path.join(table_path, relative)
    os.makedirs(os.path.dirname(final), exist_ok=True)
    os.rename(os.path.join(staging, relative), final)
    stats = file_stats(final, data_schema, num_indexed_cols)
    folder = os.path.dirname(relative)
    values = parse_partition_folder(folder, partition_columns) if partition_columns else {}
    return WrittenFile(
        path=encode_add_path(relative),
        size=os.path.getsize(final),
        partition_values=values,
        stats=stats_to_json(stats),
        num_records=int(stats["numRecords"]),
    )


def _remove_if_empty(folder: str) -> None:
    with contextlib.suppress(OSError):
        os.rmdir(folder)


def add_actions(files: list[WrittenFile]) -> list[dict[str, object]]:
    """``add`` actions for freshly written files, stamped now."""
    stamp = now_ms()
    return [f.add_action(modification_time=stamp) for f in files]
