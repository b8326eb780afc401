"""Catalog binding: ``<schema>.<identifier>`` in Spark's catalog reads one Delta version.

Spark without Delta's jars cannot read a Delta table, so each bound version gets a folder of hard
links to exactly its live files (``links``) and an external ``USING parquet`` entry with the Delta
schema over it (``entry``); files with deletion vectors are linked as they are and the entry is a
view leaving their deleted rows out (``view``); a file of a table that maps column names is a copy
of its live rows (``copies``). Where the session has Delta's jars and catalog: ``USING delta``
at the table's location (``delta_catalog``). Callers import this face.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.binding.delta_catalog import delta_catalog, entry_location
from dbt.adapters.deltamerge.binding.entry import (
    Binding,
    bind,
    binding,
    listed,
    refresh,
    registered_root,
    schema_folder,
    table_name,
)
from dbt.adapters.deltamerge.binding.links import (
    KEEP_BINDINGS,
    bindings_root,
    interrupted_binding,
    link_version,
    prune_bindings,
    rebinding_marker,
)
from dbt.adapters.deltamerge.binding.record import (
    BINDINGS_DIR,
    LOCATION_PROPERTY,
    REDACTED,
    ROOT_PROPERTY,
    TRAVEL_DIR,
    VERSION_PROPERTY,
    listed_as_ours,
    marked,
    shown_path,
)
from dbt.adapters.deltamerge.binding.view import (
    FILES_OF_PROPERTY,
    FILES_PROPERTY,
    can_mask,
    files_identifier,
    has_masks,
    view_statement,
)

__all__ = [
    "BINDINGS_DIR",
    "FILES_OF_PROPERTY",
    "FILES_PROPERTY",
    "KEEP_BINDINGS",
    "LOCATION_PROPERTY",
    "REDACTED",
    "ROOT_PROPERTY",
    "TRAVEL_DIR",
    "VERSION_PROPERTY",
    "Binding",
    "bind",
    "binding",
    "bindings_root",
    "can_mask",
    "delta_catalog",
    "entry_location",
    "files_identifier",
    "has_masks",
    "interrupted_binding",
    "link_version",
    "listed",
    "listed_as_ours",
    "marked",
    "prune_bindings",
    "rebinding_marker",
    "refresh",
    "registered_root",
    "schema_folder",
    "shown_path",
    "table_name",
    "view_statement",
]
