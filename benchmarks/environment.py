"""The machine and versions a benchmark ran on, for the report."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import version

import psutil

PACKAGES = ("dbt-core", "dbt-spark", "pyspark", "deltalake", "pyarrow")


def describe_machine() -> list[str]:
    """Markdown bullet lines: CPU, cores, memory, OS, Java, Python and package versions."""
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()
    versions = ", ".join(f"{p} {version(p)}" for p in PACKAGES)
    return [
        f"- Machine: {_cpu()}, {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"{platform.system()} {platform.release()}.",
        f"- Software: Python {platform.python_version()}, {java[0] if java else 'java ?'}, {versions}.",
    ]


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"
