"""A table's folder without a log: another writer's creation in flight is waited for, foreign files
refused at once (real folders, Delta logs written by delta-rs)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from dbt.adapters.deltamerge.delta import Stores, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.errors import NotADeltaTable
from dbt.adapters.deltamerge.delta.log.occupied import first_version_appeared, may_be_in_flight


def _location(path: Path) -> TableLocation:
    return TableLocation.of(str(path), Stores())


def _placed_file(path: Path) -> None:
    """A data file as a creator places it before its version 0."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "part-00000-6c1b2a9e-4f0d-4a43-9a5e-1f2f1e2d3c4b-c000.snappy.parquet").write_bytes(b"PAR1")


def test_a_creation_in_flight_is_read_once_its_first_version_lands(tmp_path: Path) -> None:
    table = tmp_path / "t"
    _placed_file(table)

    def commit_later() -> None:
        time.sleep(1.0)
        write_deltalake(str(table), pa.table({"id": [1, 2, 3]}))

    creator = threading.Thread(target=commit_later)
    creator.start()
    snapshot = load_snapshot(_location(table))
    creator.join()
    assert snapshot is not None and snapshot.version == 0
    assert sum(f.num_records or 0 for f in snapshot.files) == 3


def test_foreign_files_are_refused_without_waiting_for_a_version(tmp_path: Path) -> None:
    table = tmp_path / "t"
    _placed_file(table)
    (table / "data.csv").write_text("id\n1\n")
    with pytest.raises(NotADeltaTable) as raised:
        load_snapshot(_location(table))
    text = str(raised.value)
    assert "holds files but no _delta_log (2 entries: data.csv, part-00000-" in text
    assert "no first version came" not in text and "nothing was deleted" in text


def test_a_creation_that_never_commits_is_refused_saying_it_waited(tmp_path: Path) -> None:
    table = tmp_path / "t"
    _placed_file(table)
    assert not first_version_appeared(_location(table), 0.5)
    (table / "_delta_log").mkdir()  # an empty log folder is no version either
    assert not first_version_appeared(_location(table), 0.3)


def test_what_a_creator_places() -> None:
    assert may_be_in_flight(["day=2024-01-01", "part-00001-x.c000.snappy.parquet", "w" + "0" * 32])
    assert not may_be_in_flight(["part-00000-x.parquet", "README.md"])
    assert not may_be_in_flight(["wxyz"]) and not may_be_in_flight([])
