"""The Java runtime Spark's JVM needs, found (or not) before a JVM is started.

pyspark's launcher runs ``$JAVA_HOME/bin/java`` when ``JAVA_HOME`` is set, else ``java`` on the
``PATH``. Without one, or with one older than Spark 4 needs, the JVM never starts and the error
that reaches a user is a gateway's ("Java gateway process exited") or dbt's "check your database
credentials"; this module says which Java is missing or too old instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

MINIMUM_MAJOR = 17  # Spark 4's
INSTALL_HINT = (
    "install Java 17 or 21 (for example Debian's openjdk-17-jre-headless, or Temurin) "
    "and put it on the PATH or set JAVA_HOME to it"
)


def java_executable() -> tuple[str | None, str]:
    """The ``java`` pyspark's launcher would run (None when there is none), and where it looked."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        found = candidate if os.access(candidate, os.X_OK) else None
        return found, f"JAVA_HOME={home}"
    return shutil.which("java"), "the PATH (JAVA_HOME is not set)"


def java_problem() -> str | None:
    """Why Spark's JVM cannot start here (no Java), or None. Costs a ``stat`` or a PATH search."""
    java, where = java_executable()
    if java is None:
        return f"Spark needs Java and none was found in {where}: {INSTALL_HINT}."
    return None


def java_version_problem() -> str | None:
    """Why the Java found is not one Spark 4 runs on (its ``-version`` below 17), or None.

    Runs ``java -version``: called only after a JVM failed to start, to say why.
    """
    java, where = java_executable()
    if java is None:
        return java_problem()
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError) as error:
        return f"{java} (from {where}) did not run: {error}; {INSTALL_HINT}."
    major = version_major(shown)
    if major is not None and major < MINIMUM_MAJOR:
        needs = f"Spark 4 needs Java {MINIMUM_MAJOR} or later"
        return f"{java} (from {where}) is Java {major}; {needs}: {INSTALL_HINT}."
    return None


def version_major(text: str) -> int | None:
    """The major version in ``java -version``'s text.

    >>> version_major('openjdk version "17.0.15" 2025-04-15'), version_major('java version "1.8.0_392"')
    (17, 8)
    """
    found = re.search(r'version "(\d+)(?:\.(\d+))?', text)
    if found is None:
        return None
    major = int(found.group(1))
    return int(found.group(2) or 0) if major == 1 else major
