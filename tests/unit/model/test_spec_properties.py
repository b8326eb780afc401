"""Property-based: any config either parses or raises our SpecError naming the model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.merge.spec import MergeSpec
from dbt.adapters.deltamerge.model.keys import ADAPTER_KEYS
from dbt.adapters.deltamerge.model.spec import ModelSpec, WriteSpec

KEYS = sorted(ADAPTER_KEYS)  # the one list: every key the adapter reads
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


@settings(max_examples=400, deadline=None)
@given(configs, st.sampled_from(["table", "incremental", "seed"]))
def test_model_config_parses_or_raises_our_error(config, materialization):
    try:
        ModelSpec.from_config("m", {"incremental_strategy": "delta_merge", **config}, materialization)
    except SpecError as exc:
        assert exc.model == "m" and exc.problems and "Model 'm': invalid config" in str(exc)
