"""Descriptions kept where every Delta reader sees them: the table's ``metaData``.

The table description is ``metaData.description`` and a column's is the ``comment`` in its
schema field's metadata, as Delta's ``COMMENT ON TABLE`` / ``ALTER TABLE ... CHANGE COLUMN ...
COMMENT`` record them. Writing them is one metadata-only commit, and none when they are
already there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pyspark.sql import types as T

from dbt.adapters.deltamerge.delta.log.definition import definition_actions
from dbt.adapters.deltamerge.delta.log.schema import schema_to_json, to_delta_schema
from dbt.adapters.deltamerge.delta.log.snapshot import Snapshot
from dbt.adapters.deltamerge.delta.txn.actions import CommitActions
from dbt.adapters.deltamerge.delta.txn.commit import CommitInfo
from dbt.adapters.deltamerge.delta.txn.transaction import CommitOptions, WriteResult, commit_files


def with_comments(schema: T.StructType, comments: Mapping[str, str]) -> T.StructType:
    """``schema`` with ``comments`` (by column name, case-insensitive) in its top-level fields.

    >>> s = with_comments(T.StructType([T.StructField("Id", T.LongType())]), {"id": "the key"})
    >>> s.fields[0].metadata
    {'comment': 'the key'}
    """
    by_lower = {k.lower(): v for k, v in comments.items()}
    fields = []
    for field in schema.fields:
        comment = by_lower.get(field.name.lower())
        metadata = dict(field.metadata) if comment is None else {**field.metadata, "comment": comment}
        fields.append(T.StructField(field.name, field.dataType, field.nullable, metadata))
    return T.StructType(fields)


def set_descriptions(
    snapshot: Snapshot, *, description: str | None, column_comments: Mapping[str, str]
) -> WriteResult:
    """Commit the table description (unless None) and column comments; nothing if already set."""
    metadata = snapshot.metadata
    schema = with_comments(snapshot.schema, column_comments)
    changed = replace(
        metadata,
        description=metadata.description if description is None else description,
        schema_string=schema_to_json(to_delta_schema(schema)),
    )
    if changed.description == metadata.description and schema == snapshot.schema:
        return WriteResult(None, "SET TBLPROPERTIES", {}, snapshot)
    target = replace(snapshot, metadata=changed)
    operation = "SET TBLPROPERTIES" if changed.description != metadata.description else "CHANGE COLUMN"
    info = CommitInfo(operation, {"description": changed.description or ""}, {})
    return commit_files(
        snapshot,
        CommitActions(leading=definition_actions(snapshot, target)),
        CommitOptions(info),
    )
