"""Which target files a merge must read: data skipping before any target data is scanned.

Three independent proofs that a file holds no row a merge could change, as Delta's
merge uses them: the source keys' range against the file's key statistics (ON built
from the join keys, ``MergeSpec.join_keys``); partition-only ``incremental_predicates``
evaluated by Spark on the partition values; and target-only predicates (ON conjuncts, and for a matched-only
merge the matched clauses' conditions) against the file's statistics. With NOT MATCHED
BY SOURCE clauses a file is read when it may match, or when it may hold a row one of
those clauses' conditions selects (every such clause must have a condition). The proofs
themselves are ``skipping``'s; this module puts them together for a ``MergeSpec``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.errors import AnalysisException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot
from dbt.adapters.deltamerge.delta.data import generated_columns, referenced_columns
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.skipping.files import (
    KEPT_BY_SOURCE,
    KEPT_MAY_MATCH,
    SKIPPED_KEY_RANGE,
    SKIPPED_PARTITION,
    SKIPPED_STATISTICS,
    FileDecision,
    TargetPredicate,
    as_instant,
    key_profile_aggregates,
    key_ranges,
    partition_types,
)
from dbt.adapters.deltamerge.skipping.predicates import target_predicate
from dbt.adapters.deltamerge.skipping.stats import KeyRange, may_match


@dataclass(frozen=True)
class FilePruning:
    """One merge's data skipping as plain values: decides for any file, also for files added later.

    Pure: the Spark work (constants, partition-only predicates) is done by ``prepare_pruning``.
    ``partition_skipped`` holds the paths of snapshot files a partition-only
    ``incremental_predicate`` rules out; a file added later is judged without that proof.
    """

    spec: MergeSpec
    partition_types: Mapping[str, type]
    ranges: tuple[KeyRange, ...] | None
    changes: TargetPredicate | None
    by_source: TargetPredicate | None
    matchable: TargetPredicate | None
    partition_skipped: frozenset[str] = frozenset()

    def decide(self, file: AddFile) -> FileDecision:
        """Whether the merge must read ``file`` (no skipping rule proves it irrelevant)."""
        if self.spec.not_matched_by_source:
            return self._decide_with_unmatched(file)
        if not self._in_key_range(file):
            return FileDecision(file, False, SKIPPED_KEY_RANGE)
        if file.path in self.partition_skipped:
            return FileDecision(file, False, SKIPPED_PARTITION)
        if self.changes is not None and not self.changes.may_hold(file, self.partition_types):
            return FileDecision(file, False, SKIPPED_STATISTICS)
        return FileDecision(file, True, KEPT_MAY_MATCH)

    def keep(self, files: Sequence[AddFile]) -> list[AddFile]:
        """The files of ``files`` this merge must read."""
        return [f for f in files if self.decide(f).kept]

    def _decide_with_unmatched(self, file: AddFile) -> FileDecision:
        """With NOT MATCHED BY SOURCE clauses: a file that may match, or may hold a row such a clause changes.

        Rows of a file that no NOT MATCHED BY SOURCE condition can select stay as they are
        unless matched, so only the ON condition's skipping applies to them.
        """
        if self.by_source is None or self.by_source.may_hold(file, self.partition_types):
            return FileDecision(file, True, KEPT_BY_SOURCE)
        if (
            self.matchable is not None
            and self._in_key_range(file)
            and self.matchable.may_hold(file, self.partition_types)
        ):
            return FileDecision(file, True, KEPT_MAY_MATCH)
        if self.matchable is not None and not self._in_key_range(file):
            return FileDecision(file, False, SKIPPED_KEY_RANGE)
        return FileDecision(file, False, SKIPPED_STATISTICS)

    def _in_key_range(self, file: AddFile) -> bool:
        return self.ranges is None or may_match(file, list(self.ranges), self.partition_types)


def prepare_pruning(
    spark: SparkSession, spec: MergeSpec, snapshot: Snapshot, profile: Mapping[str, Any]
) -> FilePruning:
    """The merge's data skipping, from the values of ``profile_aggregates`` over its source.

    The Spark work happens here, once: each condition's constants in one row, and the
    partition-only ``incremental_predicates`` over the snapshot's partition values.
    """
    kinds = partition_types(snapshot)
    columns = [f.name for f in snapshot.schema.fields]

    def predicate(conditions: list[str]) -> TargetPredicate | None:
        if not conditions:
            return None
        node, constants = target_predicate(spark, conditions, target_alias=spec.target_alias, columns=columns)
        return TargetPredicate(node, tuple(constants))

    by_source = matchable = None
    if spec.not_matched_by_source:
        conditions = [c.condition for c in spec.not_matched_by_source]
        if all(conditions):
            by_source = predicate([" OR ".join(f"({c})" for c in conditions if c)])
            matchable = predicate([spec.on_condition]) if spec.matched or spec.not_matched else None
    return FilePruning(
        spec=spec,
        partition_types=kinds,
        ranges=_key_ranges(profile, spec, snapshot),
        changes=predicate(skipping_conditions(spec)),
        by_source=by_source,
        matchable=matchable,
        partition_skipped=_skipped_by_partition_predicates(spark, spec, snapshot),
    )


def skips_by_key_range(spec: MergeSpec) -> bool:
    """Whether the source keys' range can skip files (the ON condition is the join keys' equality)."""
    return bool(spec.join_keys)


def matches_by_key_alone(spec: MergeSpec) -> bool:
    """Whether a target row's key alone decides if it matches: ON is the key equality and nothing more.

    Then every target row with a given key is matched, or none is. ``incremental_predicates``
    may tell apart target rows sharing a key, so with them a row must be joined by the whole ON.

    >>> config = {"unique_key": "id", "when_not_matched_by_source": [{"action": "delete"}]}
    >>> matches_by_key_alone(MergeSpec.from_config("m", config))
    True
    >>> matches_by_key_alone(MergeSpec.from_config("m", {**config, "incremental_predicates": ["x > 1"]}))
    False
    """
    return skips_by_key_range(spec) and not spec.incremental_predicates


def skipping_conditions(spec: MergeSpec) -> list[str]:
    """Conditions every target row a merge changes must satisfy.

    >>> spec = MergeSpec.from_config("m", {"unique_key": "id", "when_matched": [
    ...     {"action": "delete", "condition": "DBT_INTERNAL_DEST.x > 1"}], "when_not_matched": []})
    >>> skipping_conditions(spec)[1]
    '(DBT_INTERNAL_DEST.x > 1)'
    """
    if spec.not_matched_by_source:
        return []
    conditions = [spec.on_condition]
    if spec.is_matched_only and all(c.condition for c in spec.matched):
        conditions.append(" OR ".join(f"({c.condition})" for c in spec.matched))
    return conditions


def profile_aggregates(spec: MergeSpec, schema: T.StructType | None = None) -> list[Column]:
    """The source's row count and, when the ON condition is the join keys' equality, each key's range
    and the range of each generated column of the key (``generated_keys``)."""
    if not skips_by_key_range(spec):
        return key_profile_aggregates(())
    aggregates = key_profile_aggregates(spec.join_keys)
    for i, (_, expression) in enumerate(generated_keys(spec, schema) if schema is not None else []):
        value = F.expr(f"({expression})")
        aggregates += [
            F.min(value).alias(f"glo{i}"),
            F.max(value).alias(f"ghi{i}"),
            F.sum(F.when(value.isNull(), 1).otherwise(0)).alias(f"gnulls{i}"),
        ]
    return aggregates


def generated_keys(spec: MergeSpec, schema: T.StructType) -> list[tuple[str, str]]:
    """Generated columns computed from the join keys alone: a target row a source row matches has
    the value the source row's key gives, so their range over the source skips files too (Delta's
    generated-column partition filters: a date partition generated from a key timestamp).

    >>> s = T.StructType([T.StructField("ts", T.TimestampType()), T.StructField("d", T.DateType(), True,
    ...     {"delta.generationExpression": "CAST(ts AS DATE)"})])
    >>> generated_keys(MergeSpec.from_config("m", {"unique_key": ["id", "ts"]}), s)
    [('d', 'CAST(ts AS DATE)')]
    >>> generated_keys(MergeSpec.from_config("m", {"unique_key": "id"}), s)
    []
    """
    keys = {k.lower() for k in spec.join_keys}
    return [
        (column, expression)
        for column, expression in generated_columns(schema).items()
        if column.lower() not in keys and {c.lower() for c in referenced_columns(expression)} <= keys
    ]


def _key_ranges(
    profile: Mapping[str, Any], spec: MergeSpec, snapshot: Snapshot
) -> tuple[KeyRange, ...] | None:
    if not skips_by_key_range(spec):
        return None
    instant = {f.name for f in snapshot.schema.fields if isinstance(f.dataType, T.TimestampType)}

    def value(column: str, key: str) -> object:
        return as_instant(profile[key]) if column in instant else profile[key]

    generated = [
        KeyRange(column, value(column, f"glo{i}"), value(column, f"ghi{i}"), bool(profile[f"gnulls{i}"]))
        for i, (column, _) in enumerate(generated_keys(spec, snapshot.schema))
        if f"glo{i}" in profile
    ]
    return (*key_ranges(profile, spec.join_keys, snapshot.schema), *generated)


def _skipped_by_partition_predicates(
    spark: SparkSession, spec: MergeSpec, snapshot: Snapshot
) -> frozenset[str]:
    """Paths of files whose partition values fail an ``incremental_predicate`` (part of the ON condition).

    A predicate is used only if it resolves against the partition columns alone; without
    NOT MATCHED BY SOURCE clauses, rows failing the ON condition cannot be changed.
    """
    files = snapshot.files
    if (
        not (spec.incremental_predicates and snapshot.partition_columns and files)
        or spec.not_matched_by_source
    ):
        return frozenset()
    fields = [snapshot.schema[c] for c in snapshot.partition_columns]
    schema = T.StructType(
        [T.StructField("_file_index", T.LongType()), *[T.StructField(f.name, T.StringType()) for f in fields]]
    )
    rows = [
        (i, *[f.partition_values.get(c) for c in snapshot.partition_columns]) for i, f in enumerate(files)
    ]
    typed = [F.col(quote_identifier(f.name)).cast(f.dataType).alias(f.name) for f in fields]
    values = spark.createDataFrame(rows, schema).select("_file_index", *typed).alias(spec.target_alias)
    kept = set(range(len(files)))
    for predicate in spec.incremental_predicates:
        try:
            passing = {r[0] for r in values.where(predicate).select("_file_index").collect()}
        except AnalysisException:
            continue  # not a partition-only predicate: it applies in the join instead
        kept &= passing
    return frozenset(f.path for i, f in enumerate(files) if i not in kept)
