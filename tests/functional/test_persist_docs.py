"""persist_docs on Delta tables: descriptions in the Delta metadata and in the catalog entry."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt
from deltalake import DeltaTable

from tests.functional.helpers import operations, table_path

MODEL = "{{ config(materialized='table') }}\nselect 1 as id, 'a' as name"
LONG = "A long description. " * 30  # 600 characters: more than the metastore's 256
SCHEMA = f"""
version: 2
models:
  - name: documented
    description: "The table's own description, with 'quotes'."
    config:
      persist_docs: {{relation: true, columns: true}}
    columns:
      - name: id
        description: "The key."
      - name: name
        description: "{LONG}"
"""


class TestPersistDocs:
    @pytest.fixture(scope="class")
    def models(self):
        return {"documented.sql": MODEL, "schema.yml": SCHEMA}

    def test_descriptions_are_in_the_delta_metadata_and_the_catalog(self, project, spark):
        run_dbt(["run"])
        path = table_path(project, "documented")
        table = DeltaTable(path)
        assert table.metadata().description == "The table's own description, with 'quotes'."
        comments = {f.name: f.metadata.get("comment") for f in table.schema().fields}
        assert comments == {"id": "The key.", "name": LONG}
        assert operations(path) == ["CREATE TABLE AS SELECT", "SET TBLPROPERTIES"]
        described = {
            r.col_name: r.comment
            for r in spark.sql(f"describe table {project.test_schema}.documented").collect()
        }
        assert described["id"] == "The key." and described["name"] == LONG[:256]
        extended = spark.sql(f"describe table extended {project.test_schema}.documented").collect()
        assert any(r.col_name == "Comment" and r.data_type.startswith("The table's own") for r in extended)

    def test_a_second_run_with_the_same_docs_commits_only_its_write(self, project):
        run_dbt(["run"])
        path = table_path(project, "documented")
        # The rebuild replaces the definition; the descriptions are written again, once.
        assert operations(path)[-2:] == ["CREATE OR REPLACE TABLE AS SELECT", "SET TBLPROPERTIES"]
        assert DeltaTable(path).metadata().description.startswith("The table's own")


class TestDocsCatalogStats:
    @pytest.fixture(scope="class")
    def models(self):
        return {"counted.sql": "{{ config(materialized='table') }}\nselect id from range(7)"}

    def test_docs_generate_reports_rows_bytes_files_and_version_from_the_log(self, project):
        run_dbt(["run"])
        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as handle:
            stats = json.load(handle)["nodes"]["model.test.counted"]["stats"]
        table = DeltaTable(table_path(project, "counted"))
        assert stats["rows"]["value"] == 7
        assert stats["version"]["value"] == table.version() == 0
        assert stats["files"]["value"] == len(table.file_uris())
        assert stats["bytes"]["value"] == sum(
            a["size_bytes"] for a in pa.table(table.get_add_actions(flatten=True)).to_pylist()
        )
