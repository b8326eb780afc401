"""Auto compaction and optimized writes: ``delta.autoOptimize.autoCompact`` / ``optimizeWrite``.

Auto compaction (Delta's ``AutoCompact`` post-commit hook): after a write that added files, each
partition it added files to that now holds at least 50 small files (under 64 MiB, half of the
128 MiB auto compaction writes; ``delta.targetFileSize`` sets both) is compacted by a separate
``OPTIMIZE`` commit with ``auto: true``. Like Delta's hook, a compaction that loses a race to
another writer is given up and logged: the write it follows is committed and stays so.

Optimized writes (``files.optimized``): a write to a table with ``delta.autoOptimize.optimizeWrite``
shuffles its rows (by partition columns) into Spark's adaptive partitions before writing, as
Delta's optimized write does, so each partition gets a few right-sized files instead of one per
Spark task.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.log.mapping import physical_names
from dbt.adapters.deltamerge.delta.log.properties import AUTO_COMPACT
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.txn.transaction import WriteResult

# Delta's autoCompact.minNumFiles: small files a partition needs before auto compaction runs.
MIN_NUM_FILES = 50
_LOG = logging.getLogger(__name__)

Partition = tuple[tuple[str, "str | None"], ...]


def auto_compact_enabled(configuration: Mapping[str, str]) -> bool:
    """Delta's values that switch auto compaction on (``true``, ``auto``, ``legacy``).

    >>> auto_compact_enabled({AUTO_COMPACT: "Auto"}), auto_compact_enabled({})
    (True, False)
    """
    return str(configuration.get(AUTO_COMPACT, "false")).lower() in ("true", "auto", "legacy")


def partitions_to_compact(
    files: Sequence[AddFile], touched: set[Partition], small_size: int
) -> set[Partition]:
    """The ``touched`` partitions holding at least ``MIN_NUM_FILES`` files under ``small_size``.

    >>> files = [AddFile(f"f{i}", 10, {"p": "a" if i < 50 else "b"}) for i in range(60)]
    >>> sorted(partitions_to_compact(files, {(("p", "a"),), (("p", "b"),)}, 100))
    [(('p', 'a'),)]
    """
    counts: dict[Partition, int] = {}
    for file in files:
        key = tuple(sorted(file.partition_values.items()))
        if key in touched and file.size < small_size:
            counts[key] = counts.get(key, 0) + 1
    return {key for key, count in counts.items() if count >= MIN_NUM_FILES}


def auto_compact(spark: SparkSession, result: WriteResult, *, enabled: bool = False) -> WriteResult | None:
    """The ``OPTIMIZE`` (``auto: true``) a committed write asks for, or None (not enabled, not due,
    or lost to a concurrent writer: logged, the write stands). ``enabled``: on whatever the table
    says (a model's ``auto_optimize`` on a table created without it)."""
    snapshot = result.snapshot
    if result.version is None or result.operation == "OPTIMIZE":
        return None
    if not (enabled or auto_compact_enabled(snapshot.metadata.configuration)) or snapshot.clustering:
        return None  # a clustered table's new files wait for its OPTIMIZE, which clusters them
    # OPTIMIZE and Z-order are loaded by the tables that compact (not by every write).
    from dbt.adapters.deltamerge.delta.commands.optimize import OptimizeOptions, optimize

    touched = _partitions_added_to(snapshot, result.version)
    options = OptimizeOptions.for_table(dict(snapshot.metadata.configuration), auto=True)
    due = partitions_to_compact(snapshot.files, touched, options.small_size)
    if not due:
        return None
    considered = [f for f in snapshot.files if tuple(sorted(f.partition_values.items())) in due]
    try:
        return optimize(spark, snapshot, considered, options)
    except ConcurrentModification as lost:
        _LOG.warning(
            "Delta table at %s: auto compaction gave up after a concurrent commit (%s)",
            snapshot.table_path,
            lost,
        )
        return None


def _partitions_added_to(snapshot: Snapshot, version: int) -> set[Partition]:
    """The partitions (logical names) the commit at ``version`` added files to."""
    logical = {v: k for k, v in physical_names(snapshot.schema).items()}
    touched: set[Partition] = set()
    table = snapshot.location
    for line in table.store.read_bytes(table.commit_file(version)).decode("utf-8").splitlines():
        add = json.loads(line).get("add") if line.strip() else None
        if add is not None:
            values = add.get("partitionValues") or {}
            touched.add(tuple(sorted((logical.get(k, k), v) for k, v in values.items())))
    return touched
