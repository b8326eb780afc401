"""Data skipping for merges: target files that cannot hold a row matching any source key.

With an ON condition built from ``unique_key`` (``t.k <=> s.k AND ...``), a target file
can match only if, for every key, its [min, max] overlaps the source keys' [min, max]
(or both sides have nulls, which ``<=>`` matches). Partition columns use the file's
partition value. A file without usable statistics is always kept.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dbt.adapters.deltamerge.delta import AddFile

_COMPARABLE = (int, float, str, decimal.Decimal, dt.date)


@dataclass(frozen=True)
class KeyRange:
    """The source's values of one key column."""

    column: str
    low: Any
    high: Any
    has_nulls: bool


def may_match(file: AddFile, ranges: list[KeyRange], partition_types: Mapping[str, type]) -> bool:
    """False only when ``file`` provably holds no row matching any source key.

    >>> f = AddFile("a", 1, {}, 10, {"id": 1}, {"id": 5})
    >>> may_match(f, [KeyRange("id", 6, 9, False)], {}), may_match(f, [KeyRange("id", 4, 9, False)], {})
    (False, True)
    """
    return all(_overlaps(file, r, partition_types) for r in ranges)


def _overlaps(file: AddFile, key: KeyRange, partition_types: Mapping[str, type]) -> bool:
    if key.column in file.partition_values:
        raw = file.partition_values[key.column]
        if raw is None:
            return key.has_nulls
        value = typed_partition_value(raw, partition_types.get(key.column))
        return value is None or key.low is None or _between(value, key.low, key.high)
    low, high = file.min_values.get(key.column), file.max_values.get(key.column)
    if key.low is None:  # every source key is null: only files with nulls can match
        return True
    if not comparable(low, key.low) or not comparable(high, key.high):
        return True
    return (low <= key.high and high >= key.low) or key.has_nulls


def _between(value: Any, low: Any, high: Any) -> bool:
    if not comparable(value, low):
        return True
    return bool(low <= value <= high)


def comparable(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` compare in Python as their SQL types do.

    Datetimes compare only when both carry a time zone (instants) or neither does
    (wall-clock ``timestamp_ntz``).

    >>> utc = dt.timezone.utc
    >>> comparable(dt.datetime(2026, 1, 1, tzinfo=utc), dt.datetime(2026, 1, 2, tzinfo=utc))
    True
    >>> comparable(dt.datetime(2026, 1, 1), dt.datetime(2026, 1, 2, tzinfo=utc)), comparable(1, "1")
    (False, False)
    """
    if a is None or b is None:
        return False
    if isinstance(a, dt.datetime) or isinstance(b, dt.datetime):
        both = isinstance(a, dt.datetime) and isinstance(b, dt.datetime)
        return both and (a.tzinfo is None) == (b.tzinfo is None)
    if isinstance(a, bool) or isinstance(b, bool):
        return False
    numeric = (int, float, decimal.Decimal)
    if isinstance(a, numeric) and isinstance(b, numeric):
        return not (isinstance(a, float) and isinstance(b, decimal.Decimal)) and not (
            isinstance(a, decimal.Decimal) and isinstance(b, float)
        )
    return type(a) is type(b) and isinstance(a, _COMPARABLE)


def typed_partition_value(raw: str, kind: type | None) -> Any:
    """A partition value's text as ``kind`` (int, date or str); None when unknown."""
    try:
        if kind is int:
            return int(raw)
        if kind is dt.date:
            return dt.date.fromisoformat(raw)
        if kind is str:
            return raw
    except ValueError:
        return None
    return None
