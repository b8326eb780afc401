"""The Delta ``txn`` of each write a dbt invocation makes: its idempotent-retry identity.

A write's commit carries ``txn(appId, version)``: one appId per dbt invocation and model, the
write's number in the invocation as the version. A retried commit of the same write is recognised
by exactly this pair (``delta.committed_version_of``); another invocation of the same model is
another writer (Delta's conflict rules decide); microbatch writes of one invocation count up.
Tables keep these entries for ``delta.setTransactionRetentionDuration``
(``delta/log/definition.with_transaction_retention``).

Each dbt invocation holds one ``WriteNumbers`` (``invocation.Invocation.writes``); counts are
also keyed by the invocation id, so numbers never carry over from one invocation to another.
"""

from __future__ import annotations

import threading


class WriteNumbers:
    """The next ``txn`` of each model's writes in one invocation (thread-safe: models run in threads).

    >>> numbers = WriteNumbers()
    >>> numbers.next("i1", "s", "m"), numbers.next("i1", "s", "m"), numbers.next("i2", "s", "m")
    (('dbt-deltamerge:i1:s.m', 0), ('dbt-deltamerge:i1:s.m', 1), ('dbt-deltamerge:i2:s.m', 0))
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._invocation: str | None = None
        self._counts: dict[str, int] = {}

    def next(self, invocation: str, schema: str, identifier: str) -> tuple[str, int]:
        """The ``txn`` of the next write of ``schema.identifier`` in ``invocation``."""
        app_id = f"dbt-deltamerge:{invocation}:{schema}.{identifier}"
        with self._lock:
            if self._invocation != invocation:
                self._invocation, self._counts = invocation, {}
            count = self._counts[app_id] = self._counts.get(app_id, -1) + 1
        return app_id, count
