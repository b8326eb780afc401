"""Catalog binding, the link folders: each bound version's live files as hard links (or copies of
their live rows, ``copies``) under the binding root, and their pruning."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable

from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.binding import view as binding_view
from dbt.adapters.deltamerge.binding.copies import COPIES_DIR, live_copies
from dbt.adapters.deltamerge.binding.record import BINDINGS_DIR
from dbt.adapters.deltamerge.delta import (
    AddFile,
    Snapshot,
    Stores,
    TableLocation,
    local_path,
    partition_folder,
    storage,
)
from dbt.adapters.deltamerge.delta.log import mapping_mode

# Versions whose link folders stay, so a query planned just before a rebind still reads.
KEEP_BINDINGS = 2


def bindings_root(table: TableLocation) -> str:
    """The binding root inside a table (the tables this adapter writes)."""
    return os.path.join(table.path, BINDINGS_DIR)


def link_version(spark: SparkSession, snapshot: Snapshot, root: str | None = None) -> str:
    """Build (once) the folder of ``snapshot``'s live files under ``root``; return its path.

    A file is a hard link to the data file (with its deleted rows in the folder's masks,
    ``view``), or, when Spark's parquet reader cannot read it as it is (the table maps
    column names, or a ``_metadata`` column hides what the masks need), a hard link to a copy
    of its live rows under the schema's names. Copies are made once per logical file, in
    ``COPIES_DIR``, and dropped with the last version folder that links them. A root the
    table's files cannot be linked into (another file system) gives way to the table's own.
    """
    root, stores = root or bindings_root(snapshot.location), snapshot.location.stores
    folder = os.path.join(root, f"v{snapshot.version:020d}")
    if storage.is_dir(stores, folder):
        return folder
    # Its own staging folder: two runs may bind one version at once (the first rename wins).
    building = f"{folder}.{uuid.uuid4().hex}.building"
    storage.make_new_dir(stores, building)
    mapped = mapping_mode(snapshot.metadata.configuration) != "none"
    masked = not mapped and binding_view.can_mask(snapshot.schema)
    copied = [f for f in snapshot.files if mapped or (f.deleted_rows and not masked)]
    copies = live_copies(spark, snapshot, copied, root)
    vectors = []
    for target, source, file in _links(snapshot, masked):
        storage.make_dirs(stores, os.path.dirname(os.path.join(building, target)))
        if file.path not in copies and file.deleted_rows:
            vectors.append((os.path.basename(target), file.deleted_rows))
        try:
            if file.path in copies:
                _link_copy(spark, snapshot, file, root, copies[file.path], os.path.join(building, target))
            else:
                storage.link(source, os.path.join(building, target))
        except storage.CrossDeviceLink:
            storage.delete_tree(stores, building)
            return link_version(spark, snapshot, bindings_root(snapshot.location))
    if vectors:
        binding_view.write_masks(stores, building, vectors)
    try:
        storage.rename(stores, building, folder)
    except storage.StorageError:
        if not storage.is_dir(stores, folder):
            raise
        storage.delete_tree(stores, building)  # another run built the same folder first
    return folder


def _link_copy(
    spark: SparkSession, snapshot: Snapshot, file: AddFile, root: str, copy: str, target: str
) -> None:
    """Link ``target`` to ``copy``, the copy of ``file``'s live rows, making it again if it went.

    Until this link a copy's only name is its own, and a concurrent run's ``prune_bindings``
    removes such copies (no folder of its own links them): the copy is then made again, a few
    times at most (each window is one link long).
    """
    stores = snapshot.location.stores
    for attempt in range(_COPY_ATTEMPTS):
        try:
            storage.link(copy, target)
            return
        except storage.CrossDeviceLink:
            raise
        except storage.StorageError:
            if storage.is_file(stores, copy) or attempt == _COPY_ATTEMPTS - 1:
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


def prune_bindings(stores: Stores, root: str, *, keep: int) -> None:
    """Remove all but the newest ``keep`` link folders of a binding root (reached through
    ``stores``; links only, data files stay), staging folders of older versions (left by killed
    runs), and the live copies no remaining folder links (a copy's only name left is its own)."""
    names = storage.list_names(stores, root)
    folders = sorted(n for n in names if n.startswith("v") and "." not in n)
    for name in folders[:-keep]:
        storage.delete_tree(stores, os.path.join(root, name))
    oldest_kept = folders[-keep:][0] if folders else ""
    for name in names:
        if name.startswith("v") and name.endswith(".building") and name.split(".")[0] < oldest_kept:
            storage.delete_tree(stores, os.path.join(root, name))
    copies = os.path.join(root, COPIES_DIR)
    for name in storage.list_names(stores, copies):
        path = os.path.join(copies, name)
        if name.endswith(".parquet") and storage.link_count(path) == 1:
            storage.delete_file(stores, path, missing_ok=True)


def rebinding_marker(table: TableLocation, root: str | None = None) -> str:
    """The file that exists while ``bind`` replaces a catalog entry (its name inside).

    A process killed between dropping and re-creating the entry leaves it: the next statement
    on that name binds the table again, where a table the user dropped stays dropped.
    """
    return os.path.join(root or bindings_root(table), ".rebinding")


def interrupted_binding(table: TableLocation, schema: str, identifier: str) -> bool:
    """Whether a re-binding of ``schema.identifier`` to ``table`` was interrupted."""
    try:
        named = table.store.read_bytes(rebinding_marker(table)).decode()
    except storage.StorageError:
        return False
    return named.lower() == f"{schema}.{identifier}".lower()
