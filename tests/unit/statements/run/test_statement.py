"""A SQL MERGE's clause set is checked as the statement's, in the statement's words."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.statements.parse.dml import MergeStatement
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from dbt.adapters.deltamerge.statements.run.statement import StatementError, merge_spec


def _merge(sql: str) -> MergeStatement:
    statement = parse_write_statement(SqlText(sql))
    assert isinstance(statement, MergeStatement)
    return statement


def test_a_valid_merge_is_its_clause_set():
    spec = merge_spec(_merge("merge into s.t t using s.u u on t.k = u.k when matched then delete"), "s.t")
    assert spec.on_condition == "t.k = u.k" and spec.is_only_one_unconditional_delete


@pytest.mark.parametrize(
    ("sql", "said"),
    [
        (
            "merge into t using s on t.k = s.k when matched then update set * when matched then delete",
            "MERGE INTO s.t: [NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION] When there are more than one MATCHED "
            "clauses in a MERGE statement, only the last MATCHED clause can omit the condition. "
            "Nothing was written.",
        ),
        (
            "merge into t using s on t.k = s.k when not matched by source then insert *",
            "MERGE INTO s.t: the 1st WHEN NOT MATCHED BY SOURCE clause: action must be one of ['update', "
            "'delete'], got 'insert'. Nothing was written.",
        ),
        (
            "merge into t x using s x on x.k = x.k when matched then delete",
            "MERGE INTO s.t: the source's and the target's aliases must differ (both are 'x'). "
            "Nothing was written.",
        ),
    ],
)
def test_a_wrong_merge_is_said_as_the_statements_error_not_a_models_config(sql, said):
    with pytest.raises(StatementError) as raised:
        merge_spec(_merge(sql), "s.t")
    assert str(raised.value) == said
    assert "Model" not in said and "config" not in said
