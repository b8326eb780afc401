"""The storage calls of the Delta layer on an object store (S3, GCS, Azure), through obstore.

Why obstore: it is the Python face of the Rust ``object_store`` crate that delta-rs commits with,
so a commit here is the same request delta-rs makes: one conditional create
(``PutMode::Create``: S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure
``If-None-Match: *``), which of two writers exactly one wins. It also gives ranged reads (parquet
footers, deletion vectors), listing from a key on, the SDKs' retries with backoff on throttling and
5xx, and one client per bucket. fsspec's s3fs has no conditional create; pyarrow.fs neither.

Object stores have no folders, renames or hard links: a "folder" is a key prefix (it exists while
a key is under it; creating one does nothing), and data files are written by Spark at their final
keys (``delta.data.files``), so no data file is ever copied here. Every failure names the store,
the bucket and the operation (``StorageError``), never a credential.
"""

from __future__ import annotations

import io
import posixpath
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    NotFoundError,
    NotSupportedError,
    PreconditionError,
)
from obstore.store import from_url

from dbt.adapters.deltamerge.common.store_options import (
    allows_http,
    aws_profile,
    obstore_config,
    split_uri,
    store_kind,
)
from dbt.adapters.deltamerge.delta.errors import StorageError

# obstore raises its own classes, and Python's FileNotFoundError / PermissionError for some.
_MISSING = (NotFoundError, FileNotFoundError)
_FAILED = (BaseError, OSError)


class ObjectStoreError(StorageError):
    """A request to an object store failed (the message names store, bucket and operation)."""


class ConditionalCreateUnsupported(ObjectStoreError):
    """The store cannot create an object only if it is absent: no commit is safe there."""


class ObjectClients:
    """One configuration's obstore clients, one per bucket, built on first use from its options:
    the shared options, and a bucket's own where the profile gives them (``bucket_storage_options``).
    A dbt invocation holds one (``stores.Stores``), made from its profile; a table's location
    reaches it through its ``stores``."""

    def __init__(
        self,
        options: Mapping[str, str] | None = None,
        buckets: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
    ) -> None:
        self.options: dict[str, str] = dict(options or {})
        self.buckets = {key: dict(value) for key, value in (buckets or {}).items()}
        self.clients: dict[tuple[str, str], Any] = {}
        self.lock = threading.Lock()
        self.profile: Any = None  # the boto3 session of the options' AWS profile, once asked for

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its options (a Spark task reading footers on an executor): the clients, the
        lock and an AWS profile's session are made again there."""
        return (ObjectClients, (self.options, self.buckets))

    def configure(
        self, options: Mapping[str, str], buckets: Mapping[tuple[str, str], Mapping[str, str]] | None = None
    ) -> None:
        own = {key: dict(value) for key, value in (buckets or {}).items()}
        with self.lock:
            if dict(options) != self.options or own != self.buckets:
                self.options, self.buckets = dict(options), own
                self.clients.clear()
                self.profile = None

    def options_for(self, uri: str) -> dict[str, str]:
        """The options that reach ``uri``'s bucket: its own, else the shared ones."""
        found = self.buckets.get((store_kind(uri), split_uri(uri)[1]))
        return dict(found) if found is not None else dict(self.options)

    def aws_session(self) -> Any:
        """boto3's session of the options' ``AWS_PROFILE`` (None without one): the shared config and
        credentials files, SSO and assumed roles, refreshed by boto3 as they expire."""
        name = aws_profile(self.options)
        if name is None:
            return None
        if self.profile is None:
            import boto3
            import botocore.session
            from botocore.exceptions import BotoCoreError

            core = botocore.session.Session()
            for variable, path in self.options.items():  # the files, named here or in the env
                if variable in _AWS_FILES:
                    core.set_config_variable(_AWS_FILES[variable], path)
            try:
                session = boto3.Session(botocore_session=core, profile_name=name)
                if session.get_credentials() is None:
                    raise ObjectStoreError(f"the AWS profile {name!r} gives no credentials")
            except BotoCoreError as error:
                raise ObjectStoreError(f"the AWS profile {name!r} cannot be used: {error}") from error
            self.profile = session
        return self.profile

    def client(self, uri: str) -> tuple[Any, str]:
        scheme, bucket, key = split_uri(uri)
        kind = store_kind(uri)
        with self.lock:
            found = self.clients.get((kind, bucket))
            if found is None:
                options = self.buckets.get((kind, bucket), self.options)
                config, client_options = obstore_config(kind, options)
                root = f"{'s3' if kind == 's3' else scheme}://{bucket}"
                extra = {}
                session = self.aws_session() if kind == "s3" and aws_profile(options) else None
                if session is not None:
                    from obstore.auth.boto3 import Boto3CredentialProvider

                    extra["credential_provider"] = Boto3CredentialProvider(session)
                try:
                    found = from_url(root, config=config, client_options=client_options, **extra)  # type: ignore[call-overload]
                except _FAILED as error:
                    raise ObjectStoreError(f"cannot reach {kind} bucket {bucket}: {error}") from error
                self.clients[(kind, bucket)] = found
        return found, key


# The shared files' variables, as botocore's session names them.
_AWS_FILES = {"AWS_SHARED_CREDENTIALS_FILE": "credentials_file", "AWS_CONFIG_FILE": "config_file"}


def deltalake_options(clients: ObjectClients, uri: str) -> dict[str, str]:
    """The options of ``uri``'s bucket as deltalake (delta-rs) takes them, for the reads it serves
    here (an AWS profile's credentials resolved now: delta-rs does not read the shared files)."""
    options = clients.options_for(uri)
    session = clients.aws_session() if aws_profile(options) else None
    if session is not None:
        frozen = session.get_credentials().get_frozen_credentials()
        options.update({"AWS_ACCESS_KEY_ID": frozen.access_key, "AWS_SECRET_ACCESS_KEY": frozen.secret_key})
        if frozen.token:
            options["AWS_SESSION_TOKEN"] = frozen.token
    if allows_http("s3", options):
        options["AWS_ALLOW_HTTP"] = "true"
    if any(allows_http(kind, options) for kind in ("s3", "gcs", "azure")):
        options["allow_http"] = "true"
    return options


def _fail(action: str, uri: str, error: Exception) -> ObjectStoreError:
    bucket = split_uri(uri)[1]
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return ObjectStoreError(
        f"cannot {action} {uri} ({store_kind(uri)} bucket {bucket!r}): {type(error).__name__}: {first}"
    )


def read_bytes(clients: ObjectClients, uri: str) -> bytes:
    """The whole object ``uri``."""
    store, key = clients.client(uri)
    try:
        return bytes(obstore.get(store, key).bytes())
    except _FAILED as error:
        raise _fail("read", uri, error) from error


class _Reader(io.RawIOBase):
    """A seekable reader of one object: each read past the buffer is one ranged GET."""

    def __init__(self, clients: ObjectClients, uri: str) -> None:
        store, key = clients.client(uri)
        try:
            self._file = obstore.open_reader(store, key, buffer_size=64 * 1024)
        except _FAILED as error:
            raise _fail("open", uri, error) from error

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return int(self._file.seek(offset, whence))

    def tell(self) -> int:
        return int(self._file.tell())

    def readinto(self, buffer: Any) -> int:
        data = bytes(self._file.read(len(buffer)))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self._file.close()
        super().close()


# A parquet footer is read with one GET of the object's last bytes (which also says its size).
TAIL_BYTES = 64 * 1024


class _Tail(io.RawIOBase):
    """A seekable reader of one object of known ``size`` whose last bytes are ``tail``: reads in
    the tail cost nothing, others one ranged GET each."""

    def __init__(self, clients: ObjectClients, uri: str, tail: bytes, size: int) -> None:
        self._clients, self._uri, self._tail, self._size, self._at = clients, uri, tail, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        self._at = {0: 0, 1: self._at, 2: self._size}[whence] + offset
        return self._at

    def tell(self) -> int:
        return self._at

    def readinto(self, buffer: Any) -> int:
        end = min(self._at + len(buffer), self._size)
        if end <= self._at:
            return 0
        start_of_tail = self._size - len(self._tail)
        if self._at >= start_of_tail:
            data = self._tail[self._at - start_of_tail : end - start_of_tail]
        else:
            store, key = self._clients.client(self._uri)
            try:
                data = bytes(obstore.get_range(store, key, start=self._at, end=end))
            except _FAILED as error:
                raise _fail("read", self._uri, error) from error
        buffer[: len(data)] = data
        self._at += len(data)
        return len(data)


def open_tail(clients: ObjectClients, uri: str) -> tuple[io.RawIOBase, int]:
    """``uri`` opened for reading from its end (a parquet footer), and its size: one GET."""
    store, key = clients.client(uri)
    try:
        found = obstore.get(store, key, options={"range": {"suffix": TAIL_BYTES}})
        tail, size = bytes(found.bytes()), int(found.meta["size"])
    except _FAILED as error:
        raise _fail("read", uri, error) from error
    return _Tail(clients, uri, tail, size), size


def open_input(clients: ObjectClients, uri: str) -> io.BufferedReader:
    """``uri`` opened for reading, seekable (footers, deletion vectors: ranged reads)."""
    return io.BufferedReader(_Reader(clients, uri), buffer_size=64 * 1024)


def put_if_absent(clients: ObjectClients, uri: str, data: bytes) -> bool:
    """Create ``uri`` with ``data`` unless it exists (one conditional create); True if created.

    Raises:
        ConditionalCreateUnsupported: the store answered that it cannot create conditionally.
    """
    store, key = clients.client(uri)
    try:
        obstore.put(store, key, data, mode="create")
        return True
    except (AlreadyExistsError, PreconditionError):
        return False
    except NotSupportedError as error:
        bucket = split_uri(uri)[1]
        raise ConditionalCreateUnsupported(
            f"the {store_kind(uri)} store of bucket {bucket!r} cannot create an object only if it is "
            f"absent ({error}): commits to it would not be safe against another writer, so nothing is "
            "written there. Use a store with conditional writes (S3, GCS, Azure, or a compatible server)."
        ) from error
    except _FAILED as error:
        if "501" in str(error) or "NotImplemented" in str(error):
            raise ConditionalCreateUnsupported(
                f"the {store_kind(uri)} store behind {uri} does not implement conditional writes "
                "(If-None-Match): commits to it would not be safe against another writer, so nothing "
                "is written there."
            ) from error
        raise _fail("write", uri, error) from error


def write_new(clients: ObjectClients, uri: str, data: bytes) -> None:
    """Write the new object ``uri`` (an existing one is an error, as a local ``open(..., "x")``)."""
    if not put_if_absent(clients, uri, data):
        raise ObjectStoreError(f"cannot write {uri}: it exists already")


def replace(clients: ObjectClients, uri: str, data: bytes) -> None:
    """Write ``uri`` whole, over any object there (one put: readers see the old or the new bytes)."""
    store, key = clients.client(uri)
    try:
        obstore.put(store, key, data)
    except _FAILED as error:
        raise _fail("write", uri, error) from error


def _entries(clients: ObjectClients, uri: str) -> tuple[list[str], list[str]]:
    folders, names, _ = _listing(clients, uri)
    return folders, names


def _listing(clients: ObjectClients, uri: str) -> tuple[list[str], list[str], bool]:
    """The folders and files directly under ``uri``, and whether the folder's own marker exists:
    the zero-byte object ``<folder>/`` Hadoop's S3A makes (obstore lists it as the folder's key),
    a sign Spark made the folder even where it wrote nothing in it (an empty result), no file."""
    store, key = clients.client(uri)
    try:
        listed = obstore.list_with_delimiter(store, f"{key}/" if key else None)
    except _MISSING:
        return [], [], False
    except _FAILED as error:
        raise _fail("list", uri, error) from error
    folders = [posixpath.basename(p.rstrip("/")) for p in listed["common_prefixes"]]
    own = key.rstrip("/")
    names = [posixpath.basename(o["path"]) for o in listed["objects"] if o["path"].rstrip("/") != own]
    marker = any(o["path"].rstrip("/") == own for o in listed["objects"])
    return folders, names, marker


def list_names(clients: ObjectClients, uri: str) -> list[str]:
    """The names directly under the prefix ``uri`` (objects and "folders")."""
    folders, names = _entries(clients, uri)
    return sorted({*folders, *names})


def walk(clients: ObjectClients, root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """Top-down ``(folder, dirs, names)`` under the prefix ``root``, as ``os.walk`` (pruning works)."""
    pending = [root.rstrip("/")]
    while pending:
        folder = pending.pop()
        dirs, names = _entries(clients, folder)
        if not dirs and not names and folder != root.rstrip("/"):
            continue
        yield folder, dirs, names
        pending.extend(posixpath.join(folder, d) for d in reversed(dirs))


def head(clients: ObjectClients, uri: str) -> tuple[int, float] | None:
    """``(size, modification time in seconds)`` of the object ``uri``, None when there is none."""
    store, key = clients.client(uri)
    try:
        meta = obstore.head(store, key)
    except _MISSING:
        return None
    except _FAILED as error:
        raise _fail("look up", uri, error) from error
    return int(meta["size"]), meta["last_modified"].timestamp()


def is_dir(clients: ObjectClients, uri: str) -> bool:
    """Whether any object lies under the prefix ``uri``, or S3A's marker of it."""
    folders, names, marker = _listing(clients, uri)
    return bool(folders or names or marker)


def delete(clients: ObjectClients, uri: str) -> None:
    """Remove the object ``uri`` (no error when it is gone)."""
    store, key = clients.client(uri)
    try:
        obstore.delete(store, key)
    except _MISSING:
        return
    except _FAILED as error:
        raise _fail("delete", uri, error) from error


def delete_prefix(clients: ObjectClients, uri: str) -> None:
    """Remove every object under the prefix ``uri``."""
    store, key = clients.client(uri)
    try:
        found = [meta for batch in obstore.list(store, f"{key.rstrip('/')}/") for meta in batch]
        keys = [meta["path"] for meta in found]
        # S3A's folder markers (``<folder>/``, listed without their slash): deleted by their own key.
        keys += [f"{key.rstrip('/')}/", *(f"{meta['path']}/" for meta in found if meta["size"] == 0)]
        for start in range(0, len(keys), 1000):
            obstore.delete(store, keys[start : start + 1000])
    except _FAILED as error:
        raise _fail("delete the objects under", uri, error) from error
