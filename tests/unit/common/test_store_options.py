"""Object stores' options: one set for the dbt process (obstore) and Spark (S3A); secrets stay out."""

from __future__ import annotations

from dbt.adapters.deltamerge.common.store_options import (
    credential_environment,
    effective_options,
    hadoop_conf,
    is_object_uri,
    obstore_config,
    redacted,
    refused_scheme,
    split_uri,
)

S3 = {
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "very-secret",
    "AWS_SESSION_TOKEN": "token-value",
    "AWS_REGION": "eu-west-1",
    "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000",
    "AWS_ENDPOINT_URL": "https://ignored.example",
}


def test_schemes_are_object_stores_or_refused_by_name():
    assert all(is_object_uri(u) for u in ["s3://b/t", "S3A://b/t", "gs://b/t", "abfss://c@a.dfs/t"])
    assert not any(is_object_uri(u) for u in ["/w/t", "file:/w/t", "relative/t", "hdfs://n/t"])
    assert "HDFS" in (refused_scheme("hdfs://n/t") or "")
    assert refused_scheme("s3a://b/t") is None and refused_scheme("/w/t") is None
    assert split_uri("abfss://c@acct.dfs.core.windows.net/a/b/") == (
        "abfss",
        "c@acct.dfs.core.windows.net",
        "a/b",
    )


def test_profile_options_override_the_environment_and_others_are_dropped():
    environment = {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "env", "PATH": "/bin", "AWS_EMPTY": ""}
    assert effective_options(environment, {"aws_region": "eu-west-1"}) == {
        "AWS_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "env",
    }


def test_s3_options_for_obstore_prefer_the_s3_endpoint():
    config, client = obstore_config("s3", S3)
    assert config == {
        "aws_access_key_id": "AKIAEXAMPLE",
        "aws_secret_access_key": "very-secret",
        "aws_session_token": "token-value",
        "aws_endpoint": "http://127.0.0.1:9000",
        "aws_region": "eu-west-1",
    }
    assert client == {"allow_http": True}
    assert obstore_config("gcs", {"GOOGLE_SERVICE_ACCOUNT": "/k.json", "AWS_REGION": "x"})[0] == {
        "google_service_account": "/k.json"
    }


def test_only_the_stores_own_variables_reach_obstore_and_plain_http_is_asked_per_cloud():
    """obstore refuses a key it does not know (a panic of its Rust side): Azure's CLI sets
    AZURE_SUBSCRIPTION_ID, which is no store option; *_ALLOW_HTTP is a client option."""
    environment = {
        "AZURE_SUBSCRIPTION_ID": "sub",
        "AZURE_STORAGE_ACCOUNT_NAME": "acct",
        "AZURE_STORAGE_USE_EMULATOR": "true",
        "GOOGLE_SERVICE_ACCOUNT_KEY": "{}",
        "GOOGLE_ALLOW_HTTP": "true",
        "GOOGLE_CLOUD_PROJECT": "p",
    }
    assert obstore_config("azure", environment) == (
        {"azure_storage_account_name": "acct", "azure_storage_use_emulator": "true"},
        {},
    )
    assert obstore_config("gcs", environment) == ({"google_service_account_key": "{}"}, {"allow_http": True})
    assert obstore_config("s3", {"AWS_ALLOW_HTTP": "TRUE"})[1] == {"allow_http": True}
    assert obstore_config("s3", {"GOOGLE_ALLOW_HTTP": "true"})[1] == {}


def test_spark_gets_no_secret_as_a_setting_only_through_its_environment():
    conf = hadoop_conf(S3)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:9000"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.endpoint.region"] == "eu-west-1"
    assert conf["spark.hadoop.fs.s3.impl"] == "org.apache.hadoop.fs.s3a.S3AFileSystem"
    assert not {"very-secret", "token-value", "AKIAEXAMPLE"} & set(conf.values())
    assert credential_environment(S3) == {
        "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "very-secret",
        "AWS_SESSION_TOKEN": "token-value",
    }
    shown = redacted(S3)
    assert not {"very-secret", "token-value", "AKIAEXAMPLE"} & set(shown.values())
    assert shown["AWS_REGION"] == "eu-west-1"
