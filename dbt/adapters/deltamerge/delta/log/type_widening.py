"""Type widening (PROTOCOL.md, "Type Widening"): which recorded type changes a read supports.

A table with the ``typeWidening`` reader feature may hold files written before a column's type
was widened; readers convert their values to the current type (Spark's parquet reader does, for
every change the protocol lists) and must fail on a change they do not support. Each change is
recorded in the nearest struct field's ``delta.typeChanges`` metadata.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

_INTEGERS = ("byte", "short", "integer", "long")
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


def supported_change(from_type: str, to_type: str) -> bool:
    """Whether the protocol lists widening ``from_type`` to ``to_type`` (Delta's type names).

    >>> supported_change("short", "long"), supported_change("date", "timestamp_ntz")
    (True, True)
    >>> supported_change("decimal(6, 2)", "decimal(10, 4)"), supported_change("decimal(6,2)", "decimal(7,4)")
    (True, False)
    >>> supported_change("integer", "decimal(10,0)"), supported_change("long", "decimal(19,0)")
    (True, False)
    >>> supported_change("long", "integer")
    False
    """
    source, target = from_type.strip().lower(), to_type.strip().lower()
    if source in _INTEGERS and target in _INTEGERS:
        return _INTEGERS.index(source) < _INTEGERS.index(target)
    if (source, target) == ("float", "double") or (source in _INTEGERS[:3] and target == "double"):
        return True
    if (source, target) == ("date", "timestamp_ntz"):
        return True
    wider = _DECIMAL.match(target)
    if wider is None:
        return False
    precision, scale = int(wider.group(1)), int(wider.group(2))
    narrower = _DECIMAL.match(source)
    if narrower is not None:
        k1, k2 = precision - int(narrower.group(1)), scale - int(narrower.group(2))
        return k1 >= k2 >= 0
    base = {"byte": 10, "short": 10, "integer": 10, "long": 20}.get(source)
    return base is not None and precision - base >= scale >= 0


def type_change_problems(schema_string: str) -> list[str]:
    """Every recorded type change a read does not support, named by column.

    >>> field = {"name": "e", "type": "long", "metadata": {"delta.typeChanges": [
    ...     {"fromType": "string", "toType": "long"}]}}
    >>> type_change_problems(json.dumps({"type": "struct", "fields": [field]}))
    ['type change of `e` from string to long (typeWidening)']
    """
    if not schema_string:
        return []
    return [
        f"type change of `{name}` from {change.get('fromType')} to {change.get('toType')} (typeWidening)"
        for name, change in _changes(json.loads(schema_string))
        if not supported_change(str(change.get("fromType", "")), str(change.get("toType", "")))
    ]


def _changes(node: Any, prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        for field in node.get("fields", []) if node.get("type") == "struct" else []:
            name = f"{prefix}{field['name']}"
            for change in (field.get("metadata") or {}).get("delta.typeChanges") or []:
                path = change.get("fieldPath")
                yield (f"{name}.{path}" if path else name), change
            yield from _changes(field["type"], name + ".")
        for key in ("elementType", "keyType", "valueType"):
            if key in node:
                yield from _changes(node[key], prefix)
