from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.identity import (
    Identity,
    advanced_schema,
    explicit_values_refused,
    identity_columns,
    metadata,
)
from dbt.adapters.deltamerge.delta.stores import LOCAL


@pytest.mark.parametrize(
    ("identity", "candidate", "mark"),
    [
        (Identity("id", 1, 1, None, False), 5, 5),
        (Identity("id", 1, 1, 10, False), 5, None),  # never moves back
        (Identity("id", 1, 3, None, False), 5, 7),  # onto start + k * step
        (Identity("id", 0, -2, -4, False), -7, -8),
        (Identity("id", 0, -2, -4, False), 3, None),
        (Identity("id", 10, 1, None, False), 3, None),  # before the start: no value was generated
    ],
)
def test_the_mark_advances_onto_the_steps_only_forward(identity, candidate, mark):
    assert identity.advanced(candidate) == mark


def test_first_value_and_refusals():
    schema = T.StructType(
        [
            T.StructField("a", T.LongType(), True, metadata(5, 2, always=True)),
            T.StructField("b", T.LongType(), True, metadata(1, 1, always=False)),
            T.StructField("c", T.LongType()),
        ]
    )
    assert [(i.column, i.first, i.allow_explicit_insert) for i in identity_columns(schema)] == [
        ("a", 5, False),
        ("b", 1, True),
    ]
    refused = explicit_values_refused(schema, ["A", "b", "c"], "INSERT into t")
    assert refused == [
        "INSERT into t: [DELTA_IDENTITY_COLUMNS_EXPLICIT_INSERT_NOT_SUPPORTED] Providing values for "
        "GENERATED ALWAYS AS IDENTITY column a is not supported."
    ]


def test_the_mark_comes_from_the_written_files_footers(tmp_path):
    schema = T.StructType([T.StructField("id", T.LongType(), True, metadata(1, 1, always=True))])
    paths = []
    for i, values in enumerate(([3, 1, 2], [7, None], [None])):
        path = str(tmp_path / f"part-{i}.parquet")
        pq.write_table(pa.table({"col-1": pa.array(values, pa.int64())}), path)
        paths.append(path)
    advanced = advanced_schema(schema, LOCAL, paths, {"id": "col-1"})
    assert advanced is not None and advanced["id"].metadata["delta.identity.highWaterMark"] == 7
    assert advanced_schema(schema, LOCAL, paths[2:], {"id": "col-1"}) is None
