"""IcebergCompatV2 (PROTOCOL.md, "Iceberg Compatibility V2"): the Delta side of a UniForm table.

A table with ``delta.enableIcebergCompatV2 = true`` keeps its data files readable as Iceberg's:
column mapping on, no deletion vectors, every column of a type Iceberg v2 has, partition values
inside the data files (not only in the folder names), ``numRecords`` in every ``add``, timestamps
as int64. ``delta.universalFormat.enabledFormats = iceberg`` asks the writer to keep Iceberg
metadata beside the log as well (``delta/uniform``); it needs IcebergCompatV2 (Delta Kernel refuses it
without one IcebergCompat version).

Array and map columns need Iceberg ids for their ``element`` / ``key`` / ``value``
(``delta.columnMapping.nested.ids``) written as parquet field ids, which Spark's parquet writer
cannot write: this version refuses such columns, naming them, rather than write files an Iceberg
reader misreads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

COMPAT_V1 = "delta.enableIcebergCompatV1"
COMPAT_V2 = "delta.enableIcebergCompatV2"
ENABLED_FORMATS = "delta.universalFormat.enabledFormats"
DELETION_VECTORS = "delta.enableDeletionVectors"
MAPPING_MODE = "delta.columnMapping.mode"
# dbt-databricks's model config for a UniForm table, and the properties it stands for.
TABLE_FORMAT_ICEBERG = {COMPAT_V2: "true", ENABLED_FORMATS: "iceberg"}
# The ``add`` tag naming the IcebergCompat version a data file was written under (Delta's
# ``AddFile.Tags.ICEBERG_COMPAT_VERSION``): files without it are rewritten by REORG ... UPGRADE UNIFORM.
ICEBERG_COMPAT_TAG = "ICEBERG_COMPAT_VERSION"
# The parquet field ids of the materialized row tracking columns in an IcebergCompat table's files:
# Iceberg v3's reserved ``_row_id`` and ``_last_updated_sequence_number`` (Delta writes them from
# IcebergCompatV3 on). Without an id, Iceberg readers that need every column of a file to carry one
# (pyiceberg) fall back to the name mapping, which has no such column, and fail.
ROW_TRACKING_FIELD_IDS = (2147483540, 2147483539)
# Where a UniForm table's Iceberg metadata lives, under the table (as Delta's converter writes it).
ICEBERG_METADATA_FOLDER = "metadata"
# Iceberg table properties passed through from Delta's (the prefix stripped), as Delta does.
ICEBERG_CONFIG_PREFIX = "delta.universalFormat.config.iceberg."

# Delta's type names IcebergCompatV2 allows (``CheckTypeInV2AllowList``), and the structs of them.
_ALLOWED = {
    "byte",
    "short",
    "integer",
    "long",
    "float",
    "double",
    "string",
    "binary",
    "boolean",
    "timestamp",
    "timestamp_ntz",
    "date",
}


def _true(configuration: Mapping[str, str], key: str) -> bool:
    return str(configuration.get(key, "false")).strip().lower() == "true"


def compat_v2(configuration: Mapping[str, str]) -> bool:
    """Whether the table keeps IcebergCompatV2."""
    return _true(configuration, COMPAT_V2)


def enabled_formats(configuration: Mapping[str, str]) -> tuple[str, ...]:
    """The formats ``delta.universalFormat.enabledFormats`` names (lower case).

    >>> enabled_formats({ENABLED_FORMATS: "iceberg, hudi"})
    ('iceberg', 'hudi')
    """
    text = str(configuration.get(ENABLED_FORMATS, ""))
    return tuple(part.strip().lower() for part in text.split(",") if part.strip())


def iceberg_enabled(configuration: Mapping[str, str]) -> bool:
    """Whether every commit of the table also writes its Iceberg metadata (UniForm)."""
    return "iceberg" in enabled_formats(configuration) and compat_v2(configuration)


def upgraded_configuration(configuration: Mapping[str, str]) -> dict[str, str]:
    """``configuration`` made a UniForm table's, as Delta's ``REORG ... UPGRADE UNIFORM`` makes it:
    IcebergCompatV2 on (V1 off), ``iceberg`` among the enabled formats, column mapping by name
    where the table has none, deletion vectors off.

    >>> sorted(upgraded_configuration({DELETION_VECTORS: "true", COMPAT_V1: "true"}).items())
    ... # doctest: +NORMALIZE_WHITESPACE
    [('delta.columnMapping.mode', 'name'), ('delta.enableDeletionVectors', 'false'),
     ('delta.enableIcebergCompatV1', 'false'), ('delta.enableIcebergCompatV2', 'true'),
     ('delta.universalFormat.enabledFormats', 'iceberg')]
    """
    upgraded = {**configuration, COMPAT_V2: "true"}
    if COMPAT_V1 in upgraded:
        upgraded[COMPAT_V1] = "false"
    formats = enabled_formats(configuration)
    if "iceberg" not in formats:
        upgraded[ENABLED_FORMATS] = ",".join([*formats, "iceberg"])
    if str(configuration.get(MAPPING_MODE, "none")).lower() == "none":
        upgraded[MAPPING_MODE] = "name"
    if DELETION_VECTORS in upgraded:
        upgraded[DELETION_VECTORS] = "false"
    return upgraded


def compat_problems(configuration: Mapping[str, str], schema_string: str) -> list[str]:
    """Why the table breaks IcebergCompatV2 or UniForm's rules (empty: it keeps them, or asks for
    neither), each naming the property, the column or the type.

    >>> compat_problems({COMPAT_V2: "true", MAPPING_MODE: "name"}, "")
    []
    >>> with_vectors = {COMPAT_V2: "true", MAPPING_MODE: "name", DELETION_VECTORS: "true"}
    >>> print(*compat_problems(with_vectors, ""))  # doctest: +ELLIPSIS
    delta.enableIcebergCompatV2 needs deletion vectors off (delta.enableDeletionVectors=true): ...
    >>> compat_problems({ENABLED_FORMATS: "iceberg"}, "")
    ['delta.universalFormat.enabledFormats=iceberg needs delta.enableIcebergCompatV2=true']
    """
    problems: list[str] = []
    formats = enabled_formats(configuration)
    for name in formats:
        if name != "iceberg":
            problems.append(f"{ENABLED_FORMATS}={name} (only iceberg is written)")
    if "iceberg" in formats and not compat_v2(configuration):
        problems.append(f"{ENABLED_FORMATS}=iceberg needs {COMPAT_V2}=true")
    if not compat_v2(configuration):
        return problems
    if _true(configuration, COMPAT_V1):
        problems.append(f"{COMPAT_V2} cannot be used with {COMPAT_V1}")
    if str(configuration.get(MAPPING_MODE, "none")).lower() not in ("name", "id"):
        problems.append(f"{COMPAT_V2} needs column mapping ({MAPPING_MODE}=name or id)")
    if _true(configuration, DELETION_VECTORS):
        problems.append(
            f"{COMPAT_V2} needs deletion vectors off ({DELETION_VECTORS}=true): "
            "Iceberg v2 readers cannot apply them"
        )
    if schema_string:
        problems.extend(type_problems(json.loads(schema_string)))
    return problems


def type_problems(schema: Mapping[str, Any]) -> list[str]:
    """The columns whose types IcebergCompatV2 (or this writer's side of it) does not allow.

    >>> for problem in type_problems({"type": "struct", "fields": [{"name": "a", "type": "long"},
    ...     {"name": "tags", "type": {"type": "array", "elementType": "string"}},
    ...     {"name": "v", "type": "variant"}]}):
    ...     print(problem)
    column `tags` is an array: Iceberg ids for its element are not written yet
    column `v` is of type variant, which Iceberg v2 does not have
    """
    problems: list[str] = []
    for field in schema.get("fields", []):
        problems.extend(_field_problems(str(field["name"]), field["type"]))
    return problems


def _field_problems(name: str, data_type: object) -> list[str]:
    if isinstance(data_type, str):
        if data_type in _ALLOWED or data_type.startswith("decimal"):
            return []
        return [f"column `{name}` is of type {data_type}, which Iceberg v2 does not have"]
    node: dict[str, Any] = data_type if isinstance(data_type, dict) else {}
    kind = node.get("type")
    if kind == "struct":
        problems: list[str] = []
        for field in node.get("fields", []):
            problems.extend(_field_problems(f"{name}.{field['name']}", field["type"]))
        return problems
    what = {
        "array": "an array: Iceberg ids for its element",
        "map": "a map: Iceberg ids for its key and value",
    }
    if kind in what:
        return [f"column `{name}` is {what[kind]} are not written yet"]
    return [f"column `{name}` is of type {kind}, which Iceberg v2 does not have"]


# The table's Delta properties naming the Iceberg REST catalog it is registered in, and its name
# there (``uniform.catalog`` keeps it current there after each commit).
REGISTERED_IN = "deltamerge.iceberg.catalog"
REGISTERED_AS = "deltamerge.iceberg.identifier"


@dataclass(frozen=True)
class Registration:
    """Where a table is registered: a catalog of the profile and ``(namespace, name)`` there."""

    catalog: str
    identifier: tuple[str, str]

    def __str__(self) -> str:
        return ".".join((self.catalog, *self.identifier))


def registration(configuration: Mapping[str, str]) -> Registration | None:
    """Where the table's properties say it is registered (None: in no Iceberg catalog).

    >>> registration({REGISTERED_IN: "lake", REGISTERED_AS: "sales.orders"})
    Registration(catalog='lake', identifier=('sales', 'orders'))
    """
    catalog, name = configuration.get(REGISTERED_IN), configuration.get(REGISTERED_AS)
    if not catalog or not name or "." not in name:
        return None
    namespace, table = name.rsplit(".", 1)
    return Registration(catalog, (namespace, table))


def registration_properties(catalog: str, namespace: str, name: str) -> dict[str, str]:
    """The Delta properties registering a table as ``catalog.namespace.name``."""
    return {REGISTERED_IN: catalog, REGISTERED_AS: f"{namespace}.{name}"}
