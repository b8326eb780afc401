"""pyiceberg's file IO over a table's store: Iceberg's files go where the table's do, as its commits.

pyiceberg writes manifests, manifest lists and metadata files through a ``FileIO``; this one
reaches the table's own store (the local disk or the invocation's object store, with the
profile's credentials), so the Iceberg side needs no second configuration. Every file is
created whole and only if absent (the store's put-if-absent, as a Delta commit): Iceberg's files
are named for the Delta version they convert and their content follows from it (``convert.py``),
so a second writer converting the same version finds the first one's file and keeps it, and a
reader never sees a half-written one.
"""

from __future__ import annotations

import io
from types import TracebackType

from pyiceberg.io import FileIO, InputFile, InputStream, OutputFile, OutputStream

from dbt.adapters.deltamerge.delta.stores import Store


class StoreInput(InputFile):
    """A file read whole from the store."""

    def __init__(self, store: Store, location: str) -> None:
        super().__init__(location)
        self._store = store

    def __len__(self) -> int:
        return self._store.size_and_mtime(self.location)[0]

    def exists(self) -> bool:
        return self._store.exists(self.location)

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._store.read_bytes(self.location))


class _Created(io.BytesIO):
    """The bytes of a file being created, put into the store (if absent) when closed."""

    def __init__(self, output: StoreOutput) -> None:
        super().__init__()
        self._output = output

    def close(self) -> None:
        if not self.closed:
            self._output.created(self.getvalue())
        super().close()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            super().close()  # a failed write puts nothing


class StoreOutput(OutputFile):
    """A file created whole, only if absent: ``written`` says whether this writer's bytes landed."""

    def __init__(self, store: Store, location: str) -> None:
        super().__init__(location)
        self._store = store
        self._length: int | None = None
        self.written = False

    def __len__(self) -> int:
        return self._length if self._length is not None else self._store.size_and_mtime(self.location)[0]

    def exists(self) -> bool:
        return self._store.exists(self.location)

    def to_input_file(self) -> InputFile:
        return StoreInput(self._store, self.location)

    def create(self, overwrite: bool = False) -> OutputStream:
        return _Created(self)

    def created(self, data: bytes) -> None:
        """Put ``data`` unless the file exists (then the existing one, of the same content, stays)."""
        self._length = len(data)
        self._store.make_dirs(self.location.rsplit("/", 1)[0])
        self.written = self._store.put_if_absent(self.location, data)


class StoreFileIO(FileIO):
    """pyiceberg's ``FileIO`` for one table's store."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self._store = store

    def new_input(self, location: str) -> InputFile:
        return StoreInput(self._store, location)

    def new_output(self, location: str) -> OutputFile:
        return StoreOutput(self._store, location)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        path = location if isinstance(location, str) else location.location
        self._store.delete_file(path, missing_ok=True)
