"""What the harness measures around a contestant: peak memory, the commit's files, table copies."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from dataclasses import dataclass
from types import TracebackType

import psutil

SAMPLE_SECONDS = 0.02


class PeakMemory:
    """The peak resident memory of a process and all its descendants while the block runs.

    Sampled every 20 ms from a thread of the harness (which is not part of the tree).
    """

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _sample(self) -> None:
        while True:
            self.peak = max(self.peak, tree_rss(self.root))
            if self._stop.wait(SAMPLE_SECONDS):
                return


def tree_rss(root: psutil.Process) -> int:
    """Resident bytes of ``root`` and its descendants (0 for processes that are gone)."""
    total = 0
    try:
        processes = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    for process in processes:
        with contextlib.suppress(psutil.Error):  # a child may exit between listing and reading
            total += process.memory_info().rss
    return total


def fresh_copy(table: str, destination: str) -> str:
    """A private copy of a Delta table: data files hard-linked (they are immutable), the log copied."""
    shutil.rmtree(destination, ignore_errors=True)

    def link_or_copy(source: str, target: str) -> None:
        if f"{os.sep}_delta_log{os.sep}" in source:
            shutil.copy2(source, target)
        else:
            os.link(source, target)

    shutil.copytree(table, destination, copy_function=link_or_copy)
    return destination


@dataclass(frozen=True)
class CommitFiles:
    """The data files one commit removed and added."""

    removed: list[str]
    removed_bytes: int
    added: int
    added_bytes: int


def commit_files(table: str, version: int | None) -> CommitFiles:
    """Files removed and added by ``version`` of ``table`` (nothing when no version was committed)."""
    if version is None:
        return CommitFiles([], 0, 0, 0)
    path = os.path.join(table, "_delta_log", f"{version:020d}.json")
    removed: list[str] = []
    removed_bytes = added = added_bytes = 0
    with open(path) as log:
        for line in log:
            action = json.loads(line)
            if "remove" in action:
                removed.append(action["remove"]["path"])
                removed_bytes += int(action["remove"].get("size") or 0)
            elif "add" in action:
                added += 1
                added_bytes += int(action["add"]["size"])
    return CommitFiles(removed, removed_bytes, added, added_bytes)


def latest_version(table: str) -> int:
    """The newest version in ``table``'s log."""
    names = [n for n in os.listdir(os.path.join(table, "_delta_log")) if n.endswith(".json")]
    return max(int(n.split(".")[0]) for n in names)
