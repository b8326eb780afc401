"""The one error boundary between the engine and dbt: every failure names the model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.deltamerge.common.config_values import SpecError


class ConfigError(DbtRuntimeError):
    """A model's config (or an operation's arguments) has problems, all listed: the engine's ``SpecError``."""

    def __init__(self, error: SpecError) -> None:
        self.model = error.model
        self.problems = error.problems
        super().__init__(str(error))


class ModelWriteError(DbtRuntimeError):
    """A Delta write of a model failed; the table is left at its previous version."""


def model_errors(model: str) -> AbstractContextManager[None]:
    """Turn engine and Spark errors into dbt errors that name ``model``."""
    return named_errors(f"Model '{model}'")


@contextmanager
def named_errors(subject: str) -> Iterator[None]:
    """Turn engine and Spark errors into dbt errors that start with ``subject``."""
    from pyspark.errors import PySparkException

    from dbt.adapters.deltamerge.delta.errors import DeltaError

    try:
        yield
    except DbtRuntimeError:
        raise
    except SpecError as exc:
        raise ConfigError(exc) from exc
    except DeltaError as exc:
        raise ModelWriteError(f"{subject}: {exc}") from exc
    except Exception as exc:
        if not isinstance(exc, PySparkException) and not _unconverted_java_error(exc):
            raise
        text = str(exc)
        hint = OUT_OF_MEMORY_HINT if "OutOfMemoryError" in text else ""
        message = f"{subject}: Spark failed; the table is unchanged.{hint}\n{_first_lines(text)}"
        raise ModelWriteError(message) from exc


OUT_OF_MEMORY_HINT = (
    " Spark ran out of memory: raise `spark.driver.memory` in the profile's `server_side_parameters`"
    " (the embedded session's heap; by default a quarter of the machine's memory), and"
    " `spark.executor.memory` with a cluster `spark.master`; with `method: connect`, the server's."
)


def _unconverted_java_error(exc: Exception) -> bool:
    # A JVM exception PySpark does not map to its own classes (embedded sessions only);
    # matched by name so that the package needs no JVM bridge import.
    return type(exc).__name__ == "Py4JJavaError"


def _first_lines(text: str, count: int = 12) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:count])
