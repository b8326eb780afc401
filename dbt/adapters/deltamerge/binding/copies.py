"""Copies of live rows for the catalog binding: data files Spark's parquet reader cannot read as they are.

A bound version's folder links each live data file (``binding.link_version``). A file of a table
that maps column names holds physical names, and a file whose deleted rows a view cannot mask
(``view.can_mask``) holds rows the version deleted: for those the folder links a copy of
the file's live rows under the schema's names instead. Copies are made once per logical file (its
path, its deleted rows, the schema), in the binding root's ``COPIES_DIR``, and dropped with the
last version folder that links them (``binding.prune_bindings``).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from array import array

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot, local_path, storage, table_path_of
from dbt.adapters.deltamerge.delta.data import FILE_URI, read_files

# Inside a binding root: copies of live rows Spark's parquet reader could not read from the data file itself.
COPIES_DIR = "live"


def live_copies(spark: SparkSession, snapshot: Snapshot, files: list[AddFile], root: str) -> dict[str, str]:
    """The copy of each of ``files``' live rows (by the file's path); the missing ones made in one
    Spark job, one output file per input file (a merge-on-read merge leaves every file it touched
    with a new vector: a job per file would pay Spark's per-job cost that many times)."""
    found, stores = {f.path: _copy_path(snapshot, f, root) for f in files}, snapshot.location.stores
    missing = [f for f in files if not storage.is_file(stores, found[f.path])]
    if len(missing) > 1:
        staging = os.path.join(root, COPIES_DIR, f".batch.{uuid.uuid4().hex}.building")
        rows = read_files(spark, snapshot, missing, positions=True)
        index = {os.path.abspath(local_path(snapshot.table_path, f.path)): i for i, f in enumerate(missing)}
        by_uri = {uri: index[table_path_of(uri)] for uri in rows.inputFiles() if table_path_of(uri) in index}
        which = F.create_map(*[F.lit(x) for pair in by_uri.items() for x in pair])[F.col(FILE_URI)]
        batch = rows.select(*_data_columns(snapshot), which.alias(_BATCH))
        batch.repartition(len(missing), _BATCH).write.partitionBy(_BATCH).parquet(staging)
        for i, file in enumerate(missing):
            folder = os.path.join(staging, f"{_BATCH}={i}")
            written = (
                [n for n in storage.list_names(stores, folder) if n.endswith(".parquet")]
                if storage.is_dir(stores, folder)
                else []
            )
            if len(written) == 1:
                storage.rename(stores, os.path.join(folder, written[0]), found[file.path])
        storage.delete_tree(stores, staging)
    for file in missing:  # one file (or one with no live row, which the batch writes no file for)
        if not storage.is_file(stores, found[file.path]):
            _live_copy(spark, snapshot, file, found[file.path])
    return found


_BATCH = "_deltamerge_file"


def _copy_path(snapshot: Snapshot, file: AddFile, root: str) -> str:
    # One copy per logical file: its path, the rows its deletion vector deletes, the schema.
    key = hashlib.sha256(f"{file.path}|{snapshot.metadata.schema_string}|".encode())
    key.update(array("q", file.deleted_rows).tobytes())  # no text of a million row indexes
    return os.path.join(root, COPIES_DIR, key.hexdigest() + ".parquet")


def _data_columns(snapshot: Snapshot) -> list[str]:
    partitions = {c.lower() for c in snapshot.partition_columns}
    return [quote_identifier(f.name) for f in snapshot.schema.fields if f.name.lower() not in partitions]


def _live_copy(spark: SparkSession, snapshot: Snapshot, file: AddFile, copy: str) -> str:
    """Write ``copy``: a parquet file of ``file``'s live rows, data columns under the schema's names."""
    copies, stores = os.path.dirname(copy), snapshot.location.stores
    columns = _data_columns(snapshot)
    # Two runs binding versions that share a file may build its copy at once: each in its own
    # staging folder, the rename of either giving the same rows.
    staging = os.path.join(copies, f".{os.path.basename(copy)}.{uuid.uuid4().hex}.building")
    read_files(spark, snapshot, [file]).select(*columns).coalesce(1).write.mode("overwrite").parquet(staging)
    (written,) = [n for n in storage.list_names(stores, staging) if n.endswith(".parquet")]
    storage.rename(stores, os.path.join(staging, written), copy)
    storage.delete_tree(stores, staging)
    return copy
