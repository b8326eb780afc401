"""Misspelled config keys fail the model; custom keys stay allowed."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.model.keys import known_keys, misspelled_keys
from dbt.adapters.deltamerge.model.spec import WriteSpec


@pytest.mark.parametrize(
    ("key", "meant"),
    [
        ("when_matchd", "when_matched"),
        ("when_not_matchd", "when_not_matched"),
        ("unique_keys", "unique_key"),
        ("partiton_by", "partition_by"),
        ("incremental_stratgy", "incremental_strategy"),
        ("materialised", "materialized"),
        ("merge_with_schema_evoluton", "merge_with_schema_evolution"),
    ],
)
def test_a_key_close_to_a_known_one_is_a_typo(key, meant):
    assert misspelled_keys({key: 1}) == [(key, meant)]


@pytest.mark.parametrize("key", ["owner", "team", "my_custom_flag", "schedule", "sla", "priority"])
def test_custom_keys_stay_allowed(key):
    assert misspelled_keys({key: 1}) == []


def test_known_keys_cover_dbt_dbt_spark_and_ours():
    keys = known_keys()
    assert {"materialized", "post-hook", "pre_hook", "persist_docs", "strategy", "check_cols"} <= keys
    assert {"file_format", "location_root", "clustered_by", "buckets", "options"} <= keys
    assert {"when_matched", "change_data_feed", "sequence_by", "update_only_if_changed"} <= keys


def test_the_model_error_names_model_key_and_suggestion():
    with pytest.raises(SpecError) as caught:
        WriteSpec.from_config("orders", {"when_matchd": [{"action": "delete"}], "owner": "me"})
    message = str(caught.value)
    assert "Model 'orders'" in message
    assert "unknown config key `when_matchd`: did you mean `when_matched`?" in message
    assert "owner" not in message
