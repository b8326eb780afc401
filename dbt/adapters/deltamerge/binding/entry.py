"""Catalog binding, the entry: ``<schema>.<identifier>`` in Spark's catalog reads one Delta version.

Spark without Delta's jars cannot read a Delta table. Each bound version gets a folder of hard
links to exactly its live files (Spark's partition folders) and an external ``USING parquet``
entry with the Delta schema over it; files with deletion vectors are linked as they are and the
entry is a view leaving their deleted rows out (``view``); a file of a table that maps
column names is a copy of its live rows (``copies``). Where the session has Delta's jars and
catalog: a ``USING delta`` entry at the table's location, registered once (``delta_catalog``).
The binding root is ``<table>/_deltamerge_catalog/`` for our tables, and for a table registered
by its location ``<warehouse>/_deltamerge_catalog/<hash of its path>/`` (nothing written into it;
the table's own where hard links cannot reach); the entry records it (``deltamerge.bindings``).
Binders of one root take turns (a lock file in it): one that waited binds only a newer version.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import NamedTuple

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.deltamerge.binding import manifest, record
from dbt.adapters.deltamerge.binding import view as binding_view
from dbt.adapters.deltamerge.binding.delta_catalog import (
    DELTA_ENTRY,
    delta_catalog,
    described,
    entry_location,
    register_statement,
)
from dbt.adapters.deltamerge.binding.links import (
    KEEP_BINDINGS,
    bindings_root,
    link_version,
    prune_bindings,
    rebinding_marker,
)
from dbt.adapters.deltamerge.binding.record import (
    BINDINGS_DIR,
    LOCATION_PROPERTY,
    ROOT_PROPERTY,
    VERSION_PROPERTY,
)
from dbt.adapters.deltamerge.common.sql import column_definitions, quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import (
    DeltaError,
    Snapshot,
    Stores,
    TableLocation,
    crash_point,
    storage,
    table_path_of,
)
from dbt.adapters.deltamerge.delta.log import schema_from_json
from dbt.adapters.deltamerge.spark.metastore import recover_partitions
from dbt.adapters.deltamerge.spark.view_text import make_room

# The embedded (Derby) metastore's column sizes: longer descriptions stay whole in the Delta
# log and are cut in the catalog copy only.
COLUMN_COMMENT_LIMIT = 256
TABLE_COMMENT_LIMIT = 4000


def table_name(schema: str, identifier: str) -> str:
    """``schema.identifier`` quoted."""
    return f"{quote_identifier(schema)}.{quote_identifier(identifier)}"


class Binding(NamedTuple):
    """A catalog entry of a Delta table: ours (as ``SHOW TBLPROPERTIES`` gives it), or where the
    session has Delta's catalog, a ``USING delta`` entry (``delta_entry``)."""

    location: TableLocation  # the table the entry reads (its store chosen here, once)
    version: int | None  # the Delta version the entry reads (None: a Delta entry reads the latest)
    properties: Mapping[str, str]  # all of them: ``bind`` keeps the entry's root and files table

    @property
    def table_path(self) -> str:
        """The table's path, as the catalog's properties and the binding root's record hold it."""
        return self.location.path

    @property
    def delta_entry(self) -> bool:
        """A ``USING delta`` entry, read by Delta's own reader (``delta_catalog``)."""
        return DELTA_ENTRY in self.properties


def _delta_entry(location: str, stores: Stores) -> Binding:
    path = record.shown_path(location) if location.startswith("file:") else table_path_of(location)
    return Binding(TableLocation.of(path, stores), None, {DELTA_ENTRY: path})


def binding(spark: SparkSession, schema: str, identifier: str, stores: Stores) -> Binding | None:
    """The catalog entry of ``schema.identifier``, or None if there is none or it is not a Delta
    table's: ours, or with Delta's catalog any ``USING delta`` entry; its table is reached through
    ``stores`` (the invocation's).

    One ``DESCRIBE TABLE EXTENDED`` (a round trip on a Spark Connect server); a view bound before
    views recorded their folder, one more (its files table's). Nothing is read from a property's
    value, which Spark may redact (``record``).
    """
    details = described(spark, table_name(schema, identifier))
    if details is None:
        return None
    if delta_catalog(spark):
        location = entry_location(details)
        if location is not None:
            return _delta_entry(location, stores)
        # else an entry of ours made before Delta's jars came: read below, bound anew when written
    if not record.marked(details):
        return None
    folder = record.entry_folder(details)
    if folder is None:  # a view bound before views recorded their folder: its files table's
        files = described(spark, table_name(schema, binding_view.files_identifier(identifier)))
        folder = record.entry_folder(files) if files is not None else None
    try:
        return _shown_binding(details, stores) if folder is None else _recorded(folder, details, stores)
    except ValueError as error:
        raise DeltaError(
            f"the catalog entry {schema}.{identifier} does not say which Delta version it reads: {error}"
        ) from error


def listed(information: str, stores: Stores, *, delta: bool = False) -> Binding | None:
    r"""The catalog entry a ``SHOW TABLE EXTENDED`` text describes (dbt's relation cache keeps it),
    its table reached through ``stores``, or None when the entry is not ours (with ``delta``,
    Delta's catalog: nor a ``USING delta`` entry); raises ``ValueError`` when the text does not
    tell (``binding`` reads it then).

    >>> text = "Table: t\nType: EXTERNAL\nTable Properties: [deltamerge.location=*********(redacted)]\n"
    >>> folder = "Location: file:/w/s.db/t/_deltamerge_catalog/v00000000000000000007\n"
    >>> found = listed(text + folder, Stores({}))
    >>> found.table_path, found.version
    ('/w/s.db/t', 7)
    >>> listed("Table: t\nTable Properties: [owner=x]\nLocation: file:/w/t\n", Stores({})) is None
    True
    >>> listed("Table: t\nProvider: delta\nLocation: file:/w/t\n", Stores({}), delta=True).delta_entry
    True
    """
    lines = dict(line.split(": ", 1) for line in information.splitlines() if ": " in line)
    if "Table" not in lines:
        raise ValueError("not a SHOW TABLE EXTENDED text")
    location = entry_location(lines) if delta else None
    if location is not None:
        return _delta_entry(location, stores)
    if not record.marked(lines):
        return None
    folder = record.entry_folder(lines)
    if folder is None:
        return _shown_binding(lines, stores)  # a view bound before views recorded their folder
    return _recorded(folder, lines, stores)


def _recorded(folder: str, details: Mapping[str, str], stores: Stores) -> Binding:
    """The binding an entry of ours records: its version folder's version, root and table."""
    root, version = record.folder_version(folder)
    table_path = record.table_of(root, details, stores)
    props = {LOCATION_PROPERTY: table_path, VERSION_PROPERTY: str(version), ROOT_PROPERTY: root}
    if record.has_key(details.get("Table Properties", ""), binding_view.FILES_PROPERTY):
        props[binding_view.FILES_PROPERTY] = binding_view.files_identifier(details.get("Table", "").strip())
    return Binding(TableLocation.of(table_path, stores), version, props)


def _shown_binding(details: Mapping[str, str], stores: Stores) -> Binding:
    """A view an older release bound, read from its properties as Spark shows them; ``ValueError``
    when they are redacted (then its files table is read: ``binding``)."""
    props = record.shown_properties(details.get("Table Properties", ""))
    location, version = props.get(LOCATION_PROPERTY, ""), props.get(VERSION_PROPERTY, "")
    if not version.isdigit() or record.REDACTED in (location, version):
        raise ValueError(f"a view bound at {location!r}, version {version!r}")
    return Binding(TableLocation.of(location, stores), int(version), props)


def refresh(
    spark: SparkSession, *, schema: str, identifier: str, table: TableLocation, version: int | None
) -> bool:
    """Re-bind when other writers committed after ``version``; True if it was (new properties).
    A Delta entry (``version`` None where the session has Delta's catalog) reads the latest itself."""
    from dbt.adapters.deltamerge.delta import load_snapshot
    from dbt.adapters.deltamerge.delta.txn import latest_version

    if version is None and delta_catalog(spark):
        return False
    if latest_version(table) == version:
        return False
    snapshot = load_snapshot(table)
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
    whose files carry deletion vectors is bound as a view (``view``). With Delta's catalog the
    entry is registered ``USING delta`` once, and left as it is when it already reads the table.
    """
    snapshot.check_readable()
    crash_point("before_catalog_bind")
    name = table_name(schema, identifier)
    delta = delta_catalog(spark)
    table = snapshot.location
    if current is None or (registering and delta):
        found = binding(spark, schema, identifier, table.stores)
        current = found.properties if found else {}
    elif registering:
        current = {}
    if delta and current.get(DELTA_ENTRY) == snapshot.table_path:
        return  # Delta reads the latest version at each query
    on_store = table.store.object_store
    root = registered_root(spark, table) if registering and not on_store else _root(current, table)
    # Files first: the entry is missing only for the statements that replace it.
    folder = None if delta else _version_folder(spark, snapshot, root, on_store)
    if folder is not None and not folder.startswith(root + os.sep):
        root = bindings_root(table)  # the warehouse is on another file system
    if folder is not None:
        record.note_table(root, table)  # a root under the warehouse names its table
    # On an object store the entry is always a view over the manifest's files (``manifest``).
    masked = folder is not None and (on_store or binding_view.has_masks(table.stores, folder))
    files = binding_view.files_identifier(identifier)
    props = "" if delta else _properties_clause(snapshot, root, files if masked else None)
    marker, stores = rebinding_marker(table, root), table.stores
    storage.make_dirs(stores, os.path.dirname(marker))
    with storage.exclusive_lock(stores, os.path.join(os.path.dirname(marker), ".binding.lock")) as waited:
        if waited and _bound_since(spark, schema, identifier, snapshot):
            return  # another process bound this version, or a newer one, while this one waited
        storage.delete_file(stores, marker, missing_ok=True)  # left by an interrupted bind
        storage.write_durably(stores, marker, f"{schema}.{identifier}".encode())
        spark.sql(f"DROP TABLE IF EXISTS {name}")  # a table or a view
        crash_point("mid_catalog_bind")
        if masked or current.get(binding_view.FILES_PROPERTY):
            spark.sql(f"DROP TABLE IF EXISTS {table_name(schema, files)}")
        if folder is None:
            spark.sql(register_statement(name, string_literal(snapshot.table_path)))
            storage.delete_file(stores, marker, missing_ok=True)
            return
        _create_entry(spark, schema, identifier, snapshot, folder, props, masked=masked, on_store=on_store)
        storage.delete_file(stores, marker, missing_ok=True)
    prune_bindings(stores, root, keep=KEEP_BINDINGS)


def _properties_clause(snapshot: Snapshot, root: str, files: str | None) -> str:
    """The entry's ``TBLPROPERTIES``: our key marks it; the values are for people (and older
    releases): nothing reads them back (``record``)."""
    values = {LOCATION_PROPERTY: snapshot.table_path, VERSION_PROPERTY: str(snapshot.version)}
    if root != bindings_root(snapshot.location):
        values[ROOT_PROPERTY] = root
    if files is not None:
        values[binding_view.FILES_PROPERTY] = files
    return "TBLPROPERTIES (" + ", ".join(f"'{k}' = {string_literal(v)}" for k, v in values.items()) + ")"


def _create_entry(
    spark: SparkSession,
    schema: str,
    identifier: str,
    snapshot: Snapshot,
    folder: str,
    props: str,
    *,
    masked: bool,
    on_store: bool,
) -> None:
    """The entry over a version folder: a ``USING parquet`` table, or a view over the files table
    (deleted rows left out; on an object store, always, with partition values from the paths)."""
    name, files = (
        table_name(schema, identifier),
        table_name(schema, binding_view.files_identifier(identifier)),
    )
    description = snapshot.metadata.description
    comment = f"COMMENT {string_literal(description[:TABLE_COMMENT_LIMIT])}" if description else ""
    columns = _catalog_schema(schema_from_json(snapshot.metadata.schema_string))
    if not masked:
        _create_files_table(spark, name, snapshot, columns, folder, comment, props)
        return
    files_of = string_literal(f"{schema}.{identifier}")
    files_props = f"TBLPROPERTIES ('{binding_view.FILES_OF_PROPERTY}' = {files_of})"
    if on_store:
        data = manifest.files_columns(snapshot, columns)
        spark.sql(manifest.files_table_statement(files, data, folder, files_props))
        has_masks = binding_view.has_masks(snapshot.location.stores, folder)
        statement = manifest.view_statement(
            name, files, snapshot, folder, columns, comment, props, masked=has_masks
        )
        make_room(spark, statement)
        spark.sql(statement)
        return
    _create_files_table(spark, files, snapshot, columns, folder, "", files_props)
    statement = binding_view.view_statement(name, files, folder, columns, comment, props)
    make_room(spark, statement)  # a view over thousands of columns
    spark.sql(statement)


def _version_folder(spark: SparkSession, snapshot: Snapshot, root: str, on_store: bool) -> str:
    """The folder naming ``snapshot``'s live files: hard links on a local disk, Spark's file-sink
    manifest on an object store (which has no links)."""
    if not on_store:
        return link_version(spark, snapshot, root)
    if not manifest.bindable(snapshot):
        raise DeltaError(
            f"Delta table at {snapshot.table_path}: a partitioned table that maps column names "
            "(delta.columnMapping.mode) without its partition values inside its files (IcebergCompatV2 "
            "puts them there) cannot be bound in Spark's catalog on an object store without Delta's jars "
            "(its folders need not name the values); add delta-spark to the cluster to read it by name."
        )
    return manifest.manifest_version(snapshot, root)


def _bound_since(spark: SparkSession, schema: str, identifier: str, snapshot: Snapshot) -> bool:
    found = binding(spark, schema, identifier, snapshot.location.stores)
    if found is not None and found.delta_entry:
        return found.table_path == snapshot.table_path
    props = found.properties if found else {}
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


def schema_folder(spark: SparkSession, schema: str) -> str:
    """The folder of ``schema`` where Spark places its managed tables (a catalog round trip; a
    dbt invocation asks through its ``catalog.schema_folder``, once per schema)."""
    return str(spark.catalog.getDatabase(schema).locationUri)


def registered_root(spark: SparkSession, table: TableLocation) -> str:
    """The binding root under the warehouse of a table registered by its location (the table's own
    when the warehouse is on an object store: links cannot reach a local table from there)."""
    warehouse = table_path_of(spark.conf.get("spark.sql.warehouse.dir") or "spark-warehouse")
    if storage.on_object_store(warehouse):
        return bindings_root(table)
    digest = hashlib.sha256(os.path.normpath(table.path).encode()).hexdigest()[:24]
    return os.path.join(warehouse, BINDINGS_DIR, digest)


def _root(current: Mapping[str, str], table: TableLocation) -> str:
    """Where a table's link folders go: kept from its current entry (``current``, its properties),
    else inside the table (``bindings_root``)."""
    if current.get(LOCATION_PROPERTY) == table.path and current.get(ROOT_PROPERTY):
        return current[ROOT_PROPERTY]
    return bindings_root(table)


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
