"""A bound version whose files carry deletion vectors: a view that leaves the deleted rows out.

Spark's parquet reader cannot skip the rows a deletion vector deletes. Copying each such file's
live rows at every binding would undo merge-on-read (a merge that marks rows in every file would
copy the whole table after each run). Instead the version's folder links the data files as they
are, and beside them, in ``MASKS_DIR`` (Spark's listing skips names starting with ``_``), one
parquet file lists every 64-row block holding a deleted row: the file's name in the folder, the
block (``row_index >> 6``) and a mask with bit ``row_index & 63`` set per deleted row. The catalog
entry is then a view: the files table (the version folder as a ``USING parquet`` table, named
``<identifier>__deltamerge_files``) left-joined with the masks on file name and block (a
broadcast join; no row is hashed by more than a short name and a long), keeping the rows whose bit
is clear, in the Delta schema's column order. Its properties are the binding's, so dbt and our
statements find the Delta table behind it as behind a bound table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import FrozenBitMap64
from pyspark.sql import types as T

from dbt.adapters.deltamerge.binding.record import view_record
from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal
from dbt.adapters.deltamerge.delta import Stores, storage
from dbt.adapters.deltamerge.delta.data import block_masks

MASKS_DIR = "_masks"
FILES_SUFFIX = "__deltamerge_files"
# On the view: the files table's identifier. On the files table: the view it serves.
FILES_PROPERTY = "deltamerge.files"
FILES_OF_PROPERTY = "deltamerge.files_of"
_FILE, _BLOCK, _MASK = "file", "block", "mask"
# Names Spark reports in ``_metadata.file_name`` exactly as they are in the folder.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9._-]+\Z")


def files_identifier(identifier: str) -> str:
    """The files table behind the view bound as ``identifier``."""
    return identifier + FILES_SUFFIX


def can_mask(schema: T.StructType) -> bool:
    """Whether a view can drop deleted rows of a table of ``schema`` (a column named ``_metadata``
    hides the file metadata the view reads: that table's files are copied instead).

    >>> can_mask(T.StructType([T.StructField("id", T.LongType())]))
    True
    >>> can_mask(T.StructType([T.StructField("_METADATA", T.LongType())]))
    False
    """
    return all(f.name.lower() != "_metadata" for f in schema.fields)


def link_name(basename: str, used: set[str], *, plain: bool) -> str:
    """A file's name in a version folder, unique in the whole folder (the masks key files by name
    alone, across partition folders); ``plain``: one Spark reports unescaped, for a masked file.

    >>> used = {"p.parquet"}
    >>> link_name("q.parquet", used, plain=True), link_name("p.parquet", used, plain=False)
    ('q.parquet', '1-p.parquet')
    >>> link_name("a b.parquet", used, plain=True), link_name("a b.parquet", used, plain=False)
    ('masked.parquet', 'a b.parquet')
    """
    candidate = basename if not plain or _PLAIN_NAME.match(basename) else "masked.parquet"
    name, n = candidate, 0
    while name in used:
        n += 1
        name = f"{n}-{candidate}"
    used.add(name)
    return name


def write_masks(stores: Stores, folder: str, vectors: Sequence[tuple[str, FrozenBitMap64]]) -> None:
    """Write ``MASKS_DIR`` of a version folder (on ``stores``): the blocks and masks of each (link
    name, deleted rows)."""
    names: list[np.ndarray] = []
    blocks: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    for name, deleted in vectors:
        block, mask = block_masks(deleted)
        names.append(np.full(len(block), name, dtype=object))
        blocks.append(block.view(np.int64))
        masks.append(mask.view(np.int64))
    table = pa.table(
        {
            _FILE: pa.array(np.concatenate(names) if names else [], pa.string()),
            _BLOCK: pa.array(np.concatenate(blocks) if blocks else [], pa.int64()),
            _MASK: pa.array(np.concatenate(masks) if masks else [], pa.int64()),
        }
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    storage.make_dirs(stores, os.path.join(folder, MASKS_DIR))
    storage.write_durably(
        stores, os.path.join(folder, MASKS_DIR, "masks.parquet"), sink.getvalue().to_pybytes()
    )


def has_masks(stores: Stores, folder: str) -> bool:
    """Whether a version folder (on ``stores``) has files that need the view (some file has
    deleted rows)."""
    return storage.is_dir(stores, os.path.join(folder, MASKS_DIR))


def view_columns(schema: T.StructType) -> str:
    """A bound view's column list: each column's name and, where the schema has one, its comment.

    >>> view_columns(T.StructType([T.StructField("id", T.LongType(), metadata={"comment": "key"})]))
    "`id` COMMENT 'key'"
    """
    return ", ".join(
        quote_identifier(f.name)
        + (
            f" COMMENT {string_literal(f.metadata['comment'])}"
            if isinstance(f.metadata.get("comment"), str)
            else ""
        )
        for f in schema.fields
    )


def view_statement(
    name: str, files_name: str, folder: str, schema: T.StructType, comment: str, properties: str
) -> str:
    r"""``CREATE VIEW name`` over the files table, leaving out the rows the masks delete. The
    aliases are ``_dm_rows`` / ``_dm_masks``: Spark resolves ``d._metadata`` against a column ``d``
    before a table alias ``d``, so a one-letter alias broke tables with such a column.

    >>> statement = view_statement("`s`.`v`", "`s`.`f`", "/t/v1", T.StructType([
    ...     T.StructField("id", T.LongType(), metadata={"comment": "key"})]), "", "TBLPROPERTIES ()")
    >>> print(statement.replace(" LEFT", "\nLEFT").replace(" AND", "\nAND").replace(" WHERE", "\nWHERE")
    ...       .replace(" SELECT", "\nSELECT").replace(" WITH", "\nWITH").replace(" OR", "\nOR"))
    CREATE VIEW `s`.`v` (`id` COMMENT 'key')  TBLPROPERTIES () AS
    WITH _deltamerge_binding AS (SELECT X'2F742F7631' AS folder)
    SELECT _dm_rows.`id` FROM `s`.`f` _dm_rows
    LEFT JOIN parquet.`/t/v1/_masks` _dm_masks ON _dm_masks.file = _dm_rows._metadata.file_name
    AND _dm_masks.block = shiftright(_dm_rows._metadata.row_index, 6)
    WHERE _dm_masks.mask IS NULL
    OR (shiftrightunsigned(_dm_masks.mask, CAST(_dm_rows._metadata.row_index & 63 AS INT)) & 1) = 0
    """
    columns = view_columns(schema)
    selected = ", ".join(f"_dm_rows.{quote_identifier(f.name)}" for f in schema.fields)
    masks = quote_identifier(os.path.join(folder, MASKS_DIR))
    return (
        f"CREATE VIEW {name} ({columns}) {comment} {properties} AS {view_record(folder)}"
        f"SELECT {selected} FROM {files_name} _dm_rows "
        f"LEFT JOIN parquet.{masks} _dm_masks ON _dm_masks.{_FILE} = _dm_rows._metadata.file_name "
        f"AND _dm_masks.{_BLOCK} = shiftright(_dm_rows._metadata.row_index, 6) "
        f"WHERE _dm_masks.{_MASK} IS NULL "
        f"OR (shiftrightunsigned(_dm_masks.{_MASK}, CAST(_dm_rows._metadata.row_index & 63 AS INT)) & 1) = 0"
    )
