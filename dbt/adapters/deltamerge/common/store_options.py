"""Where a table's object store is and how to reach it: one place for endpoints and credentials.

A table's location is a path on a local disk or an object-store URI: ``s3://`` / ``s3a://`` (S3 and
S3-compatible stores through an endpoint), ``gs://``, ``abfss://`` / ``az://``. Both sides of the
product must reach the same store with the same credentials: the dbt process (the Delta log, data
files' footers, deletion vectors, through obstore) and Spark (data files, through Hadoop's
connectors). Both are derived here from one set of options: each cloud's standard environment
variables (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``,
``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_S3``, ``AWS_ALLOW_HTTP``; ``GOOGLE_*``; ``AZURE_*``),
overlaid with the profile's ``storage_options`` (the same names). Values never print: ``redacted``
is the one way options reach a message or a log.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

# A URI scheme of an object store -> the store's kind.
OBJECT_SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "abfss": "azure", "abfs": "azure", "az": "azure"}
# Schemes Spark or Hadoop know but this product cannot commit to safely (no conditional create).
REFUSED_SCHEMES = {
    "s3n": "Hadoop's retired s3n connector",
    "wasb": "Azure's WASB driver (removed from Hadoop 3.5)",
    "wasbs": "Azure's WASB driver (removed from Hadoop 3.5)",
    "hdfs": "HDFS (not supported by this version)",
    "http": "plain HTTP",
    "https": "plain HTTP",
    "dbfs": "the Databricks file system",
}
_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")
_SECRET_WORDS = ("SECRET", "TOKEN", "KEY", "PASSWORD", "CREDENTIAL", "SAS")
# S3's options as obstore's S3 store names them.
_S3_KEYS = {
    "AWS_ACCESS_KEY_ID": "aws_access_key_id",
    "AWS_SECRET_ACCESS_KEY": "aws_secret_access_key",
    "AWS_SESSION_TOKEN": "aws_session_token",
    "AWS_REGION": "aws_region",
    "AWS_DEFAULT_REGION": "aws_region",
    "AWS_ENDPOINT_URL": "aws_endpoint",
    "AWS_ENDPOINT_URL_S3": "aws_endpoint",
}


# The GCS and Azure variables obstore's stores take (the object_store crate's names); others of the
# environment (AZURE_SUBSCRIPTION_ID of Azure's CLI, say) are not theirs: obstore refuses unknown keys.
_GCS_KEYS = frozenset(
    [
        "GOOGLE_SERVICE_ACCOUNT",
        "GOOGLE_SERVICE_ACCOUNT_PATH",
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_SKIP_SIGNATURE",
    ]
)
_AZURE_KEYS = frozenset(
    f"AZURE_{k}"
    for k in [
        "STORAGE_ACCOUNT_NAME",
        "STORAGE_ACCOUNT_KEY",
        "STORAGE_ACCESS_KEY",
        "STORAGE_CLIENT_ID",
        "CLIENT_ID",
        "STORAGE_CLIENT_SECRET",
        "CLIENT_SECRET",
        "STORAGE_TENANT_ID",
        "TENANT_ID",
        "AUTHORITY_HOST",
        "STORAGE_SAS_KEY",
        "STORAGE_SAS_TOKEN",
        "STORAGE_TOKEN",
        "STORAGE_USE_EMULATOR",
        "STORAGE_ENDPOINT",
        "ENDPOINT",
        "MSI_ENDPOINT",
        "OBJECT_ID",
        "MSI_RESOURCE_ID",
        "FEDERATED_TOKEN_FILE",
        "USE_AZURE_CLI",
        "USE_FABRIC_ENDPOINT",
        "SKIP_SIGNATURE",
    ]
)


def is_object_uri(path: str) -> bool:
    """Whether ``path`` names an object store (``s3://b/k`` yes; ``/w/t``, ``file:/w/t`` no).

    >>> is_object_uri("s3a://lake/t"), is_object_uri("/w/t"), is_object_uri("file:/w/t")
    (True, False, False)
    """
    return urlsplit(path).scheme.lower() in OBJECT_SCHEMES


def refused_scheme(path: str) -> str | None:
    """What ``path``'s store is when this product refuses it (no safe commit there), else None.

    >>> refused_scheme("wasbs://c@a.blob.core.windows.net/t"), refused_scheme("s3://b/t")
    ("Azure's WASB driver (removed from Hadoop 3.5)", None)
    """
    return REFUSED_SCHEMES.get(urlsplit(path).scheme.lower())


def split_uri(uri: str) -> tuple[str, str, str]:
    """``(scheme, bucket, key)`` of an object-store URI (the bucket of Azure is ``container@account``).

    >>> split_uri("s3a://lake/wh/t/_delta_log/")
    ('s3a', 'lake', 'wh/t/_delta_log')
    """
    parts = urlsplit(uri)
    return parts.scheme.lower(), parts.netloc, parts.path.strip("/")


def store_kind(uri: str) -> str:
    """``s3``, ``gcs`` or ``azure``.

    >>> store_kind("s3a://lake/t")
    's3'
    """
    return OBJECT_SCHEMES[split_uri(uri)[0]]


def effective_options(environment: Mapping[str, str], profile: Mapping[str, str]) -> dict[str, str]:
    """The stores' options: the clouds' variables from ``environment``, overlaid by the profile's.

    >>> effective_options({"AWS_REGION": "eu-west-1", "HOME": "/root"}, {"AWS_REGION": "us-east-1"})
    {'AWS_REGION': 'us-east-1'}
    """
    found = {k: v for k, v in environment.items() if k.startswith(_PREFIXES) and v}
    found.update({str(k).upper(): str(v) for k, v in profile.items() if v is not None})
    return found


def redacted(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` safe to print: every value of a secret-looking name replaced.

    >>> redacted({"AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "r", "AWS_ACCESS_KEY_ID": "AKIA"})
    {'AWS_SECRET_ACCESS_KEY': '***', 'AWS_REGION': 'r', 'AWS_ACCESS_KEY_ID': '***'}
    """
    return {k: "***" if any(w in k.upper() for w in _SECRET_WORDS) else v for k, v in options.items()}


def obstore_config(kind: str, options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, object]]:
    """obstore's ``(config, client_options)`` for a store of ``kind`` from the effective options.

    >>> obstore_config("s3", {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "r"})
    ({'aws_endpoint': 'http://127.0.0.1:9000', 'aws_region': 'r'}, {'allow_http': True})
    """
    config: dict[str, str] = {}
    if kind == "s3":
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            if name in options:
                config[_S3_KEYS[name]] = options[name]
        region = options.get("AWS_REGION") or options.get("AWS_DEFAULT_REGION")
        endpoint = options.get("AWS_ENDPOINT_URL_S3") or options.get("AWS_ENDPOINT_URL")
        if endpoint:
            config["aws_endpoint"] = endpoint
        if region:
            config["aws_region"] = region
    else:
        known = _GCS_KEYS if kind == "gcs" else _AZURE_KEYS
        config = {k.lower(): v for k, v in options.items() if k in known}
    client: dict[str, object] = {"allow_http": True} if allows_http(kind, options) else {}
    return config, client


def allows_http(kind: str, options: Mapping[str, str]) -> bool:
    """Whether the store of ``kind`` may be reached over plain HTTP (an emulator, a local server):
    its endpoint says ``http://``, or ``<CLOUD>_ALLOW_HTTP`` is ``true``.

    >>> allows_http("gcs", {"GOOGLE_ALLOW_HTTP": "true"}), allows_http("s3", {"AWS_REGION": "r"})
    (True, False)
    """
    prefix = {"s3": "AWS_", "gcs": "GOOGLE_", "azure": "AZURE_"}[kind]
    endpoints = ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AZURE_STORAGE_ENDPOINT")
    endpoint = next((options[k] for k in endpoints if k.startswith(prefix) and options.get(k)), "")
    return endpoint.startswith("http://") or options.get(f"{prefix}ALLOW_HTTP", "").lower() == "true"


_CREDENTIALS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
)
# The AWS SDK's default chain (environment, system properties, web identity, the shared files'
# profile, container, instance): S3A's own default list has no profile provider.
SDK_DEFAULT_CHAIN = "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider"


def aws_profile(options: Mapping[str, str]) -> str | None:
    """The AWS profile that supplies S3's credentials: ``AWS_PROFILE``, unless keys are given.

    >>> aws_profile({"AWS_PROFILE": "lake"}), aws_profile({"AWS_PROFILE": "lake", "AWS_ACCESS_KEY_ID": "k"})
    ('lake', None)
    """
    if options.get("AWS_ACCESS_KEY_ID"):
        return None
    return options.get("AWS_PROFILE") or None


def credential_environment(options: Mapping[str, str]) -> dict[str, str]:
    """The credentials of ``options`` as the environment variables Spark's JVM reads them from (S3A's
    default providers read ``AWS_*``): a secret goes to Spark through its process environment, never
    a setting (pyspark puts settings on the JVM's command line, visible to every user of the machine).

    >>> credential_environment({"AWS_ACCESS_KEY_ID": "k", "AWS_REGION": "r"})
    {'AWS_ACCESS_KEY_ID': 'k'}
    """
    return {k: options[k] for k in _CREDENTIALS if options.get(k)}


def hadoop_conf(options: Mapping[str, str]) -> dict[str, str]:
    """Spark's settings for Hadoop's S3A connector from the effective options, credentials aside
    (``credential_environment``); ``s3://`` is served by S3A too; a custom endpoint means an
    S3-compatible store: path-style requests.

    >>> conf = hadoop_conf({"AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_SECRET_ACCESS_KEY": "s"})
    >>> conf["spark.hadoop.fs.s3a.endpoint"], conf["spark.hadoop.fs.s3a.path.style.access"]
    ('http://127.0.0.1:9000', 'true')
    >>> any("s" == v for v in conf.values())
    False
    """
    prefix = "spark.hadoop.fs.s3a."
    conf = {
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        # Upload blocks in memory, not in local temporary files: S3A's disk blocks go through
        # Hadoop's LocalDirAllocator, which needs the checksummed LocalFileSystem that local files
        # no longer use (``spark/conf.py``: RawLocalFileSystem; a ClassCastException otherwise).
        prefix + "fast.upload.buffer": "bytebuffer",
    }
    if aws_profile(options):  # the profile is read by the SDK's chain (AWS_PROFILE in the JVM's env)
        conf[prefix + "aws.credentials.provider"] = SDK_DEFAULT_CHAIN
    region = options.get("AWS_REGION") or options.get("AWS_DEFAULT_REGION")
    if region:
        conf[prefix + "endpoint.region"] = region
    endpoint = options.get("AWS_ENDPOINT_URL_S3") or options.get("AWS_ENDPOINT_URL")
    if endpoint:
        conf[prefix + "endpoint"] = endpoint
        conf[prefix + "path.style.access"] = "true"
        conf[prefix + "connection.ssl.enabled"] = str(endpoint.startswith("https://")).lower()
    return conf


# A bucket's own credentials and endpoint replace the shared ones whole: a key of one account
# beside another account's session token, or the shared endpoint beside its own, would mix stores.
_REPLACED_TOGETHER = (
    ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"),
    ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ALLOW_HTTP"),
)


def bucket_of(key: str) -> tuple[str, str]:
    """``(kind, bucket)`` of a ``bucket_storage_options`` key: ``s3://<bucket>`` (or ``s3a://``).

    >>> bucket_of("s3://other-lake"), bucket_of("s3a://other-lake/")
    (('s3', 'other-lake'), ('s3', 'other-lake'))
    >>> bucket_of("gs://b")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: `bucket_storage_options` key 'gs://b': name an S3 bucket, s3://<bucket> ...
    """
    scheme, bucket, key_path = split_uri(key)
    if OBJECT_SCHEMES.get(scheme) != "s3" or not bucket or key_path:
        raise ValueError(
            f"`bucket_storage_options` key {key!r}: name an S3 bucket, s3://<bucket> (other stores take "
            "the profile's storage_options)"
        )
    return "s3", bucket


def bucket_options(shared: Mapping[str, str], own: Mapping[str, str]) -> dict[str, str]:
    """The options of a bucket with options of its ``own``: the ``shared`` ones (environment and
    profile) overlaid by its own, credentials and endpoint taken whole from its own when it names any.

    >>> shared = {"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "a", "AWS_SESSION_TOKEN": "t"}
    >>> bucket_options(shared, {"AWS_ACCESS_KEY_ID": "b", "AWS_SECRET_ACCESS_KEY": "s"})
    {'AWS_REGION': 'eu-west-1', 'AWS_ACCESS_KEY_ID': 'b', 'AWS_SECRET_ACCESS_KEY': 's'}
    """
    own = {str(k).upper(): str(v) for k, v in own.items() if v is not None}
    found = dict(shared)
    for group in _REPLACED_TOGETHER:
        if any(k in own for k in group):
            for name in group:
                found.pop(name, None)
    found.update(own)
    return found


def bucket_problems(key: str, own: Mapping[str, str]) -> list[str]:
    """What is wrong with one ``bucket_storage_options`` entry (nothing: an empty list).

    >>> [p[35:59] for p in bucket_problems("s3://b", {"AWS_PROFILE": "p", "GOOGLE_X": "1"})]
    ['AWS_PROFILE cannot be gi', 'GOOGLE_X is no S3 option']
    """
    problems = []
    try:
        bucket_of(key)
    except ValueError as error:
        problems.append(str(error))
    for name in own:
        upper = str(name).upper()
        if upper == "AWS_PROFILE":
            problems.append(
                f"`bucket_storage_options` {key!r}: AWS_PROFILE cannot be given per bucket (Spark's S3A "
                "reads one profile per JVM); give the bucket's AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
            )
        elif not upper.startswith("AWS_"):
            problems.append(f"`bucket_storage_options` {key!r}: {name} is no S3 option (AWS_...)")
    return problems


def bucket_session_conf(bucket: str, options: Mapping[str, str]) -> dict[str, str]:
    """Spark session settings that reach ``bucket`` with its ``options`` (Hadoop's per-bucket S3A
    keys, ``fs.s3a.bucket.<bucket>.*``): set on a running session, never on a command line.

    >>> conf = bucket_session_conf("b", {"AWS_ENDPOINT_URL": "http://h:1", "AWS_ACCESS_KEY_ID": "k",
    ...                                  "AWS_SECRET_ACCESS_KEY": "s"})
    >>> [conf[f"fs.s3a.bucket.b.{k}"] for k in ("endpoint", "access.key", "path.style.access")]
    ['http://h:1', 'k', 'true']
    """
    prefix = f"fs.s3a.bucket.{bucket}."
    conf = {
        prefix + k.removeprefix("spark.hadoop.fs.s3a."): v
        for k, v in hadoop_conf(options).items()
        if k.startswith("spark.hadoop.fs.s3a.") and not k.endswith("fast.upload.buffer")
    }
    keys = {
        "AWS_ACCESS_KEY_ID": "access.key",
        "AWS_SECRET_ACCESS_KEY": "secret.key",
        "AWS_SESSION_TOKEN": "session.token",
    }
    for name, setting in keys.items():
        if options.get(name):
            conf[prefix + setting] = options[name]
    if options.get("AWS_ACCESS_KEY_ID"):  # its keys, not the JVM's chain of the shared ones
        provider = (
            "TemporaryAWSCredentialsProvider"
            if options.get("AWS_SESSION_TOKEN")
            else "SimpleAWSCredentialsProvider"
        )
        conf[prefix + "aws.credentials.provider"] = f"org.apache.hadoop.fs.s3a.{provider}"
    return conf
