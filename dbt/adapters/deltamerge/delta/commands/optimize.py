"""OPTIMIZE: small files bin-packed into right-sized ones, or a partition's rows Z-ordered; one commit.

As Delta's ``OptimizeExecutor``: of the files considered (a partition predicate's), compaction
takes those smaller than the small-file size or whose deletion vector deletes more than 5% of
their rows, groups them per partition (smallest first) into bins of at most the target size, and
rewrites every bin of more than one file as one file; Z-order takes every file of a partition as
one bin and writes it as ``max(1, bytes / target)`` files ordered by ``zorder``. Rows leave
without the rows deletion vectors delete and keep their stable row ids. The commit is an
``OPTIMIZE`` whose adds and removes carry ``dataChange: false`` and Delta's metrics.

Sizes (Delta's defaults): an OPTIMIZE aims at ``delta.targetFileSize`` (1 GiB when unset, Delta's
``optimize.maxFileSize``) and calls smaller files small; auto compaction aims at 128 MiB and
calls files under half of it small (Delta's ``autoCompact.maxFileSize`` / ``minFileSize``).

Conflicts (Delta's for a commit that changes no data): files other writers add do not conflict;
a concurrent commit that removed a file this OPTIMIZE rewrites makes it fail (``ConcurrentDeleteRead``)
with nothing committed, and it can simply be run again.

One Spark job writes every bin: each bin is its own scan coalesced to one task (Z-order: range
partitioned), the scans unioned, so bins are written in parallel without a shuffle.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.commands.zorder import ZOrderBin, ZOrderError, zordered
from dbt.adapters.deltamerge.delta.data.files import OPTIMIZE_WRITE
from dbt.adapters.deltamerge.delta.data.read import read_files
from dbt.adapters.deltamerge.delta.data.stored import write_files
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.clustering import PROVIDER, is_clustered_file
from dbt.adapters.deltamerge.delta.log.row_ids import STABLE_COLUMNS, materialized_columns
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.log.stats import columns_with_stats
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo
from dbt.adapters.deltamerge.delta.txn.conflicts import ReadSet
from dbt.adapters.deltamerge.delta.txn.metrics import execution_time, optimize_metrics
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files

TARGET_FILE_SIZE = "delta.targetFileSize"
OPTIMIZE_MAX_FILE_SIZE = 1024 * 1024 * 1024
AUTO_COMPACT_MAX_FILE_SIZE = 128 * 1024 * 1024
MAX_DELETED_ROWS_RATIO = 0.05
_UNION_PARTITIONING = "spark.sql.unionOutputPartitioning"


@dataclass(frozen=True)
class OptimizeOptions:
    """What one OPTIMIZE does: output size, what counts as small, Z-order columns, auto compaction."""

    target_size: int
    small_size: int
    zorder_by: tuple[str, ...] = ()
    auto: bool = False
    # A clustered table's clustering columns (its OPTIMIZE clusters); FULL: every file, not only new ones.
    clustering: tuple[str, ...] = ()
    full: bool = False

    @classmethod
    def for_table(
        cls,
        configuration: dict[str, str],
        *,
        zorder_by: Sequence[str] = (),
        auto: bool = False,
        full: bool = False,
    ) -> OptimizeOptions:
        """Delta's sizes for the table: ``delta.targetFileSize`` or the defaults above.

        >>> OptimizeOptions.for_table({}).target_size == OPTIMIZE_MAX_FILE_SIZE
        True
        >>> OptimizeOptions.for_table({"delta.targetFileSize": "1000"}, auto=True).small_size
        500
        """
        default = AUTO_COMPACT_MAX_FILE_SIZE if auto else OPTIMIZE_MAX_FILE_SIZE
        target = int(configuration.get(TARGET_FILE_SIZE, default))
        return cls(target, target // 2 if auto else target, tuple(zorder_by), auto, full=full)


@dataclass(frozen=True)
class Bin:
    """Files of one partition rewritten together: one output file (Z-order: ``files_out`` files)."""

    partition_values: tuple[tuple[str, str | None], ...]
    files: tuple[AddFile, ...]
    files_out: int

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def wants_rewrite(file: AddFile, options: OptimizeOptions) -> bool:
    """A file compaction rewrites: small, or its vector deletes more than Delta's ratio of its rows
    (or it has a vector and no row count)."""
    if options.zorder_by or file.size < options.small_size:
        return True
    if file.deletion_vector is None:
        return False
    if not file.num_records:
        return True
    return len(file.deleted_rows) / file.num_records > MAX_DELETED_ROWS_RATIO


def plan_bins(files: Sequence[AddFile], options: OptimizeOptions) -> list[Bin]:
    """The bins of ``files`` (the considered ones), as Delta's ``groupFilesIntoBins``.

    >>> small = [AddFile(f"f{i}", 10, {}) for i in range(5)]
    >>> [len(b.files) for b in plan_bins(small, OptimizeOptions(25, 25))]
    [2, 2]
    >>> [b.files_out for b in plan_bins(small, OptimizeOptions(20, 20, ("a",)))]
    [2]
    """
    by_partition: dict[tuple[tuple[str, str | None], ...], list[AddFile]] = {}
    for file in files:
        if wants_rewrite(file, options):
            by_partition.setdefault(tuple(sorted(file.partition_values.items())), []).append(file)
    bins = []
    for partition, found in by_partition.items():
        if options.zorder_by:
            total = sum(f.size for f in found)
            bins.append(Bin(partition, tuple(found), max(1, total // options.target_size)))
            continue
        current: list[AddFile] = []
        size = 0
        for file in sorted(found, key=lambda f: f.size):
            if current and size + file.size > options.target_size:
                bins.append(Bin(partition, tuple(current), 1))
                current, size = [], 0
            current.append(file)
            size += file.size
        if current:
            bins.append(Bin(partition, tuple(current), 1))
    return [b for b in bins if len(b.files) > 1 or options.zorder_by]


def zorder_problems(snapshot: Snapshot, columns: Sequence[str]) -> tuple[list[str], list[str]]:
    """Delta's refusals of Z-order columns, and the columns in the table's spelling."""
    problems, resolved = [], []
    fields = {f.name.lower(): f.name for f in snapshot.schema.fields}
    partitions = {c.lower() for c in snapshot.partition_columns}
    with_stats = columns_with_stats(snapshot.schema, snapshot.metadata.configuration)
    for column in columns:
        name = fields.get(column.lower())
        if name is None:
            problems.append(f"Z-Ordering column {column} does not exist in data schema.")
        elif column.lower() in partitions:
            problems.append(
                f"{column} is a partition column. Z-Ordering can only be performed on data columns"
            )
        elif column.lower() not in with_stats:
            problems.append(
                f"Z-Ordering on [{column}] will be ineffective, because we currently do not collect stats "
                "for these columns."
            )
        else:
            resolved.append(name)
    return problems, resolved


def optimize(
    spark: SparkSession,
    snapshot: Snapshot,
    considered: Sequence[AddFile],
    options: OptimizeOptions,
    predicate: Sequence[str] = (),
) -> WriteResult:
    """OPTIMIZE ``considered`` (live files of ``snapshot`` a partition predicate kept): one commit,
    or none when no bin needs rewriting."""
    started = time.monotonic()
    snapshot.check_writable()
    options, considered = _clustered(snapshot, options, considered)
    problems, columns = zorder_problems(snapshot, options.zorder_by)
    if problems:
        raise ZOrderError("; ".join(problems) + ". Nothing was committed.")
    bins = plan_bins(considered, options)
    removed = [f for b in bins for f in b.files]
    if not removed:
        return WriteResult(
            None, "OPTIMIZE", optimize_metrics(removed=[], written=[]) | execution_time(0), snapshot
        )
    written = write_files(_rows(spark, snapshot, bins, columns), *_layout(snapshot))
    if options.clustering:
        written = [replace(w, clustering_provider=PROVIDER) for w in written]
    metrics = optimize_metrics(
        removed=removed, written=written, vectors_removed=sum(1 for f in removed if f.deletion_vector)
    )
    metrics |= execution_time(int((time.monotonic() - started) * 1000))
    clustered = snapshot.clustering is not None
    parameters: dict[str, object] = {
        "predicate": list(predicate),
        "zOrderBy": [] if clustered else list(columns),
        "clusterBy": list(options.clustering),
        "auto": options.auto,
        **({"isFull": options.full} if options.clustering else {}),
    }
    preserved = materialized_columns(snapshot.metadata.configuration) is not None
    info = CommitInfo(
        "OPTIMIZE", parameters, metrics, row_ids_kept=preserved, isolation_level="SnapshotIsolation"
    )
    read = ReadSet(files_read=frozenset(f.path for f in removed), reads=lambda _added: False)
    return commit_files(
        snapshot,
        CommitActions(written=written, removed=removed),
        CommitOptions(info, read=read, data_change=False),
    )


def _clustered(
    snapshot: Snapshot, options: OptimizeOptions, considered: Sequence[AddFile]
) -> tuple[OptimizeOptions, Sequence[AddFile]]:
    """A clustered table's OPTIMIZE: its files not clustered yet (``FULL``: all) ordered by its
    clustering columns (Z-order here; Delta's curve is Hilbert's); Delta's refusal of ZORDER BY."""
    columns = snapshot.clustering
    if columns is None:
        return options, considered
    if options.zorder_by:
        raise ZOrderError(
            "OPTIMIZE command for Delta table with clustering cannot specify ZORDER BY. Please remove "
            f"ZORDER BY ({', '.join(options.zorder_by)}). Nothing was committed."
        )
    if not columns:
        return options, considered  # clustered by nothing (CLUSTER BY NONE): compaction
    unclustered = [f for f in considered if options.full or not is_clustered_file(f.logged)]
    return replace(options, zorder_by=columns, clustering=columns), unclustered


def _rows(
    spark: SparkSession, snapshot: Snapshot, bins: Sequence[Bin], zorder_by: Sequence[str]
) -> DataFrame:
    """Every bin's live rows (with their stable row ids), each bin in its own task(s)."""
    names = [quote_identifier(f.name) for f in snapshot.schema.fields]
    kept = [n for n in STABLE_COLUMNS] if materialized_columns(snapshot.metadata.configuration) else []

    def live(files: Sequence[AddFile]) -> DataFrame:
        rows = read_files(spark, snapshot, files, row_ids=bool(kept))
        return rows.select(*names, *[F.col(n) for n in kept])

    if spark.conf.get(_UNION_PARTITIONING, "true") != "false":
        # Spark 4 zips a union of one-partition children into one task: every bin would be one file.
        spark.conf.set(_UNION_PARTITIONING, "false")
    if zorder_by:
        rows = [
            sum(f.live_records or 0 for f in b.files)
            if all(f.num_records is not None for f in b.files)
            else None
            for b in bins
        ]
        zbins = [ZOrderBin(live(b.files), b.files_out, n) for b, n in zip(bins, rows, strict=True)]
        return zordered(spark, zbins, zorder_by)
    frames = [live(b.files).coalesce(1) for b in bins]
    return reduce(DataFrame.unionAll, frames)


def _layout(snapshot: Snapshot) -> tuple[TableLocation, list[str], dict[str, str], T.StructType]:
    # The bins are the layout: no optimized write's shuffle over them.
    configuration = {k: v for k, v in snapshot.metadata.configuration.items() if k != OPTIMIZE_WRITE}
    return (snapshot.location, snapshot.partition_columns, configuration, snapshot.schema)
