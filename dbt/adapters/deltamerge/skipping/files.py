"""Deciding files: why a file is read or skipped, and the values a decision compares.

``FileDecision`` records each file a writer reads or skips with the rule that decided;
``TargetPredicate`` is a parsed target-only condition decided per file from its statistics;
``partition_types`` and ``as_instant`` turn partition values and Spark's timestamps into what
the statistics compare with. Merges put these together in ``merge.pruning``; DELETE, UPDATE
and CDC apply use them directly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.skipping.predicates import Node, may_satisfy


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
