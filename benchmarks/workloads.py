"""The benchmark's merges: one definition per workload, for every contestant.

A workload is a source (a pure function of the table size), the merge as a dbt model
would configure it (the engine's ``MergeSpec`` config), the same merge in delta-rs's
builder, and the SQL a user without a merge engine would run to rewrite the table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the delta-rs worker imports this module without loading PySpark
    from pyspark.sql import DataFrame, SparkSession

TARGET, SOURCE = "t", "s"
ON = f"{TARGET}.id = {SOURCE}.id"

# The rows of the rewritten table as one struct per joined row, so every workload's SQL
# is "choose the row, or drop it" over one full outer join.
_REWRITE = (
    "SELECT r.* FROM (SELECT CASE {choose} END AS r FROM {target} t FULL OUTER JOIN {source} s "
    "ON t.id = s.id) WHERE r IS NOT NULL"
)
_MATCHED = "t.id IS NOT NULL AND s.id IS NOT NULL"


@dataclass(frozen=True)
class Workload:
    """One merge, described for every contestant."""

    name: str
    title: str
    # Which targets apply: insert | clustered | random | window_delete | whole_delete | three_clause
    kind: str
    source: Callable[[SparkSession, int], DataFrame]
    config: dict[str, Any]
    deltars: Callable[[Any], Any]
    choose: str
    change_data_feed: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def rewrite_sql(self, target: str, source: str) -> str:
        """The whole table's new rows, computed from the target and source views."""
        return _REWRITE.format(choose=self.choose, target=target, source=source)

    @property
    def key_only(self) -> bool:
        """The source carries only the key column."""
        return bool(self.extra.get("key_only"))


def _config(**clauses: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"unique_key": "id", "source_alias": SOURCE, "target_alias": TARGET}
    base.update(clauses)
    base.setdefault("when_matched", [])
    base.setdefault("when_not_matched", [])
    base.setdefault("when_not_matched_by_source", [])
    return base


def _insert_source(keys: Callable[..., DataFrame]) -> Callable[[SparkSession, int], DataFrame]:
    def build(spark: SparkSession, rows: int) -> DataFrame:
        from benchmarks import data

        return data.rows_for_keys(keys(data, spark, rows))

    return build


def _upsert_source(*, clustered: bool) -> Callable[[SparkSession, int], DataFrame]:
    def build(spark: SparkSession, rows: int) -> DataFrame:
        from benchmarks import data

        updates = max(1, rows // 100)
        inserts = max(1, rows // 200)
        start = int(rows * 0.37)
        if clustered:
            changed = data.existing_keys(spark, rows=rows, start=start, count=updates)
            new = data.new_keys_interleaved(spark, rows=rows, count=inserts, start=start, span=updates)
        else:
            changed = data.random_existing_keys(spark, rows=rows, count=updates, salt=21)
            new = data.new_keys_interleaved(spark, rows=rows, count=inserts)
        return data.rows_for_keys(changed, version=1).unionByName(data.rows_for_keys(new, version=1))

    return build


def _window(rows: int) -> tuple[int, int]:
    """The 5% key window of the windowed delete: rows 60% .. 65% (as keys)."""
    lo = int(rows * 0.60)
    return 2 * lo, 2 * (lo + max(1, rows // 20)) - 2


def _window_source(spark: SparkSession, rows: int) -> DataFrame:
    lo, hi = _window(rows)
    # The window's current rows, except every 20th: those are the rows to delete.
    from benchmarks import data

    keys = spark.range(lo // 2, hi // 2 + 1).where("id % 20 != 7").selectExpr("id * 2 AS id")
    return data.rows_for_keys(keys)


def _whole_source(spark: SparkSession, rows: int) -> DataFrame:
    return spark.range(0, rows).where("id % 100 != 42").selectExpr("id * 2 AS id")


_UPSERT = _config(when_matched=[{"action": "update", "set": "*"}], when_not_matched=[{"action": "insert"}])
_UPSERT_CHOOSE = "WHEN s.id IS NOT NULL THEN struct(s.*) ELSE struct(t.*)"
_INSERT_CHOOSE = "WHEN t.id IS NOT NULL THEN struct(t.*) ELSE struct(s.*)"


def _upsert_rs(merger: Any) -> Any:
    return merger.when_matched_update_all().when_not_matched_insert_all()


def _window_condition(rows: int) -> str:
    lo, hi = _window(rows)
    return f"t.id BETWEEN {lo} AND {hi}"


def _insert_only(name: str, where: str, new_keys: str) -> Workload:
    """An insert-only merge of 1% new keys made by ``data.<new_keys>``."""
    return Workload(
        name,
        f"insert-only, 1% new keys {where}",
        "insert",
        _insert_source(
            lambda d, spark, rows: getattr(d, new_keys)(spark, rows=rows, count=max(1, rows // 100))
        ),
        _config(when_not_matched=[{"action": "insert"}]),
        lambda m: m.when_not_matched_insert_all(),
        _INSERT_CHOOSE,
    )


def workloads(rows: int) -> list[Workload]:
    """Every workload for a table of ``rows`` rows, in report order."""
    window = _window_condition(rows)
    three = _config(
        when_matched=[
            {"action": "delete", "condition": "s.status = 'cancelled'"},
            {"action": "update", "set": "*", "condition": "s.amount <> t.amount"},
        ],
        when_not_matched=[{"action": "insert"}],
    )
    return [
        _insert_only("insert_beyond", "beyond the max", "new_keys_beyond"),
        _insert_only("insert_interleaved", "interleaved", "new_keys_interleaved"),
        Workload(
            "upsert_clustered",
            "upsert 1% + 0.5% new, clustered keys",
            "clustered",
            _upsert_source(clustered=True),
            _UPSERT,
            _upsert_rs,
            _UPSERT_CHOOSE,
        ),
        Workload(
            "upsert_random",
            "upsert 1% + 0.5% new, random keys",
            "random",
            _upsert_source(clustered=False),
            _UPSERT,
            _upsert_rs,
            _UPSERT_CHOOSE,
        ),
        Workload(
            "delete_window",
            "NOT MATCHED BY SOURCE delete, 5% key window",
            "window_delete",
            _window_source,
            _config(when_not_matched_by_source=[{"action": "delete", "condition": window}]),
            lambda m: m.when_not_matched_by_source_delete(window),
            f"WHEN t.id IS NOT NULL AND (s.id IS NOT NULL OR NOT coalesce({window}, false)) THEN struct(t.*)",
        ),
        Workload(
            "delete_whole",
            "NOT MATCHED BY SOURCE delete, whole table",
            "whole_delete",
            _whole_source,
            _config(when_not_matched_by_source=[{"action": "delete"}]),
            lambda m: m.when_not_matched_by_source_delete(),
            f"WHEN {_MATCHED} THEN struct(t.*)",
            extra={"key_only": True},
        ),
        Workload(
            "upsert_clustered_cdf",
            "upsert clustered, change data feed on",
            "clustered",
            _upsert_source(clustered=True),
            _UPSERT,
            _upsert_rs,
            _UPSERT_CHOOSE,
            change_data_feed=True,
            extra={"feed_off": "upsert_clustered"},
        ),
        Workload(
            "upsert_random_cdf",
            "upsert random, change data feed on",
            "random",
            _upsert_source(clustered=False),
            _UPSERT,
            _upsert_rs,
            _UPSERT_CHOOSE,
            change_data_feed=True,
            extra={"feed_off": "upsert_random"},
        ),
        Workload(
            "three_clause",
            "3 clauses: delete if, update if, insert",
            "three_clause",
            _upsert_source(clustered=True),
            three,
            lambda m: (
                m.when_matched_delete("s.status = 'cancelled'")
                .when_matched_update_all("s.amount <> t.amount")
                .when_not_matched_insert_all()
            ),
            f"WHEN {_MATCHED} AND coalesce(s.status = 'cancelled', false) THEN NULL "
            f"WHEN {_MATCHED} AND coalesce(s.amount <> t.amount, false) THEN struct(s.*) "
            "WHEN t.id IS NOT NULL THEN struct(t.*) ELSE struct(s.*)",
        ),
    ]
