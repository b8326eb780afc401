"""Python models (``def model(dbt, session)``) in the connection's session, written as Delta tables."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonIncrementalTests,
    BasePythonModelTests,
)
from dbt.tests.adapter.python_model.test_spark import (
    PANDAS_MODEL,
    PANDAS_ON_SPARK_MODEL,
    PYSPARK_MODEL,
    BasePySparkTests,
)
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from tests.functional.helpers import operations, rows, table_path


class TestPythonModels(BasePythonModelTests):
    pass


class TestPythonIncremental(BasePythonIncrementalTests):
    """dbt's `merge` strategy: `delta_merge` with the default clauses."""


class TestPySparkDataFrames(BasePySparkTests):
    """Spark, pandas and pandas-on-Spark results. The base also has a `databricks.koalas`
    model: Koalas is the retired predecessor of `pyspark.pandas` (not installable next to
    pyspark 4), so that one model is left out."""

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "pandas_df.py": PANDAS_MODEL,
            "pyspark_df.py": PYSPARK_MODEL,
            "pandas_on_spark_df.py": PANDAS_ON_SPARK_MODEL,
        }

    def test_different_dataframes(self, project):
        results = run_dbt(["run"])
        assert len(results) == 3
        for name in ("pandas_df", "pyspark_df", "pandas_on_spark_df"):
            path = table_path(project, name)
            assert operations(path) == ["CREATE TABLE AS SELECT"]
            assert sorted(r["City"] for r in rows(path)) == [
                "Bogota",
                "Brasilia",
                "Buenos Aires",
                "Caracas",
                "Santiago",
            ]


DELTA_MERGE_PY = """
def model(dbt, session):
    dbt.config(
        materialized="incremental",
        incremental_strategy="delta_merge",
        unique_key="id",
        when_matched=[{"action": "delete", "condition": "DBT_INTERNAL_SOURCE.op = 'D'"},
                      {"action": "update", "set": "*"}],
        when_not_matched=[{"action": "insert", "condition": "DBT_INTERNAL_SOURCE.op != 'D'"}],
    )
    if dbt.is_incremental:
        rows = [(1, "one-updated", "U"), (2, "two", "D"), (4, "four", "I")]
    else:
        rows = [(1, "one", "I"), (2, "two", "I"), (3, "three", "I")]
    assert str(dbt.this).endswith(".merged_py")
    return session.createDataFrame(rows, "id int, v string, op string")
"""


class TestPythonDeltaMerge:
    @pytest.fixture(scope="class")
    def models(self):
        return {"merged_py.py": DELTA_MERGE_PY}

    def test_a_python_model_merges_with_its_clauses(self, project):
        run_dbt(["run"])
        run_dbt(["run"])
        path = table_path(project, "merged_py")
        assert operations(path) == ["CREATE TABLE AS SELECT", "MERGE"]
        assert [(r["id"], r["v"]) for r in rows(path)] == [(1, "one-updated"), (3, "three"), (4, "four")]
        metrics = DeltaTable(path).history(1)[0]["operationMetrics"]
        assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsDeleted"]) == ("1", "1")
        assert metrics["numTargetRowsInserted"] == "1"
