"""The storage module: every file-system call of the Delta layer, failures naming the path."""

from __future__ import annotations

import os

import pytest

from dbt.adapters.deltamerge.delta import Stores, storage

LOCAL_DISK = Stores({})  # these tests' paths are local


def test_put_if_absent_creates_once_and_leaves_no_temporary_file(tmp_path):
    target = str(tmp_path / "00000000000000000000.json")
    assert storage.put_if_absent(LOCAL_DISK, target, b"a\n") is True
    assert storage.put_if_absent(LOCAL_DISK, target, b"b\n") is False
    assert storage.read_bytes(LOCAL_DISK, target) == b"a\n"
    assert os.listdir(tmp_path) == ["00000000000000000000.json"]


def test_a_missing_folder_lists_and_walks_as_empty(tmp_path):
    assert storage.list_names(LOCAL_DISK, str(tmp_path / "nope")) == []
    assert list(storage.walk(LOCAL_DISK, str(tmp_path / "nope"))) == []


def test_an_unreachable_path_is_named_with_the_fix(tmp_path):
    missing = str(tmp_path / "elsewhere" / "part-0.parquet")
    with pytest.raises(storage.StorageError) as error:
        storage.read_bytes(LOCAL_DISK, missing)
    message = str(error.value)
    assert f"cannot read {missing}" in message
    assert "must reach the table's location" in message
    with pytest.raises(storage.StorageError, match="cannot move"):
        storage.rename(LOCAL_DISK, missing, str(tmp_path / "x"))
    with pytest.raises(storage.StorageError, match=r"cannot write .*no-log-folder"):
        storage.put_if_absent(LOCAL_DISK, str(tmp_path / "no-log-folder" / "0.json"), b"x")


def test_delete_file_missing_ok(tmp_path):
    storage.delete_file(LOCAL_DISK, str(tmp_path / "gone"), missing_ok=True)
    with pytest.raises(FileNotFoundError):
        storage.delete_file(LOCAL_DISK, str(tmp_path / "gone"))


def test_a_parquet_footer_and_the_file_size_come_from_one_read(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = str(tmp_path / "f.parquet")
    pq.write_table(pa.table({"id": list(range(100))}), path)
    footer, size = storage.parquet_footer(LOCAL_DISK, path)
    assert (footer.num_rows, size) == (100, os.path.getsize(path))


def test_a_tail_reader_serves_its_tail_and_seeks_from_the_end():
    from dbt.adapters.deltamerge.delta.object_storage import ObjectClients, _Tail

    reader = _Tail(ObjectClients(), "s3://bucket/key", b"6789", 10)  # no request: all in the tail
    assert reader.seek(-3, 2) == 7
    assert reader.read(10) == b"789"  # clipped at the object's end
    assert reader.read(1) == b""
    reader.seek(6)
    assert (reader.read(2), reader.tell()) == (b"67", 8)
