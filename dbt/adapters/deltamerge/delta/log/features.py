"""Which table features this engine reads and writes, and the checks that refuse the others.

A writer must refuse a table whose protocol asks for behaviour it does not have: writing anyway
would produce files other readers misread or break invariants (identity columns, constraints).
A reader must refuse one whose reader features it does not implement: reading as if they were
absent returns wrong rows. Checks run before anything is read or written, naming each feature.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping

from dbt.adapters.deltamerge.delta.errors import DeltaError, UnsupportedTableFeature
from dbt.adapters.deltamerge.delta.log.iceberg_compat import compat_problems
from dbt.adapters.deltamerge.delta.log.protocol import ENABLED_ON_CREATE, PROPERTY_FEATURES, Protocol
from dbt.adapters.deltamerge.delta.log.type_widening import type_change_problems

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
    "variantType",
    "variantType-preview",
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
    "variantType",
    "variantType-preview",
    "allowColumnDefaults",
    "icebergCompatV2",
}
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
# `none`, `name` and `id` (``mapping``). Variant columns are Spark 4's VARIANT, read from the
# parquet layout the protocol gives (struct of `value` and `metadata` binaries) by Spark's own
# reader, and written unshredded as the protocol asks without ``variantShredding`` (``write``). Type widening:
# Spark's parquet reader converts every widening the protocol lists (``type_widening``); a
# recorded change it does not list is refused; writes to such tables are refused.
_READABLE_FEATURES = {
    "timestampNtz",
    "vacuumProtocolCheck",
    "v2Checkpoint",
    "deletionVectors",
    "variantType",
    "variantType-preview",
    "typeWidening",
    "typeWidening-preview",
}

_ENABLED_BY_OTHERS = {
    "delta.enableIcebergCompatV2",
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
    problems.extend(compat_problems(configuration, schema_string))
    mode = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    enabled = (
        protocol.min_writer_version >= 5
        if protocol.writer_features is None
        else ("columnMapping" in protocol.writer_features)
    )
    if mode in ("name", "id") and not enabled:
        # Its files are written under logical names: mapping them now would make them unreadable.
        problems.append(
            f"table property delta.columnMapping.mode={mode} without the columnMapping feature in the "
            "protocol (another writer set the property alone)"
        )
    return problems


def reader_problems(
    protocol: Protocol, configuration: Mapping[str, str], schema_string: str = ""
) -> list[str]:
    """Every feature a reader of this table must implement and this engine's reads do not (with
    ``typeWidening``, each recorded type change of ``schema_string`` a read does not support).

    >>> reader_problems(Protocol(3, 7, ("deletionVectors",), ("deletionVectors",)), {})
    []
    >>> reader_problems(Protocol(3, 7, ("deletionVectors", "blahabl"), ()), {})
    ["reader feature 'blahabl'"]
    >>> reader_problems(Protocol(2, 5), {"delta.columnMapping.mode": "id"})
    []
    >>> reader_problems(Protocol(2, 5), {"delta.columnMapping.mode": "byMagic"})
    ["reader feature 'columnMapping' (delta.columnMapping.mode=bymagic)"]
    """
    problems: list[str] = []
    if protocol.min_reader_version > 3:
        problems.append(f"protocol reader version {protocol.min_reader_version}")
    features = set(protocol.reader_features or ())
    if protocol.min_reader_version == 2 and protocol.reader_features is None:
        features.add("columnMapping")  # reader version 2 is column mapping (PROTOCOL.md)
    mapping = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    for name in sorted(features - _READABLE_FEATURES):
        if name == "columnMapping" and mapping not in ("none", "name", "id"):
            problems.append(f"reader feature 'columnMapping' (delta.columnMapping.mode={mapping})")
        elif name != "columnMapping":
            problems.append(f"reader feature '{name}'")
    if features & {"typeWidening", "typeWidening-preview"}:
        problems.extend(type_change_problems(schema_string))
    return problems


def check_readable(problems: list[str], *, table: str) -> None:
    """Raise :class:`UnsupportedTableFeature` naming every feature ``problems`` lists (before any read)."""
    if problems:
        raise UnsupportedTableFeature(
            f"Delta table at {table} uses features dbt-deltamerge cannot read correctly yet: "
            + "; ".join(problems)
            + ". Nothing was read: reading the table as if they were absent would return wrong rows."
        )


def configuration_problems(
    configuration: Mapping[str, str],
    existing: Mapping[str, str] | None,
    switchable: Collection[str] = (),
) -> list[str]:
    """Table properties that switch on a feature this writer does not implement.

    ``existing`` is the table's configuration before this write (None for a new table): a
    feature another writer switched on and this one implements is kept. ``switchable``: the
    properties the caller may switch on for an existing table (it checked what that needs).

    >>> configuration_problems({"delta.enableInCommitTimestamps": "true"}, None)
    []
    >>> configuration_problems({"delta.enableInCommitTimestamps": "true"}, {})
    ['table property delta.enableInCommitTimestamps=true (inCommitTimestamp)']
    """
    problems = []
    for key, feature in PROPERTY_FEATURES.items():
        if str(configuration.get(key, "false")).lower() != "true":
            continue
        before = existing is not None and str(existing.get(key, "false")).lower() == "true"
        new_table = existing is None or key == "delta.enableDeletionVectors"  # only ever read here
        if key in switchable and not before:
            continue
        if not ((key in _ENABLED_BY_OTHERS and before) or (key in ENABLED_ON_CREATE and new_table)):
            problems.append(f"table property {key}=true ({feature})")
    mode = str(configuration.get("delta.columnMapping.mode", "none")).lower()
    mode_before = str((existing or {}).get("delta.columnMapping.mode", "none")).lower()
    if mode not in ("none", "name", "id") or (mode != mode_before and mode_before != "none"):
        # Dropping mapping, or changing its mode, would need every file rewritten.
        problems.append(f"table property delta.columnMapping.mode={mode} (columnMapping)")
    return problems


def _schema_feature_problems(schema_string: str) -> list[str]:
    """Column metadata of features this writer does not implement (none today: generated, identity,
    default columns and invariants are written by ``constraints`` and ``column_values``)."""
    if not schema_string:
        return []
    problems = []
    for field in json.loads(schema_string).get("fields", []):
        for name, metadata in _field_metadata(field["type"], f"{field['name']}."):
            if any(k.startswith(_COLUMN_KEYS) for k in metadata):
                problems.append(
                    f"nested field `{name}` with {sorted(metadata)} (generated, identity or default)"
                )
    return problems


_COLUMN_KEYS = ("delta.generationExpression", "delta.identity.", "CURRENT_DEFAULT")


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
