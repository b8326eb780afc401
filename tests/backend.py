"""Which backend the functional tests run on; importable without side effects (spawned workers do)."""

from __future__ import annotations

import os

ON_CONNECT = os.environ.get("DELTAMERGE_TEST_BACKEND", "session") == "connect"
# ``DELTAMERGE_TEST_STORE=s3``: the tests marked ``s3`` on an S3 server (their own pytest run: Spark
# gets the S3A connector when its JVM starts).
ON_S3 = os.environ.get("DELTAMERGE_TEST_STORE", "local") == "s3"
# ``DELTAMERGE_SLOW=1``: the slow tier (the benchmark's smoke run; on S3, the example project and
# every fixture table, beside ``make test``'s sample).
SLOW = os.environ.get("DELTAMERGE_SLOW") == "1"
