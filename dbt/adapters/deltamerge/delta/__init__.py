"""The Delta table layer's public face: what the rest of the package, the functional tests and
the benchmarks use of it.

Callers import from here, never an inner module, so a move inside ``delta/`` is nobody else's
business (unit tests, which mirror the tree, import the module they test). The layer stands in
rooms, each importing only the ones below it (``tools/lint_layout.py`` enforces it):

- the bottom (``errors``, ``faults``, ``ledger``, ``paths``, ``storage``): every file-system call,
  the fault points, the error vocabulary;
- ``log/``: a version's state read from the log (``Snapshot``; the log's replay, protocol, table
  features, schema, column mapping, statistics, deletion vectors): no Spark job, no Spark import
  beyond ``pyspark.sql.types``;
- ``txn/``: the commit path (a transaction's actions, conflict checks, the put-if-absent commit,
  row tracking and in-commit timestamps, operation metrics): no Spark job either, so a commit can
  be retried, and tested, without a JVM;
- ``data/``: rows through Spark (reading a version's files, writing data files, fitting rows to a
  schema, constraints, deletion vectors marked from rows, the four table writes);
- ``commands/``: one command each (OPTIMIZE, Z-order, auto compaction, VACUUM, CONVERT, column
  and table redefinition, comments, the change feed's reader).

One log reader is the source of truth for a version: deltalake's (``log/snapshot.py``:
``load_snapshot`` takes the version, protocol, metadata and live files from ``deltalake.DeltaTable``).
Our own replay (``log/replay.py``) only adds, for that same version, what deltalake does not hand
out: each live file's deletion vector, ``baseRowId`` and ``defaultRowCommitVersion``, and the
table's domain metadata; it is read where those are needed (tables whose writer features need
them, RESTORE's re-added files).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# data/: rows through Spark
from dbt.adapters.deltamerge.delta.data.align import align_to_schema, aligned_columns, store_assigned
from dbt.adapters.deltamerge.delta.data.column_values import (
    CURRENT_DEFAULT,
    computed_columns,
    default_value,
    regenerated,
    substituted,
    with_identity_values,
)
from dbt.adapters.deltamerge.delta.data.constraints import (
    CONSTRAINT_PREFIX,
    GENERATION_EXPRESSION,
    Constraints,
    enforced,
    generated_columns,
    referenced_columns,
)
from dbt.adapters.deltamerge.delta.data.files import CHANGE_TYPE, OPTIMIZE_WRITE
from dbt.adapters.deltamerge.delta.data.read import FILE_URI, ROW_INDEX, block_masks, read_files
from dbt.adapters.deltamerge.delta.data.row_deletion import (
    ENABLE_PROPERTY,
    VectorUpdate,
    collect_positions,
    mark_deleted,
    writes_deletion_vectors,
)
from dbt.adapters.deltamerge.delta.data.stored import write_files, write_files_and_changes
from dbt.adapters.deltamerge.delta.data.write import WriteMode, WriteRequest, write_dataframe

# the bottom: errors, faults, the error ledger, paths, storage
from dbt.adapters.deltamerge.delta.errors import (
    ConcurrentModification,
    DeltaError,
    DeltaSchemaError,
    StorageError,
    UnsupportedTableFeature,
)
from dbt.adapters.deltamerge.delta.faults import CDC_POINTS, POINTS, crash_point
from dbt.adapters.deltamerge.delta.ledger import after_commit, describe, ledger
from dbt.adapters.deltamerge.delta.location import TableLocation, place_table

# log/: a version's state, read from the log (no Spark job)
from dbt.adapters.deltamerge.delta.log.definition import (
    DEFAULT_TXN_RETENTION,
    NO_CHANGE,
    TXN_RETENTION_PROPERTY,
    Redefinition,
    TableChange,
    changed,
    definition_actions,
    redefined,
    with_change_data_feed,
    with_deletion_vectors,
    with_schema,
    with_transaction_retention,
)
from dbt.adapters.deltamerge.delta.log.deletion_vectors import serialize
from dbt.adapters.deltamerge.delta.log.evolution import can_write, evolved_schema, schema_changes
from dbt.adapters.deltamerge.delta.log.features import check_writable, configuration_problems
from dbt.adapters.deltamerge.delta.log.identity import (
    Identity,
    explicit_values_refused,
    identity_columns,
    identity_value_column,
    metadata,
)
from dbt.adapters.deltamerge.delta.log.mapping import mapping_mode
from dbt.adapters.deltamerge.delta.log.properties import AUTO_COMPACT, DEFAULT_RETENTION_HOURS, value_problems
from dbt.adapters.deltamerge.delta.log.protocol import CDF_PROPERTY, change_data_feed_enabled
from dbt.adapters.deltamerge.delta.log.replay import log_state
from dbt.adapters.deltamerge.delta.log.row_ids import (
    STABLE_COLUMNS,
    STABLE_ROW_COMMIT_VERSION,
    STABLE_ROW_ID,
    materialized_columns,
)
from dbt.adapters.deltamerge.delta.log.schema import find_field, schema_from_json, schema_to_json
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot, has_delta_log, load_snapshot
from dbt.adapters.deltamerge.delta.log.vector_files import vector_file, z85_encode
from dbt.adapters.deltamerge.delta.paths import (
    escape_partition_value,
    local_path,
    parse_partition_folder,
    partition_folder,
    table_path_of,
)
from dbt.adapters.deltamerge.delta.storage import size_and_mtime

# txn/: the commit path (no Spark job)
from dbt.adapters.deltamerge.delta.txn.actions import ChangeFile, CommitActions, WrittenFile
from dbt.adapters.deltamerge.delta.txn.commit import (
    CommitInfo,
    commit,
    committed_version_of,
    latest_version,
    maybe_checkpoint,
    read_commit,
)
from dbt.adapters.deltamerge.delta.txn.conflicts import (
    ConcurrentDeleteDelete,
    ConcurrentDeleteRead,
    ConcurrentTransaction,
    ReadSet,
    check_winner,
)
from dbt.adapters.deltamerge.delta.txn.metrics import (
    MERGE_WRITTEN_METRICS,
    affected_rows,
    cdc_event_metrics,
    dml_metrics,
    execution_time,
    merge_file_metrics,
    merge_metrics,
    merge_row_metrics,
    optimize_metrics,
    rows_affected,
    timing_metrics,
    write_metrics,
)
from dbt.adapters.deltamerge.delta.txn.transaction import (
    CommitOptions,
    PendingCommit,
    WriteResult,
    commit_files,
)

# commands/: one command each, loaded on first use (``_COMMANDS``, ``__getattr__``): a dbt command
# that writes nothing (``parse``, ``ls``, ``compile``) loads none of them with the adapter.
if TYPE_CHECKING:
    from dbt.adapters.deltamerge.delta.commands.auto_optimize import (
        auto_compact,
        auto_compact_enabled,
    )
    from dbt.adapters.deltamerge.delta.commands.change_feed import read_changes
    from dbt.adapters.deltamerge.delta.commands.comments import set_descriptions
    from dbt.adapters.deltamerge.delta.commands.convert import (
        ALREADY_DELTA,
        ConvertError,
        ConvertResult,
        convert_to_delta,
        parse_partition_schema,
    )
    from dbt.adapters.deltamerge.delta.commands.optimize import (
        OptimizeOptions,
        optimize,
        plan_bins,
        zorder_problems,
    )
    from dbt.adapters.deltamerge.delta.commands.redefine import (
        commit_after,
        commit_before,
        recluster,
        redefine,
    )
    from dbt.adapters.deltamerge.delta.commands.vacuum import vacuum
    from dbt.adapters.deltamerge.delta.commands.zorder import ZOrderError

__all__ = [
    "ALREADY_DELTA",
    "AUTO_COMPACT",
    "CDC_POINTS",
    "CDF_PROPERTY",
    "CHANGE_TYPE",
    "CONSTRAINT_PREFIX",
    "CURRENT_DEFAULT",
    "DEFAULT_RETENTION_HOURS",
    "DEFAULT_TXN_RETENTION",
    "ENABLE_PROPERTY",
    "FILE_URI",
    "GENERATION_EXPRESSION",
    "MERGE_WRITTEN_METRICS",
    "NO_CHANGE",
    "OPTIMIZE_WRITE",
    "POINTS",
    "ROW_INDEX",
    "STABLE_COLUMNS",
    "STABLE_ROW_COMMIT_VERSION",
    "STABLE_ROW_ID",
    "TXN_RETENTION_PROPERTY",
    "AddFile",
    "ChangeFile",
    "CommitActions",
    "CommitInfo",
    "CommitOptions",
    "ConcurrentDeleteDelete",
    "ConcurrentDeleteRead",
    "ConcurrentModification",
    "ConcurrentTransaction",
    "Constraints",
    "ConvertError",
    "ConvertResult",
    "DeltaError",
    "DeltaSchemaError",
    "Identity",
    "OptimizeOptions",
    "PendingCommit",
    "ReadSet",
    "Redefinition",
    "Snapshot",
    "StorageError",
    "TableChange",
    "TableLocation",
    "UnsupportedTableFeature",
    "VectorUpdate",
    "WriteMode",
    "WriteRequest",
    "WriteResult",
    "WrittenFile",
    "ZOrderError",
    "affected_rows",
    "after_commit",
    "align_to_schema",
    "aligned_columns",
    "auto_compact",
    "auto_compact_enabled",
    "block_masks",
    "can_write",
    "cdc_event_metrics",
    "change_data_feed_enabled",
    "changed",
    "check_winner",
    "check_writable",
    "collect_positions",
    "commit",
    "commit_after",
    "commit_before",
    "commit_files",
    "committed_version_of",
    "computed_columns",
    "configuration_problems",
    "convert_to_delta",
    "crash_point",
    "default_value",
    "definition_actions",
    "describe",
    "dml_metrics",
    "enforced",
    "escape_partition_value",
    "evolved_schema",
    "execution_time",
    "explicit_values_refused",
    "find_field",
    "generated_columns",
    "has_delta_log",
    "identity_columns",
    "identity_value_column",
    "latest_version",
    "ledger",
    "load_snapshot",
    "local_path",
    "log_state",
    "mapping_mode",
    "mark_deleted",
    "materialized_columns",
    "maybe_checkpoint",
    "merge_file_metrics",
    "merge_metrics",
    "merge_row_metrics",
    "metadata",
    "optimize",
    "optimize_metrics",
    "parse_partition_folder",
    "parse_partition_schema",
    "partition_folder",
    "place_table",
    "plan_bins",
    "read_changes",
    "read_commit",
    "read_files",
    "recluster",
    "redefine",
    "redefined",
    "referenced_columns",
    "regenerated",
    "rows_affected",
    "schema_changes",
    "schema_from_json",
    "schema_to_json",
    "serialize",
    "set_descriptions",
    "size_and_mtime",
    "store_assigned",
    "substituted",
    "table_path_of",
    "timing_metrics",
    "vacuum",
    "value_problems",
    "vector_file",
    "with_change_data_feed",
    "with_deletion_vectors",
    "with_identity_values",
    "with_schema",
    "with_transaction_retention",
    "write_dataframe",
    "write_files",
    "write_files_and_changes",
    "write_metrics",
    "writes_deletion_vectors",
    "z85_encode",
    "zorder_problems",
]


# The commands' names and the module of each (``commands/<module>.py``).
_COMMANDS = {
    "ALREADY_DELTA": "convert",
    "ConvertError": "convert",
    "ConvertResult": "convert",
    "OptimizeOptions": "optimize",
    "ZOrderError": "zorder",
    "auto_compact": "auto_optimize",
    "auto_compact_enabled": "auto_optimize",
    "commit_after": "redefine",
    "commit_before": "redefine",
    "convert_to_delta": "convert",
    "optimize": "optimize",
    "parse_partition_schema": "convert",
    "plan_bins": "optimize",
    "read_changes": "change_feed",
    "recluster": "redefine",
    "redefine": "redefine",
    "set_descriptions": "comments",
    "vacuum": "vacuum",
    "zorder_problems": "optimize",
}


def __getattr__(name: str) -> Any:
    """A command's name, its module loaded on first use (PEP 562)."""
    module = _COMMANDS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.commands.{module}"), name)
    globals()[name] = value
    return value
