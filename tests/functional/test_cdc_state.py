"""CDC apply's hidden state, driven through the engine on the session's Spark (no dbt).

Many small runs, with compaction forced early, against the pure reference; and the
write-ahead record of a run whose process died before the table committed is dropped
(its files deleted) by the next run.
"""

from __future__ import annotations

import json
import os
import random

from deltalake import DeltaTable

from dbt.adapters.deltamerge.cdc import state as st
from dbt.adapters.deltamerge.cdc.apply import apply_changes
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.data import WriteRequest
from tests.cdc_reference import Scd1

SPEC = CdcSpec.from_config(
    "state_test",
    {
        "unique_key": "id",
        "sequence_by": "ts",
        "apply_as_deletes": "op = 'D'",
        "apply_as_truncates": "op = 'T'",
        "except_column_list": ["op", "ts"],
        "tombstone_retention_hours": 0,
    },
)
SCHEMA = "id INT, op STRING, ts INT, v STRING"


def apply(spark, path: str, events: list[tuple], run: int) -> None:
    apply_changes(
        spark,
        spark.createDataFrame(events, SCHEMA),
        SPEC,
        table=load_snapshot(TableLocation.of(path)),
        create=WriteRequest(location=TableLocation.of(path), mode="create_or_replace"),
        txn=(f"state-test-{run}", 0),
    )


def table(path: str) -> list[dict]:
    return sorted(DeltaTable(path).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def test_many_runs_with_compaction_match_the_reference(spark, tmp_path, monkeypatch):
    monkeypatch.setattr(st, "COMPACT_AT", 3)
    path = str(tmp_path / "events")
    shuffled = random.Random(7)
    reference = Scd1(("v",))
    for run in range(9):
        batch = [
            (
                shuffled.randint(1, 6),
                shuffled.choice("UUUD" if run % 4 else "UUDT"),
                shuffled.randint(0, 60),
                f"r{run}",
            )
            for _ in range(5)
        ]
        distinct = {(i, t) if op != "T" else ("T", t): (i, op, t, v) for i, op, t, v in batch}
        batch = [(i, op, t, v if op == "U" else None) for i, op, t, v in distinct.values()]
        apply(spark, path, batch, run)
        reference.run([{"id": i, "op": op, "seq": t, "v": v} for i, op, t, v in batch])
        assert table(path) == reference.rows(), run
    state = DeltaTable(os.path.join(path, st.STATE_FOLDER))
    operations = [h["operationParameters"].get("mode") for h in state.history()]
    assert '"Overwrite"' in operations or "Overwrite" in operations
    # Compacted: fewer live state files than runs that appended one.
    assert len(state.file_uris()) < 9


def test_a_dead_runs_record_is_dropped_with_its_files(spark, tmp_path):
    path = str(tmp_path / "dead")
    apply(spark, path, [(1, "U", 1, "a")], 0)
    folder = os.path.join(path, st.STATE_FOLDER, "_pending")
    os.makedirs(folder, exist_ok=True)
    orphan = os.path.join(path, st.STATE_FOLDER, "part-orphan.parquet")
    with open(orphan, "wb") as handle:
        handle.write(b"not committed")
    pending = {
        "table_path": os.path.join(path, st.STATE_FOLDER),
        "read_version": 1,
        "operation": "WRITE",
        "actions": [{"add": {"path": "part-orphan.parquet", "size": 13, "partitionValues": {}}}],
        "parameters": {},
        "metrics": {},
    }
    record = {
        "app_id": "dead-run",
        "txn_version": 0,
        "created": 0,
        "host": __import__("socket").gethostname(),
        "pid": 2**22 + 12345,  # no such process
        "pending": pending,
    }
    with open(os.path.join(folder, "dead-run-0.json"), "w") as handle:
        json.dump(record, handle)
    apply(spark, path, [(1, "U", 2, "b")], 1)
    assert table(path) == [{"id": 1, "v": "b"}]
    assert os.listdir(folder) == [] and not os.path.exists(orphan)


def test_source_columns_named_like_the_folds_counts(spark, tmp_path):
    """Columns such as ``n`` or ``late`` are the user's: the fold's own columns never clash with them."""
    schema = "id INT, ts INT, n STRING, late BOOLEAN, sequences INT, keys STRING"
    for ignore_nulls in (False, True):
        path = str(tmp_path / f"named_{ignore_nulls}")
        spec = CdcSpec.from_config(
            "named", {"unique_key": "id", "sequence_by": "ts", "ignore_null_updates": ignore_nulls}
        )
        for run, batch in enumerate(
            [
                [(1, 5, "a", True, 1, "k"), (2, 5, "b", False, 2, "k")],
                # in order for key 1; key 2's event is older than the stored one (late)
                [(1, 6, "c", False, 3, None), (1, 7, "d", None, 4, "x"), (2, 4, "z", True, 9, "z")],
            ]
        ):
            apply_changes(
                spark,
                spark.createDataFrame(batch, schema),
                spec,
                table=load_snapshot(TableLocation.of(path)),
                create=WriteRequest(location=TableLocation.of(path), mode="create_or_replace"),
                txn=(f"named-{ignore_nulls}-{run}", 0),
            )
        late_kept = False if ignore_nulls else None  # ignoring nulls: ts 6 is the latest non-null
        assert table(path) == [
            {"id": 1, "ts": 7, "n": "d", "late": late_kept, "sequences": 4, "keys": "x"},
            {"id": 2, "ts": 5, "n": "b", "late": False, "sequences": 2, "keys": "k"},
        ], ignore_nulls
        assert DeltaTable(path).history(1)[0]["operationMetrics"]["numEventsIgnoredAsLate"] == "1"
