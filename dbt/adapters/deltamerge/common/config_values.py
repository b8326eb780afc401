"""Reading single config values into plain Python values, collecting problems instead of raising.

Shared by every parser of model config and operation arguments (``model.spec``, ``merge.spec``,
``cdc.spec``, ``operations``) and by the typed list of every key (``model.keys``): each function
appends a sentence naming the key to ``problems`` and returns a neutral value, so that a parser
reports every problem in one error, ``SpecError``. ``None`` means absent (dbt's ``config(x=None)``);
any other value of the wrong kind is a problem, never silently the default.
"""

from __future__ import annotations

import difflib
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

    def __init__(self, model: str, problems: list[str], *, kind: str = "Model", what: str = "config") -> None:
        self.model = model
        self.problems = list(dict.fromkeys(problems))  # one sentence once, in order
        super().__init__(f"{kind} '{model}': invalid {what}:\n  - " + "\n  - ".join(self.problems))


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


def partition_columns(value: Any, key: str, problems: list[str]) -> tuple[str, ...]:
    """``partition_by``: a column name or a list of them, or dbt-bigquery's form of a partition per
    date value (``{'field': 'day', 'data_type': 'date'}``, as packages written for several warehouses
    pass it), which is Delta's partitioning by that column. BigQuery's other forms (a timestamp's
    day, integer ranges) have no Delta equivalent and are refused naming what to write instead.

    >>> partition_columns({"field": "day", "data_type": "date"}, "partition_by", [])
    ('day',)
    >>> problems = []; partition_columns({"field": "at", "data_type": "timestamp"}, "partition_by", problems)
    ()
    >>> problems  # doctest: +ELLIPSIS
    ["partition_by {'field': 'at', 'data_type': 'timestamp'} partitions by the timestamp's day ..."]
    """
    if not isinstance(value, Mapping):
        return names(value, key, problems)
    column, kind = value.get("field"), str(value.get("data_type") or "date").lower()
    granularity = str(value.get("granularity") or "day").lower()
    extra = set(value) - {"field", "data_type", "granularity", "copy_partitions"}
    if not isinstance(column, str) or not column.strip() or extra:
        problems.append(
            f"{key} must be a column name or a list of column names (or dbt-bigquery's "
            f"{{'field': <a date column>, 'data_type': 'date'}}), got {value!r}"
        )
    elif kind != "date" or granularity != "day":
        name = column.strip()
        problems.append(
            f"{key} {value!r} partitions by the {kind}'s {granularity} (BigQuery's form), which Delta "
            f"cannot: partition by a date column (`partition_by=['{name}']` over a date), or by a "
            f"generated column (`generated_columns={{'{name}_day': 'cast({name} as date)'}}`)"
        )
    else:
        return (column.strip(),)
    return ()


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
    """A plain identifier (an alias), ``default`` when absent.

    >>> problems = []; identifier({"source_alias": ""}, "source_alias", "s", problems), problems
    ('s', ["source_alias must be a plain identifier (letters, digits, _), got ''"])
    """
    value = config.get(key)
    if value is None:
        return default
    if not isinstance(value, str) or not _IDENTIFIER.fullmatch(value):
        problems.append(f"{key} must be a plain identifier (letters, digits, _), got {value!r}")
        return default
    return value


def choice(value: Any, key: str, allowed: Sequence[Any], problems: list[str]) -> Any:
    """One of ``allowed`` (text compared case-insensitively, and as the text of a number), None when
    absent or wrong.

    >>> choice("Delta", "file_format", ["delta", "parquet"], []), choice("2", "n", [1, 2], [])
    ('delta', 2)
    >>> problems = []
    >>> choice("", "file_format", ["delta", "parquet"], problems), problems
    (None, ["file_format must be one of ['delta', 'parquet'], got ''"])
    """
    if value is None:
        return None
    for option in allowed:
        same_text = isinstance(value, str) and value.strip().lower() == str(option).lower()
        if same_text or (type(value) is type(option) and value == option):
            return option
    problems.append(f"{key} must be one of {list(allowed)}, got {value!r}")
    return None


def text(value: Any, key: str, problems: list[str], *, what: str = "a non-empty text") -> str | None:
    """A non-empty string (a path, a column name), None when absent.

    >>> problems = []; text(["/data"], "location_root", problems, what="a folder path"), problems
    (None, ["location_root must be a folder path, got ['/data']"])
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{key} must be {what}, got {value!r}")
        return None
    return value.strip()


def number(value: Any, key: str, problems: list[str], *, what: str = "a number >= 0") -> float | None:
    """A number at least 0 (not a boolean), None when absent or wrong.

    >>> problems = []; number("168", "tombstone_retention_hours", problems), problems
    (None, ["tombstone_retention_hours must be a number >= 0, got '168'"])
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        problems.append(f"{key} must be {what}, got {value!r}")
        return None
    return float(value)


def mapping(value: Any, key: str, problems: list[str], *, what: str) -> Mapping[str, Any]:
    """A map with text keys (``{}`` when absent or wrong).

    >>> problems = []; mapping([("a", 1)], "tblproperties", problems, what="a map of property to value")
    {}
    >>> problems
    ["tblproperties must be a map of property to value, got [('a', 1)]"]
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k.strip() for k in value):
        problems.append(f"{key} must be {what}, got {value!r}")
        return {}
    return value


def clause_list(value: Any, key: str, problems: list[str]) -> list[Mapping[str, Any]]:
    """A list of clause maps (``{action: ..., condition: ...}``), ``[]`` when absent or wrong; entries that
    are not maps are problems and left out.

    >>> problems = []; clause_list("delete", "when_matched", problems), problems
    ([], ["`when_matched` must be a list of clauses, e.g. [{action: ..., condition: ...}], got 'delete'"])
    """
    if value is None:
        return []
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        example = "[{action: ..., condition: ...}]"
        problems.append(f"`{key}` must be a list of clauses, e.g. {example}, got {value!r}")
        return []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping):
            problems.append(f"{key}[{i}] must be a map like {{action: ..., condition: ...}}, got {entry!r}")
    return [entry for entry in value if isinstance(entry, Mapping)]


def operation_flag(value: Any, key: str, problems: list[str]) -> bool:
    """A boolean argument of an operation (``--args`` YAML): true / false, or the text of one.

    >>> problems = []; operation_flag("false", "dry_run", problems), operation_flag("no", "dry_run", problems)
    (False, False)
    >>> problems
    ["dry_run must be true or false, got 'no'"]
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    problems.append(f"{key} must be true or false, got {value!r}")
    return False


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
    if spelled in ("false", "0", "no"):
        return False
    raise ValueError(f"var deltamerge_dry_run must be true or false, got {value!r}")


def unknown_keys(data: dict[str, Any], known: set[str]) -> list[str]:
    """A problem for each key of a profile target no field reads, with the nearest known key.

    >>> unknown_keys({"warehous": "./w", "schema": "a"}, {"warehouse", "schema", "method"})
    ['unknown profile key `warehous`: did you mean `warehouse`?']
    """
    problems = []
    for key in sorted(k for k in data if k not in known):
        close = difflib.get_close_matches(key, sorted(known), n=1)
        problems.append(f"unknown profile key `{key}`" + (f": did you mean `{close[0]}`?" if close else ""))
    return problems
