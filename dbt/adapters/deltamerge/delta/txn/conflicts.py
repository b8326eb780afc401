"""Delta's conflict rules: may a transaction commit after other writers won the versions it wanted?

As Delta's ``ConflictChecker`` (WriteSerializable isolation) and delta-rs's
``conflict_checker.rs``, each winning commit is checked in order:

- a new ``protocol`` or ``metaData``: ``ProtocolChanged`` / ``MetadataChanged`` (a protocol
  change that comes with a metadata change is named by the latter, as Delta does, unless this
  transaction changes the protocol too);
- the same application transaction (``txn`` appId: one dbt invocation's writes to one
  model; two invocations are two writers): ``ConcurrentTransaction``;
- a blind append commits after anything else: it read nothing;
- a winner that removed a file this transaction read: ``ConcurrentDeleteRead``; one this
  transaction removes too: ``ConcurrentDeleteDelete``;
- files added by a winner that is not a blind append, which this transaction would have
  read (its data skipping keeps them): ``ConcurrentAppend``.

Otherwise the transaction commits at the next free version with the files it wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.errors import ConcurrentModification
from dbt.adapters.deltamerge.delta.log.mapping import logical_stats, physical_name
from dbt.adapters.deltamerge.delta.log.snapshot import AddFile


class ProtocolChanged(ConcurrentModification):
    """A concurrent commit changed the protocol."""


class MetadataChanged(ConcurrentModification):
    """A concurrent commit changed the table's metadata (schema, properties, partitioning)."""


class ConcurrentTransaction(ConcurrentModification):
    """A concurrent commit of the same application transaction (one dbt invocation's writes to a model)."""


class ConcurrentDeleteRead(ConcurrentModification):
    """A concurrent commit removed a file this transaction read."""


class ConcurrentDeleteDelete(ConcurrentModification):
    """A concurrent commit removed a file this transaction also removes."""


class ConcurrentAppend(ConcurrentModification):
    """A concurrent commit added files this transaction would have read."""


def _reads_everything(_: Sequence[AddFile]) -> bool:
    return True


@dataclass(frozen=True)
class ReadSet:
    """What a transaction read and removes; ``reads`` says whether it would read added files."""

    files_read: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    reads: Callable[[Sequence[AddFile]], bool] = field(default=_reads_everything)
    app_ids: frozenset[str] = frozenset()
    # The table's schema when it maps column names: winners' statistics are by physical name.
    mapped_schema: T.StructType | None = None


def check_winner(
    *,
    table: str,
    read_version: int,
    version: int,
    winner: list[dict[str, Any]],
    read: ReadSet | None,
    blind_append: bool,
    operation: str,
    changes_protocol: bool = False,
) -> None:
    """Raise the conflict ``winner`` (committed at ``version``) makes for this transaction, if any
    (``changes_protocol``: this transaction commits a protocol action too)."""
    info: dict[str, Any] = next((a["commitInfo"] for a in winner if "commitInfo" in a), {})
    theirs = str(info.get("operation", "an unknown operation"))

    def conflict(kind: type[ConcurrentModification], what: str) -> ConcurrentModification:
        return kind(
            f"Delta table at {table}: {kind.__name__}: {what} (version {version}, {theirs}) while this "
            f"{operation} was based on version {read_version}. Nothing was committed; re-run the model "
            "or statement."
        )

    # Delta names a winner's protocol change ProtocolChanged when this transaction changes the
    # protocol too, else the metadata change that comes with it (a feature made supported or
    # enabled), and lets a protocol-only change of a feature that is safe mid-transaction through
    # (``ConflictChecker.checkProtocolCompatibility``); this refuses every protocol change, so a
    # commit never lands written for a protocol it did not read.
    changes_metadata = any("metaData" in a for a in winner)
    if any("protocol" in a for a in winner) and (changes_protocol or not changes_metadata):
        raise conflict(ProtocolChanged, "the protocol was changed by a concurrent commit")
    if changes_metadata:
        raise conflict(MetadataChanged, "the table's metadata was changed by a concurrent commit")
    read = read if read is not None else ReadSet()
    if any(a["txn"].get("appId") in read.app_ids for a in winner if "txn" in a):
        raise conflict(ConcurrentTransaction, "the same dbt invocation wrote this model concurrently")
    if blind_append:
        return
    # Every remove counts, a compaction's (``dataChange: false``) too: committing on top of it would
    # bring the compacted file back beside its rewrite (Delta's checker does the same).
    removed = {a["remove"]["path"] for a in winner if "remove" in a}
    if removed & read.files_read:
        raise conflict(ConcurrentDeleteRead, f"files this {operation} read were removed")
    if removed & read.removed:
        raise conflict(ConcurrentDeleteDelete, f"files this {operation} removes were removed")
    if info.get("isBlindAppend", False):
        return
    added = [
        add_file(a["add"], read.mapped_schema)
        for a in winner
        if "add" in a and a["add"].get("dataChange", True)
    ]
    if added and read.reads(added):
        raise conflict(ConcurrentAppend, f"files were added that this {operation} would have read")


def add_file(add: dict[str, Any], mapped_schema: T.StructType | None = None) -> AddFile:
    """An ``add`` action as an ``AddFile``; statistics stay as the log's JSON values (keyed by the
    schema's names; with column mapping, ``mapped_schema`` translates the log's physical names)."""
    stats = json.loads(add["stats"]) if add.get("stats") else {}
    values = dict(add.get("partitionValues") or {})

    def named(found: dict[str, Any]) -> dict[str, Any]:
        return found if mapped_schema is None else logical_stats(found, mapped_schema)

    if mapped_schema is not None:
        physical = {physical_name(f): f.name for f in mapped_schema.fields}
        values = {physical.get(k, k): v for k, v in values.items()}
    return AddFile(
        path=add["path"],
        size=int(add.get("size", 0)),
        partition_values=values,
        num_records=stats.get("numRecords"),
        min_values=_typed_bounds(named(stats.get("minValues") or {})),
        max_values=_typed_bounds(named(stats.get("maxValues") or {})),
        null_counts=named(stats.get("nullCount") or {}),
    )


def _typed_bounds(values: dict[str, Any]) -> dict[str, Any]:
    """Bounds as data skipping compares them: numbers and strings as they are; dates parsed."""
    import datetime as dt

    typed: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, str) and len(value) == 10 and value[4] == "-" and value[7] == "-":
            try:
                typed[key] = dt.date.fromisoformat(value)
                continue
            except ValueError:
                pass
        if isinstance(value, (int, float, str)) and not isinstance(value, bool):
            typed[key] = value
    return typed
