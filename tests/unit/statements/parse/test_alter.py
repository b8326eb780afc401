from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.statements.parse.alter import (
    AddConstraintStatement,
    AlterColumnStatement,
    DropConstraintStatement,
)
from dbt.adapters.deltamerge.statements.parse.ddl import parse_ddl
from dbt.adapters.deltamerge.statements.parse.dml import StatementParseError
from dbt.adapters.deltamerge.statements.parse.text import SqlText


@pytest.mark.parametrize(
    ("sql", "parsed"),
    [
        (
            "alter table s.t add constraint c check (a > 0 and b is not null)",
            AddConstraintStatement(("s", "t"), "c", "a > 0 AND NOT b IS NULL"),
        ),
        ("alter table t drop constraint if exists c", DropConstraintStatement(("t",), "c", True)),
        ("alter table t drop constraint c", DropConstraintStatement(("t",), "c", False)),
        ("alter table t alter column a set not null", AlterColumnStatement(("t",), "a", not_null=True)),
        ("alter table t alter column a drop not null", AlterColumnStatement(("t",), "a", not_null=False)),
        ("alter table t alter column a set default 'x'", AlterColumnStatement(("t",), "a", default="'x'")),
        ("alter table t alter column a drop default", AlterColumnStatement(("t",), "a", default="")),
    ],
)
def test_constraint_and_column_alters(sql, parsed):
    assert parse_ddl(SqlText(sql)) == parsed


def test_only_check_constraints():
    with pytest.raises(StatementParseError, match="ADD CONSTRAINT name CHECK"):
        parse_ddl(SqlText("alter table t add constraint pk primary key (a)"))
    assert parse_ddl(SqlText("alter table t alter column a type bigint")) is None
