"""Invalid MERGE statements: our engine refuses each with the error class Delta on Spark gives.

Each statement runs through our SQL door (statement parser, clause validation, the merge) on one
copy of a table and through Delta's own ``MERGE INTO`` on the other; both must refuse it with the
same error class (but for ``DIFFERENT``, each with its reason), and neither copy may change.
"""

from __future__ import annotations

import re

import pytest

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import TableChange
from dbt.adapters.deltamerge.merge import MergeSpec, evolved_by_merge, merge_into
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from tests.files import copy_folder

SOURCE = (
    "(SELECT 'A' AS key, named_struct('a', 7, 'b', 'n') AS value, 1 AS v "
    "UNION ALL SELECT 'C', named_struct('a', 3, 'b', 'c'), 3)"
)
ON = "t.key = s.key"
# (clauses, a duplicate-key source instead of SOURCE): each must be refused.
INVALID = {
    "conflicting_nested_set": "WHEN MATCHED THEN UPDATE SET value.a = 1, value = s.value",
    "duplicate_set": "WHEN MATCHED THEN UPDATE SET v = 1, v = 2",
    "duplicate_insert_column": "WHEN NOT MATCHED THEN INSERT (key, key) VALUES (s.key, s.key)",
    "non_deterministic_condition": "WHEN MATCHED AND rand() > 0.5 THEN DELETE",
    "aggregate_condition": "WHEN MATCHED AND max(t.v) > 0 THEN DELETE",
    "subquery_condition": "WHEN NOT MATCHED AND s.v IN (SELECT 1) THEN INSERT *",
    "target_column_in_insert": "WHEN NOT MATCHED THEN INSERT (key, v) VALUES (t.key, 1)",
    "nested_field_of_a_non_struct": "WHEN MATCHED THEN UPDATE SET v.x = 1",
    "unknown_target_column": "WHEN MATCHED THEN UPDATE SET nope = 1",
    "multiple_matches": "WHEN MATCHED THEN UPDATE SET v = s.v",
}
# Where Delta 4.4 on Spark 4.2 answers otherwise, and why ours keeps the class Delta's own rules give.
DIFFERENT = {
    # Delta's jar lacks this error class in its error table: Spark reports that instead.
    "target_column_in_insert": ("DELTA_MERGE_UNRESOLVED_EXPRESSION", "INTERNAL_ERROR"),
    "unknown_target_column": ("DELTA_MERGE_UNRESOLVED_EXPRESSION", "INTERNAL_ERROR"),
    # Spark 4.2's analyzer resolves ``v.x`` before Delta's PreprocessTableMerge check can say it.
    "nested_field_of_a_non_struct": (
        "DELTA_UNSUPPORTED_FIELD_UPDATE_NON_STRUCT",
        "INVALID_EXTRACT_BASE_FIELD_TYPE",
    ),
}
DUPLICATE_SOURCE = (
    "(SELECT 'A' AS key, named_struct('a', 1, 'b', 'x') AS value, 1 AS v "
    "UNION ALL SELECT 'A', named_struct('a', 2, 'b', 'y'), 2)"
)


def _class(text: str) -> str | None:
    found = re.search(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]", text)
    return found.group(1) if found else None


@pytest.fixture(scope="module")
def tables(spark, tmp_path_factory) -> tuple[str, str]:
    root = str(tmp_path_factory.mktemp("errors"))
    frame = spark.sql(
        "SELECT 'A' AS key, named_struct('a', 1, 'b', 'x') AS value, 10 AS v "
        "UNION ALL SELECT 'B', named_struct('a', 2, 'b', 'y'), 20"
    )
    write_dataframe(spark, frame, WriteRequest(TableLocation.of(f"{root}/ours"), "create_or_replace"))
    copy_folder(f"{root}/ours", f"{root}/theirs")
    return f"{root}/ours", f"{root}/theirs"


def _ours(spark, path: str, sql: str) -> str:
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    try:
        statement = parse_write_statement(SqlText(sql))
        spec = MergeSpec.from_config("MERGE INTO t", statement.config)  # type: ignore[union-attr]
        source = spark.sql(statement.source_query)  # type: ignore[union-attr]
        evolved = evolved_by_merge(spec, snapshot, source.schema, what="t") if spec.schema_evolution else None
        merge_into(spark, source, snapshot, spec, change=TableChange(schema=evolved))
    except Exception as error:  # (every refusal of ours: parse, config, resolution, the merge)
        return str(error)
    raise AssertionError(f"ours ran {sql}")


@pytest.mark.delta
@pytest.mark.parametrize("name", sorted(INVALID))
def test_ours_refuses_an_invalid_merge_with_delta_s_error_class(spark, delta_spark, tables, name):
    ours, theirs = tables
    source = DUPLICATE_SOURCE if name == "multiple_matches" else SOURCE
    statement = f"MERGE INTO {{}} t USING {source} s ON {ON} {INVALID[name]}"
    refused = delta_spark.error(statement.format(f"delta.`{theirs}`"))
    message = _ours(spark, ours, statement.format("t"))
    expected = DIFFERENT.get(name, (refused.error_class, refused.error_class))
    assert (_class(message), refused.error_class) == expected, (message, str(refused))
    assert load_snapshot(TableLocation.of(ours)).version == 0 and len(delta_spark.history(theirs)) == 1  # type: ignore[union-attr]
