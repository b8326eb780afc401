"""What a catalog entry of ours says, read only where Spark shows it whole.

Spark redacts a table property's value in ``SHOW TBLPROPERTIES``, ``SHOW TABLE EXTENDED``,
``DESCRIBE TABLE EXTENDED`` and ``SHOW CREATE TABLE`` when its key or its value matches
``spark.sql.redaction.options.regex`` (default ``(?i)url``) or ``spark.redaction.regex`` (default
``(?i)secret|password|token|access[.]?key``), and a user may set either to anything (``.*``). A
table under ``/data/curly/`` or named ``api_tokens`` would then lose its path. Keys are never
redacted, and neither is an entry's ``Location`` nor a view's text, whatever the patterns. So:

- an entry is ours when its properties have the key ``deltamerge.location`` (its value is for
  people and for older releases);
- its version folder (``<root>/v<20-digit version>``) is the entry's ``Location`` (a files table),
  or, for a view, the hex literal of the ``WITH`` clause that opens its text (``view_record``; a
  view bound before that clause existed: its files table's ``Location``, one more read);
- its version is the folder's name, its binding root the folder's parent;
- its Delta table is the folder holding the root (``<table>/_deltamerge_catalog``, and
  ``.../_travel/v<N>`` below it), or, for a table registered by its location (a root under the
  warehouse's ``_deltamerge_catalog/<hash>``), the path in the file ``TABLE_FILE`` there. An entry
  an older release bound under such a root, which has no such file, is read from its property
  value while Spark shows that whole.

The parsing is of what this package wrote (a folder name, a hex literal), never of a value a
redaction may have replaced.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from dbt.adapters.deltamerge.delta import DeltaError, Stores, TableLocation, storage

LOCATION_PROPERTY = "deltamerge.location"
VERSION_PROPERTY = "deltamerge.version"
ROOT_PROPERTY = "deltamerge.bindings"
BINDINGS_DIR = "_deltamerge_catalog"
TRAVEL_DIR = "_travel"
# In a root under the warehouse (a table registered by its location): the table's path, UTF-8.
TABLE_FILE = "_table_path"
# What Spark shows in place of a redacted value (``Utils.REDACTION_REPLACEMENT_TEXT``).
REDACTED = "*********(redacted)"
_RECORD_NAME = "_deltamerge_binding"
_RECORD = re.compile(rf"\s*WITH {_RECORD_NAME} AS \(SELECT X'([0-9A-F]*)' AS folder\)")
_FOLDER = re.compile(r"v(\d{20})\Z")


def view_record(folder: str) -> str:
    """The ``WITH`` clause a bound view's text opens with: its version folder, hex-encoded (no
    character of a path can break it). Spark drops the unused clause when it plans the view.

    >>> view_record("/w/t/_deltamerge_catalog/v00000000000000000001")[:60]
    "WITH _deltamerge_binding AS (SELECT X'2F772F742F5F64656C7461"
    """
    return f"WITH {_RECORD_NAME} AS (SELECT X'{folder.encode('utf-8').hex().upper()}' AS folder) "


def view_folder(view_text: str) -> str | None:
    """The version folder a view's text records (``view_record``), or None (an older view).

    >>> view_folder(view_record("/w/ü rl%20#/v00000000000000000001") + "SELECT 1")
    '/w/ü rl%20#/v00000000000000000001'
    >>> view_folder("SELECT 1") is None
    True
    """
    found = _RECORD.match(view_text)
    return bytes.fromhex(found.group(1)).decode("utf-8") if found else None


def shown_path(location: str) -> str:
    """A path from a location as Spark shows it: a ``file:`` URI's path as it is (Spark shows
    ``%``, ``#`` and spaces undecoded), an object-store URI without a trailing slash.

    >>> shown_path("file:/w/a%20b #/v1"), shown_path("file:///w/t"), shown_path("s3a://b/w/t/")
    ('/w/a%20b #/v1', '/w/t', 's3a://b/w/t')
    """
    if location.startswith("file:"):
        return "/" + location[len("file:") :].lstrip("/")
    return location.rstrip("/")


def has_key(listing: str, key: str) -> bool:
    """Whether a ``[k=v, k=v]`` properties listing has ``key`` (keys are never redacted).

    >>> has_key("[deltamerge.location=*********(redacted), x=1]", LOCATION_PROPERTY)
    True
    >>> has_key("[note=see deltamerge.location]", LOCATION_PROPERTY)
    False
    """
    return re.search(rf"(?:^\[|, ){re.escape(key)}=", listing) is not None


def marked(details: Mapping[str, str]) -> bool:
    """Whether an entry's details (``DESCRIBE TABLE EXTENDED`` rows or ``SHOW TABLE EXTENDED``
    lines, by name) are an entry of ours."""
    return has_key(details.get("Table Properties", "").strip(), LOCATION_PROPERTY)


def listed_as_ours(information: str) -> bool:
    r"""Whether a ``SHOW TABLE EXTENDED`` text (dbt's relation cache) is of an entry of ours.

    >>> listed_as_ours("Table: t\nTable Properties: [deltamerge.location=*********(redacted)]\n")
    True
    """
    return marked(dict(line.split(": ", 1) for line in information.splitlines() if ": " in line))


def is_view(details: Mapping[str, str]) -> bool:
    """Whether the described entry is a view."""
    return details.get("Type", "").strip().upper() == "VIEW"


def entry_folder(details: Mapping[str, str]) -> str | None:
    """The version folder an entry of ours records: its location, or its view text's record
    (None: a view bound before the record)."""
    if is_view(details):
        return view_folder(details.get("View Text", ""))
    location = details.get("Location", "").strip()
    return shown_path(location) if location else None


def folder_version(folder: str) -> tuple[str, int]:
    """The binding root and the version of a version folder; ``ValueError`` when it is none.

    >>> folder_version("/w/t/_deltamerge_catalog/v00000000000000000007")
    ('/w/t/_deltamerge_catalog', 7)
    """
    found = _FOLDER.match(os.path.basename(folder))
    if found is None:
        raise ValueError(f"{folder!r} is no version folder of a binding")
    return os.path.dirname(folder), int(found.group(1))


def registry_root(root: str) -> str | None:
    """The root under the warehouse a binding root belongs to, for a table registered by its
    location (``<warehouse>/_deltamerge_catalog/<hash>``); None for a root inside its table.

    >>> registry_root("/w/t/_deltamerge_catalog"), registry_root("/w/t/_deltamerge_catalog/_travel/v3")
    (None, None)
    >>> registry_root("/w/_deltamerge_catalog/0a1b/_travel/v3")
    '/w/_deltamerge_catalog/0a1b'
    """
    head, below = _split_at_bindings(root)
    if not below or below[0] == TRAVEL_DIR:
        return None
    return f"{head}/{BINDINGS_DIR}/{below[0]}"


def table_of_root(root: str) -> str | None:
    """The Delta table a root inside its table belongs to (None: a registered table's root).

    >>> table_of_root("s3a://b/w/t/_deltamerge_catalog/_travel/v3")
    's3a://b/w/t'
    >>> table_of_root("/w/_deltamerge_catalog/ab") is None
    True
    """
    head, below = _split_at_bindings(root)
    if below and below[0] != TRAVEL_DIR:
        return None
    return head


def _split_at_bindings(root: str) -> tuple[str, list[str]]:
    parts = root.rstrip("/").split("/")
    if BINDINGS_DIR not in parts:
        raise ValueError(f"{root!r} is no binding root")
    at = len(parts) - 1 - parts[::-1].index(BINDINGS_DIR)
    return "/".join(parts[:at]), parts[at + 1 :]


def note_table(root: str, table: TableLocation) -> None:
    """Record ``table``'s path in the registry root of ``root`` (once; nothing for a root inside its
    table): where an entry's table is read back from (``table_of``)."""
    registry = registry_root(root)
    if registry is None:
        return
    path, stores = os.path.join(registry, TABLE_FILE), table.stores
    if not storage.is_file(stores, path):  # of two binders, one creates it whole; no reader sees a part
        storage.make_dirs(stores, registry)
        storage.put_if_absent(stores, path, table.path.encode("utf-8"))


def table_of(root: str, details: Mapping[str, str], stores: Stores) -> str:
    """The Delta table of an entry whose version folder is under ``root`` (read through
    ``stores``); a ``DeltaError`` when neither the root nor, for an older entry, its shown
    property says (a redacted value)."""
    table = table_of_root(root)
    if table is not None:
        return table
    registry = registry_root(root)
    assert registry is not None
    try:
        return storage.read_bytes(stores, os.path.join(registry, TABLE_FILE)).decode("utf-8")
    except storage.StorageError:
        pass
    shown = shown_properties(details.get("Table Properties", "")).get(LOCATION_PROPERTY)
    if shown is None or shown == REDACTED:
        raise DeltaError(
            f"the catalog entry {details.get('Database', '')}.{details.get('Table', '')} was registered by "
            f"an older release under {registry}, which does not name its Delta table, and Spark redacts the "
            "path in its properties: register the table again (convert_to_delta with relation_name)"
        )
    return shown


def shown_properties(listing: str) -> dict[str, str]:
    r"""Our properties as a ``[k=v, k=v]`` listing shows them (values possibly redacted): for
    entries older releases bound, and for people.

    >>> shown_properties("[deltamerge.location=/w/a, b, deltamerge.version=7]")
    {'deltamerge.location': '/w/a, b', 'deltamerge.version': '7'}
    """
    body = listing.strip()[1:-1] if listing.strip().startswith("[") else ""
    keys = list(re.finditer(r"(?:^|, )(deltamerge\.[a-z_]+)=", body))
    return {
        m.group(1): body[m.end() : keys[i + 1].start() if i + 1 < len(keys) else None]
        for i, m in enumerate(keys)
    }
