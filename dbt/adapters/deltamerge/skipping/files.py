"""Deciding files: why a file is read or skipped, and the values a decision compares.

``FileDecision`` records each file a writer reads or skips with the rule that decided;
``TargetPredicate`` is a parsed target-only condition decided per file from its statistics;
``partition_types`` and ``as_instant`` turn partition values and Spark's timestamps into what
the statistics compare with; ``key_profile_aggregates``, ``key_ranges`` and ``files_in_key_ranges``
keep the files that may hold a source's keys. Merges put these together in ``merge.pruning``; DELETE, UPDATE
and CDC apply use them directly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile, Snapshot
from dbt.adapters.deltamerge.skipping.predicates import Node, may_satisfy
from dbt.adapters.deltamerge.skipping.stats import KeyRange, may_match


@dataclass(frozen=True)
class TargetPredicate:
    """A condition as a tree over target columns with its constants' values (evaluated once)."""

    node: Node
    constants: tuple[Any, ...]

    def may_hold(self, file: AddFile, kinds: Mapping[str, type]) -> bool:
        """False only when no row of ``file`` can satisfy the condition."""
        return may_satisfy(self.node, file, self.constants, kinds)


@dataclass(frozen=True)
class FileDecision:
    """Whether a merge reads one target file, and why."""

    file: AddFile
    kept: bool
    reason: str


KEPT_MAY_MATCH = "may hold a row a source row matches"
KEPT_BY_SOURCE = "may hold a row a NOT MATCHED BY SOURCE clause changes"
SKIPPED_KEY_RANGE = "the source's key range misses the file's"
SKIPPED_PARTITION = "its partition values fail an incremental predicate"
SKIPPED_STATISTICS = "its statistics rule out every row the merge changes"


def as_instant(value: object) -> object:
    """A ``timestamp`` from Spark (naive, in this process's time zone) as an aware UTC instant."""
    if isinstance(value, dt.datetime) and value.tzinfo is None:
        return value.astimezone(dt.timezone.utc)
    return value


def partition_types(snapshot: Snapshot) -> dict[str, type]:
    """The Python type of each partition column's values (for comparing them with constants)."""
    kinds: dict[str, type] = {}
    for field in snapshot.schema.fields:
        if field.name in snapshot.partition_columns:
            if isinstance(field.dataType, (T.IntegerType, T.LongType, T.ShortType, T.ByteType)):
                kinds[field.name] = int
            elif isinstance(field.dataType, T.DateType):
                kinds[field.name] = dt.date
            elif isinstance(field.dataType, T.StringType):
                kinds[field.name] = str
    return kinds


def key_profile_aggregates(keys: Sequence[str]) -> list[Column]:
    """Aggregates over a source: its row count ``n`` and each key's ``lo``/``hi``/``nulls``."""
    aggregates = [F.count(F.lit(1)).alias("n")]
    for i, key in enumerate(keys):
        col = F.col(quote_identifier(key))
        aggregates += [
            F.min(col).alias(f"lo{i}"),
            F.max(col).alias(f"hi{i}"),
            F.sum(F.when(col.isNull(), 1).otherwise(0)).alias(f"nulls{i}"),
        ]
    return aggregates


def key_ranges(profile: Mapping[str, Any], keys: Sequence[str], schema: T.StructType) -> tuple[KeyRange, ...]:
    """Each key's range from the values of ``key_profile_aggregates`` (timestamps as UTC instants)."""
    names = {f.name.lower(): f.name for f in schema.fields}
    instants = {f.name.lower() for f in schema.fields if isinstance(f.dataType, T.TimestampType)}
    return tuple(
        KeyRange(
            names.get(k.lower(), k),
            as_instant(profile[f"lo{i}"]) if k.lower() in instants else profile[f"lo{i}"],
            as_instant(profile[f"hi{i}"]) if k.lower() in instants else profile[f"hi{i}"],
            bool(profile[f"nulls{i}"]),
        )
        for i, k in enumerate(keys)
    )


def files_in_key_ranges(
    files: Sequence[AddFile], ranges: Sequence[KeyRange], kinds: Mapping[str, type]
) -> list[AddFile]:
    """The files whose statistics or partition values allow a row with a key in ``ranges``."""
    return [f for f in files if may_match(f, list(ranges), kinds)]
