"""``ALTER TABLE`` statements on a Delta table's constraints and column definitions, parsed (pure).

``ADD CONSTRAINT name CHECK (expr)``, ``DROP CONSTRAINT [IF EXISTS] name``,
``ALTER COLUMN c SET NOT NULL`` / ``DROP NOT NULL``, ``ALTER COLUMN c SET DEFAULT expr`` /
``DROP DEFAULT``.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.deltamerge.statements.parse.dml import StatementParseError, sql_of, table_parts


@dataclass(frozen=True)
class AddConstraintStatement:
    """``ALTER TABLE t ADD CONSTRAINT name CHECK (expression)``."""

    parts: tuple[str, ...]
    name: str
    expression: str


@dataclass(frozen=True)
class DropConstraintStatement:
    """``ALTER TABLE t DROP CONSTRAINT [IF EXISTS] name``."""

    parts: tuple[str, ...]
    name: str
    if_exists: bool


@dataclass(frozen=True)
class AlterColumnStatement:
    """``ALTER TABLE t ALTER COLUMN c`` setting or dropping NOT NULL or a default."""

    parts: tuple[str, ...]
    column: str
    # True: SET NOT NULL, False: DROP NOT NULL, None: unchanged.
    not_null: bool | None = None
    # The new default's SQL; "" drops it; None: unchanged.
    default: str | None = None


AlterStatement = AddConstraintStatement | DropConstraintStatement | AlterColumnStatement


def parse_alter(tree: exp.Alter) -> AlterStatement | None:
    """The constraint or column ALTER ``tree`` is, or None (another ALTER).

    >>> import sqlglot
    >>> parse_alter(sqlglot.parse_one("alter table s.t add constraint pos check (id > 0)", dialect="spark"))
    AddConstraintStatement(parts=('s', 't'), name='pos', expression='id > 0')
    >>> parse_alter(sqlglot.parse_one("alter table t alter column c set not null", dialect="spark"))
    AlterColumnStatement(parts=('t',), column='c', not_null=True, default=None)
    """
    if len(tree.actions) != 1:
        return None
    parts, action = table_parts(tree.this), tree.actions[0]
    if isinstance(action, exp.AddConstraint):
        constraint = action.expressions[0] if len(action.expressions) == 1 else None
        checks = (
            [e for e in constraint.expressions if isinstance(e, exp.CheckColumnConstraint)]
            if constraint
            else []
        )
        if constraint is None or len(checks) != 1:
            raise StatementParseError(
                f"ALTER TABLE ... {sql_of(action)}: Delta tables take `ADD CONSTRAINT name CHECK (expr)`"
            )
        return AddConstraintStatement(parts, constraint.name, sql_of(checks[0].this))
    if isinstance(action, exp.Drop) and str(action.args.get("kind", "")).upper() == "CONSTRAINT":
        names = action.args.get("tables") or []
        return DropConstraintStatement(parts, names[0].name, bool(action.args.get("exists")))
    if isinstance(action, exp.AlterColumn) and action.args.get("dtype") is None:
        column = action.this.name
        if "allow_null" in action.args and action.args["allow_null"] is not None:
            return AlterColumnStatement(parts, column, not_null=not action.args["allow_null"])
        if action.args.get("default") is not None:
            return AlterColumnStatement(parts, column, default=sql_of(action.args["default"]))
        if action.args.get("drop"):
            return AlterColumnStatement(parts, column, default="")
    return None
