"""Reads through the catalog see a table's latest version, whoever committed it.

A table delta-rs writes (no one here wrote it) is registered by name with ``convert_to_delta``;
delta-rs then commits again. Every way dbt reads the name must see the new version: ``dbt show``,
a statement, a model over the ``source()``, a model over a view over it, a Python model's
``dbt.source``. A table whose other writer overwrote and vacuumed it reads the new rows only; a
table whose log was deleted is refused by name, never read from the hard links of the version
bound last.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from deltalake import DeltaTable, write_deltalake

from tests.functional.helpers import table_path

SOURCES = """
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: events
"""
VIEW = "{{ config(materialized='view') }} select * from {{ source('raw', 'events') }}"
DIRECT = (
    "{{ config(materialized='table') }} "
    "select count(*) as n, sum(id) as total from {{ source('raw', 'events') }}"
)
THROUGH_VIEW = "{{ config(materialized='table') }} select count(*) as n from {{ ref('stg_events') }}"
PYTHON = """
def model(dbt, session):
    dbt.config(materialized="table")
    return dbt.source("raw", "events").groupBy().count().withColumnRenamed("count", "n")
"""


def _events(first: int, count: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first, first + count), pa.int64()), "kind": ["e"] * count})


def _model_value(project, name: str, column: str = "n") -> int:
    """A model's one value, read from its Delta table by delta-rs (not through our catalog)."""
    return DeltaTable(table_path(project, name)).to_pyarrow_table().column(column)[0].as_py()


class TestReadsSeeOtherWritersCommits:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "sources.yml": SOURCES,
            "stg_events.sql": VIEW,
            "direct.sql": DIRECT,
            "through_view.sql": THROUGH_VIEW,
            "py_count.py": PYTHON,
        }

    @pytest.fixture(scope="class")
    def lake(self, project, tmp_path_factory) -> str:
        """delta-rs's table of 9 rows in 3 versions, registered as ``<schema>.events``."""
        path = str(tmp_path_factory.mktemp("lake") / "events")
        for version in range(3):
            write_deltalake(path, _events(version * 3, 3), mode="append")
        args = {"path": path, "relation_name": f"{project.test_schema}.events"}
        _, out = run_dbt_and_capture(["run-operation", "convert_to_delta", "--args", json.dumps(args)])
        registered = f"Registered {project.test_schema}.events: Delta version 2, 3 live files"
        assert f"{registered}, columns id, kind" in out, out
        return path

    def test_a_statement_dbt_show_and_models_read_the_version_another_writer_committed(self, project, lake):
        name = f"{project.test_schema}.events"
        assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 9
        write_deltalake(lake, _events(9, 2), mode="append")  # version 3: 11 rows
        assert DeltaTable(lake).version() == 3
        shown = run_dbt(["show", "--inline", f"select count(*) as n from {name}"])
        assert [tuple(r) for r in shown.results[0].agate_table.rows] == [(11,)]
        run_dbt(["run"])
        assert _model_value(project, "direct") == 11 and _model_value(project, "direct", "total") == 55
        assert _model_value(project, "through_view") == 11  # through a dbt view over the source
        assert _model_value(project, "py_count") == 11
        write_deltalake(lake, _events(11, 1), mode="append")  # version 4, read by a statement
        assert project.run_sql(f"select count(*), max(id) from {name}", fetch="one") == (12, 11)
        run_dbt(["run", "--select", "through_view"])  # only the view's reader: the view is not re-run
        assert _model_value(project, "through_view") == 12

    def test_a_table_overwritten_and_vacuumed_by_its_writer_reads_the_new_rows(self, project, lake):
        name = f"{project.test_schema}.events"
        assert project.run_sql(f"select count(*) from {name}", fetch="one")[0] == 12
        write_deltalake(lake, _events(100, 1), mode="overwrite")
        DeltaTable(lake).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
        assert project.run_sql(f"select id from {name}", fetch="all") == [(100,)]

    def test_a_table_whose_log_is_gone_is_refused_by_name(self, project, lake):
        name = f"{project.test_schema}.events"
        shutil.rmtree(os.path.join(lake, "_delta_log"))
        with pytest.raises(Exception) as failed:
            run_dbt(["show", "--inline", f"select count(*) from {name}"])
        assert f"{name} reads the Delta table at {lake}, which has no Delta log any more" in str(failed.value)
        assert "refusing to read an old version as the latest" in str(failed.value)
