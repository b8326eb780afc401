"""Which backend the functional tests run on; importable without side effects (spawned workers do)."""

from __future__ import annotations

import os

ON_CONNECT = os.environ.get("DELTAMERGE_TEST_BACKEND", "session") == "connect"
