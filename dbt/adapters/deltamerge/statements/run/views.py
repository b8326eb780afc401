"""A MERGE into a temp view over a Delta table: the table it stands for, as Delta allows it.

Delta merges into a temp view whose plan is the table itself (``SELECT * FROM t``, its columns
in any order, through aliases and nested ``SELECT *``: ``DeltaViewHelper.stripTempViewForMerge``).
Spark keeps no text of a temp view, so its analyzed plan (``EXPLAIN EXTENDED``, a public SQL
statement) is read: between the view and the catalog table only projections that pass columns
through unchanged (Spark's own ``cast(x as <its type>) AS x``), aliases and views may stand. A
view that filters is Delta's ``DELTA_UNEXPECTED_PARTIAL_SCAN``; one that computes or renames
columns is refused too, naming what it does (Delta writes through a renaming projection, which
swaps the columns written: a rule kept for its history, not followed here), before anything is read.
"""

from __future__ import annotations

import re

from pyspark.sql import SparkSession

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
    filtered = False
    for line in plan.strip().splitlines()[1:]:
        node = line.strip().lstrip(":+-| ").strip()
        if node.startswith("SubqueryAlias spark_catalog."):
            table = tuple(node.split(" ", 1)[1].split(".")[1:])
            if filtered:
                raise ViewError(
                    "[DELTA_UNEXPECTED_PARTIAL_SCAN] Expect a full scan of Delta sources, but found a "
                    f"partial scan. path:{'.'.join(table)} (the view filters the table's rows)"
                )
            return table
        if node.startswith(("SubqueryAlias ", "View (")):
            continue
        if node.startswith("Filter "):
            filtered = True
            continue
        if node.startswith("Project [") and node.endswith("]"):
            for item in _items(node[len("Project [") : -1]):
                found = _PASSED.match(item)
                if found is None or (found["dst"] and found["dst"].lower() != found["src"].lower()):
                    raise ViewError(f"it computes or renames a column ({item})")
            continue
        raise ViewError(f"its plan has a {node.split(' ', 1)[0]} ({node})")
    raise ViewError("it reads no table of the catalog")


def _items(text: str) -> list[str]:
    """A projection's items, split at the commas outside parentheses."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    return [*items, text[start:].strip()]


def temp_view_table(spark: SparkSession, name: str) -> tuple[str, ...] | None:
    """The (schema, table) temp view ``name`` stands for, or None when ``name`` is no temp view.

    Raises:
        ViewError: the view is not the table itself (said why).
    """
    if not spark.catalog.tableExists(name) or not spark.catalog.getTable(name).isTemporary:
        return None
    explained = str(spark.sql(f"EXPLAIN EXTENDED SELECT * FROM `{name}`").collect()[0][0])
    analyzed = explained.split("== Analyzed Logical Plan ==", 1)[-1]
    analyzed = analyzed.split("== Optimized Logical Plan ==", 1)[0]
    return underlying_table(analyzed)
