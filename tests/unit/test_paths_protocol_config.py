"""Paths in the log, protocol checks and model config parsing: pure functions."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.config_values import SpecError
from dbt.adapters.deltamerge.delta.errors import UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.paths import (
    encode_add_path,
    local_path,
    parse_partition_folder,
    partition_folder,
)
from dbt.adapters.deltamerge.delta.protocol import Protocol, check_writable, feature_problems
from dbt.adapters.deltamerge.materialize import WriteSpec, plan_write


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


def test_plain_tables_are_writable():
    check_writable(Protocol(1, 2), {}, "", table="t")
    check_writable(Protocol(3, 7, ("timestampNtz",), ("timestampNtz", "appendOnly")), {}, "", table="t")
    check_writable(Protocol(1, 4), {"delta.enableChangeDataFeed": "true"}, "", table="t")
    check_writable(
        Protocol(1, 7, None, ("changeDataFeed",)), {"delta.enableChangeDataFeed": "true"}, "", table="t"
    )


@pytest.mark.parametrize(
    ("protocol", "configuration", "schema", "named"),
    [
        (Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), {}, "", "deletionVectors"),
        (Protocol(2, 5), {"delta.columnMapping.mode": "name"}, "", "columnMapping"),
        (Protocol(1, 7, None, ("rowTracking", "domainMetadata")), {}, "", "rowTracking"),
        (Protocol(1, 3), {"delta.constraints.positive": "x > 0"}, "", "positive"),
        (Protocol(1, 4), {"delta.enableTypeWidening": "true"}, "", "typeWidening"),
        (
            Protocol(1, 4),
            {},
            '{"type":"struct","fields":[{"name":"g","type":"long","nullable":true,'
            '"metadata":{"delta.generationExpression":"1"}}]}',
            "generated column `g`",
        ),
        (Protocol(4, 8), {}, "", "reader 4, writer 8"),
    ],
)
def test_unsupported_features_are_named(protocol, configuration, schema, named):
    problems = feature_problems(protocol, configuration, schema)
    assert any(named in p for p in problems), problems
    with pytest.raises(UnsupportedTableFeature, match="Nothing was written"):
        check_writable(protocol, configuration, schema, table="/t")


def test_write_spec_defaults_and_parsing():
    spec = WriteSpec.from_config("m", {"partition_by": "day", "tblproperties": {"delta.appendOnly": False}})
    assert (spec.file_format, spec.strategy, spec.partition_by) == ("delta", "append", ("day",))
    assert spec.tblproperties == {"delta.appendOnly": "false"}


def test_write_spec_collects_every_problem_and_names_the_model():
    with pytest.raises(SpecError) as err:
        WriteSpec.from_config(
            "orders",
            {
                "file_format": "csv",
                "incremental_strategy": "upsert",
                "partition_by": [1],
                "on_schema_change": "maybe",
            },
        )
    assert err.value.model == "orders" and len(err.value.problems) == 4
    assert "Model 'orders'" in str(err.value) and "'upsert'" in str(err.value)


@pytest.mark.parametrize(
    ("strategy", "exists", "full_refresh", "mode"),
    [
        ("append", False, False, "create_or_replace"),
        ("append", True, False, "append"),
        ("append", True, True, "create_or_replace"),
        ("insert_overwrite", True, False, "replace_partitions"),
    ],
)
def test_plan_write_modes(strategy, exists, full_refresh, mode):
    spec = WriteSpec.from_config("m", {"incremental_strategy": strategy})
    request = plan_write(
        spec, materialization="incremental", table_path="/t", exists=exists, full_refresh=full_refresh
    )
    assert request.mode == mode


def test_microbatch_replaces_its_window():
    spec = WriteSpec.from_config("m", {"incremental_strategy": "microbatch", "event_time": "at"})
    request = plan_write(
        spec,
        materialization="incremental",
        table_path="/t",
        exists=True,
        full_refresh=False,
        batch=("2026-01-01 00:00:00", "2026-01-02 00:00:00"),
    )
    assert request.mode == "replace_where"
    assert request.replace_where == (
        "`at` >= timestamp'2026-01-01 00:00:00' AND `at` < timestamp'2026-01-02 00:00:00'"
    )
