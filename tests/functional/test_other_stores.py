"""The commit path on Azure Blob Storage, against Azurite (Microsoft's emulator, its Blob service).

Spark does not reach Azure here (Hadoop's ABFS connector is the cluster's business and is not
installed by this project), so what runs is everything of the engine's that is not Spark: the
conditional create of a version (``If-None-Match: *``), listing the log, reading it back, and the
conflict rules of concurrent commits; delta-rs reads the table. Runs in the
``DELTAMERGE_TEST_STORE=s3`` run (marked ``s3``). No GCS emulator serves a GCS commit's requests
(``tests/emulators.py``), so GCS is not tested here.
"""

from __future__ import annotations

import io
import json
import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import Stores, TableLocation, load_snapshot, storage
from dbt.adapters.deltamerge.delta.txn import CommitInfo, commit
from tests import emulators
from tests.functional.helpers import race_conditional_creates
from tests.validator import problems

pytestmark = pytest.mark.s3

SCHEMA = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A running Azurite, a container, and this process's environment reaching it (the locations
    the tests make reach object stores as the environment says: ``Stores()``)."""
    emulator = emulators.start_azurite(str(tmp_path_factory.mktemp("azure")))
    bucket = emulators.create_container(emulator, f"lake{uuid.uuid4().hex[:8]}")
    root = f"az://{bucket}"
    saved = dict(os.environ)
    os.environ.update({**emulator.options, **emulator.environment})
    yield {"root": root, "emulator": emulator}
    os.environ.clear()
    os.environ.update(saved)
    emulator.stop()


def _data_file(table: str, ids: list[int]) -> dict[str, Any]:
    """A parquet file of ``ids`` put into the table's folder; its ``add`` action."""
    buffer = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), buffer)
    name = f"part-{uuid.uuid4().hex}.parquet"
    assert storage.put_if_absent(Stores(), f"{table}/{name}", buffer.getvalue())
    stats = {
        "numRecords": len(ids),
        "minValues": {"id": min(ids)},
        "maxValues": {"id": max(ids)},
        "nullCount": {"id": 0},
    }
    return {
        "add": {"path": name, "partitionValues": {}, "size": len(buffer.getvalue()),
                "modificationTime": 0, "dataChange": True, "stats": json.dumps(stats)}
    }  # fmt: skip


def _create(table: str) -> None:
    metadata = {
        "id": str(uuid.uuid4()), "format": {"provider": "parquet", "options": {}},
        "schemaString": json.dumps(SCHEMA), "partitionColumns": [], "configuration": {}, "createdTime": 0,
    }  # fmt: skip
    actions = [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": metadata}]
    info = CommitInfo("CREATE TABLE")
    assert (
        commit(
            TableLocation.of(table), read_version=-1, actions=[*actions, _data_file(table, [0, 1])], info=info
        )
        == 0
    )


def _delta_rs(store: dict[str, Any], table: str) -> DeltaTable:
    return DeltaTable(table, storage_options=TableLocation.of(table).deltalake_options())


def test_conditional_create_has_exactly_one_winner_per_version(store):
    log = f"{store['root']}/race/_delta_log"
    race_conditional_creates(log, versions=15, writers=6)


def test_concurrent_appends_each_land_once_and_delta_rs_reads_the_table(store):
    table = f"{store['root']}/t{uuid.uuid4().hex[:8]}"
    _create(table)
    versions: list[int] = []
    errors: list[Exception] = []

    def append(start: int) -> None:
        try:
            add = _data_file(table, list(range(start, start + 3)))
            info = CommitInfo("WRITE", {"mode": "Append"}, is_blind_append=True)
            versions.append(commit(TableLocation.of(table), read_version=0, actions=[add], info=info))
        except Exception as error:
            errors.append(error)

    threads = [threading.Thread(target=append, args=(start,)) for start in (10, 20, 30, 40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(versions) == [1, 2, 3, 4]
    snapshot = load_snapshot(TableLocation.of(table))
    assert snapshot is not None and snapshot.version == 4 and len(snapshot.files) == 5
    read = _delta_rs(store, table)
    assert read.version() == 4
    ids = sorted(read.to_pyarrow_table().column("id").to_pylist())
    assert ids == [0, 1, *range(10, 13), *range(20, 23), *range(30, 33), *range(40, 43)]
    assert [h["operation"] for h in read.history()][-1] == "CREATE TABLE"
    assert problems(table) == []
