"""VACUUM as a dbt operation: leftovers of dead writes go, files of retained versions stay."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from deltalake import DeltaTable

from tests.functional.helpers import table_path
from tests.validator import problems

MODEL = (
    "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}\n"
    "select id, '{{ var('v', 'a') }}' as v from range(10)"
)


def _age_everything(path: str, hours: float) -> None:
    old = time.time() - hours * 3600
    for folder, _, names in os.walk(path):
        if "_delta_log" in folder:
            continue
        for name in names:
            os.utime(os.path.join(folder, name), (old, old))


@pytest.mark.connect
class TestVacuum:
    @pytest.fixture(scope="class")
    def models(self):
        return {"vac.sql": MODEL}

    def test_vacuum_keeps_retained_versions_and_removes_dead_attempts(self, project):
        run_dbt(["run"])
        run_dbt(["run", "--vars", "{v: b}"])  # v1 rewrites the file(s) of v0
        path = table_path(project, "vac")
        live_v0 = set(DeltaTable(path, version=0).file_uris())
        some = next(iter(live_v0)).removeprefix("file://")
        dead = os.path.join(path, "part-00000-dead-attempt.snappy.parquet")
        shutil.copy(some, dead)
        os.makedirs(os.path.join(path, "_deltamerge_staging", "x"))
        shutil.copy(some, os.path.join(path, "_deltamerge_staging", "x", "part-1.parquet"))
        fresh = os.path.join(path, "part-00001-still-being-written.snappy.parquet")
        _age_everything(path, 200)
        shutil.copy(some, fresh)  # young: may belong to a writer that has not committed yet

        name = f"{project.test_schema}.vac"
        _, out = run_dbt_and_capture(["run-operation", "vacuum", "--args", json.dumps({"relation": name})])
        assert "Deleted 2 files" in out
        assert not os.path.exists(dead) and os.path.exists(fresh)
        assert not os.path.exists(os.path.join(path, "_deltamerge_staging"))
        assert {u for u in DeltaTable(path, version=0).file_uris()} == live_v0  # time travel still works
        assert problems(path) == []

        _, out = run_dbt_and_capture(
            ["run-operation", "vacuum", "--args", json.dumps({"relation": name, "retain_hours": 0})],
            expect_pass=False,
        )
        assert "below the safe default of 168 hours" in out
        args = {"relation": name, "retain_hours": 0, "enforce_retention": False}
        run_dbt(["run-operation", "vacuum", "--args", json.dumps(args)])
        assert all(not os.path.exists(u.removeprefix("file://")) for u in live_v0)  # only v1 is retained
        assert sorted(r["v"] for r in DeltaTable(path).to_pyarrow_table().to_pylist()) == ["b"] * 10
