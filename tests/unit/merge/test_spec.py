"""Merge config -> clause set: Delta's rules, the contract's messages, the shorthands."""

from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.clauses import Assignment, MergeClause
from dbt.adapters.deltamerge.merge.spec import MergeBehaviour, MergeSpec

ONE_MATCHED = (
    "[NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION] When there are more than one MATCHED clauses in a MERGE "
    "statement, "
    "only the last MATCHED clause can omit the condition."
)


def problems(config: dict) -> list[str]:
    with pytest.raises(SpecError) as err:
        MergeSpec.from_config("orders", config)
    assert "Model 'orders'" in str(err.value)
    return err.value.problems


def test_defaults_are_an_upsert_on_a_null_safe_key():
    spec = MergeSpec.from_config("m", {"unique_key": ["id", "day"]})
    assert spec.on_condition == (
        "(`DBT_INTERNAL_DEST`.`id` <=> `DBT_INTERNAL_SOURCE`.`id`) AND "
        "(`DBT_INTERNAL_DEST`.`day` <=> `DBT_INTERNAL_SOURCE`.`day`)"
    )
    assert spec.matched == (MergeClause("matched", "update"),)
    assert spec.not_matched == (MergeClause("not_matched", "insert"),)
    assert spec.not_matched_by_source == ()
    assert spec.matched[0].is_star and not spec.is_insert_only


def test_contract_example_parses_in_order():
    spec = MergeSpec.from_config(
        "m",
        {
            "unique_key": "id",
            "when_matched": [
                {"condition": "DBT_INTERNAL_SOURCE.op = 'D'", "action": "delete"},
                {
                    "condition": "DBT_INTERNAL_SOURCE.ts > DBT_INTERNAL_DEST.ts",
                    "action": "update",
                    "set": "*",
                },
            ],
            "when_not_matched": [
                {"condition": "DBT_INTERNAL_SOURCE.op != 'D'", "action": "insert", "values": "*"}
            ],
            "when_not_matched_by_source": [
                {"condition": "DBT_INTERNAL_DEST.active", "action": "update", "set": {"active": "false"}}
            ],
            "incremental_predicates": ["DBT_INTERNAL_DEST.day >= '2026-01-01'"],
            "merge_with_schema_evolution": True,
        },
    )
    assert [c.action for c in spec.matched] == ["delete", "update"]
    assert spec.not_matched_by_source[0].assignments == (Assignment("active", "false"),)
    assert spec.on_condition.endswith("AND (DBT_INTERNAL_DEST.day >= '2026-01-01')")
    assert spec.schema_evolution and not spec.update_only_if_changed


def test_merge_condition_overrides_unique_key():
    spec = MergeSpec.from_config(
        "m", {"unique_key": "id", "merge_condition": "t.id = s.id", "source_alias": "s", "target_alias": "t"}
    )
    assert spec.on_condition == "t.id = s.id"


def test_empty_list_means_no_clause_of_that_kind():
    spec = MergeSpec.from_config("m", {"unique_key": "id", "when_matched": []})
    assert spec.is_insert_only
    only_delete = MergeSpec.from_config(
        "m", {"unique_key": "id", "when_matched": [{"action": "delete"}], "when_not_matched": []}
    )
    assert only_delete.is_matched_only and only_delete.is_only_one_unconditional_delete


def test_no_clause_at_all():
    assert problems({"unique_key": "id", "when_matched": [], "when_not_matched": []}) == [
        "[MERGE_WITHOUT_WHEN] There must be at least one WHEN clause in a MERGE statement."
    ]


@pytest.mark.parametrize(
    ("key", "name", "error_class", "action"),
    [
        ("when_matched", "MATCHED", "NON_LAST_MATCHED_CLAUSE_OMIT_CONDITION", "update"),
        (
            "when_not_matched",
            "NOT MATCHED [BY TARGET]",
            "NON_LAST_NOT_MATCHED_BY_TARGET_CLAUSE_OMIT_CONDITION",
            "insert",
        ),
        (
            "when_not_matched_by_source",
            "NOT MATCHED BY SOURCE",
            "NON_LAST_NOT_MATCHED_BY_SOURCE_CLAUSE_OMIT_CONDITION",
            "delete",
        ),
    ],
)
def test_only_the_last_clause_may_omit_its_condition(key, name, error_class, action):
    found = problems({"unique_key": "id", key: [{"action": action}, {"action": action, "condition": "true"}]})
    assert found == [
        f"[{error_class}] When there are more than one {name} clauses in a MERGE statement, "
        f"only the last {name} clause can omit the condition."
    ]


def test_every_problem_is_reported_at_once():
    found = problems(
        {
            "when_matched": [
                {"action": "upsert"},
                {"action": "delete", "set": {"a": "1"}},
                {"action": "update", "values": "*"},
            ],
            "when_not_matched": [{"action": "insert", "set": "*"}],
            "update_only_if_changed": "yes",
        }
    )
    text = "\n".join(found)
    assert "action must be one of ['update', 'delete'], got 'upsert'" in text
    assert "a delete takes no `set`" in text
    assert "unknown key(s) ['values']; allowed: ['action', 'condition', 'set']" in text
    assert "unknown key(s) ['set']; allowed: ['action', 'condition', 'values']" in text
    assert "update_only_if_changed must be true or false" in text
    assert "needs `unique_key`" in text and "`merge_condition`" in text
    assert ONE_MATCHED in found  # the unconditional delete is not the last MATCHED clause
    assert len(found) == 7


def test_not_matched_by_source_may_not_read_the_source():
    found = problems(
        {
            "unique_key": "id",
            "when_not_matched_by_source": [{"action": "update", "set": {"v": "DBT_INTERNAL_SOURCE.v"}}],
        }
    )
    assert any("may not reference the source" in p for p in found)
    found = problems({"unique_key": "id", "when_not_matched_by_source": [{"action": "update"}]})
    assert any("needs `set`" in p for p in found)


def test_shorthands():
    spec = MergeSpec.from_config(
        "m",
        {
            "unique_key": "id",
            "merge_update_columns": ["a", "b c"],
            "matched_condition": "DBT_INTERNAL_SOURCE.v > 0",
            "not_matched_condition": "DBT_INTERNAL_SOURCE.ok",
            "not_matched_by_source_action": "delete",
            "not_matched_by_source_condition": "DBT_INTERNAL_DEST.day < '2026'",
        },
    )
    assert spec.matched[0].assignments == (
        Assignment("a", "`DBT_INTERNAL_SOURCE`.`a`"),
        Assignment("b c", "`DBT_INTERNAL_SOURCE`.`b c`"),
    )
    assert spec.matched[0].condition == "DBT_INTERNAL_SOURCE.v > 0"
    assert spec.not_matched[0].condition == "DBT_INTERNAL_SOURCE.ok"
    assert spec.not_matched_by_source == (
        MergeClause("not_matched_by_source", "delete", "DBT_INTERNAL_DEST.day < '2026'"),
    )
    excluded = MergeSpec.from_config("m", {"unique_key": "id", "merge_exclude_columns": "created_at"})
    assert excluded.matched[0].exclude == ("created_at",) and excluded.matched[0].is_star
    skipped = MergeSpec.from_config("m", {"unique_key": "id", "skip_matched_step": True})
    assert skipped.is_insert_only
    sets = MergeSpec.from_config(
        "m",
        {
            "unique_key": "id",
            "not_matched_by_source_action": "update",
            "not_matched_by_source_set": {"active": False},
        },
    )
    assert sets.not_matched_by_source[0].assignments == (Assignment("active", "false"),)


def test_shorthand_and_its_list_conflict():
    found = problems(
        {
            "unique_key": "id",
            "when_matched": [{"action": "delete"}],
            "matched_condition": "true",
            "merge_update_columns": ["a"],
            "merge_exclude_columns": ["b"],
        }
    )
    assert any("give either `when_matched` or its shorthands" in p for p in found)
    assert problems({"unique_key": "id", "merge_update_columns": ["a"], "merge_exclude_columns": ["b"]}) == [
        "give merge_update_columns or merge_exclude_columns, not both"
    ]


@pytest.mark.parametrize("name", ["order id", "we`ird", "a.b", "select"])
def test_odd_identifiers_are_quoted_once(name):
    spec = MergeSpec.from_config("m", {"unique_key": name})
    quoted = "`" + name.replace("`", "``") + "`"
    assert spec.on_condition == f"(`DBT_INTERNAL_DEST`.{quoted} <=> `DBT_INTERNAL_SOURCE`.{quoted})"


def test_aliases_must_be_plain_and_distinct():
    found = problems({"unique_key": "id", "source_alias": "s; drop table x", "target_alias": "t"})
    assert any("source_alias must be a plain identifier" in p for p in found)
    assert problems({"unique_key": "id", "source_alias": "x", "target_alias": "X"}) == [
        "source_alias and target_alias must differ (both are 'x')"
    ]


def test_the_engine_s_door_builds_the_clause_set_the_user_s_door_parses():
    # CDC apply's merge, once through a model's config and once typed: the same value.
    config = {
        "unique_key": ["id"],
        "when_matched": [
            {"condition": "s.op = 'delete'", "action": "delete"},
            {"action": "update", "set": {"v": "s.v"}},
        ],
        "when_not_matched": [{"condition": "s.op = 'upsert'", "action": "insert", "values": {"id": "s.id"}}],
        "update_only_if_changed": True,
        "deletion_vectors": False,
    }
    typed = MergeSpec.of(
        "m",
        unique_key=["id"],
        clauses=[
            MergeClause("matched", "delete", condition="s.op = 'delete'"),
            MergeClause("matched", "update", assignments=(Assignment("v", "s.v"),)),
            MergeClause(
                "not_matched", "insert", condition="s.op = 'upsert'", assignments=(Assignment("id", "s.id"),)
            ),
        ],
        behaviour=MergeBehaviour(update_only_if_changed=True, copy_on_write=True),
    )
    assert typed == MergeSpec.from_config("m", config)


def test_a_broken_engine_merge_is_a_bug_said_as_such_not_the_user_s_config():
    said = r"the merge built for m has no WHEN clause; no unique key .* \(a bug\)"
    with pytest.raises(AssertionError, match=said):
        MergeSpec.of("m")
    with pytest.raises(AssertionError, match="one alias for the source and the target"):
        MergeSpec.of(
            "m", unique_key=["id"], aliases=("s", "S"), clauses=[MergeClause("not_matched", "insert")]
        )


def test_an_invalid_clause_is_not_also_said_missing():
    found = problems({"unique_key": "id", "when_not_matched_by_source": [{"action": "insert"}]})
    said = "when_not_matched_by_source[0]: action must be one of ['update', 'delete'], got 'insert'"
    assert found == [said]
