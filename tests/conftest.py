"""Shared fixtures: one warehouse and one local Spark session per pytest process.

Spark fixes its warehouse and metastore when the JVM starts, so every dbt invocation in
this process (dbt-tests-adapter runs dbt in-process) uses the same warehouse; each test
gets its own schema inside it.
"""

from __future__ import annotations

import os

import pytest

pytest_plugins = ["dbt.tests.fixtures.project"]

SPARK_PARAMS = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.driver.memory": "2g",
}


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("warehouse"))


@pytest.fixture(scope="session")
def spark(warehouse: str):
    from dbt.adapters.deltamerge.connections import start_session

    return start_session(warehouse, dict(SPARK_PARAMS))


@pytest.fixture(scope="class")
def dbt_profile_target(warehouse: str, spark) -> dict:
    return {
        "type": "deltamerge",
        "method": "session",
        "schema": "analytics",
        "warehouse": warehouse,
        "threads": 1,
        "server_side_parameters": dict(SPARK_PARAMS),
    }


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Unit tests first: they fail fast and need no JVM.
    items.sort(key=lambda item: 0 if f"{os.sep}unit{os.sep}" in str(item.fspath) else 1)
