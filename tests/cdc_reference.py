"""A pure reference of CDC apply's SCD type 1 semantics (CONTRACT §6), for the tests.

Events are dicts with ``id``, ``seq``, ``op`` ('U' upsert, 'D' delete, 'T' truncate) and
value columns. ``Scd1`` keeps what the contract says the adapter remembers: per key the
last applied sequence and whether it deleted the key, and the latest truncate's sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Event = dict[str, Any]


@dataclass
class Scd1:
    """The table (key -> stored values) and the state, run after run."""

    values: tuple[str, ...]
    ignore_null_updates: bool = False
    table: dict[Any, dict[str, Any]] = field(default_factory=dict)
    applied: dict[Any, int] = field(default_factory=dict)
    watermark: int | None = None

    def run(self, events: list[Event]) -> None:
        """Apply one run's events (in any order; identical events count once)."""
        distinct = {tuple(sorted(e.items())): e for e in events}.values()
        truncates = [e["seq"] for e in distinct if e["op"] == "T"]
        cutoff = max([*truncates, *([self.watermark] if self.watermark is not None else [])], default=None)
        by_key: dict[Any, list[Event]] = {}
        for event in distinct:
            if event["op"] != "T":
                by_key.setdefault(event["id"], []).append(event)
        if cutoff is not None and cutoff != self.watermark:
            for key in [k for k, s in self.applied.items() if s < cutoff and k in self.table]:
                del self.table[key]
        self.watermark = cutoff
        for key, key_events in by_key.items():
            live = [
                e
                for e in sorted(key_events, key=lambda e: e["seq"])
                if (key not in self.applied or e["seq"] > self.applied[key])
                and (cutoff is None or e["seq"] >= cutoff)
            ]
            for event in live:
                self._apply(key, event)
                self.applied[key] = event["seq"]

    def _apply(self, key: Any, event: Event) -> None:
        if event["op"] == "D":
            self.table.pop(key, None)
            return
        before = self.table.get(key)
        row = {c: event[c] for c in self.values}
        if self.ignore_null_updates and before is not None:
            row = {c: before[c] if row[c] is None else row[c] for c in self.values}
        self.table[key] = row

    def rows(self) -> list[dict[str, Any]]:
        """The table as sorted rows."""
        return sorted(({"id": k, **v} for k, v in self.table.items()), key=lambda r: r["id"])


def final_scd1(events: list[Event], values: tuple[str, ...]) -> list[dict[str, Any]]:
    """SCD 1 without ``ignore_null_updates`` over the whole stream at once: each key's latest event."""
    reference = Scd1(values)
    reference.run(events)
    return reference.rows()
