"""Deletion vectors: Delta's bitmaps of deleted row indexes, read and written (PROTOCOL.md).

A vector is a ``RoaringBitmapArray``: the magic number 1681511377 (little-endian) followed by
Roaring's 64-bit portable serialization, which ``pyroaring``'s ``BitMap64`` reads and writes.
Vectors a write makes go into one new file in the table folder (``deletion_vector_<uuid>.bin``):
a version byte (1), then per vector its size (4 bytes, big-endian), the bitmap, and the CRC-32 of
the bitmap (big-endian); a descriptor names the file by its UUID and the vector by its offset
(where its size field starts). Inline (``i``) vectors are the bitmap in Z85, in the log. The
older "native" layout (magic 1681511376), which PROTOCOL.md's inline example uses, is read too.
"""

from __future__ import annotations

import os
import struct
import uuid
import zlib
from collections.abc import Mapping
from typing import Any

from pyroaring import BitMap, BitMap64, FrozenBitMap64

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.faults import crash_point
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.delta.log.vector_files import uuid_path_or_inline, vector_file, z85_decode
from dbt.adapters.deltamerge.delta.paths import local_path

PORTABLE_MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
FORMAT_VERSION = 1


def serialize(rows: BitMap64) -> bytes:
    """A vector's bytes in the portable format Delta writes.

    >>> deserialize(serialize(BitMap64([0, 3, 2**33]))) == BitMap64([0, 3, 2**33])
    True
    """
    return struct.pack("<i", PORTABLE_MAGIC) + rows.serialize()


def deserialize(data: bytes) -> FrozenBitMap64:
    """The row indexes a serialized vector (portable or native layout) holds."""
    magic_le, magic_be = struct.unpack("<i", data[:4])[0], struct.unpack(">i", data[:4])[0]
    if magic_le == PORTABLE_MAGIC:
        return FrozenBitMap64.deserialize(data[4:])
    if NATIVE_MAGIC in (magic_le, magic_be):
        return _native(data[4:], "<" if magic_le == NATIVE_MAGIC else ">")
    raise DeltaError(f"unexpected deletion vector magic number {magic_le}")


def _native(body: bytes, order: str) -> FrozenBitMap64:
    """The native layout: a count, then per 32-bit bitmap its length and Roaring's standard bytes."""
    (count,) = struct.unpack(f"{order}i", body[:4])
    position, rows = 4, BitMap64()
    for high in range(count):
        (length,) = struct.unpack(f"{order}i", body[position : position + 4])
        low = BitMap.deserialize(body[position + 4 : position + 4 + length])
        rows.update(high << 32 | value for value in low)
        position += 4 + length
    return FrozenBitMap64(rows)


def load(table: TableLocation, descriptor: Mapping[str, Any], data_file: str = "") -> FrozenBitMap64:
    """The rows a descriptor's vector deletes (read from its file, checksum checked, or inline);
    a vector that cannot be decoded is refused naming the table, ``data_file`` and the vector."""
    try:
        return _load(table, descriptor)
    except (DeltaError, ValueError, struct.error, OverflowError, KeyError) as error:
        raise DeltaError(
            f"Delta table at {table}: the deletion vector {dict(descriptor)} of {data_file or 'a file'} "
            f"cannot be read ({error}); refusing to read the table"
        ) from error


def _load(table: TableLocation, descriptor: Mapping[str, Any]) -> FrozenBitMap64:
    kind = descriptor.get("storageType")
    if kind == "i":  # the Z85 text pads the bitmap to whole blocks: its size says where it ends
        data = z85_decode(str(descriptor["pathOrInlineDv"]))
        rows = deserialize(data[: int(descriptor.get("sizeInBytes", len(data)))])
    else:
        where = vector_file(descriptor)
        assert where is not None
        path = where if kind == "p" else local_path(table.path, where)
        offset = int(descriptor.get("offset") or 0)
        # An absolute path ('p') may name another store than the table's.
        with table.stores.store_for(path).open_input(path) as handle:
            handle.seek(offset)
            head = handle.read(4)
            size = struct.unpack(">i", head)[0] if len(head) == 4 else -1
            data = handle.read(size) if size >= 0 else b""
            checksum = handle.read(4)
        expected = int(descriptor.get("sizeInBytes", -1))
        if size != expected or len(data) != size or len(checksum) != 4:
            raise DeltaError(f"deletion vector in {path} at {offset}: {size} bytes, the log says {expected}")
        if struct.unpack(">I", checksum)[0] != zlib.crc32(data):
            raise DeltaError(f"deletion vector in {path} at {offset}: checksum mismatch")
        rows = deserialize(data)
    if len(rows) != int(descriptor.get("cardinality", len(rows))):
        raise DeltaError(
            f"deletion vector {dict(descriptor)} holds {len(rows)} rows, its descriptor says "
            f"{descriptor.get('cardinality')}"
        )
    return rows


def store(table: TableLocation, vectors: Mapping[str, BitMap64]) -> dict[str, dict[str, Any]]:
    """Write ``vectors`` (by any key) into one new vector file; each key's ``u`` descriptor.

    The file is written before the commit that references it, under a fresh UUID (a write that
    is never committed leaves a file no version names, which VACUUM removes).
    """
    if not vectors:
        return {}
    file_id = uuid.uuid4()
    descriptor_path = uuid_path_or_inline(file_id)
    relative = vector_file({"storageType": "u", "pathOrInlineDv": descriptor_path})
    assert relative is not None
    chunks, offset, descriptors = [bytes([FORMAT_VERSION])], 1, {}
    for key, rows in vectors.items():
        data = serialize(rows)
        chunks.append(struct.pack(">i", len(data)) + data + struct.pack(">I", zlib.crc32(data)))
        descriptors[key] = {
            "storageType": "u",
            "pathOrInlineDv": descriptor_path,
            "offset": offset,
            "sizeInBytes": len(data),
            "cardinality": len(rows),
        }
        offset += 8 + len(data)
    table.store.write_durably(os.path.join(table.path, relative), b"".join(chunks))
    crash_point("after_deletion_vectors")
    return descriptors
