"""Paths in the Delta log and on disk: partition folders and add paths (pure)."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.delta.paths import (
    encode_add_path,
    local_path,
    parse_partition_folder,
    partition_folder,
)


@pytest.mark.parametrize("value", ["plain", "a b", "10:00:00", "x=y/z", "100%", "ünï", "a#b?c", None])
def test_partition_values_round_trip_through_folders(value):
    folder = partition_folder(["p"], {"p": value})
    assert "/" not in folder.split("=", 1)[1]
    assert parse_partition_folder(folder, ["p"]) == {"p": value}


def test_add_path_encodes_the_on_disk_name_once_more():
    on_disk = "ts=2026-01-01 10%3A00/part-0.parquet"
    encoded = encode_add_path(on_disk)
    assert encoded == "ts=2026-01-01%2010%253A00/part-0.parquet"
    assert local_path("/t", encoded) == "/t/" + on_disk
    assert local_path("/t", "file:///data/x%20y.parquet") == "/data/x y.parquet"
