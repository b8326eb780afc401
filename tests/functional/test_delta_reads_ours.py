"""Delta Lake on Spark reads the tables we write, per table feature, and writes them by our rules.

Each case builds a table with our engine (the SQL statements dbt and users run, through
``run_on_delta``), one feature on: deletion vectors, column mapping by name and by id, row
tracking, in-commit timestamps, the change feed, liquid clustering, ``timestamp_ntz`` and
``variant`` columns, and identity, generated and default columns with CHECK and NOT NULL
constraints (``make test``: deletion vectors, column mapping and the change feed on one table;
``DELTAMERGE_ORACLE_FEATURES=all``: each feature alone). Then Delta on Spark (``tests/delta_spark.py``):

- reads every version (time travel) with the rows delta-rs reads of it;
- lists the history with our operations, and the change feed where it is on;
- would vacuum the same files as ours (``VACUUM ... DRY RUN``);
- inserts, merges and optimizes the table with its own commands, which keep our constraints (a
  violating row is refused with Delta's error) and identity marks (new ids above ours), writing
  a checkpoint; we then read the table and write on it again, and Delta reads that.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from dbt.adapters.deltamerge.delta import Stores, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.commands import vacuum
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.statement import run_on_delta
from tests.backend import SLOW
from tests.functional.helpers import log_actions
from tests.validator import problems

COLUMNS = "id BIGINT, v BIGINT, s STRING"
ROWS = "(1, 10, 'a'), (2, 20, 'b'), (3, 30, 'c'), (4, 40, 'd')"
# (table properties, columns, clustering): one feature on per case.
FEATURES: dict[str, tuple[dict[str, str], str, str]] = {
    "deletion_vectors": ({"delta.enableDeletionVectors": "true"}, COLUMNS, ""),
    "column_mapping_name": ({"delta.columnMapping.mode": "name"}, COLUMNS, ""),
    "column_mapping_id": ({"delta.columnMapping.mode": "id"}, COLUMNS, ""),
    "row_tracking": ({"delta.enableRowTracking": "true"}, COLUMNS, ""),
    "in_commit_timestamps": ({"delta.enableInCommitTimestamps": "true"}, COLUMNS, ""),
    "change_data_feed": ({"delta.enableChangeDataFeed": "true"}, COLUMNS, ""),
    "liquid_clustering": ({}, COLUMNS, "CLUSTER BY (v)"),
    "timestamp_ntz": ({}, f"{COLUMNS}, t TIMESTAMP_NTZ", ""),
    "variant": ({}, f"{COLUMNS}, j VARIANT", ""),
}
# ``make test``'s sample: the three features readers most often get wrong, on one table together.
TOGETHER = ("deletion_vectors", "column_mapping_name", "change_data_feed")
FEATURES["+".join(TOGETHER)] = ({k: v for f in TOGETHER for k, v in FEATURES[f][0].items()}, COLUMNS, "")
# The value of a feature's own column (named last in its columns).
# ``make test`` runs a sample; ``DELTAMERGE_ORACLE_FEATURES=all`` (or the slow tier) every feature.
SAMPLE = ("+".join(TOGETHER),)
RUN = sorted(FEATURES) if os.environ.get("DELTAMERGE_ORACLE_FEATURES") == "all" or SLOW else SAMPLE
EXTRA_VALUES = {"timestamp_ntz": "timestamp_ntz'2024-05-06 07:08:09'", "variant": "parse_json('{\"a\": 1}')"}


def _run(spark, sql: str) -> int | None:
    ran = run_on_delta(spark, SqlText(sql), Stores())
    assert ran is not None, sql
    return ran.result.version


def _rows_by_delta_rs(path: str, version: int) -> list[tuple]:
    query = QueryBuilder().register("t", DeltaTable(path, version=version)).execute("select * from t")
    return _plain(pa.table(query.read_all()).to_pylist())


def _plain(rows: list[dict[str, Any]]) -> list[tuple]:
    """Rows comparable across readers: columns by name, a variant as its JSON text."""

    def value(v: Any) -> Any:
        if isinstance(v, dict) and set(v) == {"metadata", "value"}:  # delta-rs's variant struct
            return "variant"
        if type(v).__name__ == "VariantVal":
            return "variant"
        return v

    return sorted((tuple(sorted((k, value(v)) for k, v in r.items())) for r in rows), key=repr)


@pytest.fixture
def schema(spark) -> str:
    name = f"oracle_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    return name


@pytest.mark.delta
@pytest.mark.parametrize("feature", RUN)
def test_delta_reads_every_version_we_write_and_writes_on_by_our_rules(
    spark, delta_spark, schema, tmp_path, feature
):
    properties, columns, clustering = FEATURES[feature]
    path, table = str(tmp_path / "t"), f"{schema}.t"
    extra = f", {EXTRA_VALUES[feature]}" if feature in EXTRA_VALUES else ""
    rows = ", ".join(f"({i}, {i * 10}, '{c}'{extra})" for i, c in zip(range(1, 5), "abcd", strict=True))
    props = ", ".join(f"'{k}' = '{v}'" for k, v in properties.items())
    _run(
        spark,
        f"CREATE TABLE {table} ({columns}) USING delta {clustering} LOCATION '{path}'"
        + (f" TBLPROPERTIES ({props})" if props else ""),
    )
    _run(spark, f"INSERT INTO {table} VALUES {rows}")
    _run(spark, f"UPDATE {table} SET v = v + 1 WHERE id = 2")
    _run(spark, f"DELETE FROM {table} WHERE id = 3")
    source = "SELECT 4 AS id, 99 AS v, 'm' AS s" + (f"{extra} AS {columns.split()[-2]}" if extra else "")
    _run(spark, f"MERGE INTO {table} t USING ({source}) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET *")
    latest = load_snapshot(TableLocation.of(path)).version  # type: ignore[union-attr]

    at = f"delta.`{path}`"
    for version in range(latest + 1):
        _, read = delta_spark.query(f"SELECT * FROM {at} VERSION AS OF {version}")
        assert _plain(read) == _rows_by_delta_rs(path, version), (feature, version)
    history = [h["operation"] for h in delta_spark.history(path)]
    assert history[1:] == ["WRITE", "UPDATE", "DELETE", "MERGE"], history
    if "change_data_feed" in feature:
        changes = delta_spark.sql(f"SELECT id, _change_type FROM table_changes_by_path('{path}', 1)")
        kinds = sorted((r["id"], r["_change_type"]) for r in changes)
        assert ("delete" in {k for _, k in kinds}) and (2, "update_postimage") in kinds, kinds

    # VACUUM: the files ours would delete are Delta's, but for the change files of versions still
    # retained, which ours keeps so that their change feed stays readable (Delta deletes change
    # files by age alone: after it, the latest version's changes cannot be read).
    listed = delta_spark.sql(f"VACUUM {at} RETAIN 0 HOURS DRY RUN")
    theirs = {os.path.relpath(r["path"].removeprefix("file:"), path) for r in listed}
    ours = vacuum(TableLocation.of(path), retain_hours=0, dry_run=True, enforce_retention=False)
    retained = {
        a["cdc"]["path"]
        for version in range(ours.oldest_retained_version, latest + 1)
        for a in log_actions(path, version)
        if "cdc" in a
    }
    assert set(ours.files) <= theirs and theirs - set(ours.files) <= retained, (feature, theirs, ours)

    # Delta writes on: its INSERT, MERGE and OPTIMIZE, a checkpoint; then we read and write again.
    delta_spark.sql(f"ALTER TABLE {at} SET TBLPROPERTIES ('delta.checkpointInterval' = '2')")
    delta_spark.sql(f"INSERT INTO {at} VALUES (5, 50, 'e'{extra})")
    delta_spark.sql(
        f"MERGE INTO {at} t USING (SELECT 1 AS id) u ON t.id = u.id WHEN MATCHED THEN UPDATE SET v = -1"
    )
    delta_spark.sql(f"OPTIMIZE {at}")
    _run(spark, f"UPDATE {table} SET s = 'z' WHERE id = 5")
    final = load_snapshot(TableLocation.of(path)).version  # type: ignore[union-attr]
    _, read = delta_spark.query(f"SELECT * FROM {at}")
    assert _plain(read) == _rows_by_delta_rs(path, final), feature
    by_id = {r["id"]: r for r in read}
    assert sorted(by_id) == [1, 2, 4, 5] and by_id[1]["v"] == -1 and by_id[5]["s"] == "z"
    assert problems(path) == [], feature


@pytest.mark.delta
def test_delta_keeps_our_identity_marks_generated_columns_and_constraints(
    spark, delta_spark, schema, tmp_path
):
    path, table = str(tmp_path / "t"), f"{schema}.t"
    _run(
        spark,
        f"CREATE TABLE {table} (id BIGINT GENERATED ALWAYS AS IDENTITY (START WITH 100 INCREMENT BY 10), "
        "v BIGINT NOT NULL, d DATE GENERATED ALWAYS AS (CAST(ts AS DATE)), ts TIMESTAMP, "
        f"status STRING DEFAULT 'new') USING delta LOCATION '{path}' "
        "TBLPROPERTIES ('delta.feature.allowColumnDefaults' = 'supported')",
    )
    _run(spark, f"ALTER TABLE {table} ADD CONSTRAINT positive CHECK (v IS NULL OR v > 0)")
    _run(spark, f"INSERT INTO {table} (v, ts) VALUES (1, timestamp'2024-01-01 10:00:00'), (2, NULL)")
    at = f"delta.`{path}`"
    delta_spark.sql(f"INSERT INTO {at} (v, ts) VALUES (3, timestamp'2024-02-03 04:05:06')")
    rows = {r["v"]: r for r in delta_spark.sql(f"SELECT * FROM {at}")}
    assert sorted(r["id"] for r in rows.values()) == [100, 110, 120], rows
    assert rows[3]["d"] == dt.date(2024, 2, 3) and rows[3]["status"] == "new"
    # Our CHECK and NOT NULL bind Delta's own writes, with its errors.
    refused = delta_spark.error(f"INSERT INTO {at} (v, ts) VALUES (-5, NULL)")
    assert refused.error_class == "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES", refused
    refused = delta_spark.error(f"INSERT INTO {at} (v, ts) VALUES (NULL, NULL)")
    assert refused.error_class == "DELTA_NOT_NULL_CONSTRAINT_VIOLATED", refused
    # A generated column given a value that is not its expression's is refused by Delta too.
    refused = delta_spark.error(
        f"INSERT INTO {at} (v, ts, d) VALUES (4, timestamp'2024-01-01 00:00:00', date'2020-01-01')"
    )
    assert "generat" in str(refused).lower(), refused
    # We insert after Delta: ids above its mark.
    _run(spark, f"INSERT INTO {table} (v, ts) VALUES (7, NULL)")
    assert max(r["id"] for r in delta_spark.sql(f"SELECT id FROM {at}")) == 130
    assert problems(path) == []
