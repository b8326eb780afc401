"""The user's SQL in a merge, checked by Spark as Delta's analyzer checks it, before the merge runs.

First what Delta refuses by the form of the SQL (``refusals.py``: aggregates, windows and subqueries
where Delta takes none). Then every condition and assigned expression is analyzed (no Spark job)
against what its clause sees (``ResolveDeltaMergeInto``): the ON condition and WHEN MATCHED
clauses both sides under their aliases, NOT MATCHED clauses the source only, NOT MATCHED BY SOURCE
clauses the target only; a name a clause cannot see is Delta's ``DELTA_MERGE_UNRESOLVED_EXPRESSION``
("Cannot resolve tgtValue in INSERT condition given columns s.key, s.srcValue."). The conditions are
also analyzed as a join's, where Spark refuses a nondeterministic expression: Delta's
``DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED``. When Spark cannot analyze the SQL, each text is
analyzed alone to find which, and the error names its config key (``when_matched[1].condition``) and
shows the user's text, not the CASE expressions the executor builds from it. The analysis also gives
each assigned expression's type, by which structs are assigned by name (``structs.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.clauses import LIST_KEYS
from dbt.adapters.deltamerge.merge.refusals import clause_type, refusals, subquery_relations
from dbt.adapters.deltamerge.merge.resolve import AssignedTypes, resolve
from dbt.adapters.deltamerge.merge.scope import columns_sql, scoped_spec
from dbt.adapters.deltamerge.merge.spec import MergeSpec

Scope = Literal["both", "source", "target"]
_SCOPES: dict[str, Scope] = {"matched": "both", "not_matched": "source", "not_matched_by_source": "target"}


@dataclass(frozen=True)
class UserSql:
    """One condition or assigned expression the user wrote, and where it stands."""

    key: str  # the config key it came from (``when_matched[0].set.v``)
    sql: str
    scope: Scope  # the sides it sees
    clause: str  # Delta's name of its place: ``search condition``, ``INSERT clause``...
    condition: bool
    # (clause kind, clause index, assigned column) of an assignment: its type is kept.
    assigned: tuple[str, int, str] | None = None


def user_expressions(spec: MergeSpec) -> Iterator[UserSql]:
    """Every condition and expression the user wrote, in config order.

    >>> config = {"unique_key": "id", "when_matched": [{"action": "update", "set": {"v": "s.v + 1"}}],
    ...           "source_alias": "s", "target_alias": "t"}
    >>> [(u.key, u.sql, u.clause) for u in user_expressions(MergeSpec.from_config("m", config))]
    [('when_matched[0].set.v', 's.v + 1', 'UPDATE clause')]
    """
    if spec.merge_condition is not None:
        yield UserSql("merge_condition", spec.merge_condition, "both", "search condition", True)
    for i, predicate in enumerate(spec.incremental_predicates):
        yield UserSql(f"incremental_predicates[{i}]", predicate, "both", "search condition", True)
    for kind in LIST_KEYS:
        for i, clause in enumerate(getattr(spec, kind)):
            scope, name = _SCOPES[kind], clause_type(clause)
            if clause.condition is not None:
                key = clause.condition_key or f"{LIST_KEYS[kind]}[{i}].condition"
                yield UserSql(key, clause.condition, scope, f"{name} condition", True)
            payload = clause.payload_key or f"{LIST_KEYS[kind]}[{i}]"
            for a in clause.assignments or ():
                yield UserSql(
                    f"{payload}.{a.column}", a.expression, scope, f"{name} clause", False, (kind, i, a.column)
                )


def check_expressions(
    spark: SparkSession, spec: MergeSpec, target: T.StructType, source: DataFrame
) -> AssignedTypes:
    """Raise one SpecError naming each config key whose SQL Delta refuses or Spark cannot analyze;
    return the type of every assigned expression. ``spec``'s one-sided clauses are ``scoped``."""
    missing = _missing_relations(spark, spec)  # Spark's analysis comes before Delta's refusals
    refused = missing or refusals(spec)
    if refused:
        raise SpecError(spec.model, refused)
    items = list(user_expressions(spec))
    if not items:
        return {}
    frames = _frames(spark, spec, target, source)
    columns = {
        "target": columns_sql(spec.target_alias, target.names),
        "source": columns_sql(spec.source_alias, source.schema.names),
    }
    columns["both"] = f"{columns['target']}, {columns['source']}"
    problems: list[str] = []
    types: AssignedTypes = {}
    for scope, frame in frames.items():
        mine = [u for u in items if u.scope == scope]
        if not mine:
            continue
        schema = _analyzed(frame, [u.sql for u in mine])
        if isinstance(schema, T.StructType):
            types.update(
                {u.assigned: f.dataType for u, f in zip(mine, schema.fields, strict=True) if u.assigned}
            )
            continue
        for u in mine:
            error = _analyzed(frame, [u.sql])
            if isinstance(error, PySparkException):
                problems.append(f"`{u.key}`: {_worded(error, u, columns[scope])}")
    if not problems:
        problems = _refused_in_a_join(frames["target"], frames["source"], [u for u in items if u.condition])
    if problems:
        raise SpecError(spec.model, problems)
    return types


def check_before_creating(spark: SparkSession, spec: MergeSpec, source: DataFrame) -> None:
    """What the merge of a model's later runs will check, checked on the run that creates its
    table (the table's columns are the source's): its columns, keys and expressions, one SpecError
    for all; a missing column must fail the first night's run, not the second's."""
    problems: list[str] = []
    names = source.schema.names
    spec = scoped_spec(spec, target=names, source=names)
    types: AssignedTypes = {}
    try:
        types = check_expressions(spark, spec, source.schema, source)
    except SpecError as error:
        problems += error.problems
    try:
        resolve(spec, target=source.schema, source=source.schema, types=types)
    except SpecError as error:
        problems += error.problems
    if problems:
        raise SpecError(spec.model, problems)


def _frames(
    spark: SparkSession, spec: MergeSpec, target: T.StructType, source: DataFrame
) -> dict[str, DataFrame]:
    empty_target = spark.createDataFrame([], target).alias(spec.target_alias)
    empty_source = source.limit(0).alias(spec.source_alias)
    return {"both": empty_target.crossJoin(empty_source), "source": empty_source, "target": empty_target}


def _analyzed(frame: DataFrame, sqls: list[str]) -> T.StructType | PySparkException:
    """The types of ``sqls`` over ``frame`` (a Spark analysis), or Spark's error."""
    try:
        return frame.select(*[F.expr(sql).alias(f"_e{i}") for i, sql in enumerate(sqls)]).schema
    except PySparkException as error:
        return error


def _refused_in_a_join(target: DataFrame, source: DataFrame, conditions: list[UserSql]) -> list[str]:
    """Delta's error for each condition Spark finds nondeterministic (Spark refuses those in a join's
    condition), Spark's for any other it refuses there."""
    if not conditions or _joins(target, source, [u.sql for u in conditions]) is None:
        return []
    problems = []
    for u in conditions:
        error = _joins(target, source, [u.sql])
        if error is None:
            continue
        if (_condition(error) or "").startswith("INVALID_NON_DETERMINISTIC"):
            where = "search" if u.clause == "search condition" else u.clause.split()[0]
            problems.append(
                f"`{u.key}`: [DELTA_NON_DETERMINISTIC_FUNCTION_NOT_SUPPORTED] Non-deterministic functions "
                f"are not supported in the {where} condition of MERGE operation (condition = {u.sql})."
            )
        else:
            problems.append(f"`{u.key}`: Spark cannot run `{u.sql}`: {_first_line(str(error))}")
    return problems


def _joins(target: DataFrame, source: DataFrame, conditions: list[str]) -> PySparkException | None:
    try:
        _ = target.join(source, F.expr(" AND ".join(f"({c})" for c in conditions))).schema
    except PySparkException as error:
        return error
    return None


def _worded(error: PySparkException, item: UserSql, columns: str) -> str:
    """Spark's error in Delta's words where Delta has its own: a name the clause cannot see."""
    if (_condition(error) or "").startswith("UNRESOLVED_COLUMN"):
        name = str((error.getMessageParameters() or {}).get("objectName", ""))
        found = _UNRESOLVED.search(str(error))
        name = name or (found.group(1) if found else "")
        shown = ".".join(part.strip("`") for part in name.split("`.`")) if name else item.sql
        return (
            f"[DELTA_MERGE_UNRESOLVED_EXPRESSION] Cannot resolve {shown} in {item.clause} given "
            f"columns {columns}."
        )
    return f"Spark cannot run `{item.sql}`: {_first_line(str(error))}"


# Spark's text of UNRESOLVED_COLUMN, where a client gets no message parameters.
_UNRESOLVED = re.compile(r"with name (`[^`]*`(?:\.`[^`]*`)*) cannot be resolved")


def _condition(error: PySparkException) -> str | None:
    try:
        return error.getCondition()
    except Exception:  # an error without a condition
        return None


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else text


def _missing_relations(spark: SparkSession, spec: MergeSpec) -> list[str]:
    """Spark's ``TABLE_OR_VIEW_NOT_FOUND`` for each relation a subquery of the merge reads that
    does not exist (the target's alias in ``s.v in (select v from t)``), as Delta's analyzer
    reports it before it refuses the subquery."""
    problems = []
    for relation in subquery_relations(spec):
        try:
            spark.sql(f"SELECT * FROM {relation}").schema  # noqa: B018 - analysis only, no job
        except PySparkException as error:
            if error.getCondition() == "TABLE_OR_VIEW_NOT_FOUND":
                problems.append(str(error).split("\n")[0])
    return problems
