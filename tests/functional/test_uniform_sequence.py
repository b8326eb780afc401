"""Seeded merge sequences into a UniForm table: after every commit, Iceberg readers return Delta's rows.

Each case writes a partitioned UniForm table of ``DELTAMERGE_ICEBERG_ROWS`` rows (default 2,000; the
long run: 1,000,000) and runs ``DELTAMERGE_ICEBERG_STEPS`` random merges into it (every clause
kind, drawn as the merge differential draws them; sources touching a few partitions or all),
then an OPTIMIZE. After each version pyiceberg (by the hint) and DuckDB's
``iceberg_scan`` must return exactly delta-rs's rows, and Iceberg time travel to each version's
snapshot its rows. ``DELTAMERGE_ICEBERG_CASES`` seeds (default 1).
"""

from __future__ import annotations

import os
import random

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder
from duckdb_extensions import import_extension
from pyiceberg.table import StaticTable

from dbt.adapters.deltamerge.delta import TableLocation, load_snapshot
from dbt.adapters.deltamerge.delta.commands import OptimizeOptions, optimize
from dbt.adapters.deltamerge.delta.data import WriteRequest, write_dataframe
from dbt.adapters.deltamerge.delta.uniform import iceberg_state
from dbt.adapters.deltamerge.merge import MergeSpec, merge_into
from tests.functional.test_merge_differential import MATCHED, NOT_MATCHED, NOT_MATCHED_BY_SOURCE

ROWS = int(os.environ.get("DELTAMERGE_ICEBERG_ROWS", "2000"))
STEPS = int(os.environ.get("DELTAMERGE_ICEBERG_STEPS", "3"))
CASES = int(os.environ.get("DELTAMERGE_ICEBERG_CASES", "1"))
UNIFORM = {
    "delta.enableIcebergCompatV2": "true",
    "delta.universalFormat.enabledFormats": "iceberg",
    "delta.columnMapping.mode": "name",
}


def delta_rows(path: str, columns: list[str], version: int | None = None) -> list[tuple]:
    got = (
        QueryBuilder()
        .register("t", DeltaTable(path, version=version))
        .execute(f"select {', '.join(columns)} from t")
    )
    return sorted((tuple(r.values()) for r in pa.table(got.read_all()).to_pylist()), key=repr)


def iceberg_io() -> dict[str, str]:
    """pyiceberg's options for the test S3 server (the AWS_* variables its fixture set), if any."""
    if "AWS_ENDPOINT_URL" not in os.environ:
        return {}
    return {
        "s3.endpoint": os.environ["AWS_ENDPOINT_URL"],
        "s3.access-key-id": os.environ["AWS_ACCESS_KEY_ID"],
        "s3.secret-access-key": os.environ["AWS_SECRET_ACCESS_KEY"],
        "s3.region": os.environ.get("AWS_REGION", "us-east-1"),
    }


def check_readers(path: str, columns: list[str]) -> None:
    state = iceberg_state(TableLocation.of(path))
    assert state is not None and state.delta_version == DeltaTable(path).version()
    expected = delta_rows(path, columns)
    scanned = StaticTable.from_metadata(state.location, iceberg_io()).scan().to_arrow().select(columns)
    assert sorted((tuple(r.values()) for r in scanned.to_pylist()), key=repr) == expected, state.delta_version
    for extension in ("httpfs", "avro", "iceberg"):  # the extensions' wheels: no download
        import_extension(extension)
    con = duckdb.connect()
    con.execute("LOAD httpfs; LOAD avro; LOAD iceberg;")
    if "://" in path:  # the tests' S3 server, as its AWS_* variables say
        endpoint = os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1]
        con.execute(
            f"CREATE SECRET (TYPE s3, KEY_ID '{os.environ['AWS_ACCESS_KEY_ID']}', "
            f"SECRET '{os.environ['AWS_SECRET_ACCESS_KEY']}', ENDPOINT '{endpoint}', "
            f"REGION '{os.environ.get('AWS_REGION', 'us-east-1')}', URL_STYLE 'path', USE_SSL false)"
        )
    by_duckdb = con.execute(f"select {', '.join(columns)} from iceberg_scan('{state.location}')").fetchall()
    assert sorted(by_duckdb, key=repr) == expected, state.delta_version


@pytest.mark.stores
@pytest.mark.parametrize("seed", range(CASES))
def test_iceberg_readers_follow_every_merge(spark, lake_root, seed):
    rng = random.Random(500_000 + seed)
    path = f"{lake_root}/t"
    location = TableLocation.of(path)
    base = spark.sql(
        f"select id as k, cast(id % 97 as bigint) as v, if(id % 2 = 0, 'U', 'D') as op, "
        f"cast(id % 5 as int) as part from range({ROWS})"
    ).repartition(8)
    request = WriteRequest(location, "create_or_replace", partition_by=("part",), properties=UNIFORM)
    write_dataframe(spark, base, request)
    columns = ["k", "v", "op", "part"]
    check_readers(path, columns)
    for step in range(STEPS):
        matched, not_matched, by_source = (
            rng.choice(MATCHED),
            rng.choice(NOT_MATCHED),
            rng.choice(NOT_MATCHED_BY_SOURCE),
        )
        if not (matched or not_matched or by_source):
            not_matched = NOT_MATCHED[1]
        parts = rng.choice(["0", "1, 3", "0, 1, 2, 3, 4"])
        size = max(1, ROWS // rng.choice([10, 100, 1000]))
        source = spark.sql(
            f"select k, cast((k * {step + 7}) % 101 as bigint) as v, if(k % 3 = 0, 'D', 'U') as op, part "
            f"from (select cast(id * {rng.choice([1, 2, 3])} as bigint) as k, cast(id % 5 as int) as part "
            f"from range({size * 2})) where part in ({parts}) limit {size}"
        )
        on = "t.k = s.k AND t.part = s.part"
        config = {
            "merge_condition": on,
            "source_alias": "s",
            "target_alias": "t",
            "when_matched": [c for c, _ in matched],
            "when_not_matched": [c for c, _ in not_matched],
            "when_not_matched_by_source": [
                {
                    **c,
                    "condition": f"t.part IN ({parts})"
                    + (f" AND ({c['condition']})" if "condition" in c else ""),
                }
                for c, _ in by_source
            ],
        }
        snapshot = load_snapshot(location)
        assert snapshot is not None
        merge_into(spark, source, snapshot, MergeSpec.from_config(f"seq{seed}_{step}", config))
        check_readers(path, columns)
    snapshot = load_snapshot(location)
    assert snapshot is not None
    optimize(
        spark, snapshot, snapshot.files, OptimizeOptions.for_table(dict(snapshot.metadata.configuration))
    )
    check_readers(path, columns)
    # Iceberg time travel: each version's snapshot holds that version's rows.
    state = iceberg_state(location)
    assert state is not None
    by_version = {int(s.summary["delta-version"]): s.snapshot_id for s in state.metadata.snapshots}
    table = StaticTable.from_metadata(state.location, iceberg_io())
    for version in sorted(by_version):
        scanned = table.scan(snapshot_id=by_version[version]).to_arrow().select(columns)
        assert sorted((tuple(r.values()) for r in scanned.to_pylist()), key=repr) == delta_rows(
            path, columns, version
        )
