"""A model's merge config -> a validated clause set (``MergeSpec``), with no Spark.

The rules and messages are Delta's (``DeltaMergeInto``): at least one WHEN clause; only
the last clause of a kind may omit its condition; ``delete`` takes no assignments. Every
problem of a model is collected and raised as one ``SpecError`` naming the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from dbt.adapters.deltamerge.common.config_values import (
    SpecError,
    flag,
    identifier,
    names,
    sql_list,
    sql_text,
)
from dbt.adapters.deltamerge.common.sql import conjunction, qualified

ClauseKind = Literal["matched", "not_matched", "not_matched_by_source"]
Action = Literal["update", "delete", "insert"]

DEFAULT_SOURCE_ALIAS = "DBT_INTERNAL_SOURCE"
DEFAULT_TARGET_ALIAS = "DBT_INTERNAL_DEST"

LIST_KEYS: dict[ClauseKind, str] = {
    "matched": "when_matched",
    "not_matched": "when_not_matched",
    "not_matched_by_source": "when_not_matched_by_source",
}
_SQL_NAMES: dict[ClauseKind, str] = {
    "matched": "MATCHED",
    "not_matched": "NOT MATCHED",
    "not_matched_by_source": "NOT MATCHED BY SOURCE",
}
_ACTIONS: dict[ClauseKind, tuple[Action, ...]] = {
    "matched": ("update", "delete"),
    "not_matched": ("insert",),
    "not_matched_by_source": ("update", "delete"),
}
SHORTHANDS: dict[ClauseKind, tuple[str, ...]] = {
    "matched": ("matched_condition", "skip_matched_step", "merge_update_columns", "merge_exclude_columns"),
    "not_matched": ("not_matched_condition", "skip_not_matched_step"),
    "not_matched_by_source": (
        "not_matched_by_source_action",
        "not_matched_by_source_condition",
        "not_matched_by_source_set",
    ),
}


@dataclass(frozen=True)
class Assignment:
    """``column = expression`` in an update's ``set`` or an insert's ``values``."""

    column: str
    expression: str


@dataclass(frozen=True)
class MergeClause:
    """One WHEN clause. ``assignments`` None means ``*`` (minus ``exclude``)."""

    kind: ClauseKind
    action: Action
    condition: str | None = None
    assignments: tuple[Assignment, ...] | None = None
    exclude: tuple[str, ...] = ()
    # The config keys the condition and the assignments came from (for error messages).
    condition_key: str = field(default="", compare=False)
    payload_key: str = field(default="", compare=False)

    @property
    def is_star(self) -> bool:
        """Whether the clause assigns every column from the source (``*``)."""
        return self.action != "delete" and self.assignments is None


@dataclass(frozen=True)
class MergeSpec:
    """The validated clause set of one ``delta_merge`` model."""

    model: str
    on_condition: str
    unique_key: tuple[str, ...]
    merge_condition: str | None
    incremental_predicates: tuple[str, ...]
    source_alias: str
    target_alias: str
    matched: tuple[MergeClause, ...]
    not_matched: tuple[MergeClause, ...]
    not_matched_by_source: tuple[MergeClause, ...]
    schema_evolution: bool = False
    change_data_feed: bool = False
    # A matched update that would store the values already stored is skipped (not counted).
    update_only_if_changed: bool = False

    @property
    def is_insert_only(self) -> bool:
        """Only WHEN NOT MATCHED clauses (Delta's insert-only executor)."""
        return bool(self.not_matched) and not self.matched and not self.not_matched_by_source

    @property
    def is_matched_only(self) -> bool:
        """Only WHEN MATCHED clauses."""
        return bool(self.matched) and not self.not_matched and not self.not_matched_by_source

    @property
    def is_only_one_unconditional_delete(self) -> bool:
        """The single WHEN MATCHED clause is an unconditional delete (multiple matches allowed)."""
        return (
            len(self.matched) == 1
            and self.matched[0].action == "delete"
            and self.matched[0].condition is None
        )

    def without_null_safe_keys(self) -> MergeSpec:
        """This merge with ``=`` instead of ``<=>`` between unique keys.

        The same rows match when no source key is null, and Spark joins on ``=`` faster.

        >>> config = {"unique_key": "id", "when_not_matched": [{"action": "insert"}]}
        >>> spec = MergeSpec.from_config("m", config)
        >>> spec.without_null_safe_keys().on_condition
        '(`DBT_INTERNAL_DEST`.`id` = `DBT_INTERNAL_SOURCE`.`id`)'
        """
        if self.merge_condition is not None or not self.unique_key:
            return self
        on = conjunction(
            [
                f"{qualified(self.target_alias, k)} = {qualified(self.source_alias, k)}"
                for k in self.unique_key
            ]
        )
        predicates = self.incremental_predicates
        return replace(self, on_condition=conjunction([on, *predicates]) if predicates else on)

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any]) -> MergeSpec:
        """Parse a model's config; raise one SpecError listing every problem."""
        problems: list[str] = []
        source = identifier(config, "source_alias", DEFAULT_SOURCE_ALIAS, problems)
        target = identifier(config, "target_alias", DEFAULT_TARGET_ALIAS, problems)
        if source.lower() == target.lower():
            problems.append(f"source_alias and target_alias must differ (both are '{source}')")
        unique_key = names(config.get("unique_key"), "unique_key", problems)
        merge_condition = sql_text(config.get("merge_condition"), "merge_condition", problems)
        predicates = sql_list(config.get("incremental_predicates"), "incremental_predicates", problems)
        clauses = {kind: _clauses(kind, config, source, problems) for kind in LIST_KEYS}
        if not any(clauses.values()):
            problems.append("There must be at least one WHEN clause in a MERGE statement")
        if not unique_key and merge_condition is None:
            problems.append(
                "a delta_merge model needs `unique_key` (a column or list of columns) or "
                "`merge_condition` (a SQL condition over the two aliases); add one of them"
            )
        schema_evolution = flag(config, "merge_with_schema_evolution", problems)
        change_data_feed = flag(config, "change_data_feed", problems)
        only_if_changed = flag(config, "update_only_if_changed", problems)
        if problems:
            raise SpecError(model, problems)
        on = merge_condition or conjunction(
            [f"{qualified(target, k)} <=> {qualified(source, k)}" for k in unique_key]
        )
        return cls(
            model=model,
            on_condition=conjunction([on, *predicates]) if predicates else on,
            unique_key=unique_key,
            merge_condition=merge_condition,
            incremental_predicates=predicates,
            source_alias=source,
            target_alias=target,
            matched=clauses["matched"],
            not_matched=clauses["not_matched"],
            not_matched_by_source=clauses["not_matched_by_source"],
            schema_evolution=schema_evolution,
            change_data_feed=change_data_feed,
            update_only_if_changed=only_if_changed,
        )


def _clauses(
    kind: ClauseKind, config: Mapping[str, Any], source: str, problems: list[str]
) -> tuple[MergeClause, ...]:
    key = LIST_KEYS[kind]
    given_shorthands = [s for s in SHORTHANDS[kind] if config.get(s) is not None]
    if config.get(key) is not None:
        if given_shorthands:
            problems.append(f"give either `{key}` or its shorthands {given_shorthands}, not both")
        raw = config[key]
        if not isinstance(raw, Sequence) or isinstance(raw, (str, bytes)):
            problems.append(f"`{key}` must be a list of clauses, e.g. [{{action: ..., condition: ...}}]")
            return ()
        parsed = [_clause(kind, f"{key}[{i}]", entry, problems) for i, entry in enumerate(raw)]
        clauses = tuple(c for c in parsed if c is not None)
    else:
        clauses = _from_shorthands(kind, config, source, problems)
    for clause in clauses[:-1]:
        if clause.condition is None:
            name = _SQL_NAMES[kind]
            problems.append(
                f"When there are more than one {name} clauses in a MERGE statement, "
                f"only the last {name} clause can omit the condition."
            )
            break
    if kind == "not_matched_by_source":
        _no_source_references(clauses, source, problems)
    return clauses


def _clause(kind: ClauseKind, where: str, entry: Any, problems: list[str]) -> MergeClause | None:
    if not isinstance(entry, Mapping):
        problems.append(f"{where} must be a map like {{action: ..., condition: ...}}, got {entry!r}")
        return None
    payload = "values" if kind == "not_matched" else "set"
    unknown = sorted(set(map(str, entry)) - {"action", "condition", payload})
    action = str(entry.get("action", "")).lower()
    if unknown:
        problems.append(f"{where}: unknown key(s) {unknown}; allowed: ['action', 'condition', '{payload}']")
    if action not in _ACTIONS[kind]:
        problems.append(f"{where}: action must be one of {list(_ACTIONS[kind])}, got {entry.get('action')!r}")
        return None
    condition = sql_text(entry.get("condition"), f"{where}.condition", problems)
    if action == "delete":
        if payload in entry:
            problems.append(f"{where}: a delete takes no `{payload}`; remove it")
        return MergeClause(kind, "delete", condition, condition_key=f"{where}.condition")
    value = entry.get(payload, "*")
    if kind == "not_matched_by_source" and value == "*":
        problems.append(
            f"{where}: an update of a NOT MATCHED BY SOURCE clause needs `set` (a map); `*` has no source row"
        )
        return None
    return MergeClause(
        kind,
        action,  # type: ignore[arg-type]
        condition,
        _assignments(value, f"{where}.{payload}", problems),
        condition_key=f"{where}.condition",
        payload_key=f"{where}.{payload}",
    )


def _assignments(value: Any, where: str, problems: list[str]) -> tuple[Assignment, ...] | None:
    if value == "*":
        return None
    if not isinstance(value, Mapping) or not value:
        problems.append(f"{where} must be '*' or a non-empty map of column to SQL expression")
        return None
    out = []
    for column, expression in value.items():
        if not isinstance(column, str) or not column.strip():
            problems.append(f"{where}: column names must be non-empty strings, got {column!r}")
            continue
        sql = sql_text(
            expression if not isinstance(expression, bool) else str(expression).lower(),
            f"{where}.{column}",
            problems,
        )
        if sql is not None:
            out.append(Assignment(column.strip(), sql))
    return tuple(out)


def _from_shorthands(
    kind: ClauseKind, config: Mapping[str, Any], source: str, problems: list[str]
) -> tuple[MergeClause, ...]:
    if kind == "matched":
        if flag(config, "skip_matched_step", problems):
            return ()
        update_cols = names(config.get("merge_update_columns"), "merge_update_columns", problems)
        exclude = names(config.get("merge_exclude_columns"), "merge_exclude_columns", problems)
        if update_cols and exclude:
            problems.append("give merge_update_columns or merge_exclude_columns, not both")
        condition = sql_text(config.get("matched_condition"), "matched_condition", problems)
        assignments = tuple(Assignment(c, qualified(source, c)) for c in update_cols) or None
        return (
            MergeClause(
                "matched",
                "update",
                condition,
                assignments,
                exclude,
                condition_key="matched_condition",
                payload_key="merge_update_columns",
            ),
        )
    if kind == "not_matched":
        if flag(config, "skip_not_matched_step", problems):
            return ()
        condition = sql_text(config.get("not_matched_condition"), "not_matched_condition", problems)
        return (MergeClause("not_matched", "insert", condition, condition_key="not_matched_condition"),)
    action = str(config.get("not_matched_by_source_action") or "ignore").lower()
    condition = sql_text(
        config.get("not_matched_by_source_condition"), "not_matched_by_source_condition", problems
    )
    if action == "ignore":
        return ()
    condition_key, payload_key = "not_matched_by_source_condition", "not_matched_by_source_set"
    if action == "delete":
        return (MergeClause(kind, "delete", condition, condition_key=condition_key),)
    if action == "update":
        sets = _assignments(config.get(payload_key), payload_key, problems)
        return (
            MergeClause(
                kind, "update", condition, sets or (), condition_key=condition_key, payload_key=payload_key
            ),
        )
    problems.append(
        f"not_matched_by_source_action must be one of ['ignore', 'delete', 'update'], got {action!r}"
    )
    return ()


def _no_source_references(clauses: tuple[MergeClause, ...], source: str, problems: list[str]) -> None:
    pattern = re.compile(rf"(?<![\w`]){re.escape(source)}`?\s*\.", re.IGNORECASE)
    for clause in clauses:
        texts = [clause.condition or "", *(a.expression for a in clause.assignments or ())]
        if any(pattern.search(t) for t in texts):
            problems.append(
                f"a NOT MATCHED BY SOURCE clause may not reference the source ({source}): "
                "there is no source row for it"
            )
