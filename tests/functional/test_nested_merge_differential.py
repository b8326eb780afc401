"""Differential test on nested data: our merge against a reference model of Delta's rules, seeded.

Targets and sources hold a struct, an array of structs and a flat column; the source's struct
fields come in another order than the target's (``struct<b, a>`` into ``struct<a, b>``), so every
``*`` and whole-struct assignment must match fields by name, as Delta does. Clauses assign nested
fields (``SET s.b = ...``: the struct rebuilt around its other fields, a null struct's siblings
null), name columns both sides have unqualified in one-sided clauses (Delta resolves NOT MATCHED
against the source, NOT MATCHED BY SOURCE against the target), and test nested fields in their
conditions. A fifth of the cases add a condition or assignment Delta refuses at analysis
(nondeterministic, aggregate, window, subquery, a target column in an INSERT): the merge must fail
with Delta's error class and leave the table at its version. Half the cases merge into a table with
deletion vectors, half go through the SQL door (the statement parsed into the same clause set).

The reference (``expected``) applies Delta's semantics to Python rows: a target row's first matched
clause whose condition is true wins; a null condition is false. delta-rs and DuckDB cannot be the
oracle here: neither resolves merge structs by name as Delta does.
``DELTAMERGE_NESTED_CASES`` sets the number of cases (default 6; thousands for a long run).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from typing import Any

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from dbt.adapters.deltamerge.statements.parse.statement import parse_write_statement
from dbt.adapters.deltamerge.statements.parse.text import SqlText
from tests.functional.helpers import live_rows

CASES = int(os.environ.get("DELTAMERGE_NESTED_CASES", "6"))
TARGET = "k bigint, s struct<a:bigint, b:string>, items array<struct<a:bigint, b:string>>, v bigint"
SOURCE = "k bigint, s struct<b:string, a:bigint>, items array<struct<b:string, a:bigint>>, v bigint"

Row = dict[str, Any]
# (SQL of the clause, its config entry, the reference: (target row or None, source row or None) -> ...)
Clause = tuple[str, dict, Callable[..., Any]]


def _upper(text: str | None) -> str | None:
    return None if text is None else text.upper()


def _field(struct: Row | None, name: str) -> Any:
    return None if struct is None else struct[name]


def _gt(a: Any, b: Any) -> bool:
    return a is not None and b is not None and a > b


MATCHED: list[Clause] = [
    ("WHEN MATCHED THEN UPDATE SET *", {"action": "update", "set": "*"}, lambda t, s: dict(s)),
    (
        "WHEN MATCHED AND s.s.a > t.s.a THEN UPDATE SET s = s.s, v = t.v + 1",
        {"action": "update", "condition": "s.s.a > t.s.a", "set": {"s": "s.s", "v": "t.v + 1"}},
        lambda t, s: (
            {**t, "s": s["s"], "v": t["v"] + 1} if _gt(_field(s["s"], "a"), _field(t["s"], "a")) else None
        ),
    ),
    (
        "WHEN MATCHED THEN UPDATE SET s.b = upper(s.s.b), t.v = s.v",
        {"action": "update", "set": {"s.b": "upper(s.s.b)", "t.v": "s.v"}},
        lambda t, s: {**t, "s": {"a": _field(t["s"], "a"), "b": _upper(_field(s["s"], "b"))}, "v": s["v"]},
    ),
    (
        "WHEN MATCHED AND t.s.b = 'x' THEN DELETE",
        {"action": "delete", "condition": "t.s.b = 'x'"},
        lambda t, s: "delete" if _field(t["s"], "b") == "x" else None,
    ),
    (
        "WHEN MATCHED THEN UPDATE SET items = s.items",
        {"action": "update", "set": {"items": "s.items"}},
        lambda t, s: {**t, "items": s["items"]},
    ),
]
NOT_MATCHED: list[Clause] = [
    ("WHEN NOT MATCHED THEN INSERT *", {"action": "insert", "values": "*"}, lambda t, s: dict(s)),
    (
        # Unqualified names of an INSERT are the source's, though the target has them too.
        "WHEN NOT MATCHED AND v > 20 THEN INSERT (k, s, v) VALUES (k, s, v * 2)",
        {"action": "insert", "condition": "v > 20", "values": {"k": "k", "s": "s", "v": "v * 2"}},
        lambda t, s: {"k": s["k"], "s": s["s"], "items": None, "v": s["v"] * 2} if _gt(s["v"], 20) else None,
    ),
]
BY_SOURCE: list[Clause] = [
    (
        # Unqualified names of a BY SOURCE clause are the target's.
        "WHEN NOT MATCHED BY SOURCE AND v > 50 THEN UPDATE SET s.a = -1, v = v + 100",
        {"action": "update", "condition": "v > 50", "set": {"s.a": "-1", "v": "v + 100"}},
        lambda t, s: (
            {**t, "s": {"a": -1, "b": _field(t["s"], "b")}, "v": t["v"] + 100} if _gt(t["v"], 50) else None
        ),
    ),
    (
        "WHEN NOT MATCHED BY SOURCE AND t.s IS NULL THEN DELETE",
        {"action": "delete", "condition": "t.s IS NULL"},
        lambda t, s: "delete" if t["s"] is None else None,
    ),
]
# (kind, SQL, config entry, Delta's error class) of clauses Delta refuses at analysis.
REFUSED = [
    (
        "matched",
        "WHEN MATCHED AND rand() > 0.5 THEN DELETE",
        {"action": "delete", "condition": "rand() > 0.5"},
        "DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED",
    ),
    (
        "matched",
        "WHEN MATCHED AND max(t.v) > 0 THEN DELETE",
        {"action": "delete", "condition": "max(t.v) > 0"},
        "DELTA_AGGREGATION_NOT_SUPPORTED",
    ),
    (
        "matched",
        "WHEN MATCHED AND s.v IN (SELECT 1) THEN DELETE",
        {"action": "delete", "condition": "s.v IN (SELECT 1)"},
        "DELTA_UNSUPPORTED_SUBQUERY",
    ),
    (
        "matched",
        "WHEN MATCHED THEN UPDATE SET v = sum(s.v) OVER ()",
        {"action": "update", "set": {"v": "sum(s.v) OVER ()"}},
        "UNSUPPORTED_EXPR_FOR_OPERATOR",
    ),
    (
        "not_matched",
        "WHEN NOT MATCHED THEN INSERT (k, v) VALUES (s.k, t.v)",
        {"action": "insert", "values": {"k": "s.k", "v": "t.v"}},
        "DELTA_MERGE_UNRESOLVED_EXPRESSION",
    ),
]


def _struct(rng: random.Random) -> Row | None:
    if rng.random() < 0.15:
        return None
    return {"a": rng.choice([None, *range(0, 10)]), "b": rng.choice([None, "x", "y", "z"])}


def _rows(rng: random.Random, keys: list[int]) -> list[Row]:
    return [
        {
            "k": k,
            "s": _struct(rng),
            "items": None if rng.random() < 0.2 else [_struct(rng) for _ in range(rng.randint(0, 2))],
            "v": rng.randint(0, 100),
        }
        for k in keys
    ]


def random_case(rng: random.Random) -> tuple[list[Row], list[Row], list[Clause], str | None, dict | None]:
    target = _rows(rng, rng.sample(range(40), rng.randint(0, 25)))
    source = _rows(rng, rng.sample(range(40), rng.randint(1, 20)))
    clauses = [*rng.sample(MATCHED, rng.randint(0, 2))]
    # Delta: only the last clause of a kind may omit its condition.
    clauses.sort(key=lambda c: "AND" not in c[0].split("THEN")[0])
    clauses = [c for i, c in enumerate(clauses) if i == len(clauses) - 1 or "AND" in c[0].split("THEN")[0]]
    clauses += rng.sample(NOT_MATCHED, rng.randint(0, 1)) + rng.sample(BY_SOURCE, rng.randint(0, 2))
    if not clauses:
        clauses = [NOT_MATCHED[0]]
    refused = rng.choice(REFUSED) if rng.random() < 0.2 else None
    return target, source, clauses, refused[3] if refused else None, refused


def expected(
    target: list[Row], source: list[Row], clauses: list[Clause]
) -> tuple[list[Row], tuple[int, int, int]]:
    """Delta's result: rows, and (inserted, updated, deleted)."""
    by_key = {r["k"]: r for r in source}
    kinds = {"matched": [], "not_matched": [], "by_source": []}
    for sql, _, apply in clauses:
        kind = "by_source" if "BY SOURCE" in sql else "not_matched" if "NOT MATCHED" in sql else "matched"
        kinds[kind].append(apply)
    out, inserted, updated, deleted = [], 0, 0, 0
    for row in target:
        match = by_key.get(row["k"])
        applies = kinds["matched"] if match is not None else kinds["by_source"]
        result = None
        for apply in applies:
            result = apply(row, match)
            if result is not None:
                break
        if result == "delete":
            deleted += 1
        elif result is not None:
            updated += 1
            out.append(result)
        else:
            out.append(row)
    keys = {r["k"] for r in target}
    for row in source:
        if row["k"] in keys:
            continue
        for apply in kinds["not_matched"]:
            result = apply(None, row)
            if result is not None:
                inserted += 1
                out.append(result)
                break
    return sorted(out, key=lambda r: r["k"]), (inserted, updated, deleted)


def _spec(seed: int, clauses: list[Clause], refused: tuple | None) -> MergeSpec:
    """The clause set through the SQL door (even seeds) or a model's config (odd seeds)."""
    entries = {"matched": [], "not_matched": [], "by_source": []}
    for sql, entry, _ in clauses:
        kind = "by_source" if "BY SOURCE" in sql else "not_matched" if "NOT MATCHED" in sql else "matched"
        entries[kind].append((sql, entry))
    if refused is not None:
        entries[refused[0]] = [(refused[1], refused[2])]  # alone of its kind: only it can be refused
    if seed % 2 == 0:
        whens = " ".join(sql for kind in ("matched", "not_matched", "by_source") for sql, _ in entries[kind])
        statement = parse_write_statement(SqlText(f"MERGE INTO tbl t USING src s ON t.k = s.k {whens}"))
        return MergeSpec.from_config(f"nested{seed}", statement.config)  # type: ignore[union-attr]
    config = {
        "merge_condition": "t.k = s.k",
        "source_alias": "s",
        "target_alias": "t",
        "when_matched": [e for _, e in entries["matched"]],
        "when_not_matched": [e for _, e in entries["not_matched"]],
        "when_not_matched_by_source": [e for _, e in entries["by_source"]],
    }
    return MergeSpec.from_config(f"nested{seed}", config)


@pytest.mark.connect
@pytest.mark.parametrize("seed", range(CASES))
def test_nested_merges_as_delta_resolves_them(spark, tmp_path, seed):
    rng = random.Random(500_000 + seed)
    target, source, clauses, refused_class, refused = random_case(rng)
    path = str(tmp_path / "nested")
    properties = {"delta.enableDeletionVectors": "true"} if seed % 4 >= 2 else {}
    frame = spark.createDataFrame(target, TARGET).repartition(2)
    write_dataframe(
        spark, frame, WriteRequest(TableLocation.of(path), "create_or_replace", properties=properties)
    )
    snapshot = load_snapshot(TableLocation.of(path))
    assert snapshot is not None
    source_df = spark.createDataFrame(
        [{**r, "s": None if r["s"] is None else {"b": r["s"]["b"], "a": r["s"]["a"]}} for r in source], SOURCE
    )
    case = {"clauses": [c[0] for c in clauses], "refused": refused_class}
    if refused is not None:
        with pytest.raises(SpecError) as raised:
            merge_into(spark, source_df, snapshot, _spec(seed, clauses, refused))
        assert f"[{refused_class}]" in str(raised.value), case
        assert load_snapshot(TableLocation.of(path)).version == snapshot.version, case  # type: ignore[union-attr]
        return
    result = merge_into(spark, source_df, snapshot, _spec(seed, clauses, None))
    rows, (inserted, updated, deleted) = expected(target, source, clauses)
    assert sorted(live_rows(path), key=lambda r: r["k"]) == rows, case
    m = result.metrics
    assert (m["numTargetRowsInserted"], m["numTargetRowsUpdated"], m["numTargetRowsDeleted"]) == (
        inserted,
        updated,
        deleted,
    ), case
    assert m["numOutputRows"] == inserted + updated + m["numTargetRowsCopied"], case
