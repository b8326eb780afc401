"""CdcSpec.from_config: CDC apply's config checks (docs/configuration.md, "CDC apply"), without Spark."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.common.config_values import SpecError

BASE = {"unique_key": "id", "sequence_by": "ts"}


def problems(**config: object) -> list[str]:
    with pytest.raises(SpecError) as caught:
        CdcSpec.from_config("orders", {**BASE, **config})
    assert "Model 'orders': invalid config" in str(caught.value)
    return caught.value.problems


def test_defaults_and_lists():
    spec = CdcSpec.from_config("orders", {**BASE, "sequence_by": ["ts", "lsn"], "unique_key": ["a", "b"]})
    assert (spec.keys, spec.sequence_by, spec.scd_type, spec.ignore_null_updates) == (
        ("a", "b"),
        ("ts", "lsn"),
        1,
        False,
    )
    assert CdcSpec.applies(BASE) and not CdcSpec.applies({"unique_key": "id"})


@pytest.mark.parametrize(
    "key",
    [
        "when_matched",
        "when_not_matched",
        "when_not_matched_by_source",
        "merge_condition",
        "matched_condition",
    ],
)
def test_clause_keys_cannot_be_combined(key):
    (problem,) = problems(**{key: "x"})
    assert f"`sequence_by` (CDC apply) and `{key}` cannot be combined" in problem


def test_every_problem_at_once():
    found = problems(
        unique_key=None,
        stored_as_scd_type=2,
        apply_as_truncates="op = 'T'",
        column_list=["a"],
        except_column_list=["b"],
        track_history_column_list=["a"],
        track_history_except_column_list=["b"],
        ignore_null_updates="yes",
    )
    assert found == [
        "CDC apply needs `unique_key`: the column(s) that identify a row's key",
        "apply_as_truncates is supported only with stored_as_scd_type 1 (a truncate would erase SCD 2 "
        "history); remove apply_as_truncates or store as SCD type 1",
        "give column_list or except_column_list, not both",
        "give track_history_column_list or track_history_except_column_list, not both",
        "ignore_null_updates must be true or false, got 'yes'",
    ]


def test_scd_type_and_history_lists():
    assert problems(stored_as_scd_type="3") == ["stored_as_scd_type must be one of [1, 2], got '3'"]
    assert problems(track_history_column_list=["a"]) == [
        "track_history_column_list and track_history_except_column_list need stored_as_scd_type 2"
    ]
    assert problems(except_column_list=["ID"]) == [
        "except_column_list names the key `id`; keys are always stored"
    ]


def test_stored_and_tracked_columns():
    spec = CdcSpec.from_config("orders", {**BASE, "column_list": ["name"], "stored_as_scd_type": 2})
    assert spec.stored_columns(["ID", "ts", "name", "op"]) == ("ID", "name")
    scd2 = CdcSpec.from_config(
        "o", {**BASE, "stored_as_scd_type": 2, "track_history_except_column_list": ["b"]}
    )
    assert scd2.tracked_columns(["id", "a", "b"]) == ("a",)
    with pytest.raises(SpecError) as caught:
        spec.stored_columns(["id", "name"])
    assert caught.value.problems == [
        "`ts` (sequence_by) is not a column of the model's result (columns: ['id', 'name'])"
    ]
    with pytest.raises(SpecError) as caught:
        spec.stored_columns(["id", "ts", "name", "__START_AT"])
    assert caught.value.problems == [
        "the model's result may not have the columns ['__START_AT'] (CDC apply writes them)"
    ]


@pytest.mark.parametrize("key", ["apply_as_deletes", "apply_as_truncates"])
@pytest.mark.parametrize("value", [["op = 'D'"], "", "  ", {"op": "D"}, True])
def test_a_wrong_delete_or_truncate_condition_is_refused(key, value):
    # A wrong apply_as_deletes once became None: every delete event was applied as an upsert.
    found = problems(**{key: value})
    assert any(p.startswith(f"{key} must be a SQL condition over the source row") for p in found), found
