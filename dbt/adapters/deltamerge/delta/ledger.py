"""The versions a thread committed since an error boundary opened a ledger, and the step after them.

An error after a commit must not read "the table is unchanged": the boundary (``errors.py``) opens
a ledger around a model's or a statement's work, every commit records its version in each ledger
open on its thread (the commit path runs on the caller's thread), and the steps that follow a
commit (binding the catalog, auto compaction, a second table's commit) name themselves, so the
error can say which version landed and what did not happen after it. A step that may follow commits
of the block's own preparation (a model's write after a REORG or a contract's constraints) names
itself too (``step_after_commits``): when it fails having committed nothing, the error says so, and
that a re-run does the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from dbt.adapters.deltamerge.delta.location import TableLocation


@dataclass(frozen=True)
class Committed:
    """A version this thread committed."""

    table: TableLocation
    version: int
    operation: str


@dataclass
class Ledger:
    """What a block committed, and the post-commit step an error left (None: none named)."""

    committed: list[Committed] = field(default_factory=list)
    failed_step: str | None = None
    # What a step after a commit could not do, the write standing (the Iceberg side left behind):
    # the error boundary fails the block with it once the block's other steps are done.
    notices: list[str] = field(default_factory=list)
    # The failed step followed commits preparing for it (a REORG making the table UniForm, a
    # contract's constraints) and committed nothing itself: a re-run does it.
    committed_nothing: bool = False


class _Open(threading.local):
    def __init__(self) -> None:
        self.ledgers: list[Ledger] = []


_OPEN = _Open()


@contextmanager
def ledger() -> Iterator[Ledger]:
    """A ledger of the commits made inside the block (nested ledgers each get them)."""
    opened = Ledger()
    _OPEN.ledgers.append(opened)
    try:
        yield opened
    finally:
        _OPEN.ledgers.remove(opened)


def record(table: TableLocation, version: int, operation: str) -> None:
    """Note that ``version`` of ``table`` was committed (by ``operation``)."""
    for opened in _OPEN.ledgers:
        opened.committed.append(Committed(table, version, operation))


def notice(text: str) -> None:
    """Tell every ledger open on this thread ``text`` (a warning, not an error: the write stands)."""
    for opened in _OPEN.ledgers:
        opened.notices.append(text)


@contextmanager
def after_commit(step: str) -> Iterator[None]:
    """Name the step the block runs after a commit (``step`` completes "then ... failed")."""
    try:
        yield
    except BaseException:
        for opened in _OPEN.ledgers:
            opened.failed_step = opened.failed_step or step
        raise


@contextmanager
def step_after_commits(step: str) -> Iterator[None]:
    """Name ``step`` (a model's write, its contract's constraints), which may follow commits
    preparing for it: if it fails having committed nothing, the error says those versions stay
    and the step did not happen (not "the data is written")."""
    before = [(opened, len(opened.committed)) for opened in _OPEN.ledgers]
    try:
        yield
    except BaseException:
        for opened, count in before:
            if opened.committed and len(opened.committed) == count and opened.failed_step is None:
                opened.failed_step, opened.committed_nothing = step, True
        raise


def describe(done: Ledger) -> str:
    """What a failure after a commit tells: the versions that landed and what did not happen.

    >>> step = "binding the new version in Spark's catalog"
    >>> done = Ledger([Committed(TableLocation.of("/w/t"), 5, "MERGE")], step)
    >>> print(describe(done))
    Delta version 5 of /w/t was committed (MERGE); then binding the new version in Spark's catalog
    failed. The data is written: do not re-run to redo it (a re-run writes again); the next read of
    the table binds it.
    >>> reorg = [Committed(TableLocation.of("/w/t"), 6, "REORG")]
    >>> print(describe(Ledger(reorg, "the model's write (merge)", committed_nothing=True)))
    Delta version 6 of /w/t was committed (REORG); then the model's write (merge) failed, committing
    nothing. What was committed stays; a re-run of the model does the rest.
    """
    versions = "; ".join(
        f"Delta version {c.version} of {c.table} was committed ({c.operation})" for c in done.committed
    )
    then = done.failed_step or "a step after the commit"
    if done.committed_nothing:
        return (
            f"{versions}; then {then} failed, committing nothing. What was committed stays; a re-run "
            "of the model does the rest."
        )
    return (
        f"{versions}; then {then} failed. The data is written: do not re-run to redo it (a re-run "
        "writes again); the next read of the table binds it."
    )
