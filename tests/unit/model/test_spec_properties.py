"""Property-based: any config either parses or raises our SpecError naming the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.model.spec import WriteSpec

KEYS = [
    "unique_key",
    "merge_condition",
    "source_alias",
    "target_alias",
    "when_matched",
    "when_not_matched",
    "when_not_matched_by_source",
    "incremental_predicates",
    "merge_with_schema_evolution",
    "change_data_feed",
    "matched_condition",
    "not_matched_condition",
    "skip_matched_step",
    "skip_not_matched_step",
    "merge_update_columns",
    "merge_exclude_columns",
    "not_matched_by_source_action",
    "not_matched_by_source_condition",
    "not_matched_by_source_set",
    "file_format",
    "incremental_strategy",
    "partition_by",
    "tblproperties",
    "on_schema_change",
    "location_root",
]
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), st.text(max_size=12), st.just("*")
)
clause = st.dictionaries(
    st.sampled_from(["action", "condition", "set", "values", "bogus"]),
    st.one_of(
        scalars,
        st.sampled_from(["update", "delete", "insert"]),
        st.dictionaries(st.text(max_size=5), scalars),
    ),
)
values = st.recursive(
    st.one_of(scalars, st.lists(clause, max_size=3)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
configs = st.dictionaries(st.sampled_from(KEYS), values, max_size=8)


@settings(max_examples=400, deadline=None)
@given(configs)
def test_merge_config_parses_or_raises_our_error(config):
    try:
        MergeSpec.from_config("m", config)
    except SpecError as exc:
        assert exc.model == "m" and exc.problems and "Model 'm': invalid config" in str(exc)


@settings(max_examples=400, deadline=None)
@given(configs)
def test_write_config_parses_or_raises_our_error(config):
    try:
        WriteSpec.from_config("m", config)
    except SpecError as exc:
        assert exc.model == "m" and exc.problems and "Model 'm': invalid config" in str(exc)
