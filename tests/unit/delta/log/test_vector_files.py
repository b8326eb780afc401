"""Where a deletion vector descriptor's file is (PROTOCOL.md, "Deletion Vector Descriptor Schema")."""

from __future__ import annotations

import uuid

import pytest

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.log.vector_files import vector_file, z85_decode


def test_z85_decodes_the_rfc_example_and_the_uuids_of_real_vector_files():
    assert z85_decode("HelloWorld") == bytes.fromhex("864FD26FB559F75B")
    # table-with-dv-small (Databricks): its descriptor and the file beside its data.
    assert str(uuid.UUID(bytes=z85_decode("vBn[lx{q8@P<9BNH/isA"))) == "61d16c75-6994-46b7-a15b-8b538852e50e"


def test_each_storage_type_names_its_file():
    assert vector_file({"storageType": "u", "pathOrInlineDv": "vBn[lx{q8@P<9BNH/isA"}) == (
        "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"
    )
    assert vector_file({"storageType": "u", "pathOrInlineDv": "ab" + "vBn[lx{q8@P<9BNH/isA"}).startswith(
        "ab/"
    )
    assert (
        vector_file({"storageType": "p", "pathOrInlineDv": "file:/lake/t/dv%201.bin"}) == "/lake/t/dv 1.bin"
    )
    assert (
        vector_file(
            {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L"}
        )
        is None
    )


@pytest.mark.parametrize(
    "descriptor",
    [{"storageType": "x", "pathOrInlineDv": "a"}, {"storageType": "u", "pathOrInlineDv": "short"}],
)
def test_an_unknown_descriptor_is_refused(descriptor):
    with pytest.raises(DeltaError):
        vector_file(descriptor)


def test_text_that_is_not_z85_is_refused():
    with pytest.raises(DeltaError):
        z85_decode("abc")
    with pytest.raises(DeltaError):
        z85_decode("abc~d")


# ---- inline vectors: both padded forms of the last block, every padding length, 2^32 ----

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _digits(value: int, width: int) -> str:
    out = ""
    for _ in range(width):
        value, digit = divmod(value, 85)
        out = _ALPHABET[digit] + out
    assert value == 0
    return out


def _crate_encode(data: bytes) -> str:
    """The ``z85`` crate's padded form (written here from its rule, not its code): whole blocks,
    then a short tail of ``4 - n`` bytes as ``n`` ``#`` and ``5 - n`` digits."""
    whole = len(data) - len(data) % 4
    text = "".join(_digits(int.from_bytes(data[i : i + 4], "big"), 5) for i in range(0, whole, 4))
    tail = data[whole:]
    if tail:
        missing = 4 - len(tail)
        text += "#" * missing + _digits(int.from_bytes(tail, "big"), 5 - missing)
    return text


def _delta_encode(data: bytes) -> str:
    """Delta's ``Base85Codec.encodeBytes``: zero bytes to whole blocks."""
    padded = data + b"\x00" * (-len(data) % 4)
    return "".join(_digits(int.from_bytes(padded[i : i + 4], "big"), 5) for i in range(0, len(padded), 4))


@pytest.mark.parametrize("length", range(0, 13))
@pytest.mark.parametrize("fill", [0x00, 0x01, 0x7F, 0x80, 0xFF])
def test_every_length_reads_back_in_both_padded_forms(length, fill):
    data = bytes((fill + i * 37) % 256 if fill not in (0x00, 0xFF) else fill for i in range(length))
    assert z85_decode(_crate_encode(data)) == data
    assert z85_decode(_delta_encode(data))[:length] == data


@pytest.mark.parametrize("value", [0, 1, 2**31 - 1, 2**31, 2**32 - 2, 2**32 - 1])
def test_whole_blocks_near_two_to_the_32_are_exact(value):
    block = _digits(value, 5)
    assert z85_decode(block) == value.to_bytes(4, "big")
    assert z85_decode("HelloWorld" + block)[8:] == value.to_bytes(4, "big")


@pytest.mark.parametrize("missing, top", [(1, 2**24 - 1), (2, 2**16 - 1), (3, 2**8 - 1)])
def test_the_largest_short_tail_of_each_length(missing, top):
    text = "HelloWorld" + "#" * missing + _digits(top, 5 - missing)
    assert z85_decode(text) == bytes.fromhex("864FD26FB559F75B") + top.to_bytes(4 - missing, "big")


@pytest.mark.parametrize("block", ["#####", "####0", "###zz", "##zzz", "#zzzz"])
def test_a_tail_that_holds_more_than_its_bytes_is_refused(block):
    with pytest.raises(DeltaError, match="no padded Z85 block"):
        z85_decode("HelloWorld" + block)


def test_a_block_above_two_to_the_32_not_led_by_hash_keeps_its_low_bits_as_delta():
    """Delta's ``decodeBlocks`` keeps ``sum.toInt``: a block from 2^32 up to 85^5 - 1."""
    assert z85_decode("$####") == ((83 * 85**4 + 84 * (85**3 + 85**2 + 85 + 1)) % 2**32).to_bytes(4, "big")
    assert z85_decode("%0000") == ((_ALPHABET.index("%") * 85**4) % 2**32).to_bytes(4, "big")
