"""Resolving a clause set against the target's and source's schemas (no Spark jobs).

Every update or insert becomes one SQL expression per target column, as Delta's
``resolveReferencesAndSchema`` does: ``*`` takes each target column from the source
column of the same name (names match case-insensitively, as Spark resolves them); an
update keeps the target's value in columns it does not assign; an insert writes the column's
default, a new identity value or null there, and a generated column neither assigns is computed
from the row's new values (``_completed``). An assignment names a target column, or a field of
one (``SET value.b = ...``: the column is rebuilt around it, ``structs.nested_update``); a struct
value is assigned by name (``structs.by_name``). Unknown, duplicate, conflicting or missing columns
are reported together, in Delta's words (``DELTA_MERGE_UNRESOLVED_EXPRESSION``,
``DELTA_CONFLICT_SET_COLUMN``, ``DELTA_DUPLICATE_COLUMNS_ON_INSERT`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import conjunction, qualified, quote_identifier
from dbt.adapters.deltamerge.delta import Snapshot
from dbt.adapters.deltamerge.delta.data import computed_columns, default_value, generated_columns, substituted
from dbt.adapters.deltamerge.delta.log import (
    Identity,
    evolved_schema,
    explicit_values_refused,
    identity_value_column,
)
from dbt.adapters.deltamerge.merge.clauses import ClauseKind, MergeClause
from dbt.adapters.deltamerge.merge.keys import resolved_key
from dbt.adapters.deltamerge.merge.refusals import clause_type
from dbt.adapters.deltamerge.merge.scope import ScopeError, assigned_path, columns_sql, path_sql
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.merge.structs import AssignmentError, by_name, nested_update


@dataclass(frozen=True)
class ResolvedClause:
    """A clause with an expression for every target column (empty for a delete)."""

    kind: ClauseKind
    action: str
    condition: str | None
    outputs: tuple[tuple[str, str], ...]
    # SQL true when the row already holds what this update assigns (``update_only_if_changed``).
    unchanged: str | None = None


@dataclass(frozen=True)
class ResolvedMerge:
    """The clause set resolved against concrete schemas."""

    spec: MergeSpec
    target_columns: tuple[str, ...]
    matched: tuple[ResolvedClause, ...]
    not_matched: tuple[ResolvedClause, ...]
    not_matched_by_source: tuple[ResolvedClause, ...]


# The type Spark's analysis gave each assigned expression: (clause kind, clause index, config key).
AssignedTypes = dict[tuple[str, int, str], T.DataType]


def resolve(
    spec: MergeSpec,
    *,
    target: T.StructType,
    source: T.StructType,
    lenient_star: bool = False,
    types: AssignedTypes | None = None,
) -> ResolvedMerge:
    """Resolve ``spec``; raise one SpecError naming every column problem.

    ``lenient_star`` (schema evolution): a ``*`` action leaves target columns the source
    lacks as they are (update) or null (insert), as Delta's auto-merge does. ``types``: the
    assigned expressions' types (``check.check_expressions``), by which a struct value is
    assigned by name (``structs.by_name``); an expression without one is assigned as written.
    """
    problems: list[str] = []
    columns = tuple(f.name for f in target.fields)
    source_names = {f.name.lower(): f.name for f in source.fields}

    def one(clause: MergeClause, index: int, where: str) -> ResolvedClause:
        outputs = (
            ()
            if clause.action == "delete"
            else _outputs(
                spec, clause, (target, source), where, problems, lenient_star, _of(types, clause, index)
            )
        )
        unchanged = None
        if spec.update_only_if_changed and clause.kind == "matched" and clause.action == "update":
            unchanged = unchanged_condition(spec.target_alias, outputs)
        return ResolvedClause(clause.kind, clause.action, clause.condition, outputs, unchanged)

    resolved = {
        kind: tuple(one(c, i, f"{kind} clause {i + 1} ({c.action})") for i, c in enumerate(clauses))
        for kind, clauses in (
            ("matched", spec.matched),
            ("not_matched", spec.not_matched),
            ("not_matched_by_source", spec.not_matched_by_source),
        )
    }
    for key in spec.unique_key:
        if key.lower() not in {c.lower() for c in columns}:
            problems.append(
                f"unique_key column `{key}` is not in the target table (columns: {list(columns)})"
            )
        if key.lower() not in source_names:
            problems.append(
                f"unique_key column `{key}` is not in the model's result (columns: {_names(source)})"
            )
    if problems:
        raise SpecError(spec.model, problems)
    return ResolvedMerge(
        spec, columns, resolved["matched"], resolved["not_matched"], resolved["not_matched_by_source"]
    )


def unchanged_condition(target_alias: str, outputs: tuple[tuple[str, str], ...]) -> str:
    """SQL true when every assigned value equals (null-safely) the stored one.

    >>> unchanged_condition("t", (("id", "`t`.`id`"), ("v", "`s`.`v`")))
    '(`t`.`v` <=> (`s`.`v`))'
    """
    pairs = [
        f"{qualified(target_alias, column)} <=> ({sql})"
        for column, sql in outputs
        if sql != qualified(target_alias, column)
    ]
    return conjunction(pairs) if pairs else "true"


def _of(types: AssignedTypes | None, clause: MergeClause, index: int) -> dict[str, T.DataType]:
    """The assigned expressions' types of one clause (the ``index``-th of its kind), by config key."""
    return {key: t for (kind, i, key), t in (types or {}).items() if kind == clause.kind and i == index}


def _outputs(
    spec: MergeSpec,
    clause: MergeClause,
    schemas: tuple[T.StructType, T.StructType],
    where: str,
    problems: list[str],
    lenient_star: bool,
    types: Mapping[str, T.DataType],
) -> tuple[tuple[str, str], ...]:
    """The clause's ``(column, SQL)`` outputs over the ``(target, source)`` schemas; problems added."""
    target, source = schemas
    columns = tuple(f.name for f in target.fields)
    by_lower = {c.lower(): c for c in columns}
    source_names = {f.name.lower(): f.name for f in source.fields}
    identities = {f.name: i for f in target.fields if (i := Identity.of(f)) is not None}
    evolving = spec.schema_evolution or lenient_star
    assigned: dict[str, str] = {}
    if clause.assignments is None:
        excluded = {e.lower() for e in clause.exclude}
        unknown = sorted(e for e in clause.exclude if e.lower() not in by_lower)
        if unknown:
            problems.append(f"{where}: merge_exclude_columns {unknown} are not target columns")
        missing = [
            c
            for c in columns
            if c.lower() not in source_names
            and c.lower() not in excluded
            and c.lower() not in computed_columns(target)
        ]
        if missing and not evolving:  # Delta: UPDATE * keeps them, INSERT * leaves them null
            given = columns_sql(spec.source_alias, [f.name for f in source.fields])
            problems.append(
                f"{where}: [DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {path_sql([missing[0]])} in "
                f"{clause_type(clause)} clause given columns {given}. `*` needs every target column in the "
                f"model's result; missing {missing} (select them, list the columns to assign, set "
                "on_schema_change to append_new_columns or sync_all_columns, or enable "
                "merge_with_schema_evolution)"
            )
        for column in columns:
            if clause.action == "update" and column in identities:
                continue  # an update keeps the row's identity value
            if column.lower() in source_names and column.lower() not in excluded:
                name = source_names[column.lower()]
                # UPDATE * with schema evolution keeps the row's values of fields the source lacks.
                kept = (
                    qualified(spec.target_alias, column) if clause.action == "update" and evolving else None
                )
                value = _by_name(
                    qualified(spec.source_alias, name),
                    source[name].dataType,
                    target[column].dataType,
                    evolving,
                    kept,
                    where,
                    problems,
                )
                if value is not None:
                    assigned[column] = value
    else:
        groups = _assigned_paths(spec, clause, columns, where, problems)
        for name, items in groups.items():
            if clause.action == "insert" and len(items) > 1:
                problems.append(
                    f"{where}: [DELTA_DUPLICATE_COLUMNS_ON_INSERT] Duplicate column names in INSERT clause"
                )
            elif clause.action == "update" and name in identities:
                problems.append(
                    f"{where}: [DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY column "
                    f"{name} is not supported."
                )
            else:
                typed = [(path, sql, types.get(key)) for path, sql, key in items]
                value = _assigned_value(spec, target[name], typed, evolving, where, problems)
                if value is not None:
                    assigned[name] = value
    if clause.action == "insert":
        problems.extend(explicit_values_refused(target, assigned, where))
    return _completed(spec, clause, target, assigned)


def _assigned_paths(
    spec: MergeSpec, clause: MergeClause, columns: tuple[str, ...], where: str, problems: list[str]
) -> dict[str, list[tuple[tuple[str, ...], str, str]]]:
    """The clause's assignments by target column: (path below the column, SQL, config key)."""
    name = f"{clause_type(clause)} clause"
    groups: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
    for assignment in clause.assignments or ():
        try:
            path = assigned_path(
                assignment.column, target_alias=spec.target_alias, columns=columns, clause=name
            )
        except ScopeError as error:
            problems.append(f"{where}: {error}")
            continue
        if clause.action == "insert" and len(path) > 1:
            problems.append(
                f"{where}: [DELTA_UNSUPPORTED_NESTED_FIELD_IN_OPERATION] Nested field is not supported "
                f"in the INSERT clause of MERGE operation (field = {path_sql(path)})."
            )
            continue
        groups.setdefault(path[0], []).append((path[1:], assignment.expression, assignment.column))
    return groups


def _assigned_value(
    spec: MergeSpec,
    field: T.StructField,
    items: list[tuple[tuple[str, ...], str, T.DataType | None]],
    evolving: bool,
    where: str,
    problems: list[str],
) -> str | None:
    """A column's new value from its assignments: the whole column, or fields of it."""
    try:
        return nested_update(qualified(spec.target_alias, field.name), field, items, missing_allowed=evolving)
    except AssignmentError as error:
        problems.append(f"{where}: {error}")
        return None


def _by_name(
    sql: str,
    source: T.DataType,
    target: T.DataType,
    evolving: bool,
    kept: str | None,
    where: str,
    problems: list[str],
) -> str | None:
    try:
        return by_name(sql, source, target, missing_allowed=evolving, kept=kept)
    except AssignmentError as error:
        problems.append(f"{where}: {error}")
        return None


def _completed(
    spec: MergeSpec, clause: MergeClause, target: T.StructType, assigned: dict[str, str]
) -> tuple[tuple[str, str], ...]:
    """Every column's SQL: an update keeps the stored value of a column it does not assign, an
    insert writes its default, a new identity value (``identity_value_column``) or null; a
    generated column neither assigns is computed from the row's new values."""
    outputs: dict[str, str] = {}
    for field in target.fields:
        if field.name in assigned:
            outputs[field.name] = assigned[field.name]
        elif clause.action != "insert":
            outputs[field.name] = qualified(spec.target_alias, field.name)
        elif Identity.of(field) is not None:
            outputs[field.name] = quote_identifier(identity_value_column(field.name))
        else:
            outputs[field.name] = default_value(field)
    for column, expression in generated_columns(target).items():
        if column not in assigned:
            others = {c: sql for c, sql in outputs.items() if c != column}
            outputs[column] = (
                f"CAST({substituted(expression, others)} AS {target[column].dataType.simpleString()})"
            )
    return tuple((f.name, outputs[f.name]) for f in target.fields)


def _names(schema: T.StructType) -> list[str]:
    return [f.name for f in schema.fields]


def evolved_by_merge(
    spec: MergeSpec, snapshot: Snapshot, result: T.StructType, *, what: str
) -> T.StructType | None:
    """The schema a merge with schema evolution leaves (Delta's ``filterSchema``), or None if unchanged."""
    referenced = _referenced_by_merge(spec, snapshot.schema, result)
    schema = evolved_schema(
        snapshot.schema,
        result,
        add=referenced,
        partition_columns=snapshot.partition_columns,
        what=what,
        store_assignment=True,
    )
    return None if schema == snapshot.schema else schema


def _referenced_by_merge(spec: MergeSpec, table: T.StructType, result: T.StructType) -> set[str]:
    """Source columns a ``*`` action or an assignment refers to (by target column name); a key
    resolved as Delta resolves it (``keys.resolved_key``; one that does not resolve adds nothing,
    its error is the merge's own, before anything is written)."""
    names: set[str] = set()
    for clause in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        if clause.action == "delete":
            continue
        if clause.assignments is None:
            excluded = {e.lower() for e in clause.exclude}
            names |= {f.name.lower() for f in result.fields if f.name.lower() not in excluded}
        else:
            for a in clause.assignments:
                try:
                    names.add(resolved_key(a.column, spec, clause, target=table, source=result)[0].lower())
                except ScopeError:
                    continue
    return names
