"""What a name in a merge means: assigned paths, one-sided clauses, one instant (pure)."""

from __future__ import annotations

import datetime as dt

import pytest

from dbt.adapters.deltamerge.merge.scope import (
    ScopeError,
    Side,
    assigned_path,
    column_path,
    scoped,
    scoped_spec,
    timed_spec,
    uses_current_time,
    with_fixed_time,
)
from dbt.adapters.deltamerge.merge.spec import MergeSpec


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("v", ("v",)),
        ("value.b", ("value", "b")),
        ("`a.b`", ("a.b",)),
        ("t.`x y`.z", ("t", "x y", "z")),
        ("a.b.c.d.e.f", ("a", "b", "c", "d", "e", "f")),
    ],
)
def test_column_paths(key, path):
    assert column_path(key) == path


def test_assigned_paths_drop_the_target_alias_and_take_the_tables_spelling():
    columns = ["key", "Value", "t"]
    assert assigned_path("T.value.b", target_alias="t", columns=columns, clause="UPDATE clause") == (
        "Value",
        "b",
    )
    # `t` is also a column: `t.x` of an alias `t` whose second part is no column is the column's field.
    assert assigned_path("t.x", target_alias="t", columns=columns, clause="UPDATE clause") == ("t", "x")
    assert assigned_path("a.b", target_alias="t", columns=["a.b", "c"], clause="UPDATE clause") == ("a.b",)


def test_an_unknown_assigned_column_is_deltas_unresolved_expression():
    with pytest.raises(ScopeError) as raised:
        assigned_path("s.t.a", target_alias="t", columns=["key", "my col"], clause="INSERT clause")
    assert str(raised.value) == (
        "[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve s.t.a in INSERT clause given columns "
        "t.key, t.`my col`."
    )


def test_one_sided_names_are_qualified_and_others_left_to_spark():
    side = Side("s", ("key", "value", "arr"))
    assert scoped("key + value.b", side) == "`s`.`key` + `s`.`value`.`b`"
    assert scoped("t.value + nosuch", side) == "t.value + nosuch"  # Spark refuses both on the source alone
    assert scoped("exists(arr, x -> x.key > key)", side) == "EXISTS(`s`.`arr`, x -> x.key > `s`.`key`)"
    assert scoped("key in (select 1)", side) == "key in (select 1)"
    assert scoped("not sql (", side) == "not sql ("


def test_a_specs_one_sided_clauses_are_scoped_and_two_sided_ones_kept():
    spec = MergeSpec.from_config(
        "m",
        {
            "merge_condition": "t.k = s.k",
            "source_alias": "s",
            "target_alias": "t",
            "when_matched": [{"action": "update", "condition": "v > 1", "set": {"v": "v"}}],
            "when_not_matched": [{"action": "insert", "condition": "v > 1", "values": {"k": "k", "v": "v"}}],
            "when_not_matched_by_source": [{"action": "update", "condition": "v > 1", "set": {"v": "v + 1"}}],
        },
    )
    scoped_one = scoped_spec(spec, target=["k", "v"], source=["k", "v"])
    assert scoped_one.matched == spec.matched
    assert scoped_one.not_matched[0].condition == "`s`.`v` > 1"
    assert [a.expression for a in scoped_one.not_matched[0].assignments or ()] == ["`s`.`k`", "`s`.`v`"]
    assert scoped_one.not_matched_by_source[0].condition == "`t`.`v` > 1"
    assert [a.expression for a in scoped_one.not_matched_by_source[0].assignments or ()] == ["`t`.`v` + 1"]


def test_every_current_time_function_is_the_statements_instant():
    at = dt.datetime(2026, 1, 2, 23, 30, tzinfo=dt.timezone.utc)
    sql = "current_timestamp() = now() AND current_date = current_date() AND localtimestamp() IS NOT NULL"
    timed = with_fixed_time(sql, at, "Asia/Tokyo")
    micros = int((at - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)).total_seconds()) * 1_000_000
    assert timed.count(f"TIMESTAMP_MICROS({micros})") == 2
    assert timed.count("CAST('2026-01-03' AS DATE)") == 2  # the date in the session's zone
    assert "CAST('2026-01-03 08:30:00' AS TIMESTAMP_NTZ)" in timed
    assert with_fixed_time("current_timezone()", at, "Asia/Tokyo") == "'Asia/Tokyo'"


def test_a_spec_with_current_time_gets_one_instant_everywhere():
    spec = MergeSpec.from_config(
        "m",
        {
            "unique_key": "k",
            "incremental_predicates": ["t.d >= current_date() - 3"],
            "target_alias": "t",
            "when_matched": [{"action": "update", "condition": "now() > t.ts", "set": {"ts": "now()"}}],
        },
    )
    assert uses_current_time(spec)
    assert not uses_current_time(MergeSpec.from_config("m", {"unique_key": "k"}))
    timed = timed_spec(spec, dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), "UTC")
    assert "now" not in (timed.matched[0].condition or "").lower()
    assert "current_date" not in timed.on_condition.lower()
    assert "current_date" not in timed.incremental_predicates[0].lower()
    assert not uses_current_time(timed)
