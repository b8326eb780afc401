"""dbt snapshots on Delta tables: dbt's standard snapshot suites, and the tables read back with deltalake.

The suites change their source tables with plain SQL (``UPDATE``, ``DELETE``, ``INSERT``,
``ALTER TABLE ... ADD COLUMN``, ``CREATE TABLE ... AS``): each runs as a Delta commit.
"""

from __future__ import annotations

import datetime

import pytest
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.simple_snapshot import (
    fixtures,
    new_record_dbt_valid_to_current,
    new_record_timestamp_mode,
)
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import BaseSnapshotNewRecordCheckMode
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import (
    BaseSnapshotNewRecordDbtValidToCurrent,
)
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import BaseSnapshotNewRecordTimestampMode
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import (
    BaseSnapshotEphemeralHardDeletes,
    BaseSnapshotNewColumnSpecificCheckCols,
    BaseSnapshotNewColumnTimestampStrategy,
    BaseSnapshotNewColumnWithDeletes,
)
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from dbt.tests.util import check_relations_equal, run_dbt

from tests.functional.postgres_fixtures import SparkDialectFixtures


def spark_snapshot(text: str) -> str:
    """A snapshot fixture reading ``{{target.database}}.{{target.schema}}.seed``: Spark has no database."""
    return text.replace("{{target.database}}.", "")


class TestSnapshot(BaseSimpleSnapshot):
    pass


class TestBasicSnapshotCheckCols(BaseSnapshotCheckCols):
    pass


class TestBasicSnapshotTimestamp(BaseSnapshotTimestamp):
    pass


@pytest.mark.stores
class TestSnapshotCheck(BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(SparkDialectFixtures, BaseSnapshotColumnNames):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(fixtures.snapshot_actual_sql)}


class TestSnapshotColumnNamesFromDbtProject(SparkDialectFixtures, BaseSnapshotColumnNamesFromDbtProject):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(fixtures.snapshot_actual_sql)}


class TestSnapshotInvalidColumnNames(SparkDialectFixtures, BaseSnapshotInvalidColumnNames):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(fixtures.snapshot_actual_sql)}


class TestSnapshotDbtValidToCurrent(SparkDialectFixtures, BaseSnapshotDbtValidToCurrent):
    """The base test reads rows by position from a SELECT without ORDER BY (Postgres' insertion
    order); a MERGE rewrites files, so rows are read back by id here, with the same values."""

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(fixtures.snapshot_actual_sql)}

    def test_valid_to_current(self, project):
        current = datetime.datetime(2099, 12, 31, 0, 0)
        for sql in (
            fixtures.create_seed_sql,
            fixtures.create_snapshot_expected_sql,
            fixtures.seed_insert_sql,
            fixtures.populate_snapshot_expected_valid_to_current_sql,
        ):
            project.run_sql(sql)
        run_dbt(["snapshot"])
        first = self._valid_to_by_id(project)
        assert first[1] == [current] and first[10] == [current] and len(first) == 20
        project.run_sql(fixtures.invalidate_sql)
        project.run_sql(fixtures.update_with_current_sql)
        run_dbt(["snapshot"])
        second = self._valid_to_by_id(project)
        assert second[1] == [current]
        # id 10's first version is closed at its update time; its new version is current.
        assert second[10] == [datetime.datetime(2016, 8, 20, 16, 44, 49), current]
        check_relations_equal(project.adapter, ["snapshot_actual", "snapshot_expected"])

    @staticmethod
    def _valid_to_by_id(project) -> dict[int, list[datetime.datetime]]:
        rows = project.run_sql(
            "select id, test_valid_to from {schema}.snapshot_actual order by id, test_valid_to", fetch="all"
        )
        found: dict[int, list[datetime.datetime]] = {}
        for row in rows:
            found.setdefault(row[0], []).append(row[1])
        return found


class TestSnapshotMultiUniqueKey(SparkDialectFixtures, BaseSnapshotMultiUniqueKey):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "seed.sql": spark_snapshot(fixtures.model_seed_sql),
            "snapshots.yml": fixtures.snapshots_multi_key_yml,
            "ref_snapshot.sql": fixtures.ref_snapshot_sql,
        }


class TestSnapshotNewRecordTimestampMode(SparkDialectFixtures, BaseSnapshotNewRecordTimestampMode):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(new_record_timestamp_mode._snapshot_actual_sql)}


class TestSnapshotNewRecordCheckMode(SparkDialectFixtures, BaseSnapshotNewRecordCheckMode):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(new_record_timestamp_mode._snapshot_actual_sql)}


class TestSnapshotNewRecordDbtValidToCurrent(SparkDialectFixtures, BaseSnapshotNewRecordDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snapshot.sql": spark_snapshot(new_record_dbt_valid_to_current._snapshot_actual_sql)}


class SourceTableFixtures(SparkDialectFixtures):
    """The base tests' own SQL: `ADD COLUMN dummy_column VARCHAR(50) DEFAULT 'dummy_value'` gives the
    Delta table a column default (``allowColumnDefaults``) and the existing rows its value."""


class TestSnapshotEphemeralHardDeletes(SourceTableFixtures, BaseSnapshotEphemeralHardDeletes):
    pass


class TestSnapshotNewColumnTimestampStrategy(SourceTableFixtures, BaseSnapshotNewColumnTimestampStrategy):
    pass


class TestSnapshotNewColumnSpecificCheckCols(SourceTableFixtures, BaseSnapshotNewColumnSpecificCheckCols):
    pass


class TestSnapshotNewColumnWithDeletes(SourceTableFixtures, BaseSnapshotNewColumnWithDeletes):
    pass
