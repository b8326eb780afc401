"""Where a Delta table lives: one value from the name a model or statement gives to the commit.

``TableLocation`` is the table's handle: its root (a local path or an object-store URI) and the
stores it was placed with (``stores.Stores``: a dbt invocation's, made from its profile's options),
which give its store (``TableLocation.store``: the storage calls there, chosen once, on first use,
refusing by name a scheme where no commit is safe). The log's and the commit path's functions take
the location and call its store; a location made from another (``inner``, a snapshot's) keeps its
stores, so a model on a bucket with its own credentials is read and committed with them all the
way down. Stores never print: a location shows its path only (options may carry secrets).

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
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from dbt.adapters.deltamerge.common.store_options import is_object_uri
from dbt.adapters.deltamerge.delta.errors import StorageError
from dbt.adapters.deltamerge.delta.paths import table_path_of
from dbt.adapters.deltamerge.delta.stores import Store, Stores


@dataclass(frozen=True)
class TableLocation:
    """A Delta table's root and the stores that reach it.

    >>> on_s3 = TableLocation.of("s3://lake/t", Stores({"AWS_SECRET_ACCESS_KEY": "x"}))
    >>> TableLocation.of("file:/w/s.db/t"), on_s3, str(TableLocation.of("/"))
    (TableLocation(path='/w/s.db/t'), TableLocation(path='s3://lake/t'), '/')
    """

    path: str
    stores: Stores = field(default_factory=Stores, repr=False, compare=False)

    @classmethod
    def of(cls, uri: str, stores: Stores | None = None) -> TableLocation:
        """The location of ``uri`` (a path or ``file:`` URI) reached through ``stores`` (the
        engine always gives its invocation's; without, the environment's, as delta-rs)."""
        return cls(table_path_of(uri), stores if stores is not None else Stores())

    def __str__(self) -> str:
        return self.path

    @cached_property
    def store(self) -> Store:
        """The store the table is on (``stores.py``), chosen once, when first asked (a location only
        named, a catalog entry Delta's own reader serves, asks nothing of it). A scheme where no
        commit is safe was refused when the location was made (``table_path_of``)."""
        return self.stores.store_for(self.path)

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
        """The location of a table in ``folder`` inside this one (CDC apply's state), on its stores."""
        return TableLocation(os.path.join(self.path, folder), self.stores)

    def deltalake_options(self) -> dict[str, str] | None:
        """deltalake's ``storage_options`` for this table (its store's: none on a local disk)."""
        return self.store.deltalake_options(self.path)


def place_table(
    identifier: str,
    *,
    explicit: str | None,
    bound: str | None,
    schema_folder: Callable[[], str],
    stores: Stores,
) -> TableLocation:
    """Where table ``identifier`` of a schema lives (the module's rule), reached through ``stores``
    (the invocation's); ``schema_folder`` is asked only when neither an explicit location nor a
    binding decides.

    >>> stores, schema_folder = Stores({}), lambda: "file:/w/s.db"
    >>> place_table("Orders", explicit=None, bound=None, schema_folder=schema_folder, stores=stores).path
    '/w/s.db/orders'
    >>> place_table("t", explicit="/data/t", bound="/w/t", schema_folder=schema_folder, stores=stores).path
    '/data/t'
    """
    if explicit:
        return _readable(TableLocation.of(explicit, stores))
    if bound:
        return TableLocation.of(bound, stores)
    folder = os.path.join(table_path_of(schema_folder()), identifier.lower())
    return _readable(TableLocation.of(folder, stores))


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
