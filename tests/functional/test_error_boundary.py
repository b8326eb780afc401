"""The error boundary knows whether a commit landed: real dbt runs on real tables.

A merge whose commit succeeded and whose catalog binding then failed (here the binding root is a
file, so no version folder can be made in it) must say the version was committed, never "the table
is unchanged"; the next read binds it. A row breaking a constraint is the data's fault, in Delta's
words.
"""

from __future__ import annotations

import os
import shutil

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture
from deltalake import DeltaTable

from tests.functional.helpers import rows, table_path

MERGED = """
{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id') }}
select id, concat('v', cast({{ var('round', 0) }} as string)) as v
from range({{ var('round', 0) }} + 2) as t(id)
"""
CHECKED = """
{{ config(materialized='table', tblproperties={'delta.constraints.positive': 'id > 0'}) }}
select {{ var('id', 1) }} as id
"""


class TestErrorsAfterACommit:
    @pytest.fixture(scope="class")
    def models(self):
        return {"merged.sql": MERGED, "checked.sql": CHECKED}

    def test_a_binding_that_fails_after_the_commit_says_the_version_was_committed(self, project):
        run_dbt(["run", "--select", "merged"])
        path = table_path(project, "merged")
        root = os.path.join(path, "_deltamerge_catalog")
        shutil.rmtree(root)
        with open(root, "w") as blocker:  # a file where the version folders go: binding fails
            blocker.write("not a folder")
        results, _ = run_dbt_and_capture(
            ["run", "--select", "merged", "--vars", "{round: 1}"], expect_pass=False
        )
        message = results[0].message or ""
        assert DeltaTable(path).version() == 1  # the merge committed
        assert "unchanged" not in message, message
        assert f"Delta version 1 of {path} was committed (MERGE); then binding the new version as " in message
        assert "in the catalog failed. The data is written: do not re-run to redo it" in message
        assert [r["v"] for r in rows(path, order_by="id")] == ["v1", "v1", "v1"]
        os.remove(root)
        name = f"{project.test_schema}.merged"  # the next read binds version 1
        assert project.run_sql(f"select id, v from {name} order by id", fetch="all") == [
            (0, "v1"),
            (1, "v1"),
            (2, "v1"),
        ]

    def test_a_constraint_violation_reads_as_the_datas_fault(self, project):
        run_dbt(["run", "--select", "checked"])
        results = run_dbt(["run", "--select", "checked", "--vars", "{id: -2}"], expect_pass=False)
        message = results[0].message or ""
        assert "Model 'checked': a row violates the table's constraints; nothing was committed." in message
        assert "[DELTA_VIOLATE_CONSTRAINT_WITH_VALUES] CHECK constraint positive (id > 0) violated" in message
        assert "Spark failed" not in message and "SQLSTATE" not in message
        assert DeltaTable(table_path(project, "checked")).version() == 0
