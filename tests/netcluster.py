"""A Spark cluster whose hosts share no disk: network namespaces, each with a private ``/tmp``.

Six hosts on one Linux bridge (``ip netns``, veth pairs): an S3 server (S3Proxy), a standalone
master, two workers, a Spark Connect server (the cluster's driver) and the dbt host. Each process
runs in its host's network namespace and in a mount namespace of its own where ``/tmp`` is the
host's private folder (``<root>/<host>``, bind-mounted): everything a host writes there stays
there, and no host sees another's (the folders all live under the real ``/tmp``, hidden by the
bind mount). The only storage the hosts share is the S3 server, over the network. Software
(Java, the virtualenv, Ivy's and the S3Proxy jar's caches) stays shared, as on any cluster's image.

Needs root, ``ip`` (iproute2) and ``unshare`` (util-linux): ``unavailable()`` says what is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

from dbt.adapters.deltamerge.spark.committer import committer_conf, committer_jar
from dbt.adapters.deltamerge.spark.conf import object_store_conf, warehouse_conf
from tests.cluster import end_group
from tests.s3server import s3_options, s3proxy_jar, s3proxy_properties, wait_listening

SPARK_HOME = os.path.dirname(pyspark.__file__)
HOSTS = ("s3", "master", "worker1", "worker2", "connect", "dbt")
S3_PORT, MASTER_PORT, CONNECT_PORT = 9000, 7077, 15002
# Inside each host's mount namespace: its private folder becomes /tmp, and the process starts there.
PRIVATE_TMP = 'mount --make-rprivate / && mount --bind "$0" /tmp && cd /tmp && exec "$@"'


def unavailable() -> str | None:
    """Why this machine cannot build the hosts, or None."""
    if os.geteuid() != 0:
        return "network and mount namespaces need root"
    for tool in ("ip", "unshare", "mount"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    return None


@dataclass
class Host:
    """One host: a network namespace, its address on the bridge and its private folder."""

    name: str
    namespace: str
    address: str
    folder: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def spawn(self, argv: list[str], env: dict[str, str], log: str) -> subprocess.Popen[bytes]:
        """Start ``argv`` on this host (its cwd and /tmp its private folder), output to /tmp/``log``."""
        command = ["ip", "netns", "exec", self.namespace, "unshare", "--mount", "sh", "-c", PRIVATE_TMP]
        with open(self.folder / log, "ab") as out:
            process = subprocess.Popen(
                [*command, str(self.folder), *argv],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.processes.append(process)
        return process

    def run(self, argv: list[str], env: dict[str, str], log: str, timeout: float) -> tuple[int, str]:
        """Run ``argv`` here to its end; its exit code and output."""
        process = self.spawn(argv, env, log)
        try:
            code = process.wait(timeout)
        except subprocess.TimeoutExpired:
            end_group(process)
            raise
        return code, (self.folder / log).read_text(errors="replace")


@dataclass
class Network:
    """The bridge and the hosts on it (``10.<n>.0.0/24``, the bridge itself ``.1``)."""

    bridge: str
    hosts: dict[str, Host]

    def stop(self) -> None:
        for host in reversed(list(self.hosts.values())):
            for process in reversed(host.processes):
                end_group(process)
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "delete", host.namespace], check=False, capture_output=True)
        subprocess.run(["ip", "link", "delete", self.bridge], check=False, capture_output=True)


def build_network(root: Path, names: tuple[str, ...] = HOSTS) -> Network:
    """The bridge and one namespace per host name, each with a private folder under ``root``."""
    tag = f"{os.getpid() % 100000:05d}"
    subnet = f"10.{200 + os.getpid() % 50}.0"
    network = Network(f"dmb{tag}", {})
    try:
        _ip("link", "add", network.bridge, "type", "bridge")
        _ip("addr", "add", f"{subnet}.1/24", "dev", network.bridge)
        _ip("link", "set", network.bridge, "up")
        for index, name in enumerate(names, start=2):
            namespace, veth = f"dm{tag}-{name}", f"dm{tag}v{index}"
            folder = root / name
            folder.mkdir(parents=True, exist_ok=True)
            network.hosts[name] = Host(name, namespace, f"{subnet}.{index}", folder)
            _ip("netns", "add", namespace)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace)
            _ip("link", "set", veth, "master", network.bridge, "up")
            _ip("-n", namespace, "addr", "add", f"{subnet}.{index}/24", "dev", "eth0")
            _ip("-n", namespace, "link", "set", "eth0", "up")
            _ip("-n", namespace, "link", "set", "lo", "up")
    except BaseException:
        network.stop()
        raise
    return network


@dataclass
class NoSharedDiskCluster:
    """The running hosts: S3 at ``endpoint``, Spark Connect at ``connect_url``."""

    network: Network
    endpoint: str
    connect_url: str
    master_url: str

    def host(self, name: str) -> Host:
        return self.network.hosts[name]

    def options(self) -> dict[str, str]:
        """The S3 server's variables, as every host and the test's own readers get them."""
        return {**s3_options(self.endpoint), "AWS_ALLOW_HTTP": "true"}

    def bucket_folder(self, bucket: str) -> Path:
        """Where the S3 server keeps ``bucket`` (on its host's private disk)."""
        return self.host("s3").folder / "buckets" / bucket

    def environment(self) -> dict[str, str]:
        """A host process's environment: the S3 variables, Spark's home, every data folder in /tmp."""
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SPARK_", "PYSPARK_"))}
        return {
            **keep,
            **self.options(),
            "SPARK_HOME": SPARK_HOME,
            "PYSPARK_PYTHON": sys.executable,
            "XDG_DATA_HOME": "/tmp/data",
            "TMPDIR": "/tmp",
            "SPARK_LOCAL_DIRS": "/tmp/spark-local",
        }

    def stop(self) -> None:
        self.network.stop()


def start_no_shared_disk_cluster(root: Path, warehouse: str) -> NoSharedDiskCluster:
    """Every host started, in order, Spark's warehouse at the URI ``warehouse`` on the S3 host;
    returns once Spark Connect listens."""
    network = build_network(root)
    try:
        return _start(network, warehouse)
    except BaseException:
        network.stop()
        raise


def _start(network: Network, warehouse: str) -> NoSharedDiskCluster:
    hosts = network.hosts
    s3, master = hosts["s3"], hosts["master"]
    endpoint = f"http://{s3.address}:{S3_PORT}"
    master_url = f"spark://{master.address}:{MASTER_PORT}"
    cluster = NoSharedDiskCluster(
        network, endpoint, f"sc://{hosts['connect'].address}:{CONNECT_PORT}", master_url
    )
    env = cluster.environment()
    (s3.folder / "buckets" / "lake").mkdir(parents=True)
    (s3.folder / "s3proxy.conf").write_text(s3proxy_properties(endpoint, "/tmp/buckets"))
    java = ["java", "-Xmx256m", "-jar", str(s3proxy_jar()), "--properties", "/tmp/s3proxy.conf"]
    _started(s3, s3.spawn(java, env, "s3proxy.log"), S3_PORT, "s3proxy.log", "S3Proxy")
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    master_args = [
        "org.apache.spark.deploy.master.Master",
        "--host",
        master.address,
        "--port",
        str(MASTER_PORT),
    ]
    process = master.spawn(
        [spark_class, *master_args], {**env, "SPARK_LOCAL_IP": master.address}, "master.log"
    )
    _started(master, process, MASTER_PORT, "master.log", "the master")
    for name in ("worker1", "worker2"):
        worker = hosts[name]
        args = ["org.apache.spark.deploy.worker.Worker", master_url, "--cores", "1", "--memory", "1g"]
        args += ["--work-dir", "/tmp/work"]
        worker.spawn([spark_class, *args], {**env, "SPARK_LOCAL_IP": worker.address}, "worker.log")
    connect = hosts["connect"]
    command = [
        os.path.join(SPARK_HOME, "bin", "spark-submit"),
        "--class",
        CONNECT_SERVER,
        "--master",
        master_url,
    ]
    settings = {**_connect_settings(connect.address), **object_store_conf(cluster.options())}
    settings.update(committer_conf(committer_jar(os.environ)))  # as recommended for a cluster
    for key, value in {**settings, **warehouse_conf(warehouse)}.items():
        command += ["--conf", f"{key}={value}"]
    process = connect.spawn(command, {**env, "SPARK_LOCAL_IP": connect.address}, "connect.log")
    _started(connect, process, CONNECT_PORT, "connect.log", "the Spark Connect server", timeout=300)
    return cluster


CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
METASTORE_URL = "jdbc:derby:;databaseName=/tmp/metastore_db;create=true"


def _connect_settings(address: str) -> dict[str, str]:
    """The cluster's driver: listening on its address, a Hive metastore on its own disk, one executor
    of one core on each worker."""
    return {
        "spark.connect.grpc.binding.address": address,
        "spark.connect.grpc.binding.port": str(CONNECT_PORT),
        "spark.driver.host": address,
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": METASTORE_URL,
        "spark.driver.extraJavaOptions": "-Dderby.system.home=/tmp",
        "spark.cores.max": "2",
        "spark.executor.cores": "1",
        "spark.executor.memory": "700m",
        "spark.ui.enabled": "false",
    }


def _started(
    host: Host, process: subprocess.Popen[bytes], port: int, log: str, what: str, timeout: float = 120
) -> None:
    wait_listening(process, port, host.folder / log, what, host=host.address, timeout=timeout)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
