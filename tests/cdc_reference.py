"""A pure reference of CDC apply's SCD type 1 semantics (docs/configuration.md, "CDC apply"), for the tests.

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


@dataclass
class Scd2:
    """SCD type 2 by the contract: each run replays the stored history and the run's events.

    ``table`` holds versions ``{'id', **values, '__START_AT', '__END_AT'}``. A stored version
    stands for the upsert that opened it; an ``__END_AT`` no version of the key starts at stands
    for a delete. A run's event at a sequence the stored history already has is already applied.
    """

    values: tuple[str, ...]
    tracked: tuple[str, ...]
    ignore_null_updates: bool = False
    table: list[dict[str, Any]] = field(default_factory=list)

    def run(self, events: list[Event]) -> None:
        """Apply one run's events (in any order; identical events count once)."""
        distinct = list({tuple(sorted(e.items())): e for e in events}.values())
        keys = {e["id"] for e in distinct}
        kept = [v for v in self.table if v["id"] not in keys]
        for key in keys:
            history = [v for v in self.table if v["id"] == key]
            replayed = self._history_events(history)
            known = {e["seq"] for e in replayed}
            replayed += [e for e in distinct if e["id"] == key and e["seq"] not in known]
            kept += self._replay(key, sorted(replayed, key=lambda e: e["seq"]))
        self.table = kept

    def _history_events(self, history: list[dict[str, Any]]) -> list[Event]:
        starts = {v["__START_AT"] for v in history}
        events = [{"op": "U", "seq": v["__START_AT"], **{c: v[c] for c in self.values}} for v in history]
        events += [
            {"op": "D", "seq": v["__END_AT"]}
            for v in history
            if v["__END_AT"] is not None and v["__END_AT"] not in starts
        ]
        return events

    def _replay(self, key: Any, events: list[Event]) -> list[dict[str, Any]]:
        versions: list[dict[str, Any]] = []
        current: dict[str, Any] | None = None
        for event in events:
            if event["op"] == "D":
                if current is not None:
                    current["__END_AT"] = event["seq"]
                current = None
                continue
            values = {c: event.get(c) for c in self.values}
            if self.ignore_null_updates and current is not None:
                values = {c: current[c] if values[c] is None else values[c] for c in self.values}
            if current is not None and all(current[c] == values[c] for c in self.tracked):
                current.update(values)  # untracked columns change in place
                continue
            if current is not None:
                current["__END_AT"] = event["seq"]
            current = {"id": key, **values, "__START_AT": event["seq"], "__END_AT": None}
            versions.append(current)
        return versions

    def rows(self) -> list[dict[str, Any]]:
        """The versions as sorted rows."""
        return sorted(self.table, key=lambda r: (r["id"], r["__START_AT"]))
