"""A merge's WHEN clauses from config: the ``when_*`` lists and dbt-databricks' shorthands (pure).

The rules and messages are Delta's (``DeltaMergeInto``): only the last clause of a kind may
omit its condition; ``delete`` takes no assignments; a NOT MATCHED BY SOURCE clause cannot
read the source. The shorthands (``matched_condition``, ``skip_matched_step``, ...) stand for
one clause of their kind; every shorthand given is read, and one that would change nothing
(a condition for a skipped step) is an error, not ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from dbt.adapters.deltamerge.common.config_values import (
    choice,
    clause_list,
    flag,
    mapping,
    names,
    sql_text,
)
from dbt.adapters.deltamerge.common.sql import qualified

ClauseKind = Literal["matched", "not_matched", "not_matched_by_source"]


Action = Literal["update", "delete", "insert"]


LIST_KEYS: dict[ClauseKind, str] = {
    "matched": "when_matched",
    "not_matched": "when_not_matched",
    "not_matched_by_source": "when_not_matched_by_source",
}


# Spark's name and error class of each kind in its parser's errors (Delta's are Spark's).
_SQL_NAMES: dict[ClauseKind, tuple[str, str]] = {
    "matched": ("MATCHED", "NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION"),
    "not_matched": ("NOT MATCHED [BY TARGET]", "NON_LAST_NOT_MATCHED_BY_TARGET_CLAUSE_OMIT_CONDITION"),
    "not_matched_by_source": (
        "NOT MATCHED BY SOURCE",
        "NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION",
    ),
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


def parse_clauses(
    kind: ClauseKind, config: Mapping[str, Any], source: str, problems: list[str]
) -> tuple[MergeClause, ...]:
    key = LIST_KEYS[kind]
    given_shorthands = [s for s in SHORTHANDS[kind] if config.get(s) is not None]
    if config.get(key) is not None:
        if given_shorthands:
            problems.append(f"give either `{key}` or its shorthands {given_shorthands}, not both")
        raw = config[key]
        entries = clause_list(raw, key, problems)
        where = [f"{key}[{i}]" for i, e in enumerate(raw) if isinstance(e, Mapping)] if entries else []
        parsed = [_clause(kind, at, entry, problems) for at, entry in zip(where, entries, strict=True)]
        clauses = tuple(c for c in parsed if c is not None)
    else:
        clauses = _from_shorthands(kind, config, source, problems)
    for clause in clauses[:-1]:
        if clause.condition is None:
            name, error_class = _SQL_NAMES[kind]
            problems.append(
                f"[{error_class}] When there are more than one {name} clauses in a MERGE statement, "
                f"only the last {name} clause can omit the condition."
            )
            break
    if kind == "not_matched_by_source":
        _no_source_references(clauses, source, problems)
    return clauses


def _clause(
    kind: ClauseKind, where: str, entry: Mapping[str, Any], problems: list[str]
) -> MergeClause | None:
    payload = "values" if kind == "not_matched" else "set"
    unknown = sorted(set(map(str, entry)) - {"action", "condition", payload})
    action = str(entry.get("action", "")).lower()
    if unknown:
        problems.append(f"{where}: unknown key(s) {unknown}; allowed: ['action', 'condition', '{payload}']")
    condition = sql_text(entry.get("condition"), f"{where}.condition", problems)
    if action not in _ACTIONS[kind]:
        problems.append(f"{where}: action must be one of {list(_ACTIONS[kind])}, got {entry.get('action')!r}")
        return None
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


def _assignments(
    value: Any, where: str, problems: list[str], *, star: bool = True
) -> tuple[Assignment, ...] | None:
    """``*`` (None) or the assignments of a map column -> SQL; ``star=False``: only a map."""
    if value == "*" and star:
        return None
    what = ("'*' or " if star else "") + "a non-empty map of column to SQL expression"
    assigned = mapping(value, where, problems, what=what)
    if not assigned:
        if value is not None and isinstance(value, Mapping):
            problems.append(f"{where} must be {what}, got {value!r}")
        return None
    out = []
    for column, expression in assigned.items():
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
    """The clause a kind's dbt-databricks shorthands stand for (every shorthand read, none ignored)."""
    if kind == "matched":
        return _matched_shorthands(config, source, problems)
    if kind == "not_matched":
        skip = flag(config, "skip_not_matched_step", problems)
        condition = sql_text(config.get("not_matched_condition"), "not_matched_condition", problems)
        if skip:
            _unused_by_skip("skip_not_matched_step", ["not_matched_condition"], config, problems)
            return ()
        return (MergeClause("not_matched", "insert", condition, condition_key="not_matched_condition"),)
    return _by_source_shorthands(config, problems)


def _matched_shorthands(
    config: Mapping[str, Any], source: str, problems: list[str]
) -> tuple[MergeClause, ...]:
    skip = flag(config, "skip_matched_step", problems)
    update_cols = names(config.get("merge_update_columns"), "merge_update_columns", problems)
    exclude = names(config.get("merge_exclude_columns"), "merge_exclude_columns", problems)
    condition = sql_text(config.get("matched_condition"), "matched_condition", problems)
    if update_cols and exclude:
        problems.append("give merge_update_columns or merge_exclude_columns, not both")
    if skip:
        others = ["matched_condition", "merge_update_columns", "merge_exclude_columns"]
        _unused_by_skip("skip_matched_step", others, config, problems)
        return ()
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


def _by_source_shorthands(config: Mapping[str, Any], problems: list[str]) -> tuple[MergeClause, ...]:
    kind: ClauseKind = "not_matched_by_source"
    condition_key, payload_key = "not_matched_by_source_condition", "not_matched_by_source_set"
    action = choice(
        config.get("not_matched_by_source_action"),
        "not_matched_by_source_action",
        ("ignore", "delete", "update"),
        problems,
    )
    condition = sql_text(config.get(condition_key), condition_key, problems)
    given_set = config.get(payload_key) is not None
    sets = _assignments(config.get(payload_key), payload_key, problems, star=False) if given_set else None
    if action in (None, "ignore"):
        for key in (condition_key, payload_key):
            if config.get(key) is not None and config.get("not_matched_by_source_action") in (None, "ignore"):
                problems.append(
                    f"`{key}` needs not_matched_by_source_action 'delete' or 'update' "
                    "(without it no NOT MATCHED BY SOURCE clause runs)"
                )
        return ()
    if action == "delete":
        if given_set:
            problems.append(
                f"`{payload_key}` is for not_matched_by_source_action 'update'; a delete assigns nothing"
            )
        return (MergeClause(kind, "delete", condition, condition_key=condition_key),)
    if not given_set:
        problems.append(
            f"not_matched_by_source_action 'update' needs `{payload_key}` (a map of column to SQL)"
        )
    return (
        MergeClause(
            kind, "update", condition, sets or (), condition_key=condition_key, payload_key=payload_key
        ),
    )


def _unused_by_skip(skip_key: str, keys: list[str], config: Mapping[str, Any], problems: list[str]) -> None:
    """A shorthand that ``skip_key: true`` would make meaningless is an error, not ignored."""
    for key in keys:
        if config.get(key) is not None:
            problems.append(
                f"`{key}` and `{skip_key}: true` contradict each other: the step it configures is skipped"
            )


def _no_source_references(clauses: tuple[MergeClause, ...], source: str, problems: list[str]) -> None:
    pattern = re.compile(rf"(?<![\w`]){re.escape(source)}`?\s*\.", re.IGNORECASE)
    for clause in clauses:
        texts = [clause.condition or "", *(a.expression for a in clause.assignments or ())]
        if any(pattern.search(t) for t in texts):
            problems.append(
                f"a NOT MATCHED BY SOURCE clause may not reference the source ({source}): "
                "there is no source row for it"
            )
