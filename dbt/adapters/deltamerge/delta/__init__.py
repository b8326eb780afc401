"""The Delta table layer's public face: a table's handle and its latest version, the errors.

The layer stands in rooms, each with a face of its own (its ``__init__``), each importing only the
rooms below it (``tools/lint_layout.py``, rules 6 and 7, also says which rooms each folder of the
package may use):

- the bottom (``errors``, ``faults``, ``ledger``, ``location``, ``paths``, ``stores``,
  ``storage``, ``object_storage``): a table's location and its store, every file-system call, the
  fault points, the error vocabulary; this face;
- ``delta.log``: a version's state read from the log (``Snapshot``; the log's replay, protocol,
  table features, schema, column mapping, statistics, deletion vectors): no Spark job, no Spark
  import beyond ``pyspark.sql.types``;
- ``delta.txn``: the commit path (a transaction's actions, conflict checks, the put-if-absent
  commit, row tracking and in-commit timestamps, operation metrics): no Spark job either, so a
  commit can be retried, and tested, without a JVM;
- ``delta.data``: rows through Spark (reading a version's files, writing data files, fitting rows
  to a schema, constraints, deletion vectors marked from rows, the four table writes);
- ``delta.commands``: one command each (OPTIMIZE, Z-order, auto compaction, VACUUM, CONVERT,
  column and table redefinition, comments, the change feed's reader), loaded on first use.

Callers import this face for what nearly every one needs (``TableLocation`` and the ``Stores`` it
is reached through, ``Snapshot``, ``load_snapshot``, the errors, ``storage``) and a room's face
for the rest, never an inner module (unit tests, which mirror the tree, import the module they
test).

One log reader is the source of truth for a version: deltalake's (``log/snapshot.py``:
``load_snapshot`` takes the version, protocol, metadata and live files from ``deltalake.DeltaTable``).
Our own replay (``log/replay.py``) only adds, for that same version, what deltalake does not hand
out: each live file's deletion vector, ``baseRowId`` and ``defaultRowCommitVersion``, and the
table's domain metadata; it is read where those are needed (tables whose writer features need
them, RESTORE's re-added files).
"""

from __future__ import annotations

from dbt.adapters.deltamerge.delta.errors import (
    ConcurrentModification,
    DeltaError,
    DeltaSchemaError,
    StorageError,
    UnsupportedTableFeature,
)
from dbt.adapters.deltamerge.delta.faults import CDC_POINTS, POINTS, crash_point
from dbt.adapters.deltamerge.delta.ledger import after_commit, describe, ledger, step_after_commits
from dbt.adapters.deltamerge.delta.location import TableLocation, place_table
from dbt.adapters.deltamerge.delta.log.occupied import has_delta_log
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.paths import (
    escape_partition_value,
    local_path,
    parse_partition_folder,
    partition_folder,
    table_path_of,
)
from dbt.adapters.deltamerge.delta.stores import Stores

__all__ = [
    "CDC_POINTS",
    "POINTS",
    "AddFile",
    "ConcurrentModification",
    "DeltaError",
    "DeltaSchemaError",
    "Snapshot",
    "StorageError",
    "Stores",
    "TableLocation",
    "UnsupportedTableFeature",
    "after_commit",
    "crash_point",
    "describe",
    "escape_partition_value",
    "has_delta_log",
    "ledger",
    "load_snapshot",
    "local_path",
    "parse_partition_folder",
    "partition_folder",
    "place_table",
    "step_after_commits",
    "table_path_of",
]
