"""A model's merge config -> a validated clause set (``MergeSpec``), with no Spark: the merge's parse.

Two doors: ``from_config``, the user's (a model's config, every problem theirs), and ``of``, the
engine's own (clauses built by code: CDC apply), typed.

The ON condition from ``unique_key`` (null-safe) or ``merge_condition``, the aliases, and the
WHEN clauses (``clauses``); Delta's rule that a MERGE has at least one WHEN clause. Every
problem of a model is collected and raised as one ``SpecError`` naming the model. The join keys
(``join_keys``) are the columns whose equality alone is the ON: the unique key's, or those of a
``merge_condition`` written ``t.k = s.k AND ...`` (as a SQL ``MERGE INTO`` usually is), so both
get the key-only plans (data skipping by the source's key range, phase 1 in one key join).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import sqlglot
import sqlglot.errors
from sqlglot import exp

from dbt.adapters.deltamerge.common.config_values import (
    SpecError,
    flag,
    identifier,
    names,
    sql_list,
    sql_text,
)
from dbt.adapters.deltamerge.common.sql import conjunction, qualified
from dbt.adapters.deltamerge.merge.clauses import LIST_KEYS, MergeClause, parse_clauses

DEFAULT_SOURCE_ALIAS = "DBT_INTERNAL_SOURCE"
DEFAULT_TARGET_ALIAS = "DBT_INTERNAL_DEST"


@dataclass(frozen=True)
class MergeBehaviour:
    """How a merge behaves beyond its clauses (the flags ``MergeSpec.of`` takes as one value)."""

    # Delta's auto-merge: new source columns and fields join the target's schema.
    schema_evolution: bool = False
    # A matched update that would store the values already stored is skipped (not counted).
    update_only_if_changed: bool = False
    # ``deletion_vectors: false``: rewrite touched files even where the table takes deletion vectors.
    copy_on_write: bool = False


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
    # A matched update that would store the values already stored is skipped (not counted).
    update_only_if_changed: bool = False
    # ``deletion_vectors: false``: rewrite touched files even where the table takes deletion vectors.
    copy_on_write: bool = False

    @cached_property
    def join_keys(self) -> tuple[str, ...]:
        """The columns whose equality alone is the ON condition (besides ``incremental_predicates``):
        the unique key's (null-safe), or a merge_condition's ``t.k = s.k AND ...`` (``equality_keys``).
        Derived, never stored: a spec rewritten by ``dataclasses.replace`` derives its own."""
        if self.merge_condition is None:
            return self.unique_key
        return equality_keys(self.merge_condition, self.target_alias, self.source_alias)

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
        known = len(problems)
        clauses = {kind: parse_clauses(kind, config, source, problems) for kind in LIST_KEYS}
        if not any(clauses.values()) and len(problems) == known:  # (an invalid clause is said as such)
            problems.append(
                "[MERGE_WITHOUT_WHEN] There must be at least one WHEN clause in a MERGE statement."
            )
        if not unique_key and merge_condition is None:
            problems.append(
                "a delta_merge model needs `unique_key` (a column or list of columns) or "
                "`merge_condition` (a SQL condition over the two aliases); add one of them"
            )
        schema_evolution = flag(config, "merge_with_schema_evolution", problems)
        only_if_changed = flag(config, "update_only_if_changed", problems)
        if problems:
            raise SpecError(model, problems)
        return cls.of(
            model,
            unique_key=unique_key,
            merge_condition=merge_condition,
            incremental_predicates=predicates,
            aliases=(source, target),
            clauses=[c for kind in LIST_KEYS for c in clauses[kind]],
            behaviour=MergeBehaviour(
                schema_evolution=schema_evolution,
                update_only_if_changed=only_if_changed,
                copy_on_write=config.get("deletion_vectors") is False,
            ),
        )

    @classmethod
    def of(
        cls,
        model: str,
        *,
        unique_key: Sequence[str] = (),
        merge_condition: str | None = None,
        incremental_predicates: Sequence[str] = (),
        aliases: tuple[str, str] = (DEFAULT_SOURCE_ALIAS, DEFAULT_TARGET_ALIAS),
        clauses: Sequence[MergeClause] = (),
        behaviour: MergeBehaviour = MergeBehaviour(),
    ) -> MergeSpec:
        """A clause set built by code: the engine's own door (CDC apply; ``from_config`` ends here).
        ``aliases``: the source's and the target's; ``clauses`` in order, each of its kind.

        The user's config goes through ``from_config``, which words every problem as theirs; a
        merge the engine builds breaks an invariant only by a bug of the engine, said as such (an
        ``AssertionError``), never as a model's invalid config.

        >>> insert = MergeClause("not_matched", "insert")
        >>> MergeSpec.of("m", unique_key=["id"], clauses=[insert]).on_condition
        '(`DBT_INTERNAL_DEST`.`id` <=> `DBT_INTERNAL_SOURCE`.`id`)'
        """
        source_alias, target_alias = aliases
        kinds = ("matched", "not_matched", "not_matched_by_source")
        by_kind = tuple(tuple(c for c in clauses if c.kind == kind) for kind in kinds)
        broken = [
            "no WHEN clause" if not clauses else "",
            "no unique key and no merge condition" if not unique_key and merge_condition is None else "",
            "one alias for the source and the target" if source_alias.lower() == target_alias.lower() else "",
        ]
        if any(broken):
            said = "; ".join(b for b in broken if b)
            raise AssertionError(f"the merge built for {model} has {said} (a bug)")
        on = merge_condition or conjunction(
            [f"{qualified(target_alias, k)} <=> {qualified(source_alias, k)}" for k in unique_key]
        )
        predicates = tuple(incremental_predicates)
        return cls(
            model=model,
            on_condition=conjunction([on, *predicates]) if predicates else on,
            unique_key=tuple(unique_key),
            merge_condition=merge_condition,
            incremental_predicates=predicates,
            source_alias=source_alias,
            target_alias=target_alias,
            matched=by_kind[0],
            not_matched=by_kind[1],
            not_matched_by_source=by_kind[2],
            schema_evolution=behaviour.schema_evolution,
            update_only_if_changed=behaviour.update_only_if_changed,
            copy_on_write=behaviour.copy_on_write,
        )


def equality_keys(condition: str, target_alias: str, source_alias: str) -> tuple[str, ...]:
    """The columns of ``condition`` when it is nothing but ``target.k = source.k`` conjuncts, one per
    column, each naming one column (spelt alike) on both sides; else ``()``.

    Under ``=`` a null key matches nothing, so every target row with a given key is matched, or
    none is, as under the unique key's ``<=>``: the key-only plans hold for both.

    >>> equality_keys("t.id = s.id AND s.`Part` = t.`Part`", "t", "s")
    ('id', 'Part')
    >>> equality_keys("t.id = s.id AND t.v > 1", "t", "s"), equality_keys("t.id = s.key", "t", "s")
    ((), ())
    >>> equality_keys("t.a.b = s.a.b", "t", "s"), equality_keys("t.id = s.id OR t.id = s.id", "t", "s")
    ((), ())
    """
    try:
        tree = sqlglot.parse_one(condition, read="spark")
    except sqlglot.errors.ParseError:
        return ()
    keys: list[str] = []
    aliases = {target_alias.lower(), source_alias.lower()}
    for conjunct in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        while isinstance(conjunct, exp.Paren):
            conjunct = conjunct.this
        sides = [conjunct.this, conjunct.expression] if isinstance(conjunct, exp.EQ) else []
        if not all(isinstance(c, exp.Column) and not c.args.get("db") for c in sides):
            return ()
        if len(sides) != 2 or {c.table.lower() for c in sides} != aliases or sides[0].name != sides[1].name:
            return ()
        keys.append(sides[0].name)
    return tuple(keys) if len(set(keys)) == len(keys) else ()
