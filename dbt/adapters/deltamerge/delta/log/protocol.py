"""The ``protocol`` and ``metaData`` actions, and the smallest protocol declaring a table's features.

Which features the engine reads and writes, and the checks that refuse the others, are in
``features.py``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from dbt.adapters.deltamerge.delta.log.row_ids import ROW_COMMIT_VERSION_COLUMN, ROW_ID_COLUMN


@dataclass(frozen=True)
class Protocol:
    """The ``protocol`` action."""

    min_reader_version: int = 1
    min_writer_version: int = 2
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    def to_action(self) -> dict[str, object]:
        """The JSON object of the ``protocol`` action."""
        action: dict[str, object] = {
            "minReaderVersion": self.min_reader_version,
            "minWriterVersion": self.min_writer_version,
        }
        if self.reader_features is not None:
            action["readerFeatures"] = sorted(self.reader_features)
        if self.writer_features is not None:
            action["writerFeatures"] = sorted(self.writer_features)
        return {"protocol": action}

    @classmethod
    def from_action(cls, action: Mapping[str, object]) -> Protocol:
        """The ``protocol`` action's JSON object as a ``Protocol``."""
        readers, writers = action.get("readerFeatures"), action.get("writerFeatures")
        return cls(
            int(str(action.get("minReaderVersion", 1))),
            int(str(action.get("minWriterVersion", 2))),
            tuple(str(n) for n in readers) if isinstance(readers, (list, tuple)) else None,
            tuple(str(n) for n in writers) if isinstance(writers, (list, tuple)) else None,
        )


# Features that are reader and writer features (the others are writer features only).
_READER_WRITER = {
    "timestampNtz",
    "deletionVectors",
    "columnMapping",
    "v2Checkpoint",
    "vacuumProtocolCheck",
    "variantType",
}

PROPERTY_FEATURES = {
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableInCommitTimestamps": "inCommitTimestamp",
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}
# Properties a table may have (switched on by its writer) or be created with here: the protocol
# then lists the feature (``table_features``). Deletion vectors are only ever read here; in-commit
# timestamps and row ids from a new table's first version need no enablement version or
# backfill. Switching in-commit timestamps or row tracking on for an existing table is refused.
ENABLED_ON_CREATE = {
    "delta.enableIcebergCompatV2",
    "delta.enableDeletionVectors",
    "delta.enableInCommitTimestamps",
    "delta.enableRowTracking",
}

CDF_PROPERTY = "delta.enableChangeDataFeed"
# Features a legacy writer version implies (Delta protocol, "Table Features").
_LEGACY_WRITER_FEATURES = {
    2: {"appendOnly", "invariants"},
    3: {"checkConstraints"},
    4: {"changeDataFeed", "generatedColumns"},
    5: {"columnMapping"},
    6: {"identityColumns"},
}


def change_data_feed_enabled(configuration: Mapping[str, str]) -> bool:
    """Whether the table properties switch the change data feed on."""
    return str(configuration.get(CDF_PROPERTY, "false")).lower() == "true"


def table_features(configuration: Mapping[str, str], schema_features: set[str]) -> set[str]:
    """Features a table with these properties and schema needs.

    >>> sorted(table_features({"delta.enableDeletionVectors": "true"}, set()))
    ['deletionVectors']
    """
    features = set(schema_features)
    if change_data_feed_enabled(configuration):
        features.add("changeDataFeed")
    if str(configuration.get("delta.columnMapping.mode", "none")).lower() != "none":
        features.add("columnMapping")
    for key in ENABLED_ON_CREATE:
        if str(configuration.get(key, "false")).lower() == "true":
            features.add(PROPERTY_FEATURES[key])
    if any(key.startswith("delta.constraints.") for key in configuration):
        features.add("checkConstraints")
    if "rowTracking" in features:
        features.add("domainMetadata")  # the high-water mark is a metadata domain
    return features


def with_row_tracking_columns(
    configuration: Mapping[str, str], existing: Mapping[str, str]
) -> dict[str, str]:
    """``configuration`` of a table switching row tracking on, with the names of its materialized
    row id and row commit version columns (the existing table's, else fresh and unique)."""
    found = dict(configuration)
    if str(found.get("delta.enableRowTracking", "false")).lower() != "true":
        return found
    for key, prefix in (
        (ROW_ID_COLUMN, "_row-id-col-"),
        (ROW_COMMIT_VERSION_COLUMN, "_row-commit-version-col-"),
    ):
        found.setdefault(key, existing.get(key) or f"{prefix}{uuid.uuid4()}")
    return found


def protocol_for(features: set[str]) -> Protocol:
    """The smallest protocol declaring ``features`` (table features need reader 3 / writer 7).

    >>> protocol_for(set())
    Protocol(min_reader_version=1, min_writer_version=2, reader_features=None, writer_features=None)
    >>> protocol_for({"changeDataFeed"}).min_writer_version, protocol_for({"timestampNtz"}).min_writer_version
    (4, 7)
    >>> protocol_for({"invariants", "checkConstraints"})
    Protocol(min_reader_version=1, min_writer_version=3, reader_features=None, writer_features=None)
    """
    if not features:
        return Protocol()
    legacy = [v for v in (2, 3, 4) if features <= _implied_by_legacy(v)]
    if legacy:
        return Protocol(1, legacy[0])
    readers = tuple(sorted(features & _READER_WRITER))
    if not readers:  # writer features alone: reader version 1 (readers need nothing)
        return Protocol(1, 7, None, tuple(sorted(features)))
    return Protocol(3, 7, readers, tuple(sorted(features)))


def upgraded(current: Protocol | None, features: set[str]) -> Protocol:
    """``current`` raised just enough to declare ``features`` (never lowered).

    >>> upgraded(Protocol(1, 2), {"changeDataFeed"}).min_writer_version
    4
    >>> upgraded(Protocol(1, 4), {"timestampNtz"}).writer_features
    ('appendOnly', 'changeDataFeed', 'checkConstraints', 'generatedColumns', 'invariants', 'timestampNtz')
    >>> p = upgraded(Protocol(1, 2), {"allowColumnDefaults"})  # writer features only: reader 1
    >>> p.min_reader_version, p.min_writer_version, p.reader_features
    (1, 7, None)
    """
    if current is None:
        return protocol_for(features)
    if current.writer_features is None:
        implied = _implied_by_legacy(current.min_writer_version)
        if features <= implied:
            return current
        wanted = protocol_for(features)
        if wanted.writer_features is None:
            return Protocol(
                max(current.min_reader_version, wanted.min_reader_version),
                max(current.min_writer_version, wanted.min_writer_version),
            )
        readers = set(wanted.reader_features or ())
        if readers and current.min_reader_version == 2:
            readers.add("columnMapping")  # reader version 2 is column mapping
        return Protocol(
            3 if readers else current.min_reader_version,
            7,
            tuple(sorted(readers)) if readers else None,
            tuple(sorted(features | implied)),
        )
    if features <= set(current.writer_features):
        return current
    readers = set(current.reader_features or ()) | (features & _READER_WRITER)
    return Protocol(
        max(current.min_reader_version, 3 if readers else current.min_reader_version),
        7,
        tuple(sorted(readers)) if current.reader_features is not None or readers else None,
        tuple(sorted(set(current.writer_features) | features)),
    )


def _implied_by_legacy(writer_version: int) -> set[str]:
    found: set[str] = set()
    for version, names in _LEGACY_WRITER_FEATURES.items():
        if writer_version >= version:
            found |= names
    return found


@dataclass(frozen=True)
class TableMetadata:
    """The ``metaData`` action."""

    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: Mapping[str, str] = field(default_factory=dict)
    created_time: int | None = None
    name: str | None = None
    description: str | None = None

    def to_action(self) -> dict[str, object]:
        """The JSON object of the ``metaData`` action."""
        return {
            "metaData": {
                "id": self.id,
                "name": self.name,
                "description": self.description,
                "format": {"provider": "parquet", "options": {}},
                "schemaString": self.schema_string,
                "partitionColumns": list(self.partition_columns),
                "configuration": dict(self.configuration),
                "createdTime": self.created_time,
            }
        }
