"""dbt-tests-adapter's fixtures are Postgres SQL; these run them as Spark SQL.

The fixtures use ``::text``, ``TEXT``, three-part names with a database and several
statements in one string. sqlglot translates them to Spark's dialect; each statement then runs
through the adapter (and the engine, for DML on Delta tables) like any other.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlglot


def spark_sql(sql: str) -> list[str]:
    """A fixture's Postgres statements in Spark's dialect, without the database part Spark lacks."""
    # `{database}.` unformatted, or formatted by the test with Spark's database (None).
    sql = re.sub(r"\bNone\.", "", sql.replace("{database}.", "")).replace("{schema}", "__schema__")
    return [
        s.replace("__schema__", "{schema}")
        for s in sqlglot.transpile(sql, read="postgres", write="spark")
        if s.strip()
    ]


class SparkDialectFixtures:
    """The class's ``project`` runs every ``run_sql`` (and ``run_sql_file``) string translated.

    Models are Jinja, which sqlglot cannot read: ``model_replacements`` lists the literal
    Postgres spellings to replace in the project's model and macro files before dbt first
    parses them.
    """

    model_replacements: dict[str, str] = {}

    @pytest.fixture(scope="class")
    def project(self, project):
        root = Path(str(project.project_root))
        for path in [*(root / "models").rglob("*.sql"), *(root / "macros").rglob("*.sql")]:
            text = path.read_text()
            for postgres, spark in self.model_replacements.items():
                text = text.replace(postgres, spark)
            path.write_text(text)
        original = project.run_sql

        def run_sql(sql, fetch=None):
            result = None
            for statement in spark_sql(sql):
                result = original(statement, fetch)
            return result

        project.run_sql = run_sql
        yield project
