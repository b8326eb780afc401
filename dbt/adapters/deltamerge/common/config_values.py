"""Reading single config values into plain Python values, collecting problems instead of raising.

Shared by every parser of model config (``merge.clauses``, ``cdc.spec``): each function appends
a sentence naming the key to ``problems`` and returns a neutral value, so that a parser reports
every problem of a model in one error, ``SpecError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SpecError(ValueError):
    """A model's config (or the data it names) has problems; all of them are listed.

    The engine's own error: it knows nothing of dbt. The adapter's error boundary
    (``errors.named_errors``) turns it into dbt's ``ConfigError`` with the same text.

    >>> print(SpecError("m", ["a is wrong", "b is missing"]))
    Model 'm': invalid config:
      - a is wrong
      - b is missing
    """

    def __init__(self, model: str, problems: list[str]) -> None:
        self.model = model
        self.problems = problems
        super().__init__(f"Model '{model}': invalid config:\n  - " + "\n  - ".join(problems))


def names(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    """A column name or a list of them, stripped; ``()`` when absent.

    >>> names(" id ", "unique_key", [])
    ('id',)
    >>> problems = []; names(["id", 3], "unique_key", problems), problems
    ((), ["unique_key must be a column name or a list of column names, got ['id', 3]"])
    """
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence) or not all(isinstance(v, str) and v.strip() for v in items):
        problems.append(f"{key} must be a column name or a list of column names, got {value!r}")
        return ()
    return tuple(v.strip() for v in items)


def sql_text(
    value: Any, key: str, problems: list[str], *, what: str = "a non-empty SQL expression"
) -> str | None:
    """A SQL expression as the user wrote it (numbers become their text); ``None`` when absent.

    >>> sql_text(" s.v > 1 ", "merge_condition", [])
    's.v > 1'
    >>> problems = []; sql_text("", "matched_condition", problems), problems
    (None, ["matched_condition must be a non-empty SQL expression, got ''"])
    """
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{key} must be {what}, got {value!r}")
        return None
    return value.strip()


def sql_list(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    """A SQL condition or a list of them (each named ``key[i]`` in problems)."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, Sequence):
        problems.append(f"{key} must be a SQL condition or a list of them")
        return ()
    return tuple(s for i, v in enumerate(items) if (s := sql_text(v, f"{key}[{i}]", problems)) is not None)


def flag(config: Mapping[str, Any], key: str, problems: list[str]) -> bool:
    """A boolean key, false when absent or null.

    >>> problems = []; flag({"change_data_feed": "yes"}, "change_data_feed", problems), problems
    (False, ["change_data_feed must be true or false, got 'yes'"])
    """
    value = config.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        problems.append(f"{key} must be true or false, got {value!r}")
        return False
    return value


def identifier(config: Mapping[str, Any], key: str, default: str, problems: list[str]) -> str:
    """A plain identifier (an alias), ``default`` when absent."""
    value = config.get(key) or default
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        problems.append(f"{key} must be a plain identifier (letters, digits, _), got {value!r}")
        return default
    return value


def dry_run_var(value: Any) -> bool:
    """The ``deltamerge_dry_run`` var: a boolean, or its YAML / command-line spellings.

    >>> dry_run_var(True), dry_run_var("false"), dry_run_var(None)
    (True, False, False)
    >>> dry_run_var("sure")
    Traceback (most recent call last):
    ...
    ValueError: var deltamerge_dry_run must be true or false, got 'sure'
    """
    if value is None or isinstance(value, bool):
        return bool(value)
    spelled = str(value).strip().lower()
    if spelled in ("true", "1", "yes"):
        return True
    if spelled in ("false", "0", "no", ""):
        return False
    raise ValueError(f"var deltamerge_dry_run must be true or false, got {value!r}")
