"""Per-file statistics from parquet footers, checked against files pyarrow writes."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.stats import (
    stats_from_metadata,
    stats_to_json,
    upper_bound,
)

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("name", T.StringType()),
        T.StructField("price", T.DecimalType(10, 2)),
        T.StructField("at", T.TimestampType()),
        T.StructField("day", T.DateType()),
        T.StructField("ok", T.BooleanType()),
        T.StructField("pt", T.StructType([T.StructField("x", T.DoubleType())])),
        T.StructField("tags", T.ArrayType(T.StringType())),
    ]
)


def write(tmp_path, table: pa.Table, **kwargs) -> str:
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, **kwargs)
    return path


def file_stats(path: str, data_schema: T.StructType, num_indexed_cols: int) -> dict:
    """The ``add.stats`` object of a parquet file, from its footer (as a write computes it)."""
    return stats_from_metadata(pq.read_metadata(path), data_schema, num_indexed_cols)


def sample() -> pa.Table:
    utc = dt.timezone.utc
    return pa.table(
        {
            "id": pa.array([3, 1, None], pa.int64()),
            "name": ["b", "a", None],
            "price": pa.array(
                [decimal.Decimal("1.10"), decimal.Decimal("20.05"), None], pa.decimal128(10, 2)
            ),
            "at": pa.array(
                [
                    dt.datetime(2026, 1, 1, 0, 0, 0, 1500, tzinfo=utc),
                    dt.datetime(2025, 1, 1, tzinfo=utc),
                    None,
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([dt.date(2026, 1, 2), dt.date(2026, 1, 1), None]),
            "ok": [True, False, None],
            "pt": [{"x": 1.0}, {"x": -2.0}, None],
            "tags": [["a"], [], None],
        }
    )


def test_min_max_null_counts(tmp_path):
    stats = file_stats(write(tmp_path, sample()), SCHEMA, 32)
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {
        "id": 1,
        "name": "a",
        "price": decimal.Decimal("1.10"),
        "at": "2025-01-01T00:00:00.000Z",
        "day": "2026-01-01",
        "pt": {"x": -2.0},
    }
    # the max timestamp 00:00:00.0015 is rounded *up* to stay an upper bound
    assert stats["maxValues"]["at"] == "2026-01-01T00:00:00.002Z"
    assert stats["maxValues"]["price"] == decimal.Decimal("20.05")
    assert stats["nullCount"] == {"id": 1, "name": 1, "price": 1, "at": 1, "day": 1, "ok": 1, "pt": {"x": 1}}
    assert "ok" not in stats["minValues"] and "tags" not in stats["nullCount"]


def test_stats_across_row_groups(tmp_path):
    table = pa.table({"id": pa.array(range(1000), pa.int64()), "name": [str(i) for i in range(1000)]})
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("name", T.StringType())])
    stats = file_stats(write(tmp_path, table, row_group_size=100), schema, 32)
    assert (stats["minValues"]["id"], stats["maxValues"]["id"]) == (0, 999)
    assert (stats["minValues"]["name"], stats["maxValues"]["name"]) == ("0", "999")


def test_num_indexed_cols_limits_columns(tmp_path):
    stats = file_stats(write(tmp_path, sample()), SCHEMA, 2)
    assert set(stats["minValues"]) == {"id", "name"}
    assert set(stats["nullCount"]) == {"id", "name"}


def test_column_missing_from_file_counts_as_all_null(tmp_path):
    schema = T.StructType([T.StructField("id", T.LongType()), T.StructField("later", T.StringType())])
    stats = file_stats(write(tmp_path, pa.table({"id": pa.array([1, 2], pa.int64())})), schema, 32)
    assert stats["nullCount"] == {"id": 0, "later": 2}


def test_long_strings_get_true_bounds():
    long = "k" * 40
    assert upper_bound(long, T.StringType()) == "k" * 31 + "l"
    assert upper_bound(long, T.StringType()) > long
    assert upper_bound("\U0010ffff" * 40, T.StringType()) is None


def test_non_finite_floats_have_no_bounds():
    assert upper_bound(float("nan"), T.DoubleType()) is None


def test_decimals_serialize_exactly():
    text = stats_to_json({"minValues": {"d": decimal.Decimal("12345678901234567890.123456789")}})
    assert text == '{"minValues":{"d":12345678901234567890.123456789}}'
    assert json.loads(text, parse_float=decimal.Decimal)["minValues"]["d"] == decimal.Decimal(
        "12345678901234567890.123456789"
    )


def test_a_timestamp_past_year_9999_leaves_its_column_without_min_max(tmp_path):
    """Python has no datetime past 9999: such a column gets no min/max (read, never skipped) and
    the file's other statistics stay."""
    far = pa.array([2**40 * 1_000_000, 0], pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"ts": far, "n": [1, 2]}), tmp_path / "f.parquet")
    schema = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("n", T.LongType())])
    stats = stats_from_metadata(pq.read_metadata(tmp_path / "f.parquet"), schema)
    assert "ts" not in stats["minValues"] and stats["nullCount"]["ts"] == 0
    assert (stats["minValues"]["n"], stats["maxValues"]["n"], stats["numRecords"]) == (1, 2, 2)
