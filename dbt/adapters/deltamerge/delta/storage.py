"""Every file-system call of the Delta layer and the catalog binding, in one place.

Spark (in this process, or on a cluster's executors) writes data files; the dbt process
renames them into place, reads their footers, writes the Delta log and hard-links the
catalog folders. So the dbt process must reach each table's storage at the paths Spark
writes to: a local or shared (network) file system in this version. A failure here names
the path and says so. Object stores plug in below these functions: ``put_if_absent``
becomes a conditional put (``If-None-Match: *``), ``rename`` of a staged file a copy, and
``link`` has no equivalent (there the catalog entry is ``USING delta`` on the table path,
which needs Delta's jars on the cluster).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.deltamerge.delta.errors import DeltaError
from dbt.adapters.deltamerge.delta.faults import crash_point


class StorageError(DeltaError):
    """The dbt process could not read or write a path of a table."""


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


def read_bytes(path: str) -> bytes:
    """The whole content of ``path``."""
    with _naming("read", path), open(path, "rb") as handle:
        return handle.read()


def open_input(path: str) -> BinaryIO:
    """``path`` opened for reading (parquet footers are read from it)."""
    with _naming("open", path):
        return open(path, "rb")


def parquet_metadata(path: str) -> pq.FileMetaData:
    """The footer of the parquet file ``path``."""
    with _naming("read the parquet footer of", path), open(path, "rb") as handle:
        return pq.read_metadata(handle)


def parquet_schema(path: str) -> pa.Schema:
    """The Arrow schema of the parquet file ``path``."""
    with _naming("read the parquet schema of", path), open(path, "rb") as handle:
        return pq.read_schema(handle)


def put_if_absent(path: str, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; True if this call created it.

    The content is written and fsynced under a temporary name, then hard-linked to
    ``path``: ``link`` fails when the name exists, so of two writers exactly one wins
    and no reader ever sees a partial file.
    """
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
    another holder had to be waited for (so the caller can look again at what it changed)."""
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
    with _naming("write", path), open(path, "xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def list_names(folder: str) -> list[str]:
    """The entries of ``folder``; empty when it does not exist."""
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        return []
    except OSError as error:
        with _naming("list", folder):
            raise error


def walk(root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)``: a caller may prune ``dirs`` in place. A missing root yields nothing."""

    def fail(error: OSError) -> None:
        if not isinstance(error, FileNotFoundError):
            with _naming("list", error.filename or root):
                raise error

    yield from os.walk(root, onerror=fail)


def size_and_mtime(path: str) -> tuple[int, float]:
    """The size in bytes and the modification time (seconds) of ``path``."""
    with _naming("stat", path):
        info = os.stat(path)
    return info.st_size, info.st_mtime


def exists(path: str) -> bool:
    """Whether ``path`` (a file or folder) exists for this process."""
    return os.path.exists(path)


def is_dir(path: str) -> bool:
    """Whether ``path`` is a folder this process can see."""
    return os.path.isdir(path)


def is_file(path: str) -> bool:
    """Whether ``path`` is a file this process can see."""
    return os.path.isfile(path)


def link_count(path: str) -> int:
    """How many names (hard links) the file at ``path`` has."""
    with _naming("stat", path):
        return os.stat(path).st_nlink


def make_dirs(path: str) -> None:
    """Create ``path`` and its parents (no error when it exists)."""
    with _naming("create the folder", path):
        os.makedirs(path, exist_ok=True)


def make_new_dir(path: str) -> None:
    """Create ``path``, which must not exist."""
    with _naming("create the folder", path):
        os.makedirs(path)


def rename(source: str, target: str) -> None:
    """Move ``source`` to ``target`` (one file system: atomic)."""
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
    shutil.rmtree(path, ignore_errors=True)


def remove_empty_dir(path: str) -> None:
    """Remove the empty folder ``path``."""
    with _naming("remove the folder", path):
        os.rmdir(path)
