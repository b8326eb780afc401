from __future__ import annotations

import pytest

from dbt.adapters.deltamerge.common.config_values import SpecError
from dbt.adapters.deltamerge.model.columns import ColumnDeclarations


def test_identity_columns_take_integers_only():
    for spec in ({"start": True}, {"step": "2"}, {"step": 0}, {"generated": "sometimes"}, {"begin": 1}):
        with pytest.raises(SpecError, match="identity_columns: `id` takes"):
            ColumnDeclarations.from_config("m", {"identity_columns": {"id": spec}})
