"""Differential test against Delta Lake itself: the casts a MERGE's assignments make.

Delta casts a value assigned to a column of another type as Spark's ANSI cast does
(``UpdateExpressionsSupport.cast`` under the default ``storeAssignmentPolicy``): a string into
a number, boolean or date column, a double into an int, inside arrays and structs too; a value
that does not convert (``'a'`` into an int, an overflow, a bad element of an array) fails the
merge, and a type pair Spark cannot cast at all (a date into an int) is refused before anything
runs. Each seeded case merges the same source with random ``UPDATE SET`` / ``INSERT`` assignments
of mixed types through our SQL ``MERGE INTO`` and through Delta on Spark's, on copies of one
table: both fail, or both leave the same rows (read by Delta on Spark).
``DELTAMERGE_ORACLE_CAST_CASES`` sets the number of cases (default 6; thousands for a long run).
"""

from __future__ import annotations

import os
import random

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from tests.files import copy_folder

CASES = int(os.environ.get("DELTAMERGE_ORACLE_CAST_CASES", "6"))
FIRST = int(os.environ.get("DELTAMERGE_ORACLE_CAST_FIRST", "0"))
TARGET = (
    "k int, i int, d double, dec decimal(6,2), b boolean, dt date, ts timestamp, s string, "
    "arr array<int>, st struct<a:int,b:string>"
)
SOURCE = (
    "k int, txt string, num double, big bigint, flag string, day string, strs array<string>, "
    "pair struct<a:string,b:string>"
)
# Expressions over the source (alias s) a column may be assigned, by target column.
VALUES = {
    "i": ["s.txt", "s.num", "s.big", "cast(s.num as decimal(12,3))", "'20'", "s.flag = 'true'"],
    "d": ["s.txt", "s.big", "s.num * 2"],
    "dec": ["s.txt", "s.num", "s.big"],
    "b": ["s.flag", "s.num", "s.txt"],
    "dt": ["s.day", "cast(s.day as timestamp)", "s.num"],
    "ts": ["s.day", "s.big", "s.num"],
    "s": ["s.num", "s.big", "cast(s.day as date)", "s.flag = 'true'", "s.pair", "s.strs"],
    "arr": ["s.strs", "array(s.num, 2.5)", "array(s.txt)"],
    "st": ["s.pair", "named_struct('a', s.txt, 'b', s.day)", "named_struct('a', s.num, 'b', s.num)"],
}


def _source_row(rng: random.Random, k: int) -> tuple:
    return (
        k,
        rng.choice(["20", "9000", "a", " 7 ", "1e3", "-3", None]),
        rng.choice([34.7, 1e10, -1.5, 0.0, None]),
        rng.choice([5, 2**40, -(2**31) - 1, None]),
        rng.choice(["true", "no", "maybe", "1", None]),
        rng.choice(["2024-01-02", "x", "2024-02-30", None]),
        rng.choice([["1", "2"], ["1", "x"], [], None]),
        rng.choice([("1", "p"), ("z", "q"), None]),
    )


def _target_rows() -> list[tuple]:
    return [(k, k, k / 2, None, k % 2 == 0, None, None, str(k), [k], (k, "t")) for k in range(5)]


def _assignments(rng: random.Random) -> dict[str, str]:
    columns = rng.sample(sorted(VALUES), rng.randint(1, 4))
    return {c: rng.choice(VALUES[c]) for c in columns}


def _merge_text(target: str, source: str, updates: dict[str, str], inserts: dict[str, str]) -> str:
    sets = ", ".join(f"{c} = {e}" for c, e in updates.items())
    columns, values = ["k", *inserts], ["s.k", *inserts.values()]
    return (
        f"MERGE INTO {target} t USING (SELECT * FROM parquet.`{source}`) s ON t.k = s.k "
        f"WHEN MATCHED THEN UPDATE SET {sets} "
        f"WHEN NOT MATCHED THEN INSERT ({', '.join(columns)}) VALUES ({', '.join(values)})"
    )


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_assignment_casts_same_as_delta(spark, delta_spark, tmp_path, seed):
    rng = random.Random(seed)
    ours, theirs, source = str(tmp_path / "ours"), str(tmp_path / "theirs"), str(tmp_path / "source")
    write_dataframe(
        spark,
        spark.createDataFrame(_target_rows(), TARGET),
        WriteRequest(TableLocation.of(ours), "create_or_replace"),
    )
    copy_folder(ours, theirs)
    rows = [_source_row(rng, k) for k in rng.sample(range(3, 9), rng.randint(1, 4))]
    spark.createDataFrame(rows, SOURCE).coalesce(1).write.parquet(source)
    updates, inserts = _assignments(rng), _assignments(rng)
    case = (seed, updates, inserts, rows)
    try:
        delta_spark.sql(_merge_text(f"delta.`{theirs}`", source, updates, inserts))
        delta_failed = None
    except Exception as error:  # Delta's refusal, compared below
        delta_failed = error
    statement = parse_write_statement(SqlText(_merge_text("target", source, updates, inserts)))
    try:
        snapshot = load_snapshot(TableLocation.of(ours))
        assert snapshot is not None
        spec = MergeSpec.from_config("MERGE INTO target", statement.config)
        merge_into(spark, spark.sql(statement.source_query), snapshot, spec)
        ours_failed = None
    except Exception as error:
        ours_failed = error
    assert (ours_failed is None) == (delta_failed is None), (
        case,
        str(ours_failed)[:600],
        str(delta_failed)[:600],
    )
    if ours_failed is None:
        ours_rows, theirs_rows = (_rows(delta_spark, path) for path in (ours, theirs))
        assert ours_rows == theirs_rows, case


def _rows(delta, path: str) -> tuple[str, list[str]]:
    """The schema and rows (as text: arrays and structs included) Delta on Spark reads at ``path``."""
    schema = delta.query(f"SELECT * FROM delta.`{path}` LIMIT 0")[0]
    rows = delta.sql(f"SELECT to_json(struct(*)) AS row FROM delta.`{path}`")  # years past 9999 too
    return schema, sorted(r["row"] for r in rows)


def test_a_struct_or_an_array_into_a_string_column_is_its_text_as_in_delta(spark, delta_spark, tmp_path):
    """Delta casts any value assigned to a string column with Spark's cast: a struct is ``{1, x}``,
    an array ``[]`` (it was refused here, ``DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION``)."""
    ours, theirs, source = str(tmp_path / "ours"), str(tmp_path / "theirs"), str(tmp_path / "source")
    write_dataframe(
        spark, spark.sql("select 1 as k, 'a' as s"), WriteRequest(TableLocation.of(ours), "create_or_replace")
    )
    copy_folder(ours, theirs)
    spark.sql(
        "select 1 as k, named_struct('a', 1, 'b', 'x') as p, array(1, 2) as arr union all "
        "select 2, named_struct('a', 2, 'b', cast(null as string)), cast(array() as array<int>)"
    ).coalesce(1).write.parquet(source)
    merge = (
        "MERGE INTO {} t USING (SELECT * FROM parquet.`" + source + "`) s ON t.k = s.k "
        "WHEN MATCHED THEN UPDATE SET s = s.p WHEN NOT MATCHED THEN INSERT (k, s) VALUES (s.k, s.arr)"
    )
    delta_spark.sql(merge.format(f"delta.`{theirs}`"))
    statement = parse_write_statement(SqlText(merge.format("target")))
    spec = MergeSpec.from_config("MERGE INTO target", statement.config)
    merge_into(spark, spark.sql(statement.source_query), load_snapshot(TableLocation.of(ours)), spec)
    assert _rows(delta_spark, ours) == _rows(delta_spark, theirs)
    assert sorted(r["s"] for r in DeltaTable(ours).to_pyarrow_table().to_pylist()) == ["[]", "{1, x}"]
