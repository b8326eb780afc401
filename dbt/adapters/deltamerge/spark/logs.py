"""Spark's own logs stay out of dbt's console (unless ``dbt --debug``).

Spark logs through log4j2 to stderr by default: start-up warnings, and for every failed
task an executor stack dump, which would bury dbt's one-line error. The embedded session
gets a log4j2 configuration that writes Spark's log (WARN and above) to
``<warehouse>/.spark/spark.log``; with ``dbt --debug`` it goes to the console as well.
pyspark's Python side logs every SQL error once more, with the server's JVM stack trace, as
JSON on stderr (its ``SQLQueryContextLogger`` and ``DataFrameQueryContextLogger``); the
error itself still reaches dbt, so those loggers are silenced too.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from dbt.adapters.deltamerge.spark.conf import java_argument

LOG_FOLDER = ".spark"

_CONFIG = """# Written by dbt-deltamerge for the embedded Spark session; rewritten at every start.
rootLogger.level = warn
rootLogger.appenderRef.file.ref = file
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.append = true
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# Spark's own noise at every start, even at WARN.
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
# A warning for every metastore call, about a setting Spark itself makes.
logger.hiveconf.name = org.apache.hadoop.hive.conf.HiveConf
logger.hiveconf.level = error
{console}"""

_CONSOLE = """rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
"""


_SERVER_CONFIG = f"""# Written by dbt-deltamerge for the local Spark Connect server; rewritten at every start.
rootLogger.level = warn
{_CONSOLE}logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
# A warning for every metastore call, about a setting Spark itself makes.
logger.hiveconf.name = org.apache.hadoop.hive.conf.HiveConf
logger.hiveconf.level = error
"""


def log_config(warehouse: str, *, console: bool) -> str:
    """The log4j2 configuration text for ``warehouse`` (the console too when ``console``).

    >>> "fileName = /w/.spark/spark.log" in log_config("/w", console=False)
    True
    >>> "appender.console" in log_config("/w", console=True)
    True
    """
    log = os.path.join(warehouse, LOG_FOLDER, "spark.log")
    return _CONFIG.format(log=log, console=_CONSOLE if console else "")


def java_option(warehouse: str) -> str:
    """Write the configuration for ``warehouse``; the JVM option that makes the driver use it."""
    return _option(warehouse, "log4j2.properties", log_config(warehouse, console=_dbt_debug()))


def server_java_option(warehouse: str) -> str:
    """The local server's: WARN and above to its output, which its supervisor writes to the
    server's log (Spark's INFO lines, several per task, grew it by megabytes an hour)."""
    return _option(warehouse, "server-log4j2.properties", _SERVER_CONFIG)


def _option(warehouse: str, name: str, text: str) -> str:
    folder = os.path.join(warehouse, LOG_FOLDER)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return java_argument(f"-Dlog4j2.configurationFile={Path(path).as_uri()}")


def quiet_python_loggers() -> None:
    """Silence pyspark's query-context loggers (each error reaches dbt as an exception anyway)."""
    if _dbt_debug():
        return
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        # Created as pyspark's logger class: pyspark calls it with its own keyword arguments.
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def _dbt_debug() -> bool:
    try:
        from dbt.flags import get_flags
    except ImportError:
        return False
    return bool(getattr(get_flags(), "DEBUG", False))
