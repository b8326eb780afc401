"""A dbt model contract (``contract: {enforced: true}``) as Delta constraints (pure).

``not_null`` (column- or model-level) becomes a non-nullable column (Delta's NOT NULL invariant)
and ``check`` a CHECK constraint (``delta.constraints.<name>``), enforced by every write to the
table (``delta/data/constraints.py``). ``primary_key``, ``foreign_key`` and ``unique`` are
informational, as on Databricks: listed for a warning, not enforced. A check without a name gets
one from its column and expression (``check_<column>_<hash>``), stable across runs, so a later run
adds exactly the checks the contract gained and drops those it lost. The checks a contract made
are recorded in the table property ``deltamerge.contract.checks``: a later run drops only those,
never a constraint another writer added.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.config_values import SpecError

OWNED_CHECKS = "deltamerge.contract.checks"
_INFORMATIONAL = ("primary_key", "foreign_key", "unique")


@dataclass(frozen=True)
class ModelContract:
    """The enforced contract's NOT NULL columns, CHECK constraints and informational constraints."""

    not_null: tuple[str, ...] = ()
    checks: tuple[tuple[str, str], ...] = ()
    informational: tuple[str, ...] = ()

    @classmethod
    def from_node(
        cls, model: str, columns: Mapping[str, Any], constraints: Sequence[Mapping[str, Any]]
    ) -> ModelContract:
        """The contract of a model node's ``columns`` and model-level ``constraints``.

        >>> c = ModelContract.from_node("m", {"id": {"name": "id", "constraints": [
        ...     {"type": "not_null"}, {"type": "check", "expression": "id > 0", "name": "positive"},
        ...     {"type": "primary_key"}]}}, [{"type": "unique", "columns": ["id"]}])
        >>> c.not_null, c.checks, c.informational
        (('id',), (('positive', 'id > 0'),), ('primary_key (id)', 'unique (id)'))
        """
        problems: list[str] = []
        not_null: list[str] = []
        checks: list[tuple[str, str]] = []
        informational: list[str] = []
        entries: list[tuple[str | None, Mapping[str, Any]]] = [
            (str(column.get("name") or key), constraint)
            for key, column in columns.items()
            for constraint in column.get("constraints") or []
        ]
        entries += [(None, constraint) for constraint in constraints]
        for column, constraint in entries:
            kind = str(constraint.get("type", "")).lower()
            targets = [column] if column else [str(c) for c in constraint.get("columns") or []]
            if kind == "not_null":
                not_null.extend(targets)
            elif kind == "check":
                expression = str(constraint.get("expression") or "").strip()
                if not expression:
                    problems.append(f"a check constraint{_on(targets)} has no expression")
                    continue
                checks.append((check_name(constraint.get("name"), targets, expression), expression))
            elif kind in _INFORMATIONAL:
                informational.append(f"{kind} ({', '.join(targets)})")
            elif kind == "custom":
                continue  # dbt warns: not supported by this adapter (CONSTRAINT_SUPPORT)
            else:
                problems.append(f"constraint type '{kind}'{_on(targets)} is not supported on Delta tables")
        names = [n.lower() for n, _ in checks]
        problems.extend(
            f"two check constraints are named '{n}'" for n in sorted(set(names)) if names.count(n) > 1
        )
        if problems:
            raise SpecError(model, problems, what="contract")
        return cls(tuple(dict.fromkeys(not_null)), tuple(checks), tuple(informational))

    def definition(self, schema: T.StructType) -> T.StructType:
        """``schema`` (the model's result) with the contract's nullability."""
        required = {c.lower() for c in self.not_null}
        return T.StructType(
            [T.StructField(f.name, f.dataType, f.name.lower() not in required) for f in schema.fields]
        )

    def properties(self) -> dict[str, str]:
        """The table properties of a new table under this contract (its checks, and which they are)."""
        found = {f"delta.constraints.{name.lower()}": expression for name, expression in self.checks}
        if self.checks:
            found[OWNED_CHECKS] = ",".join(name.lower() for name, _ in self.checks)
        return found


@dataclass(frozen=True)
class ContractChange:
    """What an existing table's definition needs to match a contract: CHECK constraints to add
    (name -> expression), to drop, columns whose nullability changes, and the new properties."""

    add: dict[str, str]
    drop: tuple[str, ...]
    nullable: dict[str, bool]
    # The new value of the property recording the contract's checks (None: no checks).
    owned: str | None

    def __bool__(self) -> bool:
        return bool(self.add or self.drop or self.nullable)

    def properties(self, configuration: Mapping[str, str]) -> dict[str, str]:
        """``configuration`` after the change."""
        dropped = {f"delta.constraints.{n}" for n in self.drop} | {OWNED_CHECKS}
        found = {k: v for k, v in configuration.items() if k not in dropped}
        found.update({f"delta.constraints.{n}": e for n, e in self.add.items()})
        if self.owned:
            found[OWNED_CHECKS] = self.owned
        return found


def contract_change(
    contract: ModelContract, configuration: Mapping[str, str], schema: T.StructType
) -> ContractChange:
    """The change bringing a table (``configuration``, ``schema``) to ``contract``.

    >>> s = T.StructType([T.StructField("id", T.LongType(), True), T.StructField("v", T.LongType(), False)])
    >>> old = {"delta.constraints.a": "id > 0", OWNED_CHECKS: "a", "delta.constraints.theirs": "v > 0"}
    >>> c = contract_change(ModelContract(("id",), (("b", "id > 1"),)), old, s)
    >>> c.add, c.drop, c.nullable
    ({'b': 'id > 1'}, ('a',), {'id': False, 'v': True})
    """
    owned = [n for n in str(configuration.get(OWNED_CHECKS, "")).split(",") if n]
    wanted = {name.lower(): expression for name, expression in contract.checks}
    add = {
        name: expression
        for name, expression in wanted.items()
        if configuration.get(f"delta.constraints.{name}") != expression
    }
    drop = [n for n in owned if n not in wanted or n in add]
    drop += [n for n in add if f"delta.constraints.{n}" in configuration and n not in drop]
    required = {c.lower() for c in contract.not_null}
    nullable = {
        f.name: f.name.lower() not in required
        for f in schema.fields
        if f.nullable != (f.name.lower() not in required)
    }
    return ContractChange(add, tuple(drop), nullable, contract.properties().get(OWNED_CHECKS))


def check_name(name: object, columns: Sequence[str], expression: str) -> str:
    """A check's name: its own, else one made of its column and expression.

    >>> check_name(None, ["id"], "id > 0"), check_name("Positive", [], "id > 0")
    ('check_id_367a3353', 'Positive')
    """
    if name:
        return str(name)
    digest = hashlib.sha1(expression.encode()).hexdigest()[:8]
    where = re.sub(r"\W+", "_", "_".join(columns)).strip("_").lower() or "model"
    return f"check_{where}_{digest}"


def _on(columns: Sequence[str]) -> str:
    return f" on {', '.join(columns)}" if columns else ""
