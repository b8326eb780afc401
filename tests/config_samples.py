"""Values of every kind a model config may give, and which of them each kind of key takes.

Shared by the every-key tests (``tests/unit/model/test_spec.py`` walks every key with every
wrong value; ``tests/functional/test_config_errors.py`` runs a dbt model per key). The keys
themselves come from the one list, ``model.keys.KEYS``; here only the kinds are named.
"""

from __future__ import annotations

from dbt.adapters.deltamerge.model.keys import KEYS

# Values of every kind a YAML or Jinja config gives; each key's kind accepts some of them.
SAMPLES: dict[str, object] = {
    "true": True,
    "integer": 7,
    "decimal": 2.5,
    "empty text": "",
    "text": "day",
    "list of text": ["day"],
    "list of integers": [1],
    "map": {"day": "x"},
    "list of maps": [{"action": "delete"}],
}
# The samples each kind of value takes (by the kind's name in model/keys.py, not by key).
ACCEPTED: dict[str, set[str]] = {
    "a column name or a list of column names": {"text", "list of text"},
    "a column name": {"text"},
    "a folder path": {"text"},
    "a non-empty SQL expression": {"text", "integer", "decimal"},
    "a SQL condition over the source row": {"text", "integer", "decimal"},
    "a SQL condition or a list of them": {"text", "list of text", "list of integers"},
    "true or false": {"true"},
    "a plain identifier": {"text"},
    "a list of clauses": {"list of maps"},
    "a non-empty map of column to SQL expression": {"map"},
    "a map of property to value": {"map"},
    "a map of column to SQL expression": {"map"},
    "a map of column to {start, step, generated}": {"map"},
    "a number of hours >= 0": {"integer", "decimal"},
}


def wrong_values(key: str) -> list[tuple[str, object]]:
    """``(sample name, value)`` of every sample ``key``'s kind does not take."""
    accepted = ACCEPTED.get(KEYS[key].name, set())  # `one of [...]` kinds take none of the samples
    return [(name, value) for name, value in SAMPLES.items() if name not in accepted]


def accepted_values(key: str) -> list[str]:
    """The sample names ``key``'s kind takes."""
    return sorted(ACCEPTED.get(KEYS[key].name, set()))
