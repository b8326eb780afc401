"""Every storage call of the Delta layer and the catalog binding, in one place.

A path is a local one (a POSIX disk, shared with Spark at the same paths) or an object-store URI
(``s3://``, ``s3a://``, ``gs://``, ``abfss://``: ``object_storage``, through obstore); each function
here serves both. On a local disk a commit publishes its file with ``link`` (fails when the name
exists) and staged data files are renamed into place; on an object store a commit is one
conditional create and data files are never moved (Spark writes them where they stay). Hard links
(the local catalog binding) exist on local disks only. A failure names the path and says so.
"""

from __future__ import annotations

import errno
import fcntl
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

from dbt.adapters.deltamerge.common.store_options import is_object_uri, refused_scheme
from dbt.adapters.deltamerge.delta import object_storage as remote
from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.faults import crash_point

__all__ = ["CrossDeviceLink", "StorageError"]


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
def _naming(action: str, path: str) -> Iterator[None]:
    try:
        yield
    except OSError as error:
        raise StorageError(
            f"cannot {action} {path}: {error.strerror or error}. The dbt process reads and writes "
            "the Delta log and data files itself: it must reach the table's location at the path "
            "Spark uses (with `method: connect`, storage shared with the cluster at the same paths)."
        ) from error


def table_options(path: str, given: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """deltalake's ``storage_options`` for the table at ``path``: ``given`` (a location's own), else
    the process's object-store options; None on a local disk."""
    if given:
        return dict(given)
    return remote.deltalake_options(path) if on_object_store(path) else None


def read_bytes(path: str) -> bytes:
    """The whole content of ``path``."""
    if on_object_store(path):
        return remote.read_bytes(path)
    with _naming("read", path), open(path, "rb") as handle:
        return handle.read()


def open_input(path: str) -> BinaryIO:
    """``path`` opened for reading (parquet footers are read from it)."""
    if on_object_store(path):
        return remote.open_input(path)
    with _naming("open", path):
        return open(path, "rb")


def parquet_metadata(path: str) -> pq.FileMetaData:
    """The footer of the parquet file ``path``."""
    if on_object_store(path):
        with remote.open_input(path) as handle:
            return pq.read_metadata(handle)
    with _naming("read the parquet footer of", path), open(path, "rb") as handle:
        return pq.read_metadata(handle)


def parquet_footer(path: str) -> tuple[pq.FileMetaData, int]:
    """The footer of the parquet file ``path`` and the file's size (on a store: one request)."""
    if on_object_store(path):
        tail, size = remote.open_tail(path)
        with tail:
            return pq.read_metadata(tail), size
    with _naming("read the parquet footer of", path), open(path, "rb") as handle:
        return pq.read_metadata(handle), os.fstat(handle.fileno()).st_size


def parquet_schema(path: str) -> pa.Schema:
    """The Arrow schema of the parquet file ``path``."""
    if on_object_store(path):
        with remote.open_input(path) as handle:
            return pq.read_schema(handle)
    with _naming("read the parquet schema of", path), open(path, "rb") as handle:
        return pq.read_schema(handle)


def put_if_absent(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; True if this call created it.

    The content is written and fsynced under a temporary name, then hard-linked to
    ``path``: ``link`` fails when the name exists, so of two writers exactly one wins
    and no reader ever sees a partial file. On an object store: one conditional create.
    """
    if on_object_store(path):
        crash_point("commit_file_written")
        return remote.put_if_absent(path, data)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
    with _naming("write", tmp), open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    crash_point("commit_file_written")
    try:
        with _naming("publish", path):
            os.link(tmp, path)
        return True
    except StorageError as error:
        if isinstance(error.__cause__, FileExistsError):
            return False
        raise
    finally:
        with _naming("remove", tmp):
            os.unlink(tmp)


@contextmanager
def exclusive_lock(path: str) -> Iterator[bool]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block; yields whether
    another holder had to be waited for (so the caller can look again at what it changed).
    On an object store (no locks there) the lock is a local file named for ``path``: processes of
    this machine take turns; what they guard must be safe to repeat from another machine."""
    if on_object_store(path):
        digest = hashlib.sha256(path.encode("utf-8")).hexdigest()[:32]
        path = os.path.join(tempfile.gettempdir(), "deltamerge-locks", digest)
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with _naming("lock", path):
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


def write_durably(path: str, data: bytes) -> None:
    """Write ``path`` (a new file) and fsync it."""
    if on_object_store(path):
        remote.write_new(path, data)
        return
    with _naming("write", path), open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def list_names(folder: str) -> list[str]:
    """The entries of ``folder``; empty when it does not exist."""
    if on_object_store(folder):
        return remote.list_names(folder)
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as error:
        with _naming("list", folder):
            raise error


def walk(root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)``: a caller may prune ``dirs`` in place. A missing root yields nothing."""
    if on_object_store(root):
        yield from remote.walk(root)
        return

    def fail(error: OSError) -> None:
        if not isinstance(error, FileNotFoundError):
            with _naming("list", error.filename or root):
                raise error

    yield from os.walk(root, onerror=fail)


def size_and_mtime(path: str) -> tuple[int, float]:
    """The size in bytes and the modification time (seconds) of ``path``."""
    if on_object_store(path):
        found = remote.head(path)
        if found is None:
            raise StorageError(f"cannot stat {path}: no such object")
        return found
    with _naming("stat", path):
        info = os.stat(path)
    return info.st_size, info.st_mtime


def exists(path: str) -> bool:
    """Whether ``path`` (a file or folder) exists for this process."""
    if on_object_store(path):
        return remote.head(path) is not None or remote.is_dir(path)
    return os.path.exists(path)


def is_dir(path: str) -> bool:
    """Whether ``path`` is a folder this process can see (on an object store: a key prefix holding
    objects)."""
    if on_object_store(path):
        return remote.is_dir(path)
    return os.path.isdir(path)


def is_file(path: str) -> bool:
    """Whether ``path`` is a file this process can see."""
    if on_object_store(path):
        return remote.head(path) is not None
    return os.path.isfile(path)


def link_count(path: str) -> int:
    """How many names (hard links) the file at ``path`` has."""
    with _naming("stat", path):
        return os.stat(path).st_nlink


def make_dirs(path: str) -> None:
    """Create ``path`` and its parents (no error when it exists; nothing to do on an object store)."""
    if on_object_store(path):
        return
    with _naming("create the folder", path):
        os.makedirs(path, exist_ok=True)


def make_new_dir(path: str) -> None:
    """Create ``path``, which must not exist (on an object store: no object may be under it)."""
    if on_object_store(path):
        if remote.is_dir(path):
            raise StorageError(f"cannot create the folder {path}: it exists")
        return
    with _naming("create the folder", path):
        os.makedirs(path)


def rename(source: str, target: str) -> None:
    """Move ``source`` to ``target`` (one file system: atomic). Object stores have no rename (a copy
    is neither atomic nor cheap): their callers write where things stay."""
    if on_object_store(source):
        raise StorageError(f"cannot move {source} to {target}: an object store has no rename")
    with _naming("move", f"{source} to {target}"):
        os.rename(source, target)


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
        with _naming("link", f"{source} as {target}"):
            raise error


def delete_file(path: str, *, missing_ok: bool = False) -> None:
    """Remove the file ``path``."""
    if on_object_store(path):
        if not missing_ok and remote.head(path) is None:
            raise FileNotFoundError(path)
        remote.delete(path)
        return
    try:
        os.unlink(path)
    except FileNotFoundError:
        if not missing_ok:
            raise
    except OSError as error:
        with _naming("remove", path):
            raise error


def delete_tree(path: str) -> None:
    """Remove the folder ``path`` and everything in it, as far as possible (leftovers are harmless)."""
    if on_object_store(path):
        remote.delete_prefix(path)
        return
    shutil.rmtree(path, ignore_errors=True)


def remove_empty_dir(path: str) -> None:
    """Remove the empty folder ``path`` (nothing to do on an object store: prefixes are not kept)."""
    if on_object_store(path):
        return
    with _naming("remove the folder", path):
        os.rmdir(path)
