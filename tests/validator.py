"""An independent check of a Delta table's log and files, used by the reliability tests.

Replays the raw log (not our engine's code) and compares with delta-rs at every version:
versions are contiguous from 0, every live file exists with the size its ``add``
recorded, no file is live and removed at once, and delta-rs lists the same live files.
"""

from __future__ import annotations

import json
import os
from urllib.parse import unquote

from deltalake import DeltaTable


def problems(path: str) -> list[str]:
    """Every inconsistency found in the table at ``path`` (empty: the table is sound)."""
    log = os.path.join(path, "_delta_log")
    versions = sorted(int(n[:20]) for n in os.listdir(log) if n.endswith(".json") and n[:20].isdigit())
    found: list[str] = []
    if versions != list(range(len(versions))):
        found.append(f"versions are not contiguous from 0: {versions}")
    live: dict[str, int] = {}
    for version in versions:
        with open(os.path.join(log, f"{version:020d}.json")) as handle:
            actions = [json.loads(line) for line in handle if line.strip()]
        removed = {a["remove"]["path"] for a in actions if "remove" in a}
        added = {a["add"]["path"]: int(a["add"]["size"]) for a in actions if "add" in a}
        for path_ in removed:
            live.pop(path_, None)
        live.update(added)
        both = set(added) & removed
        if both:
            found.append(f"v{version}: files both added and removed: {sorted(both)}")
        for relative, size in live.items():
            full = os.path.join(path, unquote(relative))
            if not os.path.exists(full):
                found.append(f"v{version}: live file missing: {relative}")
            elif os.path.getsize(full) != size:
                found.append(f"v{version}: {relative} has {os.path.getsize(full)} bytes, log says {size}")
        try:
            theirs = {unquote(p) for p in DeltaTable(path, version=version).file_uris()}
            ours = {os.path.join(path, unquote(p)) for p in live}
            if {os.path.normpath(p.removeprefix("file://")) for p in theirs} != {
                os.path.normpath(p) for p in ours
            }:
                found.append(f"v{version}: delta-rs lists other live files than the log replay")
        except Exception as exc:  # delta-rs cannot open this version
            found.append(f"v{version}: delta-rs cannot read it: {exc}")
    return sorted(set(found))
