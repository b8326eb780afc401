"""Reading a Delta table's change data feed in Spark, as Delta's ``CDCReader`` does.

For each version in the range: if the commit has ``cdc`` actions, its changes are
exactly the rows of those ``_change_data/`` files; otherwise they are inferred from
the commit's ``add`` (``insert``) and ``remove`` (``delete``) actions with
``dataChange``. Every row gets ``_change_type``, ``_commit_version`` and
``_commit_timestamp`` (its in-commit timestamp where the table records them). Versions
written while the feed was off are refused with Delta's error rather than answered with wrong
rows; so is a version whose changes are only in deletion vectors (another writer's
merge-on-read without change files: its changes are the vectors' differences, not computed
here), naming the version. Tables with column mapping are refused (change files hold physical
names).
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from functools import reduce
from typing import Any
from urllib.parse import unquote

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta.data.files import CHANGE_DATA_DIR, CHANGE_TYPE
from dbt.adapters.deltamerge.delta.errors import DeltaError, UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.mapping import mapping_mode
from dbt.adapters.deltamerge.delta.log.protocol import change_data_feed_enabled
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot, load_snapshot
from dbt.adapters.deltamerge.delta.paths import local_path, parse_partition_folder, partition_folder
from dbt.adapters.deltamerge.delta.txn.commit import latest_version, read_commit

COMMIT_VERSION, COMMIT_TIMESTAMP = "_commit_version", "_commit_timestamp"


class ChangeDataNotRecorded(DeltaError):
    """Changes were asked for versions written while the feed was off."""


def read_changes(spark: SparkSession, table: TableLocation, start: int, end: int | None = None) -> DataFrame:
    """The change rows of versions ``start`` to ``end`` (default: the latest), in Spark."""
    latest = latest_version(table)
    end = latest if end is None else min(end, latest)
    if start < 0 or (end < start and start <= latest):
        raise DeltaError(f"Delta table at {table}: invalid version range [{start}, {end}]")
    snapshot = load_snapshot(table)
    if snapshot is None:
        raise DeltaError(f"No Delta table at {table}")
    snapshot.check_readable()
    if mapping_mode(snapshot.metadata.configuration) != "none":
        # Change files hold physical column names: this reader does not map them yet.
        raise UnsupportedTableFeature(
            f"Delta table at {table}: the change data feed of a table with the reader feature "
            "'columnMapping' is not read by this version. Nothing was read."
        )
    schema = _feed_schema(snapshot.schema)
    if start > latest:  # nothing committed since: an empty feed, not an error
        return spark.createDataFrame([], schema)
    frames = [
        frame
        for version, actions in _commits_with_feed(table, start, end)
        for frame in _changes_of(spark, snapshot, version, actions)
    ]
    if not frames:
        return spark.createDataFrame([], schema)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result.select(*[F.col(quote_identifier(f.name)) for f in schema.fields])


def _commits_with_feed(
    table: TableLocation, start: int, end: int
) -> Iterable[tuple[int, list[dict[str, Any]]]]:
    at_start = load_snapshot(table, start)
    configuration = dict(at_start.metadata.configuration) if at_start else {}
    for version in range(start, end + 1):
        actions = read_commit(table, version)
        if version > start:
            for action in actions:
                if "metaData" in action:
                    configuration = dict(action["metaData"].get("configuration") or {})
        if not change_data_feed_enabled(configuration):
            raise ChangeDataNotRecorded(
                f"Error getting change data for range [{start} , {end}] as change data was not recorded "
                f"for version [{version}]. If you've enabled change data feed on this table, use "
                "`DESCRIBE HISTORY` to see when it was first enabled. Otherwise, to start recording change "
                "data, use `ALTER TABLE table_name SET TBLPROPERTIES (delta.enableChangeDataFeed=true)`."
            )
        yield version, actions


def _changes_of(
    spark: SparkSession, snapshot: Snapshot, version: int, actions: list[dict[str, Any]]
) -> list[DataFrame]:
    stamp = _timestamp(snapshot.location, version, actions)
    cdc = [a["cdc"]["path"] for a in actions if "cdc" in a]
    if not cdc and _changed_by_deletion_vectors(actions):
        raise UnsupportedTableFeature(
            f"Delta table at {snapshot.table_path}: version {version} changed rows with deletion vectors "
            "and recorded no change files; its changes are the differences of the vectors, which this "
            "version does not compute (reader feature 'deletionVectors'). Nothing was read."
        )
    groups: list[tuple[list[str], str | None]]
    if cdc:
        groups = [(cdc, None)]
        base = os.path.join(snapshot.table_path, CHANGE_DATA_DIR)
    else:
        adds = [a["add"]["path"] for a in actions if "add" in a and a["add"].get("dataChange", True)]
        removes = [
            a["remove"]["path"] for a in actions if "remove" in a and a["remove"].get("dataChange", True)
        ]
        groups = [(adds, "insert"), (removes, "delete")]
        base = snapshot.table_path
    frames = []
    for paths, change_type in groups:
        if not paths:
            continue
        frame = _read(spark, snapshot, base, paths, with_change_type=change_type is None)
        if change_type is not None:
            frame = frame.withColumn(CHANGE_TYPE, F.lit(change_type))
        frames.append(
            frame.withColumn(COMMIT_VERSION, F.lit(version).cast("long")).withColumn(
                COMMIT_TIMESTAMP, F.lit(stamp).cast("timestamp")
            )
        )
    return frames


def _changed_by_deletion_vectors(actions: list[dict[str, Any]]) -> bool:
    """Whether a commit's data changes are in its file actions' deletion vectors."""
    return any(
        a[kind].get("deletionVector") and a[kind].get("dataChange", True)
        for a in actions
        for kind in ("add", "remove")
        if kind in a
    )


def _read(
    spark: SparkSession, snapshot: Snapshot, base: str, paths: list[str], *, with_change_type: bool
) -> DataFrame:
    schema = snapshot.schema
    if with_change_type:
        schema = T.StructType([*schema.fields, T.StructField(CHANGE_TYPE, T.StringType())])
    reader = spark.read.schema(schema)
    if not snapshot.partition_columns:
        return reader.parquet(*[local_path(snapshot.table_path, p) for p in paths])
    columns = snapshot.partition_columns
    by_values: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
    for path in paths:
        values = parse_partition_folder(os.path.dirname(unquote(path)), columns)
        by_values.setdefault(tuple(values.items()), []).append(path)
    in_folders = all(
        os.path.dirname(unquote(p)).removeprefix(CHANGE_DATA_DIR + "/") == partition_folder(columns, dict(v))
        for v, group in by_values.items()
        for p in group
    )
    if in_folders:  # Spark's partition inference reads the values from the folders
        files = [local_path(snapshot.table_path, p) for p in paths]
        return reader.option("basePath", base).parquet(*files)
    # Files outside their partition folders (an object store's ``w<uuid>/`` folders): one scan per
    # partition, its values from the folder names the file's path ends with.
    data = T.StructType([f for f in schema.fields if f.name not in columns])
    frames = []
    for key, group in by_values.items():
        known = dict(key)
        rows = spark.read.schema(data).parquet(*[local_path(snapshot.table_path, p) for p in group])
        frames.append(
            rows.select(
                *[
                    F.lit(known[f.name]).cast(f.dataType).alias(f.name)
                    if f.name in known
                    else F.col(quote_identifier(f.name))
                    for f in schema.fields
                ]
            )
        )
    return reduce(DataFrame.unionAll, frames)


def _timestamp(table: TableLocation, version: int, actions: list[dict[str, Any]]) -> dt.datetime:
    info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    millis = info.get("inCommitTimestamp") or info.get("timestamp")
    if millis is None:
        millis = table.store.size_and_mtime(table.commit_file(version))[1] * 1000
    return dt.datetime.fromtimestamp(millis / 1000)


def _feed_schema(schema: T.StructType) -> T.StructType:
    return T.StructType(
        [
            *schema.fields,
            T.StructField(CHANGE_TYPE, T.StringType()),
            T.StructField(COMMIT_VERSION, T.LongType()),
            T.StructField(COMMIT_TIMESTAMP, T.TimestampType()),
        ]
    )
