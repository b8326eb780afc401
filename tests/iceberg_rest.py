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

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.s3server import _free_port, cache_dir, stop_process, wait_listening

VERSION = "1.10.0"
POM = Path(__file__).parent / "fixtures" / "iceberg_rest" / "pom.xml"


def server_jars() -> Path:
    """The folder of the server's jars, copied from Maven Central on first use."""
    folder = cache_dir().parent / f"iceberg-rest-{VERSION}"
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
