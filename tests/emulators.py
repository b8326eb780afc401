"""Azure's storage emulator for the tests: Azurite, a process of its own on loopback.

**Azurite** (Microsoft's Azure Storage emulator, npm ``azurite``; its Blob service only) is installed
once into ``~/.cache/dbt-deltamerge/azurite`` with the machine's npm, and gives the ``AZURE_*``
options that reach it, as a user would set them.

No GCS emulator serves the requests a GCS commit makes: fake-gcs-server (v1.56.1, the one the
registries offer) answers the XML API's ``PUT /<bucket>/<object>`` with
``x-goog-if-generation-match: 0``, which the ``object_store`` crate (obstore, delta-rs) sends, with
``400 invalid uploadType`` (measured here); its preconditions exist on its JSON API only.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import hmac
import http.client
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.s3server import _free_port, cache_dir, stop_process, wait_listening

AZURITE_VERSION = "3.35.0"
# Azurite's well-known development account (documented by Microsoft; not a secret).
AZURE_ACCOUNT = "devstoreaccount1"
AZURE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


class EmulatorMissing(RuntimeError):
    """The emulator could not be installed here (no npm, or no registry)."""


def _home() -> Path:
    return cache_dir().parent


def azurite_command() -> Path:
    folder = _home() / "azurite"
    command = folder / "node_modules" / ".bin" / "azurite-blob"
    if command.exists():
        return command
    if shutil.which("npm") is None:
        raise EmulatorMissing("npm is not installed: Azurite comes from the npm registry")
    folder.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund", f"azurite@{AZURITE_VERSION}"],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    if done.returncode != 0 or not command.exists():
        raise EmulatorMissing(f"npm install azurite@{AZURITE_VERSION} failed: {done.stderr[-1500:]}")
    return command


@dataclass
class Emulator:
    """A running emulator: what reaches it, and its process."""

    kind: str
    endpoint: str
    process: subprocess.Popen[bytes]
    options: dict[str, str]
    environment: dict[str, str]

    def stop(self) -> None:
        stop_process(self.process)


def start_azurite(folder: str) -> Emulator:
    port = _free_port()
    log = Path(folder) / "azurite.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(azurite_command()), "--blobHost", "127.0.0.1", "--blobPort", str(port),
             "--location", str(Path(folder) / "azurite"), "--silent", "--disableTelemetry",
             "--skipApiVersionCheck"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    wait_listening(process, port, log, "Azurite")
    endpoint = f"http://127.0.0.1:{port}"
    options = {
        "AZURE_STORAGE_ACCOUNT_NAME": AZURE_ACCOUNT,
        "AZURE_STORAGE_ACCOUNT_KEY": AZURE_KEY,
        "AZURE_STORAGE_USE_EMULATOR": "true",
    }
    # The emulator's address, read by the object_store crate (obstore, delta-rs) in emulator mode.
    return Emulator("azure", endpoint, process, options, {"AZURITE_BLOB_STORAGE_URL": endpoint})


def create_container(emulator: Emulator, name: str) -> str:
    """Create a blob container (Azure's bucket) with one Shared Key request."""
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%a, %d %b %Y %H:%M:%S GMT")
    headers = {"x-ms-date": date, "x-ms-version": "2021-08-06", "Content-Length": "0"}
    canonical = "".join(f"{k}:{v}\n" for k, v in sorted(headers.items()) if k.startswith("x-ms-"))
    to_sign = "PUT\n" + "\n" * 11 + canonical + f"/{AZURE_ACCOUNT}/{AZURE_ACCOUNT}/{name}\nrestype:container"
    digest = hmac.new(base64.b64decode(AZURE_KEY), to_sign.encode(), hashlib.sha256).digest()
    headers["Authorization"] = f"SharedKey {AZURE_ACCOUNT}:{base64.b64encode(digest).decode()}"
    _request(emulator, "PUT", f"/{AZURE_ACCOUNT}/{name}?restype=container", None, headers, (201, 409))
    return name


def _request(
    emulator: Emulator,
    method: str,
    path: str,
    body: bytes | None,
    headers: dict[str, str],
    ok: tuple[int, ...],
) -> None:
    port = int(emulator.endpoint.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        answer = connection.getresponse()
        text = answer.read()
        if answer.status not in ok:
            raise RuntimeError(f"{emulator.kind}: {method} {path} answered {answer.status}: {text[:300]!r}")
    finally:
        connection.close()
