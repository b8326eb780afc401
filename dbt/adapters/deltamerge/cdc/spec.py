"""A CDC apply model's config -> a validated ``CdcSpec``, with no Spark.

``sequence_by`` turns a ``delta_merge`` model into CDC apply (``docs/configuration.md``, "CDC
apply"). The keys are those of Databricks' ``create_auto_cdc_flow``. Every problem is collected and
raised as one ``SpecError`` naming the model and the keys; column checks against the model's result
(``stored_columns``) happen before anything is read or written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dbt.adapters.deltamerge.common.config_values import SpecError, choice, flag, names, number, sql_text
from dbt.adapters.deltamerge.merge import SHORTHANDS

START_AT, END_AT = "__START_AT", "__END_AT"
# Keys that describe clauses: CDC apply builds its own, so they cannot be combined with it.
_CLAUSE_KEYS = (
    "when_matched",
    "when_not_matched",
    "when_not_matched_by_source",
    "merge_condition",
    *(key for keys in SHORTHANDS.values() for key in keys),
)
# Hours a tombstone (a deleted key's last sequence) is kept: a delete older than this no longer
# shields its key from an older event that arrives even later.
DEFAULT_TOMBSTONE_RETENTION_HOURS = 168.0


@dataclass(frozen=True)
class CdcSpec:
    """The validated CDC apply config of one model."""

    model: str
    keys: tuple[str, ...]
    sequence_by: tuple[str, ...]
    apply_as_deletes: str | None = None
    apply_as_truncates: str | None = None
    ignore_null_updates: bool = False
    column_list: tuple[str, ...] | None = None
    except_column_list: tuple[str, ...] = ()
    scd_type: Literal[1, 2] = 1
    track_history_column_list: tuple[str, ...] | None = None
    track_history_except_column_list: tuple[str, ...] = ()
    tombstone_retention_hours: float = DEFAULT_TOMBSTONE_RETENTION_HOURS
    # ``deletion_vectors: false``: the apply's merges rewrite files even where the table takes vectors.
    copy_on_write: bool = False

    @staticmethod
    def applies(config: Mapping[str, Any]) -> bool:
        """Whether ``config`` asks for CDC apply (it has ``sequence_by``, even an empty or wrong one)."""
        return config.get("sequence_by") is not None

    @classmethod
    def from_config(cls, model: str, config: Mapping[str, Any]) -> CdcSpec:
        """Parse a model's config, every key before any decision; one SpecError lists every problem."""
        problems: list[str] = [
            f"`sequence_by` (CDC apply) and `{key}` cannot be combined: CDC apply builds its "
            f"own clauses from the events; remove `{key}`, or remove `sequence_by` for a plain merge"
            for key in _CLAUSE_KEYS
            if config.get(key) is not None
        ]
        keys = names(config.get("unique_key"), "unique_key", problems)
        if not keys:
            problems.append("CDC apply needs `unique_key`: the column(s) that identify a row's key")
        sequence = names(config.get("sequence_by"), "sequence_by", problems)
        if not sequence and config.get("sequence_by") is not None:
            problems.append("sequence_by must name at least one column (the order of the events)")
        scd = choice(config.get("stored_as_scd_type"), "stored_as_scd_type", (1, 2), problems)
        scd_type: Literal[1, 2] = 2 if str(scd) == "2" else 1
        deletes, truncates = (
            sql_text(config.get(key), key, problems, what="a SQL condition over the source row")
            for key in ("apply_as_deletes", "apply_as_truncates")
        )
        if truncates is not None and scd_type == 2:
            problems.append(
                "apply_as_truncates is supported only with stored_as_scd_type 1 (a truncate would erase "
                "SCD 2 history); remove apply_as_truncates or store as SCD type 1"
            )
        columns, except_columns, track, track_except = _column_lists(config, keys, scd_type, problems)
        retention = number(
            config.get("tombstone_retention_hours"),
            "tombstone_retention_hours",
            problems,
            what="a number of hours >= 0",
        )
        ignore_nulls = flag(config, "ignore_null_updates", problems)
        if problems:
            raise SpecError(model, problems)
        return cls(
            model=model,
            keys=keys,
            sequence_by=sequence,
            apply_as_deletes=deletes,
            apply_as_truncates=truncates,
            ignore_null_updates=ignore_nulls,
            column_list=columns,
            except_column_list=except_columns,
            scd_type=scd_type,
            track_history_column_list=track,
            track_history_except_column_list=track_except,
            tombstone_retention_hours=DEFAULT_TOMBSTONE_RETENTION_HOURS if retention is None else retention,
            copy_on_write=config.get("deletion_vectors") is False,
        )

    def stored_columns(self, source_columns: Sequence[str]) -> tuple[str, ...]:
        """The source columns the table stores, in the source's order; SpecError naming unknown ones.

        >>> spec = CdcSpec("m", ("id",), ("ts",), except_column_list=("op", "ts"))
        >>> spec.stored_columns(["id", "op", "ts", "name"])
        ('id', 'name')
        >>> CdcSpec("m", ("id",), ("ts",), column_list=("name",)).stored_columns(["id", "ts", "name"])
        ('id', 'name')
        """
        by_lower = {c.lower(): c for c in source_columns}
        problems = [
            f"`{key}` ({what}) is not a column of the model's result (columns: {list(source_columns)})"
            for what, names in (
                ("unique_key", self.keys),
                ("sequence_by", self.sequence_by),
                ("column_list", self.column_list or ()),
                ("except_column_list", self.except_column_list),
                ("track_history_column_list", self.track_history_column_list or ()),
                ("track_history_except_column_list", self.track_history_except_column_list),
            )
            for key in names
            if key.lower() not in by_lower
        ]
        reserved = [c for c in source_columns if c.upper() in (START_AT, END_AT) or c.startswith("__cdc_")]
        if reserved:
            problems.append(f"the model's result may not have the columns {reserved} (CDC apply writes them)")
        if problems:
            raise SpecError(self.model, problems)
        if self.column_list is not None:
            wanted = {c.lower() for c in (*self.keys, *self.column_list)}
        else:
            wanted = {c.lower() for c in source_columns} - {c.lower() for c in self.except_column_list}
        return tuple(c for c in source_columns if c.lower() in wanted)

    def tracked_columns(self, stored: Sequence[str]) -> tuple[str, ...]:
        """SCD 2: the stored columns whose change opens a new version (default: all but the keys).

        >>> CdcSpec("m", ("id",), ("ts",), scd_type=2).tracked_columns(["id", "a", "b"])
        ('a', 'b')
        """
        keys = {k.lower() for k in self.keys}
        if self.track_history_column_list is not None:
            chosen = {c.lower() for c in self.track_history_column_list}
            return tuple(c for c in stored if c.lower() in chosen and c.lower() not in keys)
        skip = keys | {c.lower() for c in self.track_history_except_column_list}
        return tuple(c for c in stored if c.lower() not in skip)


def _column_lists(
    config: Mapping[str, Any], keys: tuple[str, ...], scd_type: int, problems: list[str]
) -> tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...] | None, tuple[str, ...]]:
    """``column_list``, ``except_column_list``, ``track_history_column_list`` and its except list."""

    def listed(key: str) -> tuple[str, ...] | None:
        return names(config.get(key), key, problems) if config.get(key) is not None else None

    columns, track = listed("column_list"), listed("track_history_column_list")
    except_columns = listed("except_column_list") or ()
    track_except = listed("track_history_except_column_list") or ()
    if columns is not None and except_columns:
        problems.append("give column_list or except_column_list, not both")
    problems.extend(
        f"except_column_list names the key `{key}`; keys are always stored"
        for key in keys
        if key.lower() in {c.lower() for c in except_columns}
    )
    if track is not None and track_except:
        problems.append("give track_history_column_list or track_history_except_column_list, not both")
    if (track is not None or track_except) and scd_type == 1:
        problems.append(
            "track_history_column_list and track_history_except_column_list need stored_as_scd_type 2"
        )
    return columns, except_columns, track, track_except
