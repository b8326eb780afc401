"""The validator itself flags corrupted logs (so the reliability tests can trust it)."""

from __future__ import annotations

import os
import shutil

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

from tests.validator import problems


def _table(tmp_path) -> str:
    path = str(tmp_path / "t")
    write_deltalake(path, pa.table({"id": [1, 2]}))
    write_deltalake(path, pa.table({"id": [3]}), mode="append")
    write_deltalake(path, pa.table({"id": [4]}), mode="overwrite")
    return path


def test_a_sound_table_passes(tmp_path):
    assert problems(_table(tmp_path)) == []


def test_missing_file_gap_and_size_are_flagged(tmp_path):
    path = _table(tmp_path)
    live = DeltaTable(path).file_uris()[0].removeprefix("file://")
    with open(live, "ab") as handle:
        handle.write(b"x")
    assert any("bytes, log says" in p for p in problems(path))
    os.remove(live)
    assert any("live file missing" in p for p in problems(path))
    log = os.path.join(path, "_delta_log")
    shutil.move(os.path.join(log, f"{1:020d}.json"), os.path.join(log, f"{7:020d}.json"))
    assert any("not contiguous" in p for p in problems(path))
