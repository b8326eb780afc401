"""Struct values in a merge's assignments, as Delta builds them (pure SQL text, no Spark).

- ``by_name``: a value assigned to a column of struct type (or an array or map of structs) takes
  its fields **by name**, not by position (Delta's ``castIfNeeded`` with
  ``resolveMergeUpdateStructsByName``, on by default): a source struct ``{b, a}`` fills the target's
  ``{a, b}``. A source field the target lacks, or (without schema evolution) a target field the
  source lacks, fails with ``DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION``; with schema evolution a
  missing field is null, or keeps the row's value where an ``UPDATE *`` preserves it. A null
  source struct stays null (``preserveNullSourceStructs``, on by default).
- ``nested_update``: assignments to fields (``SET value.b = 'x'``) rebuild the column as a
  ``named_struct`` of the assigned fields and the row's other fields (Delta's
  ``generateUpdateExpressions``); assigning a field and its parent, or the same field twice, is
  Delta's ``DELTA_CONFLICT_SET_COLUMN``; a field of a non-struct is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import types as T

from dbt.adapters.deltamerge.common.sql import quote_identifier, string_literal, type_sql
from dbt.adapters.deltamerge.delta.log import can_write


class AssignmentError(ValueError):
    """An assignment Delta refuses (its error class leads the message)."""


def by_name(
    sql: str,
    source: T.DataType,
    target: T.DataType,
    *,
    missing_allowed: bool,
    kept: str | None = None,
    depth: int = 0,
) -> str:
    """``sql`` (of type ``source``) as a value of ``target``, struct fields matched by name.

    ``kept``: SQL of the row's stored value, whose fields the target has and the source lacks
    stay (``UPDATE *`` with schema evolution); otherwise they are null.

    >>> a_b = T.StructType([T.StructField("a", T.IntegerType()), T.StructField("b", T.StringType())])
    >>> b_a = T.StructType([T.StructField("b", T.StringType()), T.StructField("a", T.IntegerType())])
    >>> by_name("s.v", b_a, a_b, missing_allowed=False)
    "IF((s.v) IS NULL, NULL, named_struct('a', (s.v).`a`, 'b', (s.v).`b`))"
    >>> by_name("s.v", a_b, a_b, missing_allowed=False)
    's.v'
    """
    if isinstance(source, T.NullType) or _same(source, target):
        return sql
    if isinstance(source, T.StructType) and isinstance(target, T.StructType):
        return _struct(sql, source, target, missing_allowed=missing_allowed, kept=kept, depth=depth)
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType) and _has_struct(target):
        var = f"_merge_e{depth}"
        inner = by_name(
            var, source.elementType, target.elementType, missing_allowed=missing_allowed, depth=depth + 1
        )
        return f"transform({sql}, {var} -> {inner})"
    if isinstance(source, T.MapType) and isinstance(target, T.MapType) and _has_struct(target):
        key, value = f"_merge_k{depth}", f"_merge_v{depth}"
        keys = by_name(key, source.keyType, target.keyType, missing_allowed=missing_allowed, depth=depth + 1)
        values = by_name(
            value, source.valueType, target.valueType, missing_allowed=missing_allowed, depth=depth + 1
        )
        if keys != key:  # a struct key by name too (Delta evolves and matches map keys as values)
            sql = f"transform_keys({sql}, ({key}, {value}) -> {keys})"
        return sql if values == value else f"transform_values({sql}, ({key}, {value}) -> {values})"
    if type(source) is not type(target) and _has_struct(target):  # no cast makes a struct of it
        raise AssignmentError(_cast_mismatch(sql, source, target))
    if isinstance(target, T.StringType):  # Delta casts any value to a string, a struct as "{1, x}"
        return assigned_cast(sql, source, target)
    if _has_struct(source) or _has_struct(target):
        raise AssignmentError(_mismatch(source, target))
    if source != target and not can_write(source, target):
        return assigned_cast(sql, source, target)
    if source != target and depth > 0:
        return f"CAST({sql} AS {target.simpleString()})"
    return sql


def assigned_cast(sql: str, source: T.DataType, target: T.DataType) -> str:
    """``sql`` (of type ``source``) cast to ``target`` as Delta casts an assigned value: Spark's ANSI
    cast, whatever ``spark.sql.ansi.enabled`` says (dbt-spark keeps it off). A value that does not
    convert (``'a'`` into an int, an overflow), at any depth of an array or map, fails the
    statement, never becomes a silent null; a pair of types Spark cannot cast fails its analysis.

    >>> assigned_cast("s.v", T.StringType(), T.IntegerType())  # doctest: +ELLIPSIS
    "CASE WHEN ((s.v) IS NOT NULL AND try_cast((s.v) AS int) IS NULL) THEN raise_error('...') ELSE ..."
    """
    cast = f"try_cast(({sql}) AS {target.simpleString()})"
    message = string_literal(
        f"[CAST_INVALID_INPUT] a value of {sql} ({source.simpleString()}) cannot be cast to "
        f"{target.simpleString()}: it does not parse or does not fit; nothing was written"
    )
    return (
        f"CASE WHEN {_lost(f'({sql})', cast, source, target, 0)} THEN raise_error({message}) ELSE {cast} END"
    )


def _lost(value: str, cast: str, source: T.DataType, target: T.DataType, depth: int) -> str:
    """SQL true where ``cast`` (``try_cast(value)``) lost a value ``value`` had, at any depth."""
    here = f"({value} IS NOT NULL AND {cast} IS NULL)"
    pairs: list[tuple[str, str, T.DataType, T.DataType]] = []
    if isinstance(source, T.ArrayType) and isinstance(target, T.ArrayType):
        pairs = [(value, cast, source.elementType, target.elementType)]
    elif isinstance(source, T.MapType) and isinstance(target, T.MapType):
        pairs = [
            (f"map_keys({value})", f"map_keys({cast})", source.keyType, target.keyType),
            (f"map_values({value})", f"map_values({cast})", source.valueType, target.valueType),
        ]
    if not pairs:
        return here
    x, y, lost = f"_cast_x{depth}", f"_cast_y{depth}", f"_cast_l{depth}"
    inner = [
        f"exists(zip_with({v}, {c}, ({x}, {y}) -> {_lost(x, y, s, t, depth + 1)}), {lost} -> {lost})"
        for v, c, s, t in pairs
    ]
    return f"({here} OR ({value} IS NOT NULL AND ({' OR '.join(inner)})))"


def _struct(
    sql: str,
    source: T.StructType,
    target: T.StructType,
    *,
    missing_allowed: bool,
    kept: str | None,
    depth: int,
) -> str:
    names = {f.name.lower(): f for f in source.fields}
    targets = {f.name.lower() for f in target.fields}
    if any(name not in targets for name in names) or (
        len(source.fields) != len(target.fields) and not missing_allowed
    ):
        raise AssignmentError(_mismatch(source, target))
    kept_names = set()
    parts = []
    for field in target.fields:
        found = names.get(field.name.lower())
        if found is None:
            value = "NULL" if kept is None else f"({kept}).{quote_identifier(field.name)}"
            kept_names.add(field.name)
            value = f"CAST({value} AS {field.dataType.simpleString()})"
        else:
            inner_kept = f"({kept}).{quote_identifier(field.name)}" if kept is not None else None
            value = by_name(
                f"({sql}).{quote_identifier(found.name)}",
                found.dataType,
                field.dataType,
                missing_allowed=missing_allowed,
                kept=inner_kept if isinstance(field.dataType, T.StructType) and kept is not None else None,
                depth=depth + 1,
            )
        parts += [string_literal(field.name), value]
    built = f"named_struct({', '.join(parts)})"
    null = f"({sql}) IS NULL" + (f" AND ({kept}) IS NULL" if kept is not None and kept_names else "")
    return f"IF({null}, NULL, {built})"


def _cast_mismatch(sql: str, source: T.DataType, target: T.DataType) -> str:
    """Spark's refusal of the cast Delta makes between types of different kinds (a string into a
    struct: ``MergeIntoSuiteBase`` "assigning simple type to struct field").

    >>> print(_cast_mismatch("'x'", T.StringType(), T.StructType([T.StructField("x", T.IntegerType())])))
    [DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] Cannot resolve "CAST('x' AS STRUCT<`x`: INT>)" due to data \
type mismatch: cannot cast "STRING" to "STRUCT<`x`: INT>".
    """
    to = type_sql(target)
    return (
        f'[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] Cannot resolve "CAST({sql} AS {to})" due to data '
        f'type mismatch: cannot cast "{type_sql(source)}" to "{to}".'
    )


def _mismatch(source: T.DataType, target: T.DataType) -> str:
    return (
        f"[DELTA_UPDATE_SCHEMA_MISMATCH_EXPRESSION] Cannot cast {source.simpleString()} to "
        f"{target.simpleString()}. All nested columns must match."
    )


def _same(a: T.DataType, b: T.DataType) -> bool:
    """Equal but for the case of field names and nullability (no conversion needed)."""
    if isinstance(a, T.StructType) and isinstance(b, T.StructType):
        return len(a.fields) == len(b.fields) and all(
            x.name.lower() == y.name.lower() and _same(x.dataType, y.dataType)
            for x, y in zip(a.fields, b.fields, strict=True)
        )
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return _same(a.elementType, b.elementType)
    if isinstance(a, T.MapType) and isinstance(b, T.MapType):
        return _same(a.keyType, b.keyType) and _same(a.valueType, b.valueType)
    return a == b


def _has_struct(data_type: T.DataType) -> bool:
    if isinstance(data_type, T.StructType):
        return True
    if isinstance(data_type, T.ArrayType):
        return _has_struct(data_type.elementType)
    if isinstance(data_type, T.MapType):
        return _has_struct(data_type.keyType) or _has_struct(data_type.valueType)
    return False


def nested_update(
    stored: str,
    column: T.StructField,
    assigned: Sequence[tuple[tuple[str, ...], str, T.DataType | None]],
    *,
    missing_allowed: bool,
) -> str:
    """The new value of ``column`` given its assignments: ``(path below the column (empty: the whole
    column), SQL, the SQL's type or None)``; ``stored`` is SQL of the row's value.

    >>> v = T.StructField("v", T.StructType([T.StructField("a", T.IntegerType()),
    ...     T.StructField("b", T.StringType())]))
    >>> nested_update("t.v", v, [(("b",), "'x'", T.StringType())], missing_allowed=False)
    "named_struct('a', (t.v).`a`, 'b', 'x')"
    """
    return _value(stored, column.dataType, list(assigned), [column.name], missing_allowed)


def _value(
    stored: str,
    data_type: T.DataType,
    assigned: list[tuple[tuple[str, ...], str, T.DataType | None]],
    at: list[str],
    missing_allowed: bool,
) -> str:
    """One column's or field's value: assigned whole, rebuilt around assigned fields, or as stored."""
    whole = [(sql, t) for p, sql, t in assigned if not p]
    if whole and len(assigned) > 1:
        listed = ", ".join("`" + ".".join([*at, *p]) + "`" for p, _, _ in assigned)
        raise AssignmentError(
            f"[DELTA_CONFLICT_SET_COLUMN] There is a conflict from these SET columns: [{listed}]."
        )
    if whole:
        sql, source_type = whole[0]
        return (
            sql
            if source_type is None
            else by_name(sql, source_type, data_type, missing_allowed=missing_allowed)
        )
    return _rebuild(stored, data_type, assigned, at, missing_allowed) if assigned else stored


def field_not_found(name: str, struct: T.StructType) -> str:
    """Spark's error for a field ``struct`` lacks.

    >>> field_not_found("b", T.StructType([T.StructField("a", T.IntegerType())]))
    '[FIELD_NOT_FOUND] No such struct field `b` in `a`.'
    """
    fields = ", ".join(quote_identifier(f.name) for f in struct.fields)
    return f"[FIELD_NOT_FOUND] No such struct field {quote_identifier(name)} in {fields}."


def _rebuild(
    stored: str,
    data_type: T.DataType,
    assigned: list[tuple[tuple[str, ...], str, T.DataType | None]],
    at: list[str],
    missing_allowed: bool,
) -> str:
    if not isinstance(data_type, T.StructType):
        raise AssignmentError(
            "[DELTA_UNSUPPORTED_FIELD_UPDATE_NON_STRUCT] Updating nested fields is only supported for "
            f"StructType, but you are trying to update a field of `{'.'.join(at)}`, which is of type: "
            f"{data_type.simpleString()}."
        )
    fields = {f.name.lower(): f for f in data_type.fields}
    for path, _, _ in assigned:
        if path[0].lower() not in fields:
            raise AssignmentError(field_not_found(path[0], data_type))
    parts = []
    for field in data_type.fields:
        mine = [(p[1:], sql, t) for p, sql, t in assigned if p[0].lower() == field.name.lower()]
        inner = f"({stored}).{quote_identifier(field.name)}"
        parts += [
            string_literal(field.name),
            _value(inner, field.dataType, mine, [*at, field.name], missing_allowed),
        ]
    return f"named_struct({', '.join(parts)})"
