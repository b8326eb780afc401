"""Differential test against Delta Lake itself: schema evolution of structs in every position.

Each seeded case makes a target whose column ``x`` holds a struct somewhere (a struct, an array of
structs, a map's struct values or keys, an array in a map, a map in a struct), written by our
engine and copied (the same files) for Delta, and a source whose struct there gains a field, lacks
one, has them in another order or one of another type (a numeric string into an int). The same
``MERGE [WITH SCHEMA EVOLUTION] INTO`` text (``UPDATE SET *`` / ``INSERT *`` / ``SET x = s.x``, or a
new field assigned by its path) runs through our statement parser and engine and through Delta on
Spark. Checked: both succeed or both fail (then ours committed nothing); Delta on Spark reads the
same schema and the same rows (maps compared as sets of entries) of both tables.

``DELTAMERGE_NESTED_ORACLE_CASES`` sets the number of cases (default 6; thousands for a long run),
from seed ``DELTAMERGE_NESTED_ORACLE_FIRST``.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from pyspark.errors import AnalysisException, SparkRuntimeException

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta import DeltaError, TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.log import TableChange
from dbt.adapters.deltamerge.merge import MergeSpec, evolved_by_merge, merge_into
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from tests.delta_spark import DeltaError as DeltasError
from tests.files import copy_folder

CASES = int(os.environ.get("DELTAMERGE_NESTED_ORACLE_CASES", "6"))
FIRST = int(os.environ.get("DELTAMERGE_NESTED_ORACLE_FIRST", "0"))
FIELDS = [("a", "int"), ("b", "int"), ("c", "string")]
# Where the struct sits in ``x`` ({} is the struct's type).
SHAPES = [
    "{}",
    "array<{}>",
    "map<string, {}>",
    "map<{}, int>",
    "map<string, array<{}>>",
    "struct<m: map<string, {}>, n: int>",
]
CLAUSES = [
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *",
    "WHEN MATCHED THEN UPDATE SET *",
    "WHEN MATCHED THEN UPDATE SET x = s.x WHEN NOT MATCHED THEN INSERT *",
    "WHEN NOT MATCHED THEN INSERT *",
]


def _struct(fields: list[tuple[str, str]]) -> str:
    return "struct<" + ", ".join(f"{n}: {t}" for n, t in fields) + ">"


def _value(rng: random.Random, data_type: str, fields: list[tuple[str, str]], numeric: bool) -> str:
    """A SQL literal of ``data_type`` (the shape's text; ``{}`` is the struct of ``fields``)."""
    if data_type == "{}":
        parts = []
        for name, kind in fields:
            if rng.random() < 0.1:
                parts.append(f"'{name}', CAST(NULL AS {kind})")
            elif kind == "int":
                parts.append(f"'{name}', {rng.randint(0, 99)}")
            else:  # a string: digits where it may meet an int column (a cast Delta makes)
                text = str(rng.randint(0, 99)) if numeric else f"s{rng.randint(0, 9)}"
                parts.append(f"'{name}', '{text}'")
        return f"named_struct({', '.join(parts)})"
    if data_type.startswith("array<"):
        inner = data_type[len("array<") : -1]
        return f"array({', '.join(_value(rng, inner, fields, numeric) for _ in range(rng.randint(1, 3)))})"
    if data_type.startswith("map<string, "):
        inner = data_type[len("map<string, ") : -1]
        entries = [f"'k{i}', {_value(rng, inner, fields, numeric)}" for i in range(rng.randint(1, 2))]
        return f"map({', '.join(entries)})"
    if data_type == "map<{}, int>":  # distinct keys: the first field differs per entry (or is null)
        keys = {_value(rng, "{}", fields, numeric) for _ in range(rng.randint(1, 2))}
        return f"map({', '.join(f'{k}, {rng.randint(0, 9)}' for k in sorted(keys))})"
    assert data_type.startswith("struct<m: ")
    return f"named_struct('m', {_value(rng, 'map<string, {}>', fields, numeric)}, 'n', {rng.randint(0, 9)})"


def _select(
    rng: random.Random, keys: list[int], shape: str, fields: list[tuple[str, str]], numeric: bool
) -> str:
    declared = shape.replace("{}", _struct(fields))
    return " UNION ALL ".join(
        f"SELECT {k} AS key, CAST({_value(rng, shape, fields, numeric)} AS {declared}) AS x" for k in keys
    )


def nested_case(rng: random.Random) -> tuple[str, str, str, bool]:
    """``(target SELECT, source SELECT, clauses, schema evolution)`` of one case."""
    shape = rng.choice(SHAPES)
    target = rng.sample(FIELDS, rng.randint(1, 3))
    source = list(target)
    if len(source) > 1 and rng.random() < 0.3:
        source.pop(rng.randrange(len(source)))
    if rng.random() < 0.6:
        source.insert(rng.randint(0, len(source)), ("d", rng.choice(["int", "string"])))
    if rng.random() < 0.5:
        rng.shuffle(source)
    numeric = rng.random() < 0.3
    if numeric:  # an int field of the table arrives as digits
        source = [(n, "string" if t == "int" and n != "d" else t) for n, t in source]
    clauses = rng.choice(CLAUSES)
    if shape == "{}" and ("d", "int") in source and rng.random() < 0.5:
        clauses = "WHEN MATCHED THEN UPDATE SET x.d = s.x.d WHEN NOT MATCHED THEN INSERT *"
    target_keys = sorted(rng.sample(range(1, 9), rng.randint(1, 4)))
    source_keys = sorted(rng.sample(range(1, 9), rng.randint(1, 4)))
    return (
        _select(rng, target_keys, shape, target, False),
        _select(rng, source_keys, shape, source, numeric),
        clauses,
        rng.random() < 0.8,
    )


def _canonical(value: Any) -> Any:
    """A value Delta's reader gave, its maps as sorted entries (a map's order is no one's)."""
    if isinstance(value, dict):
        return sorted(((_canonical(k), _canonical(v)) for k, v in value.items()), key=repr)
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _read(delta, path: str) -> tuple[str, list[str]]:
    schema, rows = delta.query(f"SELECT * FROM delta.`{path}`")
    return schema, sorted(repr(_canonical(r)) for r in rows)


def _ours(spark, path: str, sql: str) -> None:
    statement = parse_write_statement(SqlText(sql))
    spec = MergeSpec.from_config("MERGE INTO target", statement.config)
    source = spark.sql(statement.source_query)
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    evolved = evolved_by_merge(spec, snapshot, source.schema, what="case") if spec.schema_evolution else None
    merge_into(spark, source, snapshot, spec, change=TableChange(schema=evolved))


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_nested_schema_evolution_same_as_delta(spark, delta_spark, tmp_path, seed):
    target, source, clauses, evolve = nested_case(random.Random(seed))
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    write_dataframe(spark, spark.sql(target), WriteRequest(TableLocation.of(ours), "create_or_replace"))
    copy_folder(ours, theirs)
    merge = "MERGE WITH SCHEMA EVOLUTION INTO" if evolve else "MERGE INTO"
    text = f"{merge} {{}} t USING ({source}) s ON t.key = s.key {clauses}"
    case = (seed, text.format("target"))
    delta_spark.sql("SET spark.databricks.delta.schema.autoMerge.enabled = false")  # the text decides
    try:
        delta_spark.sql(text.format(f"delta.`{theirs}`"))
        delta_failed = None
    except DeltasError as error:
        delta_failed = error
    try:
        _ours(spark, ours, text.format(f"delta.`{ours}`"))
        ours_failed = None
    except (SpecError, DeltaError, AnalysisException, SparkRuntimeException) as error:
        ours_failed = error
    assert (ours_failed is None) == (delta_failed is None), (case, str(ours_failed), str(delta_failed))
    if ours_failed is not None:
        assert load_snapshot(TableLocation.of(ours)).version == 0, case  # type: ignore[union-attr]
        return
    assert _read(delta_spark, ours) == _read(delta_spark, theirs), case
