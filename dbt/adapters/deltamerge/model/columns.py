"""Columns a model's config declares for its Delta table: generated, identity and default columns.

``generated_columns={'event_date': 'CAST(event_ts AS DATE)'}`` (Delta's ``GENERATED ALWAYS AS``),
``identity_columns={'id': {'start': 1, 'step': 1, 'generated': 'always'}}`` (``'by default'``
lets a write give values), ``column_defaults={'status': "'new'"}``. They take effect when the
table is created (a table model's every run, an incremental model's first or full-refresh run);
a column the model's SQL leaves out is added, computed by every later write (``column_values``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.delta.data import CURRENT_DEFAULT, GENERATION_EXPRESSION
from dbt.adapters.deltamerge.delta.log import find_field
from dbt.adapters.deltamerge.delta.log import metadata as identity_metadata
from dbt.adapters.deltamerge.model.keys import KEYS


@dataclass(frozen=True)
class ColumnDeclarations:
    """The model's declared columns: name -> column metadata Delta keeps (and the identity ones)."""

    metadata: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any]) -> ColumnDeclarations:
        """Read ``generated_columns``, ``identity_columns`` and ``column_defaults``; one SpecError.

        >>> declared = ColumnDeclarations.from_config("m", {"identity_columns": {"id": {"start": 10}}})
        >>> declared.metadata["id"]["delta.identity.start"], declared.metadata["id"]["delta.identity.step"]
        (10, 1)
        """
        problems: list[str] = []
        found: dict[str, dict[str, object]] = {}

        def declare(key: str, column: str, metadata: dict[str, object]) -> None:
            if column.lower() in {c.lower() for c in found}:
                problems.append(
                    f"{key}: column `{column}` is declared twice (generated, identity or default)"
                )
            found[column] = metadata

        def read(key: str) -> Mapping[str, Any]:
            value = KEYS[key].read(config, key, [])  # a wrong kind is named by ``key_problems``
            return value if isinstance(value, Mapping) else {}

        for column, expression in read("generated_columns").items():
            if not isinstance(expression, str) or not expression.strip():
                problems.append(f"generated_columns: `{column}` needs a SQL expression, got {expression!r}")
            else:
                declare("generated_columns", column, {GENERATION_EXPRESSION: expression.strip()})
        for column, default in read("column_defaults").items():
            if not isinstance(default, (str, int, float, bool)):
                problems.append(f"column_defaults: `{column}` needs a SQL expression, got {default!r}")
            else:
                declare("column_defaults", column, {CURRENT_DEFAULT: str(default)})
        for column, spec in read("identity_columns").items():
            metadata = _identity(column, spec, problems)
            if metadata is not None:
                declare("identity_columns", column, metadata)
        if problems:
            raise SpecError(model, problems)
        return cls(found)

    def definition(self, df: DataFrame, base: T.StructType) -> T.StructType:
        """``base`` (the model's result, with the contract's nullability) with the declared
        columns' metadata, and the declared columns the result lacks (their types from their
        expressions; identity columns are BIGINT)."""
        fields = [
            T.StructField(f.name, f.dataType, f.nullable, {**f.metadata, **(self._of(f.name) or {})})
            for f in base.fields
        ]
        for column, metadata in self.metadata.items():
            if find_field(base, column) is not None:
                continue
            expression = metadata.get(GENERATION_EXPRESSION) or metadata.get(CURRENT_DEFAULT)
            dtype = (
                T.LongType()
                if expression is None
                else df.selectExpr(f"({expression}) AS c").schema[0].dataType
            )
            fields.append(T.StructField(column, dtype, True, dict(metadata)))
        return T.StructType(fields)

    def _of(self, name: str) -> Mapping[str, object] | None:
        return next((m for c, m in self.metadata.items() if c.lower() == name.lower()), None)

    def __bool__(self) -> bool:
        return bool(self.metadata)


def _identity(column: str, spec: object, problems: list[str]) -> dict[str, object] | None:
    if not isinstance(spec, Mapping):
        spec = {}
    unknown = sorted(set(spec) - {"start", "step", "generated"})
    start, step, generated = spec.get("start", 1), spec.get("step", 1), str(spec.get("generated", "always"))
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in (start, step))
    wrong = unknown or not integers or step == 0
    if wrong or generated.lower() not in ("always", "by default"):
        problems.append(
            f"identity_columns: `{column}` takes {{start: <int>, step: <non-zero int>, "
            f"generated: 'always' | 'by default'}}, got {spec!r}"
        )
        return None
    return identity_metadata(int(start), int(step), always=generated.lower() == "always")
