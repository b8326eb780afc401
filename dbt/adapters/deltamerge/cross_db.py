"""SQL for dbt's cross-database macros where Spark 4 can do what dbt-spark's versions leave out.

dbt-spark's ``listagg`` ignores ``order_by_clause`` (with a warning): it predates Spark 4's
``listagg ... WITHIN GROUP``. Here the order is kept, also together with ``limit_num``.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

_SPARK = sqlglot.Dialect.get_or_raise("spark")


def listagg_sql(measure: str, delimiter: str, order_by_clause: str | None, limit_num: int | None) -> str:
    """Spark SQL for dbt's ``listagg(measure, delimiter_text, order_by_clause, limit_num)``.

    Without a limit Spark's own ``listagg`` keeps the order. With one, the values are collected
    with their sort keys, sorted by a comparator that follows each key's direction and null
    ordering (Spark's defaults: NULLS FIRST ascending, NULLS LAST descending), then cut.

    >>> listagg_sql("s", "','", None, None)
    "array_join(collect_list(s), ',')"
    >>> listagg_sql("s", "','", "order by o desc", None)
    "listagg(s, ',') WITHIN GROUP (order by o desc)"
    >>> listagg_sql("s", "','", None, 2)
    "array_join(slice(collect_list(s), 1, 2), ',')"
    """
    if not order_by_clause:
        collected = f"collect_list({measure})"
        if limit_num:
            collected = f"slice({collected}, 1, {int(limit_num)})"
        return f"array_join({collected}, {delimiter})"
    if not limit_num:
        return f"listagg({measure}, {delimiter}) WITHIN GROUP ({order_by_clause})"
    keys = _sort_keys(order_by_clause)
    fields = ", ".join(f"'k{i}', {sql}" for i, (sql, _, _) in enumerate(keys))
    comparator = _comparator(keys)
    pairs = f"array_sort(collect_list(named_struct({fields}, 'v', {measure})), (l, r) -> {comparator})"
    return f"array_join(transform(slice({pairs}, 1, {int(limit_num)}), x -> x.v), {delimiter})"


def _sort_keys(order_by_clause: str) -> list[tuple[str, bool, bool]]:
    """(expression SQL, descending, nulls first) of each key of ``order by ...``.

    >>> _sort_keys("order by a, b desc nulls first")
    [('a', False, True), ('b', True, True)]
    """
    select = sqlglot.parse_one(f"SELECT 1 {order_by_clause}", dialect=_SPARK)
    order = select.args.get("order")
    if not isinstance(select, exp.Select) or order is None:
        raise ValueError(f"listagg: cannot read the order_by_clause {order_by_clause!r}")
    keys = []
    for ordered in order.expressions:
        desc = bool(ordered.args.get("desc"))
        nulls_first = ordered.args.get("nulls_first")
        keys.append(
            (ordered.this.sql(dialect=_SPARK), desc, not desc if nulls_first is None else bool(nulls_first))
        )
    return keys


def _comparator(keys: list[tuple[str, bool, bool]]) -> str:
    """A comparator for ``array_sort`` over structs with fields ``k0``, ``k1``, ... in key order."""
    branches = []
    for i, (_, desc, nulls_first) in enumerate(keys):
        left, right = f"l.k{i}", f"r.k{i}"
        null_side = -1 if nulls_first else 1
        less = 1 if desc else -1
        branches += [
            f"WHEN {left} IS NULL AND {right} IS NOT NULL THEN {null_side}",
            f"WHEN {left} IS NOT NULL AND {right} IS NULL THEN {-null_side}",
            f"WHEN {left} < {right} THEN {less}",
            f"WHEN {left} > {right} THEN {-less}",
        ]
    return f"CASE {' '.join(branches)} ELSE 0 END"
