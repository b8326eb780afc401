"""A table's store, and the storage calls there: one class for each kind of store.

``LocalStore``: a POSIX disk, shared with Spark at the same paths; a commit publishes its file with
a hard link (which fails when the name exists) and staged data files are renamed into place.
``ObjectStore``: ``s3://`` (or ``s3a://``), ``gs://``, ``abfss://`` through obstore
(``object_storage``): a commit is one conditional create, data files are never moved (Spark writes
them where they stay), there are no folders (a key prefix), renames or hard links; it holds its
configuration's clients (``object_storage.ObjectClients``). ``Stores`` is what one configuration
reaches (a dbt invocation's, from its profile): its ``store_for`` chooses a path's store, refusing
by name a scheme where no commit is safe; a table's ``TableLocation.store`` is its store among the
stores it was placed with, chosen once, on first use. ``storage`` keeps the functions over a path
for what is no table (a binding root, a lock file), each the store's method. A failure names the
path and says so.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.deltamerge.common.store_options import effective_options, is_object_uri, refused_scheme
from dbt.adapters.deltamerge.delta import object_storage as remote
from dbt.adapters.deltamerge.delta.catalogs import IcebergCatalogs
from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.faults import crash_point


def on_object_store(path: str) -> bool:
    """Whether ``path`` is an object-store URI (else a local path); a store this product cannot
    commit to safely is refused by name here, before anything is read or written.

    >>> on_object_store("s3://lake/t"), on_object_store("/w/t")
    (True, False)
    """
    refused = refused_scheme(path)
    if refused:
        raise StorageError(
            f"{path} is on {refused}, where a Delta commit cannot be made safely (no conditional "
            "create); use a local path, s3:// (or s3a://), gs:// or abfss://."
        )
    return is_object_uri(path)


@contextmanager
def naming(action: str, path: str) -> Iterator[None]:
    """An ``OSError`` in the block raised again as a ``StorageError`` naming ``action`` and ``path``."""
    try:
        yield
    except OSError as error:
        raise StorageError(
            f"cannot {action} {path}: {error.strerror or error}. The dbt process reads and writes "
            "the Delta log and data files itself: it must reach the table's location at the path "
            "Spark uses (with `method: connect`, storage shared with the cluster at the same paths)."
        ) from error


class LocalStore:
    """A local disk (or a mount shared with Spark at the same paths)."""

    object_store = False

    def deltalake_options(self, path: str) -> dict[str, str] | None:
        """deltalake's ``storage_options`` for a table at ``path``: none on a local disk."""
        return None

    def read_bytes(self, path: str) -> bytes:
        with naming("read", path), open(path, "rb") as handle:
            return handle.read()

    def open_input(self, path: str) -> BinaryIO:
        with naming("open", path):
            return open(path, "rb")

    def parquet_metadata(self, path: str) -> pq.FileMetaData:
        with naming("read the parquet footer of", path), open(path, "rb") as handle:
            return pq.read_metadata(handle)

    def parquet_footer(self, path: str) -> tuple[pq.FileMetaData, int]:
        with naming("read the parquet footer of", path), open(path, "rb") as handle:
            return pq.read_metadata(handle), os.fstat(handle.fileno()).st_size

    def parquet_schema(self, path: str) -> pa.Schema:
        with naming("read the parquet schema of", path), open(path, "rb") as handle:
            return pq.read_schema(handle)

    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Written and fsynced under a temporary name, then hard-linked to ``path``: ``link`` fails
        when the name exists, so of two writers exactly one wins and no reader sees a partial file."""
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with naming("write", tmp), open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        crash_point("commit_file_written")
        try:
            with naming("publish", path):
                os.link(tmp, path)
            return True
        except StorageError as error:
            if isinstance(error.__cause__, FileExistsError):
                return False
            raise
        finally:
            with naming("remove", tmp):
                os.unlink(tmp)

    def lock_file(self, path: str) -> str:
        """The file an exclusive lock on ``path`` is taken on: itself."""
        return path

    def write_durably(self, path: str, data: bytes) -> None:
        with naming("write", path), open(path, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())

    def replace(self, path: str, data: bytes) -> None:
        """Write ``path`` whole over any file there: a temporary file, fsynced, then renamed over it
        (readers see the old bytes or the new, never part of them)."""
        tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
        with naming("write", tmp), open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        with naming("move", f"{tmp} to {path}"):
            os.replace(tmp, path)

    def list_names(self, folder: str) -> list[str]:
        try:
            return os.listdir(folder)
        except FileNotFoundError:
            return []
        except OSError as error:
            with naming("list", folder):
                raise error

    def walk(self, root: str) -> Iterator[tuple[str, list[str], list[str]]]:
        def fail(error: OSError) -> None:
            if not isinstance(error, FileNotFoundError):
                with naming("list", error.filename or root):
                    raise error

        yield from os.walk(root, onerror=fail)

    def size_and_mtime(self, path: str) -> tuple[int, float]:
        with naming("stat", path):
            info = os.stat(path)
        return info.st_size, info.st_mtime

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def is_file(self, path: str) -> bool:
        return os.path.isfile(path)

    def make_dirs(self, path: str) -> None:
        with naming("create the folder", path):
            os.makedirs(path, exist_ok=True)

    def make_new_dir(self, path: str) -> None:
        with naming("create the folder", path):
            os.makedirs(path)

    def rename(self, source: str, target: str) -> None:
        with naming("move", f"{source} to {target}"):
            os.rename(source, target)

    def delete_file(self, path: str, *, missing_ok: bool = False) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            if not missing_ok:
                raise
        except OSError as error:
            with naming("remove", path):
                raise error

    def delete_tree(self, path: str) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def remove_empty_dir(self, path: str) -> None:
        with naming("remove the folder", path):
            os.rmdir(path)


class ObjectStore:
    """The object stores (S3, GCS, Azure) one configuration reaches, through its obstore clients
    (``remote.ObjectClients``: one per bucket, each with its bucket's options)."""

    object_store = True

    def __init__(self, clients: remote.ObjectClients) -> None:
        self.clients = clients

    def deltalake_options(self, path: str) -> dict[str, str] | None:
        """deltalake's ``storage_options`` for a table at ``path``: its bucket's."""
        return remote.deltalake_options(self.clients, path)

    def read_bytes(self, path: str) -> bytes:
        return remote.read_bytes(self.clients, path)

    def open_input(self, path: str) -> BinaryIO:
        return remote.open_input(self.clients, path)

    def parquet_metadata(self, path: str) -> pq.FileMetaData:
        with remote.open_input(self.clients, path) as handle:
            return pq.read_metadata(handle)

    def parquet_footer(self, path: str) -> tuple[pq.FileMetaData, int]:
        """One request: the file's tail, and its size."""
        tail, size = remote.open_tail(self.clients, path)
        with tail:
            return pq.read_metadata(tail), size

    def parquet_schema(self, path: str) -> pa.Schema:
        with remote.open_input(self.clients, path) as handle:
            return pq.read_schema(handle)

    def put_if_absent(self, path: str, data: bytes) -> bool:
        """One conditional create."""
        crash_point("commit_file_written")
        return remote.put_if_absent(self.clients, path, data)

    def lock_file(self, path: str) -> str:
        """A local file named for ``path`` (no locks on a store): processes of this machine take
        turns; what they guard must be safe to repeat from another machine."""
        digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
        folder = os.path.join(tempfile.gettempdir(), "deltamerge-locks")
        os.makedirs(folder, exist_ok=True)
        return os.path.join(folder, digest)

    def write_durably(self, path: str, data: bytes) -> None:
        remote.write_new(self.clients, path, data)

    def replace(self, path: str, data: bytes) -> None:
        remote.replace(self.clients, path, data)

    def list_names(self, folder: str) -> list[str]:
        return remote.list_names(self.clients, folder)

    def walk(self, root: str) -> Iterator[tuple[str, list[str], list[str]]]:
        yield from remote.walk(self.clients, root)

    def size_and_mtime(self, path: str) -> tuple[int, float]:
        found = remote.head(self.clients, path)
        if found is None:
            raise StorageError(f"cannot stat {path}: no such object")
        return found

    def exists(self, path: str) -> bool:
        return remote.head(self.clients, path) is not None or remote.is_dir(self.clients, path)

    def is_dir(self, path: str) -> bool:
        """A key prefix holding objects."""
        return remote.is_dir(self.clients, path)

    def is_file(self, path: str) -> bool:
        return remote.head(self.clients, path) is not None

    def make_dirs(self, path: str) -> None:
        """Nothing to do: a prefix exists while a key is under it."""

    def make_new_dir(self, path: str) -> None:
        """No object may be under ``path`` yet."""
        if remote.is_dir(self.clients, path):
            raise StorageError(f"cannot create the folder {path}: it exists")

    def rename(self, source: str, target: str) -> None:
        """Refused: a copy is neither atomic nor cheap; callers write where things stay."""
        raise StorageError(f"cannot move {source} to {target}: an object store has no rename")

    def delete_file(self, path: str, *, missing_ok: bool = False) -> None:
        if not missing_ok and remote.head(self.clients, path) is None:
            raise FileNotFoundError(path)
        remote.delete(self.clients, path)

    def delete_tree(self, path: str) -> None:
        remote.delete_prefix(self.clients, path)

    def remove_empty_dir(self, path: str) -> None:
        """Nothing to do: prefixes are not kept."""


Store = LocalStore | ObjectStore
LOCAL = LocalStore()


class Stores:
    """The stores one configuration reaches: the local disk, and the object stores its options
    (``store_options.effective_options`` and a bucket's own) reach. A dbt invocation holds one,
    made from its profile (``Invocation.stores``); every ``TableLocation`` carries the one it was
    placed with, so a table's storage calls, and its binding's, use the options that placed it.
    ``Stores()`` reaches object stores as the environment's variables say (as delta-rs does
    without ``storage_options``). ``catalogs``: the Iceberg REST catalogs the configuration names,
    where its UniForm tables are registered (``catalogs.py``; none unless configured)."""

    def __init__(
        self,
        options: Mapping[str, str] | None = None,
        buckets: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    ) -> None:
        shared = effective_options(os.environ, {}) if options is None else options
        self.object = ObjectStore(remote.ObjectClients(shared, buckets))
        self.catalogs = IcebergCatalogs()

    def configure(
        self, options: Mapping[str, str], buckets: Mapping[tuple[str, str], Mapping[str, str]] | None = None
    ) -> None:
        """Use ``options`` for every object store from now on, and ``buckets``' own (by ``(kind,
        bucket)``) for those buckets: clients made with other options are dropped."""
        self.object.clients.configure(options, buckets)

    def store_for(self, path: str) -> Store:
        """The store ``path`` is on (a scheme where no commit is safe is refused by name).

        >>> stores = Stores({})
        >>> stores.store_for("s3a://lake/t").object_store, stores.store_for("/w/t").object_store
        (True, False)
        """
        return self.object if on_object_store(path) else LOCAL
