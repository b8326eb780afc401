"""The storage module: every file-system call of the Delta layer, failures naming the path."""

from __future__ import annotations

import os

import pytest

from dbt.adapters.deltamerge.delta import storage


def test_put_if_absent_creates_once_and_leaves_no_temporary_file(tmp_path):
    target = str(tmp_path / "00000000000000000000.json")
    assert storage.put_if_absent(target, b"a\n") is True
    assert storage.put_if_absent(target, b"b\n") is False
    assert storage.read_bytes(target) == b"a\n"
    assert os.listdir(tmp_path) == ["00000000000000000000.json"]


def test_a_missing_folder_lists_and_walks_as_empty(tmp_path):
    assert storage.list_names(str(tmp_path / "nope")) == []
    assert list(storage.walk(str(tmp_path / "nope"))) == []


def test_an_unreachable_path_is_named_with_the_fix(tmp_path):
    missing = str(tmp_path / "elsewhere" / "part-0.parquet")
    with pytest.raises(storage.StorageError) as error:
        storage.read_bytes(missing)
    message = str(error.value)
    assert f"cannot read {missing}" in message
    assert "must reach the table's location" in message
    with pytest.raises(storage.StorageError, match="cannot move"):
        storage.rename(missing, str(tmp_path / "x"))
    with pytest.raises(storage.StorageError, match=r"cannot write .*no-log-folder"):
        storage.put_if_absent(str(tmp_path / "no-log-folder" / "0.json"), b"x")


def test_delete_file_missing_ok(tmp_path):
    storage.delete_file(str(tmp_path / "gone"), missing_ok=True)
    with pytest.raises(FileNotFoundError):
        storage.delete_file(str(tmp_path / "gone"))
