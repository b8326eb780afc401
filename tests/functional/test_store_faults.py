"""An S3 server that throttles, fails, answers late or loses an answer: commits stay exactly-once.

The engine's store client (obstore) reaches the S3 server through the tests' fault proxy
(``tests/s3faults.py``, a process of its own forwarding to S3Proxy); Spark writes the data files to
the server directly. Each rule makes the proxy answer chosen requests with S3's own errors.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from deltalake import DeltaTable

from dbt.adapters.deltamerge.delta import StorageError, TableLocation
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from tests.backend import SLOW
from tests.s3faults import FaultProxy
from tests.validator import problems

pytestmark = pytest.mark.s3

COMMIT = r"/_delta_log/0+\d+\.json$"


@pytest.fixture(scope="module")
def proxy(s3_server: Any) -> Iterator[FaultProxy]:
    started = FaultProxy(s3_server.endpoint)
    yield started
    started.stop()


@pytest.fixture
def through_proxy(proxy: FaultProxy, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The engine's stores pointed at the proxy for one test (Spark's S3A is not): the locations
    the test makes reach object stores as the environment says (``Stores()``)."""
    proxy.reset()
    monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
    yield proxy
    proxy.reset()


def _table(s3_server: Any) -> str:
    return f"s3a://{s3_server.make_bucket('faults')}/{uuid.uuid4().hex[:12]}"


def _append(spark: Any, path: str, start: int, mode: str = "append") -> int | None:
    frame = spark.range(start, start + 5).selectExpr("id", "cast(id as string) as s")
    return write_dataframe(spark, frame, WriteRequest(TableLocation.of(path), mode)).version


def _ids(path: str) -> list[int]:
    table = DeltaTable(path, storage_options=TableLocation.of(path).deltalake_options())
    return sorted(table.to_pyarrow_table().column("id").to_pylist())


def _commit_puts(proxy: FaultProxy, version: int) -> int:
    name = f"/_delta_log/{version:020d}.json"
    return sum(1 for kind, path, _ in proxy.requests() if kind == "PUT" and path.endswith(name))


def test_throttled_and_failing_commits_are_retried_and_land_once(spark, s3_server, through_proxy):
    path = _table(s3_server)
    assert _append(spark, path, 0, "create_or_replace") == 0
    through_proxy.reset()
    through_proxy.rules({"method": "PUT", "path": COMMIT, "status": 503, "times": 2})
    assert _append(spark, path, 10) == 1
    assert _commit_puts(through_proxy, 1) == 3  # two SlowDown answers, then the create
    through_proxy.rules({"method": "PUT", "path": COMMIT, "status": 500, "times": 1})
    assert _append(spark, path, 20) == 2
    assert _ids(path) == [*range(5), *range(10, 15), *range(20, 25)]
    assert problems(path) == []


def test_a_commit_whose_answer_was_lost_is_recognised_as_its_own_not_committed_again(
    spark, s3_server, through_proxy
):
    """The create lands, the client hears a 500 and retries; the retry finds the object there
    (412). That version is this write's own (its ``txnId``): not a lost race, no second commit."""
    path = _table(s3_server)
    assert _append(spark, path, 0, "create_or_replace") == 0
    through_proxy.rules({"method": "PUT", "path": COMMIT, "status": 500, "times": 1, "after_forward": True})
    assert _append(spark, path, 10) == 1
    assert _commit_puts(through_proxy, 1) == 2 and _commit_puts(through_proxy, 2) == 0
    table = DeltaTable(path, storage_options=TableLocation.of(path).deltalake_options())
    assert table.version() == 1
    assert _ids(path) == [*range(5), *range(10, 15)]
    assert problems(path) == []


def test_access_denied_on_the_commit_fails_at_once_naming_the_bucket_and_commits_nothing(
    spark, s3_server, through_proxy
):
    path = _table(s3_server)
    assert _append(spark, path, 0, "create_or_replace") == 0
    through_proxy.rules({"method": "PUT", "path": COMMIT, "status": 403, "times": 100})
    with pytest.raises(StorageError) as caught:
        _append(spark, path, 10)
    message = str(caught.value)
    bucket = path.split("/")[2]
    assert f"bucket {bucket!r}" in message and "cannot write" in message, message
    assert "000000000001.json" in message, message
    assert _commit_puts(through_proxy, 1) == 1  # a refusal is not retried
    assert DeltaTable(path, storage_options=TableLocation.of(path).deltalake_options()).version() == 0
    assert _ids(path) == list(range(5))


@pytest.mark.skipif(not SLOW, reason="the slow tier: DELTAMERGE_SLOW=1 runs it (obstore's 30 s timeout)")
def test_a_log_read_answered_late_times_out_and_is_retried(spark, s3_server, through_proxy):
    """A GET of the log that the endpoint answers after obstore's 30 s request timeout: the client
    gives up on it and asks again; the write lands."""
    path = _table(s3_server)
    assert _append(spark, path, 0, "create_or_replace") == 0
    through_proxy.reset()
    through_proxy.rules({"method": "GET", "path": r"/_delta_log/", "delay": 40, "times": 1})
    assert _append(spark, path, 10) == 1
    gets = [p for kind, p, _ in through_proxy.requests() if kind in ("GET", "LIST") and "_delta_log" in p]
    assert len(gets) >= 2
    assert _ids(path) == [*range(5), *range(10, 15)]


def test_every_request_is_counted_by_kind(spark, s3_server, through_proxy):
    """The proxy's counts are what BENCHMARKS.md's request figures come from: one append's log
    requests through our store client."""
    path = _table(s3_server)
    assert _append(spark, path, 0, "create_or_replace") == 0
    through_proxy.reset()
    assert _append(spark, path, 10) == 1
    kinds = [kind for kind, p, _ in through_proxy.requests()]
    assert kinds.count("PUT") == 1  # the commit: data files went through Spark, not this client
    assert all(re.match(r"/faults(/|$)", p) for _, p, _ in through_proxy.requests())


def _log_and_data(proxy: FaultProxy) -> tuple[dict[str, int], dict[str, int]]:
    log: dict[str, int] = {}
    data: dict[str, int] = {}
    for kind, path, query in proxy.requests():
        side = log if "_delta_log" in path or "_delta_log" in query else data
        side[kind] = side.get(kind, 0) + 1
    return log, data


def test_an_append_makes_no_more_log_requests_than_delta_rs_and_reads_each_footer_once(
    spark, s3_server, through_proxy
):
    from deltalake import write_deltalake

    ours, theirs = _table(s3_server), _table(s3_server)
    frame = spark.range(0, 5, numPartitions=2).selectExpr("id", "cast(id as string) as s")
    write_dataframe(spark, frame, WriteRequest(TableLocation.of(ours), "create_or_replace"))
    arrow = frame.toArrow()
    write_deltalake(theirs, arrow, storage_options=TableLocation.of(theirs).deltalake_options())

    through_proxy.reset()
    assert write_dataframe(spark, frame, WriteRequest(TableLocation.of(ours), "append")).version == 1
    our_log, our_data = _log_and_data(through_proxy)
    through_proxy.reset()
    write_deltalake(
        theirs, arrow, mode="append", storage_options=TableLocation.of(theirs).deltalake_options()
    )
    their_log, _ = _log_and_data(through_proxy)

    assert our_log.get("PUT") == 1, our_log
    for kind in ("GET", "LIST", "HEAD"):
        assert our_log.get(kind, 0) <= their_log.get(kind, 0), (kind, our_log, their_log)
    # Spark writes the data (directly, not through the proxy); the engine lists its folder once and
    # reads each of the two files' footers with one GET (no size probes).
    assert our_data == {"LIST": 1, "GET": 2}, our_data
    assert _ids(ours) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
