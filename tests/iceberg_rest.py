"""Apache Iceberg's own REST catalog server for the tests, on loopback.

``org.apache.iceberg.rest.RESTCatalogServer`` (iceberg-open-api's test-fixtures, the server Iceberg's
and pyiceberg's integration tests run) over a JDBC catalog in SQLite, its warehouse a folder of this
machine (or a bucket: ``CATALOG_*`` properties), its SQLite database a file there. Its jars
(``fixtures/iceberg_rest/pom.xml``, ~40 MB) are copied from Maven Central by Maven once into
``~/.cache/dbt-deltamerge/iceberg-rest-<version>``
(``DELTAMERGE_CACHE`` moves it). It is configured only through ``CATALOG_*`` environment variables
(``CATALOG_REST_PORT``, ``CATALOG_WAREHOUSE``, ...), listens on every interface and checks no
credentials: a fault proxy in front of it (``tests.s3faults``) plays a catalog refusing a token.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.s3server import _free_port, cache_dir, stop_process, wait_listening

VERSION = "1.10.0"
POM = Path(__file__).parent / "fixtures" / "iceberg_rest" / "pom.xml"


def server_jars() -> Path:
    """The folder of the server's jars, copied from Maven Central on first use (one folder for
    each content of the pom)."""
    digest = hashlib.sha1(POM.read_bytes()).hexdigest()[:10]
    folder = cache_dir().parent / f"iceberg-rest-{VERSION}-{digest}"
    done = folder / ".complete"
    if done.exists():
        return folder
    partial = folder.with_name(f"{folder.name}.{os.getpid()}.part")
    subprocess.run(
        ["mvn", "-q", "-B", "-f", str(POM), "dependency:copy-dependencies", f"-DoutputDirectory={partial}"],
        check=True,
    )
    (partial / ".complete").touch()
    try:
        partial.rename(folder)
    except OSError:  # another worker's copy landed first
        subprocess.run(["rm", "-rf", str(partial)], check=True)
    return folder


@dataclass
class RestCatalogServer:
    """A running Iceberg REST catalog server: its URI and warehouse."""

    uri: str
    warehouse: str
    process: subprocess.Popen[bytes]
    log: Path

    def properties(self, uri: str | None = None) -> dict[str, str]:
        """pyiceberg's (and the profile's) properties reaching it (through ``uri``, a proxy, if given)."""
        return {"uri": uri or self.uri, "warehouse": self.warehouse}

    def stop(self) -> None:
        stop_process(self.process)


def s3_catalog_env(endpoint: str, access_key: str, secret_key: str, region: str) -> dict[str, str]:
    """The server's ``CATALOG_*`` settings for tables on the tests' S3 server: Iceberg's S3FileIO
    (its own metadata files, written at each commit through it, go there)."""
    return {
        "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
        "CATALOG_S3_ENDPOINT": endpoint,
        "CATALOG_S3_PATH__STYLE__ACCESS": "true",
        "CATALOG_S3_ACCESS__KEY__ID": access_key,
        "CATALOG_S3_SECRET__ACCESS__KEY": secret_key,
        "CATALOG_CLIENT_REGION": region,
        "AWS_REGION": region,
    }


def s3_client_properties(endpoint: str, access_key: str, secret_key: str, region: str) -> dict[str, str]:
    """pyiceberg's properties reading the tests' S3 server (a client reading a table's files)."""
    return {
        "s3.endpoint": endpoint,
        "s3.access-key-id": access_key,
        "s3.secret-access-key": secret_key,
        "s3.region": region,
    }


def start_rest_catalog(folder: str, extra: dict[str, str] | None = None) -> RestCatalogServer:
    """Start the server with its warehouse (and log) under ``folder``; returns once it listens.
    ``extra``: more ``CATALOG_*`` variables (an S3 warehouse's ``CATALOG_IO__IMPL``, ...)."""
    warehouse = Path(folder) / "iceberg-warehouse"
    warehouse.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {
        **os.environ,
        "CATALOG_REST_PORT": str(port),
        "CATALOG_WAREHOUSE": str(warehouse),
        # A file, not the default ``jdbc:sqlite::memory:``: each pooled connection to an in-memory
        # SQLite has a database of its own, so concurrent requests would not find the tables.
        "CATALOG_URI": f"jdbc:sqlite:{Path(folder) / 'catalog.sqlite'}",
        **(extra or {}),
    }
    log = Path(folder) / "iceberg-rest.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["java", "-Xmx256m", "-cp", f"{server_jars()}/*", "org.apache.iceberg.rest.RESTCatalogServer"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    wait_listening(process, port, log, "Iceberg's REST catalog server")
    return RestCatalogServer(f"http://127.0.0.1:{port}", str(warehouse), process, log)
