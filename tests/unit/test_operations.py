"""Operation arguments: every one read before anything runs; a wrong one fails naming it (no Spark)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dbt.adapters.deltamerge import operations
from dbt.adapters.deltamerge.common.config_values import SpecError


def _problems(call):  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError) as caught:
        call()
    return caught.value


def test_vacuum_arguments():
    error = _problems(lambda: operations.vacuum_table(None, "s.t", "168", "no", 1))  # type: ignore[arg-type]
    assert str(error).startswith("Operation 'vacuum': invalid arguments")
    assert error.problems == [
        "retain_hours must be a number of hours >= 0, got '168'",
        "dry_run must be true or false, got 'no'",
        "enforce_retention must be true or false, got 1",
    ]


def test_a_false_given_as_text_is_false_not_true():
    # bool("false") is True: a dry run meant as a real one, or a retention check switched off.
    error = _problems(lambda: operations.vacuum_table(None, 5, 168, "false", "FALSE"))  # type: ignore[arg-type]
    assert error.problems == ["relation must be a relation or a name like schema.table, got 5"]


def test_convert_arguments():
    error = _problems(
        lambda: operations.convert(
            None,
            path=["/data"],
            relation=None,
            partition_by=3,
            statistics="off",
            relation_name="",  # type: ignore[arg-type]
        )
    )
    assert error.problems == [
        "path must be a non-empty text, got ['/data']",
        "partition_by must be columns with types (day DATE, ...), got 3",
        "statistics must be true or false, got 'off'",
        "relation_name must be a relation name (schema.table), got ''",
    ]
    both = _problems(
        lambda: operations.convert(
            None,
            path="/a",
            relation="s.t",
            partition_by=None,
            statistics=True,
            relation_name=None,  # type: ignore[arg-type]
        )
    )
    assert both.problems == ["give exactly one of `path` or `relation`"]


@pytest.mark.parametrize("start", [True, -1, 1.5, "one", None])
def test_table_changes_versions(start):
    error = _problems(lambda: operations.table_changes(None, "s.t", start))  # type: ignore[arg-type]
    expected = f"starting_version must be a table version (a whole number >= 0), got {start!r}"
    assert error.problems == [expected]


def test_a_version_from_run_query_is_a_decimal():
    problems: list[str] = []
    assert operations._version(Decimal("3"), "starting_version", problems) == 3 and not problems
