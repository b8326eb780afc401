"""One Delta version as one Iceberg metadata file (``delta/uniform/convert.py``), on a local folder.

No Spark, no Delta table: versions are given as the log has them (adds with statistics, removes
by path); pyiceberg's own reader reads the manifests back.
"""

from __future__ import annotations

import dataclasses
import json

from pyiceberg.manifest import ManifestEntryStatus
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.stores import LOCAL
from dbt.adapters.deltamerge.delta.uniform.convert import convert
from dbt.adapters.deltamerge.delta.uniform.fileio import StoreFileIO
from dbt.adapters.deltamerge.delta.uniform.manifests import MAX_MANIFESTS
from dbt.adapters.deltamerge.delta.uniform.version import DeltaVersion, metadata_name, snapshot_id

TABLE_ID = "6f1c1b8e-3f7a-4a53-9f59-3d5f0a6f2b10"
SCHEMA = T.StructType(
    [
        T.StructField(
            "id",
            T.LongType(),
            True,
            {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-a"},
        ),
        T.StructField(
            "p",
            T.StringType(),
            True,
            {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-b"},
        ),
    ]
)


def _add(name: str, p: str, low: int, high: int) -> dict:
    stats = {
        "numRecords": 3,
        "minValues": {"col-a": low},
        "maxValues": {"col-a": high},
        "nullCount": {"col-a": 0},
    }
    return {
        "path": f"p={p}/{name}.parquet",
        "size": 100,
        "partitionValues": {"col-b": p},
        "stats": json.dumps(stats),
    }


def _version(root: str, version: int, adds=(), removed=(), full=False) -> DeltaVersion:
    return DeltaVersion(
        version=version,
        timestamp_ms=1_700_000_000_000 + version,
        root=root,
        table_id=TABLE_ID,
        schema=SCHEMA,
        partition_columns=["p"],
        configuration={"delta.universalFormat.config.iceberg.write.format.default": "parquet"},
        adds=list(adds),
        removed=frozenset(removed),
        full=full,
    )


def _live(metadata, io) -> dict[str, int]:
    snapshot = metadata.snapshot_by_id(metadata.current_snapshot_id)
    return {
        e.data_file.file_path: e.data_file.record_count
        for m in snapshot.manifests(io)
        for e in m.fetch_manifest_entry(io, discard_deleted=True)
    }


def test_versions_become_snapshots_with_the_log_s_files_ids_and_bounds(tmp_path):
    root, io = str(tmp_path), StoreFileIO(LOCAL)
    first = convert(None, None, _version(root, 0, [_add("a", "x", 1, 3), _add("b", "y", 4, 6)]), io)
    meta = first.metadata
    assert first.location.endswith("metadata/" + metadata_name(TABLE_ID, 0))
    assert str(meta.table_uuid) == TABLE_ID and meta.current_snapshot_id == snapshot_id(TABLE_ID, 0)
    assert [(f.field_id, f.name) for f in meta.schema().fields] == [(1, "id"), (2, "p")]
    assert [(f.source_id, f.field_id, f.name) for f in meta.spec().fields] == [(2, 1000, "p")]
    assert meta.properties["delta-version"] == "0" and meta.properties["write.format.default"] == "parquet"
    assert json.loads(meta.properties["schema.name-mapping.default"])[0]["names"] == ["col-a", "id"]
    entries = [e for m in meta.current_snapshot().manifests(io) for e in m.fetch_manifest_entry(io)]
    by_path = {e.data_file.file_path: e.data_file for e in entries}
    a = by_path[f"{root}/p=x/a.parquet"]
    assert a.partition[0] == "x" and a.record_count == 3 and a.lower_bounds[1] == (1).to_bytes(8, "little")

    # Version 1 removes a and adds c: a is deleted in a rewritten manifest, b carried.
    second = convert(meta, first.location, _version(root, 1, [_add("c", "x", 7, 9)], ["p=x/a.parquet"]), io)
    assert sorted(_live(second.metadata, io)) == [f"{root}/p=x/c.parquet", f"{root}/p=y/b.parquet"]
    assert second.metadata.current_snapshot().summary["delta-version"] == "1"
    assert [entry.metadata_file for entry in second.metadata.metadata_log] == [first.location]
    statuses = {
        e.data_file.file_path: e.status
        for m in second.metadata.current_snapshot().manifests(io)
        for e in m.fetch_manifest_entry(io, discard_deleted=False)
    }
    assert statuses[f"{root}/p=x/a.parquet"] == ManifestEntryStatus.DELETED

    # A version changing no data (properties) is a metadata file, no snapshot.
    third = convert(second.metadata, second.location, _version(root, 2), io)
    assert not third.snapshot and third.metadata.current_snapshot_id == second.metadata.current_snapshot_id
    assert third.metadata.properties["delta-version"] == "2"


def test_the_same_version_converts_to_the_same_files(tmp_path):
    root = str(tmp_path)
    one = convert(None, None, _version(root, 0, [_add("a", "x", 1, 3)]), StoreFileIO(LOCAL))
    again = convert(None, None, _version(root, 0, [_add("a", "x", 1, 3)]), StoreFileIO(LOCAL))
    assert one.location == again.location and one.metadata == again.metadata


def test_manifests_are_merged_past_the_limit(tmp_path):
    root, io = str(tmp_path), StoreFileIO(LOCAL)
    state = convert(None, None, _version(root, 0, [_add("f0", "x", 0, 0)]), io)
    for version in range(1, MAX_MANIFESTS + 3):
        state = convert(
            state.metadata, state.location, _version(root, version, [_add(f"f{version}", "x", 0, 0)]), io
        )
        assert len(state.metadata.current_snapshot().manifests(io)) <= MAX_MANIFESTS
    assert len(_live(state.metadata, io)) == MAX_MANIFESTS + 3


def test_snapshots_older_than_the_file_retention_leave_the_metadata(tmp_path):
    root, io = str(tmp_path), StoreFileIO(LOCAL)
    retention = {"delta.deletedFileRetentionDuration": "interval 2 milliseconds"}
    state = convert(None, None, _version(root, 0, [_add("f0", "x", 0, 0)]), io)
    for version in range(1, 6):
        change = dataclasses.replace(
            _version(root, version, [_add(f"f{version}", "x", 0, 0)]), configuration=retention
        )
        state = convert(state.metadata, state.location, change, io)
    # Versions 3, 4 and 5 (timestamps within 2 ms of version 5's) keep their snapshots.
    assert [s.summary["delta-version"] for s in state.metadata.snapshots] == ["3", "4", "5"]
    assert [e.snapshot_id for e in state.metadata.snapshot_log] == [
        s.snapshot_id for s in state.metadata.snapshots
    ]
    assert len(_live(state.metadata, io)) == 6  # the files stay: expiry drops history, not data
