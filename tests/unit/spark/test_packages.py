"""One Ivy resolution at a time: a second process waits for the first start's lock."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from dbt.adapters.deltamerge.spark.packages import LOCK_FILE, ivy_folder, resolving

# A second process asks for the lock without waiting: it says whether it got it.
_PROBE = textwrap.dedent(
    """
    import fcntl, sys
    with open(sys.argv[1], "a") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("free")
        except BlockingIOError:
            print("held")
    """
)


def _probe(lock: str) -> str:
    answer = subprocess.run([sys.executable, "-c", _PROBE, lock], capture_output=True, text=True, check=True)
    return answer.stdout.strip()


def test_a_start_with_packages_holds_the_ivy_cache_until_it_is_up(tmp_path):
    conf = {"spark.jars.packages": "io.delta:delta-spark_2.13:4.4.0", "spark.jars.ivy": str(tmp_path / "ivy")}
    lock = str(ivy_folder(conf) / LOCK_FILE)
    with resolving(conf):
        assert _probe(lock) == "held"
    assert _probe(lock) == "free"


def test_a_start_without_packages_takes_no_lock(tmp_path):
    conf = {"spark.jars.ivy": str(tmp_path / "ivy")}
    with resolving(conf):
        assert not (tmp_path / "ivy").exists()


def test_the_warm_servers_supervisor_takes_the_same_lock_for_each_jvm_it_starts(tmp_path):
    """The supervisor (stdlib only) is handed the lock's path in its spec: renewals, which start a
    JVM while other processes may start theirs, resolve one at a time too."""
    from dbt.adapters.deltamerge.spark import daemon
    from dbt.adapters.deltamerge.spark.packages import lock_path

    conf = {
        "spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.2",
        "spark.jars.ivy": str(tmp_path / "ivy"),
    }
    lock = lock_path(conf)
    assert lock == str(ivy_folder(conf) / LOCK_FILE)
    with daemon._resolve_lock(lock):
        assert _probe(lock) == "held"
    assert _probe(lock) == "free"
    assert lock_path({"spark.jars.ivy": str(tmp_path / "ivy")}) is None
