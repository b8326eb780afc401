"""Resolving clause sets against schemas: `*`, explicit assignments, column errors."""

from __future__ import annotations

import pytest
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.resolve import resolve
from dbt.adapters.deltamerge.merge.spec import MergeSpec

S, D = "`DBT_INTERNAL_SOURCE`", "`DBT_INTERNAL_DEST`"


def schema(*names: str) -> T.StructType:
    return T.StructType([T.StructField(n, T.StringType()) for n in names])


TARGET = schema("id", "name", "updated_at")


def test_star_update_and_insert_take_every_column_by_name():
    spec = MergeSpec.from_config("m", {"unique_key": "id"})
    merge = resolve(spec, target=TARGET, source=schema("ID", "Name", "updated_at", "extra"))
    expected = (("id", f"{S}.`ID`"), ("name", f"{S}.`Name`"), ("updated_at", f"{S}.`updated_at`"))
    assert merge.matched[0].outputs == expected
    assert merge.not_matched[0].outputs == expected


def test_explicit_update_keeps_unassigned_columns_and_insert_nulls_them():
    spec = MergeSpec.from_config(
        "m",
        {
            "unique_key": "id",
            "when_matched": [{"action": "update", "set": {"NAME": "upper(DBT_INTERNAL_SOURCE.name)"}}],
            "when_not_matched": [{"action": "insert", "values": {"id": "DBT_INTERNAL_SOURCE.id"}}],
        },
    )
    merge = resolve(spec, target=TARGET, source=TARGET)
    assert merge.matched[0].outputs == (
        ("id", f"{D}.`id`"),
        ("name", "upper(DBT_INTERNAL_SOURCE.name)"),
        ("updated_at", f"{D}.`updated_at`"),
    )
    assert merge.not_matched[0].outputs == (
        ("id", "DBT_INTERNAL_SOURCE.id"),
        ("name", "NULL"),
        ("updated_at", "NULL"),
    )


def test_merge_exclude_columns_keep_the_target_value():
    spec = MergeSpec.from_config("m", {"unique_key": "id", "merge_exclude_columns": ["updated_at"]})
    merge = resolve(spec, target=TARGET, source=TARGET)
    assert merge.matched[0].outputs[2] == ("updated_at", f"{D}.`updated_at`")
    assert merge.not_matched[0].outputs[2] == ("updated_at", f"{S}.`updated_at`")


def test_deletes_have_no_outputs():
    spec = MergeSpec.from_config("m", {"unique_key": "id", "when_matched": [{"action": "delete"}]})
    assert resolve(spec, target=TARGET, source=TARGET).matched[0].outputs == ()


def test_column_problems_are_named_together():
    spec = MergeSpec.from_config(
        "m",
        {
            "unique_key": "key",
            "when_matched": [{"action": "update", "set": {"nope": "1", "name": "1", "NAME": "2"}}],
        },
    )
    with pytest.raises(SpecError) as err:
        resolve(spec, target=TARGET, source=schema("id", "name"))
    text = "\n".join(err.value.problems)
    assert "[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve nope in UPDATE clause given columns" in text
    assert "[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns: [`name`, `name`]." in text
    assert "missing ['updated_at']" in text  # the default insert * needs every column
    assert "unique_key column `key` is not in the target table" in text
    assert "unique_key column `key` is not in the model's result" in text
    assert "Model 'm'" in str(err.value)
