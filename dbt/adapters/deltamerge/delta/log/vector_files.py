"""Where a deletion vector descriptor's vector is stored (PROTOCOL.md, "Deletion Vector Descriptor Schema").

Storage type ``u``: a file in the table folder, ``<random prefix>/deletion_vector_<uuid>.bin``,
the descriptor holding the prefix and the UUID's 16 bytes in Z85 (its last 20 characters);
``p``: an absolute path (a URI); ``i``: inline in the log, no file. VACUUM keeps the files the
retained versions' vectors are in (deleting one would bring deleted rows back, or fail readers).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from dbt.adapters.deltamerge.delta.errors import DeltaError

_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_VALUE = {c: i for i, c in enumerate(_Z85)}


def z85_decode(text: str) -> bytes:
    """The bytes of Z85 ``text`` (ZeroMQ RFC 32; Python's ``base64.z85decode`` is 3.13+), its last
    block read in either padded form an inline deletion vector may have been written in.

    Delta's encoder pads the vector with zero bytes to whole blocks (the descriptor's
    ``sizeInBytes`` says where it ends). The ``z85`` crate (delta-rs, delta-kernel-rs, and the
    writers of tables such as delta-kernel-rs' ``cdf-table-with-dv``) shortens the last block
    instead: ``n`` leading ``#`` stand for ``n`` missing bytes and the other ``5 - n`` characters
    hold the ``4 - n`` remaining bytes. No whole block starts with ``#`` (84 x 85^4 exceeds 2^32), so
    the two cannot be confused. Any other block above 2^32 - 1 keeps its low 32 bits, as Delta's
    ``Base85Codec.decodeBlocks`` does (``putInt(sum.toInt)``).

    >>> z85_decode("HelloWorld").hex(), z85_decode("##093").hex(), z85_decode("#0000").hex()
    ('864fd26fb559f75b', '0300', '000000')
    >>> z85_decode("%####").hex(), z85_decode("HelloWorld$####").hex()  # above 2^32: low 32 bits
    ('023f0562', '864fd26fb559f75b055b8a13')
    """
    if len(text) % 5:
        raise DeltaError(f"Z85 text of length {len(text)} is not a multiple of 5: {text!r}")
    out = bytearray()
    for start in range(0, len(text), 5):
        block = text[start : start + 5]
        missing = len(block) - len(block.lstrip("#")) if start + 5 == len(text) else 0
        value = 0
        for char in block[missing:]:
            if char not in _Z85_VALUE:
                raise DeltaError(f"{char!r} is not a Z85 character in {text!r}")
            value = value * 85 + _Z85_VALUE[char]
        size = 4 - missing
        if missing and (missing > 3 or value >= 1 << (8 * size)):
            raise DeltaError(f"{block!r} is no padded Z85 block in {text!r}")
        out += (value & 0xFFFFFFFF).to_bytes(4, "big")[4 - size :]
    return bytes(out)


def vector_file(descriptor: Mapping[str, Any]) -> str | None:
    """The path of a descriptor's vector file: relative to the table (``u``), absolute (``p``), or
    None (``i``, inline).

    >>> vector_file({"storageType": "u", "pathOrInlineDv": "ab" + "HelloWorldHelloWorld"})
    'ab/deletion_vector_864fd26f-b559-f75b-864f-d26fb559f75b.bin'
    """
    kind, where = descriptor.get("storageType"), str(descriptor.get("pathOrInlineDv", ""))
    if kind == "i":
        return None
    if kind == "p":
        return unquote(where[len("file:") :] if where.startswith("file:") else where)
    if kind == "u" and len(where) >= 20:
        prefix, encoded = where[:-20], where[-20:]
        name = f"deletion_vector_{uuid.UUID(bytes=z85_decode(encoded))}.bin"
        return f"{prefix}/{name}" if prefix else name
    raise DeltaError(f"unknown deletion vector descriptor {dict(descriptor)}")


def z85_encode(data: bytes) -> str:
    """The Z85 text of ``data`` (a multiple of 4 bytes long).

    >>> z85_encode(bytes.fromhex("864fd26fb559f75b"))
    'HelloWorld'
    """
    if len(data) % 4:
        raise DeltaError(f"Z85 encodes multiples of 4 bytes, not {len(data)}")
    out = []
    for start in range(0, len(data), 4):
        value = int.from_bytes(data[start : start + 4], "big")
        chunk = []
        for _ in range(5):
            value, digit = divmod(value, 85)
            chunk.append(_Z85[digit])
        out.append("".join(reversed(chunk)))
    return "".join(out)


def uuid_path_or_inline(file_id: uuid.UUID, prefix: str = "") -> str:
    """``pathOrInlineDv`` of a ``u`` descriptor: the random prefix, then the UUID in Z85.

    >>> vector_file({"storageType": "u", "pathOrInlineDv": uuid_path_or_inline(uuid.UUID(int=7), "ab")})
    'ab/deletion_vector_00000000-0000-0000-0000-000000000007.bin'
    """
    return prefix + z85_encode(file_id.bytes)
