"""A write's change to its table's definition: one value (``TableChange``), applied in one place.

A write may evolve the schema, switch the change data feed or deletion vectors on, or give the
table the retention of ``txn`` entries that the adapter's writes need. The change is decided once,
before anything is written (``model/`` for a model's run: ``model/change.table_change``; a
statement for its own), and handed down as one argument. ``changed`` applies the part that rides
in the write's own commit to the snapshot the write works against (so it reads, aligns and writes
with the new definition), and ``definition_actions`` gives the ``protocol`` / ``metaData`` actions
that record the difference in that commit: a failed write changes nothing. The parts that need a
commit of their own (a contract's constraints before the write, new clustering columns after it)
are in the same value and committed by ``commands/redefine.commit_before`` / ``commit_after``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.mapping import MAX_COLUMN_ID, mapping_mode, with_column_mapping
from dbt.adapters.deltamerge.delta.log.protocol import (
    CDF_PROPERTY,
    TableMetadata,
    change_data_feed_enabled,
    table_features,
    upgraded,
)
from dbt.adapters.deltamerge.delta.log.schema import (
    required_features,
    schema_from_json,
    schema_to_json,
    to_delta_schema,
)
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot

DELETION_VECTORS = "delta.enableDeletionVectors"
TXN_RETENTION_PROPERTY = "delta.setTransactionRetentionDuration"
# Far longer than any retry of one commit, short enough that hourly runs keep ~170 entries.
DEFAULT_TXN_RETENTION = "interval 7 days"


@dataclass(frozen=True)
class Redefinition:
    """A new definition committed on its own (``commands/redefine.redefine``): after the live rows
    pass what it adds. ``operation`` and ``params`` are its ``commitInfo``'s."""

    operation: str
    params: Mapping[str, Any]
    configuration: Mapping[str, str]
    schema: T.StructType


@dataclass(frozen=True)
class TableChange:
    """One write's change to its table's definition (the module's docstring).

    In the write's own commit: ``schema``, the schema the write leaves (None keeps it: no schema
    evolution); ``change_data_feed`` and ``deletion_vectors`` switched on (the ``txn`` retention a
    write recording a ``txn`` needs is the commit path's: ``with_transaction_retention``). In a
    commit of its own: ``before`` the write (a contract's
    constraints), and ``cluster_by``, the clustering columns committed after it where they differ.
    """

    schema: T.StructType | None = None
    change_data_feed: bool = False
    deletion_vectors: bool = False
    before: Redefinition | None = None
    cluster_by: tuple[str, ...] | None = field(default=None)


# A write that leaves the definition as it is.
NO_CHANGE = TableChange()


def changed(current: Snapshot, change: TableChange) -> Snapshot:
    """``current`` with the part of ``change`` that rides in the write's own commit applied: the
    snapshot the write works against (``definition_actions`` records the difference)."""
    target = with_schema(current, change.schema) if change.schema is not None else current
    if change.change_data_feed:
        target = with_change_data_feed(target)
    if change.deletion_vectors:
        target = with_deletion_vectors(target)
    return target


def redefined(current: Snapshot, redefinition: Redefinition) -> Snapshot:
    """``current`` as ``redefinition`` leaves it, without a commit (what a write decided after it
    is decided against)."""
    metadata = replace(
        current.metadata,
        configuration=dict(redefinition.configuration),
        schema_string=schema_to_json(redefinition.schema),
    )
    return _with(current, metadata)


def with_change_data_feed(current: Snapshot) -> Snapshot:
    """``current`` with the feed switched on (and the protocol raised to declare it)."""
    if change_data_feed_enabled(current.metadata.configuration):
        return current
    configuration = {**current.metadata.configuration, CDF_PROPERTY: "true"}
    return _with(current, replace(current.metadata, configuration=configuration))


def with_deletion_vectors(current: Snapshot) -> Snapshot:
    """``current`` with deletion vectors switched on (the protocol raised to list the feature)."""
    if str(current.metadata.configuration.get(DELETION_VECTORS, "false")).lower() == "true":
        return current
    configuration = {**current.metadata.configuration, DELETION_VECTORS: "true"}
    return _with(current, replace(current.metadata, configuration=configuration))


def with_transaction_retention(current: Snapshot) -> Snapshot:
    """``current`` with a retention for ``txn`` entries, unless the table sets its own.

    Every dbt invocation records a ``txn`` (appId) per model it writes; with the protocol's
    ``delta.setTransactionRetentionDuration`` readers ignore entries older than that, and
    checkpoints drop them, so the table's state does not grow with every run.
    """
    if TXN_RETENTION_PROPERTY in current.metadata.configuration:
        return current
    configuration = {**current.metadata.configuration, TXN_RETENTION_PROPERTY: DEFAULT_TXN_RETENTION}
    return _with(current, replace(current.metadata, configuration=configuration))


def with_schema(current: Snapshot, schema: T.StructType) -> Snapshot:
    """``current`` with ``schema`` as its table schema (with column mapping: new columns get ids
    and physical names, existing ones keep theirs, ``maxColumnId`` advances)."""
    if schema == current.schema:
        return current
    configuration = current.metadata.configuration
    if mapping_mode(configuration) == "none":
        return _with(
            current,
            replace(
                current.metadata, schema_string=schema_to_json(to_delta_schema(schema, keep_nullability=True))
            ),
        )
    stored = to_delta_schema(schema, mapped=True, keep_nullability=True)
    mapped, top = mapped_schema(stored, current.schema, configuration)
    if mapped == current.schema:
        return current
    configuration = {**configuration, MAX_COLUMN_ID: str(top)}
    return _with(
        current, replace(current.metadata, schema_string=schema_to_json(mapped), configuration=configuration)
    )


def mapped_schema(
    schema: T.StructType, previous: T.StructType | None, configuration: Mapping[str, str]
) -> tuple[T.StructType, int]:
    """``schema`` with column mapping metadata on every field, and the table's new ``maxColumnId``."""
    return with_column_mapping(schema, previous, int(configuration.get(MAX_COLUMN_ID, 0)))


def definition_actions(original: Snapshot, changed: Snapshot) -> list[dict[str, object]]:
    """The ``protocol`` and ``metaData`` actions turning ``original``'s definition into ``changed``'s."""
    actions: list[dict[str, object]] = []
    if changed.protocol != original.protocol:
        actions.append(changed.protocol.to_action())
    if changed.metadata != original.metadata:
        actions.append(changed.metadata.to_action())
    return actions


def with_metadata(current: Snapshot, metadata: TableMetadata) -> Snapshot:
    """``current`` with ``metadata`` (a new schema or properties), the protocol raised to declare
    every feature they need (a CHECK constraint, a NOT NULL column, a column default, ...).

    Column mapping switched on (``ALTER TABLE ... SET TBLPROPERTIES ('delta.columnMapping.mode' =
    'name')``) gives every column an id and its own name as physical name, as its data files
    hold it (Delta's ``assignColumnIdAndPhysicalName``): a mapped schema without them is a table
    no reader can read."""
    if (
        mapping_mode(metadata.configuration) != "none"
        and mapping_mode(current.metadata.configuration) == "none"
    ):
        unmapped = schema_from_json(metadata.schema_string)
        mapped, top = mapped_schema(unmapped, unmapped, metadata.configuration)
        configuration = {**metadata.configuration, MAX_COLUMN_ID: str(top)}
        metadata = replace(metadata, schema_string=schema_to_json(mapped), configuration=configuration)
    return _with(current, metadata)


def _with(current: Snapshot, metadata: TableMetadata) -> Snapshot:
    schema = schema_from_json(metadata.schema_string)
    features = table_features(metadata.configuration, required_features(schema))
    return replace(current, metadata=metadata, protocol=upgraded(current.protocol, features))
