"""The embedded session's Spark settings: heap and shuffle partitions."""

from __future__ import annotations

from dbt.adapters.deltamerge.spark.conf import driver_memory, machine_memory, session_conf


def test_the_heap_is_a_quarter_of_the_machine_and_never_below_sparks_default():
    assert driver_memory(23 * 2**30) == "5888m"
    assert driver_memory(3 * 2**30) == "1024m"
    assert driver_memory(None) == "1024m"


def test_the_profile_sets_the_heap_over_the_default():
    assert session_conf("/w", {})["spark.driver.memory"] == driver_memory(machine_memory())
    assert session_conf("/w", {"spark.driver.memory": "3g"})["spark.driver.memory"] == "3g"


def test_many_shuffle_partitions_come_with_adaptive_coalescing():
    # 64 partitions keep a 50M-row join in memory; without coalescing every small merge
    # would write 64 files.
    conf = session_conf("/w", {})
    assert conf["spark.sql.shuffle.partitions"] == "64"
    assert conf["spark.sql.adaptive.enabled"] == "true"
    assert conf.get("spark.sql.adaptive.coalescePartitions.enabled", "true") == "true"
    assert session_conf("/w", {"spark.sql.shuffle.partitions": "8"})["spark.sql.shuffle.partitions"] == "8"


def test_compiled_query_classes_are_kept_for_a_projects_worth_of_queries():
    # Spark's default (100) is less than one build of the example project compiles (~360):
    # each command on the warm server evicted the last one's classes and compiled them again.
    assert int(session_conf("/w", {})["spark.sql.codegen.cache.maxEntries"]) >= 1000
