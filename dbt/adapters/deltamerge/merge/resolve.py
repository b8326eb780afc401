"""Resolving a clause set against the target's and source's schemas (no Spark jobs).

Every update or insert becomes one SQL expression per target column, as Delta's
``resolveReferencesAndSchema`` does: ``*`` takes each target column from the source
column of the same name (names match case-insensitively, as Spark resolves them); an
update keeps the target's value in columns it does not assign; an insert writes the column's
default, a new identity value or null there, and a generated column neither assigns is computed
from the row's new values (``_completed``). Unknown, duplicate or missing columns are reported
together, naming them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.sql import conjunction, qualified, quote_identifier
from dbt.adapters.deltamerge.delta import (
    Identity,
    Snapshot,
    computed_columns,
    default_value,
    evolved_schema,
    explicit_values_refused,
    generated_columns,
    identity_value_column,
    substituted,
)
from dbt.adapters.deltamerge.merge.clauses import ClauseKind, MergeClause
from dbt.adapters.deltamerge.merge.spec import MergeSpec


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


def resolve(
    spec: MergeSpec, *, target: T.StructType, source: T.StructType, lenient_star: bool = False
) -> ResolvedMerge:
    """Resolve ``spec``; raise one SpecError naming every column problem.

    ``lenient_star`` (schema evolution): a ``*`` action leaves target columns the source
    lacks as they are (update) or null (insert), as Delta's auto-merge does.
    """
    problems: list[str] = []
    columns = tuple(f.name for f in target.fields)
    source_names = {f.name.lower(): f.name for f in source.fields}

    def one(clause: MergeClause, where: str) -> ResolvedClause:
        outputs = (
            ()
            if clause.action == "delete"
            else _outputs(spec, clause, target, source_names, where, problems, lenient_star)
        )
        unchanged = None
        if spec.update_only_if_changed and clause.kind == "matched" and clause.action == "update":
            unchanged = unchanged_condition(spec.target_alias, outputs)
        return ResolvedClause(clause.kind, clause.action, clause.condition, outputs, unchanged)

    resolved = {
        kind: tuple(one(c, f"{kind} clause {i + 1} ({c.action})") for i, c in enumerate(clauses))
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


def _outputs(
    spec: MergeSpec,
    clause: MergeClause,
    target: T.StructType,
    source_names: dict[str, str],
    where: str,
    problems: list[str],
    lenient_star: bool = False,
) -> tuple[tuple[str, str], ...]:
    columns = tuple(f.name for f in target.fields)
    by_lower = {c.lower(): c for c in columns}
    computed = computed_columns(target)
    identities = {f.name: i for f in target.fields if (i := Identity.of(f)) is not None}
    assigned: dict[str, str] = {}
    if clause.assignments is None:
        excluded = {e.lower() for e in clause.exclude}
        unknown = sorted(e for e in clause.exclude if e.lower() not in by_lower)
        if unknown:
            problems.append(f"{where}: merge_exclude_columns {unknown} are not target columns")
        missing = [
            c
            for c in columns
            if c.lower() not in source_names and c.lower() not in excluded and c.lower() not in computed
        ]
        if missing and not lenient_star:
            problems.append(
                f"{where}: `*` needs every target column in the model's result; missing {missing} "
                "(select them, list the columns to assign, set on_schema_change to append_new_columns "
                "or sync_all_columns, or enable merge_with_schema_evolution)"
            )
        for column in columns:
            if clause.action == "update" and column in identities:
                continue  # an update keeps the row's identity value
            if column.lower() in source_names and column.lower() not in excluded:
                assigned[column] = qualified(spec.source_alias, source_names[column.lower()])
    else:
        for assignment in clause.assignments:
            name = by_lower.get(assignment.column.lower())
            if name is None:
                problems.append(
                    f"{where}: `{assignment.column}` is not a target column (columns: {list(columns)})"
                )
            elif name in assigned:
                problems.append(f"{where}: `{name}` is assigned twice")
            elif clause.action == "update" and name in identities:
                problems.append(
                    f"{where}: [DELTA_IDENTITY_COLUMNS_UPDATE_NOT_SUPPORTED] UPDATE on IDENTITY column "
                    f"{name} is not supported."
                )
            else:
                assigned[name] = assignment.expression
    if clause.action == "insert":
        problems.extend(explicit_values_refused(target, assigned, where))
    return _completed(spec, clause, target, assigned)


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
    referenced = _referenced_by_merge(spec, result)
    schema = evolved_schema(
        snapshot.schema,
        result,
        add=referenced,
        partition_columns=snapshot.partition_columns,
        what=what,
        store_assignment=True,
    )
    return None if schema == snapshot.schema else schema


def _referenced_by_merge(spec: MergeSpec, result: T.StructType) -> set[str]:
    """Source columns a ``*`` action or an assignment refers to (by target column name)."""
    names: set[str] = set()
    for clause in (*spec.matched, *spec.not_matched, *spec.not_matched_by_source):
        if clause.action == "delete":
            continue
        if clause.assignments is None:
            excluded = {e.lower() for e in clause.exclude}
            names |= {f.name.lower() for f in result.fields if f.name.lower() not in excluded}
        else:
            names |= {a.column.lower() for a in clause.assignments}
    return names
