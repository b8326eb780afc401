from __future__ import annotations

import re

import pytest

from dbt.adapters.deltamerge.statements.parse.dml import StatementParseError
from dbt.adapters.deltamerge.statements.parse.maintenance import ReorgStatement, parse_maintenance
from dbt.adapters.deltamerge.statements.parse.text import SqlText


@pytest.mark.parametrize(
    ("sql", "parsed"),
    [
        ("REORG TABLE s.t APPLY (PURGE)", ReorgStatement(("s", "t"), None)),
        ("reorg table t where p = 'x' apply (purge);", ReorgStatement(("t",), "p = 'x'")),
        (
            "REORG TABLE s.t APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2))",
            ReorgStatement(("s", "t"), None, upgrade_uniform=2),
        ),
        (
            "reorg table `s`.`t` apply ( upgrade uniform ( iceberg_compat_version = 2 ) ) ;",
            ReorgStatement(("s", "t"), None, upgrade_uniform=2),
        ),
    ],
)
def test_reorg(sql, parsed):
    assert parse_maintenance(SqlText(sql)) == parsed


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        ("REORG TABLE t APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=3))", "IcebergCompatVersion = 3"),
        ("REORG TABLE t APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=1))", "only ICEBERG_COMPAT_VERSION=2"),
        ("REORG TABLE t WHERE p = 1 APPLY (UPGRADE UNIFORM(ICEBERG_COMPAT_VERSION=2))", "drop the WHERE"),
        ("REORG TABLE t APPLY (VACUUM)", "only APPLY (PURGE) and APPLY (UPGRADE UNIFORM"),
    ],
)
def test_reorg_refusals(sql, refusal):
    with pytest.raises(StatementParseError, match=re.escape(refusal)):
        parse_maintenance(SqlText(sql))
