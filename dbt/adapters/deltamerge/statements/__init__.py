"""SQL statements on Delta tables: parsed (pure), then run by the engine as Delta commits.

``may_write_table`` is the cheap test the cursor runs on every statement dbt sends; only a
statement that passes it loads the parsers and runners (``statements/parse``, ``statements/run``).
"""

from __future__ import annotations

import re

_LEADING = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*([a-z]+)", re.IGNORECASE | re.DOTALL)
_WRITING = {
    "insert",
    "with",
    "update",
    "delete",
    "merge",
    "truncate",
    "from",
    "create",
    "alter",
    "replace",
    "reorg",
    "optimize",
}


def may_write_table(sql: str) -> bool:
    """Whether ``sql`` can be a statement that writes a table (cheap text test, no Spark).

    >>> may_write_table("-- note\\n  INSERT INTO s.t VALUES (1)"), may_write_table("select 1")
    (True, False)
    >>> may_write_table("/* a */ with x as (select 1) insert into t select * from x")
    True
    """
    found = _LEADING.match(sql)
    return found is not None and found.group(1).lower() in _WRITING
