"""CDC apply (``sequence_by``, SCD type 1) and ``update_only_if_changed`` through real dbt runs.

Tables are read back with deltalake; the property test compares every run with the pure
reference in ``tests/cdc_reference.py``.
"""

from __future__ import annotations

import itertools
import os
import random

import pyarrow as pa
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from deltalake import DeltaTable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import files
from tests.cdc_reference import Scd1, Scd2, final_scd1
from tests.functional.helpers import rows, table_path

CDC = {
    "materialized": "incremental",
    "incremental_strategy": "delta_merge",
    "unique_key": "id",
    "sequence_by": "ts",
    "apply_as_deletes": "op = 'D'",
    "apply_as_truncates": "op = 'T'",
    "except_column_list": ["op", "ts"],
}


def events_sql(events: list[tuple]) -> str:
    """``(id, op, ts, v)`` tuples as a query (typed, nulls allowed)."""
    if not events:
        return "select cast(1 as int) id, 'U' op, cast(0 as int) ts, cast('x' as string) v where false"
    values = ", ".join(
        "({}, '{}', {}, {})".format("null" if i is None else i, op, ts, "null" if v is None else f"'{v}'")
        for i, op, ts, v in events
    )
    return (
        "select cast(id as int) id, op, cast(ts as int) ts, cast(v as string) v "
        f"from values {values} as t(id, op, ts, v)"
    )


def cdc_model(events: list[tuple], **config: object) -> str:
    merged = {**CDC, **config}
    return "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in merged.items()) + ") }}\n" + events_sql(events)


def put(project, name: str, text: str) -> None:
    write_file(text, project.project_root, "models", f"{name}.sql")


def table(path: str) -> list[tuple]:
    return [(r["id"], r["v"]) for r in rows(path, order_by="id")]


def newest(path: str) -> dict:
    return DeltaTable(path).history()[0]


@pytest.mark.stores
class TestScd1:
    @pytest.fixture(scope="class")
    def models(self):
        first = [
            (1, "U", 1, "a"),
            (1, "U", 3, "a3"),
            (1, "U", 3, "a3"),  # an identical event: folded
            (2, "U", 1, "b"),
            (2, "D", 2, None),  # deleted in the first run: never appears
            (3, "U", 5, "c"),
        ]
        return {"customers.sql": cdc_model(first)}

    def test_runs(self, project):
        path = table_path(project, "customers")
        run_dbt(["run", "--select", "customers"])
        assert table(path) == [(1, "a3"), (3, "c")]
        assert [f.name for f in DeltaTable(path).schema().fields] == ["id", "v"]  # no state columns
        assert DeltaTable(path).history()[0]["operationMetrics"]["numEventsReceived"] == "6"

        # A late update (ts 2 < 3), an older event for deleted key 2, a newer update, a new key.
        put(
            project,
            "customers",
            cdc_model([(1, "U", 2, "late"), (2, "U", 1, "old"), (3, "U", 6, "c6"), (4, "U", 1, "d")]),
        )
        results, _ = run_dbt_and_capture(["run", "--select", "customers"])
        assert table(path) == [(1, "a3"), (3, "c6"), (4, "d")]
        response = results.results[0].adapter_response
        metrics = response["operation_metrics"]
        assert (
            metrics["numEventsReceived"],
            metrics["numEventsIgnoredAsLate"],
            metrics["numEventsApplied"],
        ) == (4, 2, 2)
        assert (metrics["numTargetRowsUpdated"], metrics["numTargetRowsInserted"]) == (1, 1)
        commit = newest(path)
        assert commit["operation"] == "MERGE"
        assert commit["operationMetrics"]["numEventsIgnoredAsLate"] == "2"
        version = DeltaTable(path).version()

        # The same batch again: every event is late, nothing is committed.
        run_dbt(["run", "--select", "customers"])
        assert DeltaTable(path).version() == version

        # A delete, then a truncate at 10 that removes every key whose last event is older.
        put(
            project,
            "customers",
            cdc_model([(4, "D", 7, None), (9, "T", 10, None), (5, "U", 11, "e"), (3, "U", 9, "too old")]),
        )
        run_dbt(["run", "--select", "customers"])
        assert table(path) == [(5, "e")]
        put(project, "customers", cdc_model([(1, "U", 9, "before the truncate"), (1, "U", 12, "after")]))
        run_dbt(["run", "--select", "customers"])
        assert table(path) == [(1, "after"), (5, "e")]

        # --full-refresh applies the same semantics to the whole source.
        put(project, "customers", cdc_model([(7, "U", 1, "x"), (7, "D", 2, None), (8, "U", 3, "y")]))
        run_dbt(["run", "--select", "customers", "--full-refresh"])
        assert table(path) == [(8, "y")]
        put(project, "customers", cdc_model([(7, "U", 1, "x")]))  # older than key 7's delete: stays deleted
        run_dbt(["run", "--select", "customers"])
        assert table(path) == [(8, "y")]
        assert files.list_names(files.join(path, "_deltamerge_cdc/_delta_log"))
        pending = files.join(path, "_deltamerge_cdc/_pending")
        assert files.is_uri(pending) or os.path.isdir(pending)  # (an object store has no folders)
        assert not files.list_names(pending)


class TestIgnoreNullUpdates:
    @pytest.fixture(scope="class")
    def models(self):
        return {"people.sql": cdc_model([(1, "U", 1, "a")], ignore_null_updates=True)}

    def test_null_keeps_the_stored_value(self, project):
        path = table_path(project, "people")
        run_dbt(["run", "--select", "people"])
        put(project, "people", cdc_model([(1, "U", 2, None), (2, "U", 1, "b")], ignore_null_updates=True))
        run_dbt(["run", "--select", "people"])
        assert table(path) == [(1, "a"), (2, "b")]
        # After a delete in the run, the stored value no longer counts.
        put(project, "people", cdc_model([(1, "D", 3, None), (1, "U", 4, None)], ignore_null_updates=True))
        run_dbt(["run", "--select", "people"])
        assert table(path) == [(1, None), (2, "b")]


class TestRunTimeErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": cdc_model([(1, "U", 1, "a")])}

    def test_nothing_is_written(self, project):
        path = table_path(project, "events")
        run_dbt(["run", "--select", "events"])
        version = DeltaTable(path).version()
        put(project, "events", cdc_model([(1, "U", 2, "x"), (1, "U", 2, "y"), (2, "U", 1, "b")]))
        _, out = run_dbt_and_capture(["run", "--select", "events"], expect_pass=False)
        assert "two different events of one key have the same sequence_by (ts) for keys id=1" in out
        put(
            project,
            "events",
            "{{ config(" + ", ".join(f"{k}={v!r}" for k, v in CDC.items()) + ") }}\n"
            "select 3 as id, 'U' as op, cast(null as int) as ts, 'c' as v",
        )
        _, out = run_dbt_and_capture(["run", "--select", "events"], expect_pass=False)
        assert "1 event(s) have a null sequence_by (ts), e.g. keys id=3" in out
        assert DeltaTable(path).version() == version
        assert table(path) == [(1, "a")]


class TestConfigErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "with_clauses.sql": cdc_model([], when_matched=[{"action": "delete"}]),
            "scd2_truncates.sql": cdc_model([], stored_as_scd_type=2),
            "bad_type.sql": cdc_model([], stored_as_scd_type=3, apply_as_truncates=None),
            "both_lists.sql": cdc_model([], column_list=["v"]),
            "unknown_sequence.sql": cdc_model([], sequence_by="when"),
        }

    def test_errors_name_model_and_keys(self, project):
        expected = {
            "with_clauses": "`sequence_by` (CDC apply) and `when_matched` cannot be combined",
            "scd2_truncates": "apply_as_truncates is supported only with stored_as_scd_type 1",
            "bad_type": "stored_as_scd_type must be one of [1, 2], got 3",
            "both_lists": "give column_list or except_column_list, not both",
            "unknown_sequence": "`when` (sequence_by) is not a column of the model's result",
        }
        for name, message in expected.items():
            _, out = run_dbt_and_capture(["run", "--select", name], expect_pass=False)
            assert f"Model '{name}'" in out and message in out, (name, out[-2000:])
            assert not os.path.exists(table_path(project, name))


class TestUpdateOnlyIfChanged:
    @pytest.fixture(scope="class")
    def models(self):
        return {"dims.sql": self.model([(1, "a"), (2, "b")])}

    @staticmethod
    def model(values: list[tuple]) -> str:
        select = " union all ".join(f"select {i} as id, '{v}' as v" for i, v in values)
        return (
            "{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
            "update_only_if_changed=true, change_data_feed=true, partition_by=['id']) }}\n" + select
        )

    def test_unchanged_rows_are_not_updated(self, project):
        path = table_path(project, "dims")
        run_dbt(["run", "--select", "dims"])
        version = DeltaTable(path).version()
        results = run_dbt(["run", "--select", "dims"])  # the same rows: no version
        assert DeltaTable(path).version() == version
        assert results.results[0].adapter_response["operation_metrics"]["numTargetRowsUpdated"] == 0
        put(project, "dims", self.model([(1, "a"), (2, "B")]))
        results = run_dbt(["run", "--select", "dims"])
        metrics = results.results[0].adapter_response["operation_metrics"]
        # Key 1's file holds only an unchanged row: not rewritten.
        assert (metrics["numTargetRowsUpdated"], metrics["numTargetFilesRemoved"]) == (1, 1)
        changes = pa.table(DeltaTable(path).load_cdf(starting_version=version + 1).read_all()).to_pylist()
        assert sorted((c["id"], c["_change_type"]) for c in changes) == [
            (2, "update_postimage"),
            (2, "update_preimage"),
        ]


EVENTS = st.lists(
    st.tuples(
        st.integers(1, 4),
        st.sampled_from("UUUDT"),
        st.integers(0, 30),
        st.one_of(st.none(), st.sampled_from(["p", "q", "r"])),
    ),
    max_size=14,
)
EXAMPLES = int(os.environ.get("DELTAMERGE_CDC_EXAMPLES", "3"))


def distinct_sequences(events: list[tuple]) -> list[tuple]:
    """At most one event per (key, sequence) and per truncate sequence; exact copies allowed."""
    seen: dict[tuple, tuple] = {}
    for event in events:
        slot = ("T", event[2]) if event[1] == "T" else (event[0], event[2])
        seen.setdefault(slot, event)
    kept = [e for e in events if seen[("T", e[2]) if e[1] == "T" else (e[0], e[2])] == e]
    return [(i, op, ts, None if op != "U" else v) for i, op, ts, v in kept]


def split_runs(events: list[tuple], cuts: list[int]) -> list[list[tuple]]:
    """``events`` cut into consecutive runs at ``cuts`` (at least one run)."""
    bounds = sorted({0, len(events), *[min(c, len(events)) for c in cuts]})
    return [events[a:b] for a, b in itertools.pairwise(bounds)] or [[]]


class TestScd1Property:
    @pytest.fixture(scope="class")
    def models(self):
        return {"stream.sql": cdc_model([])}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(events=EVENTS, cuts=st.lists(st.integers(0, 14), max_size=2), seed=st.integers(0, 10**6))
    def test_every_run_equals_the_reference(self, project, events, cuts, seed):
        events = distinct_sequences(events)
        shuffled = random.Random(seed)
        runs = split_runs(events, cuts)
        reference = Scd1(("v",))
        path = table_path(project, "stream")
        for number, batch in enumerate(runs):
            batch = list(batch)
            shuffled.shuffle(batch)
            put(project, "stream", cdc_model(batch))
            run_dbt(["run", "--select", "stream", *(["--full-refresh"] if number == 0 else [])])
            reference.run([{"id": i, "op": op, "seq": ts, "v": v} for i, op, ts, v in batch])
            assert rows(path, order_by="id") == reference.rows(), (runs, number)
        whole = final_scd1([{"id": i, "op": op, "seq": ts, "v": v} for i, op, ts, v in events], ("v",))
        assert rows(path, order_by="id") == whole, runs


SCD2 = {"stored_as_scd_type": 2, "apply_as_truncates": None}


def nulls_last(row: tuple) -> tuple:
    return tuple((v is None, "" if v is None else v) for v in row)


def versions(path: str) -> list[tuple]:
    return sorted(
        (
            (r["id"], r["v"], r["__START_AT"], r["__END_AT"])
            for r in DeltaTable(path).to_pyarrow_table().to_pylist()
        ),
        key=nulls_last,
    )


@pytest.mark.stores
class TestScd2:
    @pytest.fixture(scope="class")
    def models(self):
        return {"history.sql": cdc_model([(1, "U", 1, "a"), (1, "U", 3, "b"), (2, "U", 2, "x")], **SCD2)}

    def test_history(self, project):
        path = table_path(project, "history")
        run_dbt(["run", "--select", "history"])
        assert versions(path) == [(1, "a", 1, 3), (1, "b", 3, None), (2, "x", 2, None)]
        assert [f.name for f in DeltaTable(path).schema().fields] == ["id", "v", "__START_AT", "__END_AT"]
        # A late event lands where its sequence puts it; a delete closes the current version.
        put(project, "history", cdc_model([(1, "U", 2, "late"), (2, "D", 5, None)], **SCD2))
        results = run_dbt(["run", "--select", "history"])
        assert versions(path) == [(1, "a", 1, 2), (1, "b", 3, None), (1, "late", 2, 3), (2, "x", 2, 5)]
        metrics = results.results[0].adapter_response["operation_metrics"]
        assert (metrics["numTargetRowsInserted"], metrics["numTargetRowsUpdated"]) == (1, 2)
        version = DeltaTable(path).version()
        run_dbt(["run", "--select", "history"])  # the same batch again: already applied
        assert DeltaTable(path).version() == version


class TestScd2RunTimeErrors:
    @pytest.fixture(scope="class")
    def models(self):
        # Two different events of key 1 at one sequence in the first run; identical ones collapse.
        return {"tiers.sql": cdc_model([(1, "U", 1, "x"), (1, "U", 1, "y"), (2, "U", 1, "b")], **SCD2)}

    def test_nothing_is_written(self, project):
        path = table_path(project, "tiers")
        _, out = run_dbt_and_capture(["run", "--select", "tiers"], expect_pass=False)
        assert "two different events of one key have the same sequence_by (ts) for keys id=1" in out
        assert not os.path.exists(os.path.join(path, "_delta_log"))
        put(project, "tiers", cdc_model([(1, "U", 1, "a"), (1, "U", 1, "a"), (2, "U", 1, "b")], **SCD2))
        run_dbt(["run", "--select", "tiers"])
        assert versions(path) == [(1, "a", 1, None), (2, "b", 1, None)]
        version = DeltaTable(path).version()
        # Against a stored history too, where the clash is at a sequence the history already has.
        for clash in ([(2, "U", 3, "c"), (2, "U", 3, "d")], [(1, "U", 1, "a"), (1, "U", 1, "z")]):
            put(project, "tiers", cdc_model([*clash, (3, "U", 1, "n")], **SCD2))
            _, out = run_dbt_and_capture(["run", "--select", "tiers"], expect_pass=False)
            key = clash[0][0]
            assert f"two different events of one key have the same sequence_by (ts) for keys id={key}" in out
        assert DeltaTable(path).version() == version
        assert versions(path) == [(1, "a", 1, None), (2, "b", 1, None)]


class TestScd2TrackedColumns:
    @pytest.fixture(scope="class")
    def models(self):
        return {"tiers.sql": self.model([(1, "gold", "a@x", 1)])}

    @staticmethod
    def model(events: list[tuple]) -> str:
        select = " union all ".join(
            f"select {i} as id, '{tier}' as tier, '{mail}' as email, {ts} as ts"
            for i, tier, mail, ts in events
        )
        config = (
            "materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
            "sequence_by='ts', stored_as_scd_type=2, track_history_column_list=['tier'], "
            "except_column_list=['ts']"
        )
        return "{{ config(" + config + ") }}\n" + select

    def test_untracked_change_updates_in_place(self, project):
        path = table_path(project, "tiers")
        run_dbt(["run", "--select", "tiers"])
        put(project, "tiers", self.model([(1, "gold", "b@x", 2), (1, "silver", "b@x", 3)]))
        run_dbt(["run", "--select", "tiers"])
        rows_ = sorted(
            (r["tier"], r["email"], r["__START_AT"], r["__END_AT"])
            for r in DeltaTable(path).to_pyarrow_table().to_pylist()
        )
        assert rows_ == [("gold", "b@x", 1, 3), ("silver", "b@x", 3, None)]


class TestScd2Property:
    @pytest.fixture(scope="class")
    def models(self):
        return {"stream2.sql": cdc_model([], **SCD2)}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(events=EVENTS, cuts=st.lists(st.integers(0, 14), max_size=2), seed=st.integers(0, 10**6))
    def test_every_run_equals_the_reference(self, project, events, cuts, seed):
        events = [e for e in distinct_sequences(events) if e[1] != "T"]
        shuffled = random.Random(seed)
        runs = split_runs(events, cuts)
        reference = Scd2(("v",), ("v",))
        path = table_path(project, "stream2")
        for number, batch in enumerate(runs):
            batch = list(batch)
            shuffled.shuffle(batch)
            put(project, "stream2", cdc_model(batch, **SCD2))
            run_dbt(["run", "--select", "stream2", *(["--full-refresh"] if number == 0 else [])])
            reference.run([{"id": i, "op": op, "seq": ts, "v": v} for i, op, ts, v in batch])
            expected = [(r["id"], r["v"], r["__START_AT"], r["__END_AT"]) for r in reference.rows()]
            assert versions(path) == sorted(expected, key=nulls_last), (runs, number)
