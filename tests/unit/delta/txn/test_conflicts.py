"""Delta's conflict rules on plain actions (no Spark, no files)."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.log.mapping import PHYSICAL_NAME
from dbt.adapters.deltamerge.delta.txn.conflicts import (
    ConcurrentAppend,
    MetadataChanged,
    ProtocolChanged,
    ReadSet,
    add_file,
    check_winner,
)

SCHEMA = T.StructType([T.StructField("id", T.IntegerType(), True, {PHYSICAL_NAME: "col-7"})])


def _winner(low: int, high: int) -> list[dict]:
    stats = {
        "numRecords": 2,
        "minValues": {"col-7": low},
        "maxValues": {"col-7": high},
        "nullCount": {"col-7": 0},
    }
    add = {
        "path": "f.parquet",
        "partitionValues": {},
        "size": 1,
        "dataChange": True,
        "stats": json.dumps(stats),
    }
    return [{"commitInfo": {"operation": "MERGE", "isBlindAppend": False}}, {"add": add}]


def test_a_mapped_table_s_winner_statistics_are_read_by_the_schema_s_names():
    assert add_file(_winner(1, 5)[1]["add"], SCHEMA).min_values == {"id": 1}
    assert add_file(_winner(1, 5)[1]["add"]).min_values == {"col-7": 1}  # a table without mapping


@pytest.mark.parametrize(("low", "high", "conflicts"), [(1, 9, True), (10, 20, False)])
def test_added_files_conflict_only_where_the_transaction_would_have_read(low, high, conflicts):
    def reads(files) -> bool:
        return any(f.min_values["id"] <= 7 <= f.max_values["id"] for f in files)

    read = ReadSet(reads=reads, mapped_schema=SCHEMA)
    arguments = dict(table="t", read_version=0, version=1, read=read, blind_append=False, operation="MERGE")
    if conflicts:
        with pytest.raises(ConcurrentAppend):
            check_winner(winner=_winner(low, high), **arguments)
    else:
        check_winner(winner=_winner(low, high), **arguments)


PROTOCOL = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7}}
METADATA = {"metaData": {"id": "t", "configuration": {}}}


@pytest.mark.parametrize(
    ("winner", "changes_protocol", "named"),
    [
        ([PROTOCOL], False, ProtocolChanged),  # a protocol-only change: refused (Delta may let it through)
        ([PROTOCOL, METADATA], False, MetadataChanged),  # a feature enabled: named as Delta names it
        ([PROTOCOL, METADATA], True, ProtocolChanged),  # both change the protocol
        ([METADATA], True, MetadataChanged),
    ],
)
def test_a_protocol_or_metadata_change_is_named_as_delta_names_it(winner, changes_protocol, named):
    with pytest.raises(ConcurrentModification) as raised:
        check_winner(table="t", read_version=0, version=1, winner=[{"commitInfo": {}}, *winner], read=None,
                     blind_append=True, operation="MERGE", changes_protocol=changes_protocol)  # fmt: skip
    assert type(raised.value) is named and f"{named.__name__}: " in str(raised.value)
