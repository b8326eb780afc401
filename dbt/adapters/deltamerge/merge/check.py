"""The user's SQL in a merge's config, checked by Spark before the merge runs.

Every condition and assigned expression is analyzed once, together, against the target's
and the source's columns under their aliases (an analysis, no Spark job). When Spark cannot
parse or resolve one of them, each is analyzed alone to find which, and the error names its
config key (``when_matched[1].condition``) and shows the user's text, not the CASE
expressions the executor builds from it.
"""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.clauses import LIST_KEYS
from dbt.adapters.deltamerge.merge.resolve import resolve
from dbt.adapters.deltamerge.merge.spec import MergeSpec


def user_expressions(spec: MergeSpec) -> Iterator[tuple[str, str]]:
    """``(config key, SQL)`` of every condition and expression the user wrote.

    >>> config = {"unique_key": "id", "when_matched": [{"action": "update", "set": {"v": "s.v + 1"}}],
    ...           "source_alias": "s", "target_alias": "t"}
    >>> list(user_expressions(MergeSpec.from_config("m", config)))
    [('when_matched[0].set.v', 's.v + 1')]
    """
    if spec.merge_condition is not None:
        yield "merge_condition", spec.merge_condition
    for i, predicate in enumerate(spec.incremental_predicates):
        yield f"incremental_predicates[{i}]", predicate
    for kind in LIST_KEYS:
        for i, clause in enumerate(getattr(spec, kind)):
            base = clause.condition_key or f"{LIST_KEYS[kind]}[{i}]"
            if clause.condition is not None:
                yield clause.condition_key or f"{base}.condition", clause.condition
            payload = clause.payload_key or f"{LIST_KEYS[kind]}[{i}]"
            for assignment in clause.assignments or ():
                yield f"{payload}.{assignment.column}", assignment.expression


def check_expressions(spark: SparkSession, spec: MergeSpec, target: T.StructType, source: DataFrame) -> None:
    """Raise a SpecError naming each config key whose SQL Spark cannot parse or resolve."""
    expressions = list(user_expressions(spec))
    if not expressions:
        return
    frame = _both_sides(spark, spec, target, source)
    if _analyzes(frame, [sql for _, sql in expressions]) is None:
        return
    problems = []
    for key, sql in expressions:
        error = _analyzes(frame, [sql])
        if error is not None:
            problems.append(f"`{key}`: Spark cannot run `{sql}`: {error}")
    if problems:
        raise SpecError(spec.model, problems)


def check_before_creating(spark: SparkSession, spec: MergeSpec, source: DataFrame) -> None:
    """What the merge of a model's later runs will check, checked on the run that creates its
    table (the table's columns are the source's): its columns, keys and expressions, one SpecError
    for all; a missing column must fail the first night's run, not the second's."""
    problems: list[str] = []
    try:
        resolve(spec, target=source.schema, source=source.schema)
    except SpecError as error:
        problems += error.problems
    try:
        check_expressions(spark, spec, source.schema, source)
    except SpecError as error:
        problems += error.problems
    if problems:
        raise SpecError(spec.model, problems)


def _both_sides(spark: SparkSession, spec: MergeSpec, target: T.StructType, source: DataFrame) -> DataFrame:
    empty_target = spark.createDataFrame([], target).alias(spec.target_alias)
    return empty_target.crossJoin(source.limit(0).alias(spec.source_alias))


def _analyzes(frame: DataFrame, sqls: list[str]) -> str | None:
    """None if Spark analyzes every one of ``sqls`` over ``frame``, else the first line of its error."""
    try:
        _ = frame.select(*[F.expr(sql).alias(f"_e{i}") for i, sql in enumerate(sqls)]).schema
    except PySparkException as error:
        return _first_line(str(error))
    return None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text
