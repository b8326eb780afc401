"""Where a Delta table lives: one value from the name a model or statement gives to the commit.

``TableLocation`` is the table's handle: its root (a local path or an object-store URI), its store
(``stores.py``: the storage calls there, chosen once, on first use, refusing by name a scheme where
no commit is safe) and the options its store needs to reach it (an object store's
endpoint, region or credentials provider; none on a local disk). The log's and the commit path's
functions take the location and call its store. Options never print: a location shows its path only
(they may carry secrets).

``place_table`` is the one rule for where ``<schema>.<identifier>`` lives, called by models
(``model/write.locate``), statements (``CREATE TABLE``, an interrupted binding's recovery) and
through them the catalog binding, so that a model and a statement can never put one name in two
folders: an explicit location wins (a model's ``location_root`` joined with its identifier, a
statement's ``LOCATION``), then the folder the catalog entry is bound to, then the schema's folder
joined with the identifier in lower case, as Spark places managed tables.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType

from dbt.adapters.deltamerge.common.store_options import is_object_uri
from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.paths import table_path_of
from dbt.adapters.deltamerge.delta.stores import Store, store_for


@dataclass(frozen=True)
class TableLocation:
    """A Delta table's root and its store's options.

    >>> TableLocation.of("file:/w/s.db/t"), str(TableLocation.of("/w/t", {"secret": "x"}))
    (TableLocation(path='/w/s.db/t'), '/w/t')
    """

    path: str
    options: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), repr=False, compare=False
    )

    @classmethod
    def of(cls, uri: str, options: Mapping[str, str] | None = None) -> TableLocation:
        """The location of ``uri`` (a path or ``file:`` URI), with ``options`` for its store."""
        return cls(table_path_of(uri), MappingProxyType(dict(options or {})))

    def __str__(self) -> str:
        return self.path

    @cached_property
    def store(self) -> Store:
        """The store the table is on (``stores.py``), chosen once, when first asked (a location only
        named, a catalog entry Delta's own reader serves, asks nothing of it). A scheme where no
        commit is safe was refused when the location was made (``table_path_of``)."""
        return store_for(self.path)

    @property
    def name(self) -> str:
        """The name of the table's folder.

        >>> TableLocation.of("s3://lake/wh/orders/").name
        'orders'
        """
        return os.path.basename(os.path.normpath(self.path))

    @property
    def log_folder(self) -> str:
        """The table's ``_delta_log`` folder."""
        return os.path.join(self.path, "_delta_log")

    def commit_file(self, version: int) -> str:
        """The commit file of ``version``.

        >>> TableLocation.of("/t").commit_file(3)
        '/t/_delta_log/00000000000000000003.json'
        """
        return os.path.join(self.log_folder, f"{version:020d}.json")

    def inner(self, folder: str) -> TableLocation:
        """The location of a table in ``folder`` inside this one (CDC apply's state), with its options."""
        return TableLocation(os.path.join(self.path, folder), self.options)

    def deltalake_options(self) -> dict[str, str] | None:
        """deltalake's ``storage_options`` for this table: its own options, else its store's."""
        return dict(self.options) if self.options else self.store.deltalake_options(self.path)


def place_table(
    identifier: str, *, explicit: str | None, bound: str | None, schema_folder: Callable[[], str]
) -> TableLocation:
    """Where table ``identifier`` of a schema lives (the module's rule); ``schema_folder`` is asked
    only when neither an explicit location nor a binding decides.

    >>> place_table("Orders", explicit=None, bound=None, schema_folder=lambda: "file:/w/s.db").path
    '/w/s.db/orders'
    >>> place_table("t", explicit="/data/t", bound="/w/s.db/t", schema_folder=lambda: "/w").path
    '/data/t'
    """
    if explicit:
        return _readable(TableLocation.of(explicit))
    if bound:
        return TableLocation.of(bound)
    return _readable(TableLocation.of(os.path.join(table_path_of(schema_folder()), identifier.lower())))


_ESCAPE_LIKE = re.compile(r"%[0-9A-Fa-f]{2}")


def _readable(location: TableLocation) -> TableLocation:
    """``location``, unless it is a local path holding what reads as a URI escape (``%20``), which
    delta-rs (the log's reader) decodes, through symbolic links too: such a table would be
    written and then not found. Refused before anything is written, naming the path.

    >>> _readable(TableLocation.of("/w/50% off #1/t")).path
    '/w/50% off #1/t'
    """
    escape = None if is_object_uri(location.path) else _ESCAPE_LIKE.search(location.path)
    if escape is not None:
        raise StorageError(
            f"{location.path}: a local folder name holding '%' followed by two hex digits "
            f"({escape.group(0)!r}) cannot hold a Delta table here: delta-rs, "
            "which reads the Delta log, takes it for a URI escape and looks in another folder. Nothing "
            "was written; choose a location_root or schema folder without it ('%' alone is fine)."
        )
    return location
