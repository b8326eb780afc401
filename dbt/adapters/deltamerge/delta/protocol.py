"""Which Delta protocols and table features this writer implements.

A writer must refuse a table whose protocol asks for behaviour it does not have:
writing anyway would produce files other readers misread (deletion vectors, column
mapping) or break invariants (identity columns, constraints). Checks run before any
file is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from dbt.adapters.deltamerge.delta.errors import DeltaError, UnsupportedTableFeature


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


# Features whose presence alone is fine for us, given the metadata checks below. Writers of
# deletionVectors tables may rewrite files (never writing vectors): removes carry the files'
# descriptors. rowTracking, inCommitTimestamp: ``stamps.py``. domainMetadata: every domain is
# kept (no commit here removes one). v2Checkpoint: deltalake writes classic checkpoints of the
# V2 spec (checkpointMetadata) for such tables. liquid/clustering: the domain is kept; new files
# are unclustered (no clusteringProvider), and carry statistics for every indexed column.
_READER_FEATURES_OK = {
    "timestampNtz",
    "vacuumProtocolCheck",
    "deletionVectors",
    "v2Checkpoint",
    "columnMapping",
}
_WRITER_FEATURES_OK = {
    "appendOnly",
    "invariants",
    "checkConstraints",
    "generatedColumns",
    "columnMapping",
    "identityColumns",
    "timestampNtz",
    "vacuumProtocolCheck",
    "changeDataFeed",
    "deletionVectors",
    "rowTracking",
    "domainMetadata",
    "inCommitTimestamp",
    "v2Checkpoint",
    "clustering",
    "liquid",
}
# Features that are reader and writer features (the others are writer features only).
_READER_WRITER = {"timestampNtz", "deletionVectors", "columnMapping", "v2Checkpoint", "vacuumProtocolCheck"}

# Every table feature of PROTOCOL.md (and its preview names): one a table lists outside this set
# is made up or newer than this engine, and refused by name.
KNOWN_FEATURES = frozenset(
    {
        "appendOnly",
        "invariants",
        "checkConstraints",
        "changeDataFeed",
        "generatedColumns",
        "columnMapping",
        "identityColumns",
        "deletionVectors",
        "rowTracking",
        "timestampNtz",
        "domainMetadata",
        "v2Checkpoint",
        "clustering",
        "icebergCompatV1",
        "icebergCompatV2",
        "inCommitTimestamp",
        "typeWidening",
        "typeWidening-preview",
        "variantType",
        "variantType-preview",
        "variantShredding-preview",
        "vacuumProtocolCheck",
        "checkpointProtection",
        "catalogManaged",
        "catalogOwned-preview",
        "allowColumnDefaults",
        "liquid",
    }
)
# Reader features every read path of this engine implements as PROTOCOL.md asks: readers need
# nothing of timestampNtz and vacuumProtocolCheck beyond the log; v2 checkpoints (and sidecars)
# are replayed by deltalake, which gives every snapshot and each file's deletion vector.
# Deletion vectors are applied by every read (``read.read_files`` filters the deleted rows; the
# catalog binding holds the live rows of files that have them); column mapping is read in modes
# `none` and `name` (``mapping``), not `id`.
_READABLE_FEATURES = {"timestampNtz", "vacuumProtocolCheck", "v2Checkpoint", "deletionVectors"}

_PROPERTY_FEATURES = {
    "delta.enableDeletionVectors": "deletionVectors",
    "delta.enableRowTracking": "rowTracking",
    "delta.enableTypeWidening": "typeWidening",
    "delta.enableInCommitTimestamps": "inCommitTimestamp",
    "delta.enableIcebergCompatV1": "icebergCompatV1",
    "delta.enableIcebergCompatV2": "icebergCompatV2",
}
# Properties a table may have (switched on by its writer) or be created with here: the protocol
# then lists the feature (``table_features``). Deletion vectors are only ever read here; in-commit
# timestamps from a new table's first version need no enablement version. Switching in-commit
# timestamps or row tracking on for an existing table (which needs backfills) is refused.
_ENABLED_ON_CREATE = {"delta.enableDeletionVectors", "delta.enableInCommitTimestamps"}
_ENABLED_BY_OTHERS = {
    "delta.enableDeletionVectors",
    "delta.enableInCommitTimestamps",
    "delta.enableRowTracking",
}


def feature_problems(protocol: Protocol, configuration: Mapping[str, str], schema_string: str) -> list[str]:
    """Every table feature in use that this writer does not implement."""
    problems: list[str] = []
    if protocol.min_reader_version > 3 or protocol.min_writer_version > 7:
        problems.append(
            f"protocol (reader {protocol.min_reader_version}, writer {protocol.min_writer_version})"
        )
    for name in sorted(set(protocol.reader_features or ()) - _READER_FEATURES_OK):
        problems.append(f"reader feature '{name}'")
    for name in sorted(
        set(protocol.writer_features or ()) - _WRITER_FEATURES_OK - set(protocol.reader_features or ())
    ):
        problems.append(f"writer feature '{name}'")
    problems.extend(configuration_problems(configuration, configuration))
    problems.extend(_schema_feature_problems(schema_string))
    return problems


def reader_problems(protocol: Protocol, configuration: Mapping[str, str]) -> list[str]:
    """Every feature a reader of this table must implement and this engine's reads do not.

    >>> reader_problems(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), {})
    []
    >>> reader_problems(Protocol(3, 7, ("deletionVectors", "blahabl"), ()), {})
    ["reader feature 'blahabl'"]
    >>> reader_problems(Protocol(2, 5), {"delta.columnMapping.mode": "id"})
    ["reader feature 'columnMapping' (delta.columnMapping.mode=id)"]
    """
    problems: list[str] = []
    if protocol.min_reader_version > 3:
        problems.append(f"protocol reader version {protocol.min_reader_version}")
    features = set(protocol.reader_features or ())
    if protocol.min_reader_version == 2 and protocol.reader_features is None:
        features.add("columnMapping")  # reader version 2 is column mapping (PROTOCOL.md)
    mapping = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    for name in sorted(features - _READABLE_FEATURES):
        if name == "columnMapping" and mapping not in ("none", "name"):
            problems.append(f"reader feature 'columnMapping' (delta.columnMapping.mode={mapping})")
        elif name != "columnMapping":
            problems.append(f"reader feature '{name}'")
    return problems


def check_readable(problems: list[str], *, table: str) -> None:
    """Raise :class:`UnsupportedTableFeature` naming every feature ``problems`` lists (before any read)."""
    if problems:
        raise UnsupportedTableFeature(
            f"Delta table at {table} uses features dbt-deltamerge cannot read correctly yet: "
            + "; ".join(problems)
            + ". Nothing was read: reading the table as if they were absent would return wrong rows."
        )


def configuration_problems(configuration: Mapping[str, str], existing: Mapping[str, str] | None) -> list[str]:
    """Table properties that switch on a feature this writer does not implement.

    ``existing`` is the table's configuration before this write (None for a new table): a
    feature another writer switched on and this one implements is kept.

    >>> configuration_problems({"delta.enableInCommitTimestamps": "true"}, None)
    []
    >>> configuration_problems({"delta.enableInCommitTimestamps": "true"}, {})
    ['table property delta.enableInCommitTimestamps=true (inCommitTimestamp)']
    """
    problems = []
    for key, feature in _PROPERTY_FEATURES.items():
        if str(configuration.get(key, "false")).lower() != "true":
            continue
        before = existing is not None and str(existing.get(key, "false")).lower() == "true"
        new_table = existing is None or key == "delta.enableDeletionVectors"  # only ever read here
        if not ((key in _ENABLED_BY_OTHERS and before) or (key in _ENABLED_ON_CREATE and new_table)):
            problems.append(f"table property {key}=true ({feature})")
    mode = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    mode_before = str((existing or {}).get("delta.columnMapping.mode", "none")).lower()
    if mode not in ("none", "name") or (mode == "none" and mode_before != "none"):
        # id mode is not read here; dropping mapping would need every file rewritten.
        problems.append(f"table property delta.columnMapping.mode={mode} (columnMapping)")
    problems.extend(
        f"CHECK constraint {key[len('delta.constraints.') :]!r} (checkConstraints)"
        for key in configuration
        if key.startswith("delta.constraints.")
    )
    return problems


def _schema_feature_problems(schema_string: str) -> list[str]:
    if not schema_string:
        return []
    problems = []
    for name, metadata in _field_metadata(json.loads(schema_string)):
        if "delta.generationExpression" in metadata:
            problems.append(f"generated column `{name}` (generatedColumns)")
        if any(k.startswith("delta.identity.") for k in metadata):
            problems.append(f"identity column `{name}` (identityColumns)")
        if "delta.invariants" in metadata:
            problems.append(f"column invariant on `{name}` (invariants)")
    return problems


def _field_metadata(node: object, prefix: str = "") -> list[tuple[str, dict[str, object]]]:
    found: list[tuple[str, dict[str, object]]] = []
    if isinstance(node, dict):
        for f in node.get("fields", []) if node.get("type") == "struct" else []:
            name = f"{prefix}{f['name']}"
            found.append((name, f.get("metadata") or {}))
            found.extend(_field_metadata(f["type"], name + "."))
        for key in ("elementType", "keyType", "valueType"):
            if key in node:
                found.extend(_field_metadata(node[key], prefix))
    return found


def check_writable(
    protocol: Protocol, configuration: Mapping[str, str], schema_string: str, *, table: str
) -> None:
    """Raise :class:`UnsupportedTableFeature` unless this writer may write the table."""
    problems = feature_problems(protocol, configuration, schema_string)
    if problems:
        raise UnsupportedTableFeature(
            f"Delta table at {table} uses features dbt-deltamerge cannot write yet: "
            + "; ".join(problems)
            + ". Nothing was written. Write to a table without them, or recreate it with --full-refresh."
        )


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
    for key in _ENABLED_ON_CREATE:
        if str(configuration.get(key, "false")).lower() == "true":
            features.add(_PROPERTY_FEATURES[key])
    return features


APPEND_ONLY_PROPERTY = "delta.appendOnly"


def check_removable(configuration: Mapping[str, str], *, table: str) -> None:
    """Refuse removing rows of an append-only table, with Delta's error (DELTA_CANNOT_MODIFY_APPEND_ONLY).

    >>> check_removable({"delta.appendOnly": "false"}, table="t")
    """
    if str(configuration.get(APPEND_ONLY_PROPERTY, "false")).lower() == "true":
        raise DeltaError(
            "This table is configured to only allow appends. If you would like to permit updates or "
            f"deletes, use 'ALTER TABLE {table} SET TBLPROPERTIES ({APPEND_ONLY_PROPERTY}=false)'. "
            "Nothing was committed."
        )


def protocol_for(features: set[str]) -> Protocol:
    """The smallest protocol declaring ``features`` (table features need reader 3 / writer 7).

    >>> protocol_for(set())
    Protocol(min_reader_version=1, min_writer_version=2, reader_features=None, writer_features=None)
    >>> protocol_for({"changeDataFeed"}).min_writer_version, protocol_for({"timestampNtz"}).min_writer_version
    (4, 7)
    """
    if not features:
        return Protocol()
    if features <= {"changeDataFeed"}:
        return Protocol(1, 4)
    return Protocol(3, 7, tuple(sorted(features & _READER_WRITER)), tuple(sorted(features)))


def upgraded(current: Protocol | None, features: set[str]) -> Protocol:
    """``current`` raised just enough to declare ``features`` (never lowered).

    >>> upgraded(Protocol(1, 2), {"changeDataFeed"}).min_writer_version
    4
    >>> upgraded(Protocol(1, 4), {"timestampNtz"}).writer_features
    ('appendOnly', 'changeDataFeed', 'checkConstraints', 'generatedColumns', 'invariants', 'timestampNtz')
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
        return Protocol(3, 7, wanted.reader_features, tuple(sorted(features | implied)))
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
