"""The Delta table properties this engine reads, and their values checked as Delta checks them.

A property value Delta cannot read is refused, as Delta's ``DeltaConfigs`` refuses it, before
anything is written: read loosely, ``delta.enableChangeDataFeed = 'yes'`` would silently leave
the feed off, and ``delta.checkpointInterval = 'ten'`` would fail after the commit was made.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

BOOLEAN = (
    "delta.enableChangeDataFeed",
    "delta.appendOnly",
    "delta.enableDeletionVectors",
    "delta.enableRowTracking",
    "delta.enableTypeWidening",
    "delta.enableInCommitTimestamps",
    "delta.enableIcebergCompatV1",
    "delta.enableIcebergCompatV2",
)
# Delta's auto compaction after each write (``delta/commands/auto_optimize.py``).
AUTO_COMPACT = "delta.autoOptimize.autoCompact"
# VACUUM's default retention: Delta's ``delta.deletedFileRetentionDuration`` of 7 days.
DEFAULT_RETENTION_HOURS = 168.0
# Session configuration whose keys below give new tables their default properties, as Delta's
# ``spark.databricks.delta.properties.defaults.enableDeletionVectors`` -> ``delta.enableDeletionVectors``.
SESSION_DEFAULTS_PREFIX = "spark.databricks.delta.properties.defaults."


def with_session_defaults(properties: Mapping[str, str], session: Mapping[str, str]) -> dict[str, str]:
    """A new table's properties: ``properties`` over the session's defaults (Delta's ``mergeGlobalConfigs``).

    >>> with_session_defaults({"a": "1"}, {SESSION_DEFAULTS_PREFIX + "enableDeletionVectors": "true"})
    {'delta.enableDeletionVectors': 'true', 'a': '1'}
    """
    defaults = {
        "delta." + key[len(SESSION_DEFAULTS_PREFIX) :]: str(value)
        for key, value in session.items()
        if key.startswith(SESSION_DEFAULTS_PREFIX)
    }
    return {**defaults, **properties}


# Property -> the least value Delta accepts.
INTEGER = {"delta.checkpointInterval": 1, "delta.dataSkippingNumIndexedCols": -1}
INTERVAL = (
    "delta.setTransactionRetentionDuration",
    "delta.logRetentionDuration",
    "delta.deletedFileRetentionDuration",
    "delta.checkpointRetentionDuration",
)
_INTERVAL = re.compile(
    r"(?:interval\s+)?\d+\s+(?:nanosecond|microsecond|millisecond|second|minute|hour|day|week)s?",
    re.IGNORECASE,
)


_UNIT_MS = {
    "nanosecond": 1e-6,
    "microsecond": 1e-3,
    "millisecond": 1,
    "second": 1_000,
    "minute": 60_000,
    "hour": 3_600_000,
    "day": 86_400_000,
    "week": 604_800_000,
}


def interval_ms(configuration: Mapping[str, str], key: str, default: str) -> int:
    """A duration property (``interval 7 days``, ``30 seconds``) in milliseconds (``default`` when
    unset; values are checked by ``value_problems`` before a write).

    >>> interval_ms({}, "delta.deletedFileRetentionDuration", "interval 1 week")
    604800000
    >>> interval_ms({"d": "interval 30 seconds"}, "d", "1 day")
    30000
    """
    text = str(configuration.get(key, default)).strip().lower().removeprefix("interval").split()
    return int(float(text[0]) * _UNIT_MS[text[1].rstrip("s")])


def value_problems(configuration: Mapping[str, str]) -> list[str]:
    """A sentence for each known property whose value Delta would refuse.

    >>> value_problems({"delta.enableChangeDataFeed": "yes", "delta.checkpointInterval": "10"})
    ["table property delta.enableChangeDataFeed must be 'true' or 'false', got 'yes'"]
    >>> value_problems({"delta.logRetentionDuration": "30 days"})
    []
    >>> value_problems({"delta.logRetentionDuration": "a month"})[0].endswith("got 'a month'")
    True
    """
    problems = []
    for key, value in configuration.items():
        text = str(value).strip()
        if key in BOOLEAN and text.lower() not in ("true", "false"):
            problems.append(f"table property {key} must be 'true' or 'false', got {value!r}")
        elif key in INTEGER and not (_is_integer(text) and int(text) >= INTEGER[key]):
            problems.append(f"table property {key} must be a whole number >= {INTEGER[key]}, got {value!r}")
        elif key in INTERVAL and not _INTERVAL.fullmatch(text):
            problems.append(f"table property {key} must be an interval ('interval 30 days'), got {value!r}")
    return problems


def _is_integer(text: str) -> bool:
    return text.lstrip("-").isdigit()
