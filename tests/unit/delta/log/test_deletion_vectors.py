"""Deletion vectors' bytes: Delta's format written and read back, and a Databricks-written vector."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import pytest
from pyroaring import BitMap, BitMap64

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.deletion_vectors import (
    NATIVE_MAGIC,
    deserialize,
    load,
    serialize,
    store,
)
from dbt.adapters.deltamerge.delta.log.vector_files import vector_file, z85_decode, z85_encode

FIXTURE = Path(__file__).parents[3] / "fixtures" / "delta-rs" / "table-with-dv-small"


def test_the_portable_format_is_the_magic_then_roarings_64_bit_serialization():
    rows = BitMap64([0, 7, 2**32 + 5])
    data = serialize(rows)
    assert struct.unpack("<i", data[:4])[0] == 1681511377 and data[4:] == rows.serialize()
    assert deserialize(data) == rows


def test_the_native_layout_of_the_protocols_inline_example_is_read_too():
    low = BitMap([3, 4, 9])
    body = struct.pack(">i", 1) + struct.pack(">i", len(low.serialize())) + low.serialize()
    assert set(deserialize(struct.pack(">i", NATIVE_MAGIC) + body)) == {3, 4, 9}
    with pytest.raises(DeltaError, match="magic"):
        deserialize(b"\x00\x00\x00\x00")


def test_one_file_holds_every_vector_of_a_commit_at_its_offset_with_its_checksum(tmp_path):
    vectors = {"a": BitMap64([1, 2, 3]), "b": BitMap64(range(0, 100_000, 3))}
    descriptors = store(TableLocation.of(str(tmp_path)), vectors)
    (only,) = {vector_file(d) for d in descriptors.values()}
    assert only is not None and only.startswith("deletion_vector_")
    raw = (tmp_path / only).read_bytes()
    assert raw[0] == 1  # the format's version byte
    for key, descriptor in descriptors.items():
        assert descriptor["storageType"] == "u" and descriptor["cardinality"] == len(vectors[key])
        offset, size = descriptor["offset"], descriptor["sizeInBytes"]
        assert struct.unpack(">i", raw[offset : offset + 4])[0] == size
        data = raw[offset + 4 : offset + 4 + size]
        assert struct.unpack(">I", raw[offset + 4 + size : offset + 8 + size])[0] == zlib.crc32(data)
        assert load(TableLocation.of(str(tmp_path)), descriptor) == vectors[key]
    assert descriptors["a"]["offset"] == 1


def test_a_corrupt_vector_fails_naming_it_rather_than_deleting_other_rows(tmp_path):
    descriptor = store(TableLocation.of(str(tmp_path)), {"a": BitMap64([5])})["a"]
    path = tmp_path / str(vector_file(descriptor))
    raw = bytearray(path.read_bytes())
    raw[-5] ^= 0xFF  # a bitmap byte
    path.write_bytes(bytes(raw))
    with pytest.raises(DeltaError, match="checksum"):
        load(TableLocation.of(str(tmp_path)), descriptor)
    with pytest.raises(DeltaError, match=r"cardinality|rows"):
        store_again = store(TableLocation.of(str(tmp_path)), {"b": BitMap64([1, 2])})["b"]
        load(TableLocation.of(str(tmp_path)), {**store_again, "cardinality": 3})


def test_an_inline_vector_is_the_bitmap_in_z85():
    data = serialize(BitMap64([2, 4]))
    padded = data + b"\x00" * (-len(data) % 4)
    descriptor = {
        "storageType": "i",
        "pathOrInlineDv": z85_encode(padded),
        "sizeInBytes": len(data),
        "cardinality": 2,
    }
    assert set(load(TableLocation.of("/nowhere"), descriptor)) == {2, 4}
    assert z85_decode(z85_encode(b"\x01\x02\x03\x04")) == b"\x01\x02\x03\x04"


def test_a_vector_databricks_wrote_reads_as_delta_rs_reads_it():
    """delta-rs fixture ``table-with-dv-small``: two of ten rows deleted (rows 0 and 9)."""
    log = FIXTURE / "_delta_log"
    adds = [
        json.loads(line)["add"]
        for name in sorted(os.listdir(log))
        if name.endswith(".json")
        for line in (log / name).read_text().splitlines()
        if line.strip() and "add" in json.loads(line)
    ]
    descriptor = next(a["deletionVector"] for a in reversed(adds) if a.get("deletionVector"))
    assert sorted(load(TableLocation.of(str(FIXTURE)), descriptor)) == [0, 9]


# delta-kernel-rs' ``cdf-table-with-dv`` (versions 3, 4 and 5 of its one data file): inline vectors
# in the z85 crate's padded form; every reader (Delta, delta-kernel-rs, delta-rs, DuckDB) reads
# version 5 with row 3 deleted.
KERNEL_INLINE = [
    ("^Bg9^0rr910000000000iXQKl0rr91000935c8Xg000311onP9", 40, 4, [0, 1, 4, 5]),
    ("^Bg9^0rr910000000000iXQKl0rr91000315c8Xg000f5", 36, 2, [0, 5]),
    ("^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34, 1, [3]),
]


@pytest.mark.parametrize("text, size, cardinality, rows", KERNEL_INLINE)
def test_inline_vectors_of_a_kernel_table_read_as_every_reader_reads_them(text, size, cardinality, rows):
    descriptor = {"storageType": "i", "pathOrInlineDv": text, "sizeInBytes": size, "cardinality": cardinality}
    assert sorted(load(TableLocation.of("/nowhere"), descriptor)) == rows


@pytest.mark.parametrize("rows", [[0], [3], [2**16 - 1], [2**16], [1, 2, 3, 70000], [2**32 - 1], [2**32 + 3]])
def test_inline_vectors_of_every_size_read_back_in_both_padded_forms(rows):
    from tests.unit.delta.log.test_vector_files import _crate_encode, _delta_encode

    data = serialize(BitMap64(rows))
    for text in (_crate_encode(data), _delta_encode(data)):
        descriptor = {
            "storageType": "i",
            "pathOrInlineDv": text,
            "sizeInBytes": len(data),
            "cardinality": len(rows),
        }
        assert sorted(load(TableLocation.of("/nowhere"), descriptor)) == rows
