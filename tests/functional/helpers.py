"""Reading what dbt wrote, independently of our engine: deltalake and the raw log."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder

from tests.files import read_text

# Table properties switching on every writer feature a table of ours may be created with: the
# reliability tests (kill harness, races) run on such tables too.
FEATURE_PROPERTIES = {
    "delta.enableRowTracking": "true",
    "delta.enableInCommitTimestamps": "true",
    "delta.enableDeletionVectors": "true",
    "delta.columnMapping.mode": "name",
}


def table_path(project: Any, name: str) -> str:
    """The Delta table folder of model ``name`` in the test schema (the default location)."""
    database_dir = project.adapter.config.credentials.warehouse
    return f"{database_dir}/{project.test_schema}.db/{name}"


def rows(path: str, version: int | None = None, order_by: str | None = None) -> list[dict[str, Any]]:
    """Rows of a Delta table version as read by delta-rs, sorted."""
    table = DeltaTable(path, version=version).to_pyarrow_table()
    data = table.to_pylist()
    key = order_by or table.column_names[0]
    return sorted(data, key=lambda r: (r[key] is None, r[key]))


def live_rows(path: str) -> list[dict[str, Any]]:
    """Live rows as delta-rs's DataFusion reader gives them (deletion vectors and column mapping
    applied, which ``to_pyarrow_table`` refuses or reads as NULL)."""
    query = QueryBuilder().register("t", DeltaTable(path)).execute("select * from t")
    return pa.table(query.read_all()).to_pylist()


def operations(path: str) -> list[str]:
    """Operations of every version, oldest first."""
    return [h["operation"] for h in reversed(DeltaTable(path).history())]


def log_actions(path: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file."""
    text = read_text(f"{path.rstrip('/')}/_delta_log/{version:020d}.json")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def add_stats(path: str, version: int) -> list[dict[str, Any]]:
    """Parsed ``stats`` of every ``add`` in one commit."""
    return [json.loads(a["add"]["stats"]) for a in log_actions(path, version) if "add" in a]


def catalog_rows(spark: Any, project: Any, name: str, order_by: str) -> list[dict[str, Any]]:
    """Rows that Spark's catalog returns for ``<schema>.<name>`` (what downstream models read)."""
    result = spark.sql(f"select * from {project.test_schema}.{name} order by {order_by}").collect()
    return [r.asDict() for r in result]


def race_conditional_creates(log: str, versions: int, writers: int) -> None:
    """``writers`` threads race to create each of ``versions`` commit files in ``log`` through the
    engine's storage layer: exactly one wins each, its content stays, nobody fails."""
    import threading

    from dbt.adapters.deltamerge.delta import Stores, storage

    stores = Stores()  # the environment's: the test's store
    winners: dict[int, list[int]] = {}
    errors: list[Exception] = []

    def writer(version: int, who: int) -> None:
        try:
            if storage.put_if_absent(stores, f"{log}/{version:020d}.json", json.dumps({"who": who}).encode()):
                winners.setdefault(version, []).append(who)
        except Exception as error:
            errors.append(error)

    for version in range(versions):
        threads = [threading.Thread(target=writer, args=(version, who)) for who in range(writers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert sorted(winners) == list(range(versions))
    assert all(len(won) == 1 for won in winners.values()), winners
    for version, (who,) in winners.items():
        assert json.loads(storage.read_bytes(stores, f"{log}/{version:020d}.json")) == {"who": who}
    assert storage.list_names(stores, log)[:2] == [f"{0:020d}.json", f"{1:020d}.json"]
