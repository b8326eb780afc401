"""A real S3 server for the tests: S3Proxy (Maven Central) on loopback over a folder of this machine.

S3Proxy's filesystem backend publishes an object with a hard link, so its conditional create
(``If-None-Match: *``) is atomic: of racing writers exactly one wins (moto's server checks then
writes without a lock, which is why it is not used here). The jar (~55 MB) is downloaded once into
``~/.cache/dbt-deltamerge/jars`` (``DELTAMERGE_CACHE`` moves it) and checked against Maven's SHA-1.
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

VERSION = "4.1.0"
JAR = f"s3proxy-{VERSION}-jar-with-dependencies.jar"
URL = f"https://repo1.maven.org/maven2/org/gaul/s3proxy/{VERSION}/{JAR}"
ACCESS_KEY, SECRET_KEY, REGION = "deltamerge-test", "deltamerge-test-secret", "us-east-1"


def cache_dir() -> Path:
    return Path(os.environ.get("DELTAMERGE_CACHE", Path.home() / ".cache" / "dbt-deltamerge")) / "jars"


def s3proxy_jar() -> Path:
    """The S3Proxy jar, downloaded into the cache on first use (its SHA-1 checked)."""
    return maven_jar(URL)


def maven_jar(url: str) -> Path:
    """The jar at ``url`` on Maven Central, downloaded into the cache on first use and checked
    against the SHA-1 Maven Central publishes beside it."""
    jar = cache_dir() / url.rsplit("/", 1)[1]
    if jar.exists():
        return jar
    jar.parent.mkdir(parents=True, exist_ok=True)
    partial = jar.with_suffix(f".{os.getpid()}.part")
    urllib.request.urlretrieve(url, partial)
    with urllib.request.urlopen(url + ".sha1") as answer:
        expected = answer.read().decode().split()[0]
    digest = hashlib.sha1(partial.read_bytes()).hexdigest()
    if digest != expected:
        partial.unlink()
        raise RuntimeError(f"{url}: SHA-1 {digest}, Maven Central says {expected}")
    partial.replace(jar)
    return jar


def s3_options(endpoint: str, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY) -> dict[str, str]:
    """The ``AWS_*`` variables that reach an S3Proxy of these tests at ``endpoint``."""
    return {
        "AWS_ACCESS_KEY_ID": access_key,
        "AWS_SECRET_ACCESS_KEY": secret_key,
        "AWS_REGION": REGION,
        "AWS_ENDPOINT_URL": endpoint,
    }


@dataclass
class S3Server:
    """A running S3Proxy: its endpoint and the folder holding its buckets."""

    endpoint: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path
    access_key: str = ACCESS_KEY
    secret_key: str = SECRET_KEY

    def options(self) -> dict[str, str]:
        """The environment-variable options that reach it (``AWS_*``, as a user would set them)."""
        return s3_options(self.endpoint, self.access_key, self.secret_key)

    def make_bucket(self, name: str) -> str:
        (self.root / name).mkdir(exist_ok=True)
        return name

    def stop(self) -> None:
        stop_process(self.process)


def stop_process(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 10 s."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def wait_listening(
    process: subprocess.Popen[bytes],
    port: int,
    log: Path,
    what: str,
    host: str = "127.0.0.1",
    timeout: float = 60,
) -> None:
    """Return once ``process`` accepts connections on ``host``:``port`` (``timeout`` seconds at most)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection((host, port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(
        f"{what} did not listen on port {port} within {timeout:.0f} s: {log.read_text()[-2000:]}"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def s3proxy_properties(
    endpoint: str, buckets: str, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY
) -> str:
    """S3Proxy's settings: serve ``endpoint`` from the folder ``buckets`` (one subfolder a bucket)
    to the one identity ``access_key`` / ``secret_key``."""
    lines = [
        f"s3proxy.endpoint={endpoint}",
        "s3proxy.authorization=aws-v2-or-v4",
        f"s3proxy.identity={access_key}",
        f"s3proxy.credential={secret_key}",
        "jclouds.provider=filesystem-nio2",
        f"jclouds.filesystem.basedir={buckets}",
    ]
    return "\n".join(lines) + "\n"


def start_s3_server(folder: str, access_key: str = ACCESS_KEY, secret_key: str = SECRET_KEY) -> S3Server:
    """Start S3Proxy over ``folder``/buckets for one identity; returns once it answers."""
    root = Path(folder) / "buckets"
    root.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    conf = Path(folder) / "s3proxy.conf"
    conf.write_text(s3proxy_properties(endpoint, str(root), access_key, secret_key))
    log = Path(folder) / "s3proxy.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            ["java", "-Xmx256m", "-jar", str(s3proxy_jar()), "--properties", str(conf)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    wait_listening(process, port, log, "S3Proxy")
    return S3Server(endpoint, root, process, log, access_key, secret_key)
