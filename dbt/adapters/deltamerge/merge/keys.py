"""An assignment's key resolved as Delta resolves it under schema evolution (pure: no Spark job).

Delta (``DeltaMergeActionResolver.resolveSingleTargetColumn``) resolves the key of ``SET <key> =``
(and of an insert's column list) against the table as it is; when that fails and schema evolution
is on, against the source, whose column (and fields) then name what evolution adds to the table.
So, as measured on Delta on Spark: ``SET s.extra = s.extra`` adds and sets ``extra``; with a struct
column ``t`` on both sides, ``SET t.b = s.b`` sets the new field ``t.b`` (not a new column ``b``);
``SET t.extra = s.extra`` and ``SET t.x.b = s.x.b`` (target-qualified, naming what the table does
not have yet) are refused. A NOT MATCHED BY SOURCE clause, which does not see the source, resolves
against the table only. ``keyed_spec`` writes each key as the table's path (``t.col.field``), so
the steps after it (``scope.assigned_path``) read one meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta.log import find_field
from dbt.adapters.deltamerge.merge.clauses import Assignment, MergeClause
from dbt.adapters.deltamerge.merge.refusals import clause_type
from dbt.adapters.deltamerge.merge.scope import ScopeError, column_path, columns_sql, path_sql
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.merge.structs import field_not_found


class _Unresolved(Exception):
    """No column of the side has the key's name."""


def _resolved(parts: Sequence[str], alias: str, schema: T.StructType) -> tuple[str, ...]:
    """The column (the side's spelling) and fields ``parts`` name on one side, as Spark resolves a
    name: the alias and a column first, else a column; each field below it must exist.

    Raises:
        _Unresolved: no column has the name.
        ScopeError: a field is missing (Spark's ``FIELD_NOT_FOUND``).
    """
    columns = {f.name.lower(): f for f in schema.fields}
    if len(parts) > 1 and parts[0].lower() == alias.lower() and parts[1].lower() in columns:
        column, fields = columns[parts[1].lower()], tuple(parts[2:])
    elif parts[0].lower() in columns:
        column, fields = columns[parts[0].lower()], tuple(parts[1:])
    else:
        raise _Unresolved
    data_type = column.dataType
    for name in fields:
        if not isinstance(data_type, T.StructType):
            break  # a field of a non-struct: the assignment's own error (structs.nested_update)
        found = find_field(data_type, name)
        if found is None:
            raise ScopeError(field_not_found(name, data_type))
        data_type = found.dataType
    return (column.name, *fields)


def resolved_key(
    key: str, spec: MergeSpec, clause: MergeClause, *, target: T.StructType, source: T.StructType
) -> tuple[str, ...]:
    """The table's path ``key`` assigns in ``clause`` under schema evolution (the module's rule).

    >>> t = T.StructType([T.StructField("key", T.IntegerType()),
    ...     T.StructField("t", T.StructType([T.StructField("a", T.IntegerType())]))])
    >>> s = T.StructType([*t.fields[:1], T.StructField("b", T.IntegerType()),
    ...     T.StructField("t", T.StructType([T.StructField("a", T.IntegerType()),
    ...                                      T.StructField("b", T.IntegerType())]))])
    >>> spec = MergeSpec.from_config("m", {"merge_condition": "t.key = s.key", "source_alias": "s",
    ...     "target_alias": "t", "when_matched": [{"action": "update", "set": {"t.b": "s.b"}}]})
    >>> [resolved_key(k, spec, spec.matched[0], target=t, source=s) for k in ("t.b", "s.b", "t.t.a")]
    [('t', 'b'), ('b',), ('t', 'a')]
    """
    parts = column_path(key)
    try:
        return _resolved(parts, spec.target_alias, target)
    except (_Unresolved, ScopeError) as error:
        if clause.kind == "not_matched_by_source":  # the source is not this clause's to see
            if isinstance(error, ScopeError):
                raise
            names, alias = [f.name for f in target.fields], spec.target_alias
        else:
            try:
                return _resolved(parts, spec.source_alias, source)
            except _Unresolved:
                names, alias = [f.name for f in source.fields], spec.source_alias
    raise ScopeError(
        f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {key} in {clause_type(clause)} clause "
        f"given columns {columns_sql(alias, names)}."
    )


def keyed_spec(spec: MergeSpec, *, target: T.StructType, source: T.StructType) -> MergeSpec:
    """``spec`` with every assignment's key written as the table's path (``resolved_key``, the
    table's schema before evolution); what cannot be resolved raised as one ``SpecError``."""
    problems: list[str] = []

    def clause(c: MergeClause, where: str) -> MergeClause:
        if c.assignments is None:
            return c
        keyed: list[Assignment] = []
        for assignment in c.assignments:
            try:
                path = resolved_key(assignment.column, spec, c, target=target, source=source)
            except ScopeError as error:
                problems.append(f"{where}: {error}")
                keyed.append(assignment)
                continue
            keyed.append(replace(assignment, column=path_sql((spec.target_alias, *path))))
        return replace(c, assignments=tuple(keyed))

    def each(kind: str, clauses: tuple[MergeClause, ...]) -> tuple[MergeClause, ...]:
        return tuple(clause(c, f"{kind} clause {i + 1} ({c.action})") for i, c in enumerate(clauses))

    keyed = replace(
        spec,
        matched=each("matched", spec.matched),
        not_matched=each("not_matched", spec.not_matched),
        not_matched_by_source=each("not_matched_by_source", spec.not_matched_by_source),
    )
    if problems:
        raise SpecError(spec.model, problems)
    return keyed
