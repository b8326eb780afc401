"""We read the tables Delta Lake on Spark writes, per table feature, and write on them by its rules.

The reverse of ``test_delta_reads_ours.py``: Delta on Spark (``tests/delta_spark.py``) creates a
table with one feature on (deletion vectors, column mapping by name and by id, row tracking,
in-commit timestamps, the change feed, liquid clustering and its domain metadata, v2 checkpoints,
type widening, ``timestamp_ntz`` and ``variant`` columns), writes it with its own ``INSERT``,
``UPDATE``, ``DELETE``, ``MERGE`` and ``OPTIMIZE``, checkpointing every third version. Then ours:

- reads every version with the rows Delta reads of it (our reader, ``read_files``);
- registers the table by its location in Spark's catalog and reads it through the name, as a
  model's ``ref`` would;
- writes on it (``UPDATE``, ``INSERT``, ``MERGE`` through the name): Delta reads the result, with
  the rows ours reads, and the validator finds the table sound. Type widening is read, not yet
  written: a write is refused naming the feature, the table unchanged.

Identity, generated and default columns and CHECK / NOT NULL constraints Delta declared bind our
writes as Delta's (``test_ours_keeps_deltas_identity_generated_columns_and_constraints``).
"""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest

from dbt.adapters.deltamerge.delta import Stores, TableLocation, UnsupportedTableFeature, load_snapshot
from dbt.adapters.deltamerge.delta.data import read_files
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.statement import run_on_delta
from tests.backend import SLOW
from tests.functional.test_delta_reads_ours import _plain
from tests.validator import problems

pytestmark = [pytest.mark.delta]

COLUMNS = "id BIGINT, v BIGINT, s STRING"
# (table properties, columns, clustering, the value of the feature's own column if any).
FEATURES: dict[str, tuple[dict[str, str], str, str, str]] = {
    "deletion_vectors": ({"delta.enableDeletionVectors": "true"}, COLUMNS, "", ""),
    "column_mapping_name": ({"delta.columnMapping.mode": "name"}, COLUMNS, "", ""),
    "column_mapping_id": ({"delta.columnMapping.mode": "id"}, COLUMNS, "", ""),
    "row_tracking": ({"delta.enableRowTracking": "true"}, COLUMNS, "", ""),
    "in_commit_timestamps": ({"delta.enableInCommitTimestamps": "true"}, COLUMNS, "", ""),
    "change_data_feed": ({"delta.enableChangeDataFeed": "true"}, COLUMNS, "", ""),
    "liquid_clustering": ({}, COLUMNS, "CLUSTER BY (v)", ""),
    "v2_checkpoints": ({"delta.checkpointPolicy": "v2"}, COLUMNS, "", ""),
    "type_widening": ({"delta.enableTypeWidening": "true"}, f"{COLUMNS}, w INT", "", "7"),
    "timestamp_ntz": ({}, f"{COLUMNS}, t TIMESTAMP_NTZ", "", "timestamp_ntz'2024-05-06 07:08:09'"),
    "variant": ({}, f"{COLUMNS}, j VARIANT", "", "parse_json('{\"a\": 1}')"),
}
# ``make test`` runs a sample; ``DELTAMERGE_ORACLE_FEATURES=all`` (or the slow tier) every feature.
SAMPLE = ("deletion_vectors", "type_widening", "v2_checkpoints")
RUN = sorted(FEATURES) if os.environ.get("DELTAMERGE_ORACLE_FEATURES") == "all" or SLOW else SAMPLE


def _run(spark, sql: str) -> int | None:
    ran = run_on_delta(spark, SqlText(sql), Stores())
    assert ran is not None, sql
    return ran.result.version


def _ours(spark, path: str, version: int | None = None) -> list[tuple]:
    snapshot = load_snapshot(TableLocation.of(path), version)
    assert snapshot is not None
    return _plain([r.asDict() for r in read_files(spark, snapshot, snapshot.files).collect()])


def _theirs(delta, path: str, version: int | None = None) -> list[tuple]:
    at = f" VERSION AS OF {version}" if version is not None else ""
    return _plain(delta.query(f"SELECT * FROM delta.`{path}`{at}")[1])


@pytest.fixture
def schema(spark) -> str:
    name = f"theirs_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    return name


@pytest.mark.parametrize("feature", RUN)
def test_we_read_every_version_delta_writes_and_write_on_it(spark, delta_spark, schema, tmp_path, feature):
    properties, columns, clustering, value = FEATURES[feature]
    path, at = str(tmp_path / "t"), f"delta.`{tmp_path / 't'}`"
    extra = f", {value}" if value else ""
    props = ", ".join(f"'{k}' = '{v}'" for k, v in {**properties, "delta.checkpointInterval": "3"}.items())
    delta_spark.sql(f"CREATE TABLE {at} ({columns}) USING delta {clustering} TBLPROPERTIES ({props})")
    rows = ", ".join(f"({i}, {i * 10}, '{c}'{extra})" for i, c in zip(range(1, 6), "abcde", strict=True))
    delta_spark.sql(f"INSERT INTO {at} VALUES {rows}")
    if feature == "type_widening":  # int -> bigint: older files hold ints, read as bigints
        delta_spark.sql(f"ALTER TABLE {at} CHANGE COLUMN w TYPE BIGINT")
        extra = ", 3000000000"
    delta_spark.sql(f"UPDATE {at} SET v = v + 1 WHERE id = 2")
    delta_spark.sql(f"DELETE FROM {at} WHERE id = 3")
    own = f", {extra[2:]} AS {columns.split()[-2]}" if extra else ""
    delta_spark.sql(
        f"MERGE INTO {at} t USING (SELECT 4 AS id, 99 AS v, 'm' AS s{own} UNION ALL "
        f"SELECT 6, 60, 'f'{own}) u ON t.id = u.id "
        "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    delta_spark.sql(f"OPTIMIZE {at}")
    latest = delta_spark.history(path)[-1]["version"]
    assert os.path.exists(f"{path}/_delta_log/{3:020d}.checkpoint.parquet") or feature == "v2_checkpoints"

    for version in range(latest + 1):
        assert _ours(spark, path, version) == _theirs(delta_spark, path, version), (feature, version)

    # Registered by its location, read through the name, written by ours; Delta reads it back.
    table = f"{schema}.t"
    _run(spark, f"CREATE TABLE {table} USING delta LOCATION '{path}'")
    through_name = _plain([r.asDict() for r in spark.sql(f"SELECT * FROM {table}").collect()])
    assert through_name == _theirs(delta_spark, path)
    if feature == "type_widening":  # read, not written yet: refused by name before anything is written
        with pytest.raises(UnsupportedTableFeature, match="reader feature 'typeWidening'"):
            _run(spark, f"UPDATE {table} SET s = 'z' WHERE id = 5")
        assert load_snapshot(TableLocation.of(path)).version == latest and problems(path) == []  # type: ignore[union-attr]
        return
    _run(spark, f"UPDATE {table} SET s = 'z' WHERE id = 5")
    _run(spark, f"INSERT INTO {table} SELECT id + 10, v, s{extra} FROM {table} WHERE id = 1")
    _run(spark, f"MERGE INTO {table} t USING (SELECT 2 AS id) u ON t.id = u.id WHEN MATCHED THEN DELETE")
    final = _theirs(delta_spark, path)
    assert final == _ours(spark, path), feature
    by_id = {dict(r)["id"]: dict(r) for r in final}
    assert sorted(by_id) == [1, 4, 5, 6, 11] and by_id[5]["s"] == "z" and by_id[4]["v"] == 99, by_id
    assert problems(path) == [], feature


def test_ours_keeps_deltas_identity_generated_columns_and_constraints(spark, delta_spark, schema, tmp_path):
    path, at = str(tmp_path / "t"), f"delta.`{tmp_path / 't'}`"
    delta_spark.sql(
        f"CREATE TABLE {at} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10), "
        "v BIGINT NOT NULL, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), ts TIMESTAMP, "
        "status STRING DEFAULT 'new') USING delta "
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')"
    )
    delta_spark.sql(f"ALTER TABLE {at} ADD CONSTRAINT positive CHECK (v > 0)")
    delta_spark.sql(f"INSERT INTO {at} (v, ts) VALUES (1, timestamp'2024-01-01 10:00:00'), (2, NULL)")
    table = f"{schema}.t"
    _run(spark, f"CREATE TABLE {table} USING delta LOCATION '{path}'")
    _run(spark, f"INSERT INTO {table} (v, ts) VALUES (3, timestamp'2024-02-03 04:05:06')")
    rows = {r["v"]: r for r in delta_spark.sql(f"SELECT * FROM {at}")}
    assert sorted(r["id"] for r in rows.values()) == [100, 110, 120], rows  # above Delta's mark
    assert rows[3]["d"] == dt.date(2024, 2, 3) and rows[3]["status"] == "new"
    # Delta's CHECK and NOT NULL bind our writes; nothing is committed.
    version = load_snapshot(TableLocation.of(path)).version  # type: ignore[union-attr]
    for refused, says in (("(-5, NULL)", "positive"), ("(NULL, NULL)", "v")):
        with pytest.raises(Exception, match=says):
            _run(spark, f"INSERT INTO {table} (v, ts) VALUES {refused}")
    assert load_snapshot(TableLocation.of(path)).version == version  # type: ignore[union-attr]
    # Delta inserts after us: ids above our mark.
    delta_spark.sql(f"INSERT INTO {at} (v, ts) VALUES (4, NULL)")
    assert max(r["id"] for r in delta_spark.sql(f"SELECT id FROM {at}")) == 130
    assert problems(path) == []
