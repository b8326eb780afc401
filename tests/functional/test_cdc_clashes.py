"""SCD 2's count of same-sequence clashes (in the events' own pass) against the per-key query.

Many random event sets at once, each its own ``case`` in the key: per case, some event counted
with another event at its key and sequence (``AT_SEQUENCE_N``) exactly when the per-key query
``sequences_per_key`` (distinct events against distinct sequences) finds a clash. Null
keys and values, identical events (which do not clash) and a two-column sequence among them.
``DELTAMERGE_CDC_CLASH_CASES`` sets how many (300 here; 4,000 were run before this landed).
"""

from __future__ import annotations

import os
import random

from pyspark.sql import functions as F

from dbt.adapters.deltamerge.cdc.events import (
    AT_SEQUENCE_N,
    EVENTS_N,
    SEQUENCES_N,
    framed_events,
    sequences_per_key,
)
from dbt.adapters.deltamerge.cdc.spec import CdcSpec
from dbt.adapters.deltamerge.skipping.files import key_profile_aggregates

CASES = int(os.environ.get("DELTAMERGE_CDC_CLASH_CASES", "300"))
SPEC = CdcSpec.from_config(
    "clashes",
    {
        "unique_key": ["case", "id"],
        "sequence_by": ["ts", "tb"],
        "apply_as_deletes": "op = 'D'",
        "except_column_list": ["op", "ts", "tb"],
        "stored_as_scd_type": 2,
    },
)


def events(seed: int) -> list[tuple]:
    shuffled = random.Random(seed)
    rows: list[tuple] = []
    for case in range(CASES):
        for _ in range(shuffled.randint(0, 8)):
            rows.append(
                (
                    case,
                    shuffled.choice([1, 2, 3, None]),
                    shuffled.choice(["U", "D"]),
                    shuffled.randint(1, 4),
                    shuffled.choice([0, 1]),
                    shuffled.choice(["a", "b", None]),
                    shuffled.choice([1.5, None]),
                )
            )
            if shuffled.random() < 0.3:
                rows.append(rows[-1])  # an identical event: no clash
    return rows


def test_the_count_in_the_events_pass_agrees_with_the_per_key_query(spark):
    schema = "case INT, id INT, op STRING, ts INT, tb INT, v STRING, w DOUBLE"
    source = spark.createDataFrame(events(36), schema)
    framed = framed_events(source, SPEC, key_profile_aggregates(SPEC.keys), count_clashes=True)
    counted = framed.frame.groupBy("case").agg((F.max(AT_SEQUENCE_N) > 1).alias("clash"))
    per_key = (
        sequences_per_key(SPEC, framed)
        .groupBy("case")
        .agg(F.max(F.col(EVENTS_N) != F.col(SEQUENCES_N)).alias("clash"))
    )
    new = {r["case"]: r["clash"] for r in counted.collect()}
    old = {r["case"]: r["clash"] for r in per_key.collect()}
    assert new == old
    clashing = sum(old.values())
    assert 0 < clashing < len(old)  # both kinds of case are there
    assert framed.profile["clashes"] >= clashing
