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
A table that maps column names is read by its physical names, renamed (nested types cast) to the
logical ones in the view; its partition values must be inside its files (IcebergCompatV2's
tables, UniForm models), as its folders need not name them (``bindable``).
Nothing is written outside the table's prefix; pruning is ``links.prune_bindings``'s.
"""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from pyspark.sql import types as T

from dbt.adapters.deltamerge.binding import view as binding_view
from dbt.adapters.deltamerge.binding.record import view_record
from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal, type_sql
from dbt.adapters.deltamerge.delta import Snapshot, TableLocation, escape_partition_value, local_path, storage
from dbt.adapters.deltamerge.delta.log import compat_v2, mapping_mode, physical_name, physical_type

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
    CAST(nullif(url_decode(replace(url_decode(replace(regexp_extract(_dm_rows._metadata.file_path,
    '^\\Qs3a://l/t\\E/(?:.*/)?\\Qday\\E=([^/]*)/[^/]*$', 1), '+', '%2B')), '+', '%2B')),
    '__HIVE_DEFAULT_PARTITION__') AS DATE)
    """
    folder_name = quote(escape_partition_value(column), safe=_URI_SAFE)
    pattern = f"^\\Q{spark_uri(table.path)}\\E/(?:.*/)?\\Q{folder_name}\\E=([^/]*)/[^/]*$"
    raw = f"regexp_extract(_dm_rows._metadata.file_path, {string_literal(pattern)}, 1)"
    decoded = f"url_decode(replace(url_decode(replace({raw}, '+', '%2B')), '+', '%2B'))"
    return f"CAST(nullif({decoded}, '__HIVE_DEFAULT_PARTITION__') AS {data_type.simpleString().upper()})"


def bindable(snapshot: Snapshot) -> bool:
    """Whether a view over the manifest's files reads every column of ``snapshot``'s table: a table
    that maps column names needs its partition values inside its files (IcebergCompatV2 keeps
    them there), as its folders need not name them; others take them from the folder names."""
    mapped = mapping_mode(snapshot.metadata.configuration) != "none"
    return not mapped or not snapshot.partition_columns or compat_v2(snapshot.metadata.configuration)


def files_columns(snapshot: Snapshot, schema: T.StructType) -> T.StructType:
    """The columns of the files table, as the data files hold them: physical names and types in a
    table that maps column names (every column, partition values included), else the data columns
    by name (partition values come from the folder names)."""
    if mapping_mode(snapshot.metadata.configuration) != "none":
        return T.StructType(
            [T.StructField(physical_name(f), physical_type(f.dataType), f.nullable) for f in schema.fields]
        )
    partitions = set(snapshot.partition_columns)
    return T.StructType([f for f in schema.fields if f.name not in partitions])


def _selected(snapshot: Snapshot, field: T.StructField) -> str:
    """The view's SQL of one column: by its physical name (a nested type cast to the logical
    names, field by field in order) in a table that maps names, from the folder name for a
    partition column of another, else by name."""
    name = quote_identifier(field.name)
    if mapping_mode(snapshot.metadata.configuration) != "none":
        stored = f"_dm_rows.{quote_identifier(physical_name(field))}"
        if physical_type(field.dataType) == field.dataType:
            return f"{stored} AS {name}"
        return f"CAST({stored} AS {type_sql(field.dataType)}) AS {name}"
    if field.name in snapshot.partition_columns:
        return f"{partition_value(snapshot.location, field.name, field.dataType)} AS {name}"
    return f"_dm_rows.{name}"


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
    columns = binding_view.view_columns(schema)
    selected = ", ".join(_selected(snapshot, f) for f in schema.fields)
    statement = (
        f"CREATE VIEW {name} ({columns}) {comment} {properties} AS {view_record(folder)}"
        f"SELECT {selected} FROM {files_name} _dm_rows"
    )
    if not masked:
        return statement
    masks = quote_identifier(os.path.join(folder, binding_view.MASKS_DIR))
    return (
        f"{statement} LEFT JOIN parquet.{masks} _dm_masks ON _dm_masks.file = _dm_rows._metadata.file_path "
        "AND _dm_masks.block = shiftright(_dm_rows._metadata.row_index, 6) "
        "WHERE _dm_masks.mask IS NULL "
        "OR (shiftrightunsigned(_dm_masks.mask, CAST(_dm_rows._metadata.row_index & 63 AS INT)) & 1) = 0"
    )
