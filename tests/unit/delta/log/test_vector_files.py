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
