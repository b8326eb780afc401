"""Merge-on-read: rows a MERGE, UPDATE or DELETE removes are marked in deletion vectors, not copied away.

With ``delta.enableDeletionVectors=true`` (and the ``deletionVectors`` feature), Delta's DML
(``DMLWithDeletionVectorsHelper``) leaves a file's untouched rows where they are: the positions
of the rows it removes (``_metadata.row_index``) are added to the file's vector, and only new and
updated rows are written. Here, as there: the positions are collected per file (one small
aggregate job), merged with the file's current vector, and all vectors of one commit are stored
in one new file (``deletion_vectors.store``); each changed file is removed (with its old
descriptor) and added again with the new one, its statistics marked ``tightBounds: false``
(PROTOCOL.md: they may now include deleted rows); a file whose every row goes is removed outright.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import numpy as np
from pyroaring import BitMap64
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log import deletion_vectors
from dbt.adapters.deltamerge.delta.log.replay import log_state
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.paths import local_path, table_path_of

ENABLE_PROPERTY = "delta.enableDeletionVectors"


def writes_deletion_vectors(snapshot: Snapshot) -> bool:
    """Whether DML on this table writes deletion vectors (the property and the feature, as Delta's
    ``shouldWritePersistentDeletionVectors``)."""
    enabled = str(snapshot.metadata.configuration.get(ENABLE_PROPERTY, "false")).lower() == "true"
    return enabled and "deletionVectors" in (snapshot.protocol.writer_features or ())


def collect_positions(rows: DataFrame, file_column: str, index_column: str) -> dict[str, BitMap64]:
    """The row positions in ``rows``, by the local path of their file (one aggregate, through Arrow).

    ``file_column`` holds Spark's file URI (``input_file_name``), ``index_column`` the row's
    ``_metadata.row_index``.
    """
    grouped = rows.groupBy(F.col(file_column).alias("f")).agg(F.collect_list(F.col(index_column)).alias("i"))
    table = grouped.toArrow()
    found: dict[str, BitMap64] = {}
    for name, indexes in zip(table.column("f").to_pylist(), table.column("i").to_pylist(), strict=True):
        found.setdefault(table_path_of(name), BitMap64()).update(np.asarray(indexes, dtype=np.uint64))
    return found


@dataclass(frozen=True)
class VectorUpdate:
    """The actions that mark rows deleted, and Delta's counts of them."""

    readded: list[dict[str, Any]] = field(default_factory=list)  # ``add`` actions with the new vectors
    removed: list[AddFile] = field(default_factory=list)  # every file a vector changed or that went whole
    fully_removed: list[AddFile] = field(default_factory=list)
    modified_rows: int = 0  # rows newly marked deleted
    added: int = 0  # vectors on files that had none
    updated: int = 0  # vectors that replace one
    dropped: int = 0  # vectors gone with a file removed whole

    def metrics(self, prefix: str = "") -> dict[str, int]:
        """``num{prefix}DeletionVectorsAdded/Removed/Updated`` as Delta records them in the history:
        a vector replacing a file's vector counts as updated, and also as added and removed
        (``DeltaOperationMetrics.DELETION_VECTORS`` sums them, "to line up with how numFilesAdded /
        numFilesRemoved behave"; the oracle tier checks it against Delta on Spark).

        >>> VectorUpdate(added=2, updated=3, dropped=1).metrics("Target")["numTargetDeletionVectorsAdded"]
        5
        """
        return {
            f"num{prefix}DeletionVectorsAdded": self.added + self.updated,
            f"num{prefix}DeletionVectorsRemoved": self.dropped + self.updated,
            f"num{prefix}DeletionVectorsUpdated": self.updated,
        }


def mark_deleted(
    snapshot: Snapshot, positions: Mapping[str, BitMap64], *, dry_run: bool = False
) -> VectorUpdate:
    """The commit actions that delete ``positions`` (by local file path) from the live files
    (``dry_run``: the counts only; no vector file is written, no action made)."""
    by_path = {local_path(snapshot.table_path, f.path): f for f in snapshot.files}
    if any(by_path[p].logged is None for p in positions if p in by_path):
        # Vectors switched on by this very commit: the snapshot was read without the log's adds.
        adds = log_state(snapshot.location, snapshot.version).adds
        by_path = {p: replace(f, logged=adds.get(unquote(f.path))) for p, f in by_path.items()}
    vectors: dict[str, BitMap64] = {}
    changed: list[AddFile] = []
    fully: list[AddFile] = []
    modified = 0
    for path, rows in positions.items():
        file = by_path.get(path)
        if file is None:
            raise DeltaError(f"rows to delete were read from {path}, which is not a live file of the table")
        merged = BitMap64(rows) | BitMap64(file.deleted_rows)
        new = len(merged) - len(file.deleted_rows)
        if new == 0:
            continue
        modified += new
        if len(merged) >= _physical_records(snapshot, file):
            fully.append(file)
        else:
            vectors[path] = merged
            changed.append(file)
    if dry_run:
        readded = []
    else:
        descriptors = deletion_vectors.store(snapshot.location, vectors)
        readded = [
            _readded(snapshot, f, descriptors[local_path(snapshot.table_path, f.path)]) for f in changed
        ]
    return VectorUpdate(
        readded=readded,
        removed=[*changed, *fully],
        fully_removed=fully,
        modified_rows=modified,
        added=sum(1 for f in changed if f.deletion_vector is None),
        updated=sum(1 for f in changed if f.deletion_vector is not None),
        dropped=sum(1 for f in fully if f.deletion_vector is not None),
    )


def _physical_records(snapshot: Snapshot, file: AddFile) -> int:
    """The rows the file holds, deleted or not (its statistics, else its parquet footer)."""
    stats = json.loads(str((file.logged or {}).get("stats") or "{}"))
    if "numRecords" in stats:
        return int(stats["numRecords"])
    return snapshot.location.store.parquet_metadata(local_path(snapshot.table_path, file.path)).num_rows


def _readded(snapshot: Snapshot, file: AddFile, descriptor: dict[str, Any]) -> dict[str, Any]:
    """The file's ``add`` again, with its new vector and wide statistics (numRecords kept physical)."""
    if file.logged is None:
        raise DeltaError(f"Delta table at {snapshot.table_path}: no logged add action for {file.path}")
    stats = json.loads(str(file.logged.get("stats") or "{}"))
    stats["numRecords"] = _physical_records(snapshot, file)
    stats["tightBounds"] = False
    add = {k: v for k, v in file.logged.items() if k not in ("deletionVector", "stats") and v is not None}
    for key in ("partitionValues", "tags"):  # maps (a checkpoint's empty one reads back as a list)
        if key in add:
            add[key] = dict(add[key] or {})
    return {"add": {**add, "dataChange": True, "stats": json.dumps(stats), "deletionVector": descriptor}}
