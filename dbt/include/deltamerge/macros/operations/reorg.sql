{#- REORG ... APPLY (PURGE): `dbt run-operation reorg --args '{relation: "analytics.orders", where: "day >= ''2026-01-01''"}'`
    Rewrites every file that carries a deletion vector (of the partitions `where` keeps) without
    its deleted rows: a REORG commit, rows unchanged; readers that cannot read deletion vectors
    can read the table again. -#}
{% macro reorg(relation, where=none) %}
  {%- set result = adapter.delta_reorg(relation, where) -%}
  {%- set m = result["metrics"] -%}
  {{ log("REORG of " ~ result["table_path"] ~ ": " ~ m["numRemovedFiles"] ~ " files with deletion vectors rewritten as "
         ~ m["numAddedFiles"] ~ " (version " ~ result["version"] ~ ")", info=True) }}
  {{ return(result) }}
{% endmacro %}
