"""The object-store binding's pure parts: Spark's URIs, the manifest, the view's SQL."""

from __future__ import annotations

import json
from types import SimpleNamespace

from pyspark.sql import types as T

from dbt.adapters.deltamerge.binding.manifest import (
    bindable,
    files_columns,
    manifest_text,
    partition_value,
    spark_uri,
    view_statement,
)
from dbt.adapters.deltamerge.delta import TableLocation


def _snapshot(files, partitions=(), configuration=None):
    return SimpleNamespace(
        table_path="s3a://lake/t",
        location=TableLocation.of("s3a://lake/t"),
        files=files,
        partition_columns=list(partitions),
        metadata=SimpleNamespace(configuration=configuration or {}),
    )


def test_the_manifest_names_each_live_file_by_its_uri_in_sparks_v1_format():
    files = [
        SimpleNamespace(path="w1/day=2026-01-01/part-0.parquet", size=10),
        SimpleNamespace(path="w1/day=a%2520b/part-1.parquet", size=20),
    ]
    lines = manifest_text(_snapshot(files, ["day"])).decode().split("\n")
    assert lines[0] == "v1"
    entries = [json.loads(line) for line in lines[1:]]
    assert [e["path"] for e in entries] == [
        "s3a://lake/t/w1/day=2026-01-01/part-0.parquet",
        "s3a://lake/t/w1/day=a%2520b/part-1.parquet",  # the key holds Hive's "a%20b"
    ]
    assert [e["size"] for e in entries] == [10, 20]
    assert all(e["action"] == "add" and e["isDir"] is False for e in entries)


def test_spark_uri_encodes_what_java_uri_would():
    assert spark_uri("s3a://lake/t/k=a b/x y.parquet") == "s3a://lake/t/k=a%20b/x%20y.parquet"
    assert spark_uri("gs://b/t/k=1/p.parquet") == "gs://b/t/k=1/p.parquet"


def test_the_view_takes_partition_values_from_paths_and_masks_only_when_asked():
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("day", T.DateType())])
    snapshot = _snapshot([], ["day"])
    plain = view_statement("`s`.`v`", "`s`.`f`", snapshot, "s3a://lake/t/_c/v1", schema, "", "", masked=False)
    assert "AS `day`" in plain and "_dm_rows.`id`" in plain and "JOIN" not in plain
    assert "AS DATE" in partition_value(TableLocation.of("s3a://lake/t"), "day", T.DateType())
    masked = view_statement("`s`.`v`", "`s`.`f`", snapshot, "s3a://lake/t/_c/v1", schema, "", "", masked=True)
    joined = (
        "LEFT JOIN parquet.`s3a://lake/t/_c/v1/_masks` _dm_masks "
        "ON _dm_masks.file = _dm_rows._metadata.file_path"
    )
    assert joined in masked


MAPPED = {"delta.columnMapping.mode": "name", "delta.enableIcebergCompatV2": "true"}


def _mapped(name: str, data_type: T.DataType, physical: str) -> T.StructField:
    return T.StructField(name, data_type, True, {"delta.columnMapping.physicalName": physical})


def test_a_mapped_table_is_read_by_physical_names_renamed_in_the_view():
    inner = T.StructType([_mapped("Street", T.StringType(), "col-s")])
    schema = T.StructType(
        [
            _mapped("id", T.LongType(), "col-1"),
            _mapped("a", inner, "col-2"),
            _mapped("day", T.DateType(), "col-3"),
        ]
    )
    snapshot = _snapshot([], ["day"], MAPPED)
    assert bindable(snapshot) and not bindable(_snapshot([], ["day"], {"delta.columnMapping.mode": "name"}))
    assert bindable(_snapshot([], [], {"delta.columnMapping.mode": "name"}))  # no partition values needed
    assert (
        files_columns(snapshot, schema).simpleString()
        == "struct<col-1:bigint,col-2:struct<col-s:string>,col-3:date>"
    )
    view = view_statement("`s`.`v`", "`s`.`f`", snapshot, "s3a://lake/t/_c/v1", schema, "", "", masked=False)
    assert (
        "_dm_rows.`col-1` AS `id`" in view and "_dm_rows.`col-3` AS `day`" in view
    )  # partition: in the file
    assert "CAST(_dm_rows.`col-2` AS STRUCT<`Street`: STRING>) AS `a`" in view
