"""A MERGE into a temp view over a Delta table: the table it stands for, as Delta allows it.

Delta merges into a temp view whose plan is the table itself (``SELECT * FROM t``, its columns
in any order, through aliases and nested ``SELECT *``: ``DeltaViewHelper.stripTempViewForMerge``).
Spark keeps no text of a temp view, so its analyzed plan (``EXPLAIN EXTENDED``, a public SQL
statement) is read: between the view and the catalog table only projections that pass columns
through unchanged (Spark's own ``cast(x as <its type>) AS x``), aliases and views may stand. A
view that filters is Delta's ``DELTA_UNEXPECTED_PARTIAL_SCAN``; one that computes or renames
columns is refused too, naming what it does (Delta writes through a renaming projection, which
swaps the columns written: a rule kept for its history, not followed here), before anything is read.
Where Delta fails such a MERGE with its own error, that error is said: a view showing columns its
table lacks (``DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS``), a nested field assigned through a view
(``DELTA_MERGE_UNEXPECTED_ASSIGNMENT_KEY``), and, for a view showing some of the columns, Spark's
``UNRESOLVED_COLUMN`` for a column the statement names that the view does not show.
"""

from __future__ import annotations

import re

from pyspark.errors import AnalysisException
from pyspark.sql import SparkSession

from dbt.adapters.deltamerge.statements.parse.dml import MergeStatement

# A projected item that passes a column through: `x#1`, `x#1 AS x#2`, `cast(x#1 as t) AS x#2`.
_PASSED = re.compile(
    r"^(?:cast\()?(?P<src>[^#\s(),]+)#\d+(?: as [^()]+(?:\([^()]*\))?\))?(?: AS (?P<dst>[^#\s]+)#\d+)?$"
)


class ViewError(ValueError):
    """A temp view a MERGE cannot write through."""


def underlying_table(plan: str) -> tuple[str, ...]:
    """The catalog table (schema, name) a temp view's analyzed plan stands for.

    >>> underlying_table('''key: int
    ... Project [key#13]
    ... +- SubqueryAlias v
    ...    +- View (`v`, [key#13])
    ...       +- Project [cast(key#2 as int) AS key#13]
    ...          +- SubqueryAlias spark_catalog.s.tab
    ...             +- Relation spark_catalog.s.tab[key#2] parquet''')
    ('s', 'tab')
    """
    table, problem = view_plan(plan)
    if problem is not None:
        raise ViewError(problem)
    assert table is not None
    return table


def view_plan(plan: str) -> tuple[tuple[str, ...] | None, str | None]:
    """The catalog table a temp view's analyzed plan reads (None: none) and why the view is not that
    table unchanged (None: it is). A filter is Delta's ``DELTA_UNEXPECTED_PARTIAL_SCAN``.

    >>> view_plan('''key: int, 1: int
    ... Project [key#13, 1#14]
    ... +- SubqueryAlias v
    ...    +- Project [key#2, 1 AS 1#14]
    ...       +- SubqueryAlias spark_catalog.s.tab
    ...          +- Relation spark_catalog.s.tab[key#2] parquet''')
    (('s', 'tab'), 'it computes or renames a column (1 AS 1#14)')
    """
    filtered, problem = False, None
    for line in plan.strip().splitlines()[1:]:
        node = line.strip().lstrip(":+-| ").strip()
        if node.startswith("SubqueryAlias spark_catalog."):
            table = tuple(node.split(" ", 1)[1].split(".")[1:])
            if filtered:
                problem = (
                    "[DELTA_UNEXPECTED_PARTIAL_SCAN] Expect a full scan of Delta sources, but found a "
                    f"partial scan. path:{'.'.join(table)} (the view filters the table's rows)"
                )
            return table, problem
        if node.startswith(("SubqueryAlias ", "View (")):
            continue
        if node.startswith("Filter "):
            filtered = True
            continue
        if node.startswith("Project [") and node.endswith("]"):
            for item in _items(node[len("Project [") : -1]):
                found = _PASSED.match(item)
                if found is None or (found["dst"] and found["dst"].lower() != found["src"].lower()):
                    problem = problem or f"it computes or renames a column ({item})"
            continue
        return None, problem or f"its plan has a {node.split(' ', 1)[0]} ({node})"
    return None, problem or "it reads no table of the catalog"


def schema_change_since_analysis(extra: list[str]) -> str:
    """Delta's error for a MERGE into a view showing columns its table does not have (Delta's
    analyzer takes the view's columns as the table's, and the commit finds them missing).

    >>> print(schema_change_since_analysis(["1"]).splitlines()[-1])
    Latest schema is missing field(s): 1
    """
    return (
        "[DELTA_SCHEMA_CHANGE_SINCE_ANALYSIS] The schema of your Delta table has changed in an "
        "incompatible way since your DataFrame or DeltaTable object was created. Please redefine your "
        "DataFrame or DeltaTable object.\nChanges:\nLatest schema is missing field(s): " + ", ".join(extra)
    )


def nested_assignment(keys: list[str], target_alias: str) -> str | None:
    """The first assignment key that names a field inside a column (``value.a.x``), the target's
    alias aside: Delta refuses it through a temp view (``DELTA_MERGE_UNEXPECTED_ASSIGNMENT_KEY``:
    Spark resolves a view's key to a field access, which Delta's merge does not take).

    >>> nested_assignment(["t.k", "`t`.v", "value.a.x"], "t"), nested_assignment(["t.k", "w"], "t")
    ('value.a.x', None)
    """
    for key in keys:
        parts = [p.strip("`") for p in re.findall(r"`[^`]*`|[^.]+", key)]
        if parts and parts[0].lower() == target_alias.lower():
            parts = parts[1:]
        if len(parts) > 1:
            return key
    return None


def _items(text: str) -> list[str]:
    """A projection's items, split at the commas outside parentheses."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    return [*items, text[start:].strip()]


def temp_view_plan(spark: SparkSession, name: str) -> tuple[tuple[str, ...] | None, str | None] | None:
    """``view_plan`` of temp view ``name``; None when ``name`` is no temp view."""
    if not spark.catalog.tableExists(name) or not spark.catalog.getTable(name).isTemporary:
        return None
    explained = str(spark.sql(f"EXPLAIN EXTENDED SELECT * FROM `{name}`").collect()[0][0])
    analyzed = explained.split("== Analyzed Logical Plan ==", 1)[-1]
    analyzed = analyzed.split("== Optimized Logical Plan ==", 1)[0]
    return view_plan(analyzed)


def resolve_as_delta(spark: SparkSession, parsed: MergeStatement, view: str, table: tuple[str, ...]) -> None:
    """Delta's errors for a MERGE into a view that does not show its table's columns: more columns
    (the table lacks them at the commit), a nested field assigned through a view, fewer columns (a
    column the statement names that the view does not show is unresolved: Spark's own error, from
    resolving the statement's target-side expressions against the view).

    Raises:
        ViewError: Delta's error, or why the view is not its table (fewer columns, all resolved).
    """
    config = parsed.config
    shown = spark.table(f"`{view}`").columns
    columns = {c.lower() for c in spark.table(".".join(f"`{p}`" for p in table)).columns}
    extra = [c for c in shown if c.lower() not in columns]
    if extra and columns <= {c.lower() for c in shown}:
        raise ViewError(schema_change_since_analysis(extra))
    matched = [c for c in config.get("when_matched") or [] if isinstance(c.get("set"), dict)]
    keys = [k for c in matched for k in c["set"]]
    nested = nested_assignment(keys, config["target_alias"])
    if nested is not None:
        raise ViewError(
            "[DELTA_MERGE_UNEXPECTED_ASSIGNMENT_KEY] Unexpected assignment key: class "
            f"org.apache.spark.sql.catalyst.expressions.GetStructField - {nested} (a field inside a "
            "column assigned through a temp view)"
        )
    if len(shown) < len(columns):
        target, source = config["target_alias"], config["source_alias"]
        named = [config["merge_condition"], *[c["condition"] for c in matched if c.get("condition")]]
        named += [k if k.lower().startswith(f"{target.lower()}.") else f"`{target}`.{k}" for k in keys]
        named += [v for c in matched for v in c["set"].values()]
        select = ", ".join(f"({e})" for e in named)
        both = f"`{view}` AS `{target}` CROSS JOIN ({parsed.source_query}) AS `{source}`"
        try:
            spark.sql(f"SELECT {select} FROM {both}").schema  # noqa: B018 (analysis raises what is unresolved)
        except AnalysisException as error:
            raise ViewError(str(error).strip().split("\n", 1)[0]) from error
        raise ViewError(f"it shows only some columns of {'.'.join(table)}")
