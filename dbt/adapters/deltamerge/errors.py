"""The one error boundary between the engine and dbt: every failure names the model.

It knows whether a commit landed (``delta/ledger.py``): a failure after one says which version was
committed and which step did not happen, never "the table is unchanged". A row that violates a
table's constraints is the data's fault, said with Delta's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.common.errors import EngineError
from dbt.adapters.deltamerge.spark import lifeline
from dbt.adapters.deltamerge.spark.progress import working_on


class ConfigError(DbtRuntimeError):
    """A model's config (or an operation's arguments) has problems, all listed: the engine's ``SpecError``."""

    def __init__(self, error: SpecError) -> None:
        self.model = error.model
        self.problems = error.problems
        super().__init__(str(error))


class ModelWriteError(DbtRuntimeError):
    """A Delta write of a model (or a statement) failed; its text says whether a version was committed."""


def model_errors(model: str) -> AbstractContextManager[None]:
    """Turn engine and Spark errors into dbt errors that name ``model``."""
    return named_errors(f"Model '{model}'")


@contextmanager
def named_errors(subject: str) -> Iterator[None]:
    """Turn engine and Spark errors into dbt errors that start with ``subject``."""
    from pyspark.errors import PySparkException

    from dbt.adapters.deltamerge.delta import describe, ledger

    try:
        with ledger() as done, working_on(subject):
            yield
        if done.notices:  # what a step after a commit left undone (the write stands): an error still
            raise ModelWriteError(f"{subject}: " + "\n".join(done.notices))
    except DbtRuntimeError:
        raise
    except SpecError as exc:
        raise ConfigError(exc) from exc
    except Exception as exc:
        text = str(exc)
        lost = lifeline.lost(exc)  # the warm local server died or was stopped: said in one line
        if lost is not None:
            landed = f"{describe(done)}\n" if done.committed else ""
            raise ModelWriteError(f"{subject}: {landed}{lost}") from exc
        if done.committed:  # whatever failed, after a commit: say what landed
            raise ModelWriteError(f"{subject}: {describe(done)}\n{_first_lines(text)}") from exc
        if isinstance(exc, EngineError):
            raise ModelWriteError(f"{subject}: {exc}") from exc
        if not isinstance(exc, PySparkException) and not _unconverted_java_error(exc):
            raise
        violation = constraint_violation(text)
        if violation is not None:
            message = f"{subject}: {VIOLATION_HEAD}\n{violation}"
        else:
            hint = OUT_OF_MEMORY_HINT if "OutOfMemoryError" in text else ""
            cause = deepest_cause(_stack_trace(exc))
            because = f"\nCaused by: {cause}" if cause and cause not in text else ""
            message = f"{subject}: Spark failed; the table is unchanged.{hint}\n{_first_lines(text)}{because}"
        raise ModelWriteError(message) from exc


VIOLATION_HEAD = "a row violates the table's constraints; nothing was committed."
_VIOLATIONS = re.compile(
    r"\[(?:DELTA_VIOLATE_CONSTRAINT_WITH_VALUES|DELTA_NOT_NULL_CONSTRAINT_VIOLATED)\]"
    r".*?(?=\s*SQLSTATE: |\n\s*\n|\Z)",
    re.S,
)


def constraint_violation(text: str) -> str | None:
    """Delta's text of a constraint violation raised inside a write's Spark job, if ``text`` holds one.

    >>> constraint_violation("[USER_RAISED_EXCEPTION] [DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL "
    ...     "constraint violated for column: id. SQLSTATE: P0001")
    '[DELTA_NOT_NULL_CONSTRAINT_VIOLATED] NOT NULL constraint violated for column: id.'
    >>> constraint_violation("[DIVIDE_BY_ZERO] Division by zero.") is None
    True
    """
    found = _VIOLATIONS.search(text)
    return found.group(0).strip() if found else None


OUT_OF_MEMORY_HINT = (
    " Spark ran out of memory: raise `spark.driver.memory` in the profile's `server_side_parameters`"
    " (the embedded session's heap; by default a quarter of the machine's memory), and"
    " `spark.executor.memory` with a cluster `spark.master`; with `method: connect`, the server's."
)


def deepest_cause(stack_trace: str) -> str | None:
    """The innermost cause of a JVM error's stack trace (a full disk is told only there: Spark's
    message is ``TASK_WRITE_FAILED``), or None without one.

    >>> deepest_cause("org.apache.spark.SparkException\\n\\tat x.y(Z.scala:1)\\n"
    ...     "Caused by: org.apache.hadoop.fs.FSError: java.io.IOException: No space left on device\\n"
    ...     "\\tat a.b(C.java:2)\\nCaused by: java.io.IOException: No space left on device\\n")
    'java.io.IOException: No space left on device'
    >>> deepest_cause("org.apache.spark.SparkException\\n\\tat x.y(Z.scala:1)") is None
    True
    """
    causes = [line.removeprefix("Caused by: ").strip() for line in stack_trace.splitlines()
              if line.startswith("Caused by: ")]  # fmt: skip
    return causes[-1] if causes else None


def _stack_trace(exc: Exception) -> str:
    # PySpark's exceptions carry the JVM's chain of causes (Spark Connect's too, fetched with the
    # error's details) even when their text leaves it out.
    try:
        return str(exc.getStackTrace() or "") if hasattr(exc, "getStackTrace") else ""
    except Exception:  # an exception's own accessor failing leaves its text as the only account
        return ""


def _unconverted_java_error(exc: Exception) -> bool:
    # A JVM exception PySpark does not map to its own classes (embedded sessions only);
    # matched by name so that the package needs no JVM bridge import.
    return type(exc).__name__ == "Py4JJavaError"


def _first_lines(text: str, count: int = 12) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:count])
