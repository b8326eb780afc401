"""Storage calls over a path that is no table's: the catalog binding's folders under the warehouse.

A path is a local one or an object-store URI; each call is the method of the path's store among
the given ``Stores`` (``stores.py``: ``LocalStore``, ``ObjectStore``; the binding passes the stores
of the table it binds, ``TableLocation.stores``, or its invocation's). A table's own calls (its
log, its data files, its state) go through its location's store (``TableLocation.store``): no
module of the Delta layer calls this one. Hard links (the local catalog binding) and locks are
here: local disks only, and a lock file of this machine. A failure names the path and says so.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.stores import Stores, naming, on_object_store

__all__ = ["CrossDeviceLink", "StorageError", "Stores", "on_object_store"]


def read_bytes(stores: Stores, path: str) -> bytes:
    """The whole content of ``path``."""
    return stores.store_for(path).read_bytes(path)


def open_input(stores: Stores, path: str) -> BinaryIO:
    """``path`` opened for reading (parquet footers are read from it)."""
    return stores.store_for(path).open_input(path)


def parquet_metadata(stores: Stores, path: str) -> pq.FileMetaData:
    """The footer of the parquet file ``path``."""
    return stores.store_for(path).parquet_metadata(path)


def parquet_footer(stores: Stores, path: str) -> tuple[pq.FileMetaData, int]:
    """The footer of the parquet file ``path`` and the file's size (on a store: one request)."""
    return stores.store_for(path).parquet_footer(path)


def parquet_schema(stores: Stores, path: str) -> pa.Schema:
    """The Arrow schema of the parquet file ``path``."""
    return stores.store_for(path).parquet_schema(path)


def put_if_absent(stores: Stores, path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; True if this call created it (of two
    writers exactly one wins; no reader ever sees a partial file)."""
    return stores.store_for(path).put_if_absent(path, data)


@contextmanager
def exclusive_lock(stores: Stores, path: str) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block; yields whether
    another holder had to be waited for (so the caller can look again at what it changed).
    On an object store (no locks there) the lock is a local file named for ``path``."""
    path = stores.store_for(path).lock_file(path)
    with naming("lock", path):
        handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            waited = False
        except BlockingIOError:
            fcntl.flock(handle, fcntl.LOCK_EX)
            waited = True
        yield waited
    finally:
        os.close(handle)  # releases the lock


def write_durably(stores: Stores, path: str, data: bytes) -> None:
    """Write ``path`` (a new file) and fsync it."""
    stores.store_for(path).write_durably(path, data)


def list_names(stores: Stores, folder: str) -> list[str]:
    """The entries of ``folder``; empty when it does not exist."""
    return stores.store_for(folder).list_names(folder)


def walk(stores: Stores, root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)``: a caller may prune ``dirs`` in place. A missing root yields nothing."""
    return stores.store_for(root).walk(root)


def size_and_mtime(stores: Stores, path: str) -> tuple[int, float]:
    """The size in bytes and the modification time (seconds) of ``path``."""
    return stores.store_for(path).size_and_mtime(path)


def exists(stores: Stores, path: str) -> bool:
    """Whether ``path`` (a file or folder) exists for this process."""
    return stores.store_for(path).exists(path)


def is_dir(stores: Stores, path: str) -> bool:
    """Whether ``path`` is a folder this process can see (on an object store: a key prefix holding
    objects)."""
    return stores.store_for(path).is_dir(path)


def is_file(stores: Stores, path: str) -> bool:
    """Whether ``path`` is a file this process can see."""
    return stores.store_for(path).is_file(path)


def link_count(path: str) -> int:
    """How many names (hard links) the file at ``path`` has."""
    with naming("stat", path):
        return os.stat(path).st_nlink


def make_dirs(stores: Stores, path: str) -> None:
    """Create ``path`` and its parents (no error when it exists; nothing to do on an object store)."""
    stores.store_for(path).make_dirs(path)


def make_new_dir(stores: Stores, path: str) -> None:
    """Create ``path``, which must not exist (on an object store: no object may be under it)."""
    stores.store_for(path).make_new_dir(path)


def rename(stores: Stores, source: str, target: str) -> None:
    """Move ``source`` to ``target`` (one file system: atomic). Object stores have no rename (a copy
    is neither atomic nor cheap): their callers write where things stay."""
    stores.store_for(source).rename(source, target)


class CrossDeviceLink(StorageError):
    """A hard link was asked across two file systems."""


def link(source: str, target: str) -> None:
    """A hard link ``target`` to the file ``source`` (no data copied).

    Raises:
        CrossDeviceLink: ``source`` and ``target`` are on two file systems.
    """
    try:
        os.link(source, target)
    except OSError as error:
        if error.errno == errno.EXDEV:
            raise CrossDeviceLink(f"cannot link {source} as {target}: another file system") from error
        with naming("link", f"{source} as {target}"):
            raise error


def delete_file(stores: Stores, path: str, *, missing_ok: bool = False) -> None:
    """Remove the file ``path``."""
    stores.store_for(path).delete_file(path, missing_ok=missing_ok)


def delete_tree(stores: Stores, path: str) -> None:
    """Remove the folder ``path`` and everything in it, as far as possible (leftovers are harmless)."""
    stores.store_for(path).delete_tree(path)


def remove_empty_dir(stores: Stores, path: str) -> None:
    """Remove the empty folder ``path`` (nothing to do on an object store: prefixes are not kept)."""
    stores.store_for(path).remove_empty_dir(path)
