"""Changes to a table's definition that ride in the same commit as a write's data.

A write may switch the change data feed on, evolve the schema, or give the table the
retention of ``txn`` entries that the adapter's writes need. Each is applied to
the snapshot the write works against (so it reads, aligns and writes with the new
definition), and ``definition_actions`` gives the ``protocol`` / ``metaData`` actions
that record the difference in the write's own commit: a failed write changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

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
    every feature they need (a CHECK constraint, a NOT NULL column, a column default, ...)."""
    return _with(current, metadata)


def _with(current: Snapshot, metadata: TableMetadata) -> Snapshot:
    schema = schema_from_json(metadata.schema_string)
    features = table_features(metadata.configuration, required_features(schema))
    return replace(current, metadata=metadata, protocol=upgraded(current.protocol, features))
