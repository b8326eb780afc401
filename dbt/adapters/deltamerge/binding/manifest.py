"""Catalog binding on an object store: a version's live files named by Spark's file-sink manifest.

An object store has no hard links. Spark's own answer to "read exactly these files" is the
manifest its streaming file sink keeps: a folder holding ``_spark_metadata/<n>`` (a ``v1`` line,
then one JSON line per file with its absolute URI) is listed from that manifest, not from the
store (``MetadataLogFileIndex``). Each bound version gets such a folder,
``<table>/_deltamerge_catalog/v<version>/`` (measured on Spark 4.2 with the Hive metastore over
S3A: exactly the listed files are read, wherever they lie). The files table over it reads with
``recursiveFileLookup`` (no partition inference: our files lie in ``w<uuid>/`` folders, other
writers' elsewhere), and the catalog entry is always a view (``view_statement``) that takes each
partition value from its file's path (the ``k=v`` folder every Delta writer names a file under)
and, where files carry deletion vectors, leaves their deleted rows out by a join with the masks,
keyed here by the file's URI as Spark reports it (names repeat across partition folders).
Nothing is written outside the table's prefix; pruning is ``links.prune_bindings``'s.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from pyspark.sql import types as T

from dbt.adapters.deltamerge.binding import view as binding_view
from dbt.adapters.deltamerge.binding.record import view_record
from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import Snapshot, TableLocation, escape_partition_value, local_path, storage

MANIFEST_DIR = "_spark_metadata"
# Characters java.net.URI keeps in a path as they are (Hadoop's Path.toUri().toString()).
_URI_SAFE = "/=:@!$&'()*+,;-._~"
# Spark's folder-size hint for a manifest entry (used for split planning only).
_BLOCK_SIZE = 32 * 2**20


def spark_uri(path: str) -> str:
    """A file's URI as Spark reports it (``_metadata.file_path``): the path part URI-encoded.

    >>> spark_uri("s3a://lake/t/w1/k=a b%3A/p.parquet")
    's3a://lake/t/w1/k=a%20b%253A/p.parquet'
    """
    scheme, _, rest = path.partition("://")
    bucket, _, key = rest.partition("/")
    return f"{scheme}://{bucket}/{quote(key, safe=_URI_SAFE)}"


def manifest_text(snapshot: Snapshot) -> bytes:
    """The ``_spark_metadata/0`` of ``snapshot``'s live files (Spark's ``FileStreamSinkLog`` v1)."""
    lines = ["v1"]
    for file in snapshot.files:
        lines.append(
            json.dumps(
                {
                    "path": spark_uri(local_path(snapshot.table_path, file.path)),
                    "size": file.size,
                    "isDir": False,
                    "modificationTime": 0,  # not in the log; Spark plans without it
                    "blockReplication": 1,
                    "blockSize": _BLOCK_SIZE,
                    "action": "add",
                },
                separators=(",", ":"),
            )
        )
    return "\n".join(lines).encode("utf-8")


def manifest_version(snapshot: Snapshot, root: str) -> str:
    """Write (once) the folder of ``snapshot``'s version under ``root``: its manifest and, when
    files carry deletion vectors, the masks keyed by file URI; return the folder."""
    folder, stores = os.path.join(root, f"v{snapshot.version:020d}"), snapshot.location.stores
    vectors = [
        (spark_uri(local_path(snapshot.table_path, f.path)), f.deleted_rows)
        for f in snapshot.files
        if f.deleted_rows
    ]
    if vectors and not storage.is_file(stores, os.path.join(folder, binding_view.MASKS_DIR, "masks.parquet")):
        binding_view.write_masks(stores, folder, vectors)
    # The manifest last: a folder is complete once it has one (the same bytes from any binder).
    storage.put_if_absent(stores, os.path.join(folder, MANIFEST_DIR, "0"), manifest_text(snapshot))
    return folder


def files_table_statement(name: str, data: T.StructType, folder: str, properties: str) -> str:
    """``CREATE TABLE`` of the files a manifest folder names, typed by the data columns only."""
    from dbt.adapters.deltamerge.common.sql import column_definitions

    return (
        f"CREATE TABLE {name} ({column_definitions(data)}) USING parquet "
        f"OPTIONS (recursiveFileLookup 'true') LOCATION {string_literal(folder)} {properties}"
    )


def partition_value(table: TableLocation, column: str, data_type: T.DataType) -> str:
    r"""The SQL of a partition column's value from the row's file URI: the ``column=value`` folder
    under the table, decoded twice (the URI's encoding, then Hive's escaping; ``+`` is kept), the
    Hive null folder as NULL, cast to the column's type.

    >>> table = TableLocation.of("s3a://l/t")
    >>> print(partition_value(table, "day", T.DateType()))  # doctest: +NORMALIZE_WHITESPACE
    CAST(nullif(url_decode(replace(url_decode(replace(regexp_extract(d._metadata.file_path,
    '^\\Qs3a://l/t\\E/(?:.*/)?\\Qday\\E=([^/]*)/[^/]*$', 1), '+', '%2B')), '+', '%2B')),
    '__HIVE_DEFAULT_PARTITION__') AS DATE)
    """
    folder_name = quote(escape_partition_value(column), safe=_URI_SAFE)
    pattern = f"^\\Q{spark_uri(table.path)}\\E/(?:.*/)?\\Q{folder_name}\\E=([^/]*)/[^/]*$"
    raw = f"regexp_extract(d._metadata.file_path, {string_literal(pattern)}, 1)"
    decoded = f"url_decode(replace(url_decode(replace({raw}, '+', '%2B')), '+', '%2B'))"
    return f"CAST(nullif({decoded}, '__HIVE_DEFAULT_PARTITION__') AS {data_type.simpleString().upper()})"


def view_statement(
    name: str,
    files_name: str,
    snapshot: Snapshot,
    folder: str,
    schema: T.StructType,
    comment: str,
    properties: str,
    *,
    masked: bool,
) -> str:
    """``CREATE VIEW name`` over the files table: the Delta schema's columns in order, partition
    values from the files' paths, and without the rows the masks delete (``masked``)."""
    partitions = set(snapshot.partition_columns)
    columns = binding_view.view_columns(schema)
    selected = ", ".join(
        f"{partition_value(snapshot.location, f.name, f.dataType)} AS {quote_identifier(f.name)}"
        if f.name in partitions
        else f"d.{quote_identifier(f.name)}"
        for f in schema.fields
    )
    statement = (
        f"CREATE VIEW {name} ({columns}) {comment} {properties} AS {view_record(folder)}"
        f"SELECT {selected} FROM {files_name} d"
    )
    if not masked:
        return statement
    masks = quote_identifier(os.path.join(folder, binding_view.MASKS_DIR))
    return (
        f"{statement} LEFT JOIN parquet.{masks} m ON m.file = d._metadata.file_path "
        "AND m.block = shiftright(d._metadata.row_index, 6) "
        "WHERE m.mask IS NULL "
        "OR (shiftrightunsigned(m.mask, CAST(d._metadata.row_index & 63 AS INT)) & 1) = 0"
    )
