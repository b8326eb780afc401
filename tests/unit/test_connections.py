"""The profile: every field this adapter documents, given a value of a wrong kind, is refused naming it."""

from __future__ import annotations

import os

import pytest
from dbt_common.dataclass_schema import ValidationError
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.connections import DeltaMergeCredentials
from dbt.adapters.deltamerge.spark import committer

BASE = {"method": "session", "schema": "analytics", "warehouse": "/tmp/w"}


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("method", "sesion", "`method`"),
        ("method", 3, "`method`"),
        ("warehouse", 5, "`warehouse`"),
        ("warehouse", ["/w"], "`warehouse`"),
        ("schema", {"a": 1}, "`schema`"),
        ("host", 15002, "`host`"),
        ("server_side_parameters", "spark.master=local", "`server_side_parameters`"),
        ("server_side_parameters", {"spark.sql.shuffle.partitions": 4}, "`server_side_parameters.spark.sql"),
    ],
)
def test_a_profile_field_of_a_wrong_kind_is_named(field, value, named):
    with pytest.raises(ValidationError) as caught:
        DeltaMergeCredentials.validate({**BASE, field: value})
    assert caught.value.message.startswith(named), caught.value.message


def test_an_empty_warehouse_is_not_the_current_folder():
    with pytest.raises(DbtRuntimeError, match="`warehouse` must be a folder path, got ' '"):
        DeltaMergeCredentials.from_dict({**BASE, "warehouse": " "})


def test_a_warehouse_on_an_object_store_keeps_its_uri_and_a_local_home(monkeypatch, tmp_path):
    from dbt.adapters.deltamerge.connections import store_settings

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    creds = DeltaMergeCredentials.from_dict({**BASE, "warehouse": "s3://lake/dbt/"})
    assert creds.warehouse == "s3://lake/dbt" and creds.unique_field == "s3://lake/dbt"
    assert creds.home.startswith(f"{tmp_path}/dbt-deltamerge/warehouses/s3-lake-")
    # Twice the same home: the metastore of this warehouse is found again by the next command.
    assert DeltaMergeCredentials.from_dict({**BASE, "warehouse": "s3://lake/dbt"}).home == creds.home
    jars = tmp_path / "cache" / "jars"
    jars.mkdir(parents=True)
    (jars / committer.JAR).write_bytes(b"cached")  # found in the cache: nothing fetched
    monkeypatch.setenv("DELTAMERGE_CACHE", str(tmp_path / "cache"))
    settings = store_settings(creds)  # no storage_options: the warehouse alone asks for S3A
    assert settings["spark.sql.warehouse.dir"] == "s3://lake/dbt"
    assert settings["spark.jars.packages"].startswith("org.apache.hadoop:hadoop-aws:")
    assert settings["spark.jars"] == str(jars / committer.JAR)
    assert settings["spark.sql.sources.commitProtocolClass"] == committer.COMMIT_PROTOCOL
    # A cluster's Spark (method: connect) keeps its own committer: no class it may not have.
    cluster = DeltaMergeCredentials.from_dict(
        {**BASE, "method": "connect", "host": "sc://spark:15002", "storage_options": {}}
    )
    assert not set(store_settings(cluster)) & {"spark.jars", *committer.STARTUP_ONLY}


def test_without_the_committer_jar_spark_keeps_its_default_committer(monkeypatch, caplog):
    monkeypatch.setenv("DELTAMERGE_CACHE", "/proc/no-such-cache")  # cannot be created
    assert committer.committer_jar(os.environ) is None
    assert committer.committer_conf(None) == {}
    assert "S3A's magic committer is not used" in caplog.text


@pytest.mark.parametrize("uri", ["hdfs://nn:8020/wh", "wasbs://c@a.blob.core.windows.net/wh"])
def test_a_warehouse_on_a_refused_store_is_named(uri):
    with pytest.raises(DbtRuntimeError, match=f"`warehouse` is {uri}: .* is not supported"):
        DeltaMergeCredentials.from_dict({**BASE, "warehouse": uri})


def test_connect_needs_a_spark_connect_url():
    with pytest.raises(DbtRuntimeError, match="needs `host` to be a Spark Connect URL"):
        DeltaMergeCredentials.from_dict({**BASE, "method": "connect", "host": "localhost:15002"})


def test_server_needs_no_host_and_keeps_the_warehouse_as_its_identity():
    creds = DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_idle_minutes": 5})
    assert creds.host == "localhost" and creds.unique_field == "/tmp/w" and creds.server_idle_minutes == 5


def test_a_negative_idle_time_is_refused_naming_the_key():
    expected = r"`server_idle_minutes` must be 0 \(never stop\) or more, got -1"
    with pytest.raises(DbtRuntimeError, match=expected):
        DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_idle_minutes": -1})


def test_warmup_rounds_default_to_the_server_s_and_a_negative_count_is_refused_naming_the_key():
    creds = DeltaMergeCredentials.from_dict({**BASE, "method": "server"})
    assert creds.server_warmup_rounds == 40
    assert DeltaMergeCredentials.from_dict({**BASE, "server_warmup_rounds": 0}).server_warmup_rounds == 0
    expected = r"`server_warmup_rounds` must be 0 \(no warm-up\) or more, got -2"
    with pytest.raises(DbtRuntimeError, match=expected):
        DeltaMergeCredentials.from_dict({**BASE, "method": "server", "server_warmup_rounds": -2})


def test_a_misspelled_profile_key_is_refused_with_the_key_it_meant():
    with pytest.raises(ValidationError) as caught:
        DeltaMergeCredentials.validate({**BASE, "warehous": "/elsewhere", "server_idle_minute": 3})
    assert caught.value.message == (
        "unknown profile key `server_idle_minute`: did you mean `server_idle_minutes`?; "
        "unknown profile key `warehous`: did you mean `warehouse`?"
    )


def test_every_documented_profile_key_is_known():
    DeltaMergeCredentials.validate(
        {
            **BASE,
            "server_idle_minutes": 5,
            "server_warmup_rounds": 0,
            "server_side_parameters": {"spark.driver.memory": "2g"},
            "database": "analytics",
            "host": "localhost",
            "connect_retries": 1,
        }
    )


def test_a_relative_warehouse_is_the_dbt_projects_not_the_working_directorys(tmp_path, monkeypatch):
    from argparse import Namespace

    from dbt.flags import set_flags

    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(tmp_path)
    set_flags(Namespace(PROJECT_DIR=str(project)))
    try:
        creds = DeltaMergeCredentials.from_dict({**BASE, "warehouse": "./warehouse"})
    finally:
        set_flags(Namespace())
    assert creds.warehouse == str(project / "warehouse")
    assert DeltaMergeCredentials.from_dict({**BASE, "warehouse": "./w"}).warehouse == str(tmp_path / "w")


def test_dbt_init_writes_a_server_target():
    """`dbt init` writes the template's fixed keys as they are: the README recommends `server`."""
    from pathlib import Path

    import yaml

    import dbt.include.deltamerge as macros

    template = yaml.safe_load((Path(macros.__file__).parent / "profile_template.yml").read_text())
    assert template["fixed"] == {"type": "deltamerge", "method": "server"}
    assert template["prompts"]["warehouse"]["default"] == "./warehouse"


def test_importing_the_plugin_changes_nothing_until_dbt_makes_its_connection_manager() -> None:
    # A real interpreter: the import leaves dbt's macro namespace builder and the collector alone;
    # prepare_process (what the connection manager's constructor calls) does both, once.
    import subprocess
    import sys

    child = """
import gc
gc.unfreeze()
import dbt.adapters.deltamerge
from dbt.context.macros import MacroNamespaceBuilder
print(getattr(MacroNamespaceBuilder.build_namespace, "_deltamerge", False), gc.get_freeze_count() == 0)
from dbt.adapters.deltamerge.connections import prepare_process
prepare_process()
frozen = gc.get_freeze_count()
prepare_process()
wrapped = getattr(MacroNamespaceBuilder.build_namespace, "_deltamerge", False)
print(wrapped, frozen > 0, gc.get_freeze_count() == frozen)
"""
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True", "True", "True"]


def test_target_database_is_defined_and_none():
    """A package's ``{{ var('x_database', target.database) }}`` must name no database (Spark has no
    level above schemas), not fail to parse on an undefined ``target.database``."""
    creds = DeltaMergeCredentials.from_dict(BASE)
    target = dict(creds.connection_info(with_aliases=True))
    assert "database" in target and target["database"] is None
    assert creds.type == "deltamerge"  # never another adapter's type


def test_a_bucket_of_its_own_is_reached_with_its_options_and_wrong_entries_are_named(monkeypatch):
    from dbt.adapters.deltamerge.connections import bucket_settings, store_settings
    from dbt.adapters.deltamerge.invocation import current

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "shared-key")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "shared-token")
    monkeypatch.setenv("DELTAMERGE_CACHE", "/proc/no-such-cache")  # no committer jar fetched
    own = {
        "AWS_ENDPOINT_URL": "http://partner:9000",
        "AWS_ACCESS_KEY_ID": "k2",
        "AWS_SECRET_ACCESS_KEY": "s2",
    }
    creds = DeltaMergeCredentials.from_dict({**BASE, "bucket_storage_options": {"s3://partner": own}})
    store_settings(creds)  # the invocation's stores: what this process reads and commits with
    clients = current().stores.object.clients
    assert clients.options_for("s3a://partner/t")["AWS_ACCESS_KEY_ID"] == "k2"
    assert "AWS_SESSION_TOKEN" not in clients.options_for("s3://partner/t")  # not mixed
    assert clients.options_for("s3://lake/t")["AWS_ACCESS_KEY_ID"] == "shared-key"
    settings = bucket_settings(creds)
    assert settings["fs.s3a.bucket.partner.endpoint"] == "http://partner:9000"
    assert settings["fs.s3a.bucket.partner.secret.key"] == "s2"
    assert "fs.s3a.bucket.partner.session.token" not in settings
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") != "s2"  # a bucket's keys stay out of the environment
    for entry, named in (
        ({"gs://b": {}}, "name an S3 bucket"),
        ({"s3://b/path": {}}, "name an S3 bucket"),
        ({"s3://b": {"AWS_PROFILE": "p"}}, "AWS_PROFILE cannot be given per bucket"),
        ({"s3://b": {"REGION": "r"}}, "REGION is no S3 option"),
    ):
        with pytest.raises(DbtRuntimeError, match=named):
            DeltaMergeCredentials.from_dict({**BASE, "bucket_storage_options": entry})


LAKE = {"lake": {"uri": "http://catalog:8181", "credential": "client:secret"}}


def test_the_profile_s_catalog_is_the_default_database_and_must_be_an_iceberg_catalog():
    creds = DeltaMergeCredentials.from_dict({**BASE, "iceberg_catalogs": LAKE, "catalog": "lake"})
    assert creds.database == "lake"  # dbt-databricks's `catalog`, an alias of `database`
    same = DeltaMergeCredentials.from_dict({**BASE, "database": "analytics"})
    assert same.database is None  # dbt-spark's database = schema: Spark's two-part names
    with pytest.raises(DbtRuntimeError, match=r"`database` \(or `catalog`\) is nowhere: .*\(named: lake\)"):
        DeltaMergeCredentials.from_dict({**BASE, "iceberg_catalogs": LAKE, "database": "nowhere"})
    with pytest.raises(DbtRuntimeError, match=r"iceberg_catalogs\.bare: `uri`"):
        DeltaMergeCredentials.from_dict({**BASE, "iceberg_catalogs": {"bare": {"warehouse": "w"}}})


def test_a_catalog_s_secrets_stay_out_of_what_dbt_prints():
    creds = DeltaMergeCredentials.from_dict({**BASE, "iceberg_catalogs": LAKE})
    printed = dict(creds.connection_info())
    assert "iceberg_catalogs" not in printed and "secret" not in repr(printed)
