"""A model on a second S3 account: another endpoint, other credentials, named per bucket in the profile.

Two real S3 servers (S3Proxy), each serving one identity: the warehouse's bucket on the first (its
credentials in the environment, as a user sets them), a second bucket on the other, reached with
the profile's ``bucket_storage_options`` (its keys from ``DBT_ENV_SECRET_`` variables, which dbt
keeps out of its logs). The dbt process commits to both through obstore, Spark writes and reads
both through S3A's per-bucket settings, and a model joins tables of the two accounts. Run with
``DELTAMERGE_TEST_STORE=s3``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

from dbt.adapters.deltamerge.delta import TableLocation
from tests.s3server import start_s3_server

pytestmark = pytest.mark.s3

DBT = str(Path(sys.executable).with_name("dbt"))
OTHER_KEY, OTHER_SECRET = "other-account", "other-account-secret"


@pytest.fixture(scope="module")
def other_server(tmp_path_factory: pytest.TempPathFactory):
    server = start_s3_server(str(tmp_path_factory.mktemp("s3-other")), OTHER_KEY, OTHER_SECRET)
    yield server
    server.stop()


def _profile(other: Any, bucket: str) -> str:
    return f"""s3:
  target: dev
  outputs:
    dev:
      type: deltamerge
      method: session
      schema: accounts
      warehouse: ./warehouse
      threads: 2
      storage_options: {{}}
      bucket_storage_options:
        "s3://{bucket}":
          AWS_ENDPOINT_URL: "{other.endpoint}"
          AWS_ACCESS_KEY_ID: "{{{{ env_var('DBT_ENV_SECRET_OTHER_KEY') }}}}"
          AWS_SECRET_ACCESS_KEY: "{{{{ env_var('DBT_ENV_SECRET_OTHER_SECRET') }}}}"
      server_side_parameters: {{spark.master: "local[2]", spark.sql.shuffle.partitions: "2"}}
"""


MERGE = (
    "{{{{ config(materialized='incremental', incremental_strategy='delta_merge', unique_key='id', "
    "location_root='{root}') }}}}\n"
    "select cast(id as bigint) as id, '{{{{ var('status') }}}}' as status "
    "from range({{{{ var('start') }}}}, {{{{ var('start') + 3 }}}})"
)


def _project(tmp_path: Path, main: str, other: str, other_server: Any) -> Path:
    project = tmp_path / "accounts"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: accounts\nversion: '1.0'\nprofile: s3\nconfig-version: 2\n"
    )
    (project / "profiles.yml").write_text(_profile(other_server, other))
    (project / "models" / "orders.sql").write_text(MERGE.format(root=f"s3a://{main}/analytics"))
    (project / "models" / "other_orders.sql").write_text(MERGE.format(root=f"s3://{other}/analytics"))
    (project / "models" / "both.sql").write_text(
        f"{{{{ config(materialized='table', location_root='s3a://{main}/analytics') }}}}\n"
        "select o.id, o.status as ours, t.status as theirs from {{ ref('orders') }} o "
        "full join {{ ref('other_orders') }} t on o.id = t.id"
    )
    return project


def _dbt(project: Path, batch: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DBT_ENV_SECRET_OTHER_KEY": OTHER_KEY, "DBT_ENV_SECRET_OTHER_SECRET": OTHER_SECRET}
    command = [DBT, "run", "--profiles-dir", ".", "--vars", json.dumps(batch)]
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)


def _rows(path: str, options: dict[str, str]) -> tuple[DeltaTable, list[dict[str, Any]]]:
    table = DeltaTable(path, storage_options=options)
    query = QueryBuilder().register("t", table).execute("select * from t order by id")
    return table, pa.table(query.read_all()).to_pylist()


def test_a_model_on_a_second_account_reached_with_its_bucket_options(s3_server, other_server, tmp_path):
    main = s3_server.make_bucket(f"main-{uuid.uuid4().hex[:8]}")
    other = other_server.make_bucket(f"other-{uuid.uuid4().hex[:8]}")
    project = _project(tmp_path, main, other, other_server)
    for batch in ({"start": 0, "status": "one"}, {"start": 2, "status": "two"}):
        done = _dbt(project, batch)
        assert done.returncode == 0, done.stdout[-4000:]
    assert OTHER_SECRET not in done.stdout and s3_server.secret_key not in done.stdout

    other_options = {**other_server.options(), "AWS_ALLOW_HTTP": "true"}
    table, rows = _rows(f"s3://{other}/analytics/other_orders", other_options)
    assert [h["operation"] for h in table.history()] == ["MERGE", "CREATE TABLE AS SELECT"]
    expected = [{"id": 0, "status": "one"}, {"id": 1, "status": "one"}] + [
        {"id": i, "status": "two"} for i in (2, 3, 4)
    ]
    assert rows == expected
    main_path = f"s3a://{main}/analytics"
    assert (
        _rows(f"{main_path}/orders", TableLocation.of(f"{main_path}/orders").deltalake_options())[1]
        == expected
    )
    both = _rows(f"{main_path}/both", TableLocation.of(f"{main_path}/both").deltalake_options())[1]
    assert [(r["id"], r["ours"], r["theirs"]) for r in both] == [
        (r["id"], r["status"], r["status"]) for r in rows
    ]

    # Each account's server holds its own tables: the second bucket's on the second server only.
    assert (other_server.root / other / "analytics" / "other_orders" / "_delta_log").is_dir()
    assert not (s3_server.root / other).exists()
    assert not (other_server.root / main).exists()
    # The first account's keys do not reach the second: the options were needed.
    with pytest.raises(Exception, match=r"(?i)403|forbidden|denied|signature|access"):
        DeltaTable(
            f"s3://{other}/analytics/other_orders",
            storage_options={
                **other_options,
                **{"AWS_ACCESS_KEY_ID": s3_server.access_key, "AWS_SECRET_ACCESS_KEY": s3_server.secret_key},
            },
        )
