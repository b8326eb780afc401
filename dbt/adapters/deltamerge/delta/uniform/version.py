"""A Delta version as the Iceberg side sees it, and the names and ids drawn from it.

Every name and id of a version's Iceberg files follows from the table's uuid and the Delta
version, so two writers converting the same version name everything alike.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.iceberg_compat import ICEBERG_METADATA_FOLDER

# The snapshot summary's and table properties' names for the Delta version shown (Delta's converter's).
DELTA_VERSION = "delta-version"
DELTA_TIMESTAMP = "delta-timestamp"


@dataclass(frozen=True)
class DeltaVersion:
    """What one Delta version holds and changed, as the Iceberg side needs it.

    ``adds``/``removed`` are the commit's (paths as the log spells them); with ``full`` the adds
    are every live file of the version and the Iceberg snapshot replaces whatever was there.
    """

    version: int
    timestamp_ms: int
    root: str  # the table's location: a local path or an object-store URI
    table_id: str  # Delta's metaData.id
    schema: T.StructType
    partition_columns: list[str]
    configuration: Mapping[str, str]
    adds: Sequence[Mapping[str, Any]] = ()
    removed: frozenset[str] = frozenset()
    full: bool = False


def metadata_folder(root: str) -> str:
    """Where a table's Iceberg metadata lives (``<table>/metadata``, as Delta's converter writes it)."""
    return f"{root.rstrip('/')}/{ICEBERG_METADATA_FOLDER}"


def metadata_name(table_uuid: str, version: int) -> str:
    """The metadata file of Delta version ``version``: ``v<N>-<uuid>.metadata.json`` (a uuid of the
    table's and the version, so every writer names it alike).

    >>> metadata_name("9a1b4c1e-0000-4000-8000-000000000000", 3)
    'v3-44189ded-0790-53d1-81aa-90e373a07547.metadata.json'
    """
    return f"v{version}-{uuid.uuid5(uuid.UUID(table_uuid), str(version))}.metadata.json"


def snapshot_id(table_uuid: str, version: int) -> int:
    """Iceberg's snapshot id of Delta version ``version``: positive, 63 bits, the same for every writer."""
    digest = hashlib.sha256(f"{table_uuid}:{version}".encode()).digest()
    return int.from_bytes(digest[:8], "big") & ((1 << 63) - 1) or 1
