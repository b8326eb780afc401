"""Processes of this machine the warm server's code starts, finds and stops: a free port, a
command line, whether a process (or process group) is alive, ending one (SIGTERM first, so Spark's
shutdown hooks release the metastore, then SIGKILL)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def free_port() -> int:
    """A TCP port nothing listens on now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def command_line(pid: int) -> str:
    """A process's command line ('' if it is gone); ``/proc`` or else ``ps``."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        if Path("/proc/self").exists():
            return ""
    except OSError:
        return ""
    done = subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True, text=True)
    return done.stdout.strip()


def is_group_leader(pid: int) -> bool:
    """Whether ``pid`` leads its process group (a supervisor this package started does)."""
    try:
        return os.getpgid(pid) == pid
    except ProcessLookupError:
        return False


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a child that exited is reaped here)."""
    signalled = _signal_reaches(pid)
    if signalled is not None:
        return signalled
    try:  # a child of this process that exited but was not reaped yet
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return Path(f"/proc/{pid}").exists() or not Path("/proc").exists()


def jvm_alive(pid: int) -> bool:
    """Whether a process runs (an exited one its parent has not reaped yet does not)."""
    if pid <= 0:
        return False
    signalled = _signal_reaches(pid)
    if signalled is not None:
        return signalled
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return not Path("/proc").exists()  # no /proc (macOS): the signal said it exists


def _signal_reaches(pid: int) -> bool | None:
    """False: no such process; True: another user's (it exists); None: one of ours, look closer."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return None


def group_alive(pgid: int) -> bool:
    """Whether any process of the group ``pgid`` runs."""
    alive(pgid)  # reaps the supervisor if it is this process's child
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def end_process(pid: int) -> None:
    """End one process: SIGTERM, then SIGKILL if it hangs."""
    terminate(pid, os.kill, alive)


def end_group(pid: int) -> None:
    """End the process group ``pid`` leads (a supervisor and its JVM): SIGTERM, then SIGKILL."""
    terminate(pid, os.killpg, group_alive)


def terminate(
    pid: int, send: Callable[[int, int], None], alive: Callable[[int], bool], timeout: float = 40.0
) -> None:
    """SIGTERM (Spark's shutdown hooks release the metastore), then SIGKILL if it hangs."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            send(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and alive(pid):
            time.sleep(0.2)
        if not alive(pid):
            return
