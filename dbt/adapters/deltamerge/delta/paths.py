"""File paths in a Delta table: URI-encoded ``add.path`` and Hive-style partition folders.

Two encodings meet here. On disk, partition folders use Spark's (Hive's) escaping of
``col=value`` names; in the log, ``add.path`` is a URI reference, so that folder name is
URI-encoded once more (``%3A`` on disk is ``%253A`` in the log). A ``remove`` must repeat
its ``add`` path byte for byte, so paths read from the log are never re-encoded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from urllib.parse import quote, unquote

from dbt.adapters.deltamerge.common.store_options import is_object_uri, refused_scheme
from dbt.adapters.deltamerge.delta.errors import StorageError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

# Spark's ExternalCatalogUtils.charToEscape.
_ESCAPE = {chr(c) for c in range(0x01, 0x20)} | set("\"#%'*/:=?\\\x7f{[]^")


def escape_partition_value(value: str | None) -> str:
    """A partition value as Spark names its folder.

    >>> escape_partition_value("2026-01-01 10:00:00")
    '2026-01-01 10%3A00%3A00'
    >>> escape_partition_value(None)
    '__HIVE_DEFAULT_PARTITION__'
    """
    if value is None or value == "":
        return HIVE_NULL
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in value)


def unescape_partition_value(text: str) -> str | None:
    """Inverse of :func:`escape_partition_value`.

    >>> unescape_partition_value("a%3Ab")
    'a:b'
    """
    if text == HIVE_NULL:
        return None
    return unquote(text)


def partition_folder(columns: list[str], values: Mapping[str, str | None]) -> str:
    """The relative folder ``c1=v1/c2=v2`` for a partition, in Spark's escaping.

    >>> partition_folder(["day", "tag"], {"day": "2026-01-01", "tag": None})
    'day=2026-01-01/tag=__HIVE_DEFAULT_PARTITION__'
    """
    return "/".join(f"{escape_partition_value(c)}={escape_partition_value(values[c])}" for c in columns)


def parse_partition_folder(relative_dir: str, columns: list[str] | None = None) -> dict[str, str | None]:
    """Partition values from a relative folder written by Spark (or ``SHOW PARTITIONS`` text).

    With ``columns``, exactly those (matched case-insensitively, None where absent); without,
    every ``key=value`` part in order.

    >>> parse_partition_folder("p=x%3Ay/q=__HIVE_DEFAULT_PARTITION__", ["p", "q"])
    {'p': 'x:y', 'q': None}
    >>> parse_partition_folder("day=2026-01-01/tag=a%3Ab")
    {'day': '2026-01-01', 'tag': 'a:b'}
    """
    parts = [p for p in relative_dir.split("/") if p]
    found: dict[str, str | None] = {}
    for part in parts:
        key, _, value = part.partition("=")
        found[unescape_partition_value(key) or key] = unescape_partition_value(value)
    if columns is None:
        return found
    lowered = {k.lower(): v for k, v in found.items()}
    return {c: lowered.get(c.lower()) for c in columns}


def encode_add_path(relative_path: str) -> str:
    """``add.path`` for a file at ``relative_path`` (an on-disk relative path).

    >>> encode_add_path("ts=2026-01-01 10%3A00/part-0.parquet")
    'ts=2026-01-01%2010%253A00/part-0.parquet'
    """
    return quote(relative_path, safe="/=")


def local_path(root: str, add_path: str) -> str:
    """The file an ``add.path`` (relative, or an absolute URI) refers to in the table at ``root``
    (text only: no store is asked): a local path, or an object-store URI for a table on one.

    >>> local_path("s3a://lake/t", "k=a%20b/part-0.parquet"), local_path("/w/t", "file:/x/p.parquet")
    ('s3a://lake/t/k=a b/part-0.parquet', '/x/p.parquet')
    """
    if add_path.startswith("file:") or add_path.startswith("/") or is_object_uri(add_path):
        return table_path_of(add_path)
    return os.path.join(root, unquote(add_path))


def table_path_of(location: str) -> str:
    """A table's path from a location string: a local absolute path (from a plain path or a
    ``file:`` URI), or an object-store URI as given (no trailing slash).

    >>> table_path_of("file:/w/s.db/t"), table_path_of("s3://lake/wh/t/")
    ('/w/s.db/t', 's3://lake/wh/t')
    """
    if is_object_uri(location):
        return location.rstrip("/")
    refused = refused_scheme(location)
    if refused:
        raise StorageError(
            f"{location} is on {refused}, where a Delta commit cannot be made safely (no conditional "
            "create); use a local path, s3:// (or s3a://), gs:// or abfss://."
        )
    if location.startswith("file:"):
        location = "/" + unquote(location[len("file:") :]).lstrip("/")
    return os.path.abspath(location)
