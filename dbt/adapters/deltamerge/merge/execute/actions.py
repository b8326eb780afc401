"""Output generation as SQL text: which clause takes a joined row, and what it writes.

As Delta's ``MergeOutputGeneration``: a row of the join is matched (both sides),
not matched (source only) or not matched by source (target only); within its kind the
first clause whose condition holds wins. The winning clause is computed once per row
as ``_merge_action`` (precomputed condition) and every output column is a CASE over it.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.common.sql import qualified, quote_identifier
from dbt.adapters.deltamerge.merge.counts import COUNTED_BY
from dbt.adapters.deltamerge.merge.execute.frames import ACTION, COPY, DROP, SOURCE_PRESENT, TARGET_PRESENT
from dbt.adapters.deltamerge.merge.resolve import ResolvedClause, ResolvedMerge


def action_code(clause: ResolvedClause, index: int) -> str:
    """The code naming the ``index``-th clause of its kind, in the rows it takes (``_merge_action``).

    >>> action_code(ResolvedClause("matched", "delete", None, ()), 1)
    'matched_delete_1'
    """
    return f"{clause.kind}_{clause.action}_{index}"


def action_expression(
    merge: ResolvedMerge, target_alias: str, source_alias: str, *, source_present: str | None = None
) -> str:
    """``CASE`` giving each joined row the code of the clause that takes it (or copy/drop).

    ``source_present`` is SQL that is null exactly when no source row joined (default: the
    source's presence flag).
    """
    source = source_present or qualified(source_alias, SOURCE_PRESENT)
    target = qualified(target_alias, TARGET_PRESENT)
    branches = [
        (f"{source} IS NOT NULL AND {target} IS NOT NULL", merge.matched, COPY),
        (f"{source} IS NULL", merge.not_matched_by_source, COPY),
        (f"{target} IS NULL", merge.not_matched, DROP),
    ]
    parts = []
    for side, clauses, otherwise in branches:
        parts.append(f"WHEN {side} THEN {_first_clause(clauses, otherwise)}")
    return "CASE " + " ".join(parts) + f" ELSE '{DROP}' END"


def _first_clause(clauses: tuple[ResolvedClause, ...], otherwise: str) -> str:
    if not clauses:
        return f"'{otherwise}'"
    whens = [f"WHEN ({c.condition or 'true'}) THEN {_outcome(c, i)}" for i, c in enumerate(clauses)]
    return "CASE " + " ".join(whens) + f" ELSE '{otherwise}' END"


def _outcome(clause: ResolvedClause, index: int) -> str:
    """The clause's code; a copy where it would store what is already stored (the clause still wins)."""
    if clause.unchanged is None:
        return f"'{action_code(clause, index)}'"
    return f"CASE WHEN {clause.unchanged} THEN '{COPY}' ELSE '{action_code(clause, index)}' END"


def matched_action_expression(merge: ResolvedMerge) -> str:
    """The code the WHEN MATCHED clauses give a matched row (``copy`` when none changes it)."""
    return _first_clause(merge.matched, COPY)


def output_expressions(
    merge: ResolvedMerge, target_alias: str, *, copy: bool = True
) -> list[tuple[str, str]]:
    """``(column, SQL)`` for every target column: a CASE over ``_merge_action``.

    Rows no clause writes keep the target's value (``copy``), or are null where there
    is no target row (the insert-only executor).
    """
    writers = [
        (action_code(c, i), c)
        for clauses in (merge.matched, merge.not_matched, merge.not_matched_by_source)
        for i, c in enumerate(clauses)
        if c.action != "delete"
    ]
    result = []
    for position, column in enumerate(merge.target_columns):
        whens = " ".join(f"WHEN '{code}' THEN {clause.outputs[position][1]}" for code, clause in writers)
        otherwise = qualified(target_alias, column) if copy else "NULL"
        sql = f"CASE {quote_identifier(ACTION)} {whens} ELSE {otherwise} END" if whens else otherwise
        result.append((column, sql))
    return result


def counted_actions(merge: ResolvedMerge) -> dict[str, list[str]]:
    """Which action codes each ``MergeCounts`` field adds up (copies are counted apart)."""
    codes: dict[str, list[str]] = {field: [] for field in COUNTED_BY.values()}
    for clauses in (merge.matched, merge.not_matched, merge.not_matched_by_source):
        for i, clause in enumerate(clauses):
            codes[COUNTED_BY[(clause.kind, clause.action)]].append(action_code(clause, i))
    return codes
