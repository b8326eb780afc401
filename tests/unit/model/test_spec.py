"""A model's config parsed once (``ModelSpec``, ``WriteSpec``) and the write one run makes (``plan_write``).

The every-key tests walk ``model.keys.KEYS`` (the one list) with a value of each wrong kind.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta.location import TableLocation
from dbt.adapters.deltamerge.model.keys import KEYS, key_problems
from dbt.adapters.deltamerge.model.spec import ModelSpec, WriteSpec, plan_write
from tests.config_samples import ACCEPTED, SAMPLES, accepted_values, wrong_values


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
    where = TableLocation.of("/t")
    request = plan_write(
        spec, materialization="incremental", location=where, exists=exists, full_refresh=full_refresh
    )
    assert request.mode == mode


@pytest.mark.parametrize(
    ("config", "mode", "keys", "predicates"),
    [
        ({"unique_key": ["day", "shop"]}, "replace_keys", ("day", "shop"), ()),
        ({"unique_key": "id", "incremental_predicates": ["v > 1"]}, "replace_keys", ("id",), ("v > 1",)),
        ({}, "append", (), ()),  # dbt-core: without a unique key the new rows are inserted
    ],
)
def test_delete_insert_replaces_by_key(config, mode, keys, predicates):
    spec = WriteSpec.from_config("m", {"incremental_strategy": "delete+insert", **config})
    where = TableLocation.of("/t")
    request = plan_write(spec, materialization="incremental", location=where, exists=True, full_refresh=False)
    assert (request.mode, request.replace_keys, request.replace_predicates) == (mode, keys, predicates)
    first = plan_write(spec, materialization="incremental", location=where, exists=False, full_refresh=False)
    assert first.mode == "create_or_replace"


@pytest.mark.parametrize(
    ("partition_by", "columns", "refused"),
    [
        ({"field": "day", "data_type": "date"}, ("day",), ""),
        ({"field": "day"}, ("day",), ""),  # dbt-bigquery's default data_type is date
        ({"field": "day", "data_type": "DATE", "granularity": "day"}, ("day",), ""),
        ({"field": "at", "data_type": "timestamp"}, (), "timestamp's day"),
        ({"field": "at", "data_type": "date", "granularity": "month"}, (), "date's month"),
        ({"field": "n", "data_type": "int64", "range": {"start": 0}}, (), "must be a column name"),
        ({"data_type": "date"}, (), "must be a column name"),
    ],
)
def test_bigquery_date_partitioning_is_a_partition_column(partition_by, columns, refused):
    if not refused:
        assert WriteSpec.from_config("m", {"partition_by": partition_by}).partition_by == columns
        return
    with pytest.raises(SpecError) as err:
        WriteSpec.from_config("m", {"partition_by": partition_by})
    assert refused in str(err.value) and "partition_by" in str(err.value)


def test_microbatch_replaces_its_window():
    spec = WriteSpec.from_config("m", {"incremental_strategy": "microbatch", "event_time": "at"})
    request = plan_write(
        spec,
        materialization="incremental",
        location=TableLocation.of("/t"),
        exists=True,
        full_refresh=False,
        batch=("2026-01-01 00:00:00", "2026-01-02 00:00:00"),
    )
    assert request.mode == "replace_where"
    assert request.replace_where == (
        "`at` >= timestamp'2026-01-01 00:00:00' AND `at` < timestamp'2026-01-02 00:00:00'"
    )


# A model of each kind, so that a key is checked where it is used and where it is not.
BASES = {
    "table": ("table", {}),
    "merge": ("incremental", {"incremental_strategy": "delta_merge", "unique_key": "id"}),
    "cdc": ("incremental", {"incremental_strategy": "delta_merge", "unique_key": "id", "sequence_by": "seq"}),
}


@pytest.mark.parametrize("base", sorted(BASES))
@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_with_a_value_of_a_wrong_kind_fails_naming_the_model_and_the_key(key, base):
    materialization, config = BASES[base]
    wrong = wrong_values(key)
    assert wrong, key
    for sample, value in wrong:
        with pytest.raises(SpecError) as caught:
            ModelSpec.from_config("orders", {**config, key: value}, materialization)
        text = str(caught.value)
        assert text.startswith("Model 'orders': invalid config"), (key, sample)
        assert any(key in problem for problem in caught.value.problems), (key, sample, text)


@pytest.mark.parametrize("key", sorted(KEYS))
def test_every_key_takes_the_values_of_its_kind(key):
    for sample in accepted_values(key):
        assert not [p for p in key_problems({key: SAMPLES[sample]}) if key in p], (key, sample)


def test_every_kind_of_key_is_known_to_this_test():
    kinds = {kind.name for kind in KEYS.values()}
    assert {k for k in kinds if not k.startswith("one of ")} <= set(ACCEPTED)


def test_every_documented_key_is_in_the_one_list_and_every_key_is_documented():
    doc = (Path(__file__).resolve().parents[3] / "docs" / "configuration.md").read_text()
    first_cells = re.findall(r"^\| ([^|]*`[a-z_]+`[^|]*) \|", doc, re.MULTILINE)
    documented = {name for cell in first_cells for name in re.findall(r"`([a-z_]+)`", cell)}
    dbt_or_profile = {"materialized", "persist_docs", "method", "warehouse", "host", "server_side_parameters"}
    dbt_or_profile |= {
        "server_idle_minutes",
        "server_warmup_rounds",
        "storage_options",
        "bucket_storage_options",
        "iceberg_catalogs",
        "catalog",
        "database",  # dbt's own (a model's third name part), read from the relation, not the config
    }
    assert documented - dbt_or_profile <= set(KEYS), sorted(documented - set(KEYS))
    undocumented = {k for k in KEYS if f"`{k}`" not in doc}
    assert not undocumented, sorted(undocumented)


def test_a_wrong_apply_as_deletes_fails_the_cdc_model_instead_of_upserting_deletes():
    # Found in review: a list became None and every delete event was applied as an upsert.
    _, config = BASES["cdc"]
    with pytest.raises(SpecError) as caught:
        ModelSpec.from_config("customers", {**config, "apply_as_deletes": ["op = 'D'"]}, "incremental")
    assert caught.value.problems == [
        "apply_as_deletes must be a SQL condition over the source row, got [\"op = 'D'\"]"
    ]


@pytest.mark.parametrize(
    ("config", "problem"),
    [
        ({"apply_as_deletes": "op = 'D'"}, "`apply_as_deletes` is a CDC apply key: it needs `sequence_by`"),
        ({"sequence_by": ""}, "sequence_by must be a column name or a list of column names, got ''"),
        ({"sequence_by": []}, "sequence_by must name at least one column"),
        ({"source_alias": ""}, "source_alias must be a plain identifier"),
        ({"file_format": ""}, "file_format must be one of ['delta', 'parquet'], got ''"),
        ({"skip_matched_step": True, "matched_condition": "x > 1"}, "contradict each other"),
        ({"not_matched_by_source_condition": "x > 1"}, "needs not_matched_by_source_action"),
        ({"not_matched_by_source_action": "update"}, "needs `not_matched_by_source_set`"),
        ({"not_matched_by_source_action": "delete", "not_matched_by_source_set": {"a": "1"}}, "a delete"),
        ({"tblproperties": {"delta.x": {"nested": 1}}}, "tblproperties: the value of delta.x"),
        ({"incremental_strategy": "microbatch"}, "'microbatch' needs an event_time"),
    ],
)
def test_values_that_a_default_would_hide_are_refused(config, problem):
    """A value read after the decision it feeds, or a wrong value that falls back to a default."""
    merge = {"unique_key": "id", "incremental_strategy": "delta_merge", **config}
    with pytest.raises(SpecError) as caught:
        ModelSpec.from_config("m", merge, "incremental")
    assert any(problem in p for p in caught.value.problems), caught.value.problems


def test_a_project_wide_merge_strategy_leaves_table_models_alone():
    spec = ModelSpec.from_config("m", {"incremental_strategy": "delta_merge"}, "table")
    assert spec.merge is None and spec.cdc is None
    merging = ModelSpec.from_config("m", {"incremental_strategy": "merge", "unique_key": "id"}, "incremental")
    assert merging.merge is not None and merging.merge.unique_key == ("id",)


@pytest.mark.parametrize(
    ("properties", "problem"),
    [
        ({"delta.enableChangeDataFeed": "yes"}, "delta.enableChangeDataFeed must be 'true' or 'false'"),
        ({"delta.checkpointInterval": "ten"}, "delta.checkpointInterval must be a whole number >= 1"),
        ({"delta.dataSkippingNumIndexedCols": -2}, "NumIndexedCols must be a whole number >= -1"),
        ({"delta.setTransactionRetentionDuration": "a week"}, "must be an interval"),
    ],
)
def test_a_table_property_delta_would_refuse_fails_the_model(properties, problem):
    with pytest.raises(SpecError) as caught:
        ModelSpec.from_config("m", {"tblproperties": properties}, "table")
    assert any(p.startswith("tblproperties: table property") and problem in p for p in caught.value.problems)
