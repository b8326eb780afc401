"""Merge-on-read in one join: a broadcast source joined once with the target's candidate files.

The plan's ``one_join`` executor: when a merge marks rows deleted, has no NOT MATCHED BY SOURCE
clause and its source is broadcast (or, for a bigger source, the columns its ON and clause
conditions name, with each row's id), nothing needs the target rows no source row matches: no
file is rewritten, so phase 1's list of touched files has no use, and every row a clause takes
is in the inner join of the source with the target (matched rows) or among the source rows that
join nothing (inserts). So the target is scanned once, reading only the columns the ON
condition and the clauses name (every column with the change feed on, for its pre-images):

1. the matched pairs, each with its target row's file and position and its source row's id, are
   computed once and kept by Spark, in the job that checks Delta's multiple-match rule on them
   (grouped by target row: as many rows as pairs);
2. a target row in several pairs fails the merge, unless its only WHEN MATCHED clause is an
   unconditional delete (then the pairs are de-duplicated);
3. the source rows whose id no pair has are the not-matched rows;
4. a source broadcast by its named columns alone gives the pairs its other columns by a join on
   the source row id (the pairs and the source, both small next to the target);
5. pairs and not-matched rows, each with the code of the clause that takes it, go to
   ``classic.positions_and_output``: the removed rows' positions become deletion vectors and
   the updated and inserted rows are written.

Against the two-phase executor this saves two scans of the target (phase 1's join and the
anti-join that finds the inserts) and phase 1's grouping of every matched pair by file name.
"""

from __future__ import annotations

import time

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote
from sqlglot.dialects.spark import Spark
from sqlglot.tokens import TokenType

from dbt.adapters.deltamerge.common.sql import quote_identifier
from dbt.adapters.deltamerge.delta import AddFile
from dbt.adapters.deltamerge.delta.data import VectorUpdate
from dbt.adapters.deltamerge.merge.execute.actions import action_expression
from dbt.adapters.deltamerge.merge.execute.classic import positions_and_output
from dbt.adapters.deltamerge.merge.execute.frames import (
    ACTION,
    COPY,
    ROW_ID,
    SOURCE_PRESENT,
    MergeRun,
    aliased_target,
)
from dbt.adapters.deltamerge.merge.execute.output import MergeOutput
from dbt.adapters.deltamerge.merge.execute.touched import (
    MultipleMatchesError,
    multiple_matches_message,
)
from dbt.adapters.deltamerge.merge.plan import narrow_schema
from dbt.adapters.deltamerge.merge.resolve import ResolvedMerge
from dbt.adapters.deltamerge.merge.source import fits_in_broadcast

SOURCE_ROW = "_merge_source_row"  # a source row's id (the source is a checkpoint: ids are stable)
MATCHED_SOURCE_ROW = "_merge_matched_source_row"


def _narrow_schema(run: MergeRun) -> T.StructType:
    """The source columns the ON condition or a clause condition name (``plan.narrow_schema``)."""
    return narrow_schema(run.merge, run.plan.join_condition, run.source.schema)


def mark_rows_in_one_join(run: MergeRun, *, dry_run: bool) -> tuple[MergeOutput, VectorUpdate, int]:
    """Run the merge; also return how long the join and the multiple-match check took (ms)."""
    started = time.monotonic()
    spec = run.spec
    source = run.source.withColumn(SOURCE_ROW, F.monotonically_increasing_id())
    late = not run.plan.broadcast_source  # the pairs get the source's other columns after the join
    joined = (
        source.select(*[quote_identifier(n) for n in _narrow_schema(run).names], SOURCE_ROW)
        if late
        else source
    )
    aliased = joined.withColumn(SOURCE_PRESENT, F.lit(True)).alias(spec.source_alias)
    target, read = _pruned_target(run, run.candidates)
    on = F.expr(run.plan.join_condition)
    # Kept by Spark (not a checkpoint, which would lose the sides' aliases the clauses name);
    # the multiple-match check is the job that computes it.
    pairs = target.join(F.broadcast(aliased), on, "inner").persist()
    try:
        duplicates = _has_multiple_matches(pairs)
        if duplicates and not spec.is_only_one_unconditional_delete:
            raise MultipleMatchesError(multiple_matches_message(run, pairs, read))
        join_ms = int((time.monotonic() - started) * 1000)
        action = F.expr(action_expression(run.merge, spec.target_alias, spec.source_alias))
        whole = _with_whole_source_rows(run, pairs, target.columns, source, duplicates) if late else pairs
        taken = whole.withColumn(ACTION, action).where(F.col(ACTION) != COPY)
        if duplicates:
            # A target row deleted by several source rows is one deleted row.
            taken = taken.dropDuplicates([ROW_ID])
        if spec.not_matched:
            matched_ids = pairs.select(F.col(SOURCE_ROW).alias(MATCHED_SOURCE_ROW))
            unmatched = source.join(
                matched_ids, F.col(SOURCE_ROW) == F.col(MATCHED_SOURCE_ROW), "left_anti"
            ).withColumn(SOURCE_PRESENT, F.lit(True))
            empty, _ = _pruned_target(run, [])
            inserts = empty.join(unmatched.alias(spec.source_alias), on, "right_outer")
            taken = taken.union(inserts.withColumn(ACTION, action).where(F.col(ACTION) != COPY))
        output, vectors = positions_and_output(run, taken, dry_run=dry_run)
    finally:
        pairs.unpersist()
    return output, vectors, join_ms


def _with_whole_source_rows(
    run: MergeRun, pairs: DataFrame, target: list[str], source: DataFrame, duplicates: bool
) -> DataFrame:
    """The pairs (target side and source row id) joined with their whole source rows, under the
    sides' aliases again: the clauses' outputs may name any source column. The pairs (at most
    one per source row without duplicate matches) are broadcast to the source's scan when they
    fit, so no side is shuffled."""
    spec = run.spec
    sides = pairs.select(
        *[F.col(f"{quote_identifier(spec.target_alias)}.{quote_identifier(c)}") for c in target],
        F.col(SOURCE_ROW).alias(MATCHED_SOURCE_ROW),
    ).alias(spec.target_alias)
    small = not duplicates and fits_in_broadcast(sides.schema, run.plan.source_rows)
    rows = source.withColumn(SOURCE_PRESENT, F.lit(True)).alias(spec.source_alias)
    on = F.col(MATCHED_SOURCE_ROW) == F.col(SOURCE_ROW)
    whole = (F.broadcast(sides) if small else sides).join(rows, on, "inner")
    return whole.drop(MATCHED_SOURCE_ROW)


def _pruned_target(run: MergeRun, files: list[AddFile]) -> tuple[DataFrame, list[str]]:
    """The target rows of ``files`` with only the columns the merge names, under the target alias,
    and the names of the table's columns read."""
    target = aliased_target(run, files)
    schema = {f.name for f in run.snapshot.schema.fields}
    named = referenced_names(run.merge, run.plan.join_condition)
    every = run.plan.change_data
    kept = [c for c in target.columns if c not in schema or every or c.lower() in named]
    pruned = target.select(*[F.col(quote_identifier(c)) for c in kept]).alias(run.spec.target_alias)
    return pruned, [c for c in kept if c in schema]


def referenced_names(merge: ResolvedMerge, join_condition: str) -> set[str]:
    """Every name (lower case) the ON condition and the clauses' SQL mention, except those
    qualified by the source's alias: a superset of the target columns the merge reads (a column
    is read only where its name is written, qualified by the target's alias or not at all).

    >>> from dbt.adapters.deltamerge.merge.spec import MergeSpec
    >>> spec = MergeSpec.from_config("m", {"unique_key": "id", "source_alias": "S"})
    >>> merge = ResolvedMerge(spec, ("id", "v", "w"), (), (), ())
    >>> sorted(referenced_names(merge, "t.`Id` = s.id AND t.v > 'x y' AND `s`.w = 1 AND x.s.w = 2"))
    ['id', 's', 't', 'v', 'w', 'x']
    """
    texts = [join_condition]
    for clause in (*merge.matched, *merge.not_matched, *merge.not_matched_by_source):
        texts += [clause.condition or "", clause.unchanged or "", *[sql for _, sql in clause.outputs]]
    source = merge.spec.source_alias.lower()
    names = set()
    for text in texts:
        tokens = Spark().tokenize(text) if text else []
        for i, token in enumerate(tokens):
            if token.token_type not in _NAMES:
                continue
            qualifier = tokens[i - 2] if i >= 2 and tokens[i - 1].token_type == TokenType.DOT else None
            nested = i >= 3 and tokens[i - 3].token_type == TokenType.DOT
            if qualifier is not None and not nested and qualifier.text.lower() == source:
                continue
            names.add(token.text.lower())
    return names


_NAMES = (TokenType.VAR, TokenType.IDENTIFIER)


def _has_multiple_matches(pairs: DataFrame) -> bool:
    """Whether a target row is in more than one pair (Delta counts every pair, whatever the clauses'
    conditions)."""
    counted = pairs.groupBy(ROW_ID).count().where("count > 1")
    if is_remote():
        return bool(counted.limit(1).collect())
    return not counted.isEmpty()
