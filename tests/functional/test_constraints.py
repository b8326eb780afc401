"""dbt model contracts on Delta tables: dbt-tests-adapter's constraints suites, with Spark's types
and the Delta table definition our run files record (dbt's base classes expect Postgres')."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.constraints import fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintQuotedColumn,
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseIncrementalContractSqlHeader,
    BaseIncrementalForeignKeyConstraint,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseTableContractSqlHeader,
    BaseViewConstraintsColumnsEqual,
)
from dbt.tests.util import run_dbt

_SCHEMA_YML = fixtures.model_schema_yml.replace("text", "string")
_FK_SCHEMA_YML = fixtures.model_fk_constraint_schema_yml.replace("text", "string")
_QUOTED_YML = fixtures.model_quoted_column_schema_yml.replace("text", "string").replace('"from"', "`from`")
_MODEL_CONSTRAINTS_YML = fixtures.constrained_model_schema_yml.replace("text", "string")


class SparkTypes:
    @pytest.fixture
    def string_type(self):
        return "string"

    @pytest.fixture
    def int_type(self):
        return "int"

    @pytest.fixture
    def schema_string_type(self):
        return "string"

    @pytest.fixture
    def schema_int_type(self):
        return "int"

    @pytest.fixture
    def data_types(self, int_type, schema_int_type, string_type, schema_string_type):
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", schema_int_type, int_type],
            ["'1'", schema_string_type, string_type],
            ["true", "boolean", "boolean"],
            ["array('1','2','3')", "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01' as timestamp)", "timestamp", "timestamp"],
            ["cast(1.0 as decimal(4, 2))", "decimal(4,2)", "decimal(4,2)"],
        ]


class TestTableConstraintsColumnsEqual(SparkTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": fixtures.my_model_wrong_order_sql,
            "my_model_wrong_name.sql": fixtures.my_model_wrong_name_sql,
            "constraints_schema.yml": _SCHEMA_YML,
        }


class TestIncrementalConstraintsColumnsEqual(SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": fixtures.my_model_incremental_wrong_order_sql,
            "my_model_wrong_name.sql": fixtures.my_model_incremental_wrong_name_sql,
            "constraints_schema.yml": _SCHEMA_YML,
        }


class RecordedDdl:
    """The run file holds the Delta table definition the write gives, as CREATE TABLE."""

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return """
create or replace table <model_identifier> (
    id integer not null primary key check ((id > 0)) check (id >= 1)
      references <foreign_key_model_identifier> (id) unique,
    color string,
    date_day string
)
using delta
as select id, color, date_day from (
    -- depends_on: <foreign_key_model_identifier>
    select 'blue' as color, 1 as id, '2019-01-01' as date_day
) as model_subq
"""


class TestTableConstraintsRuntimeDdlEnforcement(RecordedDdl, BaseConstraintsRuntimeDdlEnforcement):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _FK_SCHEMA_YML,
        }


class TestIncrementalConstraintsRuntimeDdlEnforcement(
    RecordedDdl, BaseIncrementalConstraintsRuntimeDdlEnforcement
):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_incremental_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _FK_SCHEMA_YML,
        }


class DeltaErrors:
    """Delta's texts; the write fails inside its own job, so the table keeps its last version."""

    @pytest.fixture(scope="class")
    def expected_error_messages(self):
        return ["[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: id."]


@pytest.mark.stores
class TestTableConstraintsRollback(DeltaErrors, BaseConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):
        return {"my_model.sql": fixtures.my_model_sql, "constraints_schema.yml": _SCHEMA_YML}


@pytest.mark.stores
class TestIncrementalConstraintsRollback(DeltaErrors, BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self):
        return {"my_model.sql": fixtures.my_incremental_model_sql, "constraints_schema.yml": _SCHEMA_YML}


class TestModelConstraintsRuntimeEnforcement(BaseModelConstraintsRuntimeEnforcement):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": fixtures.foreign_key_model_sql,
            "constraints_schema.yml": _MODEL_CONSTRAINTS_YML,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return """
create or replace table <model_identifier> (
    id integer not null,
    color string,
    date_day string,
    check ((id > 0)),
    check (id >= 1),
    primary key (id),
    constraint strange_uniqueness_requirement unique (color, date_day),
    foreign key (id) references <foreign_key_model_identifier> (id)
)
using delta
as select id, color, date_day from (
    -- depends_on: <foreign_key_model_identifier>
    select 'blue' as color, 1 as id, '2019-01-01' as date_day
) as model_subq
"""


class TestConstraintQuotedColumn(BaseConstraintQuotedColumn):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model.sql": fixtures.my_model_with_quoted_column_name_sql.replace('"from"', "`from`"),
            "constraints_schema.yml": _QUOTED_YML,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self):
        return """
create or replace table <model_identifier> (
    id integer not null,
    `from` string not null,
    date_day string,
    check ((`from` = 'blue'))
)
using delta
as select id, `from`, date_day from (
    select 'blue' as `from`, 1 as id, '2019-01-01' as date_day
) as model_subq
"""


_HEADER_MODEL = """
{{{{ config(materialized = "{materialized}", on_schema_change="append_new_columns") }}}}
{{% call set_sql_header(config) %}}
set time zone 'Asia/Kolkata';
{{%- endcall %}}
select current_timezone() as column_name
"""
_HEADER_YML = """
version: 2
models:
  - name: my_model_contract_sql_header
    config:
      contract:
        enforced: true
    columns:
      - name: column_name
        data_type: string
"""


class RestoresTimeZone:
    """The header sets the session's time zone (as it would for a user's later models too): the
    tests after these, on the same Spark session, get it back."""

    @pytest.fixture(scope="class", autouse=True)
    def _restore_time_zone(self, project):
        zone = project.run_sql("select current_timezone()", fetch="one")[0]
        yield
        project.run_sql(f"set time zone '{zone}'")


class TestTableContractSqlHeader(RestoresTimeZone, BaseTableContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_contract_sql_header.sql": _HEADER_MODEL.format(materialized="table"),
            "constraints_schema.yml": _HEADER_YML,
        }

    def test_the_header_ran_on_the_model_session(self, project):
        run_dbt(["run", "-s", "my_model_contract_sql_header"])
        rows = project.run_sql(
            f"select * from {project.test_schema}.my_model_contract_sql_header", fetch="all"
        )
        assert [tuple(r) for r in rows] == [("Asia/Kolkata",)]


class TestIncrementalContractSqlHeader(RestoresTimeZone, BaseIncrementalContractSqlHeader):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_contract_sql_header.sql": _HEADER_MODEL.format(materialized="incremental"),
            "constraints_schema.yml": _HEADER_YML,
        }


class TestViewConstraintsColumnsEqual(SparkTypes, BaseViewConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "my_model_wrong_order.sql": fixtures.my_model_view_wrong_order_sql,
            "my_model_wrong_name.sql": fixtures.my_model_view_wrong_name_sql,
            "constraints_schema.yml": _SCHEMA_YML,
        }


class TestIncrementalForeignKeyConstraint(BaseIncrementalForeignKeyConstraint):
    """A foreign key to another model (informational on Delta) through two incremental runs."""
