"""Catalog binding: ``<schema>.<identifier>`` in Spark's catalog reads one Delta version.

Spark without Delta's jars cannot read a Delta table. Each bound version gets a folder of hard
links to exactly its live files (Spark's partition folders) and an external ``USING parquet``
entry with the Delta schema over it; files with deletion vectors are linked as they are and the
entry is a view leaving their deleted rows out (``binding_view``); a file of a table that maps
column names is a copy of its live rows (``binding_copies``). With Delta's jars: ``USING delta``.
The binding root is ``<table>/_deltamerge_catalog/`` for our tables, and for a table registered
by its location ``<warehouse>/_deltamerge_catalog/<hash of its path>/`` (nothing written into it;
the table's own where hard links cannot reach); the entry records it (``deltamerge.bindings``).
Binders of one root take turns (a lock file in it): one that waited binds only a newer version.
"""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge import binding_view
from dbt.adapters.deltamerge.binding_copies import COPIES_DIR, live_copies
from dbt.adapters.deltamerge.common.sql import column_definitions, quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import storage
from dbt.adapters.deltamerge.delta.faults import crash_point
from dbt.adapters.deltamerge.delta.mapping import mapping_mode
from dbt.adapters.deltamerge.delta.paths import local_path, partition_folder, table_path_of
from dbt.adapters.deltamerge.delta.schema import schema_from_json
from dbt.adapters.deltamerge.delta.snapshot import AddFile, Snapshot
from dbt.adapters.deltamerge.spark.metastore import recover_partitions

BINDINGS_DIR = "_deltamerge_catalog"
LOCATION_PROPERTY = "deltamerge.location"
VERSION_PROPERTY = "deltamerge.version"
ROOT_PROPERTY = "deltamerge.bindings"
# Versions whose link folders stay, so a query planned just before a rebind still reads.
KEEP_BINDINGS = 2
# The embedded (Derby) metastore's column sizes: longer descriptions stay whole in the Delta
# log and are cut in the catalog copy only.
COLUMN_COMMENT_LIMIT = 256
TABLE_COMMENT_LIMIT = 4000


def table_name(schema: str, identifier: str) -> str:
    """``schema.identifier`` quoted."""
    return f"{quote_identifier(schema)}.{quote_identifier(identifier)}"


def delta_jars_available(spark: SparkSession) -> bool:
    """Whether this session has Delta's Spark extension loaded."""
    return "DeltaSparkSessionExtension" in (spark.conf.get("spark.sql.extensions", "") or "")


class Binding(NamedTuple):
    """This adapter's catalog entry of a Delta table, as ``SHOW TBLPROPERTIES`` gives it."""

    table_path: str
    version: int | None  # the Delta version the entry reads
    properties: Mapping[str, str]  # all of them: ``bind`` keeps the entry's root and files table


def binding(spark: SparkSession, schema: str, identifier: str) -> Binding | None:
    """The catalog entry of ``schema.identifier``, or None if there is none or it is not ours."""
    # One round trip (it counts on a Spark Connect server): a missing table is Spark's error.
    props = _properties(spark, schema, identifier)
    location = props.get(LOCATION_PROPERTY)
    if location is None:
        return None
    version = props.get(VERSION_PROPERTY)
    return Binding(location, int(version) if version is not None and version.isdigit() else None, props)


def listed(information: str) -> Binding | None:
    r"""The catalog entry a ``SHOW TABLE EXTENDED`` text describes (dbt's relation cache keeps it),
    or None when the entry is not ours; raises ``ValueError`` when the text does not tell.

    Spark lists the properties sorted, as ``[k=v, k=v]``, and ours (``deltamerge.*``) next to each
    other. The version must be digits and, for a table (not a view), its folder's: a text that
    does not pass is read again by ``binding``.

    >>> text = "Table: t\nTable Properties: [deltamerge.location=/w/s.db/t, deltamerge.version=7]\n"
    >>> found = listed(text + "Location: file:/w/s.db/t/_deltamerge_catalog/v00000000000000000007\n")
    >>> found.table_path, found.version
    ('/w/s.db/t', 7)
    >>> listed("Table: t\nTable Properties: [owner=x]\nLocation: file:/w/t\n") is None
    True
    """
    lines = dict(line.split(": ", 1) for line in information.splitlines() if ": " in line)
    if "Table" not in lines:
        raise ValueError("not a SHOW TABLE EXTENDED text")
    listing = lines.get("Table Properties", "[]")
    if not listing.startswith("[") or not listing.endswith("]"):
        raise ValueError(f"table properties listed as {listing!r}")
    keys = list(re.finditer(r"(?:^|, )(deltamerge\.[a-z_]+)=", listing[1:-1]))
    props = {
        m.group(1): listing[1:-1][m.end() : keys[i + 1].start() if i + 1 < len(keys) else None]
        for i, m in enumerate(keys)
    }
    if LOCATION_PROPERTY not in props:
        return None
    version = props.get(VERSION_PROPERTY, "")
    folder = os.path.basename(lines.get("Location", ""))
    if not version.isdigit() or ("Location" in lines and folder != f"v{int(version):020d}"):
        raise ValueError(f"version {version!r} bound at {folder!r}")
    return Binding(props[LOCATION_PROPERTY], int(version), props)


def _is_missing(error: AnalysisException) -> bool:
    return error.getCondition() in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND")


def refresh(
    spark: SparkSession, *, schema: str, identifier: str, table_path: str, version: int | None
) -> bool:
    """Re-bind when other writers committed after ``version``; True if it was (new properties)."""
    from dbt.adapters.deltamerge.delta.commit import latest_version
    from dbt.adapters.deltamerge.delta.snapshot import load_snapshot

    if latest_version(table_path) == version:
        return False
    snapshot = load_snapshot(table_path)
    if snapshot is None:
        return False
    bind(spark, schema=schema, identifier=identifier, snapshot=snapshot)
    return True


def bind(
    spark: SparkSession,
    *,
    schema: str,
    identifier: str,
    snapshot: Snapshot,
    registering: bool = False,
    current: Mapping[str, str] | None = None,
) -> None:
    """Point ``schema.identifier`` at ``snapshot``'s version, replacing an earlier binding.

    ``registering``: an existing table is brought in by its location (links under the warehouse).
    ``current``: the entry's properties as the caller read them (empty: dbt's cache lists no such
    entry), not read again. Reader features no read here implements are refused first; a version
    whose files carry deletion vectors is bound as a view (``binding_view``).
    """
    snapshot.check_readable()
    crash_point("before_catalog_bind")
    name = table_name(schema, identifier)
    if current is None or registering:
        current = {} if registering else _properties(spark, schema, identifier)
    root = registered_root(spark, snapshot.table_path) if registering else _root(current, snapshot.table_path)
    # Links first: the entry is missing only for the statements that replace it.
    folder = None if delta_jars_available(spark) else link_version(spark, snapshot, root)
    if folder is not None and not folder.startswith(root + os.sep):
        root = bindings_root(snapshot.table_path)  # the warehouse is on another file system
    masked = folder is not None and binding_view.has_masks(folder)
    files = binding_view.files_identifier(identifier)
    props = (
        f"TBLPROPERTIES ('{LOCATION_PROPERTY}' = {string_literal(snapshot.table_path)}, "
        f"'{VERSION_PROPERTY}' = '{snapshot.version}'"
        + (
            f", '{ROOT_PROPERTY}' = {string_literal(root)}"
            if root != bindings_root(snapshot.table_path)
            else ""
        )
        + (f", '{binding_view.FILES_PROPERTY}' = {string_literal(files)}" if masked else "")
        + ")"
    )
    marker = rebinding_marker(snapshot.table_path, root)
    storage.make_dirs(os.path.dirname(marker))
    with storage.exclusive_lock(os.path.join(os.path.dirname(marker), ".binding.lock")) as waited:
        if waited and _bound_since(spark, schema, identifier, snapshot):
            return  # another process bound this version, or a newer one, while this one waited
        storage.delete_file(marker, missing_ok=True)  # left by an interrupted bind
        storage.write_durably(marker, f"{schema}.{identifier}".encode())
        spark.sql(f"DROP TABLE IF EXISTS {name}")  # a table or a view
        crash_point("mid_catalog_bind")
        if masked or current.get(binding_view.FILES_PROPERTY):
            spark.sql(f"DROP TABLE IF EXISTS {table_name(schema, files)}")
        if folder is None:
            location = string_literal(snapshot.table_path)
            spark.sql(f"CREATE TABLE {name} USING delta LOCATION {location} {props}")
            storage.delete_file(marker, missing_ok=True)
            return
        description = snapshot.metadata.description
        comment = f"COMMENT {string_literal(description[:TABLE_COMMENT_LIMIT])}" if description else ""
        columns = _catalog_schema(schema_from_json(snapshot.metadata.schema_string))
        if masked:
            files_of = f"{schema}.{identifier}"
            files_props = f"TBLPROPERTIES ('{binding_view.FILES_OF_PROPERTY}' = {string_literal(files_of)})"
            _create_files_table(spark, table_name(schema, files), snapshot, columns, folder, "", files_props)
            spark.sql(
                binding_view.view_statement(name, table_name(schema, files), folder, columns, comment, props)
            )
        else:
            _create_files_table(spark, name, snapshot, columns, folder, comment, props)
        storage.delete_file(marker, missing_ok=True)
    prune_bindings(root, keep=KEEP_BINDINGS)


def _bound_since(spark: SparkSession, schema: str, identifier: str, snapshot: Snapshot) -> bool:
    props = _properties(spark, schema, identifier)
    version = props.get(VERSION_PROPERTY, "")
    same = props.get(LOCATION_PROPERTY) == snapshot.table_path
    return same and version.isdigit() and int(version) >= snapshot.version


def _create_files_table(
    spark: SparkSession,
    name: str,
    snapshot: Snapshot,
    schema: T.StructType,
    folder: str,
    comment: str,
    props: str,
) -> None:
    """``CREATE TABLE name`` over a version folder, typed by ``schema``, partitions registered."""
    columns = column_definitions(schema)
    partitioned = (
        f"PARTITIONED BY ({', '.join(quote_identifier(c) for c in snapshot.partition_columns)})"
        if snapshot.partition_columns
        else ""
    )
    spark.sql(
        f"CREATE TABLE {name} ({columns}) USING parquet {partitioned} "
        f"LOCATION {string_literal(folder)} {comment} {props}"
    )
    if snapshot.partition_columns:
        recover_partitions(spark, name, len({frozenset(f.partition_values.items()) for f in snapshot.files}))


def bindings_root(table_path: str) -> str:
    """The binding root inside a table (the tables this adapter writes)."""
    return os.path.join(table_path, BINDINGS_DIR)


def registered_root(spark: SparkSession, table_path: str) -> str:
    """The binding root under the warehouse of a table registered by its location."""
    warehouse = table_path_of(spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse")
    digest = hashlib.sha256(os.path.normpath(table_path).encode()).hexdigest()[:24]
    return os.path.join(warehouse, BINDINGS_DIR, digest)


def _properties(spark: SparkSession, schema: str, identifier: str) -> dict[str, str]:
    """The catalog entry's table properties; none when there is no entry."""
    try:
        rows = spark.sql(f"SHOW TBLPROPERTIES {table_name(schema, identifier)}").collect()
    except AnalysisException as error:
        if _is_missing(error):
            return {}
        raise
    return {str(r[0]): str(r[1]) for r in rows}


def _root(current: Mapping[str, str], table_path: str) -> str:
    """Where a table's link folders go: kept from its current entry (``current``, its properties),
    else inside the table (``bindings_root``)."""
    if current.get(LOCATION_PROPERTY) == table_path and current.get(ROOT_PROPERTY):
        return current[ROOT_PROPERTY]
    return bindings_root(table_path)


def rebinding_marker(table_path: str, root: str | None = None) -> str:
    """The file that exists while ``bind`` replaces a catalog entry (its name inside).

    A process killed between dropping and re-creating the entry leaves it: the next statement
    on that name binds the table again, where a table the user dropped stays dropped.
    """
    return os.path.join(root or bindings_root(table_path), ".rebinding")


def interrupted_binding(table_path: str, schema: str, identifier: str) -> bool:
    """Whether a re-binding of ``schema.identifier`` to ``table_path`` was interrupted."""
    try:
        named = storage.read_bytes(rebinding_marker(table_path)).decode()
    except storage.StorageError:
        return False
    return named.lower() == f"{schema}.{identifier}".lower()


def _catalog_schema(schema: T.StructType) -> T.StructType:
    """``schema`` with column comments cut to what the metastore stores."""
    return T.StructType(
        [
            T.StructField(
                f.name,
                f.dataType,
                f.nullable,
                {**f.metadata, "comment": f.metadata["comment"][:COLUMN_COMMENT_LIMIT]}
                if isinstance(f.metadata.get("comment"), str)
                else f.metadata,
            )
            for f in schema.fields
        ]
    )


def link_version(spark: SparkSession, snapshot: Snapshot, root: str | None = None) -> str:
    """Build (once) the folder of ``snapshot``'s live files under ``root``; return its path.

    A file is a hard link to the data file (with its deleted rows in the folder's masks,
    ``binding_view``), or, when Spark's parquet reader cannot read it as it is (the table maps
    column names, or a ``_metadata`` column hides what the masks need), a hard link to a copy
    of its live rows under the schema's names. Copies are made once per logical file, in
    ``COPIES_DIR``, and dropped with the last version folder that links them. A root the
    table's files cannot be linked into (another file system) gives way to the table's own.
    """
    root = root or bindings_root(snapshot.table_path)
    folder = os.path.join(root, f"v{snapshot.version:020d}")
    if storage.is_dir(folder):
        return folder
    # Its own staging folder: two runs may bind one version at once (the first rename wins).
    building = f"{folder}.{uuid.uuid4().hex}.building"
    storage.make_new_dir(building)
    mapped = mapping_mode(snapshot.metadata.configuration) != "none"
    masked = not mapped and binding_view.can_mask(snapshot.schema)
    copied = [f for f in snapshot.files if mapped or (f.deleted_rows and not masked)]
    copies = live_copies(spark, snapshot, copied, root)
    vectors = []
    for target, source, file in _links(snapshot, masked):
        storage.make_dirs(os.path.dirname(os.path.join(building, target)))
        if file.path not in copies and file.deleted_rows:
            vectors.append((os.path.basename(target), file.deleted_rows))
        try:
            if file.path in copies:
                _link_copy(spark, snapshot, file, root, copies[file.path], os.path.join(building, target))
            else:
                storage.link(source, os.path.join(building, target))
        except storage.CrossDeviceLink:
            storage.delete_tree(building)
            return link_version(spark, snapshot, bindings_root(snapshot.table_path))
    if vectors:
        binding_view.write_masks(building, vectors)
    try:
        storage.rename(building, folder)
    except storage.StorageError:
        if not storage.is_dir(folder):
            raise
        storage.delete_tree(building)  # another run built the same folder first
    return folder


def _link_copy(
    spark: SparkSession, snapshot: Snapshot, file: AddFile, root: str, copy: str, target: str
) -> None:
    """Link ``target`` to ``copy``, the copy of ``file``'s live rows, making it again if it went.

    Until this link a copy's only name is its own, and a concurrent run's ``prune_bindings``
    removes such copies (no folder of its own links them): the copy is then made again, a few
    times at most (each window is one link long).
    """
    for attempt in range(_COPY_ATTEMPTS):
        try:
            storage.link(copy, target)
            return
        except storage.CrossDeviceLink:
            raise
        except storage.StorageError:
            if storage.is_file(copy) or attempt == _COPY_ATTEMPTS - 1:
                raise
        (copy,) = live_copies(spark, snapshot, [file], root).values()


_COPY_ATTEMPTS = 3


def _links(snapshot: Snapshot, masked: bool) -> Iterable[tuple[str, str, AddFile]]:
    used: set[str] = set()
    columns = snapshot.partition_columns
    for file in snapshot.files:
        source = local_path(snapshot.table_path, file.path)
        folder = partition_folder(columns, file.partition_values) if columns else ""
        name = binding_view.link_name(
            os.path.basename(source), used, plain=masked and bool(file.deleted_rows)
        )
        yield os.path.join(folder, name), source, file


def prune_bindings(root: str, *, keep: int) -> None:
    """Remove all but the newest ``keep`` link folders of a binding root (links only; data files
    stay), staging folders of older versions (left by killed runs), and the live copies no
    remaining folder links (a copy's only name left is its own)."""
    names = storage.list_names(root)
    folders = sorted(n for n in names if n.startswith("v") and "." not in n)
    for name in folders[:-keep]:
        storage.delete_tree(os.path.join(root, name))
    oldest_kept = folders[-keep:][0] if folders else ""
    for name in names:
        if name.startswith("v") and name.endswith(".building") and name.split(".")[0] < oldest_kept:
            storage.delete_tree(os.path.join(root, name))
    copies = os.path.join(root, COPIES_DIR)
    for name in storage.list_names(copies):
        path = os.path.join(copies, name)
        if name.endswith(".parquet") and storage.link_count(path) == 1:
            storage.delete_file(path, missing_ok=True)
