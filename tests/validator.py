"""An independent check of a Delta table's log and files, used by the reliability tests.

Replays the raw log (not our engine's code) and compares with delta-rs at every version:
versions are contiguous from 0, every live file exists with the size its ``add``
recorded, no file is live and removed at once, and delta-rs lists the same live files.
The writer requirements of the table's features hold at every version (``_feature_problems``):
a remove repeats the deletion vector and row id fields of the add it removes; with row tracking
every add has row ids, fresh ones above the high-water mark of the versions before, unique in
the version and at most the mark; with in-commit timestamps ``commitInfo`` comes first, its
timestamp above the previous commit's. Every deletion vector is read back (its file, offset,
size, CRC-32 and magic, decoded with pyroaring, not our engine): its cardinality is the
descriptor's, every index is below the file's ``numRecords``, and a file given a new vector keeps
every row the previous one deleted (deleted rows never come back).
"""

from __future__ import annotations

import itertools
import json
import uuid
import zlib
from urllib.parse import unquote

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder
from pyroaring import BitMap64

from tests import files


def problems(path: str) -> list[str]:
    """Every inconsistency found in the table at ``path`` (empty: the table is sound)."""
    log = files.join(path, "_delta_log")
    versions = sorted(
        int(n[:20])
        for n in files.list_names(log)
        if len(n) == 25 and n.endswith(".json") and n[:20].isdigit()
    )
    found: list[str] = []
    if versions != list(range(len(versions))):
        found.append(f"versions are not contiguous from 0: {versions}")
    live: dict[str, int] = {}
    state = _FeatureState(path)
    for version in versions:
        text = files.read_text(files.join(log, f"{version:020d}.json"))
        actions = [json.loads(line) for line in text.splitlines() if line.strip()]
        found.extend(state.problems(version, actions))
        removed = {a["remove"]["path"] for a in actions if "remove" in a}
        added = {a["add"]["path"]: int(a["add"]["size"]) for a in actions if "add" in a}
        for path_ in removed:
            live.pop(path_, None)
        live.update(added)
        # A path removed and added with two deletion vectors is two logical files: no clash.
        vector = {
            (k, a[k]["path"]): a[k].get("deletionVector")
            for a in actions
            for k in ("add", "remove")
            if k in a
        }
        both = {p for p in set(added) & removed if vector[("add", p)] == vector[("remove", p)]}
        if both:
            found.append(f"v{version}: files both added and removed: {sorted(both)}")
        for relative, size in live.items():
            actual = files.size(files.join(path, unquote(relative)))
            if actual is None:
                found.append(f"v{version}: live file missing: {relative}")
            elif actual != size:
                found.append(f"v{version}: {relative} has {actual} bytes, log says {size}")
        try:
            theirs = {files.same_place(unquote(p)) for p in DeltaTable(path, version=version).file_uris()}
            ours = {files.same_place(files.join(path, unquote(p))) for p in live}
            if theirs != ours:
                found.append(f"v{version}: delta-rs lists other live files than the log replay")
        except Exception as exc:  # delta-rs cannot open this version
            found.append(f"v{version}: delta-rs cannot read it: {exc}")
    if versions:
        found.extend(_identity_problems(path))
    return sorted(set(found))


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"


def _z85(text: str) -> bytes:
    out = b""
    for i in range(0, len(text), 5):
        value = 0
        for char in text[i : i + 5]:
            value = value * 85 + _Z85.index(char)
        out += value.to_bytes(4, "big")
    return out


def read_vector(table: str, descriptor: dict) -> BitMap64:
    """The rows a deletion vector deletes, read as PROTOCOL.md describes (portable format only)."""
    if descriptor["storageType"] == "i":
        data = _z85(descriptor["pathOrInlineDv"])
    else:
        where = descriptor["pathOrInlineDv"]
        prefix, name = where[:-20], f"deletion_vector_{uuid.UUID(bytes=_z85(where[-20:]))}.bin"
        file = (
            files.join(table, f"{prefix}/{name}" if prefix else name)
            if descriptor["storageType"] == "u"
            else where
        )
        start = int(descriptor.get("offset") or 0)
        content = files.read_bytes(file)
        size = int.from_bytes(content[start : start + 4], "big")
        data = content[start + 4 : start + 4 + size]
        checksum = int.from_bytes(content[start + 4 + size : start + 8 + size], "big")
        if size != int(descriptor["sizeInBytes"]) or zlib.crc32(data) != checksum:
            raise ValueError("size or checksum mismatch")
    if int.from_bytes(data[:4], "little") != 1681511377:
        raise ValueError("not the portable RoaringBitmapArray format")
    return BitMap64.deserialize(data[4:])


def _identity_problems(path: str) -> list[str]:
    """Identity values of the live rows (GENERATED ALWAYS columns): unique, and none past the
    column's high-water mark in the step's direction (the mark a writer recorded covers them)."""
    try:
        table = DeltaTable(path)
    except Exception:  # a log delta-rs cannot open: the checks above name why
        return []
    found = []
    for field in json.loads(table.schema().to_json())["fields"]:
        metadata = field.get("metadata") or {}
        if "delta.identity.step" not in metadata or metadata.get("delta.identity.allowExplicitInsert"):
            continue
        name, step = field["name"], int(metadata["delta.identity.step"])
        try:
            query = QueryBuilder().register("t", table).execute(f'select "{name}" as v from t')
            values = [r["v"] for r in pa.table(query.read_all()).to_pylist() if r["v"] is not None]
        except Exception:  # a live file missing: named above
            continue
        if len(values) != len(set(values)):
            found.append(f"identity column {name}: duplicate values")
        mark = metadata.get("delta.identity.highWaterMark")
        if values and (mark is None or (max(values) > mark if step > 0 else min(values) < mark)):
            found.append(f"identity column {name}: values beyond the high-water mark {mark}")
    return found


class _FeatureState:
    """The replayed protocol, properties, live adds and row id high-water mark, version by version."""

    def __init__(self, table: str) -> None:
        self.table = table
        self.vectors: dict[str, BitMap64] = {}
        self.readded: dict[str, dict] = {}
        self.writer_features: set[str] = set()
        self.configuration: dict[str, str] = {}
        self.adds: dict[str, dict] = {}
        self.mark = -1
        self.in_commit: int | None = None

    def problems(self, version: int, actions: list[dict]) -> list[str]:
        found: list[str] = []
        for action in actions:
            if "protocol" in action:
                protocol = action["protocol"]
                self.writer_features = set(protocol.get("writerFeatures") or [])
                if protocol["minReaderVersion"] == 3 and "readerFeatures" not in protocol:
                    found.append(f"v{version}: reader version 3 without readerFeatures")
                if protocol["minWriterVersion"] == 7 and "writerFeatures" not in protocol:
                    found.append(f"v{version}: writer version 7 without writerFeatures")
            if "metaData" in action:
                self.configuration = dict(action["metaData"].get("configuration") or {})
        found += self._in_commit_timestamps(version, actions)
        adds = {a["add"]["path"]: a["add"] for a in actions if "add" in a}
        for path_, add in adds.items():
            if add.get("deletionVector"):
                found += self._vector(version, path_, add)
        self.readded = {}
        for remove in (a["remove"] for a in actions if "remove" in a):
            before = self.adds.pop(remove["path"], None)
            if before is not None and remove["path"] in adds and adds[remove["path"]].get("deletionVector"):
                self.readded[remove["path"]] = before  # the file again, with a new deletion vector
            for key in ("deletionVector", "baseRowId", "defaultRowCommitVersion"):
                if before is not None and before.get(key) != remove.get(key):
                    found.append(f"v{version}: remove of {remove['path']} lacks its add's {key}")
        if (
            "rowTracking" in self.writer_features
            and self.configuration.get("delta.rowTrackingSuspended") != "true"
        ):
            found += self._row_ids(version, actions, adds)
        self.adds.update(adds)
        return found

    def _vector(self, version: int, path_: str, add: dict) -> list[str]:
        descriptor = add["deletionVector"]
        stats = json.loads(add.get("stats") or "{}")
        if "numRecords" not in stats:
            return [f"v{version}: {path_} has a deletion vector but no numRecords"]
        try:
            rows = read_vector(self.table, descriptor)
        except Exception as exc:
            return [f"v{version}: deletion vector of {path_} unreadable: {exc}"]
        found = []
        if len(rows) != int(descriptor["cardinality"]):
            found.append(
                f"v{version}: {path_}'s vector holds {len(rows)} rows, not {descriptor['cardinality']}"
            )
        if rows and rows.max() >= int(stats["numRecords"]):
            found.append(f"v{version}: {path_}'s vector deletes row {rows.max()} of {stats['numRecords']}")
        before = self.vectors.get(path_)
        if before is not None and not before <= rows:
            found.append(f"v{version}: {path_}'s new vector brings deleted rows back")
        self.vectors[path_] = rows
        return found

    def _in_commit_timestamps(self, version: int, actions: list[dict]) -> list[str]:
        if self.configuration.get("delta.enableInCommitTimestamps") != "true":
            return []
        stamp = actions[0].get("commitInfo", {}).get("inCommitTimestamp") if actions else None
        if stamp is None:
            return [f"v{version}: in-commit timestamps on, but commitInfo is not first or has none"]
        previous, self.in_commit = self.in_commit, int(stamp)
        return (
            [] if previous is None or stamp > previous else [f"v{version}: inCommitTimestamp not increasing"]
        )

    def _row_ids(self, version: int, actions: list[dict], adds: dict[str, dict]) -> list[str]:
        found = []
        marks = [
            json.loads(a["domainMetadata"]["configuration"])["rowIdHighWaterMark"]
            for a in actions
            if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.rowTracking"
        ]
        mark = max(marks, default=self.mark)
        for path, add in adds.items():
            if add.get("baseRowId") is None or add.get("defaultRowCommitVersion") is None:
                found.append(f"v{version}: add of {path} has no row ids")
            elif path in self.readded:
                before = self.readded[path]
                if (add["baseRowId"], add["defaultRowCommitVersion"]) != (
                    before.get("baseRowId"),
                    before.get("defaultRowCommitVersion"),
                ):
                    found.append(f"v{version}: {path} given a deletion vector lost its row ids")
            elif path not in self.adds and (
                add["baseRowId"] <= self.mark or add["defaultRowCommitVersion"] != version
            ):
                found.append(f"v{version}: fresh row ids of {path} not above the mark or not of this version")
        self.mark = mark
        ranges = sorted(
            (a["baseRowId"], a["baseRowId"] + json.loads(a.get("stats") or "{}").get("numRecords", 0))
            for a in {**self.adds, **adds}.values()
            if a.get("baseRowId") is not None
        )
        if any(a[1] > b[0] for a, b in itertools.pairwise(ranges)):
            found.append(f"v{version}: two live files share row ids")
        if ranges and ranges[-1][1] - 1 > mark:
            found.append(f"v{version}: row ids above the high-water mark {mark}")
        return found
